package benchout

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

// The nvbandwidth output (NVIDIA/nvbandwidth, v0.2 to v0.10):
//
//	Device 0: NVIDIA H100 80GB HBM3 (00000000:19:00)
//	Running host_to_device_memcpy_ce.
//	memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
//	           0         1
//	 0     55.37     55.36
//
//	SUM host_to_device_memcpy_ce 110.73
//
// A matrix's title says what its rows and columns are and which way the
// bytes went ("->": row to column, "<-": column to row, "<->": both).
var (
	nvbwRunningRe = lazyRE(`^Running ([a-z0-9_]+)\.$`)
	nvbwSumRe     = lazyRE(`^SUM ([a-z0-9_]+) (\S+)$`)
	nvbwDeviceRe  = lazyRE(`^Device (\d+): (.+?)(?: \(([0-9a-fA-F:.]+)\))?$`)
	nvbwTitleRe   = lazyRE(`^(.*?)\b(CPU|GPU)\(row\) (->|<-|<->) (CPU|GPU)\(column\)\s*(.*?)\s*\(([^)]*)\)\s*$`)
	nvbwLocalRe   = lazyRE(`^(.*?)\bGPU\(column\)\s*(.*?)\s*\(([^)]*)\)\s*$`)
)

// nvbwKind maps the test cases gpuprobe measures itself to its kinds:
// unidirectional copy-engine copies, which is what `gpuprobe verify`
// times. Everything else nvbandwidth measures (bidirectional, SM copies,
// all-to-one, latency) has expectations of its own and is a figure.
var nvbwKind = map[string]string{
	"host_to_device_memcpy_ce":         state.MeasureH2D,
	"device_to_host_memcpy_ce":         state.MeasureD2H,
	"device_to_device_memcpy_read_ce":  state.MeasurePeer,
	"device_to_device_memcpy_write_ce": state.MeasurePeer,
	"device_local_copy":                state.MeasureD2D, // bytes counted once, as state.MeasureD2D is
}

type nvbwMatrix struct {
	title             string
	label, unit       string
	rowGPU, colGPU    bool
	dir               string // "->", "<-", "<->" or "" (a single row of GPUs)
	cols              []int
	headerSeen, local bool
}

func parseNvbandwidth(name string, lines []string) (*state.Verify, error) {
	run := &state.NvbandwidthRun{}
	v := &state.Verify{Source: SourceNvbandwidth, From: &state.FromRun{Nvbandwidth: run}}
	cur, pattern := "", ""
	var mx *nvbwMatrix
	for i, raw := range lines {
		n := i + 1
		l := strings.TrimSpace(raw)
		if mx != nil {
			if l == "" || strings.HasPrefix(l, "SUM ") || strings.HasPrefix(l, "Running ") || strings.HasPrefix(l, "COEFFICIENT_OF_VARIATION") {
				if !mx.headerSeen {
					return nil, &ParseError{File: name, Line: n, Msg: "matrix " + strconv.Quote(mx.title) + " has no column header"}
				}
				mx = nil
			} else {
				if err := nvbwMatrixLine(v, mx, cur, l); err != nil {
					return nil, &ParseError{File: name, Line: n, Msg: err.Error()}
				}
				continue
			}
		}
		switch {
		case l == "":
		case strings.HasPrefix(l, "nvbandwidth Version:"):
			run.Version = strings.TrimSpace(strings.TrimPrefix(l, "nvbandwidth Version:"))
		case strings.HasPrefix(l, "Driver Version:"):
			run.Driver = strings.TrimSpace(strings.TrimPrefix(l, "Driver Version:"))
		case nvbwDeviceRe().MatchString(l):
			m := nvbwDeviceRe().FindStringSubmatch(l)
			ord, err := strconv.Atoi(m[1])
			if err != nil || ord > 4096 {
				return nil, &ParseError{File: name, Line: n, Msg: "device number " + strconv.Quote(m[1]) + " out of range"}
			}
			v.Devices = append(v.Devices, state.VerifyDevice{Ordinal: ord, Index: -1, Name: m[2], PCIBusID: m[3]})
		case nvbwRunningRe().MatchString(l):
			cur = nvbwRunningRe().FindStringSubmatch(l)[1]
			run.TestCases = append(run.TestCases, state.NvbandwidthCase{Name: cur, Line: n})
		case strings.HasPrefix(l, "Waived"):
			run.Waived++
		case nvbwSumRe().MatchString(l):
			m := nvbwSumRe().FindStringSubmatch(l)
			f, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				return nil, &ParseError{File: name, Line: n, Msg: "SUM " + strconv.Quote(m[2]) + " is not a number"}
			}
			for j := len(run.TestCases) - 1; j >= 0; j-- {
				if tc := &run.TestCases[j]; strings.HasPrefix(m[1], tc.Name) {
					if tc.Sum == nil || m[1] == tc.Name || strings.HasSuffix(m[1], "_total") {
						tc.Sum = &f
					}
					break
				}
			}
		case strings.HasPrefix(l, "Invalid value when checking the pattern"):
			// nvbandwidth checks what every copy delivered against the
			// pattern it wrote (memcpy.cpp, memcmpPatternHelper) and
			// asserts on the first wrong value: the copy's data was wrong.
			if pattern == "" {
				pattern = fmt.Sprintf("line %d: nvbandwidth's check of the copied data found a wrong value (%s)", n, l)
			}
		case strings.Contains(l, "ASSERT") || strings.HasPrefix(l, "ERROR") || strings.HasPrefix(l, "Error"):
			if v.Error == "" {
				v.Error = fmt.Sprintf("line %d: %s", n, l)
			}
		default:
			if cur == "" {
				if strings.Contains(l, "(row)") || strings.Contains(l, "(column)") {
					v.Notes = append(v.Notes, fmt.Sprintf("line %d: a matrix with no 'Running <testcase>.' line before it: not read (%s)", n, l))
				}
				continue
			}
			if m := nvbwTitleRe().FindStringSubmatch(l); m != nil && strings.Contains(m[0], "(row)") {
				mx = &nvbwMatrix{title: l, rowGPU: m[2] == "GPU", colGPU: m[4] == "GPU", dir: m[3], label: nvbwLabel(m[5]), unit: m[6]}
			} else if m := nvbwLocalRe().FindStringSubmatch(l); m != nil && !strings.Contains(l, "(row)") {
				mx = &nvbwMatrix{title: l, colGPU: true, local: true, label: nvbwLabel(m[2]), unit: m[3]}
			}
		}
	}
	if len(run.TestCases) == 0 && run.Version == "" {
		return nil, &ParseError{File: name, Msg: "no 'Running <testcase>.' block: not an nvbandwidth output"}
	}
	if pattern != "" {
		if v.Error != "" {
			pattern += ", and stopped (" + v.Error + ")"
		}
		v.Error = pattern
	}
	return v, nil
}

// nvbwLabel is a matrix's own name between the columns and the unit
// ("Read1 bandwidth" -> "Read1"), or "" for plain "bandwidth".
func nvbwLabel(s string) string {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "bandwidth"))
	return s
}

func nvbwMatrixLine(v *state.Verify, mx *nvbwMatrix, tc, l string) error {
	f := strings.Fields(l)
	if !mx.headerSeen {
		for _, s := range f {
			c, err := strconv.Atoi(s)
			if err != nil || c < 0 || c > 4096 {
				return fmt.Errorf("matrix %q: column header %q is not a device number", mx.title, s)
			}
			mx.cols = append(mx.cols, c)
		}
		if len(mx.cols) == 0 || len(mx.cols) > 4096 {
			return fmt.Errorf("matrix %q: empty column header", mx.title)
		}
		mx.headerSeen = true
		return nil
	}
	row, err := strconv.Atoi(f[0])
	if err != nil || row < 0 || row > 4096 {
		return fmt.Errorf("matrix %q: row %q does not start with a device number", mx.title, l)
	}
	if len(f)-1 != len(mx.cols) {
		return fmt.Errorf("matrix %q: row %d has %d values for %d columns", mx.title, row, len(f)-1, len(mx.cols))
	}
	kind, ok := nvbwKind[tc]
	if !ok || mx.label != "" {
		kind = state.MeasureFigure
	}
	unit := mx.unit
	if unit == "GB/s" || kind != state.MeasureFigure {
		unit = "GB/s"
	}
	p := tc
	if mx.label != "" {
		p += " " + mx.label
	}
	for i, s := range f[1:] {
		if s == "N/A" {
			continue
		}
		val, err := strconv.ParseFloat(s, 64)
		if err != nil || val < 0 || val != val {
			return fmt.Errorf("matrix %q: row %d column %d: %q is not a figure", mx.title, row, mx.cols[i], s)
		}
		col := mx.cols[i]
		m := state.Measurement{Kind: kind, GPU: col, Peer: -1, Path: p, Value: val, Unit: unit}
		switch {
		case mx.rowGPU && mx.colGPU && mx.dir == "<-":
			m.GPU, m.Peer = col, row
		case mx.rowGPU && mx.colGPU:
			m.GPU, m.Peer = row, col
		case mx.rowGPU:
			m.GPU = row
		}
		v.Measurements = append(v.Measurements, m)
	}
	return nil
}
