package collect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
)

// The bug: a 2 GB --slurm-conf peaked at 6.4 GB RSS (read twice); a FIFO
// hung the Slurm collector.
func TestBoundedReadFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "slurm.conf")
	f, _ := os.Create(big)
	f.Truncate(2 << 30)
	f.Close()
	if _, err := boundedReadFile(big); !errors.Is(err, readlimit.ErrTooLarge) || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "16 MiB") {
		t.Fatalf("2 GB slurm.conf: %v", err)
	}
	fifo := filepath.Join(dir, "gres.conf")
	syscall.Mkfifo(fifo, 0o600)
	defer func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	}()
	old := fileReadTimeout
	fileReadTimeout = 100 * time.Millisecond
	defer func() { fileReadTimeout = old }()
	start := time.Now()
	if _, err := boundedReadFile(fifo); !errors.Is(err, deadline.ErrTimeout) {
		t.Fatalf("FIFO: %v", err)
	}
	if _, err := boundedReadFile(fifo); !errors.Is(err, deadline.ErrBusy) {
		t.Fatalf("FIFO again: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %s", el)
	}
}
