package collect

import (
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

func p32(v uint32) *uint32 { return &v }
func p64(v uint64) *uint64 { return &v }

// FoldLoad keeps the clock range, the highest power and temperature and the
// OR of the clock event reasons; a sample without clocks or reasons does
// not count. (The temperature was never folded before run7 on a real H100
// showed max_temp_c 0 under a 287 W load.)
func TestVerifyFoldLoad(t *testing.T) {
	pw := 600.0
	var w state.LoadWatch
	w = FoldLoad(w, state.GPUSample{SMClockMHz: p32(1980), MaxSMClockMHz: p32(1980), ClockEventMask: p64(0x4), PowerWatts: &pw})
	w = FoldLoad(w, state.GPUSample{SMClockMHz: p32(1200), ClockEventMask: p64(0x8), TempC: p32(61)})
	w = FoldLoad(w, state.GPUSample{TempC: p32(48)})
	if w.Samples != 2 || w.MinSMClockMHz != 1200 || w.MaxSMClockMHz != 1980 || w.MaxClockMHz != 1980 || w.ThrottleReasons != 0xc || w.MaxPowerW != 600 || w.MaxTempC != 61 || w.ECCDelta != -1 {
		t.Fatalf("%+v", w)
	}
}
