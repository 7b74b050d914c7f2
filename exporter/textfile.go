package exporter

import (
	"bytes"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuprobe/gpuprobe/internal/safefile"
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
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("textfile %s: %w", path, err)
		}
	}
	// safefile replaces only a regular file: never a device node, a FIFO or
	// a symlink (gpuprobe runs as root).
	if err := safefile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("textfile: %w", err)
	}
	return nil
}
