package exporter

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// snapshotCollector renders one snapshot (for the textfile output).
type snapshotCollector struct {
	s       *Snapshot
	perLink bool
}

func (c snapshotCollector) Describe(chan<- *prometheus.Desc) {}
func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range render(c.s, c.perLink) {
		ch <- m
	}
}

// WriteTextfile writes the snapshot's metrics for node_exporter's textfile
// collector atomically: a temp file in the same directory, then a rename, so
// node_exporter never reads half a file.
func WriteTextfile(path string, s *Snapshot, perLink bool) error {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(snapshotCollector{s, perLink}); err != nil {
		return err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return fmt.Errorf("textfile: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("textfile: %w", err)
	}
	defer os.Remove(tmp.Name())
	enc := expfmt.NewEncoder(tmp, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			tmp.Close()
			return fmt.Errorf("textfile %s: %w", path, err)
		}
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("textfile: %w", err)
	}
	return nil
}
