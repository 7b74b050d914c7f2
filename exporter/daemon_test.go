package exporter

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

// The bug: a collection step that ignores its deadline (a source that
// blocks, an NSS lookup on a hung LDAP) froze collections while the metrics
// kept saying collect_success 1 and nothing was logged. Now the cycle is
// published as failed and stale at its deadline, and while the stuck step
// has not returned the next cycles are refused at once: one goroutine, once.
func TestCycleThatIgnoresItsDeadlineIsStaleAndLogged(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := false
	e := New(false)
	var logged []string
	d := &Daemon{
		Exporter: e,
		Interval: time.Hour,
		Timeout:  20 * time.Millisecond,
		Collect: func(ctx context.Context) *state.Node {
			if hang {
				<-release // ignores ctx
			}
			return &state.Node{Host: "n1", NVML: &state.NVML{}}
		},
		Judge: func(context.Context, *state.Node) []check.Result {
			return []check.Result{{ID: "gpu.driver", Status: check.Pass}}
		},
		OnCycle: func(s *Snapshot) {
			if !s.Success {
				logged = append(logged, s.Failing)
			}
		},
	}
	good := d.Cycle(context.Background())
	if !good.Success {
		t.Fatalf("first cycle failed: %+v", good)
	}
	hang = true
	g0 := runtime.NumGoroutine()
	for i := 0; i < 1000; i++ {
		done := make(chan *Snapshot, 1)
		go func() { done <- d.Cycle(context.Background()) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("cycle %d did not return: a stuck collector froze the daemon", i)
		}
	}
	if g := runtime.NumGoroutine(); g > g0+3 {
		t.Errorf("goroutines %d -> %d over 1000 stuck cycles", g0, g)
	}
	s := e.Latest()
	if s.Success || !s.Stale || s.Node == nil || s.Node.Host != "n1" || s.Doc == nil {
		t.Fatalf("after stuck cycles: success=%v stale=%v node=%v doc=%v; want the last good data, stale", s.Success, s.Stale, s.Node, s.Doc)
	}
	if len(logged) != 1000 || !strings.Contains(logged[len(logged)-1], "collection still running since") {
		t.Fatalf("logged %d of 1000 stuck cycles; last: %q", len(logged), logged[len(logged)-1:])
	}
}

// The daemon hands each cycle the previous cycle's violation counters, so
// gpu.throttle judges the interval between scrapes: a thermal slowdown that
// held for most of it warns though the sample at the scrape shows the GPU
// idle. The first cycle has no previous one and judges the sample alone.
func TestDaemonJudgesThrottleOverTheInterval(t *testing.T) {
	checks, err := check.Select([]string{"gpu.throttle"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	cycle := 0
	var seen []*state.Previous
	d := &Daemon{
		Exporter: New(false),
		Interval: time.Hour,
		Timeout:  5 * time.Second,
		Collect: func(context.Context) *state.Node {
			thermal := uint64(cycle) * 25e9 // 25 s of every 30 s
			n := &state.Node{Host: "n1", CollectedAt: t0.Add(time.Duration(cycle) * 30 * time.Second), NVML: &state.NVML{Available: true, DeviceCount: 1, GPUs: []state.GPU{{
				Index: 0, UUID: "GPU-a", PCIBusID: "0000:10:00.0",
				ClockEvents: &state.ClockEvents{Mask: 1, Reasons: []string{"gpu_idle"}},
				Violations:  []state.Violation{{Policy: "thermal", ReferenceTimeUs: uint64(cycle) * 30e6, ViolationNs: thermal}},
			}}}}
			cycle++
			return n
		},
		Judge: func(ctx context.Context, n *state.Node) []check.Result {
			seen = append(seen, n.Previous)
			return check.Run(ctx, n, check.DefaultConfig(), checks)
		},
	}
	first := d.Cycle(context.Background())
	second := d.Cycle(context.Background())
	if seen[0] != nil {
		t.Errorf("first cycle saw a previous sample: %+v", seen[0])
	}
	if p := seen[1]; p == nil || !p.CollectedAt.Equal(t0) || len(p.GPUs) != 1 || p.GPUs[0].Violations[0].ViolationNs != 0 {
		t.Fatalf("second cycle's previous = %+v, want the first cycle's counters", p)
	}
	status := func(s *Snapshot) check.Status { return s.Doc.Checks[0].Status }
	if status(first) != check.Pass || status(second) != check.Warn {
		t.Fatalf("verdicts %s then %s, want pass (one sample, idle) then warn (83%% thermal over 30 s): %+v", status(first), status(second), second.Doc.Checks[0])
	}
}

// The daemon hands each cycle the previous cycle's NVLink error counters,
// per link, so nvlink.errors judges their growth: an old recovery count
// warns on the first cycle (one sample), passes while it stays put, and
// fails the cycle it grows. The counter going back (a GPU reset) is not
// growth.
func TestDaemonJudgesNVLinkErrorGrowth(t *testing.T) {
	checks, err := check.Select([]string{"nvlink.errors"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	recoveries := []uint64{3, 3, 4, 0}
	cycle := 0
	d := &Daemon{
		Exporter: New(false),
		Interval: time.Hour,
		Timeout:  5 * time.Second,
		Collect: func(context.Context) *state.Node {
			r, zero := recoveries[cycle], uint64(0)
			n := &state.Node{Host: "n1", CollectedAt: t0.Add(time.Duration(cycle) * 30 * time.Second), NVML: &state.NVML{Available: true, DeviceCount: 1, GPUs: []state.GPU{{
				Index: 0, UUID: "GPU-a", PCIBusID: "0000:10:00.0",
				NVLinks: []state.NVLink{{Link: 0, Up: true, RecoveryErrors: &zero}, {Link: 1, Up: true, RecoveryErrors: &r, CRCFlitErrors: &zero}},
			}}}}
			cycle++
			return n
		},
		Judge: func(ctx context.Context, n *state.Node) []check.Result {
			return check.Run(ctx, n, check.DefaultConfig(), checks)
		},
	}
	want := []check.Status{check.Warn, check.Pass, check.Fail, check.Pass}
	for i, w := range want {
		s := d.Cycle(context.Background())
		if got := s.Doc.Checks[0]; got.Status != w {
			t.Fatalf("cycle %d (recoveries %d): %s (%s), want %s", i, recoveries[i], got.Status, got.Summary, w)
		}
	}
	if p := d.previous.GPU("GPU-a"); p == nil || p.NVLink(1) == nil || *p.NVLink(1).RecoveryErrors != 0 || !d.previous.CollectedAt.Equal(t0.Add(90*time.Second)) {
		t.Fatalf("previous kept = %+v, want the last cycle's link counters and time", d.previous)
	}
}

// A collection that gives up at its deadline (a hung GPU abandoned, the
// rest collected) must still be judged: judging once shared the
// collection's clock, so every check of such a cycle came out "did not
// finish before the run deadline" and the node looked broken everywhere.
func TestJudgingHasItsOwnDeadline(t *testing.T) {
	var judgedWith error = context.Canceled
	d := &Daemon{
		Exporter: New(false),
		Interval: time.Hour,
		Timeout:  20 * time.Millisecond,
		Collect: func(ctx context.Context) *state.Node {
			<-ctx.Done() // a call abandoned at the deadline
			return &state.Node{Host: "n1", NVML: &state.NVML{}}
		},
		Judge: func(ctx context.Context, n *state.Node) []check.Result {
			judgedWith = ctx.Err()
			return check.Run(ctx, n, &check.Config{}, check.All())
		},
	}
	s := d.Cycle(context.Background())
	if judgedWith != nil {
		t.Fatalf("judged with an expired context: %v", judgedWith)
	}
	if s.Success || s.Doc == nil {
		t.Fatalf("a collection that overran is published as failed with its report: success=%v doc=%v", s.Success, s.Doc != nil)
	}
	for _, r := range s.Doc.Checks {
		if strings.Contains(r.Summary, "did not finish") {
			t.Errorf("%s: %s", r.ID, r.Summary)
		}
	}
}
