package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/internal/safetext"
)

// TextOptions shape the human report.
type TextOptions struct {
	Color bool // ANSI colour: only on a TTY, never with NO_COLOR
	// Verbose prints every detail line, not just those of warn/fail/error.
	Verbose bool
}

const (
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	grey   = "\x1b[90m"
	bold   = "\x1b[1m"
	reset  = "\x1b[0m"
)

func statusColor(s check.Status) string {
	switch s {
	case check.Pass:
		return green
	case check.Warn:
		return yellow
	case check.Fail, check.Error:
		return red
	}
	return grey
}

// WriteText prints the report a person reads in five seconds: the header,
// then what is wrong (failures, errors, warnings, each with its evidence and
// fix), then the passes one line each, then the skips folded into one line
// grouped by reason, then the verdict. Verbose prints every check in
// catalogue order with every detail line.
func (d *Document) WriteText(w io.Writer, o TextOptions) error {
	paint := func(c, s string) string {
		if !o.Color {
			return s
		}
		return c + s + reset
	}
	// Results quote untrusted text (process and user names, a daemon's or a
	// snapshot's strings): escape control and bidi characters so none can
	// move the cursor, clear the screen or reorder what a reader sees.
	clean := safetext.Clean
	var b strings.Builder
	if d.Simulated {
		b.WriteString(paint(bold+yellow, "*** SIMULATED: "+clean(d.SimulateSpec)+" (go-nvml mock; not real hardware) ***") + "\n")
	}
	if d.Capture != "" {
		b.WriteString(paint(bold+yellow, "*** FROM A CAPTURE: "+clean(d.Capture)+"; not collected by gpuprobe, checks needing what it lacks skip ***") + "\n")
	}
	if d.Source != "" {
		b.WriteString("source: " + clean(d.Source) + "\n")
	}
	if d.JobPerf != nil {
		writeJobFigures(&b, d, clean)
	} else {
		scope := ""
		if d.Scope != "" {
			scope = " (only " + clean(d.Scope) + ")"
		}
		command := "check"
		if d.Verify != nil {
			command = "verify (" + clean(d.Verify.Tier) + ")"
		}
		if d.Verify != nil && d.Verify.File != "" {
			// A saved output judged with --from: no node, GPUs or driver of
			// this run to name.
			fmt.Fprintf(&b, "gpuprobe verify --from: a %s output (%s) — judged %s\n",
				clean(d.Verify.Source), clean(d.Verify.File), d.CollectedAt.Format("2006-01-02 15:04:05 MST"))
		} else {
			fmt.Fprintf(&b, "gpuprobe %s on %s — %d GPUs%s, driver %s, CUDA %s — %s\n",
				command, clean(d.NodeName()), d.GPUs, scope, clean(orNA(d.Driver)), clean(orNA(d.CUDA)), d.CollectedAt.Format("2006-01-02 15:04:05 MST"))
		}
	}
	line := func(r check.Result) {
		tag := fmt.Sprintf("%-5s", strings.ToUpper(clean(string(r.Status))))
		fmt.Fprintf(&b, "  %s  %-22s %s\n", paint(statusColor(r.Status), tag), clean(r.ID), clean(r.Summary))
		if (r.Status == check.Pass || r.Status == check.Skip) && !o.Verbose {
			return
		}
		if len(r.Details) > 1 || o.Verbose {
			for _, dl := range r.Details {
				if saidIn(r.Summary, dl) {
					continue // the summary line already says it: print each finding once
				}
				fmt.Fprintf(&b, "         %-22s - %s\n", "", clean(dl))
			}
		}
		if r.Remedy != "" {
			fmt.Fprintf(&b, "         %-22s %s %s\n", "", paint(bold, "fix:"), clean(r.Remedy))
		}
	}
	if o.Verbose {
		for _, r := range d.Checks {
			line(r)
		}
	} else {
		// What needs a person first, worst first; catalogue order within a status.
		for _, s := range []check.Status{check.Fail, check.Error, check.Warn, check.Pass} {
			for _, r := range d.Checks {
				if r.Status == s {
					line(r)
				}
			}
		}
		if folded := clean(foldSkips(d.Checks)); folded != "" {
			fmt.Fprintf(&b, "  %s  %s\n", paint(grey, "SKIP "), folded)
		}
	}
	var parts []string
	for _, s := range []check.Status{check.Fail, check.Error, check.Warn, check.Pass, check.Skip} {
		if n := d.Counts[string(s)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	verdict := strings.ToUpper(string(d.Status))
	if d.Strict {
		verdict += " (strict)"
	}
	fmt.Fprintf(&b, "%s: %s in %.2fs", paint(bold+statusColor(d.Status), verdict), strings.Join(parts, ", "), d.ElapsedSeconds)
	if d.Simulated {
		b.WriteString(" " + paint(yellow, "[SIMULATED]"))
	}
	b.WriteString("\n")
	if dr := d.Drain; dr != nil {
		switch {
		case dr.Breaker != nil && dr.Breaker.Suppressed:
			fmt.Fprintf(&b, "%s %s — %s\n", paint(bold+yellow, "drain: SUPPRESSED by the circuit breaker:"), clean(dr.Reason), clean(dr.Breaker.Why))
		case dr.Reason != "":
			fmt.Fprintf(&b, "drain: %s %s — %s\n", clean(string(dr.Action)), clean(dr.Reason), clean(dr.Why))
		default:
			fmt.Fprintf(&b, "drain: %s — %s\n", clean(string(dr.Action)), clean(dr.Why))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// foldSkips is the one line the skips become: "13 skipped (-v lists them): not inside a job
// step (9), no slurm.conf at /etc/slurm/slurm.conf (2), ...".
// A skip's reason is its summary without the parenthetical evidence, so
// skips that differ only in the evidence (which variable was unset) group.
// Reasons are listed most frequent first, then in catalogue order.
func foldSkips(rs []check.Result) string {
	type group struct {
		reason string
		n      int
	}
	var groups []*group
	byReason := map[string]*group{}
	total := 0
	for _, r := range rs {
		if r.Status != check.Skip {
			continue
		}
		total++
		reason := skipReason(r.Summary)
		g := byReason[reason]
		if g == nil {
			g = &group{reason: reason}
			byReason[reason] = g
			groups = append(groups, g)
		}
		g.n++
	}
	if total == 0 {
		return ""
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].n > groups[j].n })
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprintf("%s (%d)", g.reason, g.n)
	}
	return fmt.Sprintf("%d skipped (-v lists them): %s", total, strings.Join(parts, ", "))
}

func skipReason(summary string) string {
	if i := strings.Index(summary, " ("); i > 0 {
		summary = summary[:i]
	}
	if summary == "" {
		return "no reason given"
	}
	return summary
}

// NodeName is the node as reports name it: its host name, with the
// simulated model beside it for a simulated run, so rows from different
// nodes stay apart and a simulated one never passes for real hardware.
func (d *Document) NodeName() string {
	if !d.Simulated {
		return d.Host
	}
	return fmt.Sprintf("%s (simulated %s)", d.Host, d.SimulatedModel())
}

// SimulatedModel is the model of the simulate spec ("dgx-h100" of
// "dgx-h100:gpu-lost=5"); empty for real hardware.
func (d *Document) SimulatedModel() string {
	if !d.Simulated {
		return ""
	}
	model, _, _ := strings.Cut(d.SimulateSpec, ":")
	if model == "" {
		return "unknown model"
	}
	return model
}

// saidIn reports whether a detail line is already the summary or one of the
// findings the summary joins with "; " (check/result.go summarize), so the
// text report does not print the same finding twice.
func saidIn(summary, detail string) bool {
	if detail == "" {
		return true
	}
	return summary == detail ||
		strings.HasPrefix(summary, detail+"; ") ||
		strings.HasSuffix(summary, "; "+detail) ||
		strings.Contains(summary, "; "+detail+"; ")
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}
