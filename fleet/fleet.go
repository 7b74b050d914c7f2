// Package fleet reads the JSON reports of many 'gpuprobe check --format
// json' runs (concatenated, with or without srun --label prefixes) and
// prints one table of nodes × failing checks, worst first: what 'gpuprobe
// summarize' shows after a health check across a partition.
package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/report"
)

// Row is one node's report as the table needs it: the node's name as the
// table shows it (with srun's task label when there was one), its status,
// its GPU count, and each check's status (its summary only where it failed
// or errored). Every string is cleaned (safetext) before it is kept. A row
// holds a few hundred bytes whatever the size of the report it came from:
// what summarize holds grows with the number of nodes, never with the size
// of its input (it held 9.5x its input: 1.2 GB of reports ran the node out
// of memory, issue 32).
type Row struct {
	Name      string
	Status    check.Status
	GPUs      int
	Simulated bool
	// cells are the report's checks in its order, as indices into strs.
	cells    []checkCell
	failures []failure
	strs     *interned
	// drain is what a --slurm-drain run did (its reason parsed with the
	// drain reason grammar, check.ParseReason); nil when it set no drain.
	drain *drainCell
	// hang is the report's perf.hang verdict (job --hang), whatever its
	// status: PrintHang reads it across the allocation. nil otherwise.
	hang *check.Result
}

// checkCell is one check of a row: its ID and its status, interned.
type checkCell struct{ id, status uint32 }

// failure is a failed or errored check, printed in full under the table.
type failure struct {
	id, status uint32
	summary    string
}

// interned holds each distinct check ID and status once for all the rows
// of one summarize: a fleet's reports repeat the same few dozen.
type interned struct {
	index map[string]uint32
	list  []string
}

func (t *interned) id(s string) (uint32, int) {
	if i, ok := t.index[s]; ok {
		return i, 0
	}
	i := uint32(len(t.list))
	t.index[s] = i
	t.list = append(t.list, s)
	return i, len(s) + 48 // the string, the map entry and the list's slot
}

// splitLabel splits srun --label's "12: " off a line: what the regular
// expression ^\s*(\d+): ?(.*)$ matches (leading spaces, tabs, CR, FF; ASCII
// digits; a colon; one optional space), without running a regular
// expression over lines of up to 16 MiB.
func splitLabel(raw []byte) (label, rest []byte, ok bool) {
	i := 0
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\f' || raw[i] == '\r') {
		i++
	}
	j := i
	for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
		j++
	}
	if j == i || j == len(raw) || raw[j] != ':' {
		return nil, nil, false
	}
	k := j + 1
	if k < len(raw) && raw[k] == ' ' {
		k++
	}
	return raw[i:j], raw[k:], true
}

// Bounds of one summarize. The input itself is not bounded: it is read a
// line at a time and decoded a report at a time, and only each report's row
// is kept.
const (
	// MaxLine bounds one line of input (a report is a few KiB per line at
	// most, even unindented).
	MaxLine = 16 << 20
	// MaxReport bounds one report (one JSON document, over however many
	// lines): a report is some KiB; a document still open after 16 MiB
	// costs that document, not the rest.
	MaxReport = 16 << 20
	// MaxPending bounds the reports being read at once, all srun tasks
	// together: interleaved tasks each have one report open.
	MaxPending = 64 << 20
	// MaxRetained bounds what the rows (and the problems met) hold, all
	// inputs together: a row is a few hundred bytes, so this is several
	// hundred thousand nodes.
	MaxRetained = 128 << 20
)

// Budget is what the inputs of one summarize share: the bytes the rows
// may still take, and the interned check IDs and statuses.
type Budget struct {
	Left int64
	strs interned
}

// NewBudget is a budget of MaxRetained bytes.
func NewBudget() *Budget {
	return &Budget{Left: MaxRetained, strs: interned{index: map[string]uint32{}}}
}

// take spends n bytes of the budget; false once it is spent.
func (b *Budget) take(n int) bool {
	b.Left -= int64(n)
	return b.Left >= 0
}

// Read reads one input within a budget of its own.
func Read(r io.Reader, name string) ([]Row, []string, error) {
	return ReadBudget(r, name, NewBudget())
}

// errNeedMore ends a decode that ran out of the bytes read so far.
var errNeedMore = errors.New("need more input")

// pendingReader hands a decoder the bytes of a task's stream read so far,
// then errNeedMore (io.EOF once the input has ended). The decoder stops at
// the first syntax error among the bytes it has, so a document decodes to
// the same value, or fails with the same error, as when the whole input was
// held at once.
type pendingReader struct {
	data []byte
	eof  bool
}

func (p *pendingReader) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		if p.eof {
			return 0, io.EOF
		}
		return 0, errNeedMore
	}
	n := copy(b, p.data)
	p.data = p.data[n:]
	return n, nil
}

// task is one srun task's stream (the whole input when unlabelled): its
// bytes from the start of the report being read, and its rows and problems
// in order.
type task struct {
	label    string // srun's task number; "" unlabelled
	where    string
	buf      []byte
	k        int  // reports met, for "report #k"
	skipping bool // after a torn report: looking for a line that starts one
	skipFrom int  // where in buf to look for "\n{"
	retry    int  // len(buf) at which to try decoding again
	rows     []Row
	problems []string
}

// reader is one input being read.
type reader struct {
	name    string
	b       *Budget
	pending int // bytes in every task's buf
	reports int
}

// ReadBudget splits srun --label output by task (its lines interleave) and
// decodes each task's concatenated JSON documents one at a time as their
// lines arrive, keeping a row per report. A torn document costs that
// document, not the rest: decoding resumes at the next line that starts a
// new one. Rows and problems come in the order they did when the whole
// input was held and decoded at once (task by task).
//
// The rows of all inputs share b; when it is spent, or when the reports
// open at once exceed MaxPending, it fails with an error naming the input
// and the limit.
func ReadBudget(r io.Reader, name string, b *Budget) ([]Row, []string, error) {
	rd := &reader{name: name, b: b}
	tasks := map[string]*task{}
	var order []*task
	var problems []string
	br := bufio.NewReaderSize(r, 64<<10)
	for lineNo := 1; ; lineNo++ {
		raw, tooLong, err := readLine(br, MaxLine)
		if err == io.EOF && raw == nil && !tooLong {
			break
		}
		if err != nil && err != io.EOF {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if tooLong {
			// One runaway line costs that line (and the report it was
			// part of), never the rest of the fleet's reports.
			p := fmt.Sprintf("%s line %d: longer than %s, skipped", name, lineNo, readlimit.Human(MaxLine))
			if !b.take(len(p) + 16) {
				return nil, nil, rd.overBudget()
			}
			problems = append(problems, p)
			continue
		}
		line, label := raw, ""
		if l, rest, ok := splitLabel(raw); ok {
			label, line = string(l), rest
		}
		t, ok := tasks[label]
		if !ok {
			t = &task{label: label, where: name}
			if label != "" {
				t.where += " task " + label
			}
			tasks[label] = t
			order = append(order, t)
		}
		t.buf = append(t.buf, line...)
		t.buf = append(t.buf, '\n')
		rd.pending += len(line) + 1
		// A line that closes a document at its first column (indented
		// output) or is one whole document (compact output) is worth a
		// decode at once; otherwise one is tried when the bytes waiting
		// have doubled, so a report is decoded O(1) times.
		ends := len(line) > 0 && (line[0] == '}' || line[0] == '{' && line[len(line)-1] == '}')
		if err := rd.decode(t, false, ends); err != nil {
			return nil, nil, err
		}
		if rd.pending > MaxPending {
			return nil, nil, fmt.Errorf("%s: over the size limit: more than %s of unfinished reports at once (%d tasks)", name, readlimit.Human(MaxPending), len(order))
		}
		if err == io.EOF {
			break
		}
	}
	var rows []Row
	for _, t := range order {
		if err := rd.decode(t, true, true); err != nil {
			return nil, nil, err
		}
	}
	if len(order) == 1 {
		// Unlabelled input: its rows as they are, not copied.
		rows = order[0].rows
	}
	for _, t := range order {
		if len(order) > 1 {
			rows = append(rows, t.rows...)
		}
		problems = append(problems, t.problems...)
	}
	return rows, problems, nil
}

func (rd *reader) overBudget() error {
	return fmt.Errorf("%s: over the size limit: the rows of %d reports take more than %s (summarize fewer reports at once)", rd.name, rd.reports, readlimit.Human(MaxRetained))
}

// consume drops the first n bytes of t's buffer.
func (rd *reader) consume(t *task, n int) {
	t.buf = t.buf[n:]
	rd.pending -= n
	if len(t.buf) == 0 {
		t.buf = nil // let a large buffer go
	}
}

// problem records a report that could not be read and starts looking for
// the next line that starts one (as a torn report is skipped).
func (rd *reader) problem(t *task, msg string) error {
	p := fmt.Sprintf("%s: unreadable report #%d: %s", t.where, t.k+1, msg)
	if !rd.b.take(len(p) + 16) {
		return rd.overBudget()
	}
	t.problems = append(t.problems, p)
	t.k++
	t.skipping, t.skipFrom = true, 1
	return nil
}

// decode decodes every whole report in t's buffer. eof: the input has
// ended. now: try even if the buffer has not doubled since the last try.
func (rd *reader) decode(t *task, eof, now bool) error {
	for {
		if t.skipping {
			// The next document starts at the next line that starts with
			// '{' after the first byte of the torn one.
			i := bytes.Index(t.buf[t.skipFrom:], []byte("\n{"))
			if i < 0 {
				if eof {
					rd.consume(t, len(t.buf))
					return nil
				}
				// Keep the last byte: it may be the "\n" of a "\n{".
				if keep := len(t.buf) - 1; keep >= t.skipFrom {
					rd.consume(t, keep)
					t.skipFrom = 0
				}
				return nil
			}
			rd.consume(t, t.skipFrom+i+1)
			t.skipping, t.retry = false, 0
			continue
		}
		if len(bytes.TrimSpace(t.buf)) == 0 {
			// Whitespace between documents: keep its last two bytes, all
			// that can matter (whether a torn document after it is
			// found again from the line it starts on).
			if len(t.buf) > 2 {
				rd.consume(t, len(t.buf)-2)
			}
			return nil
		}
		if !eof && !now && len(t.buf) < t.retry {
			return nil
		}
		now = false
		dec := json.NewDecoder(&pendingReader{data: t.buf, eof: eof})
		var d report.Document
		err := dec.Decode(&d)
		if errors.Is(err, errNeedMore) {
			if len(t.buf) > MaxReport {
				return rd.problem(t, fmt.Sprintf("longer than %s, skipped", readlimit.Human(MaxReport)))
			}
			t.retry = max(2*len(t.buf), len(t.buf)+4<<10)
			return nil
		}
		if err == nil && d.SchemaVersion == 0 {
			err = fmt.Errorf("not a gpuprobe report (no schema_version)")
		}
		if err != nil {
			if err := rd.problem(t, err.Error()); err != nil {
				return err
			}
			continue
		}
		rd.consume(t, int(dec.InputOffset()))
		t.k++
		t.retry = 0
		row, size := rd.row(&d, t.label)
		if !rd.b.take(size) {
			return rd.overBudget()
		}
		t.rows = append(t.rows, row)
		rd.reports++
	}
}

// row keeps what the table needs of a report, every string cleaned, and
// what it costs in bytes.
func (rd *reader) row(d *report.Document, label string) (Row, int) {
	c := safetext.Clean
	d.Host, d.SimulateSpec = c(d.Host), c(d.SimulateSpec)
	strs := &rd.b.strs
	row := Row{Name: d.NodeName(), Status: check.Status(c(string(d.Status))), GPUs: d.GPUs, Simulated: d.Simulated, strs: strs}
	if label != "" {
		row.Name += " [" + label + "]"
	}
	size := 96 + len(row.Name) + len(row.Status)
	row.cells = make([]checkCell, len(d.Checks))
	size += 8 * len(d.Checks)
	for i := range d.Checks {
		r := &d.Checks[i]
		id, n := strs.id(c(r.ID))
		st, m := strs.id(c(string(r.Status)))
		row.cells[i] = checkCell{id, st}
		size += n + m
		if r.ID == "perf.hang" {
			row.hang = &check.Result{ID: r.ID, Status: check.Status(strs.list[st]), Summary: c(r.Summary)}
			size += 48 + len(row.hang.Summary)
		}
		if s := check.Status(strs.list[st]); s == check.Fail || s == check.Error {
			f := failure{id: id, status: st, summary: c(r.Summary)}
			row.failures = append(row.failures, f)
			size += 32 + len(f.summary)
		}
	}
	if dd := d.Drain; dd != nil && dd.Action == check.DrainSet { // a suppressed drain keeps its action
		row.drain = drainOf(c(dd.Reason), dd.Breaker != nil && dd.Breaker.Suppressed)
	}
	if row.drain != nil {
		size += 64 + len(row.drain.reason)
	}
	return row, size
}

// drainCell is one node's drain in a summarize: the reason as set, and its
// check and class as the grammar reads them ("" when it does not parse).
type drainCell struct {
	reason, check string
	class         check.Class
	suppressed    bool
}

func drainOf(reason string, suppressed bool) *drainCell {
	d := &drainCell{reason: reason, suppressed: suppressed}
	if r, err := check.ParseReason(reason); err == nil {
		d.check, d.class = r.Check, r.Class
		if r.Legacy {
			d.class = check.ClassOf(r.Check)
		}
	}
	return d
}

// printDrains lists the drains the runs set (or the breaker held back), with
// a count per class: who must act (docs/slurm.md, the reason grammar).
func printDrains(w io.Writer, rows []Row) {
	byClass := map[check.Class]int{}
	held := 0
	for _, r := range rows {
		d := r.drain
		if d == nil {
			continue
		}
		what := "drained"
		if d.suppressed {
			what = "not drained (circuit breaker)"
			held++
		} else {
			byClass[d.class]++
		}
		class := string(d.class)
		if d.check == "" {
			class = "reason not in gpuprobe's grammar"
		}
		fmt.Fprintf(w, "  %s: %s [%s] %s\n", r.Name, what, class, d.reason)
	}
	var parts []string
	for _, c := range []check.Class{check.ClassNode, check.ClassConfig, check.ClassTransient, ""} {
		if byClass[c] > 0 {
			name := string(c)
			if c == "" {
				name = "unparsed"
			}
			parts = append(parts, fmt.Sprintf("%d %s", byClass[c], name))
		}
	}
	if held > 0 {
		parts = append(parts, fmt.Sprintf("%d held back by the breaker", held))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "drains: %s\n", strings.Join(parts, ", "))
	}
}

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

// id and status of a row's i-th check.
func (r *Row) check(i int) (id string, status check.Status) {
	c := r.cells[i]
	return r.strs.list[c.id], check.Status(r.strs.list[c.status])
}

// Print prints the nodes × checks table, worst node first, then the
// failures in full and the problems met reading, and reports whether the
// fleet failed: a node failed or errored, or a report was unreadable (a
// report lost is a node not known to be healthy).
func Print(w io.Writer, rows []Row, problems []string) (failed bool, err error) {
	// Columns: every check that is not fine somewhere, most failures first.
	bad := map[string]int{}
	for _, r := range rows {
		for i := range r.cells {
			if id, st := r.check(i); st != check.Pass && st != check.Skip {
				bad[id] += rank(st)
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
	nbad := func(r Row) int { return len(r.failures) }
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i].Status, rows[j].Status
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
		counts[r.Status]++
		status := strings.ToUpper(string(r.Status))
		if r.Simulated {
			status += "*"
			sim++
		}
		fmt.Fprintf(tw, "%s\t%s\t%d", r.Name, status, r.GPUs)
		for _, c := range cols {
			fmt.Fprint(tw, "\t"+cell(&r, c))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return false, fmt.Errorf("writing the fleet table: %w", err)
	}
	for _, r := range rows {
		for _, f := range r.failures {
			fmt.Fprintf(w, "  %s: %s %s: %s\n", r.Name, r.strs.list[f.status], r.strs.list[f.id], f.summary)
		}
	}
	for _, p := range problems {
		fmt.Fprintf(w, "  %s\n", safetext.Clean(p))
	}
	printDrains(w, rows)
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

// cell is a row's entry under check id: the first of its checks so named.
func cell(r *Row, id string) string {
	for i := range r.cells {
		if cid, st := r.check(i); cid == id {
			switch st {
			case check.Pass:
				return "ok"
			case check.Skip:
				return "-"
			case check.Warn:
				return "warn"
			}
			return strings.ToUpper(string(st))
		}
	}
	return "-"
}
