package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/state"
)

// Input is a named stream of log text.
type Input struct {
	Name   string // shown in line references; "-" for stdin
	Reader io.Reader
}

// Analyze reads every input to its end, in order, and returns the facts
// (check/ncclverdict judges them). An error means an input could not be
// read (the CLI's exit code 2); the facts then cover what was read before it.
func Analyze(ctx context.Context, inputs ...Input) (*state.NCCLFacts, error) {
	a := NewAnalyzer()
	for _, in := range inputs {
		if err := a.ReadFrom(ctx, in.Name, in.Reader); err != nil {
			return a.Facts(), err
		}
	}
	return a.Facts(), nil
}

// AnalyzeFiles analyses the named files; "-" (or no names at all) is
// standard input.
func AnalyzeFiles(ctx context.Context, paths ...string) (*state.NCCLFacts, error) {
	if len(paths) == 0 {
		paths = []string{"-"}
	}
	a := NewAnalyzer()
	for _, path := range paths {
		if err := a.readPath(ctx, path); err != nil {
			return a.Facts(), err
		}
	}
	return a.Facts(), nil
}

func (a *Analyzer) readPath(ctx context.Context, path string) error {
	if path == "-" {
		return a.ReadFrom(ctx, "-", os.Stdin)
	}
	// A FIFO with no writer blocks in open(2): open under the run's
	// deadline (deadline.Do: a hung path is not reopened), and let reads of
	// a pipe end at the deadline too.
	f, err := deadline.Do(ctx, "file:"+path, 0, func() (*os.File, error) { return os.Open(path) })
	if err != nil {
		if errors.Is(err, deadline.ErrTimeout) || errors.Is(err, deadline.ErrBusy) {
			return fmt.Errorf("nccl: open log %s: %w (a FIFO with no writer, or a hung file system?)", path, deadline.ErrTimeout)
		}
		return fmt.Errorf("nccl: open log %s: %w", path, err)
	}
	defer f.Close()
	if err := logFileKind(f); err != nil {
		return fmt.Errorf("nccl: log %s: %w", path, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = f.SetReadDeadline(dl)
	}
	return a.ReadFrom(ctx, path, f)
}

// ErrNotALog is wrapped by the error for a path that is not a log: a
// device (/dev/zero never ends, /dev/kmsg is no NCCL log), a directory or
// a socket.
var ErrNotALog = errors.New("not a log file (give a regular file, a pipe or '-' for stdin)")

// logFileKind accepts regular files and pipes (a FIFO, a shell's
// <(kubectl logs …)): a log is text someone wrote, and the time and memory
// it costs are bounded by the deadline and the block buffers, not by its
// length. Anything else is refused by type before a byte is read.
func logFileKind(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	m := fi.Mode()
	switch {
	case m.IsRegular(), m&os.ModeNamedPipe != 0:
		return nil
	case m.IsDir():
		return fmt.Errorf("a directory: %w", ErrNotALog)
	case m&os.ModeCharDevice != 0:
		return fmt.Errorf("a character device: %w", ErrNotALog)
	case m&os.ModeDevice != 0:
		return fmt.Errorf("a block device: %w", ErrNotALog)
	case m&os.ModeSocket != 0:
		return fmt.Errorf("a socket: %w", ErrNotALog)
	}
	return fmt.Errorf("file mode %v: %w", m, ErrNotALog)
}

const (
	blockSize  = 512 << 10 // bytes a parser gets at once
	maxWorkers = 4
)

// job is one block of whole lines on its way through the parsers.
type job struct {
	buf  []byte
	data []byte
	b    batch
	done chan struct{}
}

// ReadFrom analyses r to its end as the input called name. Regular files
// are read by the parsers themselves (readAtFile); other readers go
// through readStream. Memory stays bounded: a few blocks are in flight at
// any time, and lines longer than DefaultMaxLineBytes are cut there (the
// rest of such a line is skipped and counted in Stats.TruncatedLines).
func (a *Analyzer) ReadFrom(ctx context.Context, name string, r io.Reader) error {
	a.mu.Lock()
	src := a.source(name)
	a.mu.Unlock()
	var err error
	if f, off, size, ok := regularFile(r); ok {
		err = a.readFile(ctx, src, f, off, size)
	} else {
		err = a.readStream(ctx, src, r)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		a.mu.Lock()
		n := a.stats.Bytes
		a.mu.Unlock()
		return fmt.Errorf("nccl: reading %s: %w after %d bytes in all: a pipe with no more data and no end of file, or a log too big for the time allowed (--timeout)", name, deadline.ErrTimeout, n)
	}
	if err != nil {
		return fmt.Errorf("nccl: reading %s: %w", name, err)
	}
	return nil
}

// regularFile returns r as a file, the offset a reader would go on from
// and the size of the rest, when r is a regular file big enough to be
// worth reading in parallel.
func regularFile(r io.Reader) (*os.File, int64, int64, bool) {
	f, ok := r.(*os.File)
	if !ok {
		return nil, 0, 0, false
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < blockSize {
		return nil, 0, 0, false
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil || off >= st.Size() {
		return nil, 0, 0, false
	}
	return f, off, st.Size() - off, true
}

// readFile reads size bytes of a regular file from off: mapped when the
// file system allows it (no copy out of the page cache, which was an
// eighth of the analyzer's time on a connection-heavy log), else by pread.
func (a *Analyzer) readFile(ctx context.Context, src int32, f *os.File, off, size int64) error {
	m, err := mapFile(f, off, size)
	if err != nil {
		return a.readAtFile(ctx, src, io.NewSectionReader(f, off, size), size, blockSize)
	}
	err = a.readMapped(ctx, src, m, blockSize)
	if cerr := m.close(); err == nil && cerr != nil {
		err = fmt.Errorf("unmap: %w", cerr)
	}
	return err
}

// readStream analyses a reader that can only be read in order: a reader
// goroutine cuts it into blocks of whole lines, parsers work on blocks in
// parallel, and this goroutine merges their results in order.
func (a *Analyzer) readStream(ctx context.Context, src int32, r io.Reader) error {
	// Small inputs get small buffers and one parser: a run's short log or a
	// test case should not pay for a gigabyte's pipeline.
	bufSize, workers := blockSize, max(1, min(runtime.GOMAXPROCS(0), maxWorkers))
	if n, ok := sizeHint(r); ok && n < blockSize {
		bufSize, workers = max(int(n)+1, 2*a.maxLine+2), 1
	}
	jobs := make(chan *job, workers)
	order := make(chan *job, 2*workers)
	free := make(chan *job, 4*workers)
	var wg sync.WaitGroup
	for range workers {
		lp := newLineParser(a.maxLine)
		wg.Go(func() {
			for j := range jobs {
				j.b.reset()
				lp.block(j.data, &j.b)
				close(j.done)
			}
		})
	}
	// The reader may be stuck in a Read that no deadline reaches (stdin is
	// not pollable): at the deadline this goroutine stops waiting for it,
	// and the reader leaves at its next block without handing it in.
	var readErr error
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(order)
		defer close(jobs)
		br := blockReader{r: r, maxLine: a.maxLine, carry: make([]byte, 0, a.maxLine+1)}
		var spare *job // a buffer that came back empty
		for {
			if err := ctx.Err(); err != nil {
				readErr = err
				return
			}
			j := spare
			spare = nil
			if j == nil {
				select {
				case j = <-free:
				default:
					j = &job{buf: make([]byte, bufSize), b: batch{items: make([]item, 0, 256)}}
				}
			}
			data, err := br.fill(j.buf)
			a.mu.Lock()
			a.stats.Bytes += br.take()
			a.mu.Unlock()
			if len(data) > 0 {
				j.data, j.done = data, make(chan struct{})
				select {
				case order <- j:
				case <-stop:
					return
				}
				jobs <- j
			} else {
				spare = j
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr = err
				}
				return
			}
		}
	}()
	for {
		var j *job
		select {
		case j = <-order:
		case <-ctx.Done():
			return ctx.Err()
		}
		if j == nil {
			break // the reader is done
		}
		<-j.done
		a.mu.Lock()
		a.merge(src, &j.b)
		a.mu.Unlock()
		j.b.reset()
		select {
		case free <- j:
		default:
		}
	}
	wg.Wait()
	a.mu.Lock()
	a.flush()
	a.mu.Unlock()
	return readErr
}

// sizeHint returns how many bytes r holds, when it can tell.
func sizeHint(r io.Reader) (int64, bool) {
	switch x := r.(type) {
	case interface{ Len() int }:
		return int64(x.Len()), true
	case *os.File:
		if st, err := x.Stat(); err == nil && st.Mode().IsRegular() {
			return st.Size(), true
		}
	}
	return 0, false
}

// blockReader fills buffers with whole lines. A line that does not fit in
// the buffer, or that is carried over longer than maxLine, is cut and the
// rest of it up to its newline is dropped: the parser then sees a line
// longer than maxLine and counts it as truncated.
type blockReader struct {
	r        io.Reader
	maxLine  int
	carry    []byte // start of a line that continues in the next block
	skipping bool   // dropping the rest of an over-long line
	eof      bool
	read     int64 // bytes read since the last take
}

func (br *blockReader) take() int64 {
	n := br.read
	br.read = 0
	return n
}

// fill returns the next lines in buf. At the end it returns io.EOF, with
// the last line (which may lack its newline) if there is one.
func (br *blockReader) fill(buf []byte) ([]byte, error) {
	n := copy(buf, br.carry)
	br.carry = br.carry[:0]
	for !br.eof && n < len(buf) {
		m, err := br.r.Read(buf[n:min(n+readChunk, len(buf))])
		br.read += int64(m)
		if br.skipping && m > 0 {
			if i := bytes.IndexByte(buf[n:n+m], '\n'); i < 0 {
				// Hand back an empty block, keeping what was gathered, so
				// that the caller sees the deadline between reads:
				// skipping an endless line (/dev/zero, a pipe that never
				// writes a newline) looped here for good.
				br.carry = append(br.carry, buf[:n]...)
				return buf[:0], nil
			} else {
				copy(buf[n:], buf[n+i:n+m])
				m -= i
				br.skipping = false
			}
		}
		n += m
		if errors.Is(err, io.EOF) {
			br.eof = true
		} else if err != nil {
			return buf[:n], err
		}
	}
	if br.eof {
		return buf[:n], io.EOF
	}
	k := bytes.LastIndexByte(buf[:n], '\n')
	if k < 0 {
		br.skipping = true // one line fills the buffer: the parser cuts it
		return buf[:n], nil
	}
	rest := buf[k+1 : n]
	if len(rest) > br.maxLine {
		rest = rest[:br.maxLine+1]
		br.skipping = true
	}
	br.carry = append(br.carry, rest...)
	return buf[:k+1], nil
}

// flush completes what waits for a next line that will not come.
func (a *Analyzer) flush() {
	if a.dangling != nil {
		a.flushDangling()
	}
	a.heads = a.heads[:0]
}

// Stream returns a writer that analyses what is written to it as the
// input called name: the stdout or stderr of a child. Writes may split
// lines anywhere; Close analyses a last line without a newline. Several
// streams may be written concurrently.
func (a *Analyzer) Stream(name string) io.WriteCloser {
	a.mu.Lock()
	src := a.source(name)
	a.mu.Unlock()
	return &stream{a: a, src: src}
}

type stream struct {
	mu       sync.Mutex
	a        *Analyzer
	src      int32
	carry    []byte
	skipping bool
	closed   bool
}

func (s *stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errors.New("nccl: write to closed stream")
	}
	a := s.a
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stats.Bytes += int64(len(p))
	written := len(p)
	a.lb.reset()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.hold(p)
			break
		}
		line := p[:i]
		p = p[i+1:]
		switch {
		case s.skipping:
			s.skipping = false
		case len(s.carry) > 0:
			s.carry = append(s.carry, line...)
			s.parse(s.carry)
			s.carry = nil // the batch still points into it
		default:
			s.parse(line)
		}
	}
	a.merge(s.src, &a.lb)
	a.lb.reset()
	return written, nil
}

// hold keeps the start of a line until its newline arrives, but never
// more than one capped line.
func (s *stream) hold(p []byte) {
	if s.skipping {
		return
	}
	s.carry = append(s.carry, p...)
	if len(s.carry) > s.a.maxLine {
		s.parse(s.carry)
		s.carry = nil
		s.skipping = true
	}
}

func (s *stream) parse(line []byte) {
	b := &s.a.lb
	s.a.lp.out = b
	b.lines++
	s.a.lp.line(line, b.lines)
}

func (s *stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	a := s.a
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lb.reset()
	if len(s.carry) > 0 {
		s.parse(s.carry)
		s.carry = nil
	}
	a.merge(s.src, &a.lb)
	a.lb.reset()
	a.flush()
	return nil
}
