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
	// NVLinks are the links' error counters then, so nvlink.errors judges
	// their growth over the interval (Previous.CollectedAt is the sample
	// time), not the totals since the driver loaded.
	NVLinks []PreviousNVLink `json:"nvlinks,omitempty"`
}

// PreviousNVLink is one link's error counters in an earlier sample (nil:
// not read then), keyed by the link number.
type PreviousNVLink struct {
	Link           int     `json:"link"`
	CRCFlitErrors  *uint64 `json:"crc_flit_errors,omitempty"`
	CRCDataErrors  *uint64 `json:"crc_data_errors,omitempty"`
	ReplayErrors   *uint64 `json:"replay_errors,omitempty"`
	RecoveryErrors *uint64 `json:"recovery_errors,omitempty"`
}

// NVLink returns the earlier counters of this link, or nil.
func (p *PreviousGPU) NVLink(link int) *PreviousNVLink {
	if p == nil {
		return nil
	}
	for i := range p.NVLinks {
		if p.NVLinks[i].Link == link {
			return &p.NVLinks[i]
		}
	}
	return nil
}

func copyCount(v *uint64) *uint64 {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// previousNVLinks copies the links' error counters; links with none read
// are left out.
func previousNVLinks(links []NVLink) []PreviousNVLink {
	var out []PreviousNVLink
	for _, l := range links {
		if l.CRCFlitErrors == nil && l.CRCDataErrors == nil && l.ReplayErrors == nil && l.RecoveryErrors == nil {
			continue
		}
		out = append(out, PreviousNVLink{Link: l.Link, CRCFlitErrors: copyCount(l.CRCFlitErrors), CRCDataErrors: copyCount(l.CRCDataErrors),
			ReplayErrors: copyCount(l.ReplayErrors), RecoveryErrors: copyCount(l.RecoveryErrors)})
	}
	return out
}

// PreviousOf keeps what the next cycle needs of n: its time and each GPU's
// rate counters (violations, PCIe replays, clock event reasons, NVLink
// error counters per link). Nil when n has no GPUs with a UUID and counters.
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
		links := previousNVLinks(g.NVLinks)
		if g.UUID == "" || len(g.Violations) == 0 && replays == nil && events == nil && links == nil {
			continue
		}
		p.GPUs = append(p.GPUs, PreviousGPU{UUID: g.UUID, Violations: append([]Violation(nil), g.Violations...), PCIeReplays: replays, ClockEvents: events, NVLinks: links})
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
