package nvml

import (
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// gpu-missing and gpu-excluded take the GPU out of NVML's enumeration
// (the others renumbered from 0, as NVML numbers them); gpu-excluded
// lists it among NVML's excluded GPUs, as the driver does for
// NVreg_ExcludedGpus.
func TestUnlistedGPUFaults(t *testing.T) {
	for _, tc := range []struct {
		spec     string
		count    int
		excluded []string // bus IDs nvmlGetExcludedDeviceInfoByIndex names
		err      string
	}{
		{spec: "dgx-h100", count: 8},
		{spec: "dgx-h100:gpu-missing=2", count: 7},
		{spec: "dgx-h100:gpu-excluded=7,gpu-excluded=0", count: 6, excluded: []string{"00000000:19:00.0", "00000000:db:00.0"}},
		{spec: "dgx-h100:gpu-missing=1,gpu-excluded=1", err: "already taken out"},
		{spec: "dgx-h100:gpu-missing=1,cgroup-gpu=3", err: "not together"},
		{spec: "dgx-h100:gpu-excluded=9", err: "want a GPU index 0..7"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			spec, err := simulate.Parse(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			sys, err := New(spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n, ret := sys.Lib.DeviceGetCount()
			if ret != gonvml.SUCCESS || n != tc.count {
				t.Fatalf("count %d %v, want %d", n, ret, tc.count)
			}
			for i := range n {
				d, _ := sys.Lib.DeviceGetHandleByIndex(i)
				if idx, _ := d.GetIndex(); idx != i {
					t.Errorf("GPU %d reports index %d", i, idx)
				}
			}
			m, ret := sys.Lib.GetExcludedDeviceCount()
			if ret != gonvml.SUCCESS || m != len(tc.excluded) {
				t.Fatalf("excluded count %d %v, want %d", m, ret, len(tc.excluded))
			}
			for i, want := range tc.excluded {
				info, ret := sys.Lib.GetExcludedDeviceInfoByIndex(i)
				var got strings.Builder
				for _, c := range info.PciInfo.BusId {
					if c == 0 {
						break
					}
					got.WriteByte(byte(c))
				}
				if ret != gonvml.SUCCESS || !strings.EqualFold(got.String(), want) {
					t.Errorf("excluded %d: %q %v, want %q", i, got.String(), ret, want)
				}
			}
		})
	}
}
