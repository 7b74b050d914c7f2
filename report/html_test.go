package report

import (
	"bytes"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"regexp"
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

func TestLandingPageBeforeFirstCollection(t *testing.T) {
	var b bytes.Buffer
	if err := (&Page{}).WriteHTML(&b); err != nil || !strings.Contains(b.String(), "no collection has finished yet") {
		t.Errorf("%v\n%s", err, b.String())
	}
}
