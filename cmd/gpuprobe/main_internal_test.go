package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
)

var watchdogFired atomic.Bool

// TestMain keeps the --slurm-drain watchdog from ending the test binary: the
// CLI runs in-process here, and os.Exit would take every other test with it.
// A watchdog that fires in a test is reported as a failure of the run.
func TestMain(m *testing.M) {
	// No test reads or writes the real /var/lib/gpuprobe: a test that wants
	// a drain history passes --drain-history; the others get a path in a
	// directory that does not exist (read: empty; write: a logged warning).
	drainHistoryDefault = "/nonexistent-gpuprobe-test/drain-history.json"
	watchdogExit = func(code int) {
		fmt.Fprintf(os.Stderr, "test: the --slurm-drain watchdog fired (exit %d would have ended the process)\n", code)
		watchdogFired.Store(true)
	}
	code := m.Run()
	if watchdogFired.Load() && code == 0 {
		fmt.Fprintln(os.Stderr, "FAIL: a --slurm-drain watchdog fired during the tests")
		code = 1
	}
	os.Exit(code)
}
