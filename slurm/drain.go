package slurm

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// reasonSuffix is the " [user@time]" Slurm prints after a reason; in one-line
// (-o) output other fields may follow it. The last one ends the reason (an
// admin's reason may itself hold "[x@y]").
var reasonSuffix = regexp.MustCompile(` ?\[([^\[\]@ ]*)@([^\[\] ]*)\]( |$)`)

// MaxListedNodes bounds a cluster listing: more lines than any Slurm
// cluster's nodes is not a listing.
const MaxListedNodes = 200_000

// ParseShowNode reads "scontrol show node NAME" (multi-line or -o) output.
func ParseShowNode(out string) (slurmstate.NodeInfo, error) {
	var n slurmstate.NodeInfo
	found := false
	for _, line := range strings.Split(out, "\n") {
		found = parseNodeFields(&n, strings.TrimSpace(line)) || found
	}
	if !found {
		return n, fmt.Errorf("scontrol show node: no State= in output %q", safetext.Clip(strings.TrimSpace(out), 120))
	}
	cleanReason(&n)
	return n, nil
}

// ParseShowNodes reads "scontrol -o show nodes": one node a line.
func ParseShowNodes(out string) ([]slurmstate.NodeInfo, error) {
	var nodes []slurmstate.NodeInfo
	for i, line := range strings.Split(out, "\n") {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if len(nodes) >= MaxListedNodes {
			return nil, fmt.Errorf("scontrol -o show nodes: more than %d nodes", MaxListedNodes)
		}
		var n slurmstate.NodeInfo
		if !parseNodeFields(&n, t) || n.Name == "" {
			return nil, fmt.Errorf("scontrol -o show nodes: line %d is not a node: %q", i+1, safetext.Clip(t, 120))
		}
		cleanReason(&n)
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// parseNodeFields reads the fields of one line into n; it reports whether
// the line held State=.
func parseNodeFields(n *slurmstate.NodeInfo, t string) bool {
	found := false
	if i := strings.Index(t, "Reason="); i >= 0 && (i == 0 || t[i-1] == ' ') {
		// A reason may hold blanks: it runs to Slurm's [user@time] suffix,
		// or to the end of the line.
		rest := t[i+len("Reason="):]
		after := ""
		if all := reasonSuffix.FindAllStringSubmatchIndex(rest, -1); all != nil {
			m := all[len(all)-1]
			if ts, err := time.ParseInLocation("2006-01-02T15:04:05", rest[m[4]:m[5]], time.Local); err == nil {
				n.ReasonTime = ts
			}
			rest, after = rest[:m[0]], rest[m[1]:]
		}
		n.Reason = strings.TrimSpace(rest)
		t = t[:i] + " " + after
	}
	for _, f := range strings.Fields(t) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		switch k {
		case "NodeName":
			n.Name = v
		case "State":
			found = true
			n.State = v
			parts := strings.Split(v, "+")
			n.Base, n.Flags = parts[0], parts[1:]
		case "Partitions":
			if v != "" && v != "(null)" {
				n.Partitions = strings.Split(v, ",")
			}
		}
	}
	return found
}

func cleanReason(n *slurmstate.NodeInfo) {
	if n.Reason == "(null)" || n.Reason == "none" {
		n.Reason = ""
	}
}
