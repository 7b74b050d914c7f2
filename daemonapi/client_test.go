package daemonapi

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/daemontrust"
	"github.com/gpuprobe/gpuprobe/jobrecord"
	"github.com/gpuprobe/gpuprobe/state"
)

// rootOwned makes the client see srv's port held by root in /proc/net/tcp,
// as the daemon's socket-activated port is.
func rootOwned(t *testing.T, c *Client, srv *httptest.Server) {
	t.Helper()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "net"), 0o755)
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		fmt.Sprintf("   0: 0100007F:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 39963 1 0000000000000000 100 0 0 10 0\n", p)
	os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(tcp), 0o644)
	c.Trust = daemontrust.Verifier{ProcRoot: root}
}

func TestReportAndVerdicts(t *testing.T) {
	at := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/report" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"schema_version":1,"host":"n1","status":"pass","collected_at":%q,"driver_version":"550.54.15","gpus":%s,
			"checks":[{"id":"gpu.driver","status":"pass","summary":"ok"}]}`, at.Format(time.RFC3339), r.URL.Query().Get("gpus"))
	}))
	defer srv.Close()
	c := New(srv.URL + "/")
	rootOwned(t, c, srv)
	if _, err := c.Report(t.Context()); err == nil || !strings.Contains(err.Error(), "decoding report") {
		t.Fatalf("a torn report (no gpus figure): %v", err)
	}
	// A well-formed report is read, sourced and judged.
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"schema_version":1,"host":"n1","status":"pass","collected_at":%q,"driver_version":"550.54.15","gpus":8,
			"checks":[{"id":"gpu.driver","status":"pass","summary":"ok"}]}`, at.Format(time.RFC3339))
	})
	doc, err := c.Report(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Source(doc), "daemon at "+srv.Listener.Addr().String()+", snapshot taken 2026-11-24T03:00:00Z"; got != want {
		t.Errorf("source %q, want %q", got, want)
	}
	n, res, err := Verdicts(doc, []check.Check{{ID: "gpu.driver"}}, time.Minute, at.Add(30*time.Second))
	if err != nil || n.Host != "n1" || len(n.NVML.GPUs) != 8 || len(res) != 1 || res[0].Status != check.Pass {
		t.Fatalf("verdicts: %v %+v %+v", err, n, res)
	}
	// Issue 32: a report collected in 2099 passed --max-age.
	if _, _, err := Verdicts(doc, []check.Check{{ID: "gpu.driver"}}, time.Minute, at.Add(-time.Hour)); err == nil || !strings.Contains(err.Error(), "in the future") {
		t.Errorf("a report from the future: %v", err)
	}
	if _, _, err := Verdicts(doc, []check.Check{{ID: "gpu.driver"}}, time.Minute, at.Add(-time.Second)); err != nil {
		t.Errorf("a second of clock skew: %v", err)
	}
	if _, _, err := Verdicts(doc, []check.Check{{ID: "gpu.driver"}}, time.Minute, at.Add(2*time.Minute)); err == nil || !strings.Contains(err.Error(), "old") {
		t.Errorf("a stale report: %v", err)
	}
	if _, _, err := Verdicts(doc, []check.Check{{ID: "perf.bottleneck"}}, time.Minute, at); err == nil || !strings.Contains(err.Error(), "did not run perf.bottleneck") {
		t.Errorf("a check the daemon did not run: %v", err)
	}
}

// The bug: with no daemon running, the client's callers said it "cannot be
// trusted". A free port is ErrNotRunning, never ErrUntrusted.
func TestNoDaemonIsNotRunning(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, get := range []func(c *Client) error{
		func(c *Client) error { _, err := c.Report(t.Context()); return err },
		func(c *Client) error { _, err := c.Job(t.Context(), "42"); return err },
	} {
		err := get(New("http://" + addr))
		if !errors.Is(err, ErrNotRunning) || errors.Is(err, ErrUntrusted) {
			t.Errorf("nothing on %s: %v, want ErrNotRunning", addr, err)
		}
	}
}

func TestJobFromDaemon(t *testing.T) {
	book := jobrecord.New(0, 0, 0)
	at := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	book.Observe(&state.Node{CollectedAt: at, NVML: &state.NVML{GPUs: []state.GPU{{
		Index: 3, UUID: "GPU-x", Utilization: &state.Utilization{GPUPercent: 90},
		Processes: []state.Process{{PID: 4711, User: "alice", JobID: "42"}}}}}})
	mux := http.NewServeMux()
	mux.Handle(JobPath, JobHandler(book, true))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := New(srv.URL)
	rootOwned(t, c, srv)
	j, err := c.Job(t.Context(), "42")
	if err != nil || j.JobID != "42" || len(j.GPUs) != 1 || j.GPUs[0].Index != 3 {
		t.Fatalf("job 42: %v %+v", err, j)
	}
	if _, err := c.Job(t.Context(), "43"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown job: %v", err)
	}
	// A user's listener on the port is refused before anything is asked.
	c.Trust.LookupUser = nil
	os.WriteFile(filepath.Join(c.Trust.ProcRoot, "net", "tcp"), []byte(strings.Replace(mustRead(t, filepath.Join(c.Trust.ProcRoot, "net", "tcp")), "     0        0 39963", " 54321        0 39963", 1)), 0o644)
	if _, err := c.Job(t.Context(), "42"); !errors.Is(err, ErrUntrusted) {
		t.Errorf("a user's listener: %v, want ErrUntrusted", err)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
