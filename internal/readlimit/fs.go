package readlimit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
)

// FS wraps a tree of pseudo-files (os.DirFS("/sys"), os.DirFS("/proc"), a
// captured tree) for collectors: every call runs under deadline.Do named
// root/name with timeout d, so a sysfs attribute of a wedged device or a
// hung /proc file costs one goroutine once, and every read is cut at limit
// bytes, so an attribute linked to /dev/zero is an error, not an OOM. Open
// of a regular file reads it whole (pseudo-files are small); directories
// list through the same guard. The result implements fs.ReadFileFS,
// fs.ReadDirFS, fs.StatFS and fs.ReadLinkFS.
func FS(fsys fs.FS, root string, d time.Duration, limit int64) fs.FS {
	return &boundedFS{fsys: fsys, root: root, d: d, limit: limit, reg: &deadline.Default}
}

type boundedFS struct {
	fsys  fs.FS
	root  string
	d     time.Duration
	limit int64
	reg   *deadline.Registry
}

func (b *boundedFS) name(name string) string { return path.Join(b.root, name) }

func do[T any](b *boundedFS, op, name string, f func() (T, error)) (T, error) {
	v, err := deadline.DoIn(b.reg, context.Background(), b.name(name), b.d, f)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return v, err
		}
		return v, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return v, nil
}

func (b *boundedFS) ReadFile(name string) ([]byte, error) {
	return do(b, "read", name, func() ([]byte, error) {
		f, err := b.fsys.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readAll(f, b.limit)
	})
}

func (b *boundedFS) Stat(name string) (fs.FileInfo, error) {
	return do(b, "stat", name, func() (fs.FileInfo, error) { return fs.Stat(b.fsys, name) })
}

func (b *boundedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	return do(b, "readdir", name, func() ([]fs.DirEntry, error) { return fs.ReadDir(b.fsys, name) })
}

func (b *boundedFS) ReadLink(name string) (string, error) {
	return do(b, "readlink", name, func() (string, error) { return fs.ReadLink(b.fsys, name) })
}

func (b *boundedFS) Lstat(name string) (fs.FileInfo, error) {
	return do(b, "lstat", name, func() (fs.FileInfo, error) { return fs.Lstat(b.fsys, name) })
}

// Open returns a directory that lists through the guard, or a regular
// file read whole under it.
func (b *boundedFS) Open(name string) (fs.File, error) {
	fi, err := b.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return &dirFile{b: b, name: name, fi: fi}, nil
	}
	data, err := b.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &memFile{Reader: bytes.NewReader(data), fi: fi}, nil
}

type memFile struct {
	*bytes.Reader
	fi fs.FileInfo
}

func (m *memFile) Stat() (fs.FileInfo, error) { return m.fi, nil }
func (m *memFile) Close() error               { return nil }

type dirFile struct {
	b       *boundedFS
	name    string
	fi      fs.FileInfo
	entries []fs.DirEntry
	read    bool
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.fi, nil }
func (d *dirFile) Close() error               { return nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		es, err := d.b.ReadDir(d.name)
		if err != nil {
			return nil, err
		}
		d.entries, d.read = es, true
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}

var (
	_ fs.ReadFileFS = (*boundedFS)(nil)
	_ fs.ReadDirFS  = (*boundedFS)(nil)
	_ fs.StatFS     = (*boundedFS)(nil)
	_ fs.ReadLinkFS = (*boundedFS)(nil)
)
