package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/state"
)

// daemonTimeout bounds the request to the daemon: it answers from memory, so
// anything slower means it is wedged and a direct run is the better bet.
const daemonTimeout = 2 * time.Second

// fromDaemon fetches the daemon's latest report. It returns a nil node when
// the report is unusable (unreachable, stale, or missing a selected check),
// and the caller then collects directly.
func (c *cli) fromDaemon(ctx context.Context, url string, maxAge time.Duration, checks []check.Check) (*state.Node, []check.Result) {
	if url == "local" {
		url = "http://127.0.0.1:" + DefaultPort
	}
	url = strings.TrimSuffix(url, "/") + "/report"
	doc, err := fetchReport(ctx, url)
	if err == nil {
		if age := time.Since(doc.CollectedAt); age > maxAge {
			err = fmt.Errorf("report is %s old (--max-age %s)", age.Round(time.Second), maxAge)
		}
	}
	var results []check.Result
	if err == nil {
		results, err = pick(doc, checks)
	}
	if err != nil {
		c.log.Info("judging directly: daemon report not usable", zap.String("url", url), zap.Error(err))
		return nil, nil
	}
	c.log.Info("judged from the daemon's report", zap.String("url", url), zap.Time("collected_at", doc.CollectedAt))
	n := &state.Node{SchemaVersion: state.SchemaVersion, Host: doc.Host, CollectedAt: doc.CollectedAt, GpuprobeVersion: doc.GpuprobeVersion,
		NVML: &state.NVML{Available: doc.Driver != "", DriverVersion: doc.Driver, CUDADriverVersion: doc.CUDA, GPUs: make([]state.GPU, doc.GPUs)}}
	if doc.Simulated {
		n.Simulated = doc.SimulateSpec
	}
	return n, results
}

func fetchReport(ctx context.Context, url string) (*report.Document, error) {
	ctx, cancel := context.WithTimeout(ctx, daemonTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	if resp.Header.Get("X-Gpuprobe-Stale") == "true" {
		return nil, fmt.Errorf("the daemon's last collection failed (stale data)")
	}
	var doc report.Document
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("decoding report: %w", err)
	}
	if doc.SchemaVersion != report.SchemaVersion {
		return nil, fmt.Errorf("report schema_version %d, want %d", doc.SchemaVersion, report.SchemaVersion)
	}
	return &doc, nil
}

// pick keeps the selected checks' results, in selection order; a selected
// check the daemon did not run (job checks, say) makes the report unusable.
func pick(doc *report.Document, checks []check.Check) ([]check.Result, error) {
	byID := map[string]check.Result{}
	for _, r := range doc.Checks {
		byID[r.ID] = r
	}
	out := make([]check.Result, 0, len(checks))
	for _, ch := range checks {
		r, ok := byID[ch.ID]
		if !ok {
			return nil, fmt.Errorf("the daemon did not run %s", ch.ID)
		}
		out = append(out, r)
	}
	return out, nil
}
