package nvml

import (
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

func TestCgroupGPU(t *testing.T) {
	newSys := func(raw string) (*System, error) {
		spec, err := simulate.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return New(spec)
	}
	all, err := newSys("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	bus := func(d gonvml.Device) string {
		u, ret := d.GetUUID()
		if ret != gonvml.SUCCESS {
			t.Fatalf("GetUUID: %v", ret)
		}
		return u
	}
	h3, _ := all.Lib.DeviceGetHandleByIndex(3)
	h4, _ := all.Lib.DeviceGetHandleByIndex(4)

	// A step holding GPUs 4 and 3 (any order) sees two, renumbered, in
	// NVML order; a fault naming GPU 3 by the node's index still hits it.
	s, err := newSys("dgx-h100:cgroup-gpu=4,cgroup-gpu=3,row-remap-pending=3")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Lib.DeviceGetCount(); n != 2 {
		t.Fatalf("count %d, want 2", n)
	}
	for i, want := range []gonvml.Device{h3, h4} {
		d, ret := s.Lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			t.Fatalf("handle %d: %v", i, ret)
		}
		if got, w := bus(d), bus(want); got != w {
			t.Errorf("GPU %d is %s, want %s", i, got, w)
		}
		if idx, _ := d.GetIndex(); idx != i {
			t.Errorf("GPU %d reports index %d", i, idx)
		}
	}
	d0, _ := s.Lib.DeviceGetHandleByIndex(0)
	if _, pending, _, _, _ := d0.GetRemappedRows(); pending == 0 {
		t.Error("row-remap-pending=3 did not land on the node's GPU 3 (now 0)")
	}
	if _, ret := s.Lib.DeviceGetHandleByIndex(2); ret == gonvml.SUCCESS {
		t.Error("GPU 2 reachable through the cgroup")
	}

	none, err := newSys("dgx-h100:cgroup-gpu=none")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := none.Lib.DeviceGetCount(); n != 0 {
		t.Errorf("cgroup-gpu=none: count %d", n)
	}
	for _, bad := range []string{"dgx-h100:cgroup-gpu=8", "dgx-h100:cgroup-gpu=x", "dgx-h100:cgroup-gpu"} {
		if _, err := newSys(bad); err == nil || !strings.Contains(err.Error(), "cgroup-gpu") {
			t.Errorf("%s: err %v", bad, err)
		}
	}
}
