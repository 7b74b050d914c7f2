package report

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state"
)

// Page is what the daemon's landing page shows besides the document.
type Page struct {
	Doc  *Document
	Node *state.Node
	// Stale is set when the last collection failed and this is older data.
	Stale bool
	// Version is gpuprobe's own, Links the daemon's other endpoints.
	Version string
	Links   []Link
	// Now is when the page is rendered, for "collected N s ago".
	Now time.Time
}

// Link is one endpoint on the landing page.
type Link struct{ Href, Text string }

// WriteHTML renders the landing page: plain server-rendered HTML, no script,
// no external asset (a node's port is often reached through an SSH tunnel or
// from an air-gapped admin network). html/template escapes every piece of
// text, so nothing a GPU, a log or a user's process put in the state can
// become markup. Escaping for HTML leaves control and bidi characters as
// they are (an ESC, U+202E reversing a process name, U+2066 isolating a
// fake status): the rendered page goes through safetext, as the text
// report does, so they show as visible escapes (\u202e). The template's
// own text holds none of them, so every one met came from the state, and
// cleaning the whole page covers every field a later change adds.
func (p *Page) WriteHTML(w io.Writer) error {
	var b strings.Builder
	if err := pageTmpl.Execute(&b, p.view()); err != nil {
		return err
	}
	_, err := io.WriteString(w, safetext.Lines(b.String()))
	return err
}

type pageView struct {
	Title, Node, Status, StatusClass, Version string
	Simulated                                 string
	Capture                                   string
	Stale                                     bool
	CollectedAt, Age                          string
	Counts                                    string
	Problems                                  []check.Result
	GPUs                                      []gpuRow
	Matrix                                    *matrixView
	Links                                     []Link
	Passing                                   []check.Result
	Skipped                                   []check.Result
}

type gpuRow struct {
	Index, Name, BusID, State, StateClass  string
	Temp, Power, Memory, ECC, Remap, Links string
	Checks                                 string
}

type matrixView struct {
	Columns []string
	Rows    []matrixRow
	NICs    []string
}

type matrixRow struct {
	Device, CPU, NUMA string
	Cells             []string
}

func (p *Page) view() pageView {
	d := p.Doc
	v := pageView{Links: p.Links, Version: p.Version, Stale: p.Stale}
	if d == nil {
		v.Title, v.Node, v.Status, v.StatusClass = "gpuprobe", "", "no collection has finished yet", "skip"
		return v
	}
	v.Node = d.NodeName()
	v.Title = "gpuprobe: " + v.Node
	v.Status = strings.ToUpper(string(d.Status))
	v.StatusClass = string(d.Status)
	if d.Simulated {
		v.Simulated = d.SimulateSpec
	}
	v.Capture = d.Capture
	if !d.CollectedAt.IsZero() {
		v.CollectedAt = d.CollectedAt.UTC().Format("2006-01-02 15:04:05 UTC")
		if !p.Now.IsZero() {
			v.Age = p.Now.Sub(d.CollectedAt).Round(time.Second).String() + " ago"
		}
	}
	var parts []string
	for _, s := range []check.Status{check.Fail, check.Error, check.Warn, check.Pass, check.Skip} {
		if n := d.Counts[string(s)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	v.Counts = strings.Join(parts, ", ")
	for _, s := range []check.Status{check.Fail, check.Error, check.Warn} {
		for _, r := range d.Checks {
			if r.Status == s {
				v.Problems = append(v.Problems, r)
			}
		}
	}
	for _, r := range d.Checks {
		switch r.Status {
		case check.Pass:
			v.Passing = append(v.Passing, r)
		case check.Skip:
			v.Skipped = append(v.Skipped, r)
		}
	}
	if n := p.Node; n != nil {
		v.GPUs = gpuRows(n, d.Checks)
		if n.Topology != nil {
			if m := n.Topology.Matrix(); len(m.Rows) > 0 {
				mv := &matrixView{Columns: m.Columns}
				for _, l := range m.NICLegend {
					mv.NICs = append(mv.NICs, l.Label+" = "+l.Name)
				}
				for _, r := range m.Rows {
					mv.Rows = append(mv.Rows, matrixRow{Device: r.Device, CPU: r.CPUAffinity, NUMA: r.NUMAAffinity, Cells: r.Cells})
				}
				v.Matrix = mv
			}
		}
	}
	return v
}

// gpuRows is the per-GPU table: the facts a person checks first, and the
// checks that are not passing for that GPU.
func gpuRows(n *state.Node, results []check.Result) []gpuRow {
	if n.NVML == nil {
		return nil
	}
	atFault := map[int][]string{}
	for _, r := range results {
		if r.Status == check.Pass || r.Status == check.Skip {
			continue
		}
		for _, dev := range r.Devices {
			atFault[dev.Index] = append(atFault[dev.Index], r.ID)
		}
	}
	var rows []gpuRow
	for i := range n.NVML.GPUs {
		g := &n.NVML.GPUs[i]
		row := gpuRow{Index: strconv.Itoa(g.Index), Name: g.Name, BusID: g.PCIBusID, State: "ok", StateClass: "pass",
			Temp: "–", Power: "–", Memory: "–", ECC: "–", Remap: "–", Links: "–"}
		switch {
		case g.Lost:
			row.State, row.StateClass = "lost (fell off the bus)", "fail"
		case g.Unreachable:
			row.State, row.StateClass = "unreachable", "fail"
		case len(atFault[g.Index]) > 0:
			row.State, row.StateClass = "attention", "warn"
		}
		row.Checks = strings.Join(atFault[g.Index], ", ")
		if t := g.Thermal; t != nil {
			row.Temp = fmt.Sprintf("%d °C", t.TemperatureC)
		}
		if pw := g.Power; pw != nil {
			row.Power = fmt.Sprintf("%.0f W", pw.DrawWatts)
			if pw.LimitWatts != nil {
				row.Power += fmt.Sprintf(" / %.0f W", *pw.LimitWatts)
			}
		}
		if m := g.Memory; m != nil {
			row.Memory = fmt.Sprintf("%.1f / %.1f GiB", float64(m.UsedBytes)/(1<<30), float64(m.TotalBytes)/(1<<30))
		}
		if e := g.ECC; e != nil && e.Volatile.Uncorrected != nil {
			row.ECC = strconv.FormatUint(*e.Volatile.Uncorrected, 10)
		}
		if rr := g.RemappedRows; rr != nil {
			switch {
			case rr.Failure:
				row.Remap = "failure"
			case rr.Pending:
				row.Remap = "pending"
			default:
				row.Remap = fmt.Sprintf("%d remapped", rr.Correctable+rr.Uncorrectable)
			}
		}
		if len(g.NVLinks) > 0 {
			up := 0
			for _, l := range g.NVLinks {
				if l.Up {
					up++
				}
			}
			row.Links = fmt.Sprintf("%d / %d up", up, len(g.NVLinks))
		}
		rows = append(rows, row)
	}
	return rows
}

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="30">
<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#111;background:#fff}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f2f2f2}code,.mono{font-family:ui-monospace,monospace}
.status{display:inline-block;padding:.1em .6em;border-radius:.3em;font-weight:bold;color:#fff}
.pass{background:#1a7f37}.warn{background:#9a6700}.fail,.error{background:#cf222e}.skip{background:#6e7781}
td.pass,td.warn,td.fail,td.error,td.skip{color:#fff}
.banner{background:#fff8c5;border:1px solid #d4a72c;padding:.4em .8em;margin:.6em 0}
.fix{color:#0a3069}.muted{color:#57606a}
</style>
</head>
<body>
<h1>gpuprobe on {{.Node}} <span class="status {{.StatusClass}}">{{.Status}}</span></h1>
{{if .Simulated}}<div class="banner">SIMULATED: {{.Simulated}} (go-nvml mock; not real hardware)</div>{{end}}
{{if .Capture}}<div class="banner">FROM A CAPTURE: {{.Capture}} (not collected by gpuprobe; checks needing what it lacks skip)</div>{{end}}
{{if .Stale}}<div class="banner">STALE: the last collection failed; this is the previous one.</div>{{end}}
<p class="muted">Last collection: {{if .CollectedAt}}{{.CollectedAt}}{{if .Age}} ({{.Age}}){{end}}{{else}}none yet{{end}}{{if .Counts}} · {{.Counts}}{{end}}{{if .Version}} · gpuprobe {{.Version}}{{end}}</p>
<p>{{range $i, $l := .Links}}{{if $i}} · {{end}}<a href="{{$l.Href}}">{{$l.Text}}</a>{{end}}</p>
{{if .Problems}}<h2>Needs attention</h2>
<table><tr><th>Status</th><th>Check</th><th>Finding and fix</th></tr>
{{range .Problems}}<tr><td class="{{.Status}}">{{.Status}}</td><td class="mono">{{.ID}}</td><td>{{.Summary}}{{if gt (len .Details) 1}}<ul>{{range .Details}}<li>{{.}}</li>{{end}}</ul>{{end}}{{if .Remedy}}<div class="fix"><b>fix:</b> {{.Remedy}}</div>{{end}}</td></tr>
{{end}}</table>
{{else if .Counts}}<p>Every check passed or did not apply.</p>{{end}}
{{if .GPUs}}<h2>GPUs</h2>
<table><tr><th>GPU</th><th>Name</th><th>PCI bus ID</th><th>State</th><th>Temp</th><th>Power</th><th>Memory</th><th>Uncorrected ECC</th><th>Row remap</th><th>NVLinks</th><th>Checks not passing</th></tr>
{{range .GPUs}}<tr><td>{{.Index}}</td><td>{{.Name}}</td><td class="mono">{{.BusID}}</td><td class="{{.StateClass}}">{{.State}}</td><td>{{.Temp}}</td><td>{{.Power}}</td><td>{{.Memory}}</td><td>{{.ECC}}</td><td>{{.Remap}}</td><td>{{.Links}}</td><td class="mono">{{.Checks}}</td></tr>
{{end}}</table>{{end}}
{{with .Matrix}}<h2>Topology</h2>
<table class="mono"><tr><th></th>{{range .Columns}}<th>{{.}}</th>{{end}}<th>CPU affinity</th><th>NUMA</th></tr>
{{range .Rows}}<tr><th>{{.Device}}</th>{{range .Cells}}<td>{{.}}</td>{{end}}<td>{{.CPU}}</td><td>{{.NUMA}}</td></tr>
{{end}}</table>
<p class="muted">X self · NV# bonded NVLinks · PIX one PCIe bridge · PXB several bridges · PHB through a host bridge · NODE between host bridges of a NUMA node · SYS across NUMA nodes (nvidia-smi topo -m legend){{if .NICs}}<br>{{range $i, $n := .NICs}}{{if $i}} · {{end}}{{$n}}{{end}}{{end}}</p>{{end}}
{{if .Passing}}<h2>Passing</h2>
<table>{{range .Passing}}<tr><td class="pass">pass</td><td class="mono">{{.ID}}</td><td>{{.Summary}}</td></tr>
{{end}}</table>{{end}}
{{if .Skipped}}<details><summary>{{len .Skipped}} skipped</summary>
<table>{{range .Skipped}}<tr><td class="mono">{{.ID}}</td><td>{{.Summary}}</td></tr>
{{end}}</table></details>{{end}}
</body>
</html>
`))
