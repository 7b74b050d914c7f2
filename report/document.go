// Package report renders check results: the text a person reads in five
// seconds and the versioned JSON document machines read.
package report

import (
	"encoding/json"
	"io"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

// SchemaVersion of the result document; bumped when a field changes meaning
// or disappears (adding fields does not bump it).
const SchemaVersion = 1

// Document is the result of one run, as `check --format json` prints it and
// the daemon serves it on /report.
type Document struct {
	SchemaVersion int    `json:"schema_version"`
	Host          string `json:"host"`
	Simulated     bool   `json:"simulated"`
	SimulateSpec  string `json:"simulate_spec,omitempty"`
	// Capture names the saved tool output the state was read from
	// ("nvidia-smi -q of FILE"); empty for a collection.
	Capture string `json:"capture,omitempty"`
	// Source names where a report read from elsewhere came from ("daemon at
	// 127.0.0.1:10495, snapshot taken ..."): a verdict a health check read
	// from the daemon is the daemon's, as fresh as its snapshot. Empty for
	// a run's own collection.
	Source string `json:"source,omitempty"`
	// Scope: only these GPUs were judged (check --gpus).
	Scope           string         `json:"scope,omitempty"`
	Status          check.Status   `json:"status"`
	Strict          bool           `json:"strict,omitempty"`
	ElapsedSeconds  float64        `json:"elapsed_seconds"`
	CollectedAt     time.Time      `json:"collected_at"`
	GpuprobeVersion string         `json:"gpuprobe_version,omitempty"`
	Driver          string         `json:"driver_version,omitempty"`
	CUDA            string         `json:"cuda_driver_version,omitempty"`
	GPUs            int            `json:"gpus"`
	Counts          map[string]int `json:"counts"`
	Checks          []check.Result `json:"checks"`
	// JobPerf is the running job `gpuprobe job` sampled: the figures its
	// perf.* verdicts stand on.
	JobPerf *state.JobPerf `json:"job_perf,omitempty"`
	// Verify is what `gpuprobe verify` measured: the figures its verify.*
	// verdicts stand on.
	Verify *state.Verify `json:"verify,omitempty"`
	// Drain is what check --slurm-drain did to the node, and why (the
	// circuit breaker's verdict when it suppressed a drain).
	Drain *check.DrainDecision `json:"drain,omitempty"`
}

// New assembles the document for a run.
func New(n *state.Node, results []check.Result, strict bool, elapsed time.Duration) *Document {
	d := &Document{
		SchemaVersion:   SchemaVersion,
		Host:            n.Host,
		Simulated:       n.Simulated != "",
		SimulateSpec:    n.Simulated,
		Scope:           n.Scope,
		Status:          check.Overall(results, strict),
		Strict:          strict,
		ElapsedSeconds:  elapsed.Seconds(),
		CollectedAt:     n.CollectedAt,
		GpuprobeVersion: n.GpuprobeVersion,
		Counts:          map[string]int{},
		Checks:          results,
	}
	if c := n.Capture; c != nil {
		d.Capture = c.Format + " of " + c.File
		if c.Timestamp != "" {
			d.Capture += " (" + c.Timestamp + ")"
		}
		if c.Partial != "" {
			d.Capture += "; " + c.Partial
		}
	}
	if n.NVML != nil {
		d.Driver, d.CUDA, d.GPUs = n.NVML.DriverVersion, n.NVML.CUDADriverVersion, len(n.NVML.GPUs)
	}
	for _, r := range results {
		d.Counts[string(r.Status)]++
	}
	if n.JobPerf != nil {
		d.JobPerf = n.JobPerf
		d.GPUs = len(n.JobPerf.GPUs)
	}
	return d
}

// WriteJSON prints the document, indented for people who pipe it to less.
func (d *Document) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}
