package check

import (
	"context"
	"os"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/topo"
)

// TestTopoChecksOnThisMachine judges this machine's real /sys and /proc. The
// CI host is a VM with virtio devices only (no GPU, no InfiniBand): every
// topology check must skip there, cleanly. On a GPU node none may come out
// as an error. It fails rather than skips without /sys, unless
// GPUPROBE_SKIP_REAL_SYSFS=1.
func TestTopoChecksOnThisMachine(t *testing.T) {
	if os.Getenv("GPUPROBE_SKIP_REAL_SYSFS") == "1" {
		t.Skip("GPUPROBE_SKIP_REAL_SYSFS=1")
	}
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		t.Fatalf("no readable /sys/bus/pci/devices (%v); set GPUPROBE_SKIP_REAL_SYSFS=1 where sysfs is absent by design", err)
	}
	tp, err := topo.Collect(context.Background(), topo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := &state.Node{Topology: tp}
	checks, err := Select([]string{"pcie", "iommu", "gdr", "ib", "topo"}, nil)
	if err != nil || len(checks) != 6 {
		t.Fatalf("selected %d topology checks: %v", len(checks), err)
	}
	for _, r := range Run(context.Background(), n, DefaultConfig(), checks) {
		t.Logf("%-24s %-5s %s", r.ID, r.Status, r.Summary)
		if r.Status == Error {
			t.Errorf("%s: error on a real machine: %s", r.ID, r.Summary)
		}
		if len(tp.GPUs) == 0 && r.ID != "ib.ports" && r.Status != Skip {
			t.Errorf("%s: %s without GPUs, want skip", r.ID, r.Status)
		}
		if len(tp.NICs) == 0 && r.ID == "ib.ports" && r.Status != Skip {
			t.Errorf("ib.ports: %s without RDMA devices, want skip", r.Status)
		}
	}
}
