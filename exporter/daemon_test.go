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
