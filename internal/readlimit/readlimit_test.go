package readlimit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
)

// fifo makes a FIFO nobody writes to: the "hung file". Cleanup opens it for
// writing once so a reader still blocked in open(2) returns.
func fifo(t *testing.T, path string) string {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(path) })
	return path
}

func release(path string) {
	if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// The bug: a FIFO as --config, --from-snapshot, --simulate-file or --nccl-log
// hung the run past --timeout.
func TestFileFIFOEndsAtDeadline(t *testing.T) {
	p := fifo(t, filepath.Join(t.TempDir(), "cfg.yaml"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := File(ctx, "--config "+p, p, Config)
	if !errors.Is(err, deadline.ErrTimeout) {
		t.Fatalf("got %v, want a timeout", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("took %s", el)
	}
	if !strings.Contains(err.Error(), "--config "+p) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("error does not name the input and the likely cause: %v", err)
	}
	// The same path again (a daemon's next cycle) is refused at once.
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	if _, err := File(ctx2, "x", p, Config); !errors.Is(err, deadline.ErrBusy) {
		t.Fatalf("second read: %v, want ErrBusy", err)
	}
}

// A FIFO whose writer sends part and then stalls: the read itself ends at
// the deadline (pipes are pollable), and no goroutine is left behind.
func TestFileFIFOStalledWriter(t *testing.T) {
	p := fifo(t, filepath.Join(t.TempDir(), "snap.json"))
	go func() {
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write([]byte(`{"schema_version":`))
		time.Sleep(2 * time.Second)
		w.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := File(ctx, "--from-snapshot "+p, p, Snapshot)
	if !errors.Is(err, deadline.ErrTimeout) {
		t.Fatalf("got %v, want a timeout", err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, busy := deadline.Default.Busy("file:" + p); busy {
		t.Errorf("the read goroutine is still running after its read deadline")
	}
}

func TestFileFIFOWithWriter(t *testing.T) {
	p := fifo(t, filepath.Join(t.TempDir(), "spec"))
	go func() {
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err == nil {
			w.Write([]byte("dgx-h100\n"))
			w.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	data, err := File(ctx, "--simulate-file "+p, p, SimulateSpec)
	if err != nil || string(data) != "dgx-h100\n" {
		t.Fatalf("got %q, %v", data, err)
	}
}

// The bug: a 2 GB single-line --config peaked at 10.4 GB RSS. A sparse file
// of 2 GB is refused from its size, without reading it.
func TestFileTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	f, _ := os.Create(p)
	f.Truncate(2 << 30)
	f.Close()
	start := time.Now()
	_, err := File(context.Background(), "--config "+p, p, Config)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1 MiB") || !strings.Contains(err.Error(), "--config "+p) {
		t.Fatalf("got %v, want too large naming the input and the 1 MiB limit", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("took %s: the file was read, not refused by size", time.Since(start))
	}
}

// A file that reports size 0 but never ends (/dev/zero, a captured sysfs
// attribute linked to it) is cut at the limit.
func TestFileDevZero(t *testing.T) {
	_, err := File(context.Background(), "attr", "/dev/zero", 4096)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "4 KiB") {
		t.Fatalf("got %v", err)
	}
}

func TestInputStdin(t *testing.T) {
	data, err := Input(context.Background(), "--config", "-", strings.NewReader("strict: true\n"), Config)
	if err != nil || string(data) != "strict: true\n" {
		t.Fatalf("got %q, %v", data, err)
	}
	if _, err := Input(context.Background(), "--textfile", "-", nil, Config); !errors.Is(err, ErrStdin) || !strings.Contains(err.Error(), "--textfile") {
		t.Fatalf("got %v", err)
	}
	_, err = Input(context.Background(), "--config", "-", strings.NewReader(strings.Repeat("x", 2000)), 1000)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "stdin") {
		t.Fatalf("got %v", err)
	}
}

func TestFSHungFileOneGoroutine(t *testing.T) {
	root := t.TempDir()
	fifo(t, filepath.Join(root, "driver", "nvidia", "version"))
	os.WriteFile(filepath.Join(root, "uptime"), []byte("12.5 3.0\n"), 0o644)
	fsys := FS(os.DirFS(root), root, 20*time.Millisecond, PseudoFile)
	if b, err := fsys.(interface{ ReadFile(string) ([]byte, error) }).ReadFile("uptime"); err != nil || string(b) != "12.5 3.0\n" {
		t.Fatalf("uptime: %q %v", b, err)
	}
	read := func() error {
		f, err := fsys.Open("driver/nvidia/version")
		if err == nil {
			f.Close()
		}
		return err
	}
	if err := read(); !errors.Is(err, deadline.ErrTimeout) {
		t.Fatalf("first read: %v, want a timeout", err)
	}
	before := runtime.NumGoroutine()
	for i := 0; i < 1000; i++ {
		if err := read(); !errors.Is(err, deadline.ErrBusy) {
			t.Fatalf("read %d: %v, want ErrBusy", i, err)
		}
	}
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Fatalf("goroutines %d -> %d over 1000 reads of a hung file", before, after)
	}
}

func TestFSDevZeroLink(t *testing.T) {
	root := t.TempDir()
	os.Symlink("/dev/zero", filepath.Join(root, "config"))
	_, err := FS(os.DirFS(root), root, time.Second, 4096).Open("config")
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
}

// Regular refuses what is not a regular file at once, without blocking in
// open(2) on a FIFO or reading /dev/zero, and bounds a regular one by size.
func TestRegularRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	p := fifo(t, filepath.Join(dir, "web.yml"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := Regular(ctx, "--web.config.file "+p, p, Config)
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "--web.config.file "+p) || !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("FIFO: %v, want a refusal naming the file and its kind", err)
	}
	// A refusal, not the 10 s deadline: the open did not wait for a writer.
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("FIFO refused after %s", el)
	}
	if _, err := Regular(ctx, "x", "/dev/zero", Config); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "character device") {
		t.Errorf("/dev/zero: %v, want a refusal", err)
	}
	if _, err := Regular(ctx, "x", dir, Config); !errors.Is(err, ErrNotRegular) {
		t.Errorf("directory: %v, want a refusal", err)
	}
	big := filepath.Join(dir, "big.yml")
	f, _ := os.Create(big)
	f.Truncate(Config + 1)
	f.Close()
	if _, err := Regular(ctx, "x", big, Config); !errors.Is(err, ErrTooLarge) {
		t.Errorf("file over the limit: %v", err)
	}
	ok := filepath.Join(dir, "ok.yml")
	os.WriteFile(ok, []byte("basic_auth_users: {}\n"), 0o600)
	if data, err := Regular(ctx, "x", ok, Config); err != nil || string(data) != "basic_auth_users: {}\n" {
		t.Errorf("regular file: %q, %v", data, err)
	}
}
