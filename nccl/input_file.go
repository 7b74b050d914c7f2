package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// readAtFile analyses a regular file by blocks that the parsers read
// themselves (pread), with no reader goroutine in between: on a busy
// machine every hand-off between goroutines costs a wake-up, and a 1 GB
// log has thousands of blocks.
//
// Block i owns the lines that start in [i*block, (i+1)*block). A
// parser reads one byte before its block (to tell whether a line starts
// exactly at its beginning) and up to a capped line after it (to finish
// its last line), so no line is read by two blocks and an over-long line
// is cut by the block it starts in. Blocks are merged strictly in order
// by whichever parser completes the next one; parsers stay at most
// `window` blocks ahead of the merge, which bounds memory.
func (a *Analyzer) readAtFile(ctx context.Context, src int32, r io.ReaderAt, size, block int64) error {
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
	work := func() {
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
			if s.buf == nil {
				s.buf = make([]byte, block+int64(a.maxLine)+2)
			}
			s.b.reset()
			data, err := blockLines(r, i, block, size, a.maxLine, s.buf)
			if err == nil {
				err = ctx.Err()
			}
			if err == nil {
				lp.block(data, &s.b)
			}

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
					a.mu.Lock()
					a.merge(src, &t.b)
					a.mu.Unlock()
					mu.Lock()
					read++
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

// blockLines reads the lines that start in block i of a file of the given
// size into buf and returns them.
func blockLines(r io.ReaderAt, i, block, size int64, maxLine int, buf []byte) ([]byte, error) {
	start := i * block
	from := max(start-1, 0)
	to := min(start+block+int64(maxLine)+1, size)
	n, err := readAtChunked(r, buf[:to-from], from)
	if err != nil {
		return nil, fmt.Errorf("read block at %d: %w", from, err)
	}
	b := buf[:n]
	lo := 0
	if i > 0 {
		k := bytes.IndexByte(b, '\n')
		if k < 0 {
			return nil, nil // inside a line that started in an earlier block
		}
		lo = k + 1
	}
	limit := int(start + block - from) // first byte of the next block
	if lo >= limit {
		return nil, nil
	}
	if limit > len(b) {
		return b[lo:], nil // the last block
	}
	if k := bytes.IndexByte(b[limit-1:], '\n'); k >= 0 {
		return b[lo : limit+k], nil // k >= 0: the line ending at limit-1 or later
	}
	return b[lo:], nil // an over-long last line; the parser cuts it
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
