package exporter

import (
	"context"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/state"
)

// Daemon runs collection cycles on an interval and publishes them to an
// Exporter. It owns no hardware access: Collect and Judge are injected.
type Daemon struct {
	Exporter *Exporter
	Interval time.Duration
	// Timeout bounds one cycle; a cycle that overruns is a failed one.
	Timeout time.Duration
	Collect func(ctx context.Context) *state.Node
	Judge   func(ctx context.Context, n *state.Node) []check.Result
	// OnCycle, if set, sees every published snapshot (logging, XIDs).
	OnCycle func(*Snapshot)
}

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

// Cycle collects, judges and publishes once.
func (d *Daemon) Cycle(parent context.Context) *Snapshot {
	start := time.Now()
	ctx, cancel := context.WithTimeout(parent, d.Timeout)
	defer cancel()
	n := d.Collect(ctx)
	results := d.Judge(ctx, n)
	s := &Snapshot{Node: n, At: time.Now(), Duration: time.Since(start), Success: true}
	s.Doc = report.New(n, results, false, s.Duration)
	if ctx.Err() != nil {
		s.Success = false
		s.Failing = slowestSource(n)
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
