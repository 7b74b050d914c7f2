package exporter

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/state"
)

// Daemon runs collection cycles on an interval and publishes them to an
// Exporter. It owns no hardware access: Collect and Judge are injected.
type Daemon struct {
	Exporter *Exporter
	Interval time.Duration
	// Timeout bounds one cycle's collection; a collection that overruns is
	// a failed one.
	Timeout time.Duration
	// JudgeTimeout bounds judging, on a clock of its own: a collection that
	// returns at its deadline (a hung GPU given up on) must still be judged,
	// not turned into "did not finish" errors for every check. Zero means
	// DefaultJudgeTimeout.
	JudgeTimeout time.Duration
	Collect      func(ctx context.Context) *state.Node
	Judge        func(ctx context.Context, n *state.Node) []check.Result
	// Config is what Judge judges against, handed to every snapshot.
	Config *check.Config
	// OnCycle, if set, sees every published snapshot (logging, XIDs).
	OnCycle func(*Snapshot)
	// hung remembers a cycle that overran and has not returned yet.
	hung deadline.Registry
	// previous is the last completed cycle's rate counters, handed to the
	// next cycle's node (state.Node.Previous) before it is judged, so
	// gpu.throttle judges NVML's violation counters over the interval while
	// check stays a pure function of one node.
	previous *state.Previous
}

// DefaultJudgeTimeout: the checks are pure functions that take
// milliseconds; seconds is a bound for a bug, not a budget.
const DefaultJudgeTimeout = 5 * time.Second

// Run cycles until ctx ends. The first cycle starts at once so the first
// scrape has data.
func (d *Daemon) Run(ctx context.Context) {
	t := time.NewTicker(d.Interval)
	defer t.Stop()
	for {
		d.Cycle(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Cycle collects, judges and publishes once. Collect and Judge run aside
// under deadline.Do: a cycle that overruns (a collector that ignores its
// deadline, a user lookup on a hung LDAP) is published as failed and stale
// at the deadline, whatever the source, and while it is still running the
// next cycles are refused at once instead of piling up one goroutine each.
func (d *Daemon) Cycle(parent context.Context) *Snapshot {
	start := time.Now()
	ctx, cancel := context.WithTimeout(parent, d.Timeout)
	defer cancel()
	prev := d.previous // read here: a cycle still running aside must not race the next
	// The collectors' own deadline comes a little before the cycle's, so a
	// collection that honours it (a hung GPU given up on, the rest kept) is
	// never mistaken for a stuck one.
	cctx, ccancel := context.WithTimeout(ctx, d.Timeout-min(d.Timeout/10, time.Second))
	defer ccancel()
	n, err := deadline.DoIn(&d.hung, ctx, "collection", 0, func() (*state.Node, error) {
		n := d.Collect(cctx)
		if n != nil && n.Previous == nil {
			n.Previous = prev
		}
		return n, nil
	})
	var results []check.Result
	if err == nil {
		judgeTimeout := d.JudgeTimeout
		if judgeTimeout <= 0 {
			judgeTimeout = DefaultJudgeTimeout
		}
		jctx, jcancel := context.WithTimeout(parent, judgeTimeout)
		results, err = deadline.DoIn(&d.hung, jctx, "judging", 0, func() ([]check.Result, error) {
			return d.Judge(jctx, n), nil
		})
		jcancel()
	}
	s := &Snapshot{Node: n, At: time.Now(), Duration: time.Since(start), Success: true, Config: d.Config}
	switch {
	case err != nil:
		s.Success = false
		s.Node = nil // Update serves the last good node, marked stale
		s.Failing = err.Error()
		for step, who := range map[string]string{"collection": "a source", "judging": "a check"} {
			if since, busy := d.hung.Busy(step); busy {
				s.Failing = fmt.Sprintf("%s still running since %s (%s ignores its deadline)", step, since.UTC().Format(time.RFC3339), who)
			}
		}
	default:
		if p := state.PreviousOf(n); p != nil {
			d.previous = p
		}
		s.Doc = report.New(n, results, false, s.Duration)
		if cctx.Err() != nil {
			s.Success = false
			s.Failing = slowestSource(n)
		}
	}
	d.Exporter.Update(s)
	if d.OnCycle != nil {
		d.OnCycle(d.Exporter.Latest())
	}
	return s
}

func slowestSource(n *state.Node) string {
	name, worst := "", -1.0
	for _, s := range n.Sources {
		if s.DurationSeconds > worst {
			name, worst = s.Name, s.DurationSeconds
		}
	}
	return name
}
