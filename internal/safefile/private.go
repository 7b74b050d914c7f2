package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// PrivateDir creates a new directory under parent, named prefix and a
// random suffix (as os.MkdirTemp), with mode 0700 whatever the umask, and
// returns it opened. It is always new (mkdir(2) fails on anything already
// there, a planted link included) and owned by the user gpuprobe runs as,
// so only that user can create, replace or read what is put in it. For
// private copies of inputs (the web config's TLS snapshot). RemoveAll it
// when done.
func PrivateDir(parent, prefix string) (*Dir, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	for try := 0; ; try++ {
		var b [8]byte
		rand.Read(b[:])
		p := filepath.Join(parent, prefix+hex.EncodeToString(b[:]))
		err := os.Mkdir(p, 0o700)
		if errors.Is(err, fs.ErrExist) && try < 10 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("private directory under %s: %w", parent, err)
		}
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			os.Remove(p)
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		d := &Dir{fd: fd, path: p}
		// The umask may only clear bits, but say what is meant.
		if err := unix.Fchmod(fd, 0o700); err != nil {
			d.RemoveAll()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		return d, nil
	}
}

// Replace writes data to rel atomically: a new file beside it (created
// with O_EXCL|O_NOFOLLOW) renamed over rel with renameat(2), which replaces
// a link rather than following it. A reader sees the old content or the
// new, never a part. rel's folder must exist.
func (d *Dir) Replace(rel string, data []byte, perm fs.FileMode) error {
	parts, err := d.split(rel)
	if err != nil {
		return err
	}
	var b [8]byte
	rand.Read(b[:])
	tmp := append(append([]string(nil), parts[:len(parts)-1]...), "."+parts[len(parts)-1]+".tmp"+hex.EncodeToString(b[:]))
	if err := d.WriteFile(filepath.Join(tmp...), data, perm); err != nil {
		return err
	}
	pfd, err := d.openParent(parts)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Renameat(pfd, tmp[len(tmp)-1], pfd, parts[len(parts)-1]); err != nil {
		unix.Unlinkat(pfd, tmp[len(tmp)-1], 0)
		return fmt.Errorf("%s: %w", d.show(parts), err)
	}
	return nil
}

// Remove deletes the file rel (not following a link).
func (d *Dir) Remove(rel string) error {
	parts, err := d.split(rel)
	if err != nil {
		return err
	}
	pfd, err := d.openParent(parts)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Unlinkat(pfd, parts[len(parts)-1], 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("%s: %w", d.show(parts), err)
	}
	return nil
}

// RemoveAll closes the directory and removes it with all it holds.
func (d *Dir) RemoveAll() error {
	d.Close()
	return os.RemoveAll(d.path)
}
