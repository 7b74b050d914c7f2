package topostate

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Matrix is the `nvidia-smi topo -m` view of a topology, as data: the text
// form and --format json are two renderings of the same value.
type Matrix struct {
	// Columns are the device labels: GPU0..GPUn, then NIC0..NICk.
	Columns []string    `json:"columns"`
	Rows    []MatrixRow `json:"rows"`
	// NICLegend maps NICk to the device name, as nvidia-smi prints it.
	NICLegend []NICLabel `json:"nic_legend"`
	Legend    []Legend   `json:"legend"`
}

// MatrixRow is one device's row. Affinity columns are set on GPU rows only,
// as nvidia-smi does.
type MatrixRow struct {
	Device       string   `json:"device"`
	BusID        string   `json:"bus_id"`
	Cells        []string `json:"cells"`
	CPUAffinity  string   `json:"cpu_affinity,omitempty"`
	NUMAAffinity string   `json:"numa_affinity,omitempty"`
}

// NICLabel pairs a NIC column with its device.
type NICLabel struct {
	Label string `json:"label"`
	Name  string `json:"name"`
}

// Legend explains one cell value.
type Legend struct {
	Value   string `json:"value"`
	Meaning string `json:"meaning"`
}

// legend is nvidia-smi's own text, which users know by heart.
var legend = []Legend{
	{"X", "Self"},
	{"SYS", "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)"},
	{"NODE", "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node"},
	{"PHB", "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"},
	{"PXB", "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)"},
	{"PIX", "Connection traversing at most a single PCIe bridge"},
	{"NV#", "Connection traversing a bonded set of # NVLinks"},
}

// Matrix builds the matrix view.
func (t *Topology) Matrix() Matrix {
	type dev struct{ label, name, bus string }
	var devs []dev
	m := Matrix{Columns: []string{}, Rows: []MatrixRow{}, NICLegend: []NICLabel{}, Legend: legend}
	for _, g := range t.GPUs {
		l := "GPU" + strconv.Itoa(g.Index)
		devs = append(devs, dev{l, l, g.BusID})
	}
	k := 0
	for _, n := range t.NICs {
		if n.BusID == "" {
			continue
		}
		l := "NIC" + strconv.Itoa(k)
		k++
		devs = append(devs, dev{l, n.Name, n.BusID})
		m.NICLegend = append(m.NICLegend, NICLabel{l, n.Name})
	}
	cell := map[[2]string]string{}
	for _, p := range t.Paths {
		cell[[2]string{p.ABusID, p.BBusID}] = p.Type
		cell[[2]string{p.BBusID, p.ABusID}] = p.Type
	}
	for _, d := range devs {
		m.Columns = append(m.Columns, d.label)
	}
	for i, d := range devs {
		row := MatrixRow{Device: d.label, BusID: d.bus}
		for j, o := range devs {
			c := "X"
			if i != j {
				if c = cell[[2]string{d.bus, o.bus}]; c == "" {
					c = PathUnknown
				}
			}
			row.Cells = append(row.Cells, c)
		}
		if g := t.GPU(d.bus); g != nil {
			row.CPUAffinity, row.NUMAAffinity = "N/A", "N/A"
			if g.LocalCPUs != "" {
				row.CPUAffinity = g.LocalCPUs
			}
			switch {
			case g.NUMANode >= 0:
				row.NUMAAffinity = strconv.Itoa(g.NUMANode)
			case len(t.NUMANodes) == 1:
				// numa_node -1 on a one-node machine: the GPU is on the
				// only node, which is what nvidia-smi topo -m prints (a
				// real H100 VM: sysfs -1, nvidia-smi 0).
				row.NUMAAffinity = strconv.Itoa(t.NUMANodes[0].ID)
			}
		}
		m.Rows = append(m.Rows, row)
	}
	return m
}

// WriteText prints the matrix the way `nvidia-smi topo -m` lays it out:
// eight-column cells, the self cell as " X ", affinity columns, the legend
// and the NIC legend.
func (m Matrix) WriteText(w io.Writer) error {
	var sb strings.Builder
	cpuW, numaW := len("CPU Affinity"), len("NUMA Affinity")
	for _, r := range m.Rows {
		cpuW, numaW = max(cpuW, len(r.CPUAffinity)), max(numaW, len(r.NUMAAffinity))
	}
	pad := func(s string, w int) string {
		n := (w/8 + 1) * 8 // the next tab stop past the text
		return s + strings.Repeat(" ", n-len(s))
	}
	labelW := 5
	for _, c := range m.Columns {
		labelW = max(labelW, len(c))
	}
	sb.WriteString(pad("", labelW))
	for _, c := range m.Columns {
		sb.WriteString(pad(c, labelW))
	}
	sb.WriteString(pad("CPU Affinity", cpuW) + "NUMA Affinity\n")
	for _, r := range m.Rows {
		sb.WriteString(pad(r.Device, labelW))
		for _, c := range r.Cells {
			if c == "X" {
				c = " X "
			}
			sb.WriteString(pad(c, labelW))
		}
		if r.CPUAffinity != "" || r.NUMAAffinity != "" {
			sb.WriteString(pad(r.CPUAffinity, cpuW) + r.NUMAAffinity)
		}
		sb.WriteString("\n")
	}
	sb.WriteString("\nLegend:\n\n")
	for _, l := range m.Legend {
		fmt.Fprintf(&sb, "  %-4s = %s\n", l.Value, l.Meaning)
	}
	if len(m.NICLegend) > 0 {
		sb.WriteString("\nNIC Legend:\n\n")
		for _, n := range m.NICLegend {
			fmt.Fprintf(&sb, "  %s: %s\n", n.Label, n.Name)
		}
	}
	lines := strings.Split(sb.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}
