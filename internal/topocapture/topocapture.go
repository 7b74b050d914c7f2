// Package topocapture reads the matrix of a saved `nvidia-smi topo -m` (or
// `-mp`) capture: the tests of topo and check hold gpuprobe's topology and
// its verdicts against real captures with it. It parses text a test chose,
// not input from a node.
package topocapture

import (
	"regexp"
	"strings"
)

// Matrix is a capture's matrix as printed.
type Matrix struct {
	// Cols are the header's device names (GPU0, NIC3, mlx5_0), one per
	// cell of a row.
	Cols []string
	// Legend maps NICk to the device name the capture's legend gives.
	Legend map[string]string
	// Rows are the complete rows (a cell for every column), by their first
	// field.
	Rows map[string]Row
	// HasNUMA: the header has a NUMA Affinity column (older drivers do not).
	HasNUMA bool
}

// Row is one device's row: its cells, and the CPU and NUMA Affinity columns
// where printed ("" where not; "GPU NUMA ID" after them is not read).
type Row struct {
	Cells     []string
	CPU, NUMA string
}

var (
	headerName = regexp.MustCompile(`GPU\d+|NIC\d+|mlx\d_\d+`)
	rowName    = regexp.MustCompile(`^(GPU\d+|NIC\d+|mlx\d_\d+)$`)
	legendLine = regexp.MustCompile(`^(NIC\d+): (\S+)$`)
)

// Read reads text; lines starting "#" (a corpus file's source header) are
// skipped.
func Read(text string) Matrix {
	m := Matrix{Legend: map[string]string{}, Rows: map[string]Row{}}
	for _, raw := range strings.Split(text, "\n") {
		if strings.HasPrefix(raw, "#") {
			continue
		}
		f := strings.Fields(raw)
		if len(f) == 0 {
			continue
		}
		if m.Cols == nil && f[0] == "GPU0" && len(f) > 1 && f[1] != "X" {
			m.Cols = headerColumns(f)
			m.HasNUMA = strings.Contains(raw, "NUMA Affinity")
			continue
		}
		if l := legendLine.FindStringSubmatch(strings.TrimSpace(raw)); l != nil {
			m.Legend[l[1]] = l[2]
			continue
		}
		n := len(m.Cols)
		if m.Cols == nil || !rowName.MatchString(f[0]) || len(f) <= n {
			continue
		}
		r := Row{Cells: f[1 : 1+n]}
		if len(f) > 1+n {
			r.CPU = f[1+n]
		}
		if m.HasNUMA && len(f) > 2+n {
			r.NUMA = f[2+n]
		}
		m.Rows[f[0]] = r
	}
	return m
}

// Name is a column's device name through the legend (NIC3 → mlx5_3).
func (m Matrix) Name(col string) string {
	if n, ok := m.Legend[col]; ok {
		return n
	}
	return col
}

// headerColumns reads the device names of the header row. With many NICs
// nvidia-smi can print two names with no space between them ("NIC11NIC12",
// vllm#31594) while the rows keep one cell per device: a field made only of
// device names is that many columns.
func headerColumns(fields []string) []string {
	var cols []string
	for _, c := range fields {
		names := headerName.FindAllString(c, -1)
		if len(names) == 0 || strings.Join(names, "") != c {
			break
		}
		cols = append(cols, names...)
	}
	return cols
}
