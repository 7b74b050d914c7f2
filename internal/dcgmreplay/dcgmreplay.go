// Package dcgmreplay reads DCGM's PCIe replay limit per lane and minute out
// of the pinned excerpt of NVIDIA/DCGM's modules/health/DcgmHealthWatch.cpp
// (third_party/dcgm/: DcgmHealthWatch::GetExpectedPcieReplayRate, verbatim,
// with its SOURCE). It is shared by the generator (tools/dcgmgen), which
// writes check/dcgmreplay.go, and by check's test, which regenerates that
// file in memory and compares it byte for byte.
//
// The parser knows the function's shape and nothing looser: each row of
// pcieGenReplayRatePerLane is "RATE / 1000 * 60" with its comment "GenN
// speed = RATE Gbps, (1x10^-12) * (RATEx10^9) * 60 = VALUE errors/min per
// lane.", and the function caps the generation at the table's last and
// takes the ceiling of rate × lanes. A row or line of another shape, or a
// row whose expression and comment disagree, is an error: DCGM changed the
// rule, and someone must read the new source before gpuprobe follows it.
package dcgmreplay

import (
	"bytes"
	"fmt"
	"go/format"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Source is the pinned excerpt and SourceNote its SOURCE file (repository,
// path, commit, line ranges), relative to the repository root.
const (
	Source     = "third_party/dcgm/DcgmHealthWatch.cpp.excerpt"
	SourceNote = "third_party/dcgm/SOURCE"
)

// Gen is one row of DCGM's table.
type Gen struct {
	Gen     int     // 1 for the first row, and so on
	Rate    float64 // the transfer rate, GT/s (DCGM's comment says Gbps)
	RateSrc string  // the rate as the row's expression spells it
	Divisor int     // 1000: DCGM's 1e-12 bit error rate × 1e9
	Seconds int     // 60
	// PerLanePerMinute is the row's expression, Rate / Divisor * Seconds,
	// evaluated left to right in float64 as the C++ evaluates it in double.
	PerLanePerMinute float64
	Stated           string // the result the row's comment states
}

const num = `(\d+(?:\.\d+)?)`

var (
	signature = "dcgmReturn_t DcgmHealthWatch::GetExpectedPcieReplayRate("
	tableOpen = "static double pcieGenReplayRatePerLane[] = {"
	// note is DCGM's comment on the table (its spelling, "simpliefied").
	note = regexp.MustCompile(`Note that \(\(10\^(-\d+)\) \* 10\^(\d+)\) is simpl\w+ as 10\^(-\d+) i\.e\. \( divide by (\d+)\) in following table\.`)
	row  = regexp.MustCompile(`^` + num + ` / (\d+) \* (\d+),? +/\* Gen(\d+) speed = ` + num + ` Gbps, \(1x10\^(-\d+)\) \* \(` + num +
		`x10\^(\d+)\) \* (\d+) = ` + num + ` errors/min per lane\. \*/$`)
	// rule is the rest of the function gpuprobe's pcieReplayLimit follows:
	// a generation past the table takes its last row; the limit is the
	// per-lane rate times the lanes, rounded up.
	rule = []string{
		"unsigned int pcieGenMax = (sizeof(pcieGenReplayRatePerLane) / sizeof(pcieGenReplayRatePerLane[0]));",
		"if (pcieGen > pcieGenMax)",
		"pcieGen = pcieGenMax;",
		"expectedPcieReplayRate = std::ceil(pcieGenReplayRatePerLane[pcieGen - 1] * pcieLanes);",
	}
)

// Parse reads the table out of the excerpt's text.
func Parse(text string) ([]Gen, error) {
	if !strings.Contains(text, signature) {
		return nil, fmt.Errorf("no %q in the excerpt", signature)
	}
	lines := strings.Split(text, "\n")
	have := map[string]bool{}
	for _, l := range lines {
		have[strings.TrimSpace(l)] = true
	}
	for _, r := range rule {
		if !have[r] {
			return nil, fmt.Errorf("the function no longer has the line %q: read the new source before regenerating", r)
		}
	}
	m := note.FindStringSubmatch(text)
	if m == nil {
		return nil, fmt.Errorf("no note on the table of the shape %q", note)
	}
	berExp, _ := strconv.Atoi(m[1])
	unitExp, _ := strconv.Atoi(m[2])
	sumExp, _ := strconv.Atoi(m[3])
	divisor, _ := strconv.Atoi(m[4])
	if berExp+unitExp != sumExp || float64(divisor) != math.Pow10(-sumExp) {
		return nil, fmt.Errorf("the note's arithmetic does not hold: (10^%d) * 10^%d as 10^%d, divide by %d", berExp, unitExp, sumExp, divisor)
	}
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == tableOpen {
			if start >= 0 {
				return nil, fmt.Errorf("two tables %q", tableOpen)
			}
			start = i + 1
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("no line %q", tableOpen)
	}
	var gens []Gen
	for i := start; ; i++ {
		if i == len(lines) {
			return nil, fmt.Errorf("the table that opens on line %d does not close", start)
		}
		l := strings.TrimSpace(lines[i])
		if l == "};" {
			break
		}
		g, err := parseRow(l, berExp, unitExp, divisor)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		if g.Gen != len(gens)+1 {
			return nil, fmt.Errorf("line %d: Gen%d where Gen%d was due", i+1, g.Gen, len(gens)+1)
		}
		gens = append(gens, g)
	}
	if len(gens) == 0 {
		return nil, fmt.Errorf("the table has no rows")
	}
	return gens, nil
}

func parseRow(l string, berExp, unitExp, divisor int) (Gen, error) {
	m := row.FindStringSubmatch(l)
	if m == nil {
		return Gen{}, fmt.Errorf("row %q is not of the shape %q", l, row)
	}
	var g Gen
	var f [10]float64
	var n [10]int
	for j := 1; j <= 10; j++ {
		v, err := strconv.ParseFloat(m[j], 64)
		if err != nil {
			return Gen{}, fmt.Errorf("row %q: %v", l, err)
		}
		f[j-1] = v
		n[j-1], _ = strconv.Atoi(m[j])
	}
	g.RateSrc, g.Rate, g.Divisor, g.Seconds, g.Gen, g.Stated = m[1], f[0], n[1], n[2], n[3], m[10]
	switch {
	case f[4] != g.Rate || f[6] != g.Rate:
		return Gen{}, fmt.Errorf("row %q: the expression's rate %s and the comment's %s, %s differ", l, m[1], m[5], m[7])
	case g.Divisor != divisor:
		return Gen{}, fmt.Errorf("row %q: divides by %d, the note by %d", l, g.Divisor, divisor)
	case n[5] != berExp || n[7] != unitExp:
		return Gen{}, fmt.Errorf("row %q: 10^%d and 10^%d, the note 10^%d and 10^%d", l, n[5], n[7], berExp, unitExp)
	case g.Seconds != 60 || n[8] != 60:
		return Gen{}, fmt.Errorf("row %q: %d and %d seconds, not a minute", l, g.Seconds, n[8])
	}
	v := g.Rate
	v /= float64(g.Divisor)
	v *= float64(g.Seconds)
	g.PerLanePerMinute = v
	if v != f[9] {
		return Gen{}, fmt.Errorf("row %q: the expression gives %v, the comment says %s", l, v, m[10])
	}
	return g, nil
}

// commitLine is SOURCE's commit line.
var commitLine = regexp.MustCompile(`(?m)^commit: +([0-9a-f]{40})$`)

// Go is check/dcgmreplay.go as tools/dcgmgen writes it from the excerpt and
// its SOURCE (for the commit the comment cites).
func Go(excerpt, source string) ([]byte, error) {
	gens, err := Parse(excerpt)
	if err != nil {
		return nil, err
	}
	c := commitLine.FindStringSubmatch(source)
	if c == nil {
		return nil, fmt.Errorf("%s has no line \"commit: <40 hex digits>\"", SourceNote)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `// Code generated by tools/dcgmgen from %s; DO NOT EDIT.

package check

// dcgmReplayPerLanePerMinute is DCGM's PCIe replay limit per lane and
// minute for Gen1..Gen%d: pcieGenReplayRatePerLane of
// DcgmHealthWatch::GetExpectedPcieReplayRate (NVIDIA/DCGM
// modules/health/DcgmHealthWatch.cpp at commit %s,
// pinned in third_party/dcgm/), a bit error rate of 1e-12 at the
// generation's transfer rate over 60 s. Each value is DCGM's expression
// evaluated in float64 as the C++ evaluates it in double; pcieReplayLimit
// multiplies it by the lanes and rounds up, and judges a later generation
// by the last row, as the function does.
var dcgmReplayPerLanePerMinute = [...]float64{
`, Source, len(gens), c[1])
	for _, g := range gens {
		fmt.Fprintf(&b, "\t%s, // Gen%d: %s / %d * %d (%s GT/s)\n", strconv.FormatFloat(g.PerLanePerMinute, 'g', -1, 64),
			g.Gen, g.RateSrc, g.Divisor, g.Seconds, strconv.FormatFloat(g.Rate, 'g', -1, 64))
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
