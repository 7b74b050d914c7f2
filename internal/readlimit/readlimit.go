// Package readlimit reads inputs bounded in time and size. gpuprobe runs as
// root on every node: a FIFO given as --config, a 2 GB single-line
// slurm.conf, a sysfs attribute captured as a link to /dev/zero or a hung
// /proc file must cost a clear error naming the input and the limit, never
// the run's deadline, the node's memory or a thread per cycle.
package readlimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
)

// Limits for the inputs gpuprobe reads. Each is far above any real file of
// its kind and far below what hurts a node.
const (
	// Config: a gpuprobe YAML config is a few KiB.
	Config = 1 << 20
	// Snapshot: a 8-GPU snapshot is about 100 KiB; 72 GPUs with every
	// NVLink and process listed stays well under 8 MiB.
	Snapshot = 32 << 20
	// SlurmConf: slurm.conf/gres.conf of a 10,000-node cluster are a few MiB.
	SlurmConf = 16 << 20
	// SimulateSpec: one line.
	SimulateSpec = 64 << 10
	// KernelLog: a saved dmesg or journalctl -k; the kernel's ring buffer
	// holds at most a few MiB, a journal of weeks some tens.
	KernelLog = 64 << 20
	// NvidiaSMI: a saved nvidia-smi -q is ~200 KiB for 8 GPUs, its -q -x
	// (every supported clock listed) a few MiB.
	NvidiaSMI = 16 << 20
	// Report: the daemon's /report is a few KiB per check.
	Report = 4 << 20
	// PseudoFile: a sysfs attribute or /proc file (PCI config space is 4 KiB;
	// /proc/<pid>/status is ~1.5 KiB).
	PseudoFile = 1 << 20
)

// ErrTooLarge is wrapped by the error of an input over its limit.
var ErrTooLarge = errors.New("over the size limit")

// ErrStdin is wrapped by the error for "-" where stdin is not accepted.
var ErrStdin = errors.New("'-' (stdin) is not accepted here")

// Input reads what = "--config" (and so on) from path, or from stdin when
// path is "-" and stdin is non-nil, within ctx's deadline and limit bytes.
// Every error names what and path.
func Input(ctx context.Context, what, path string, stdin io.Reader, limit int64) ([]byte, error) {
	if path == "-" {
		if stdin == nil {
			return nil, fmt.Errorf("%s: %w", what, ErrStdin)
		}
		return Reader(ctx, what+" - (stdin)", stdin, limit)
	}
	return File(ctx, what+" "+path, path, limit)
}

// File reads path within ctx's deadline and limit bytes. A FIFO with no
// writer, or a file on a hung file system, gives up when ctx ends; the read
// is left in its goroutine and the same path is not opened again until it
// returns (deadline.Do), so a daemon re-reading it every cycle holds one
// thread, once. name labels errors.
func File(ctx context.Context, name, path string, limit int64) ([]byte, error) {
	data, err := deadline.Do(ctx, "file:"+path, 0, func() ([]byte, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > limit {
			return nil, tooLarge(limit, fi.Size())
		}
		if dl, ok := ctx.Deadline(); ok {
			// Pipes and FIFOs are pollable: the read itself ends on time
			// and the goroutine does not linger. Regular files ignore it.
			_ = f.SetReadDeadline(dl)
		}
		return readAll(f, limit)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, explain(err))
	}
	return data, nil
}

// explain drops deadline's own "file:PATH:" label (the caller names the
// input) and says what usually hangs a read.
func explain(err error) error {
	switch {
	case errors.Is(err, deadline.ErrBusy):
		return fmt.Errorf("%w (it hung before)", deadline.ErrBusy)
	case errors.Is(err, deadline.ErrTimeout) && !strings.Contains(err.Error(), "no end of file"):
		return fmt.Errorf("%w: a FIFO with no writer, or a hung file system?", deadline.ErrTimeout)
	}
	return err
}

// Reader reads r (stdin, an HTTP body) within ctx's deadline and limit bytes.
func Reader(ctx context.Context, name string, r io.Reader, limit int64) ([]byte, error) {
	data, err := deadline.Run(ctx, 0, func() ([]byte, error) { return readAll(r, limit) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, explain(err))
	}
	return data, nil
}

func readAll(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(data)) > limit {
		return nil, tooLarge(limit, -1)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, fmt.Errorf("%w (read %d bytes, then no more data and no end of file)", deadline.ErrTimeout, len(data))
	}
	return data, err
}

func tooLarge(limit, size int64) error {
	if size >= 0 {
		return fmt.Errorf("%w: %d bytes, the limit is %s", ErrTooLarge, size, Human(limit))
	}
	return fmt.Errorf("%w: more than %s", ErrTooLarge, Human(limit))
}

// Human writes a byte count as "16 MiB".
func Human(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ErrNotRegular is wrapped by Regular's error for a FIFO, device, socket or
// directory.
var ErrNotRegular = errors.New("not a regular file")

// Regular reads path, which must be a regular file, within ctx's deadline
// and limit bytes: for a file that a library reads again with a plain
// os.ReadFile (the exporter-toolkit's web config, on every request), so
// that what is read at start-up is known to be a file that ends. The open
// does not block (O_NONBLOCK: a FIFO with no writer opens at once, and is
// refused), the kind is taken from the open file (no race with a rename),
// and /dev/zero is refused before a byte is read. name labels errors.
func Regular(ctx context.Context, name, path string, limit int64) ([]byte, error) {
	data, err := deadline.Do(ctx, "file:"+path, 0, func() ([]byte, error) {
		// Read-only: syscall.Open, not os.OpenFile (which archtest keeps
		// for safefile's writes).
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		f := os.NewFile(uintptr(fd), path)
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))
		}
		if fi.Size() > limit {
			return nil, tooLarge(limit, fi.Size())
		}
		return readAll(f, limit)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, explain(err))
	}
	return data, nil
}

// kind names a file mode that is not a regular file's.
func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}
