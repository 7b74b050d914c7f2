package state

import (
	"testing"
	"time"
)

// PreviousOf keeps only what a rate needs, by UUID, and copies it: the next
// cycle's collector must not be able to change the earlier reading.
func u64p(v uint64) *uint64 { return &v }

func TestPreviousOf(t *testing.T) {
	at := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	if PreviousOf(nil) != nil || PreviousOf(&Node{}) != nil {
		t.Fatal("a node without NVML has no previous sample")
	}
	n := &Node{CollectedAt: at, NVML: &NVML{GPUs: []GPU{
		{Index: 0, UUID: "GPU-a", Violations: []Violation{{Policy: "thermal", ReferenceTimeUs: 5, ViolationNs: 7}}},
		{Index: 1, UUID: "GPU-b"}, // no counters
		{Index: 2, Violations: []Violation{{Policy: "thermal", ViolationNs: 1}}}, // no UUID to match by
	}}}
	p := PreviousOf(n)
	if p == nil || !p.CollectedAt.Equal(at) || len(p.GPUs) != 1 || p.GPU("GPU-a") == nil || p.GPU("GPU-b") != nil || p.GPU("") != nil {
		t.Fatalf("previous = %+v", p)
	}
	n.NVML.GPUs[0].Violations[0].ViolationNs = 99
	if got := p.GPU("GPU-a").Violations[0].ViolationNs; got != 7 {
		t.Errorf("the kept reading changed with the node: %d", got)
	}
	// The clock event reasons are kept too (a reason seen in two samples in a
	// row is held), copied like the counters.
	n.NVML.GPUs[1].ClockEvents = &ClockEvents{Reasons: []string{"hw_slowdown"}}
	p = PreviousOf(n)
	if g := p.GPU("GPU-b"); g == nil || len(g.ClockEvents) != 1 || g.ClockEvents[0] != "hw_slowdown" {
		t.Fatalf("reasons not kept: %+v", g)
	}
	n.NVML.GPUs[1].ClockEvents.Reasons[0] = "gpu_idle"
	if p.GPU("GPU-b").ClockEvents[0] != "hw_slowdown" {
		t.Error("the kept reasons changed with the node")
	}
	// The NVLink error counters are kept per link, copied; links without
	// counters are left out.
	n.NVML.GPUs[1].NVLinks = []NVLink{{Link: 0, Up: true}, {Link: 3, Up: true, RecoveryErrors: u64p(2), CRCFlitErrors: u64p(9)}}
	p = PreviousOf(n)
	g := p.GPU("GPU-b")
	if l := g.NVLink(3); l == nil || *l.RecoveryErrors != 2 || *l.CRCFlitErrors != 9 || l.ReplayErrors != nil || g.NVLink(0) != nil || len(g.NVLinks) != 1 {
		t.Fatalf("NVLink counters not kept per link: %+v", g.NVLinks)
	}
	*n.NVML.GPUs[1].NVLinks[1].RecoveryErrors = 5
	if *p.GPU("GPU-b").NVLink(3).RecoveryErrors != 2 {
		t.Error("the kept NVLink counters changed with the node")
	}
	n.NVML.GPUs[1].ClockEvents = nil
	if g := PreviousOf(n).GPU("GPU-b"); g == nil || g.NVLink(3) == nil {
		t.Error("a GPU with only NVLink counters was not kept")
	}
	if (*PreviousGPU)(nil).NVLink(0) != nil {
		t.Error("nil PreviousGPU found a link")
	}
	var none *Previous
	if none.GPU("GPU-a") != nil {
		t.Error("nil Previous found a GPU")
	}
}
