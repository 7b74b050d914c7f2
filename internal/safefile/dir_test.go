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

// A capture root that holds anything, or that another user owns, is
// refused before a byte is written: what is there could be planted links.
func TestCreateDirRefusesUnsafeRoots(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "etc-file")
	os.WriteFile(target, []byte("keep\n"), 0o644)

	full := filepath.Join(base, "full")
	os.MkdirAll(filepath.Join(full, "proc"), 0o755)
	os.Symlink(target, filepath.Join(full, "proc", "cmdline"))
	if _, err := CreateDir(full); !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), "not empty") || !strings.Contains(err.Error(), full) {
		t.Errorf("non-empty root: %v", err)
	}

	link := filepath.Join(base, "link")
	os.Symlink(t.TempDir(), link)
	if _, err := CreateDir(link); !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), "symlink to") {
		t.Errorf("symlinked root: %v", err)
	}

	fifo := filepath.Join(base, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	if _, err := CreateDir(fifo); !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("FIFO root: %v", err)
	}

	sock := filepath.Join(base, "s.sock")
	if l, err := net.Listen("unix", sock); err == nil {
		defer l.Close()
		if _, err := CreateDir(sock); !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), "socket") {
			t.Errorf("socket root: %v", err)
		}
	}

	if os.Geteuid() == 0 {
		foreign := filepath.Join(base, "foreign")
		os.Mkdir(foreign, 0o755)
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := CreateDir(foreign); !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("foreign-owned root: %v", err)
		}
	}

	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Fatalf("link target changed: %q", b)
	}

	// A new path and an existing empty directory of ours are fine.
	for _, p := range []string{filepath.Join(base, "new"), t.TempDir()} {
		d, err := CreateDir(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		d.Close()
	}
}

// Links, FIFOs and files planted under the tree while it is being written
// (its owner races us) are refused at every component, never followed.
func TestDirRefusesPlantedEntries(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "victim")
	os.WriteFile(target, []byte("keep\n"), 0o644)
	victimDir := filepath.Join(base, "victim-dir")
	os.Mkdir(victimDir, 0o755)

	root := filepath.Join(base, "capture")
	d, err := CreateDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.WriteFile("sys/a/b", []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Symlink("../../devices/x", "sys/bus/x"); err != nil {
		t.Fatal(err)
	}
	// Planted after CreateDir.
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.Symlink(target, filepath.Join(root, "proc", "cmdline"))
	os.Symlink(victimDir, filepath.Join(root, "proc", "sys"))
	syscall.Mkfifo(filepath.Join(root, "proc", "fifo"), 0o600)
	os.WriteFile(filepath.Join(root, "proc", "file"), []byte("x"), 0o644)

	for _, c := range []struct {
		op, rel, want string
		do            func(string) error
	}{
		{"write", "proc/cmdline", "symlink to " + target, func(r string) error { return d.WriteFile(r, []byte("pwned"), 0o644) }},
		{"write", "proc/sys/kernel/osrelease", "symlink to " + victimDir, func(r string) error { return d.WriteFile(r, []byte("pwned"), 0o644) }},
		{"write", "proc/fifo", "FIFO", func(r string) error { return d.WriteFile(r, []byte("pwned"), 0o644) }},
		{"write", "proc/file/x", "regular file, not a directory", func(r string) error { return d.WriteFile(r, []byte("pwned"), 0o644) }},
		{"write", "sys/a/b", "regular file", func(r string) error { return d.WriteFile(r, []byte("again"), 0o644) }},
		{"link", "proc/cmdline", "symlink to " + target, func(r string) error { return d.Symlink("/etc/shadow", r) }},
		{"link", "proc/sys/x", "symlink to " + victimDir, func(r string) error { return d.Symlink("/etc/shadow", r) }},
		{"mkdir", "proc/sys/y", "symlink to " + victimDir, d.MkdirAll},
		{"write", "../escape", "not a path inside", func(r string) error { return d.WriteFile(r, []byte("pwned"), 0o644) }},
	} {
		err := c.do(c.rel)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want an error naming %q", c.op, c.rel, err, c.want)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Fatalf("link target changed: %q", b)
	}
	assertOnly(t, victimDir)
	assertOnly(t, base, "capture", "victim", "victim-dir")
	if b, _ := os.ReadFile(filepath.Join(root, "sys/a/b")); string(b) != "ok" {
		t.Errorf("sys/a/b = %q", b)
	}
	if to, _ := os.Readlink(filepath.Join(root, "sys/bus/x")); to != "../../devices/x" {
		t.Errorf("link reads %q", to)
	}
}
