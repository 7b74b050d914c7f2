package nvml

import (
	"fmt"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

func archName(a gonvml.DeviceArchitecture) string {
	switch a {
	case gonvml.DEVICE_ARCH_KEPLER:
		return "kepler"
	case gonvml.DEVICE_ARCH_MAXWELL:
		return "maxwell"
	case gonvml.DEVICE_ARCH_PASCAL:
		return "pascal"
	case gonvml.DEVICE_ARCH_VOLTA:
		return "volta"
	case gonvml.DEVICE_ARCH_TURING:
		return "turing"
	case gonvml.DEVICE_ARCH_AMPERE:
		return "ampere"
	case gonvml.DEVICE_ARCH_ADA:
		return "ada"
	case gonvml.DEVICE_ARCH_HOPPER:
		return "hopper"
	case gonvml.DEVICE_ARCH_BLACKWELL:
		return "blackwell"
	case gonvml.DEVICE_ARCH_RUBIN:
		return "rubin"
	}
	return fmt.Sprintf("unknown(%d)", uint32(a))
}

func remoteTypeName(t gonvml.IntNvLinkDeviceType) string {
	switch t {
	case gonvml.NVLINK_DEVICE_TYPE_GPU:
		return "gpu"
	case gonvml.NVLINK_DEVICE_TYPE_IBMNPU:
		return "ibmnpu"
	case gonvml.NVLINK_DEVICE_TYPE_SWITCH:
		return "switch"
	}
	return "unknown"
}

// clockEventReasons are NVML's clock-event bits with the names nvidia-smi
// prints, in bit order.
var clockEventReasons = []struct {
	bit  uint64
	name string
}{
	{gonvml.ClocksEventReasonGpuIdle, "gpu_idle"},
	{gonvml.ClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
	{gonvml.ClocksEventReasonSwPowerCap, "sw_power_cap"},
	{gonvml.ClocksThrottleReasonHwSlowdown, "hw_slowdown"},
	{gonvml.ClocksEventReasonSyncBoost, "sync_boost"},
	{gonvml.ClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
	{gonvml.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
	{gonvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
	{gonvml.ClocksEventReasonDisplayClockSetting, "display_clock_setting"},
	// nvml.h: "The board limit (operating) policy is currently limiting the
	// GPU clocks" and "The reliability policy is currently limiting the GPU
	// clocks"; newer than the rest, and unnamed here until now.
	{gonvml.ClocksEventReasonBoardLimit, "board_limit"},
	{gonvml.ClocksEventReasonReliability, "reliability"},
}

// ClockEventNames decodes a clock-event mask into reason names.
func ClockEventNames(mask uint64) []string {
	out := []string{}
	known := uint64(0)
	for _, r := range clockEventReasons {
		known |= r.bit
		if mask&r.bit != 0 {
			out = append(out, r.name)
		}
	}
	// A bit newer than this table is said, not dropped.
	for rest := mask &^ known; rest != 0; rest &= rest - 1 {
		out = append(out, fmt.Sprintf("unknown_0x%x", rest&-rest))
	}
	return out
}

// FabricStateName names NVML's fabric registration state.
func FabricStateName(s uint32) string {
	switch s {
	case gonvml.GPU_FABRIC_STATE_NOT_SUPPORTED:
		return "not_supported"
	case gonvml.GPU_FABRIC_STATE_NOT_STARTED:
		return "not_started"
	case gonvml.GPU_FABRIC_STATE_IN_PROGRESS:
		return "in_progress"
	case gonvml.GPU_FABRIC_STATE_COMPLETED:
		return "completed"
	}
	return fmt.Sprintf("unknown(%d)", s)
}

func fabricStatus(s uint32) string {
	if gonvml.Return(s) == gonvml.SUCCESS {
		return "success"
	}
	if m := returnString(gonvml.Return(s)); !strings.HasPrefix(m, "NVML return code") {
		return m
	}
	// Called on a healthy library only (the call that produced s returned),
	// so asking NVML for the message is safe.
	return gonvml.Return(s).Error()
}
