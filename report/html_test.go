package report

import (
	"bytes"
	"fmt"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

func TestLandingPageShowsTheReport(t *testing.T) {
	d := document(t, "dgx-h100:row-remap-pending=3,gpu-lost=5", "all")
	n := d.node
	var b bytes.Buffer
	p := &Page{Doc: d.Document, Node: n, Version: "1.2.3", Links: []Link{{"/metrics", "Metrics"}}, Now: d.CollectedAt.Add(7 * time.Second)}
	if err := p.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		`gpuprobe on gpu042 (simulated dgx-h100) <span class="status fail">FAIL</span>`,
		"SIMULATED: dgx-h100:row-remap-pending=3,gpu-lost=5",
		"Last collection: 2026-11-22 06:00:00 UTC (7s ago)",
		// Failures with their fixes, before the GPU table.
		`<td class="mono">gpu.row_remap</td><td>GPU 3 (0000:5d:00.0): row remap pending<div class="fix"><b>fix:</b> drain the node and reset the GPU`,
		`<td class="mono">gpu.count</td>`,
		// The per-GPU table: the lost GPU and the one with a pending remap.
		`<td>5</td><td>NVIDIA H100 80GB HBM3</td><td class="mono">0000:bb:00.0</td><td class="fail">lost (fell off the bus)</td>`,
		`<td class="warn">attention</td>`, `<td>pending</td>`,
		// The topology matrix, as nvidia-smi topo -m lays it out.
		"<h2>Topology</h2>", "<th>GPU0</th>", "<td>NV18</td>", "NIC0 = mlx5_0",
		`<a href="/metrics">Metrics</a>`, "gpuprobe 1.2.3",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Index(html, "Needs attention") > strings.Index(html, "<h2>GPUs</h2>") {
		t.Error("failures must come before the GPU table")
	}
	// No external asset of any kind: no script, no src, no stylesheet link.
	if m := regexp.MustCompile(`(?i)<script|\ssrc=|<link|https?://|@import|url\(`).FindString(html); m != "" {
		t.Errorf("page references something external: %q", m)
	}
}

// Every piece of text comes from the node, its logs or its users: none of it
// may become markup.
func TestLandingPageEscapesEverything(t *testing.T) {
	evil := `<script>alert(1)</script>"'&`
	n := &state.Node{Host: evil, NVML: &state.NVML{Available: true, GPUs: []state.GPU{{Index: 0, Name: evil, PCIBusID: evil}}},
		Topology: &topostate.Topology{}}
	d := New(n, []check.Result{{ID: evil, Status: check.Fail, Summary: evil, Remedy: evil, Details: []string{evil, evil},
		Devices: []check.Device{{Index: 0}}}}, false, 0)
	d.Simulated, d.SimulateSpec = true, evil
	var b bytes.Buffer
	if err := (&Page{Doc: d, Node: n}).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script") || strings.Contains(b.String(), `"'&`) {
		t.Errorf("unescaped text in the page:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the text itself must still be shown, escaped")
	}
}

// Issue 32: the page carried raw ESC and U+202E (HTML-escaped, but not
// made visible as the text report makes them): a process named with a bidi
// override read backwards in the browser. Every control and bidi character
// (U+202A-202E, U+2066-2069, U+200E/F, ESC) is written as a visible escape.
func TestLandingPageEscapesControlAndBidi(t *testing.T) {
	// Each character, and the visible escape safetext writes for it.
	chars := []rune{0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x1b}
	var raw, visible strings.Builder
	raw.WriteString("evil")
	visible.WriteString("evil")
	for _, r := range chars {
		raw.WriteString(string(r) + "x")
		if r < 0x100 {
			fmt.Fprintf(&visible, `\x%02x`+"x", r)
		} else {
			fmt.Fprintf(&visible, `\u%04x`+"x", r)
		}
	}
	evil := raw.String()
	n := &state.Node{Host: evil, NVML: &state.NVML{Available: true, GPUs: []state.GPU{{Index: 0, Name: evil, PCIBusID: evil}}}}
	d := New(n, []check.Result{{ID: "gpu.processes", Status: check.Fail, Summary: evil, Remedy: evil, Details: []string{evil, evil},
		Devices: []check.Device{{Index: 0}}}, {ID: "gpu.ecc", Status: check.Pass, Summary: evil}}, false, 0)
	d.Simulated, d.SimulateSpec, d.Capture = true, evil, evil
	var b bytes.Buffer
	if err := (&Page{Doc: d, Node: n}).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if i := strings.IndexFunc(html, func(r rune) bool { return slices.Contains(chars, r) }); i >= 0 {
		t.Errorf("raw %U in the page at byte %d:\n%q", []rune(html[i:])[0], i, html)
	}
	if got := strings.Count(html, visible.String()); got < 8 {
		t.Errorf("the escapes must be visible (%s), found %d times:\n%s", visible.String(), got, html)
	}
}

func TestLandingPageBeforeFirstCollection(t *testing.T) {
	var b bytes.Buffer
	if err := (&Page{}).WriteHTML(&b); err != nil || !strings.Contains(b.String(), "no collection has finished yet") {
		t.Errorf("%v\n%s", err, b.String())
	}
}
