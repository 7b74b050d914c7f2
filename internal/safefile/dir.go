package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is a directory tree gpuprobe creates and fills (topo --capture): every
// folder, file and link under it is made relative to a directory file
// descriptor with mkdirat/openat/symlinkat, never through a path, so a link
// planted anywhere in the tree is never followed. Folders are opened with
// O_NOFOLLOW|O_DIRECTORY and files created with O_CREAT|O_EXCL|O_NOFOLLOW:
// an existing symlink, device, FIFO, socket or file at any component is
// refused with an error naming it and what is there, never written through.
//
// The root itself is created fresh, or, when it exists, must be an empty
// directory owned by root (or by the user gpuprobe runs as): a directory
// someone else owns can be refilled with links between our calls, and one
// that is not empty may already hold them. Neither is emptied or trusted.
type Dir struct {
	fd   int
	path string
}

// ErrUnsafeDir is wrapped by the error for a capture root CreateDir refuses.
var ErrUnsafeDir = errors.New("unsafe output directory")

// CreateDir makes path (its last component; the parent must exist) or
// accepts it when it is an existing empty directory owned by root or by the
// effective user, and returns it opened. Close it when done.
func CreateDir(p string) (*Dir, error) {
	if p == "" {
		return nil, fmt.Errorf("empty output directory")
	}
	if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if fi, lerr := os.Lstat(p); lerr == nil && !fi.IsDir() {
			return nil, fmt.Errorf("%s is a %s, not a directory: %w; refusing to write under it", p, describe(p, fi.Mode()), ErrUnsafeDir)
		}
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	d := &Dir{fd: fd, path: p}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		d.Close()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if euid := uint32(os.Geteuid()); st.Uid != 0 && st.Uid != euid {
		d.Close()
		return nil, fmt.Errorf("%s is owned by uid %d, not root: %w; its owner could plant links in it while gpuprobe writes as root (give a new path, or one root owns)", p, st.Uid, ErrUnsafeDir)
	}
	names, err := d.names()
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if len(names) > 0 {
		d.Close()
		return nil, fmt.Errorf("%s is not empty (holds %q): %w; what is there could be links gpuprobe would write through (give a new or empty directory)", p, names[0], ErrUnsafeDir)
	}
	return d, nil
}

// names lists the root's entries through its descriptor.
func (d *Dir) names() ([]string, error) {
	fd, err := unix.Dup(d.fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return names, err
}

// Path is the directory's path as given.
func (d *Dir) Path() string { return d.path }

// Close releases the directory's descriptor.
func (d *Dir) Close() error {
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// split cleans a slash-separated relative path into its components and
// refuses one that leaves the tree.
func (d *Dir) split(rel string) ([]string, error) {
	c := path.Clean(filepath.ToSlash(rel))
	if c == "." || c == "" || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return nil, fmt.Errorf("%s: %q is not a path inside it", d.path, rel)
	}
	return strings.Split(c, "/"), nil
}

// openParent walks (creating) every folder of parts but the last and
// returns a descriptor of the last folder, to be closed by the caller.
func (d *Dir) openParent(parts []string) (int, error) {
	fd, err := unix.Dup(d.fd)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", d.path, err)
	}
	for i, name := range parts[:len(parts)-1] {
		if err := unix.Mkdirat(fd, name, 0o755); err != nil && err != unix.EEXIST {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: %w", d.show(parts[:i+1]), err)
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			what := d.what(fd, name)
			unix.Close(fd)
			if what != "" {
				return -1, fmt.Errorf("%s is a %s, not a directory: %w; refusing to write under it", d.show(parts[:i+1]), what, ErrNotRegular)
			}
			return -1, fmt.Errorf("%s: %w", d.show(parts[:i+1]), err)
		}
		unix.Close(fd)
		fd = next
	}
	return fd, nil
}

// show is the path of parts under the root, for errors.
func (d *Dir) show(parts []string) string {
	return filepath.Join(d.path, filepath.FromSlash(strings.Join(parts, "/")))
}

// what names what is at name in dirfd (not following a link), or "".
func (d *Dir) what(dirfd int, name string) string {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return ""
	}
	var m fs.FileMode
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		m = fs.ModeSymlink
	case unix.S_IFCHR:
		m = fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m = fs.ModeDevice
	case unix.S_IFIFO:
		m = fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m = fs.ModeSocket
	case unix.S_IFDIR:
		m = fs.ModeDir
	case unix.S_IFREG:
		return "regular file"
	}
	what := kind(m)
	if m&fs.ModeSymlink != 0 {
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(dirfd, name, buf); err == nil {
			what += " to " + string(buf[:n])
		}
	}
	return what
}

// MkdirAll makes the folder rel and every folder above it under the root.
func (d *Dir) MkdirAll(rel string) error {
	parts, err := d.split(rel)
	if err != nil {
		return err
	}
	fd, err := d.openParent(append(parts, "."))
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// WriteFile creates rel (with its folders) and writes data to it. rel must
// not exist: whatever is there, a planted link above all, is refused.
func (d *Dir) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	parts, err := d.split(rel)
	if err != nil {
		return err
	}
	pfd, err := d.openParent(parts)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	name := parts[len(parts)-1]
	fd, err := unix.Openat(pfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		if err == unix.EEXIST {
			return fmt.Errorf("%s already exists (a %s): %w; refusing to replace or write through it", d.show(parts), d.what(pfd, name), ErrNotRegular)
		}
		return fmt.Errorf("%s: %w", d.show(parts), err)
	}
	f := os.NewFile(uintptr(fd), d.show(parts))
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("%s: %w", d.show(parts), werr)
	}
	return nil
}

// Symlink creates rel (with its folders) as a symlink to target; an
// existing entry at rel is refused. The target is stored, never followed.
func (d *Dir) Symlink(target, rel string) error {
	parts, err := d.split(rel)
	if err != nil {
		return err
	}
	pfd, err := d.openParent(parts)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	name := parts[len(parts)-1]
	if err := unix.Symlinkat(target, pfd, name); err != nil {
		if err == unix.EEXIST {
			return fmt.Errorf("%s already exists (a %s): %w; refusing to replace it", d.show(parts), d.what(pfd, name), ErrNotRegular)
		}
		return fmt.Errorf("%s: %w", d.show(parts), err)
	}
	return nil
}

// describe names what is at p, with a link's target.
func describe(p string, m fs.FileMode) string {
	what := kind(m)
	if m&fs.ModeSymlink != 0 {
		if to, err := os.Readlink(p); err == nil {
			what += " to " + to
		}
	}
	return what
}
