package safefile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWriteFileRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.prom")
	for _, content := range []string{"first\n", "second\n"} {
		if err := WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	assertOnly(t, dir, "out.prom")
}

// The bug: as root, 'gpuprobe snapshot -o /dev/null' renamed a 0600 regular
// file over the device node. A char device made with mknod stands in for
// /dev/null (same major/minor).
func TestWriteFileRefusesDeviceNode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "null")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, int(mkdev(1, 3))); err != nil {
		t.Skipf("mknod needs root (CAP_MKNOD): %v", err) // the FIFO and symlink cases below still run
	}
	err := WriteFile(p, []byte("x"), 0o600)
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "character device") {
		t.Fatalf("WriteFile over a device: %v, want a refusal naming a character device", err)
	}
	fi, _ := os.Lstat(p)
	if fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("device node replaced: mode now %v", fi.Mode())
	}
	assertOnly(t, dir, "null")
}

func TestWriteFileRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(p, []byte("x"), 0o600)
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("WriteFile over a FIFO: %v", err)
	}
	if fi, _ := os.Lstat(p); fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("FIFO replaced: %v", fi.Mode())
	}
	assertOnly(t, dir, "fifo")
}

func TestWriteFileRefusesSocket(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := WriteFile(p, []byte("x"), 0o600); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "socket") {
		t.Fatalf("WriteFile over a socket: %v", err)
	}
}

// A symlinked textfile path used to lose its link (and, pointing anywhere,
// would let a root write follow it).
func TestWriteFileRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.prom")
	os.WriteFile(target, []byte("keep\n"), 0o644)
	link := filepath.Join(dir, "link.prom")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(link, []byte("new\n"), 0o644)
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "symlink to "+target) {
		t.Fatalf("WriteFile over a symlink: %v", err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("symlink replaced by a file")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Fatalf("link target changed: %q", b)
	}
	assertOnly(t, dir, "link.prom", "real.prom")
}

func TestWriteFileRefusesDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(dir, []byte("x"), 0o644); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("WriteFile over a directory: %v", err)
	}
}

func TestWriteFileMissingDir(t *testing.T) {
	err := WriteFile(filepath.Join(t.TempDir(), "no", "such", "f"), []byte("x"), 0o644)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("got %v", err)
	}
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("directory holds %v, want %v (a temp file left behind?)", got, names)
	}
}

func mkdev(major, minor uint32) uint64 {
	return uint64(major)<<8 | uint64(minor)
}
