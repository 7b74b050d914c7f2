package jobperf

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// testdata/pyspy-dump-torch.txt is a dump in the layout py-spy's
// src/dump.rs writes (write_traces: "Process PID: cmdline", "Python vX
// (exe)", a blank line; write_trace: `Thread TID (status): "name"` and
// four-space-indented `func (file:line)` frames, innermost first): a torch
// rank blocked in an NCCL all_reduce beside an idle pin-memory thread.
// Composed for the tests in that layout, not captured; collect's fake
// py-spy prints it too.
func pySpyDumpTorch(t testing.TB) string {
	b, err := os.ReadFile("testdata/pyspy-dump-torch.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParsePySpyDump(t *testing.T) {
	for _, c := range []struct {
		name, in, id, status, thread string
		frames                       []string
		ok                           bool
	}{
		{"torch all_reduce", pySpyDumpTorch(t), "70100", "active", "MainThread",
			[]string{"all_reduce (torch/distributed/distributed_c10d.py:2501)", "wrapper (torch/distributed/c10d_logger.py:83)", "_sync_grads (train.py:212)", "step (train.py:240)", "main (train.py:301)", "<module> (train.py:320)"}, true},
		// The main thread is found by name wherever it is printed.
		{"main thread second", "Thread 5 (idle): \"worker\"\n    run (w.py:1)\nThread 0x7F3A2C1B4740 (active+gil): \"MainThread\"\n    spin (m.py:9)\n", "0x7F3A2C1B4740", "active+gil", "MainThread", []string{"spin (m.py:9)"}, true},
		// Unnamed threads: the first printed (the oldest: the main one).
		{"no names", "Thread 12 (idle)\n    f (a.py)\nThread 13 (active)\n    g (b.py:2)\n", "12", "idle", "", []string{"f (a.py)"}, true},
		// --locals lines and a terminal's colours.
		{"locals and colours", "Thread \x1b[1;33m9\x1b[0m (active): \"MainThread\"\n    \x1b[32mf\x1b[0m (a.py:1)\n        Arguments:\n            x: 1\n    g (b.py:2)\n", "9", "active", "MainThread", []string{"f (a.py:1)", "g (b.py:2)"}, true},
		{"error text", "Error: Failed to find python version from target process\n", "", "", "", nil, false},
		{"empty", "", "", "", "", nil, false},
		{"bad header", "Thread (x\n    f (a.py:1)\n", "", "", "", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParsePySpyDump([]byte(c.in))
			if ok != c.ok || got.ID != c.id || got.Status != c.status || got.Name != c.thread || !slices.Equal(got.Frames, c.frames) {
				t.Errorf("got %+v %v", got, ok)
			}
		})
	}
	var b strings.Builder
	b.WriteString("Thread 1 (active): \"MainThread\"\n")
	for range 100 {
		b.WriteString("    f (a.py:1)\n")
	}
	if got, _ := ParsePySpyDump([]byte(b.String())); len(got.Frames) != MaxPyFrames || got.More != 100-MaxPyFrames {
		t.Errorf("100 frames: kept %d, more %d", len(got.Frames), got.More)
	}
}
