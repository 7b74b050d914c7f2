package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/internal/safetext"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	toposim "github.com/gpuprobe/gpuprobe/sim/topo"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"github.com/gpuprobe/gpuprobe/topo"
	"github.com/gpuprobe/gpuprobe/topo/fstree"
)

func init() { registrars = append(registrars, registerTopo) }

func registerTopo(c *cli) {
	var f collectFlags
	var format string
	var verbose bool
	var capture string
	cmd := c.app.Command("topo", "Print the GPU/NIC topology matrix (as 'nvidia-smi topo -m' does, from sysfs) with ACS, IOMMU and GPUDirect readiness.")
	f.register(cmd, "30s")
	cmd.Flag("format", "Output format.").Default("text").EnumVar(&format, "text", "json")
	cmd.Flag("verbose", "Also list every path with the bridges it crosses and their ACS state.").Short('v').BoolVar(&verbose)
	cmd.Flag("capture", "Copy the sysfs/procfs files topo reads (from --path.sysfs/--path.procfs, or the --simulate tree) to DIR instead, to judge elsewhere with --path.sysfs DIR/sys --path.procfs DIR/proc. Run as root: ACS needs full config space.").PlaceHolder("DIR").StringVar(&capture)
	cmd.Action(func(*kingpin.ParseContext) error {
		o, err := f.options()
		if err != nil {
			return c.usageError("%v", err)
		}
		if capture != "" {
			return c.captureTopo(o, capture)
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
		defer cancel()
		n := c.collectNode(ctx, &f, o)
		if n.Topology == nil {
			reason := "not collected"
			for _, s := range n.Sources {
				if s.Name == "topo" && s.Error != "" {
					reason = s.Error
				}
			}
			return fmt.Errorf("topology: %s", safetext.Clean(reason))
		}
		if format == "json" {
			return writeTopoJSON(c.stdout, n)
		}
		return writeTopoText(c.stdout, n, verbose)
	})
}

// captureTopo writes a capture of the tree topo would read.
func (c *cli) captureTopo(o collect.Options, dir string) error {
	if o.Sources.Simulated != "" {
		// The simulated tree is written straight where the user asked.
		spec, err := simulate.Parse(o.Sources.Simulated)
		var t *fstree.Tree
		if err == nil {
			t, err = toposim.Build(spec)
		}
		if err == nil {
			err = t.Write(dir)
		}
		if err != nil {
			return c.usageError("%v", err)
		}
	} else {
		notes, err := topo.Capture(o.SysfsRoot, o.ProcfsRoot, dir)
		if err != nil {
			return c.usageError("%v", err)
		}
		for _, n := range notes {
			fmt.Fprintf(c.stderr, "%s: capture: %s\n", programName, safetext.Clean(n))
		}
	}
	fmt.Fprintf(c.stdout, "captured the topology files to %s; judge them anywhere with:\n  gpuprobe topo --path.sysfs %s --path.procfs %s\n",
		dir, filepath.Join(dir, "sys"), filepath.Join(dir, "proc"))
	return nil
}

// topoDoc is --format json: the matrix as data, and everything behind it.
type topoDoc struct {
	Host      string              `json:"host"`
	Simulated string              `json:"simulated,omitempty"`
	Matrix    topostate.Matrix    `json:"matrix"`
	Topology  *topostate.Topology `json:"topology"`
}

func writeTopoJSON(w io.Writer, n *state.Node) error {
	b, err := json.MarshalIndent(topoDoc{Host: n.Host, Simulated: n.Simulated, Matrix: n.Topology.Matrix(), Topology: n.Topology}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the topology: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeTopoText draws the matrix and the summary for a terminal. Device
// and module names, versions, evidence and paths come from sysfs/procfs or
// from a captured tree someone else made (--path.sysfs): every one is
// passed through safetext.Clean, the matrix's cells before it is laid out
// (so that escapes cannot break its columns) and every other line whole.
func writeTopoText(w io.Writer, n *state.Node, verbose bool) error {
	t := n.Topology
	clean := safetext.Clean
	var b strings.Builder
	if n.Simulated != "" {
		fmt.Fprintf(&b, "*** SIMULATED: %s (generated sysfs tree and go-nvml mock; not real hardware) ***\n\n", clean(n.Simulated))
	}
	if m := t.Matrix(); len(m.Rows) == 0 {
		fmt.Fprintf(&b, "No NVIDIA GPU and no RDMA NIC under %s: no matrix to draw.\n", clean(t.SysfsRoot))
	} else if err := cleanMatrix(m).WriteText(&b); err != nil {
		return err
	}
	b.WriteString("\n")
	for _, l := range topoSummary(n) {
		b.WriteString(clean(l) + "\n")
	}
	if verbose {
		b.WriteString("\nPaths:\n")
		for _, p := range t.Paths {
			var l strings.Builder
			fmt.Fprintf(&l, "  %s ↔ %s: %s", p.A, p.B, p.Type)
			if p.Type != p.PCIe {
				fmt.Fprintf(&l, " (PCIe %s)", p.PCIe)
			}
			for i, id := range p.Bridges {
				sep := " via "
				if i > 0 {
					sep = " → "
				}
				l.WriteString(sep + id + acsMark(t.Bridge(id)))
			}
			b.WriteString(clean(l.String()) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cleanMatrix returns a copy of m with every label and cell cleaned.
func cleanMatrix(m topostate.Matrix) topostate.Matrix {
	c := safetext.Clean
	out := topostate.Matrix{Legend: m.Legend}
	for _, col := range m.Columns {
		out.Columns = append(out.Columns, c(col))
	}
	for _, r := range m.Rows {
		cr := topostate.MatrixRow{Device: c(r.Device), BusID: c(r.BusID), CPUAffinity: c(r.CPUAffinity), NUMAAffinity: c(r.NUMAAffinity)}
		for _, cell := range r.Cells {
			cr.Cells = append(cr.Cells, c(cell))
		}
		out.Rows = append(out.Rows, cr)
	}
	for _, l := range m.NICLegend {
		out.NICLegend = append(out.NICLegend, topostate.NICLabel{Label: c(l.Label), Name: c(l.Name)})
	}
	return out
}

// acsMark flags a bridge whose ACS redirects or cannot be read.
func acsMark(br *topostate.Bridge) string {
	switch {
	case br == nil || br.ACS.Status == "unknown":
		return " [ACS ?]"
	case br.ACS.ACS != nil && br.ACS.Redirect:
		return " [ACS redirect]"
	}
	return ""
}

// topoSummary is the part of the picture the matrix does not show.
func topoSummary(n *state.Node) []string {
	t := n.Topology
	v := t.Virtualization
	virt := "bare metal"
	if v.VM() {
		virt = "virtual machine"
		if v.Hypervisor != "" {
			virt += " (" + v.Hypervisor + ")"
		}
	}
	gpus := "GPUs:           from NVML (" + fmt.Sprint(len(t.GPUs)) + ")"
	if t.GPUSource == "sysfs" {
		gpus = fmt.Sprintf("GPUs:           %d found in sysfs by PCI ID (NVML unavailable or not this machine's)", len(t.GPUs))
	}
	nvlink := "NVLink:         from NVML"
	if t.NVLinkKnown && !anyNVLink(t) {
		nvlink = "NVLink:         from NVML: no NVLink up on any GPU (GPU pairs show their PCIe path)"
	}
	if !t.NVLinkKnown {
		nvlink = "NVLink:         unknown without NVML: GPU pairs show their PCIe path"
	}
	pm := "none"
	if t.PeerMem.Loaded() {
		pm = t.PeerMem.Module + " " + t.PeerMem.Version
	}
	dmabuf := "no"
	if t.PeerMem.DMABuf {
		dmabuf = "likely"
	}
	out := []string{
		"Virtualization: " + virt + " [" + v.Source + ": " + v.Evidence + "]",
		"IOMMU:          " + t.IOMMU.Mode + " [" + t.IOMMU.Evidence + "]",
		"Peer memory:    " + pm + "; DMA-BUF " + dmabuf + " [" + t.PeerMem.DMABufReason + "]",
		acsLine(t),
		gpus,
		nvlink,
	}
	for _, note := range t.Notes {
		out = append(out, "Note:           "+note)
	}
	return out
}

func acsLine(t *topostate.Topology) string {
	var redirect, unknown []string
	for _, br := range t.Bridges {
		switch {
		case br.ACS.Status == "unknown":
			unknown = append(unknown, br.BusID)
		case br.ACS.ACS != nil && br.ACS.Redirect:
			redirect = append(redirect, fmt.Sprintf("%s (%s)", br.BusID, br.ACS.CtlFlags))
		}
	}
	s := fmt.Sprintf("PCIe ACS:       %d bridges above GPUs and NICs", len(t.Bridges))
	switch {
	case len(redirect) > 0:
		s += "; redirecting P2P: " + strings.Join(redirect, ", ")
	case len(t.Bridges) > 0 && len(unknown) == 0:
		s += "; none redirects P2P"
	}
	if len(unknown) > 0 {
		s += fmt.Sprintf("; %d unknown (config space needs root or CAP_SYS_ADMIN)", len(unknown))
	}
	return s
}

// anyNVLink says some GPU has an NVLink up, to a peer or an NVSwitch.
func anyNVLink(t *topostate.Topology) bool {
	for _, g := range t.GPUs {
		if g.SwitchLinks > 0 || len(g.PeerLinks) > 0 {
			return true
		}
	}
	return false
}
