package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/state"
)

const hostile = "evil\x1b[2J\x1b[H  PASS gpu.driver\u202Etxt.exe\u200B"

func hasRaw(s string) bool {
	return strings.ContainsAny(s, "\x1b\u202E\u200B")
}

// The bug: the text report printed users' process names raw (a process
// could clear the screen and print a fake PASS line) and drain reasons kept
// U+202E and U+200B.
func TestUntrustedTextEscapedInReportAndDrainReason(t *testing.T) {
	data := simSnapshot(t)
	var n state.Node
	if err := json.Unmarshal([]byte(data), &n); err != nil {
		t.Fatal(err)
	}
	g := &n.NVML.GPUs[2]
	g.Processes = []state.Process{{PID: 31337, UsedMemoryBytes: 1 << 30, User: "mallory\u202E", Command: hostile}}
	g.ProcessesKnown = true
	p := filepath.Join(t.TempDir(), "snap.json")
	b, _ := json.Marshal(&n)
	os.WriteFile(p, b, 0o600)

	code, out, errs := runCLI(t, "check", "--from-snapshot", p, "--expect-idle", "--color", "never")
	if code != 1 || !strings.Contains(out, "pid 31337") {
		t.Fatalf("exit %d, want the leftover process to fail gpu.processes\n%s%s", code, out, errs)
	}
	if hasRaw(out) {
		t.Errorf("text report prints control or bidi characters raw:\n%q", out)
	}
	if !strings.Contains(out, `evil\x1b[2J`) || !strings.Contains(out, `\u202e`) {
		t.Errorf("escapes not visible in the report:\n%s", out)
	}
	_, jsonOut, _ := runCLI(t, "check", "--from-snapshot", p, "--expect-idle", "--format", "json")
	var doc report.Document
	json.Unmarshal([]byte(jsonOut), &doc)
	reason := check.DrainReason(drainFailures(&doc, nil))
	if !strings.Contains(reason, "gpu.processes") || hasRaw(reason) {
		t.Errorf("drain reason %q: want gpu.processes with no raw control/bidi characters", reason)
	}
}

// The bug: summarize printed hosts and summaries raw, and stopped at the
// first line over 16 MiB.
func TestSummarizeHostileAndHugeLines(t *testing.T) {
	mk := func(host, summary string) string {
		d := report.Document{SchemaVersion: 1, Host: host, Status: "fail", GPUs: 8, Counts: map[string]int{"fail": 1},
			Checks: []check.Result{{ID: "gpu.processes", Status: "fail", Summary: summary}}}
		b, _ := json.Marshal(d)
		return string(b)
	}
	input := mk("n1\x1b]0;pwned\x07", hostile) + "\n" + strings.Repeat("x", 17<<20) + "\n" + mk("n2", "ok")
	code, out, errs := summarize(t, input)
	if hasRaw(out) || strings.Contains(out, "\x07") {
		t.Errorf("summarize prints raw control characters:\n%q", out)
	}
	if !strings.Contains(out, "n1") || !strings.Contains(out, "n2") {
		t.Errorf("a report after the 17 MiB line was lost:\n%s%s", out, errs)
	}
	if !strings.Contains(out, "line 2: longer than 16 MiB, skipped") || code != exitFailed {
		t.Errorf("exit %d; the long line is not reported:\n%s", code, out)
	}
}

// The bug: /report listed the first 120 characters of every GPU process's
// command line, unauthenticated, on all interfaces.
func TestReportOmitsCommandLinesByDefault(t *testing.T) {
	for _, expose := range []bool{false, true} {
		c := testCLI()
		f := &serveFlags{interval: time.Hour, metricsPath: "/metrics"}
		f.http.exposeProcessDetails = expose
		f.collect = collectFlags{simulate: "dgx-h100:leftover-process", timeout: 10 * time.Second, callTimeout: 5 * time.Second}
		d, _, err := c.newDaemon(f)
		if err != nil {
			t.Fatal(err)
		}
		d.Cycle(context.Background())
		mux, _ := c.serveMux(f, d)
		srv := httptest.NewServer(mux)
		_, body := get(t, srv.URL+"/report")
		_, landing := get(t, srv.URL+"/")
		srv.Close()
		if !strings.Contains(body, "pid 424242 (alice: python)") {
			t.Errorf("expose=%v: process not named by pid, user and executable:\n%s", expose, body)
		}
		if strings.Contains(landing, "--epochs") {
			t.Errorf("landing page shows a command line")
		}
		if got := strings.Contains(body, "--epochs 90"); got != expose {
			t.Errorf("expose=%v: command line on /report = %v", expose, got)
		}
	}
}
