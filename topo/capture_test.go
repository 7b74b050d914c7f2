package topo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A capture of a tree judges exactly like the tree: the simulated DGX with
// faults, and the real Dell HGX layout with its real config-space offsets.
func TestCaptureRoundTrip(t *testing.T) {
	for name, tree := range map[string]func(*testing.T) (string, string){
		"sim": func(t *testing.T) (string, string) {
			tp := simTopology(t, "dgx-h100:acs-redirect,ib-down=mlx5_2,no-peermem", 18)
			return tp.SysfsRoot, tp.ProcfsRoot
		},
		"dell": func(t *testing.T) (string, string) { return writeTree(t, dellHGX(t).Tree) },
	} {
		t.Run(name, func(t *testing.T) {
			sys, proc := tree(t)
			dst := t.TempDir()
			notes, err := Capture(sys, proc, dst)
			if err != nil || len(notes) != 0 {
				t.Fatalf("capture: %v, notes %q", err, notes)
			}
			o := Options{GPUs: hopperHints(18), NVLinkKnown: true}
			o.SysfsRoot, o.ProcfsRoot = sys, proc
			orig, err := Collect(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			o.SysfsRoot, o.ProcfsRoot = filepath.Join(dst, "sys"), filepath.Join(dst, "proc")
			copied, err := Collect(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if err := Relocate(copied, sys, proc); err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(orig)
			b, _ := json.Marshal(copied)
			if string(a) != string(b) {
				t.Errorf("the capture reads differently:\noriginal %s\ncaptured %s", a[:min(len(a), 600)], b[:min(len(b), 600)])
			}
		})
	}
	if _, err := Capture(t.TempDir(), t.TempDir(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "bus/pci/devices") {
		t.Errorf("capture of an empty tree: %v", err)
	}
}

// The bug: a capture directory pre-created (under /tmp, as the docs
// suggested) with DIR/proc/cmdline -> /etc/... got the kernel command line
// written through the link as root. A directory that is not empty is now
// refused before anything is written, and the target stays as it was.
func TestCaptureRefusesPlantedLinks(t *testing.T) {
	sys, _ := writeTree(t, dellHGX(t).Tree)
	proc := "/proc" // has a cmdline to copy
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o644)
	dst := filepath.Join(base, "capture")
	os.MkdirAll(filepath.Join(dst, "proc"), 0o755)
	os.Symlink(victim, filepath.Join(dst, "proc", "cmdline"))
	_, err := Capture(sys, proc, dst)
	if err == nil || !strings.Contains(err.Error(), dst+" is not empty") {
		t.Errorf("capture into a directory holding a planted link: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Fatalf("the link's target was overwritten: %q", b)
	}
	// A symlink as the capture directory itself.
	link := filepath.Join(base, "link")
	os.Symlink(t.TempDir(), link)
	if _, err := Capture(sys, proc, link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("capture into a symlink: %v", err)
	}
}
