package ncclverdict

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gpuprobe/gpuprobe/internal/jsonindent"
)

// How much of each list the text report shows; the JSON has everything.
const (
	textFindings = 8
	textComms    = 12
)

// WriteText renders the verdict for a person: the verdict first, then the
// facts behind it, the errors and warnings with their line numbers, and a
// table of communicators.
func (v *Verdict) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, v.Summary)
	fmt.Fprintln(bw)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fact := func(k, val string) { fmt.Fprintf(tw, "  %s\t%s\n", k, val) }
	inter := v.InterNode
	if v.Evidence != nil {
		inter += "    " + evidenceText(v.Evidence)
	}
	fact("inter-node", inter)
	fb := "no"
	if v.TCPFallback {
		fb = "yes"
		if v.TCPFallbackReason != nil {
			fb += "    " + evidenceText(v.TCPFallbackReason)
		}
	}
	fact("tcp fallback", fb)
	gdr := "unknown"
	if v.GDR != nil {
		gdr = yesNo(*v.GDR)
	}
	if v.NetConnections > 0 {
		gdr += fmt.Sprintf("    (%d of %d inter-node connection lines with /GDRDMA)", v.GDRConnections, v.NetConnections)
	}
	fact("gdr", gdr)
	fact("network", v.NetSelected)
	fact("nccl", orDash(strings.Join(v.NCCLVersions, ", ")))
	size := "ranks " + optInt(v.NRanks)
	if v.NRanksInferred {
		size += " (inferred)"
	}
	size += "   nodes " + optInt(v.NNodes)
	if v.NNodesFrom != "" {
		size += " (" + v.NNodesFrom + ")"
	}
	size += fmt.Sprintf("   hosts %d", v.Hosts)
	fact("size", size)
	if v.Missing != "" && v.InterNode != InterUnknown {
		fact("note", v.Missing)
	}
	if v.Limits != "" {
		fact("limits", v.Limits)
	}
	tw.Flush()
	writeFindings(bw, "Errors", v.Errors)
	writeFindings(bw, "Warnings", v.Warnings)
	writeComms(bw, v.Communicators, v.CommunicatorsOmitted)
	s := v.Stats
	fmt.Fprintf(bw, "\nRead %d lines (%d NCCL records, %d duplicates dropped", s.Lines, s.Records, s.Duplicates)
	if s.TruncatedLines > 0 {
		fmt.Fprintf(bw, ", %d over-long lines cut at %d bytes", s.TruncatedLines, s.MaxLineBytes)
	}
	fmt.Fprintf(bw, ") from %d processes.\n", s.Processes)
	return bw.Flush()
}

// WriteJSON writes the verdict as indented JSON, the bytes json.Encoder
// with SetIndent("", "  ") writes. It runs on one core after the whole log
// is read, and a 512-rank job's verdict is 3 MB of peer tables: the
// Encoder's indenting pass made it 9% of the analyzer's wall time, and
// indenting into one 3 MB buffer still cost 11-18 ms of page faults in a
// fresh process, so the output streams through 64 KiB.
func (v *Verdict) WriteJSON(w io.Writer) error {
	return jsonindent.Encode(w, v, "  ")
}

func writeFindings(w io.Writer, title string, list []Finding) {
	if len(list) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s (%d):\n", title, len(list))
	for i, f := range list {
		if i == textFindings {
			fmt.Fprintf(w, "  … and %d more (see --format json)\n", len(list)-i)
			break
		}
		at := ""
		if len(f.Lines) > 0 {
			at = lineRef(f.Lines[0]) + ": "
		}
		extra := ""
		if f.Count > 1 {
			extra = fmt.Sprintf(" (×%d)", f.Count)
		}
		if f.Where != "" {
			extra += " [" + f.Where + "]"
		}
		fmt.Fprintf(w, "  %s%s%s\n", at, f.Message, extra)
		if f.Hint != "" {
			fmt.Fprintf(w, "      → %s\n", f.Hint)
		}
	}
}

func writeComms(w io.Writer, comms []CommSummary, omitted int) {
	if len(comms) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMUNICATOR\tRANKS\tSEEN\tHOSTS\tINTRA-NODE\tINTER-NODE\tGDR")
	for i, c := range comms {
		if i == textComms {
			fmt.Fprintf(tw, "… %d more\t\t\t\t\t\t\n", len(comms)-i+omitted)
			break
		}
		gdr := "-"
		if c.GDR != nil {
			gdr = yesNo(*c.GDR)
		}
		nr := "?"
		if c.NRanks > 0 {
			nr = fmt.Sprint(c.NRanks)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", c.ID, nr, c.RanksSeen, c.Hosts, counts(c.Intra), counts(c.Inter), gdr)
	}
	tw.Flush()
}

// counts renders {"P2P/IPC/read": 21} as "P2P/IPC/read×21", largest first.
func counts(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, 2)
	for i, k := range keys {
		if i == 2 {
			parts = append(parts, fmt.Sprintf("+%d", len(keys)-2))
			break
		}
		parts = append(parts, fmt.Sprintf("%s×%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func evidenceText(e *Evidence) string {
	s := lineRef(e.Location) + ": " + e.Text
	if e.Count > 1 {
		s += fmt.Sprintf(" (%d such lines)", e.Count)
	}
	return s
}

func lineRef(l Location) string {
	if l.Source != "" {
		return fmt.Sprintf("%s:%d", l.Source, l.Line)
	}
	return fmt.Sprintf("line %d", l.Line)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func optInt(p *int64) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
