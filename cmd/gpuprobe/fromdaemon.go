package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
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
	if err := trustDaemon(ctx, url); err != nil {
		c.log.Warn("judging directly: the daemon cannot be trusted", zap.String("url", url), zap.Error(err))
		return nil, nil
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
		NVML: &state.NVML{Available: doc.Driver != "", DriverVersion: doc.Driver, CUDADriverVersion: doc.CUDA, DeviceCount: doc.GPUs, GPUs: make([]state.GPU, doc.GPUs)}}
	for i := range n.NVML.GPUs {
		n.NVML.GPUs[i].Index = i
	}
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
	resp, err := daemonClient.Do(req)
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
	data, err := readlimit.Reader(ctx, "daemon report", resp.Body, readlimit.Report)
	if err != nil {
		return nil, err
	}
	var doc report.Document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("decoding report: %w", err)
	}
	if err := validReport(&doc); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return &doc, nil
}

// daemonClient follows no redirect (a trusted port must not hand the check
// to another) and uses no proxy.
var daemonClient = &http.Client{
	Transport: &http.Transport{Proxy: nil, MaxResponseHeaderBytes: 64 << 10},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("the daemon redirected: not following")
	},
}

// validReport bounds what the report says before anything is built from it:
// "gpus": -1 panicked the health check, 50000000 ran it out of memory.
func validReport(doc *report.Document) error {
	if doc.SchemaVersion != report.SchemaVersion {
		return fmt.Errorf("schema_version %d, want %d", doc.SchemaVersion, report.SchemaVersion)
	}
	if doc.GPUs < 0 || doc.GPUs > state.MaxGPUs {
		return fmt.Errorf("gpus %d: outside 0..%d", doc.GPUs, state.MaxGPUs)
	}
	if doc.CollectedAt.IsZero() {
		return fmt.Errorf("collected_at: missing")
	}
	for i, r := range doc.Checks {
		switch r.Status {
		case check.Pass, check.Skip, check.Warn, check.Error, check.Fail:
		default:
			return fmt.Errorf("checks[%d] (%q): status %q", i, r.ID, r.Status)
		}
	}
	return nil
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
