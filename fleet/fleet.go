// Package fleet reads the JSON reports of many 'gpuprobe check --format
// json' runs (concatenated, with or without srun --label prefixes) and
// prints one table of nodes × failing checks, worst first: what 'gpuprobe
// summarize' shows after a health check across a partition.
package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/report"
)

// Row is one node's report: the node's name as the table shows it (with
// srun's task label when there was one) and its document, cleaned.
type Row struct {
	Name string
	Doc  *report.Document
}

var labelRe = regexp.MustCompile(`^\s*(\d+): ?(.*)$`)

// MaxInput bounds what one summarize reads, all inputs together: a report
// is a few KiB, so 64 MiB is over ten thousand nodes' reports, and what
// summarize holds stays some hundreds of MiB (it held 9.5x an unbounded
// input: 1.2 GB of reports ran the node out of memory).
const MaxInput = 64 << 20

// Budget is the bytes left to read across the inputs of one summarize.
type Budget struct{ Left int64 }

// NewBudget is a budget of MaxInput bytes.
func NewBudget() *Budget { return &Budget{Left: MaxInput} }

// budgetReader fails once the budget is spent (ReadBudget names the input).
type budgetReader struct {
	r io.Reader
	b *Budget
}

func (br *budgetReader) Read(p []byte) (int, error) {
	if br.b.Left < 0 {
		return 0, fmt.Errorf("over the size limit: the inputs together are more than %s (summarize fewer reports at once)", readlimit.Human(MaxInput))
	}
	if int64(len(p)) > br.b.Left+1 {
		p = p[:br.b.Left+1]
	}
	n, err := br.r.Read(p)
	br.b.Left -= int64(n)
	if br.b.Left < 0 {
		return 0, fmt.Errorf("over the size limit: the inputs together are more than %s (summarize fewer reports at once)", readlimit.Human(MaxInput))
	}
	return n, err
}

// Read reads one input within a budget of its own (MaxInput).
func Read(r io.Reader, name string) ([]Row, []string, error) {
	return ReadBudget(r, name, NewBudget())
}

// ReadBudget splits srun --label output by task (its lines interleave) and
// decodes each task's concatenated JSON documents. A torn document costs
// that document, not the rest: decoding resumes at the next line that
// starts a new one.
//
// It reads at most b's bytes (shared by the inputs of one summarize), then
// fails with an error naming the input and the limit.
func ReadBudget(r io.Reader, name string, b *Budget) ([]Row, []string, error) {
	streams := map[string]*bytes.Buffer{}
	var order []string
	var problems []string
	br := bufio.NewReaderSize(&budgetReader{r: r, b: b}, 64<<10)
	for lineNo := 1; ; lineNo++ {
		raw, tooLong, err := readLine(br, MaxLine)
		if err == io.EOF && raw == nil {
			break
		}
		if err != nil && err != io.EOF {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if tooLong {
			// One runaway line costs that line (and the report it was
			// part of), never the rest of the fleet's reports.
			problems = append(problems, fmt.Sprintf("%s line %d: longer than %s, skipped", name, lineNo, readlimit.Human(MaxLine)))
			continue
		}
		line, label := string(raw), ""
		if m := labelRe.FindStringSubmatch(line); m != nil {
			label, line = m[1], m[2]
		}
		b, ok := streams[label]
		if !ok {
			b = &bytes.Buffer{}
			streams[label] = b
			order = append(order, label)
		}
		b.WriteString(line)
		b.WriteByte('\n')
		if err == io.EOF {
			break
		}
	}
	var rows []Row
	for _, label := range order {
		data := streams[label].Bytes()
		where := name
		if label != "" {
			where += " task " + label
		}
		for off, k := 0, 0; off < len(data); k++ {
			rest := data[off:]
			if len(bytes.TrimSpace(rest)) == 0 {
				break
			}
			dec := json.NewDecoder(bytes.NewReader(rest))
			var d report.Document
			err := dec.Decode(&d)
			if err == nil && d.SchemaVersion == 0 {
				err = fmt.Errorf("not a gpuprobe report (no schema_version)")
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: unreadable report #%d: %v", where, k+1, err))
				next := bytes.Index(rest[1:], []byte("\n{"))
				if next < 0 {
					break
				}
				off += next + 2
				continue
			}
			off += int(dec.InputOffset())
			cleanDoc(&d)
			// The node's own name, with the simulated model beside it.
			rows = append(rows, Row{Name: d.NodeName(), Doc: &d})
			if label != "" {
				rows[len(rows)-1].Name += " [" + label + "]"
			}
		}
	}
	return rows, problems, nil
}

// MaxLine bounds one line of input (a report is a few KiB per line
// at most, even unindented).
const MaxLine = 16 << 20

// readLine returns the next line without its newline. A line longer than max
// is read to its end and dropped (tooLong), so memory stays bounded.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(bytes.TrimSuffix(chunk, []byte("\n"))) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			if len(line) == 0 && !tooLong {
				return nil, false, err
			}
			return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, nil
	}
}

// cleanDoc escapes control and bidi characters in every string of a report
// read from outside before any of it reaches a terminal.
func cleanDoc(d *report.Document) {
	c := safetext.Clean
	d.Host, d.SimulateSpec, d.Driver, d.CUDA = c(d.Host), c(d.SimulateSpec), c(d.Driver), c(d.CUDA)
	d.Status = check.Status(c(string(d.Status)))
	for i := range d.Checks {
		r := &d.Checks[i]
		r.ID, r.Summary, r.Remedy, r.Status = c(r.ID), c(r.Summary), c(r.Remedy), check.Status(c(string(r.Status)))
		for k := range r.Details {
			r.Details[k] = c(r.Details[k])
		}
	}
}

// Print prints the nodes × checks table, worst node first, then the
// failures in full and the problems met reading, and reports whether the
// fleet failed: a node failed or errored, or a report was unreadable (a
// report lost is a node not known to be healthy).
func Print(w io.Writer, rows []Row, problems []string) (failed bool, err error) {
	// Columns: every check that is not fine somewhere, most failures first.
	bad := map[string]int{}
	for _, r := range rows {
		for _, res := range r.Doc.Checks {
			if res.Status != check.Pass && res.Status != check.Skip {
				bad[res.ID] += rank(res.Status)
			}
		}
	}
	cols := make([]string, 0, len(bad))
	for id := range bad {
		cols = append(cols, id)
	}
	sort.Slice(cols, func(i, j int) bool {
		if bad[cols[i]] != bad[cols[j]] {
			return bad[cols[i]] > bad[cols[j]]
		}
		return cols[i] < cols[j]
	})
	nbad := func(r Row) int {
		n := 0
		for _, res := range r.Doc.Checks {
			if res.Status == check.Fail || res.Status == check.Error {
				n++
			}
		}
		return n
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i].Doc.Status, rows[j].Doc.Status
		if a != b {
			return a.Worse(b)
		}
		if nbad(rows[i]) != nbad(rows[j]) {
			return nbad(rows[i]) > nbad(rows[j])
		}
		return rows[i].Name < rows[j].Name
	})

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "NODE\tSTATUS\tGPUS")
	for _, c := range cols {
		fmt.Fprint(tw, "\t"+c)
	}
	fmt.Fprintln(tw)
	counts := map[check.Status]int{}
	sim := 0
	for _, r := range rows {
		counts[r.Doc.Status]++
		status := strings.ToUpper(string(r.Doc.Status))
		if r.Doc.Simulated {
			status += "*"
			sim++
		}
		fmt.Fprintf(tw, "%s\t%s\t%d", r.Name, status, r.Doc.GPUs)
		for _, c := range cols {
			fmt.Fprint(tw, "\t"+cell(r.Doc, c))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return false, fmt.Errorf("writing the fleet table: %w", err)
	}
	for _, r := range rows {
		for _, res := range r.Doc.Checks {
			if res.Status == check.Fail || res.Status == check.Error {
				fmt.Fprintf(w, "  %s: %s %s: %s\n", r.Name, res.Status, res.ID, res.Summary)
			}
		}
	}
	for _, p := range problems {
		fmt.Fprintf(w, "  %s\n", safetext.Clean(p))
	}
	PrintHang(w, rows)
	var parts []string
	for _, s := range []check.Status{check.Fail, check.Error, check.Warn, check.Pass} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	if len(problems) > 0 {
		parts = append(parts, fmt.Sprintf("%d unreadable", len(problems)))
	}
	fmt.Fprintf(w, "%d report(s): %s\n", len(rows), strings.Join(parts, ", "))
	if sim > 0 {
		fmt.Fprintf(w, "* %d report(s) from simulated runs (--simulate), not real hardware\n", sim)
	}
	return counts[check.Fail]+counts[check.Error]+len(problems) > 0, nil
}

func rank(s check.Status) int {
	switch s {
	case check.Fail:
		return 1000
	case check.Error:
		return 100
	case check.Warn:
		return 1
	}
	return 0
}

func cell(d *report.Document, id string) string {
	for _, r := range d.Checks {
		if r.ID == id {
			switch r.Status {
			case check.Pass:
				return "ok"
			case check.Skip:
				return "-"
			case check.Warn:
				return "warn"
			}
			return strings.ToUpper(string(r.Status))
		}
	}
	return "-"
}
