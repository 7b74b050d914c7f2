package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/safetext"
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

// WriteText prints the report a person reads in five seconds: a header, a
// line per check, what to do about each failure, and a closing count.
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
	fmt.Fprintf(&b, "gpuprobe check on %s — %d GPUs, driver %s, CUDA %s — %s\n",
		clean(d.Host), d.GPUs, clean(orNA(d.Driver)), clean(orNA(d.CUDA)), d.CollectedAt.Format("2006-01-02 15:04:05 MST"))
	for _, r := range d.Checks {
		tag := fmt.Sprintf("%-5s", strings.ToUpper(clean(string(r.Status))))
		fmt.Fprintf(&b, "  %s  %-22s %s\n", paint(statusColor(r.Status), tag), clean(r.ID), clean(r.Summary))
		if r.Status == check.Pass || r.Status == check.Skip {
			if !o.Verbose {
				continue
			}
		}
		if len(r.Details) > 1 || o.Verbose {
			for _, dl := range r.Details {
				fmt.Fprintf(&b, "         %-22s - %s\n", "", clean(dl))
			}
		}
		if r.Remedy != "" {
			fmt.Fprintf(&b, "         %-22s %s %s\n", "", paint(bold, "fix:"), clean(r.Remedy))
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
	_, err := io.WriteString(w, b.String())
	return err
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}
