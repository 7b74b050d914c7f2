package state

import "time"

// Violation is nvmlDeviceGetViolationStatus for one perf policy: how long,
// in total, the policy has held the GPU below its application clocks
// (nvml.h nvmlPerfPolicyType_t, nvmlViolationTime_t). The counter only
// grows while the driver stays loaded; a rate needs two readings.
type Violation struct {
	// Policy is the nvml.h name without its prefix, lower case: power,
	// thermal, sync_boost, board_limit, low_utilization, reliability,
	// total_app_clocks, total_base_clocks.
	Policy string `json:"policy"`
	// ReferenceTimeUs is the CPU timestamp NVML took the reading at, in
	// microseconds (nvmlViolationTime_t.referenceTime).
	ReferenceTimeUs uint64 `json:"reference_time_us"`
	// ViolationNs is the cumulative violation time in nanoseconds
	// (nvmlViolationTime_t.violationTime).
	ViolationNs uint64 `json:"violation_ns"`
}

// Previous is what an earlier collection of the same process saw of the
// counters that are judged as rates. The daemon fills it at the edge from
// its previous cycle, so a check stays a pure function of one Node; a
// one-shot run leaves it nil and the checks fall back to one sample.
type Previous struct {
	CollectedAt time.Time     `json:"collected_at"`
	GPUs        []PreviousGPU `json:"gpus"`
}

// PreviousGPU is one GPU's earlier counters, keyed by UUID (indices can
// change across a driver reload; a UUID cannot).
type PreviousGPU struct {
	UUID       string      `json:"uuid"`
	Violations []Violation `json:"violations,omitempty"`
	// PCIeReplays is the PCIe replay counter then.
	PCIeReplays *uint64 `json:"pcie_replays,omitempty"`
	// ClockEvents are the clock event reasons NVML reported then (nil:
	// not read), so a reason seen in one sample can be told from one that
	// held across two.
	ClockEvents []string `json:"clock_events,omitempty"`
}

// PreviousOf keeps what the next cycle needs of n: its time and each GPU's
// rate counters. Nil when n has no GPUs with a UUID and counters.
func PreviousOf(n *Node) *Previous {
	if n == nil || n.NVML == nil {
		return nil
	}
	p := &Previous{CollectedAt: n.CollectedAt}
	for _, g := range n.NVML.GPUs {
		var replays *uint64
		if g.PCIe != nil && g.PCIe.ReplayCounter != nil {
			r := *g.PCIe.ReplayCounter
			replays = &r
		}
		var events []string
		if g.ClockEvents != nil {
			events = append([]string{}, g.ClockEvents.Reasons...)
		}
		if g.UUID == "" || len(g.Violations) == 0 && replays == nil && events == nil {
			continue
		}
		p.GPUs = append(p.GPUs, PreviousGPU{UUID: g.UUID, Violations: append([]Violation(nil), g.Violations...), PCIeReplays: replays, ClockEvents: events})
	}
	if len(p.GPUs) == 0 {
		return nil
	}
	return p
}

// GPU returns the earlier counters of the GPU with this UUID, or nil.
func (p *Previous) GPU(uuid string) *PreviousGPU {
	if p == nil || uuid == "" {
		return nil
	}
	for i := range p.GPUs {
		if p.GPUs[i].UUID == uuid {
			return &p.GPUs[i]
		}
	}
	return nil
}
