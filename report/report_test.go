package report

import (
	"bytes"
	"context"
	"flag"
	simnode "github.com/gpuprobe/gpuprobe/sim/node"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	"github.com/gpuprobe/gpuprobe/state"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func simSources(t *testing.T, s *simulate.Spec) collect.Sources {
	t.Helper()
	src, err := simnode.Sources(s)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// document judges a simulated node with the time and duration pinned, so the
// rendering is all that varies.
func document(t *testing.T, spec string, patterns ...string) docWithNode {
	t.Helper()
	s, err := simulate.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	n := collect.Node(context.Background(), collect.Options{Sources: simSources(t, s), Version: "test"})
	n.CollectedAt = time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	n.Host = "gpu042" // the machine's own name varies; the layout is what is tested
	if patterns == nil {
		patterns = []string{"gpu"}
	}
	if patterns[0] == "all" {
		patterns = nil
	}
	checks, _ := check.Select(patterns, nil)
	rs := check.Run(context.Background(), n, check.DefaultConfig(), checks)
	return docWithNode{New(n, rs, false, 12300*time.Microsecond), n}
}

// docWithNode keeps the state a document was judged from (the landing page
// shows both).
type docWithNode struct {
	*Document
	node *state.Node
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGoldenReports(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		checks     []string
		verbose    bool
	}{
		{name: "healthy", spec: "dgx-h100"},
		{name: "faults", spec: "dgx-h100:row-remap-pending=3,gpu-lost=5,ecc-uncorrectable=1,row-remap-failure=6"},
		// Every check, as 'check' runs by default outside a job: the skips fold.
		{name: "all-healthy", spec: "dgx-h100", checks: []string{"all"}},
		{name: "all-faults", spec: "dgx-h100:row-remap-pending=3,persistence-off,nvlink-down=2", checks: []string{"all"}},
		{name: "all-faults-verbose", spec: "dgx-h100:row-remap-pending=3,persistence-off,nvlink-down=2", checks: []string{"all"}, verbose: true},
	} {
		d := document(t, tc.spec, tc.checks...)
		var txt, js, color bytes.Buffer
		if err := d.WriteText(&txt, TextOptions{Verbose: tc.verbose}); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		d.WriteText(&color, TextOptions{Color: true, Verbose: tc.verbose})
		golden(t, tc.name+".txt", txt.Bytes())
		golden(t, tc.name+".json", js.Bytes())
		if bytes.Contains(txt.Bytes(), []byte("\x1b[")) || !bytes.Contains(color.Bytes(), []byte("\x1b[")) {
			t.Errorf("%s: colour must appear only when asked for", tc.name)
		}
	}
}

// The five-second layout: what is wrong first (fail, error, warn), then the
// passes, then one line of skips grouped by reason; -v is catalogue order.
func TestTextLayout(t *testing.T) {
	d := &Document{Host: "n1", Status: check.Fail, Counts: map[string]int{"fail": 1, "warn": 1, "pass": 1, "skip": 4, "error": 1}, Checks: []check.Result{
		{ID: "a.pass", Status: check.Pass, Summary: "fine"},
		{ID: "b.skip", Status: check.Skip, Summary: "not inside a job step (SLURM_JOB_ID is not set)"},
		{ID: "c.warn", Status: check.Warn, Summary: "lukewarm", Remedy: "cool it"},
		{ID: "d.skip", Status: check.Skip, Summary: "no slurm.conf at /etc/slurm/slurm.conf (not a Slurm node)"},
		{ID: "e.fail", Status: check.Fail, Summary: "broken", Remedy: "fix it"},
		{ID: "f.skip", Status: check.Skip, Summary: "not inside a job step (SLURM_STEP_ID is not set)"},
		{ID: "g.error", Status: check.Error, Summary: "timed out"},
		{ID: "h.skip", Status: check.Skip, Summary: ""},
	}}
	var b bytes.Buffer
	d.WriteText(&b, TextOptions{})
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	want := []string{
		"gpuprobe check on n1 — 0 GPUs, driver n/a, CUDA n/a — 0001-01-01 00:00:00 UTC",
		"  FAIL   e.fail                 broken",
		"                                fix: fix it",
		"  ERROR  g.error                timed out",
		"  WARN   c.warn                 lukewarm",
		"                                fix: cool it",
		"  PASS   a.pass                 fine",
		"  SKIP   4 skipped (-v lists them): not inside a job step (2), no slurm.conf at /etc/slurm/slurm.conf (1), no reason given (1)",
		"FAIL: 1 fail, 1 error, 1 warn, 1 pass, 4 skip in 0.00s",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("layout:\n%s\nwant:\n%s", b.String(), strings.Join(want, "\n"))
	}
	b.Reset()
	d.WriteText(&b, TextOptions{Verbose: true})
	if got := strings.Count(b.String(), "SKIP "); got != 4 || !strings.Contains(b.String(), "  PASS   a.pass                 fine\n  SKIP   b.skip") {
		t.Errorf("-v must list every check in catalogue order (%d SKIP lines):\n%s", got, b.String())
	}
}

// A simulated report names the real node and the model it plays.
func TestNodeName(t *testing.T) {
	for _, tc := range []struct {
		d    Document
		want string
	}{
		{Document{Host: "gpu001"}, "gpu001"},
		{Document{Host: "gpu001", Simulated: true, SimulateSpec: "dgx-h100:gpu-lost=5"}, "gpu001 (simulated dgx-h100)"},
		{Document{Host: "gpu001", Simulated: true, SimulateSpec: "dgx-b200"}, "gpu001 (simulated dgx-b200)"},
		{Document{Host: "gpu001", Simulated: true}, "gpu001 (simulated unknown model)"},
	} {
		if got := tc.d.NodeName(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.d, got, tc.want)
		}
	}
}

// Skip summaries are free text from every check: folding them never loses a
// skip or panics.
func FuzzFoldSkips(f *testing.F) {
	f.Add("not inside a job step (SLURM_JOB_ID is not set)", "", " (")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		rs := []check.Result{{Status: check.Skip, Summary: a}, {Status: check.Skip, Summary: b}, {Status: check.Pass, Summary: c}, {Status: check.Skip, Summary: c}}
		line := foldSkips(rs)
		if !strings.HasPrefix(line, "3 skipped (-v lists them): ") {
			t.Errorf("folded line %q", line)
		}
	})
}

// A state read from an nvidia-smi capture says so in every rendering: it
// was not collected by gpuprobe, and the checks it cannot feed skipped.
func TestCaptureIsNamed(t *testing.T) {
	n := &state.Node{Host: "h100x8", Capture: &state.Capture{Format: "nvidia-smi -q", File: "h100x8.txt", Timestamp: "Wed Jul 31 11:22:39 2024"}}
	d := New(n, nil, false, 0)
	const want = "nvidia-smi -q of h100x8.txt (Wed Jul 31 11:22:39 2024)"
	if d.Capture != want {
		t.Fatalf("Capture = %q, want %q", d.Capture, want)
	}
	var text, html, js bytes.Buffer
	if err := d.WriteText(&text, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := (&Page{Doc: d, Node: n}).WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]string{"text": text.String(), "json": js.String(), "html": html.String()} {
		if !strings.Contains(b, want) {
			t.Errorf("%s rendering does not name the capture:\n%s", name, b)
		}
	}
	if !strings.HasPrefix(text.String(), "*** FROM A CAPTURE:") {
		t.Errorf("text report must open with the capture banner:\n%s", text.String())
	}
}

// A failing check's finding is printed once: a detail the summary line
// already says (the summary itself, or one of the findings it joins with
// "; ") is not repeated as a bullet, in either layout; a detail the summary
// leaves out still is.
func TestFindingPrintedOnce(t *testing.T) {
	d := &Document{Host: "n1", Status: check.Fail, Counts: map[string]int{"fail": 3}, Checks: []check.Result{
		{ID: "a.one", Status: check.Fail, Summary: "GPU 3 (0000:5d:00.0): row remap pending", Details: []string{"GPU 3 (0000:5d:00.0): row remap pending"}, Remedy: "reset"},
		{ID: "b.two", Status: check.Fail, Summary: "GPU 3: x; GPU 6: y", Details: []string{"GPU 3: x", "GPU 6: y"}, Remedy: "reset"},
		{ID: "c.more", Status: check.Fail, Summary: "GPU 1: x; GPU 2: x; and 1 more", Details: []string{"GPU 1: x", "GPU 2: x", "GPU 4: x"}, Remedy: "reset"},
	}}
	for _, verbose := range []bool{false, true} {
		var b bytes.Buffer
		d.WriteText(&b, TextOptions{Verbose: verbose})
		out := b.String()
		for _, once := range []string{"row remap pending", "GPU 3: x", "GPU 6: y", "GPU 1: x", "GPU 2: x"} {
			if n := strings.Count(out, once); n != 1 {
				t.Errorf("verbose=%v: %q printed %d times:\n%s", verbose, once, n, out)
			}
		}
		if !strings.Contains(out, "- GPU 4: x\n") {
			t.Errorf("verbose=%v: the finding the summary leaves out is not listed:\n%s", verbose, out)
		}
	}
}
