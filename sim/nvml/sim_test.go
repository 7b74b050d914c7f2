package nvml

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// An idle simulated H100 reports each clock domain as a real idle one does
// (nvsmi/testdata/gpud_h100x8_535.183.01_nvidia-smi-q.txt, "Clocks" and
// "Max Clocks"): one figure for every domain was no real GPU.
func TestIdleClocksAsCaptured(t *testing.T) {
	for _, tc := range []struct {
		model     string
		c         gonvml.ClockType
		cur, maxc uint32
	}{
		{"dgx-h100", gonvml.CLOCK_SM, 345, 1980},
		{"dgx-h100", gonvml.CLOCK_GRAPHICS, 345, 1980},
		{"dgx-h100", gonvml.CLOCK_MEM, 2619, 2619},
		{"dgx-h100", gonvml.CLOCK_VIDEO, 765, 1545},
		{"dgx-a100", gonvml.CLOCK_SM, 345, 1410},
		{"dgx-a100", gonvml.CLOCK_MEM, 1593, 1593},
		{"dgx-a100", gonvml.CLOCK_VIDEO, 765, 1290},
	} {
		spec, err := simulate.Parse(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		sys, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		d := sys.Devices[0]
		cur, _ := d.GetClockInfo(tc.c)
		maxc, _ := d.GetMaxClockInfo(tc.c)
		if cur != tc.cur || maxc != tc.maxc {
			t.Errorf("%s clock %d: %d of %d MHz, want %d of %d", tc.model, tc.c, cur, maxc, tc.cur, tc.maxc)
		}
	}
}
