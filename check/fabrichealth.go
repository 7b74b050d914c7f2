package check

import (
	"fmt"

	"github.com/gpuprobe/gpuprobe/state"
)

// The fabric health mask and summary of nvmlGpuFabricInfo_v3/v4/V, decoded as
// nvml.h defines them (NVML_GPU_FABRIC_HEALTH_MASK_* and
// NVML_GPU_FABRIC_HEALTH_SUMMARY_*): each field has its own shift and width,
// and the value meaning "fine" differs by field — FALSE (2) for the
// two-bit flags, NONE (1) for the four-bit incorrect-configuration code.
// Reading every field as "two bits, 1 = bad" turns a healthy mask such as
// 0x1aa into a failure and misses configuration codes 2-8.
const (
	fabricShiftDegradedBW      = 0
	fabricShiftRouteRecovery   = 2
	fabricShiftRouteUnhealthy  = 4
	fabricShiftAccessTimeout   = 6
	fabricShiftIncorrectConfig = 8
	fabricWidth2               = 0x3
	fabricWidthIncorrectConfig = 0xf
	fabricFlagTrue             = 1 // NVML_GPU_FABRIC_HEALTH_MASK_*_TRUE
	fabricConfigNone           = 1 // ..._INCORRECT_CONFIGURATION_NONE: correct
)

// Fabric health summary values (NVML_GPU_FABRIC_HEALTH_SUMMARY_*).
const (
	fabricSummaryNotSupported    = 0
	fabricSummaryHealthy         = 1
	fabricSummaryUnhealthy       = 2
	fabricSummaryLimitedCapacity = 3
)

var fabricIncorrectConfig = map[uint32]string{
	2: "incorrect SysGUID",
	3: "incorrect chassis serial number",
	4: "no partition",
	5: "insufficient NVLinks",
	6: "incompatible GPU firmware",
	7: "invalid location",
	8: "GPU state invalid",
}

// fabricFinding is one thing the mask or summary says, with how bad it is.
type fabricFinding struct {
	status Status
	what   string
}

// fabricHealth decodes a mask and summary into findings; none means healthy
// (or not reported: a zero mask is "not supported" in every field).
func fabricHealth(mask uint32, summary uint8) []fabricFinding {
	var out []fabricFinding
	flag := func(shift uint32) bool { return (mask>>shift)&fabricWidth2 == fabricFlagTrue }
	if flag(fabricShiftDegradedBW) {
		out = append(out, fabricFinding{Fail, "bandwidth degraded"})
	}
	if flag(fabricShiftRouteUnhealthy) {
		out = append(out, fabricFinding{Fail, "route unhealthy"})
	}
	// Recovery in progress is the fabric mending itself: worth a warning
	// while it lasts, not a drain.
	if flag(fabricShiftRouteRecovery) {
		out = append(out, fabricFinding{Warn, "route recovery in progress"})
	}
	if flag(fabricShiftAccessTimeout) {
		out = append(out, fabricFinding{Warn, "access-timeout recovery in progress"})
	}
	switch c := (mask >> fabricShiftIncorrectConfig) & fabricWidthIncorrectConfig; {
	case c == 0 || c == fabricConfigNone:
	case fabricIncorrectConfig[c] != "":
		out = append(out, fabricFinding{Fail, "incorrect configuration: " + fabricIncorrectConfig[c]})
	default:
		out = append(out, fabricFinding{Warn, fmt.Sprintf("incorrect-configuration code %d, unknown to this gpuprobe", c)})
	}
	switch summary {
	case fabricSummaryNotSupported, fabricSummaryHealthy:
	case fabricSummaryUnhealthy:
		out = append(out, fabricFinding{Fail, "health summary: unhealthy"})
	case fabricSummaryLimitedCapacity:
		out = append(out, fabricFinding{Warn, "health summary: limited capacity"})
	default:
		out = append(out, fabricFinding{Warn, fmt.Sprintf("health summary %d, unknown to this gpuprobe", summary)})
	}
	return out
}

// FabricUnhealthy reports whether a GPU's fabric health says something that
// fails fabric.state, for the exporter's gpu_fabric_degraded gauge.
func FabricUnhealthy(f *state.Fabric) bool {
	for _, fd := range fabricHealth(f.HealthMask, f.HealthSummary) {
		if fd.status == Fail {
			return true
		}
	}
	return false
}
