// Package daemonapi is the gpuprobe daemon's HTTP API as its clients and
// its server share it: the one client 'check --from-daemon' and 'job
// --from-daemon' read the daemon through (trust test, deadline, no
// redirects, bounded and validated answers), and the job-record handler
// 'serve' mounts.
package daemonapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/daemontrust"
	"github.com/gpuprobe/gpuprobe/internal/jsonbound"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/state"
)

// DefaultPort: the Prometheus project's exporter range 9100-9999 is fully
// allocated, and 9400 (dcgm-exporter) and 9835 (nvidia_gpu_exporter) are the
// GPU exporters people already run; 10495 is outside both.
const DefaultPort = "10495"

// Local is what a user types for the daemon on this node.
const Local = "local"

// Timeout bounds a request to the daemon: it answers from memory, so
// anything slower means it is wedged and a direct run is the better bet.
const Timeout = 2 * time.Second

// ErrNotRunning: no daemon answers at the URL (nothing listens on its port,
// or the connection was refused). Callers say so in those words: "cannot be
// trusted" sent people hunting an impostor when the daemon was simply
// stopped.
var ErrNotRunning = daemontrust.ErrNotListening

// ErrUntrusted: something listens, but it cannot be shown to be the daemon.
var ErrUntrusted = daemontrust.ErrUntrusted

// Client reads one daemon.
type Client struct {
	// Base is the daemon's URL, "local" resolved.
	Base string
	// Trust decides whether Base may be believed (the zero value reads
	// this machine's /proc/net/tcp).
	Trust daemontrust.Verifier
}

// New returns a client of the daemon at base ("local": this node's).
func New(base string) *Client {
	if base == Local {
		base = "http://127.0.0.1:" + DefaultPort
	}
	return &Client{Base: strings.TrimSuffix(base, "/")}
}

// httpClient follows no redirect (a trusted port must not hand the check to
// another) and uses no proxy.
var httpClient = &http.Client{
	Transport: &http.Transport{Proxy: nil, MaxResponseHeaderBytes: 64 << 10},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("the daemon redirected: not following")
	},
}

// get verifies the daemon, then GETs path and returns the body, bounded in
// size, with the response's headers.
func (c *Client) get(ctx context.Context, path, what string) ([]byte, http.Header, error) {
	// The trust test runs under the caller's deadline: it may name a user
	// through NSS, which has a deadline of its own.
	if err := c.Trust.Verify(ctx, c.Base); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	resp, err := httpClient.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		// The port was free between the trust test and the request (the
		// daemon stopped, or a remote one is down).
		return nil, nil, fmt.Errorf("%w: %s refused the connection", ErrNotRunning, c.Base)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s: HTTP %s", what, resp.Status)
	}
	data, err := readlimit.Reader(ctx, "daemon "+what, resp.Body, readlimit.Report)
	if err != nil {
		return nil, nil, err
	}
	return data, resp.Header, nil
}

// Report fetches the daemon's latest report, refusing a stale one (the
// daemon's last collection failed) and one whose figures are out of bounds.
func (c *Client) Report(ctx context.Context) (*report.Document, error) {
	data, h, err := c.get(ctx, "/report", "report")
	if err != nil {
		return nil, err
	}
	if h.Get("X-Gpuprobe-Stale") == "true" {
		return nil, fmt.Errorf("the daemon's last collection failed (stale data)")
	}
	return decodeReport(data)
}

// decodeReport reads the body of /report: a bounded, valid document or an
// error saying which.
func decodeReport(data []byte) (*report.Document, error) {
	var doc report.Document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("decoding report: %w", err)
	}
	if err := validReport(&doc); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return &doc, nil
}

// Source says where a report came from, for the report itself: a verdict
// read from a daemon is only as fresh as the daemon's snapshot.
func (c *Client) Source(doc *report.Document) string {
	where := c.Base
	if u, err := url.Parse(c.Base); err == nil && u.Host != "" {
		where = u.Host
	}
	return fmt.Sprintf("daemon at %s, snapshot taken %s", where, doc.CollectedAt.UTC().Format(time.RFC3339))
}

// Job fetches the daemon's record of a job: what its GPUs did while its
// processes ran.
func (c *Client) Job(ctx context.Context, id string) (*state.JobPerf, error) {
	data, _, err := c.get(ctx, JobPath+url.PathEscape(id), "job record")
	if err != nil {
		return nil, err
	}
	return decodeJob(data, id)
}

// decodeJob reads the body of a job record asked for as id: bounded, and
// that job's, or an error saying which.
func decodeJob(data []byte, id string) (*state.JobPerf, error) {
	if err := jsonbound.Check(data, jsonbound.MaxArray, jsonbound.MaxDepth); err != nil {
		return nil, fmt.Errorf("job record: %w", err)
	}
	var j state.JobPerf
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("decoding the job record: %w", err)
	}
	if j.JobID != id || len(j.GPUs) > state.MaxGPUs {
		return nil, fmt.Errorf("job record: job %q with %d GPUs, asked for %s", j.JobID, len(j.GPUs), id)
	}
	return &j, nil
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

// futureSkew is how far in the future a report's collected_at may be (the
// daemon runs on the same node, on the same clock; a step of NTP aside).
const futureSkew = 5 * time.Second

// Verdicts turns a daemon's report into what a direct run would have: the
// node's header (host, driver, GPU count) and the selected checks' results
// in selection order. A report older than maxAge, or one missing a selected
// check (the daemon runs no job checks), is not usable.
func Verdicts(doc *report.Document, checks []check.Check, maxAge time.Duration, now time.Time) (*state.Node, []check.Result, error) {
	if age := now.Sub(doc.CollectedAt); age > maxAge {
		return nil, nil, fmt.Errorf("report is %s old (--max-age %s)", age.Round(time.Second), maxAge)
	} else if -age > futureSkew {
		// A report from the future (collected_at 2099 passed, issue 32)
		// has no age to judge: the daemon's clock or the report is wrong.
		return nil, nil, fmt.Errorf("report's collected_at %s is %s in the future (--max-age %s cannot judge it; the daemon's clock or report is wrong)",
			doc.CollectedAt.UTC().Format(time.RFC3339), (-age).Round(time.Second), maxAge)
	}
	byID := map[string]check.Result{}
	for _, r := range doc.Checks {
		byID[r.ID] = r
	}
	results := make([]check.Result, 0, len(checks))
	for _, ch := range checks {
		r, ok := byID[ch.ID]
		if !ok {
			return nil, nil, fmt.Errorf("the daemon did not run %s", ch.ID)
		}
		results = append(results, r)
	}
	n := &state.Node{SchemaVersion: state.SchemaVersion, Host: doc.Host, CollectedAt: doc.CollectedAt, GpuprobeVersion: doc.GpuprobeVersion,
		NVML: &state.NVML{Available: doc.Driver != "", DriverVersion: doc.Driver, CUDADriverVersion: doc.CUDA, DeviceCount: doc.GPUs, GPUs: make([]state.GPU, doc.GPUs)}}
	for i := range n.NVML.GPUs {
		n.NVML.GPUs[i].Index = i
	}
	if doc.Simulated {
		n.Simulated = doc.SimulateSpec
	}
	return n, results, nil
}
