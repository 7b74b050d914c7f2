// Package safefile writes output files atomically without damaging the
// node. gpuprobe runs as root: a temp file renamed over /dev/null replaces
// the device node with a regular file and breaks every process that writes
// to it, and a rename over a symlink silently turns the link into a file.
//
// So WriteFile replaces only a regular file (or creates a missing one), and
// refuses, with an error naming the path and what is there, a device node, a
// FIFO, a socket, a directory or a symlink. Refusing rather than writing in
// place: writing into a FIFO with no reader blocks forever, writing into a
// device has effects we cannot judge (a tty, a disk), and following a symlink
// lets whoever can write the link's directory point a root write anywhere.
// Output to a terminal or pipe is what "-" (stdout) is for.
package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegular is wrapped by the error for a target that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// WriteFile writes data to path atomically: a new temp file in path's own
// directory (created with O_EXCL, so it never follows a planted symlink),
// synced, then renamed over path. perm is the final file's mode.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	if err := CheckTarget(path); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// Check again just before the rename: what was a file a moment ago may
	// have been swapped. rename(2) itself never follows a symlink at the
	// target, so a race can at worst replace a link, never what it points to.
	if err := CheckTarget(path); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// CheckTarget returns nil when path is missing or a regular file, and an
// error naming the path and what is there otherwise. Commands call it before
// collecting, so a bad --textfile or -o fails at once, not after the run.
func CheckTarget(path string) error {
	if path == "" {
		return fmt.Errorf("empty output path")
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(path)
		if di, err := os.Stat(dir); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		} else if !di.IsDir() {
			return fmt.Errorf("%s: %s is not a directory", path, dir)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if fi.Mode().IsRegular() {
		return nil
	}
	what := kind(fi.Mode())
	if what == "symlink" {
		if to, err := os.Readlink(path); err == nil {
			what += " to " + to
		}
		return fmt.Errorf("%s is a %s: %w; refusing to replace it (give the real file's path)", path, what, ErrNotRegular)
	}
	return fmt.Errorf("%s is a %s: %w; refusing to replace or write into it (use - for stdout)", path, what, ErrNotRegular)
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m.IsDir():
		return "directory"
	}
	return "special file (" + m.Type().String() + ")"
}
