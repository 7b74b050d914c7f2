package slurm

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

var reasonSuffix = regexp.MustCompile(`\s*\[[^\[\]@]*@[^\[\]]*\]\s*$`)

// ParseShowNode reads "scontrol show node NAME" (multi-line or -o) output.
func ParseShowNode(out string) (slurmstate.NodeInfo, error) {
	var n slurmstate.NodeInfo
	found := false
	for _, line := range strings.Split(out, "\n") {
		t := strings.TrimSpace(line)
		if i := strings.Index(t, "Reason="); i >= 0 && (i == 0 || t[i-1] == ' ') {
			// Reason runs to the end of its line: it may hold blanks.
			n.Reason = strings.TrimSpace(reasonSuffix.ReplaceAllString(t[i+len("Reason="):], ""))
			t = t[:i]
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
			}
		}
	}
	if !found {
		return n, fmt.Errorf("scontrol show node: no State= in output %q", truncate(strings.TrimSpace(out), 120))
	}
	if n.Reason == "(null)" || n.Reason == "none" {
		n.Reason = ""
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
