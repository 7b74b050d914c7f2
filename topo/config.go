package topo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// readConfig reads a device's config space. The kernel returns as many
// bytes as the reader may see (64 without CAP_SYS_ADMIN), so the length
// read is itself the answer to "how much do we know".
func (fsr fsReader) readConfig(path string) ([]byte, bool, error) {
	f, err := fsr.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("opening %s: %w (needs root or CAP_SYS_ADMIN?)", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, true, nil
}
