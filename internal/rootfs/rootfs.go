// Package rootfs reads a machine's files through an fs.FS rooted at "/",
// or through the OS when none is given, so collectors take absolute paths
// (built from --path.sysfs and --path.procfs) and never know whether they
// read this node, a captured tree or a simulated one held in memory.
package rootfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxFile bounds one read of a sysfs or procfs file: attributes are a line,
// config space 4 KiB, cpuinfo some hundreds of KiB on big machines; a file
// linked to /dev/zero must not take the daemon's memory.
const MaxFile = 4 << 20

// FS is the tree collectors read. The zero value is this machine's own
// filesystem; with Tree set (a simulated node, a test) absolute paths name
// entries of Tree, which must implement fs.ReadLinkFS where symlinks matter
// (sysfs is made of them).
type FS struct{ Tree fs.FS }

// name turns an absolute path into an fs.FS name ("/sys/x" -> "sys/x").
func (f FS) name(p string) string {
	return strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "/")
}

// Open opens p for reading.
func (f FS) Open(p string) (io.ReadCloser, error) {
	if f.Tree == nil {
		return os.Open(p)
	}
	return f.Tree.Open(f.name(p))
}

// ReadFile reads at most MaxFile bytes; more is an error naming the file.
func (f FS) ReadFile(p string) ([]byte, error) {
	r, err := f.Open(p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, MaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, MaxFile)
	}
	return b, nil
}

// ReadDir lists a directory.
func (f FS) ReadDir(p string) ([]fs.DirEntry, error) {
	if f.Tree == nil {
		return os.ReadDir(p)
	}
	return fs.ReadDir(f.Tree, f.name(p))
}

// Readlink reads a symlink.
func (f FS) Readlink(p string) (string, error) {
	if f.Tree == nil {
		return os.Readlink(p)
	}
	return fs.ReadLink(f.Tree, f.name(p))
}

// Stat follows links.
func (f FS) Stat(p string) (fs.FileInfo, error) {
	if f.Tree == nil {
		return os.Stat(p)
	}
	return fs.Stat(f.Tree, f.name(p))
}
