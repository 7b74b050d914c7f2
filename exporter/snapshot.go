// Package exporter turns the node state and check results into Prometheus
// metrics: for the daemon's /metrics (served from memory, never from the
// driver) and for node_exporter's textfile collector.
package exporter

import (
	"github.com/gpuprobe/gpuprobe/check"
	"time"

	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/state"
)

// Snapshot is one collection cycle's outcome: what a scrape renders.
type Snapshot struct {
	Node *state.Node
	Doc  *report.Document
	// At is when the collection finished; Duration how long it took.
	At       time.Time
	Duration time.Duration
	// Success is false when the collection overran its deadline or failed;
	// Node and Doc are then the last good ones and Stale is set.
	Success bool
	Stale   bool
	// Failing names the source that overran or failed.
	Failing string
	// Config is what the checks judged against; the NVLink expectation
	// series comes from it (nil: the defaults, the platform detected).
	Config *check.Config
}
