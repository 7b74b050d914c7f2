package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestTuneRuntime: the daemon runs its Go code on two CPUs and collects
// garbage at 50% growth, unless the admin's environment says otherwise.
// The test starts from 8 CPUs (more than this 2-CPU machine has) so that
// capping shows.
func TestTuneRuntime(t *testing.T) {
	procs, gc := runtime.GOMAXPROCS(0), debug.SetGCPercent(100)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs); debug.SetGCPercent(gc) })
	for _, tc := range []struct {
		name            string
		env             map[string]string
		start           int
		wantProcs, want int
	}{
		{name: "defaults", start: 8, wantProcs: 2, want: 50},
		{name: "one CPU stays one", start: 1, wantProcs: 1, want: 50},
		{name: "GOMAXPROCS set", env: map[string]string{"GOMAXPROCS": "8"}, start: 8, wantProcs: 8, want: 50},
		{name: "GOGC set", env: map[string]string{"GOGC": "100"}, start: 8, wantProcs: 2, want: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GOMAXPROCS(tc.start)
			debug.SetGCPercent(100)
			tuneRuntime(func(k string) string { return tc.env[k] })
			if got := runtime.GOMAXPROCS(0); got != tc.wantProcs {
				t.Errorf("GOMAXPROCS %d, want %d", got, tc.wantProcs)
			}
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("GC percent %d, want %d", got, tc.want)
			}
		})
	}
}
