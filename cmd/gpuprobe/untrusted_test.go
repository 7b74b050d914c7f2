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
	"github.com/gpuprobe/gpuprobe/exporter"
	"github.com/gpuprobe/gpuprobe/report"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	toposim "github.com/gpuprobe/gpuprobe/sim/topo"
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

// rawControl reports a terminal control the text output must never carry:
// ESC, CR, and the bidi/zero-width characters of hostile.
func rawControl(s string) bool {
	return strings.ContainsAny(s, "\x1b\r\u202E\u2066\u200B")
}

// The bug: `nccl analyze` printed host names, network names, transports
// and evidence lines from the log raw. A log line can clear the screen
// (ESC[2J), overwrite a line (\r) or reverse text (U+202E) in the verdict.
func TestNCCLAnalyzeTextEscapesLogText(t *testing.T) {
	esc := "\x1b[2J\x1b[H"
	log := filepath.Join(t.TempDir(), "hostile.log")
	os.WriteFile(log, []byte(strings.Join([]string{
		"ho" + esc + "st\u202e:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2" + esc,
		"ho" + esc + "st\u202e:1:1 [0] NCCL INFO Using network Evil" + esc + "Net\u2066",
		"ho" + esc + "st\u202e:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin x" + esc + "\u202e (v5)",
		"ho" + esc + "st\u202e:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket" + esc + "/0",
		"other\u200b:2:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\r  PASS all good",
		"other\u200b:2:2 [0] misc.cc:12 NCCL WARN Call to connect returned Connection refused" + esc + "\u202e, retrying",
		"ho" + esc + "st\u202e:1:1 [0] NCCL INFO comm 0x55d1" + esc + " rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1c2d - Init COMPLETE",
	}, "\n")+"\n"), 0o644)
	_, out, errs := runCLI(t, "nccl", "analyze", log)
	if rawControl(out) || rawControl(errs) {
		t.Errorf("raw control characters in the text verdict:\n%q\n%q", out, errs)
	}
	if !strings.Contains(out, `\x1b[2J`) {
		t.Errorf("the hostile text is not shown escaped:\n%s", out)
	}
	// The JSON keeps the text as read (encoding/json escapes controls).
	_, out, _ = runCLI(t, "nccl", "analyze", "--format", "json", log)
	if strings.Contains(out, "\x1b") || !strings.Contains(out, `\u001b[2J`) {
		t.Errorf("JSON: %.400s", out)
	}
	// `nccl run` prints the same verdict to stderr.
	_, _, errs = runCLI(t, "nccl", "run", "--", "cat", log)
	if i := strings.Index(errs, "gpuprobe nccl verdict"); i < 0 || rawControl(errs[i:]) {
		t.Errorf("nccl run verdict:\n%q", errs)
	}
}

// The bug: `topo` printed device names, module versions and evidence from
// sysfs raw; a captured tree (--path.sysfs) is anybody's files.
func TestTopoTextEscapesSysfsText(t *testing.T) {
	spec, _ := simulate.Parse("dgx-h100")
	tr, err := toposim.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tr.Write(dir); err != nil {
		t.Fatal(err)
	}
	sys := filepath.Join(dir, "sys")
	evil := "mlx\x1b[2J\rX\u202e"
	// Rename an RDMA device, its class link and its directory.
	link := filepath.Join(sys, "class/infiniband/mlx5_7")
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	devDir := filepath.Join(filepath.Dir(link), filepath.Dir(target))
	if err := os.Rename(filepath.Join(devDir, "mlx5_7"), filepath.Join(devDir, evil)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(filepath.Dir(target), evil), filepath.Join(sys, "class/infiniband", evil)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys, "module/nvidia_peermem/version"), []byte("550\x1b[2J\r\u202e\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "topo", "-v", "--path.sysfs", sys, "--path.procfs", filepath.Join(dir, "proc"))
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if rawControl(out) || rawControl(errs) {
		t.Errorf("raw control characters in topo's text:\n%q", out)
	}
	for _, want := range []string{`NIC0: mlx\x1b[2J\x0dX\u202e`, `nvidia_peermem 550\x1b[2J\x0d\u202e`, `GPU0 ↔ mlx\x1b[2J\x0dX\u202e: SYS`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Issue 32: the landing page carried a process's raw ESC and U+202E (HTML
// escaping leaves them): the daemon's "/" now shows them as the text report
// does, visible escapes, for every bidi control (U+202A-202E, U+2066-2069,
// U+200E/F).
func TestLandingPageStripsBidiControls(t *testing.T) {
	var n state.Node
	if err := json.Unmarshal([]byte(simSnapshot(t)), &n); err != nil {
		t.Fatal(err)
	}
	const evil = "mallory\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\x1b[2J"
	n.Host = "node\u2066" + evil
	g := &n.NVML.GPUs[2]
	g.Processes = []state.Process{{PID: 31337, UsedMemoryBytes: 1 << 30, User: evil, Command: hostile}}
	g.ProcessesKnown = true
	cfg := check.DefaultConfig()
	checks, err := check.Select(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &exporter.Daemon{Exporter: exporter.New(false), Config: cfg, Interval: time.Hour, Timeout: 10 * time.Second,
		Collect: func(context.Context) *state.Node { m := n; return &m },
		Judge:   func(ctx context.Context, n *state.Node) []check.Result { return check.Run(ctx, n, cfg, checks) },
	}
	d.Cycle(context.Background())
	srv := httptest.NewServer(landingPage(d.Exporter, "/metrics"))
	defer srv.Close()
	code, page := get(t, srv.URL+"/")
	if code != 200 || !strings.Contains(page, "pid 31337") {
		t.Fatalf("landing page %d lacks the process:\n%s", code, page)
	}
	if i := strings.IndexFunc(page, func(r rune) bool {
		return r == 0x1b || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f
	}); i >= 0 {
		t.Errorf("raw %U on the landing page at byte %d", []rune(page[i:])[0], i)
	}
	if !strings.Contains(page, `mallory\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\x1b[2J`) {
		t.Errorf("the escapes are not visible on the landing page:\n%s", page)
	}
}
