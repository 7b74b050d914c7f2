package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	gen "github.com/gpuprobe/gpuprobe/sim/nccllog"
)

// Two nodes, GDR on the inter-node hops: the smallest log that says GDRDMA.
var gdrLog = lines(
	"nodea:100:110 [0] NCCL INFO NCCL version 2.19.3+cuda12.3",
	"nodea:100:110 [0] NCCL INFO Using network IB",
	"nodeb:200:210 [0] NCCL INFO Using network IB",
	"nodea:100:110 [0] NCCL INFO comm 0x1000 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xabc - Init START",
	"nodeb:200:210 [0] NCCL INFO comm 0x2000 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xabc - Init START",
	"nodea:100:110 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA",
	"nodea:100:110 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA",
	"nodeb:200:210 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0/GDRDMA",
	"nodeb:200:210 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/IB/0/GDRDMA",
	"nodea:100:110 [0] NCCL INFO comm 0x1000 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xabc - Init COMPLETE",
	"nodeb:200:210 [0] NCCL INFO comm 0x2000 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xabc - Init COMPLETE",
)

func TestSmallGDRLog(t *testing.T) {
	v := analyzeString(t, gdrLog)
	if v.InterNode != InterGDRDMA || v.GDR == nil || !*v.GDR || v.NetConnections != 4 || v.GDRConnections != 4 {
		t.Fatalf("verdict %s gdr=%v conns %d/%d", v.InterNode, v.GDR, v.GDRConnections, v.NetConnections)
	}
	if len(v.Communicators) != 1 {
		t.Fatalf("communicators: %+v", v.Communicators)
	}
	c := v.Communicators[0]
	if c.ID != "0x0000000000000abc" || c.NRanks != 2 || c.RanksSeen != 2 || c.Hosts != 2 || c.Complete != 2 || c.Inter["NET/IB/GDRDMA"] != 4 {
		t.Errorf("communicator: %+v", c)
	}
	if r := c.Ranks[1]; r.Host != "nodeb" || r.PID != 200 || r.BusID != "1b000" || r.Transports["NET/IB/GDRDMA"] != 2 {
		t.Errorf("rank 1: %+v", r)
	}
	if len(v.Processes) != 2 || v.Processes[0].Net != "IB" || len(v.Processes[0].Ranks) != 1 {
		t.Errorf("processes: %+v", v.Processes)
	}
	if !v.Healthy(true) {
		t.Errorf("GDR log judged unhealthy: %+v", v.Problems(ProblemOptions{ExpectGDR: true}))
	}
}

// TestDedupe: a CloudWatch export glues a second copy of each record to
// the line, and may also repeat whole lines; neither may double-count.
func TestDedupe(t *testing.T) {
	var doubled, glued strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(gdrLog), "\n") {
		doubled.WriteString(l + "\n" + l + "\n")
		glued.WriteString("  | 2024-12-04T05:27:39.074Z" + l + " | " + l + "\n")
	}
	base := analyzeString(t, gdrLog)
	for name, log := range map[string]string{"doubled": doubled.String(), "glued": glued.String()} {
		v := analyzeString(t, log)
		if v.NetConnections != base.NetConnections || v.Stats.Duplicates != base.Stats.Records {
			t.Errorf("%s: %d NET connections (want %d), %d duplicates dropped (want %d)", name, v.NetConnections, base.NetConnections, v.Stats.Duplicates, base.Stats.Records)
		}
		if v.Hosts != 2 || len(v.Processes) != 2 {
			t.Errorf("%s: %d hosts, %d processes: the glued timestamp leaked into a host name? %+v", name, v.Hosts, len(v.Processes), v.Processes)
		}
	}
}

// TestDedupeWindow: a copy of a log appended after it (a NCCL_DEBUG_FILE
// concatenated with the job's output, one file given twice) is dropped
// record by record when the log is well within the table (docs/nccl.md,
// "Duplicates"). The table is 4-way and fixed: a record whose bucket
// overflowed is counted twice, so near the size some copies are kept, and
// far past it nearly all are: a bound, not a promise for any size. The
// table that grew by doubling caught only 6,307 of 20,000 copies.
func TestDedupeWindow(t *testing.T) {
	build := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "h:1:2 [0] NCCL INFO Channel %02d/0 : 0[0] -> %d[1] [send] via NET/IB/0/GDRDMA\n", i%32, 1+i/32)
		}
		return b.String()
	}
	for _, tc := range []struct {
		records      int
		minDups      int64
		wantConnsMax int64
	}{
		{records: 20_000, minDups: 19_800, wantConnsMax: 20_200},
		{records: 50_000, minDups: 45_000, wantConnsMax: 55_000},
		{records: 400_000, minDups: 0, wantConnsMax: 800_000},
	} {
		one := build(tc.records)
		v := analyzeString(t, one+one)
		if v.Stats.Duplicates < tc.minDups || v.Stats.Duplicates > int64(tc.records) {
			t.Errorf("%d records twice: %d duplicates dropped, want %d to %d", tc.records, v.Stats.Duplicates, tc.minDups, tc.records)
		}
		if v.NetConnections+v.Stats.Duplicates != 2*int64(tc.records) || v.NetConnections > tc.wantConnsMax {
			t.Errorf("%d records twice: %d NET connections and %d duplicates, want them to add up to %d and at most %d connections",
				tc.records, v.NetConnections, v.Stats.Duplicates, 2*tc.records, tc.wantConnsMax)
		}
	}
}

// TestDedupeKeepsOtherCommunicators: the same connection line printed by
// one thread for two communicators is two connections, not a duplicate.
func TestDedupeKeepsOtherCommunicators(t *testing.T) {
	log := lines(
		"h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 commId 0x1 - Init START",
		"h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
		"h:1:2 [0] NCCL INFO comm 0xb rank 0 nranks 2 cudaDev 0 commId 0x2 - Init START",
		"h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
		"h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
	)
	v := analyzeString(t, log)
	if len(v.Communicators) != 2 {
		t.Fatalf("communicators: %+v", v.Communicators)
	}
	for _, c := range v.Communicators {
		if c.Intra["P2P/IPC"] != 1 {
			t.Errorf("communicator %s: intra %v, want one P2P/IPC connection", c.ID, c.Intra)
		}
	}
	if v.Stats.Duplicates != 1 {
		t.Errorf("duplicates %d, want 1", v.Stats.Duplicates)
	}
}

// TestTornInterleaving: the orphan tail of a torn write belongs to the
// first envelope of the torn line (FORMATS.md A16, log 042).
func TestTornInterleaving(t *testing.T) {
	log := lines(
		"learnfair062:40507:40644 [2] NCCL INFO learnfair062:40515:40515 [6] NCCL INFO Using internal Network IB",
		"learnfair062:40515:40515 [6] NCCL INFO rank 6 nranks 8",
		"comm 0x7f6df005a260 rank 2 nranks 8",
	)
	v := analyzeString(t, log)
	got := map[int64][]int64{}
	for _, p := range v.Processes {
		got[p.PID] = p.Ranks
	}
	if len(got[40507]) != 1 || got[40507][0] != 2 || len(got[40515]) != 1 || got[40515][0] != 6 {
		t.Errorf("ranks by pid: %v, want 40507→[2] 40515→[6]", got)
	}
}

// TestFoldedConnection: a terminal paste that breaks a record after "via"
// (FORMATS.md A15) still counts as a GDR connection.
func TestFoldedConnection(t *testing.T) {
	log := lines(
		"n1:10:11 [0] NCCL INFO Using network IB",
		"n2:20:21 [0] NCCL INFO Using network IB",
		"n1:10:11 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via",
		" NET/IBext/4/GDRDMA        n2:20:21 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/IBext/4/GDRDMA",
	)
	v := analyzeString(t, log)
	if v.NetConnections != 2 || v.GDRConnections != 2 || v.InterNode != InterGDRDMA {
		t.Errorf("got %s with %d/%d GDR connections", v.InterNode, v.GDRConnections, v.NetConnections)
	}
	// Without the continuation the broken line still names its ranks.
	v = analyzeString(t, lines(
		"n1:10:11 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via",
		"something else",
	))
	if v.NRanks == nil || *v.NRanks != 2 || v.NetConnections != 0 {
		t.Errorf("broken line: nranks %v, %d NET connections", v.NRanks, v.NetConnections)
	}
}

// TestLongLines: a line past the cap is cut, counted, and does not
// disturb the lines after it, whichever way the text arrives.
func TestLongLines(t *testing.T) {
	long := "h:1:2 [0] NCCL INFO Using network Socket   " + strings.Repeat("x", 3*DefaultMaxLineBytes) +
		" h:1:2 [0] NCCL INFO Using network IB"
	log := lines(
		"before",
		long,
		"h2:3:4 [0] NCCL INFO NCCL version 2.18.1+cuda12.1",
	)
	check := func(name string, v *Verdict) {
		t.Helper()
		if v.Stats.TruncatedLines != 1 || v.Stats.Lines != 3 {
			t.Errorf("%s: %d truncated of %d lines, want 1 of 3", name, v.Stats.TruncatedLines, v.Stats.Lines)
		}
		if v.NetSelected != "Socket" {
			t.Errorf("%s: net %.40q: the record before the cut must count, the one after it must not", name, v.NetSelected)
		}
		if len(v.NCCLVersions) != 1 || len(v.Processes) != 2 || v.Processes[1].FirstLine.Line != 3 {
			t.Errorf("%s: the line after the long one was misread: %v %+v", name, v.NCCLVersions, v.Processes)
		}
	}
	check("reader", analyzeString(t, log))
	a := NewAnalyzer()
	s := a.Stream("s")
	for _, chunk := range chunks(log, 1000) {
		s.Write([]byte(chunk))
	}
	s.Close()
	check("stream", a.Verdict())
	a = NewAnalyzer()
	for _, l := range strings.SplitAfter(log, "\n") {
		if l != "" {
			a.Feed([]byte(l))
		}
	}
	check("feed", a.Verdict())
}

// TestLineWithoutEnd: a last line without a newline is read, and a huge
// one does not grow memory.
func TestLineWithoutEnd(t *testing.T) {
	v := analyzeString(t, "h:1:2 [0] NCCL INFO Using network IB")
	if v.NetSelected != "IB" || v.Stats.Lines != 1 {
		t.Errorf("last line without newline: net %q, %d lines", v.NetSelected, v.Stats.Lines)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v, err := judge(context.Background(), Input{Name: "x", Reader: io.LimitReader(repeatReader('x'), 64<<20)})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if v.Stats.TruncatedLines != 1 || v.Stats.Lines != 1 || v.Stats.Bytes != 64<<20 {
		t.Errorf("stats %+v", v.Stats)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("a 64 MiB line allocated %d MiB", grew>>20)
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// chunks cuts s at random places, as pipe reads do.
func chunks(s string, max int) []string {
	rnd := rand.New(rand.NewPCG(1, 2))
	var out []string
	for len(s) > 0 {
		n := min(len(s), 1+rnd.IntN(max))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// TestStreamMatchesReader: the live path (Stream, used by `nccl run`) and
// the line-at-a-time path (Feed) reach the same verdict as the parallel
// file reader, for every fixture.
func TestStreamMatchesReader(t *testing.T) {
	for _, path := range corpus(t) {
		text := strings.Join(readLines(t, path), "\n") + "\n"
		want := comparable(t, analyzeString(t, text))
		a := NewAnalyzer()
		s := a.Stream("stdout")
		for _, c := range chunks(text, 97) {
			s.Write([]byte(c))
		}
		s.Close()
		if got := comparable(t, a.Verdict()); got != want {
			t.Errorf("%s: stream verdict differs:\n got %s\nwant %s", path, got, want)
		}
		a = NewAnalyzer()
		for _, l := range strings.SplitAfter(text, "\n") {
			if l != "" {
				a.Feed([]byte(l))
			}
		}
		if got := comparable(t, a.Verdict()); got != want {
			t.Errorf("%s: Feed verdict differs:\n got %s\nwant %s", path, got, want)
		}
	}
}

// TestParallelMatchesSequential: parsing blocks on several cores and
// merging them must give exactly what one line at a time gives, on a log
// large enough to span many blocks.
func TestParallelMatchesSequential(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Options{Size: 6 << 20, Seed: 7, Ranks: 64, Hosts: 8, Prefix: "mpi", Transport: "ib"}); err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	par := analyzeString(t, buf.String())
	if par.InterNode != InterIB || par.Stats.Lines < 10000 {
		t.Fatalf("synthetic IB log: %s over %d lines", par.InterNode, par.Stats.Lines)
	}
	a := NewAnalyzer()
	s := a.Stream("x")
	for _, c := range chunks(buf.String(), 1<<16) {
		s.Write([]byte(c))
	}
	s.Close()
	if got, want := comparable(t, a.Verdict()), comparable(t, par); got != want {
		t.Errorf("sequential and parallel verdicts differ (%d vs %d bytes of JSON)", len(got), len(want))
	}
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n > 0 {
		f.n--
		return copy(p, "h:1:2 [0] NCCL INFO Using network IB\n"), nil
	}
	return 0, errors.New("disk on fire")
}

func TestUnreadableInput(t *testing.T) {
	v, err := judge(context.Background(), Input{Name: "bad.log", Reader: &failingReader{n: 3}})
	if err == nil || !strings.Contains(err.Error(), "bad.log") || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("error %v: want the input name and the cause", err)
	}
	if v == nil || v.NetSelected != "IB" {
		t.Errorf("the verdict must cover what was read before the error: %+v", v)
	}
	if _, err := judgeFiles(context.Background(), "testdata/does-not-exist.log"); err == nil {
		t.Error("a missing file gave no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := judge(ctx, Input{Name: "x", Reader: strings.NewReader(gdrLog)}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

// TestBoundedState: a log with more processes, threads and communicators
// than the caps is analysed without the state growing past them.
func TestBoundedState(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		var b []byte
		for i := 0; i < maxProcesses+5000; i++ {
			b = b[:0]
			b = append(b, "host"...)
			b = append(b, itoa(int64(i))...)
			b = append(b, ":1:2 [0] NCCL INFO comm 0x10 rank 0 nranks 4 cudaDev 0 commId 0x"...)
			b = append(b, hex16(uint64(i))...)
			b = append(b, " - Init START\n"...)
			pw.Write(b)
		}
		pw.Close()
	}()
	a := NewAnalyzer()
	if err := a.ReadFrom(context.Background(), "many", pr); err != nil {
		t.Fatal(err)
	}
	v := a.Verdict()
	if len(a.procs) > maxProcesses || a.comms > maxCommInstances || v.Stats.ProcessCap != maxProcesses || !strings.Contains(v.Limits, "more than 4096 processes") {
		t.Errorf("procs %d comms %d process cap %d, limits %q", len(a.procs), a.comms, v.Stats.ProcessCap, v.Limits)
	}
	if len(v.Processes) > 1024 || v.ProcessesOmitted == 0 {
		t.Errorf("report lists %d processes, omits %d", len(v.Processes), v.ProcessesOmitted)
	}
	if v.Hosts != maxProcesses {
		t.Errorf("hosts %d", v.Hosts)
	}
}

// TestOrphanRanksBounded: connection lines that no communicator line
// claims are kept per rank, and a log with a new process on every line
// could make that grow with the log (one pid per line, 1.3 million lines:
// 539 MB of peak RSS). What is kept is capped over all processes; the
// heap it holds is measured, and the verdict says what was capped.
func TestOrphanRanksBounded(t *testing.T) {
	const procs, ranks = maxProcesses, 64 // 262,144 orphan ranks without the cap
	pr, pw := io.Pipe()
	go func() {
		var b []byte
		for r := 0; r < ranks; r++ {
			b = b[:0]
			for p := 0; p < procs; p++ {
				b = append(b, 'h')
				b = append(b, itoa(int64(p))...)
				b = append(b, ':')
				b = append(b, itoa(int64(p+1))...)
				b = append(b, ":1 [0] NCCL INFO Channel 00/0 : "...)
				b = append(b, itoa(int64(r))...)
				b = append(b, "[0] -> "...)
				b = append(b, itoa(int64(r+1))...)
				b = append(b, "[1] [send] via NET/IB/0/GDRDMA\n"...)
			}
			pw.Write(b)
		}
		pw.Close()
	}()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a := NewAnalyzer()
	if err := a.ReadFrom(context.Background(), "orphans", pr); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap held after %d lines: %.1f MB, %d orphan ranks", procs*ranks, float64(held)/(1<<20), a.orphans)
	if held > 24<<20 {
		t.Errorf("the analyzer holds %.1f MB after a log of %d processes × %d ranks without communicator lines", float64(held)/(1<<20), procs, ranks)
	}
	v := a.Verdict()
	if a.orphans > maxOrphanRanks || v.Stats.OrphanCap != maxOrphanRanks || v.Stats.Untracked == 0 ||
		!strings.Contains(v.Limits, "more than 16384 ranks") || v.NetConnections != procs*ranks {
		t.Errorf("orphans %d, orphan cap %d, untracked %d, net %d, limits %q", a.orphans, v.Stats.OrphanCap, v.Stats.Untracked, v.NetConnections, v.Limits)
	}
}
