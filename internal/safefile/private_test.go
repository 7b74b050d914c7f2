package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A private directory is new, 0700 whatever the umask, and Replace swaps a
// file's content without following a link planted at its name.
func TestPrivateDir(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	base := t.TempDir()
	d, err := PrivateDir(base, "snap-")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(d.Path())
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || !strings.HasPrefix(filepath.Base(d.Path()), "snap-") {
		t.Fatalf("private dir %s: %v %v", d.Path(), fi.Mode(), err)
	}
	if err := d.WriteFile("a", []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Replace("a", []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.Path(), "a")); string(b) != "two" {
		t.Errorf("after Replace: %q", b)
	}
	victim := filepath.Join(base, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	os.Symlink(victim, filepath.Join(d.Path(), "l"))
	if err := d.Replace("l", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("Replace wrote through a link: %q", b)
	}
	if err := d.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(d.Path()); len(ents) != 1 {
		t.Errorf("left %v", ents)
	}
	if err := d.RemoveAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(d.Path()); !os.IsNotExist(err) {
		t.Errorf("after RemoveAll: %v", err)
	}
}
