package nvml

import (
	"reflect"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Every bit nvml.h defines has its name, the two newest (board limit,
// reliability) included; a bit newer than the table is said, not dropped.
func TestClockEventNames(t *testing.T) {
	for _, c := range []struct {
		mask uint64
		want []string
	}{
		{0, []string{}},
		{gonvml.ClocksEventReasonGpuIdle, []string{"gpu_idle"}},
		{gonvml.ClocksThrottleReasonHwSlowdown | gonvml.ClocksThrottleReasonHwThermalSlowdown, []string{"hw_slowdown", "hw_thermal_slowdown"}},
		{gonvml.ClocksEventReasonBoardLimit, []string{"board_limit"}},
		{gonvml.ClocksEventReasonReliability | gonvml.ClocksEventReasonSwPowerCap, []string{"sw_power_cap", "reliability"}},
		{gonvml.ClocksEventReasonAll, []string{"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost", "sw_thermal_slowdown",
			"hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clock_setting", "board_limit", "reliability"}},
		{0x800 | 0x8000, []string{"unknown_0x800", "unknown_0x8000"}},
	} {
		if got := ClockEventNames(c.mask); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%#x: %v, want %v", c.mask, got, c.want)
		}
	}
}
