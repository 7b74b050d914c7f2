package nvsmi_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/nvsmi"
)

// TestHandleFailureLine: nvidia-smi prints "Unable to determine the device
// handle for GPU <bus>: <NVML error>" where a GPU's block would be. Each
// form read from a real post (nvdocker1553, akash209, owod81) and the
// index form of newer drivers becomes a GPU NVML could not open: lost when
// NVML said GPU_IS_LOST, closed to the process for "Insufficient
// Permissions" (a device cgroup), unreachable otherwise.
func TestHandleFailureLine(t *testing.T) {
	for _, c := range []struct {
		line                      string
		bus                       string
		lost, unreachable, denied bool
	}{
		{"Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error", "0000:09:00.0", false, true, false},
		{"Unable to determine the device handle for GPU0000:A1:00.0: Unknown Error", "0000:a1:00.0", false, true, false},
		{"Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error", "0000:34:00.0", false, true, false},
		{"Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU", "0000:02:00.0", true, true, false},
		{"Unable to determine the device handle for GPU 0000:3B:00.0: Insufficient Permissions", "0000:3b:00.0", false, false, true},
	} {
		n, err := nvsmi.Parse("x", []byte(c.line+"\n"), time.Now())
		if err != nil {
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		g := n.NVML.GPUs[0]
		if g.PCIBusID != c.bus || g.Lost != c.lost || g.Unreachable != c.unreachable || g.Denied != c.denied {
			t.Errorf("%q: bus %s lost %v unreachable %v denied %v; want %s %v %v %v", c.line, g.PCIBusID, g.Lost, g.Unreachable, g.Denied,
				c.bus, c.lost, c.unreachable, c.denied)
		}
	}
}

// A full capture with one GPU's handle failing among the blocks: the count
// holds it, gpu.count fails on it alone, and the other GPUs are judged.
func TestHandleFailureAmongBlocks(t *testing.T) {
	raw, err := os.ReadFile("testdata/azhpc_a100x8_460.32.03_nvidia-smi-q.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(raw), "Attached GPUs                             : 8", "Attached GPUs                             : 9", 1)
	s += "Unable to determine the device handle for GPU 0000:C1:00.0: Unknown Error\n"
	n, err := nvsmi.Parse("x", []byte(s), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(n.NVML.GPUs) != 9 || n.Capture.Partial != "" {
		t.Fatalf("%d GPUs, partial %q; want 9, whole", len(n.NVML.GPUs), n.Capture.Partial)
	}
	checks, _ := check.Select([]string{"gpu.count", "gpu.ecc"}, nil)
	for _, r := range check.Run(context.Background(), n, check.DefaultConfig(), checks) {
		switch r.ID {
		case "gpu.count":
			if r.Status != check.Fail || len(r.Devices) != 1 || r.Devices[0].Index != 8 {
				t.Errorf("gpu.count %s on %v (%s), want fail on GPU 8", r.Status, r.Devices, r.Summary)
			}
		case "gpu.ecc":
			if r.Status != check.Pass || !strings.Contains(r.Summary, "8 GPUs") {
				t.Errorf("gpu.ecc %s (%s), want a pass on the 8 GPUs with blocks", r.Status, r.Summary)
			}
		}
	}
}
