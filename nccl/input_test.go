package nccl

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	gen "github.com/gpuprobe/gpuprobe/sim/nccllog"
)

// streamVerdict analyses text through the live path, one line at a time
// in effect: the reference the block readers must match.
func streamVerdict(t *testing.T, text []byte) *Verdict {
	t.Helper()
	a := NewAnalyzer()
	s := a.Stream("x")
	for _, c := range chunks(string(text), 1<<15) {
		s.Write([]byte(c))
	}
	s.Close()
	return a.Verdict()
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nccl.log")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFileBlocksMatchStream: a regular file is read in blocks by several
// parsers at once (readAtFile); every line must still be read exactly once
// and merged in order.
func TestFileBlocksMatchStream(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Options{Size: 5 << 20, Seed: 11, Ranks: 32, Hosts: 4}); err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	path := writeTemp(t, buf.Bytes())
	got := analyzeFile(t, path)
	if got.InterNode != InterGDRDMA || got.Stats.Bytes != int64(buf.Len()) {
		t.Fatalf("%s, %d bytes of %d", got.InterNode, got.Stats.Bytes, buf.Len())
	}
	if g, w := comparable(t, got), comparable(t, streamVerdict(t, buf.Bytes())); g != w {
		t.Errorf("file blocks and stream disagree (%d vs %d bytes of JSON)", len(g), len(w))
	}
}

// TestFileBlockEdges puts line ends, over-long lines and records right at
// the block boundaries.
func TestFileBlockEdges(t *testing.T) {
	channel := 0
	record := func() string { // distinct records, so that none is a duplicate
		channel++
		return "nodea:1:2 [0] NCCL INFO Channel " + itoa(int64(channel)) + "/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA"
	}
	var b bytes.Buffer
	pad := func(to int) { // foreign lines, so that the next line starts at `to`
		for to-b.Len() > 200 {
			b.WriteString(strings.Repeat("y", 99) + "\n")
		}
		b.WriteString(strings.Repeat("y", to-b.Len()-1) + "\n")
	}
	b.WriteString(record() + "\n")
	pad(blockSize) // a line starts exactly at the block boundary
	b.WriteString(record() + "\n")
	pad(2*blockSize - 10) // a record that crosses the boundary
	b.WriteString(record() + "\n")
	pad(3*blockSize - 100) // an over-long line that crosses the boundary, then a record
	b.WriteString("nodeb:3:4 [0] NCCL INFO Using network IB " + strings.Repeat("z", 3*DefaultMaxLineBytes) + "\n")
	b.WriteString(record() + "\n")
	pad(5*blockSize - 1) // a newline as the last byte of a block
	b.WriteString("\n" + record())
	data := b.Bytes()
	path := writeTemp(t, data)
	want := streamVerdict(t, data)
	for _, procs := range []int{1, 3} {
		prev := runtime.GOMAXPROCS(procs)
		got := analyzeFile(t, path)
		// A reader that is not a file, and does not tell its size, takes
		// the reader goroutine's path with full-size buffers.
		piped, err := judge(context.Background(), Input{Name: "pipe", Reader: struct{ io.Reader }{bytes.NewReader(data)}})
		if err != nil {
			t.Fatal(err)
		}
		// A file system that cannot map files is read with pread.
		pa := NewAnalyzer()
		if err := pa.readAtFile(context.Background(), pa.source("pread"), bytes.NewReader(data), int64(len(data)), blockSize); err != nil {
			t.Fatal(err)
		}
		runtime.GOMAXPROCS(prev)
		for name, v := range map[string]*Verdict{"file": got, "pipe": piped, "pread": pa.Verdict()} {
			if g, w := comparable(t, v), comparable(t, want); g != w {
				t.Errorf("GOMAXPROCS %d: %s blocks and stream disagree:\n got %s\nwant %s", procs, name, g, w)
			}
		}
		if got.Stats.Lines != int64(bytes.Count(data, []byte("\n"))+1) || got.Stats.TruncatedLines != 1 || got.NetConnections != 5 {
			t.Errorf("GOMAXPROCS %d: %d lines, %d truncated, %d NET connections", procs, got.Stats.Lines, got.Stats.TruncatedLines, got.NetConnections)
		}
	}
}

// TestFileFromOffset: a file handed over part-read is read from where it
// stands, like any reader, also from an offset that is not on a page
// boundary (the mapping starts at one).
func TestFileFromOffset(t *testing.T) {
	for _, head := range []string{strings.Repeat("x\n", blockSize), strings.Repeat("x\n", blockSize) + "odd\n"} {
		fileFromOffset(t, head)
	}
}

func fileFromOffset(t *testing.T, head string) {
	body := "h:1:2 [0] NCCL INFO Using network Socket\n" + strings.Repeat("y\n", blockSize)
	f, err := os.Open(writeTemp(t, []byte(head+body)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(int64(len(head)), io.SeekStart); err != nil {
		t.Fatal(err)
	}
	v, err := judge(context.Background(), Input{Name: "part", Reader: f})
	if err != nil {
		t.Fatal(err)
	}
	if v.NetSelected != "Socket" || v.Stats.Lines != int64(strings.Count(body, "\n")) || v.Processes[0].FirstLine.Line != 1 {
		t.Errorf("net %q, %d lines, first line %+v", v.NetSelected, v.Stats.Lines, v.Processes[0].FirstLine)
	}
}

// endless is /dev/zero as a plain reader: one line that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// stuck is stdin with nothing coming: a Read that no deadline reaches.
type stuck struct{ c chan struct{} }

func (s stuck) Read([]byte) (int, error) { <-s.c; return 0, io.EOF }

// The bugs: a stream of one endless line (a pipe from /dev/zero) was
// skipped in a loop that never looked at the deadline, and a reader stuck
// in Read (stdin) kept ReadFrom waiting past it. Both must end at the
// deadline with an error, in bounded memory.
func TestStreamEndsAtDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	for name, r := range map[string]io.Reader{"endless": endless{}, "stuck": stuck{release}} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		done := make(chan error, 1)
		a := NewAnalyzer()
		go func() { done <- a.ReadFrom(ctx, name, r) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "reading "+name+": no answer before the deadline") {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFrom still running 5 s after a 300 ms deadline", name)
		}
		cancel()
	}
}

// A regular file read past the deadline says how far it got, not its size.
func TestFileDeadlineCountsWhatWasRead(t *testing.T) {
	data := bytes.Repeat([]byte("h:1:2 [0] NCCL INFO Using network IB\n"), 4*blockSize/38)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the deadline passed before the first block
	a := NewAnalyzer()
	err := a.readAtFile(ctx, a.source("big"), bytes.NewReader(data), int64(len(data)), blockSize)
	if err == nil || a.stats.Bytes >= int64(len(data)) {
		t.Errorf("error %v, %d of %d bytes counted", err, a.stats.Bytes, len(data))
	}
}

// TestMappedFileShrinks: a log truncated in place while it is read (as
// logrotate's copytruncate does) faults on the pages past its new end. The
// read must end with an error that says so, not crash the process.
func TestMappedFileShrinks(t *testing.T) {
	data := bytes.Repeat([]byte("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"), 4*blockSize/60)
	path, m := mapTemp(t, data)
	if err := os.Truncate(path, 100); err != nil {
		t.Fatal(err)
	}
	a := NewAnalyzer()
	err := a.readMapped(context.Background(), a.source("shrunk"), m, blockSize)
	if !errors.Is(err, errShrank) {
		t.Fatalf("error %v, want %v", err, errShrank)
	}
	if v := a.Verdict(); v.Stats.Bytes >= int64(len(data)) {
		t.Errorf("%d of %d bytes counted as read from a file cut to 100", v.Stats.Bytes, len(data))
	}
}

// TestMappedBlocksRelease: the pages of merged blocks are given back as
// the read goes on, in releaseStep units, and never past what the next
// block still reads.
func TestMappedBlocksRelease(t *testing.T) {
	data := bytes.Repeat([]byte("y\n"), 3*releaseStep)
	_, m := mapTemp(t, data)
	mb := &mappedBlocks{m: m, block: blockSize, maxLine: DefaultMaxLineBytes}
	for i, want := range map[int64]int{0: 0, releaseStep/blockSize - 2: 0, releaseStep/blockSize - 1: 0, releaseStep / blockSize: releaseStep, 2*releaseStep/blockSize + 3: 2 * releaseStep} {
		m.dropped = 0
		mb.merged(i)
		if m.dropped != want {
			t.Errorf("after block %d: %d bytes released, want %d", i, m.dropped, want)
		}
	}
}

// mapTemp writes data to a temporary file and maps it; the mapping and the
// file are closed when the test ends.
func mapTemp(t *testing.T, data []byte) (string, *mapping) {
	t.Helper()
	path := writeTemp(t, data)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := mapFile(f, 0, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.close() })
	return path, m
}
