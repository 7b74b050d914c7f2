package check

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// burstFromPastebin reads the real log in testdata (one application fault,
// nine lines over 39 s) into events shifted to start at start; the check
// test reads it with a few lines of its own, not the collector's parser.
func burstFromPastebin(t *testing.T, start time.Time) []state.XIDEvent {
	t.Helper()
	f, err := os.Open("testdata/xid-burst-pastebin-fTNHmgzB.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []state.XIDEvent
	var first time.Time
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		at, err := time.Parse("Jan 2 15:04:05", line[:15])
		if err != nil {
			t.Fatal(err)
		}
		if first.IsZero() {
			first = at
		}
		_, rest, _ := strings.Cut(line, "Xid (PCI:")
		bus, rest, _ := strings.Cut(rest, "): ")
		code, _, _ := strings.Cut(rest, ",")
		ev := state.XIDEvent{BusID: bus, Time: start.Add(at.Sub(first)), Message: rest}
		switch code {
		case "69":
			ev.Code = 69
		case "31":
			ev.Code = 31
		default:
			t.Fatalf("unexpected code %q", code)
		}
		out = append(out, ev)
	}
	if len(out) != 9 {
		t.Fatalf("read %d lines, want 9", len(out))
	}
	return out
}

// Application-class XIDs (NVIDIA: RESTART_APP) warn once; recurring on one
// GPU alone they fail. Before, every one of these warned.
func TestXIDRecurrence(t *testing.T) {
	at := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	withXIDs := func(evs ...state.XIDEvent) *state.Node {
		return healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.Kernel = kernelState(86400, evs)
		})
	}
	// bursts: k application faults on bus, `every` apart, each three lines
	// (13, 13, 43 from one pid within seconds), in the log's order (oldest
	// first), the newest one `every` before now.
	bursts := func(k int, bus string, every time.Duration) []state.XIDEvent {
		var evs []state.XIDEvent
		for i := k - 1; i >= 0; i-- {
			t0 := at.Add(-time.Duration(i+1) * every)
			for j, code := range []int{13, 13, 43} {
				evs = append(evs, state.XIDEvent{Code: code, BusID: bus, PID: 4000 + i, Process: "python", Time: t0.Add(time.Duration(j) * time.Second)})
			}
		}
		return evs
	}
	realBursts := func(k int, every time.Duration) []state.XIDEvent {
		var evs []state.XIDEvent
		for i := k - 1; i >= 0; i-- {
			evs = append(evs, burstFromPastebin(t, at.Add(-time.Duration(i+1)*every))...)
		}
		return evs
	}
	undated := func(evs []state.XIDEvent) []state.XIDEvent {
		for i := range evs {
			evs[i].Time = time.Time{}
		}
		return evs
	}
	runCases(t, checkXID, []checkCase{
		{name: "five incidents on one GPU in a day fail", node: withXIDs(bursts(5, "0000:10:00", time.Hour)...), status: Fail,
			summary: "GPU 0 (0000:10:00.0): Xid 13: graphics engine exception (usually an application bug or illegal memory access) (10 times), last by python (pid 4000); recurring: 5 separate incidents on this GPU alone within 4h0m0s (window 24h0m0s), escalates at 5",
			devices: []int{0}},
		{name: "four incidents still warn", node: withXIDs(bursts(4, "0000:10:00", time.Hour)...), status: Warn, devices: []int{0}},
		// A real log: one fault is nine lines over 39 s, one incident.
		{name: "one real burst is one incident", node: withXIDs(burstFromPastebin(t, at.Add(-time.Hour))...), cfg: func(c *Config) { c.XID.Recurrence.Count = 2 },
			status: Warn, summary: "PCI 0000:08:00: Xid 31"},
		{name: "the real burst five times in a day fails", node: withXIDs(realBursts(5, 3*time.Hour)...), status: Fail, summary: "recurring: 5 separate incidents"},
		// Issue 26: one PyTorch job's Xid 13 for 2 h (629 lines, in nine
		// bursts 14 min apart, all pid=51234 name=python) is one incident:
		// it warned as "9 separate incidents" and failed. The same bursts
		// from nine processes still fail: recurrence across processes.
		{name: "one process failing for 2 h is one incident", node: withXIDs(oneJob(at, "0000:10:00", 629, 9, func(int) int { return 51234 })...),
			status: Warn, summary: "(629 times), last by python (pid 51234)", devices: []int{0}},
		{name: "the same bursts from nine processes fail", node: withXIDs(oneJob(at, "0000:10:00", 629, 9, func(b int) int { return 51234 + b })...),
			status: Fail, summary: "recurring: 9 separate incidents on this GPU alone", devices: []int{0}},
		// A multi-GPU job failing on every GPU it ran on: the job's fault.
		{name: "faults shared with another GPU are the job's", node: withXIDs(append(bursts(5, "0000:10:00", time.Hour), bursts(5, "0000:11:00", time.Hour)...)...),
			status: Warn, devices: []int{0, 1}},
		{name: "spread beyond the window", node: withXIDs(bursts(5, "0000:10:00", 7*time.Hour)...), status: Warn, devices: []int{0}},
		{name: "window configurable", node: withXIDs(bursts(5, "0000:10:00", 7*time.Hour)...), cfg: func(c *Config) { c.XID.Recurrence.Window = 48 * time.Hour }, status: Fail, devices: []int{0}},
		{name: "window 0 counts since boot", node: withXIDs(bursts(5, "0000:10:00", 7*time.Hour)...), cfg: func(c *Config) { c.XID.Recurrence.Window = 0 }, status: Fail, summary: "since boot", devices: []int{0}},
		{name: "off", node: withXIDs(bursts(9, "0000:10:00", time.Hour)...), cfg: func(c *Config) { c.XID.Recurrence.Count = 0 }, status: Warn, devices: []int{0}},
		// Lines without a time cannot be told apart: they are one incident,
		// and the count runs since boot.
		{name: "undated lines are one incident", node: withXIDs(undated(bursts(9, "0000:10:00", time.Hour))...), status: Warn, devices: []int{0}},
		{name: "undated lines counted since boot", node: withXIDs(append(undated(bursts(1, "0000:10:00", time.Hour)), bursts(1, "0000:10:00", 2*time.Hour)...)...),
			cfg: func(c *Config) { c.XID.Recurrence.Count = 2 }, status: Fail, summary: "2 separate incidents on this GPU since boot (some lines carry no time", devices: []int{0}},
		// A driver reload reset the GPU: what came before is not counted.
		{name: "before a driver load not counted", node: healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.Kernel = reloadedLog(bursts(5, "0000:10:00", time.Hour), nil)
		}), status: Pass},
		// Reset-class codes already fail; recurrence does not touch them.
		{name: "a critical code is not re-labelled", node: withXIDs(state.XIDEvent{Code: 48, BusID: "0000:10:00", Time: at.Add(-time.Hour)}), status: Fail, summary: "Xid 48", devices: []int{0}},
	})
}

func TestXIDRecurrenceConfig(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.XID.Recurrence != (XIDRecurrence{Count: 5, Window: 24 * time.Hour}) {
		t.Errorf("default recurrence = %+v", cfg.XID.Recurrence)
	}
	if err := ParseConfig([]byte("xid:\n  recurrence:\n    count: 1\n"), DefaultConfig()); err == nil || !strings.Contains(err.Error(), "xid.recurrence.count: 1") {
		t.Errorf("count 1 accepted: %v", err)
	}
	c := DefaultConfig()
	if err := ParseConfig([]byte("xid:\n  recurrence:\n    count: 3\n    window: 6h\n"), c); err != nil || c.XID.Recurrence != (XIDRecurrence{Count: 3, Window: 6 * time.Hour}) {
		t.Errorf("parsed %+v, %v", c.XID.Recurrence, err)
	}
}

// oneJob is a job's Xid 13 lines on bus: n lines in k bursts 14 min apart
// (each burst's lines 1 s apart), the last burst an hour before at, burst
// b's lines from pid(b), all named python.
func oneJob(at time.Time, bus string, n, k int, pid func(b int) int) []state.XIDEvent {
	var evs []state.XIDEvent
	start := at.Add(-time.Hour - time.Duration(k-1)*14*time.Minute)
	for i := range n {
		b := i * k / n
		t0 := start.Add(time.Duration(b) * 14 * time.Minute)
		evs = append(evs, state.XIDEvent{Code: 13, BusID: bus, PID: pid(b), Process: "python", Time: t0.Add(time.Duration(i-b*n/k) * time.Second)})
	}
	return evs
}
