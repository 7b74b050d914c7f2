// Package fstree holds a small in-memory file tree (files, symlinks,
// directories) and writes it to disk. gpuprobe builds fake sysfs and procfs
// trees with it: the --simulate node's, and the fixtures of the topo tests.
// Symlinks are first-class because sysfs is made of them: the PCI hierarchy
// is only visible by resolving /sys/bus/pci/devices/* links.
package fstree

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"testing/fstest"

	"github.com/gpuprobe/gpuprobe/internal/safefile"
)

type kind int

const (
	fileKind kind = iota
	linkKind
	dirKind
)

type node struct {
	kind   kind
	data   []byte
	target string
}

// Tree maps slash-separated relative paths ("sys/bus/pci/devices/...") to
// entries. Parent directories are implied.
type Tree struct {
	nodes map[string]node
}

// New returns an empty tree.
func New() *Tree { return &Tree{nodes: map[string]node{}} }

// clean rejects paths that would leave the root once written.
func clean(p string) (string, error) {
	c := path.Clean(strings.TrimPrefix(p, "/"))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("fstree: path %q leaves the tree", p)
	}
	return c, nil
}

func (t *Tree) put(p string, n node) {
	c, err := clean(p)
	if err != nil {
		// Builders pass literal paths; a bad one is a programming error that
		// Write reports rather than a panic here.
		c = "\x00bad/" + p
	}
	t.nodes[c] = n
}

// Attr writes a sysfs-style attribute: the value and a newline, as the
// kernel prints it.
func (t *Tree) Attr(p, value string) { t.put(p, node{kind: fileKind, data: []byte(value + "\n")}) }

// Bytes writes a file with exactly these bytes (binary config space).
func (t *Tree) Bytes(p string, b []byte) {
	t.put(p, node{kind: fileKind, data: append([]byte(nil), b...)})
}

// Link makes p a symlink to target (relative targets are kept as given).
func (t *Tree) Link(p, target string) { t.put(p, node{kind: linkKind, target: target}) }

// Dir makes an (otherwise empty) directory.
func (t *Tree) Dir(p string) { t.put(p, node{kind: dirKind}) }

// Remove drops p and everything below it.
func (t *Tree) Remove(p string) {
	c, err := clean(p)
	if err != nil {
		return
	}
	for k := range t.nodes {
		if k == c || strings.HasPrefix(k, c+"/") {
			delete(t.nodes, k)
		}
	}
}

// Read returns a file's bytes.
func (t *Tree) Read(p string) ([]byte, bool) {
	c, err := clean(p)
	if err != nil {
		return nil, false
	}
	n, ok := t.nodes[c]
	if !ok || n.kind != fileKind {
		return nil, false
	}
	return n.data, true
}

// Has reports whether p is an entry of the tree.
func (t *Tree) Has(p string) bool {
	c, err := clean(p)
	if err != nil {
		return false
	}
	_, ok := t.nodes[c]
	return ok
}

// Paths lists the entries, sorted.
func (t *Tree) Paths() []string {
	out := make([]string, 0, len(t.nodes))
	for k := range t.nodes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Merge copies every entry of o into t, o winning on conflicts.
func (t *Tree) Merge(o *Tree) {
	for k, v := range o.nodes {
		t.nodes[k] = v
	}
}

// FS is the tree as a read-only in-memory filesystem, symlinks included
// (fs.ReadLinkFS; paths through a link resolve). Collectors read it exactly
// as they read a mounted sysfs: nothing is written anywhere.
func (t *Tree) FS() (fs.FS, error) {
	m := fstest.MapFS{}
	for p, n := range t.nodes {
		if strings.HasPrefix(p, "\x00bad/") {
			return nil, fmt.Errorf("fstree: path %q leaves the tree", strings.TrimPrefix(p, "\x00bad/"))
		}
		switch n.kind {
		case fileKind:
			m[p] = &fstest.MapFile{Data: n.data, Mode: 0o444}
		case linkKind:
			m[p] = &fstest.MapFile{Data: []byte(n.target), Mode: fs.ModeSymlink | 0o777}
		case dirKind:
			m[p] = &fstest.MapFile{Mode: fs.ModeDir | 0o555}
		}
	}
	return m, nil
}

// Write materialises the tree under root, which must be new or an empty
// directory owned by root (or the running user): `topo --simulate --capture`
// writes it as root, often under /tmp. Every folder, file and link is made
// through internal/safefile.Dir (openat/mkdirat/symlinkat, no-follow, never
// replacing what is there), so a link planted in it is refused, not
// followed. Directories are created first, then files, then links, so a
// link may point at anything the tree holds.
func (t *Tree) Write(root string) error {
	paths := t.Paths()
	for _, p := range paths {
		if strings.HasPrefix(p, "\x00bad/") {
			return fmt.Errorf("fstree: path %q leaves the tree", strings.TrimPrefix(p, "\x00bad/"))
		}
	}
	d, err := safefile.CreateDir(root)
	if err != nil {
		return fmt.Errorf("fstree: %w", err)
	}
	defer d.Close()
	made := map[string]bool{}
	for _, p := range paths {
		dir := path.Dir(p)
		if t.nodes[p].kind == dirKind {
			dir = p
		}
		if made[dir] || dir == "." {
			continue
		}
		made[dir] = true
		if err := d.MkdirAll(dir); err != nil {
			return fmt.Errorf("fstree: %w", err)
		}
	}
	for _, p := range paths {
		if n := t.nodes[p]; n.kind == fileKind {
			if err := d.WriteFile(p, n.data, 0o644); err != nil {
				return fmt.Errorf("fstree: %w", err)
			}
		}
	}
	for _, p := range paths {
		if n := t.nodes[p]; n.kind == linkKind {
			if err := d.Symlink(n.target, p); err != nil {
				return fmt.Errorf("fstree: %w", err)
			}
		}
	}
	return nil
}
