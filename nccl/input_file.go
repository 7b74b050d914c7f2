package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
)

// readAtFile analyses a regular file by blocks that the parsers read
// themselves (pread), with no reader goroutine in between: on a busy
// machine every hand-off between goroutines costs a wake-up, and a 1 GB
// log has thousands of blocks.
func (a *Analyzer) readAtFile(ctx context.Context, src int32, r io.ReaderAt, size, block int64) error {
	return a.readBlocks(ctx, src, &preadBlocks{r: r, size: size, block: max(block, 1), maxLine: a.maxLine}, size, block)
}

// readMapped analyses a file mapped into memory (mapFile): the parsers
// read the page cache in place, with no copy, and the pages of merged
// blocks are dropped from the process as the read goes on, so that its
// resident set stays a few blocks whatever the file's size.
func (a *Analyzer) readMapped(ctx context.Context, src int32, m *mapping, block int64) error {
	err := a.readBlocks(ctx, src, &mappedBlocks{m: m, block: max(block, 1), maxLine: a.maxLine}, int64(len(m.data)), block)
	// Nothing the merger keeps may point into the mapping once it is gone:
	// the event of the last record is the one place that held slices of a
	// line past its merge (its fields are refilled before every use).
	a.mu.Lock()
	a.ev = event{}
	a.mu.Unlock()
	return err
}

// A blockSource hands a parser the lines that start in one block.
type blockSource interface {
	// lines returns the lines that start in block i; buf is a buffer of
	// bufSize bytes it may fill.
	lines(i int64, buf []byte) ([]byte, error)
	bufSize() int
	// merged says that blocks 0..i are merged: nothing reads their bytes
	// again except the one byte block i+1 looks at before its start.
	merged(i int64)
	faults() bool // reading may fault (a mapped file that shrank)
}

// readBlocks reads size bytes from src by blocks, parsed in parallel and
// merged in order.
//
// Block i owns the lines that start in [i*block, (i+1)*block). A
// parser reads one byte before its block (to tell whether a line starts
// exactly at its beginning) and up to a capped line after it (to finish
// its last line), so no line is read by two blocks and an over-long line
// is cut by the block it starts in. Blocks are merged strictly in order
// by whichever parser completes the next one; parsers stay at most
// `window` blocks ahead of the merge, which bounds memory.
func (a *Analyzer) readBlocks(ctx context.Context, srcID int32, src blockSource, size, block int64) error {
	// Any block size reads the same: a block that starts inside a line
	// hands it to the block it started in (TestBlockSizesMatchWholeFile
	// reads the corpus with blocks of 1 byte to more than a line).
	block = max(block, 1)
	workers := max(1, min(runtime.GOMAXPROCS(0), maxWorkers))
	nblocks := (size + block - 1) / block
	window := int64(2 * workers)
	type slot struct {
		buf   []byte
		b     batch
		ready bool
		err   error
	}
	slots := make([]slot, window)
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		next    int64 // next block to parse
		merged  int64 // blocks merged so far
		read    int64 // of those, blocks read and merged without error, in order
		merging bool  // a parser is merging; the others just hand in blocks
		failed  error
	)
	parse := func(lp *lineParser, i int64, s *slot) (err error) {
		defer catchFault(&err)
		if s.buf == nil && src.bufSize() > 0 {
			s.buf = make([]byte, src.bufSize())
		}
		data, err := src.lines(i, s.buf)
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			lp.block(data, &s.b)
		}
		return err
	}
	merge := func(b *batch) (err error) {
		defer catchFault(&err)
		a.mu.Lock()
		defer a.mu.Unlock()
		a.merge(srcID, b)
		return nil
	}
	work := func() {
		if src.faults() {
			// A mapped file that another process truncates faults when the
			// parser reads past its new end: a panic catchFault turns into
			// an error, not a crash.
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		}
		lp := newLineParser(a.maxLine)
		for {
			mu.Lock()
			for next < nblocks && next >= merged+window && failed == nil {
				cond.Wait()
			}
			if next >= nblocks || failed != nil {
				mu.Unlock()
				return
			}
			i := next
			next++
			mu.Unlock()

			s := &slots[i%window]
			s.b.reset()
			err := parse(lp, i, s)

			mu.Lock()
			s.ready, s.err = true, err
			if merging {
				mu.Unlock()
				continue
			}
			merging = true
			for merged < nblocks && slots[merged%window].ready {
				t := &slots[merged%window]
				if t.err != nil && failed == nil {
					failed = t.err
				}
				if failed == nil {
					mu.Unlock()
					err := merge(&t.b)
					if err == nil {
						src.merged(merged)
					}
					mu.Lock()
					if err != nil {
						failed = err
					} else {
						read++
					}
				}
				t.ready = false
				t.b.reset()
				merged++
				cond.Broadcast()
			}
			merging = false
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(work)
	}
	wg.Wait()
	a.mu.Lock()
	if failed == nil {
		a.stats.Bytes += size
	} else {
		// What was read in order: blocks that failed after the first one
		// (all of them see the cancelled context) count as passed, not read.
		a.stats.Bytes += min(read*block, size)
	}
	a.flush()
	a.mu.Unlock()
	return failed
}

// errShrank is the error for a page of a mapped file that could not be
// read: the file lost bytes while it was being read (truncated in place,
// as logrotate's copytruncate does), or the disk failed to read it. The
// kernel signals both the same way.
var errShrank = errors.New("a page of the file could not be read: the file shrank while it was being read, or the disk returned an error")

// catchFault turns the panic of a memory fault (debug.SetPanicOnFault)
// into errShrank; any other panic goes on.
func catchFault(err *error) {
	if r := recover(); r != nil {
		if _, ok := r.(interface{ Addr() uintptr }); ok {
			*err = errShrank
			return
		}
		panic(r)
	}
}

// blockSpan is the part of a file of the given size that block i's
// parser reads: one byte before the block, and up to a capped line after.
func blockSpan(i, block, size int64, maxLine int) (from, to int64) {
	start := i * block
	return max(start-1, 0), min(start+block+int64(maxLine)+1, size)
}

// cutBlock returns the lines that start in block i from b, the bytes of
// the block's span (blockSpan) that starts at from.
func cutBlock(b []byte, i, block, from int64) []byte {
	lo := 0
	if i > 0 {
		k := bytes.IndexByte(b, '\n')
		if k < 0 {
			return nil // inside a line that started in an earlier block
		}
		lo = k + 1
	}
	limit := int(i*block + block - from) // first byte of the next block
	if lo >= limit {
		return nil
	}
	if limit > len(b) {
		return b[lo:] // the last block
	}
	if k := bytes.IndexByte(b[limit-1:], '\n'); k >= 0 {
		return b[lo : limit+k] // k >= 0: the line ending at limit-1 or later
	}
	return b[lo:] // an over-long last line; the parser cuts it
}

// preadBlocks reads blocks with pread into the parsers' buffers.
type preadBlocks struct {
	r       io.ReaderAt
	size    int64
	block   int64
	maxLine int
}

func (p *preadBlocks) bufSize() int { return int(p.block) + p.maxLine + 2 }
func (p *preadBlocks) merged(int64) {}
func (p *preadBlocks) faults() bool { return false }

func (p *preadBlocks) lines(i int64, buf []byte) ([]byte, error) {
	return blockLines(p.r, i, p.block, p.size, p.maxLine, buf)
}

// blockLines reads the lines that start in block i of a file of the given
// size into buf and returns them.
func blockLines(r io.ReaderAt, i, block, size int64, maxLine int, buf []byte) ([]byte, error) {
	from, to := blockSpan(i, block, size, maxLine)
	n, err := readAtChunked(r, buf[:to-from], from)
	if err != nil {
		return nil, fmt.Errorf("read block at %d: %w", from, err)
	}
	return cutBlock(buf[:n], i, block, from), nil
}

// mappedBlocks cuts blocks out of a mapped file.
type mappedBlocks struct {
	m       *mapping
	block   int64
	maxLine int
}

func (p *mappedBlocks) bufSize() int { return 0 }
func (p *mappedBlocks) faults() bool { return p.m.whole != nil }

func (p *mappedBlocks) lines(i int64, _ []byte) ([]byte, error) {
	from, to := blockSpan(i, p.block, int64(len(p.m.data)), p.maxLine)
	return cutBlock(p.m.data[from:to], i, p.block, from), nil
}

func (p *mappedBlocks) merged(i int64) {
	// Block i+1 still reads the last byte of block i.
	p.m.release((i+1)*p.block - 1)
}

// A mapping is a file's bytes mapped read-only into memory.
type mapping struct {
	data    []byte // the bytes asked for
	whole   []byte // the mapping, from a page boundary; nil for bytes not mapped
	dropped int    // bytes of whole released so far
}

// releaseStep is how much of a mapping release gives back at once: one
// madvise per few blocks, in huge-page units that the kernel may have
// mapped whole.
const releaseStep = 2 << 20

// release gives the pages of data before offset off back to the kernel
// (MADV_DONTNEED): they leave the resident set, and a late read of them
// maps them again from the page cache, so releasing too much costs time,
// never a wrong byte.
func (m *mapping) release(off int64) {
	if m.whole == nil {
		return
	}
	lead := len(m.whole) - len(m.data) // bytes before data in the first page
	to := (lead + int(off)) &^ (releaseStep - 1)
	if to <= m.dropped {
		return
	}
	_ = syscall.Madvise(m.whole[m.dropped:to], syscall.MADV_DONTNEED)
	m.dropped = to
}

// mapFile maps size bytes of f from offset off.
func mapFile(f *os.File, off, size int64) (*mapping, error) {
	page := int64(os.Getpagesize())
	lead := off % page
	if size <= 0 || size+lead > int64(int(^uint(0)>>1)) {
		return nil, fmt.Errorf("cannot map %d bytes", size)
	}
	whole, err := syscall.Mmap(int(f.Fd()), off-lead, int(size+lead), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return &mapping{data: whole[lead:], whole: whole}, nil
}

// close unmaps the file. Nothing may read data afterwards.
func (m *mapping) close() error {
	if m.whole == nil {
		return nil
	}
	err := syscall.Munmap(m.whole)
	m.data, m.whole = nil, nil
	return err
}

// readChunk bounds each read system call. The Go scheduler hands a
// processor to another thread when a system call runs longer than about
// 20µs; a 512 KiB copy does, and the hand-offs cost more than the copies.
const readChunk = 64 << 10

// readAtChunked fills p from offset off in readChunk pieces. A short file
// (it shrank while being read) is not an error: what was there is returned.
func readAtChunked(r io.ReaderAt, p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.ReadAt(p[n:min(n+readChunk, len(p))], off+int64(n))
		n += m
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
