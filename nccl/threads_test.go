package nccl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestThreadCacheReset: a log with more envelopes than maxThreads makes the
// analyzer forget its threads and reuse their slab (newThread) several
// times. Every record must still land in its own process: process a only
// ever prints IB connections and "No device found", process b only
// socket connections. A thread handed out again while a cache still held
// it would put one process's evidence in the other.
func TestThreadCacheReset(t *testing.T) {
	var b strings.Builder
	// line prints a connection of thread tid, made distinct by i (a
	// duplicate would not be applied).
	line := func(tid, i int) {
		c, sub := i%100, i/100%100
		if tid%3 == 0 {
			fmt.Fprintf(&b, "a:1:%d [0] NCCL INFO Channel %02d/%d : 0[0] -> 1[1] [send] via NET/IB/0\n", tid, c, sub)
			if tid%999 == 0 {
				fmt.Fprintf(&b, "a:1:%d [0] NCCL INFO NET/IB : No device found.\n", tid)
			}
		} else {
			fmt.Fprintf(&b, "b:2:%d [1] NCCL INFO Channel %02d/%d : 2[1] -> 3[0] [send] via NET/Socket/0\n", tid, c, sub)
		}
	}
	// A few hot envelopes, which every cache keeps, between a stream of
	// new ones that fills the slab again and again.
	for i := range 3 * maxThreads {
		line(1<<20+i%7, i)
		line(i, i)
	}
	a := NewAnalyzer()
	if err := a.ReadFrom(context.Background(), "threads.log", strings.NewReader(b.String())); err != nil {
		t.Fatal(err)
	}
	f := a.Facts()
	if f.Stats.Threads <= maxThreads {
		t.Fatalf("%d threads: the log must go past maxThreads (%d)", f.Stats.Threads, maxThreads)
	}
	if len(f.Processes) != 2 {
		t.Fatalf("%d processes, want a:1 and b:2: %+v", len(f.Processes), f.Processes)
	}
	for _, p := range f.Processes {
		var classes []string
		for _, e := range p.Net {
			classes = append(classes, e.Class)
		}
		got := fmt.Sprintf("%s:%d net=%v noib=%v", p.Host, p.PID, classes, p.NoIB != nil)
		want := map[string]string{"a": "a:1 net=[IB] noib=true", "b": "b:2 net=[Socket] noib=false"}[p.Host]
		if got != want {
			t.Errorf("process %s, want %s", got, want)
		}
	}
}

// TestThreadTable holds the invariants of threadTable: envelopes whose
// hashes start at the same slot are all found (linear probing); a second
// envelope with the same 64-bit hash replaces the first and does not
// count twice against maxThreads, as the map it replaced did; and the
// table is empty after forgetThreads.
func TestThreadTable(t *testing.T) {
	a := NewAnalyzer()
	rec := func(prefix string, h uint64) *rawRecord {
		host, pid, _ := strings.Cut(prefix, ":")
		pid, _, _ = strings.Cut(pid, ":")
		return &rawRecord{prefixed: true, prefix: []byte(prefix), host: []byte(host), pid: []byte(pid), phash: h}
	}
	// Three hashes with the same first slot, and one whose first slot is
	// the next, found by search under this table's seed.
	tab := a.threads
	first := tab.start(1)
	var hs []uint64
	for h := uint64(2); len(hs) < 3; h++ {
		if tab.start(h) == first {
			hs = append(hs, h)
		}
	}
	for h := uint64(2); ; h++ {
		if tab.start(h) == (first+1)&(threadTableSlots-1) {
			hs = append(hs, h)
			break
		}
	}
	var ths []*thread
	for i, h := range hs {
		ths = append(ths, a.thread(rec(fmt.Sprintf("h:%d:1 [0]", i), h)))
	}
	for i, h := range hs {
		if got := a.threadOf([]byte(fmt.Sprintf("h:%d:1 [0]", i)), h); got != ths[i] {
			t.Errorf("thread %d (hash %#x): got %p, want %p", i, h, got, ths[i])
		}
	}
	if a.nthreads != len(hs) {
		t.Errorf("nthreads %d, want %d", a.nthreads, len(hs))
	}
	// A hash collision: the new envelope replaces the old one.
	th := a.thread(rec("x:9:9 [0]", hs[1]))
	if th == ths[1] || a.threadOf([]byte("h:1:1 [0]"), hs[1]) != nil || a.threadOf([]byte("x:9:9 [0]"), hs[1]) != th {
		t.Errorf("a colliding envelope must replace the first")
	}
	if a.nthreads != len(hs) {
		t.Errorf("nthreads %d after a collision, want %d", a.nthreads, len(hs))
	}
	a.forgetThreads()
	for i, h := range hs {
		if a.threadOf([]byte(fmt.Sprintf("h:%d:1 [0]", i)), h) != nil {
			t.Errorf("thread %d found after forgetThreads", i)
		}
	}
	if a.nthreads != 0 {
		t.Errorf("nthreads %d after forgetThreads", a.nthreads)
	}
}

// TestProcessCapKnownThread: past maxProcesses a new envelope skips the
// look-up in procs when pidFilter says its pid is new (process). A known
// process's new thread must still find its process, and a new process
// that shares a known pid on another host must still go to the overflow.
func TestProcessCapKnownThread(t *testing.T) {
	var b strings.Builder
	for i := range maxProcesses + 100 {
		fmt.Fprintf(&b, "host%d:%d:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n", i, 1000+i)
	}
	// New threads of known processes, and a stranger with a known pid.
	fmt.Fprintf(&b, "host5:1005:77 [3] NCCL INFO NET/IB : No device found.\n")
	fmt.Fprintf(&b, "host%d:%d:78 [1] NCCL INFO NET/IB : No device found.\n", maxProcesses-1, 1000+maxProcesses-1)
	fmt.Fprintf(&b, "other:1007:79 [1] NCCL INFO NET/IB : No device found.\n")
	a := NewAnalyzer()
	if err := a.ReadFrom(context.Background(), "cap.log", strings.NewReader(b.String())); err != nil {
		t.Fatal(err)
	}
	f := a.Facts()
	noIB := map[string]bool{}
	for _, p := range f.Processes {
		if p.NoIB != nil {
			noIB[fmt.Sprintf("%s:%d", p.Host, p.PID)] = true
		}
	}
	want := map[string]bool{"host5:1005": true, fmt.Sprintf("host%d:%d", maxProcesses-1, 1000+maxProcesses-1): true, "(more processes):-1": true}
	if fmt.Sprint(noIB) != fmt.Sprint(want) {
		t.Errorf("processes with NoIB: %v, want %v", noIB, want)
	}
	if f.Stats.Processes != maxProcesses {
		t.Errorf("%d processes, want %d", f.Stats.Processes, maxProcesses)
	}
}

// TestStatsForCache: a thread remembers statsFor's last answer (its rank's
// counters) until applyComm changes what statsFor would answer. Here a
// thread's connection lines for rank 3 start as an orphan, another thread
// announces the communicator of rank 3 (which claims the orphan), and the
// first thread's next line must count there, not in the orphan it had
// cached; then the first thread announces a second communicator of rank 3,
// which takes its later lines. The link a rank remembers (rankStats.add)
// must keep counting each line once, per peer and transport.
func TestStatsForCache(t *testing.T) {
	log := `h:1:10 [0] NCCL INFO Channel 00/0 : 3[0] -> 0[1] via P2P/IPC
h:1:10 [0] NCCL INFO Channel 01/0 : 3[0] -> 0[1] via P2P/IPC
h:1:10 [0] NCCL INFO Channel 01/0 : 3[0] -> 1[1] via P2P/IPC
h:1:11 [0] NCCL INFO comm 0x10 rank 3 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE
h:1:10 [0] NCCL INFO Channel 02/0 : 3[0] -> 0[1] via P2P/IPC
h:1:10 [0] NCCL INFO Channel 02/0 : 3[0] -> 0[1] via SHM/direct/direct
h:1:10 [0] NCCL INFO comm 0x20 rank 3 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE
h:1:10 [0] NCCL INFO Channel 03/0 : 3[0] -> 0[1] via P2P/IPC
h:1:10 [0] NCCL INFO Channel 04/0 : 3[0] -> 0[1] via P2P/IPC
`
	a := NewAnalyzer()
	if err := a.ReadFrom(context.Background(), "cache.log", strings.NewReader(log)); err != nil {
		t.Fatal(err)
	}
	f := a.Facts()
	if len(f.Processes) != 1 {
		t.Fatalf("%d processes", len(f.Processes))
	}
	p := f.Processes[0]
	var got []string
	for _, c := range p.Comms {
		s := fmt.Sprintf("%#x rank %d: %d lines", c.Ptr, c.Rank, c.Conns.Lines)
		for _, tr := range c.Conns.Transports {
			s += fmt.Sprintf(" %s=%d", tr.Name, tr.Lines)
		}
		for _, l := range c.Conns.Peers {
			s += fmt.Sprintf(" %d/%s=%d/%#x", l.Peer, l.Transport, l.Lines, l.Channels)
		}
		got = append(got, s)
	}
	want := []string{
		"0x10 rank 3: 5 lines P2P/IPC=4 SHM/direct/direct=1 0/P2P/IPC=3/0x7 1/P2P/IPC=1/0x2 0/SHM/direct/direct=1/0x4",
		"0x20 rank 3: 2 lines P2P/IPC=2 0/P2P/IPC=2/0x18",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(p.Orphans) != 0 {
		t.Errorf("comms:\n%s\nwant:\n%s\norphans %+v", strings.Join(got, "\n"), strings.Join(want, "\n"), p.Orphans)
	}
}

// TestEnvRepeat: applyEnv returns early for a variable its process
// already printed with the same value. What the repeats would have done
// must still be there: the global values (up to 8 a variable), the
// process's latest value, the first NCCL_IB_DISABLE=1 line, NCCL_NET's
// evidence from its first line.
func TestEnvRepeat(t *testing.T) {
	var b strings.Builder
	env := func(proc, tid int, name, val string) {
		fmt.Fprintf(&b, "h%d:%d:%d [0] NCCL INFO %s set by environment to %s\n", proc, proc, tid, name, val)
	}
	env(1, 1, "NCCL_NET", "Socket")
	env(1, 2, "NCCL_NET", "Socket")
	env(1, 1, "NCCL_IB_DISABLE", "1")
	env(1, 2, "NCCL_IB_DISABLE", "1")
	env(1, 1, "NCCL_X", "a")
	env(1, 2, "NCCL_X", "b")
	env(1, 3, "NCCL_X", "a")
	for p := range 9 {
		env(10+p, 1, "NCCL_Y", fmt.Sprint(p))
	}
	env(18, 2, "NCCL_Y", "8") // the ninth value: the global set is full
	env(1, 4, "NCCL_Y", "8")
	a := NewAnalyzer()
	if err := a.ReadFrom(context.Background(), "env.log", strings.NewReader(b.String())); err != nil {
		t.Fatal(err)
	}
	f := a.Facts()
	if got := fmt.Sprint(f.Env); got != "map[NCCL_IB_DISABLE:[1] NCCL_NET:[Socket] NCCL_X:[a b] NCCL_Y:[0 1 2 3 4 5 6 7]]" {
		t.Errorf("global env %s", got)
	}
	p := f.Processes[0]
	if p.Host != "h1" || fmt.Sprint(p.Env) != "map[NCCL_IB_DISABLE:1 NCCL_NET:Socket NCCL_X:a NCCL_Y:8]" {
		t.Errorf("process %s env %v", p.Host, p.Env)
	}
	if p.IBDisabled == nil || p.IBDisabled.Line != 3 || len(p.Net) != 1 || p.Net[0].Class != "Socket" || p.Net[0].Line != 1 {
		t.Errorf("IB disabled %+v, net %+v", p.IBDisabled, p.Net)
	}
}

// TestThreadTableSeedChangesNothing: the seed moves where a hash sits in the
// thread table, never what the analyzer reads. Hashes that share their
// leading bits (what a hostile log would pick against an unkeyed start)
// start at different slots, and a log read with tables of different seeds
// gives the same facts.
func TestThreadTableSeedChangesNothing(t *testing.T) {
	tab := &threadTable{seed: 0x2545f4914f6cdd1d}
	starts := map[uint64]bool{}
	for i := uint64(0); i < 64; i++ {
		starts[tab.start(7<<(64-threadTableBits)|i<<8)] = true
	}
	if len(starts) < 32 {
		t.Errorf("64 hashes with the same leading bits start at %d slots only", len(starts))
	}
	logs, err := filepath.Glob("testdata/logs/*.log")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no fixture logs: %v", err)
	}
	for _, name := range logs[:min(len(logs), 8)] {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var facts []string
		for _, seed := range []uint64{1, 0x9e3779b97f4a7c15, 0xdeadbeef} {
			a := NewAnalyzer()
			a.threads = &threadTable{seed: seed}
			for _, l := range bytes.Split(data, []byte("\n")) {
				a.Feed(l)
			}
			j, err := json.Marshal(a.Facts())
			if err != nil {
				t.Fatal(err)
			}
			facts = append(facts, string(j))
		}
		if facts[0] != facts[1] || facts[0] != facts[2] {
			t.Errorf("%s: the facts depend on the thread table's seed", name)
		}
	}
}
