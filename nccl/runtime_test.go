package nccl

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestLimitRuntimeCapsProcs: a process that runs only the analyzer gets at
// most maxWorkers Ps and HeapSoftLimit, unless the user set GOMAXPROCS or
// GOMEMLIMIT (more Ps than workers put the collector in a loop under the
// heap limit: docs/nccl.md, Performance).
func TestLimitRuntimeCapsProcs(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		debug.SetMemoryLimit(limit)
	})
	for _, tc := range []struct {
		name               string
		envProcs, envMem   string
		start              int
		wantProcs          int
		wantLimitUnchanged bool
	}{
		{name: "more Ps than workers: capped", start: maxWorkers + 12, wantProcs: maxWorkers},
		{name: "fewer Ps than workers: kept", start: 2, wantProcs: 2},
		{name: "GOMAXPROCS set by the user: kept", envProcs: "16", start: 16, wantProcs: 16},
		{name: "GOMEMLIMIT set by the user: limit kept", envMem: "1GiB", start: maxWorkers, wantProcs: maxWorkers, wantLimitUnchanged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tc.envProcs)
			t.Setenv("GOMEMLIMIT", tc.envMem)
			runtime.GOMAXPROCS(tc.start)
			const sentinel = 1 << 40
			debug.SetMemoryLimit(sentinel)
			LimitRuntime()
			if got := runtime.GOMAXPROCS(0); got != tc.wantProcs {
				t.Errorf("GOMAXPROCS = %d, want %d", got, tc.wantProcs)
			}
			got := debug.SetMemoryLimit(-1)
			if tc.wantLimitUnchanged && got != sentinel {
				t.Errorf("memory limit = %d, want the user's (unchanged)", got)
			}
			if !tc.wantLimitUnchanged && got != HeapSoftLimit {
				t.Errorf("memory limit = %d, want HeapSoftLimit %d", got, HeapSoftLimit)
			}
		})
	}
}
