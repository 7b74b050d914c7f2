package fstree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseFlatAndWrite(t *testing.T) {
	in := `# source: test
sys/bus/pci/devices/0000:00:02.1 -> ../../../devices/pci0000:00/0000:00:02.1
sys/devices/pci0000:00/0000:00:02.1/class: 0x060400
sys/devices/pci0000:00/0000:00:02.1/uevent: DRIVER=pcieport | PCI_CLASS=60400
sys/devices/pci0000:00/0000:00:02.1/vpd:
sys/devices/pci0000:00/0000:00:02.1/power/ (dir)
`
	tr, err := ParseFlat(strings.NewReader(in), "in", "")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := tr.Write(root); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "sys/bus/pci/devices/0000:00:02.1/class"))
	if err != nil || string(b) != "0x060400\n" {
		t.Fatalf("class through the link = %q, %v", b, err)
	}
	b, _ = os.ReadFile(filepath.Join(root, "sys/devices/pci0000:00/0000:00:02.1/uevent"))
	if string(b) != "DRIVER=pcieport\nPCI_CLASS=60400\n" {
		t.Fatalf("multi-line value = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(root, "sys/devices/pci0000:00/0000:00:02.1/power")); err != nil || !fi.IsDir() {
		t.Fatalf("dir entry: %v", err)
	}
	if b, ok := tr.Read("sys/devices/pci0000:00/0000:00:02.1/vpd"); !ok || string(b) != "\n" {
		t.Fatalf("empty file = %q %v", b, ok)
	}
}

func TestParseFlatErrors(t *testing.T) {
	for _, in := range []string{"no separator here", "../../etc/passwd: x", "a -> ", "/ (dir)"} {
		if _, err := ParseFlat(strings.NewReader(in), "bad.txt", ""); err == nil || !strings.Contains(err.Error(), "bad.txt:1") {
			t.Errorf("%q: err = %v, want an error naming bad.txt:1", in, err)
		}
	}
}

func TestWriteRejectsEscape(t *testing.T) {
	tr := New()
	tr.Attr("../outside", "x")
	if err := tr.Write(t.TempDir()); err == nil {
		t.Fatal("a path leaving the root was written")
	}
}

func FuzzParseFlat(f *testing.F) {
	f.Add("sys/a: 1\nsys/b -> a\nsys/c/ (dir)\n# c\n")
	f.Add("x: a | b\n")
	f.Add(":\n -> \n/ (dir)\n")
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := ParseFlat(strings.NewReader(in), "fuzz", "root")
		if err != nil {
			return
		}
		for _, p := range tr.Paths() {
			if p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
				t.Fatalf("path %q escapes the root", p)
			}
		}
	})
}
