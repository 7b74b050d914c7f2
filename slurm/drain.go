package slurm

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// ReasonPrefix marks the drains gpuprobe owns. Like NHC's "NHC:" it is how a
// later run knows it may update or lift a drain, and that it must leave any
// other reason alone.
const ReasonPrefix = "gpuprobe:"

// MaxReasonLen keeps drain reasons readable in sinfo/scontrol and far from
// any message size limit.
const MaxReasonLen = 200

// NodeInfo is the part of "scontrol show node" the drain rules need.
type NodeInfo struct {
	Name string `json:"name"`
	// State is the raw state, e.g. "IDLE+DRAIN" or "MIXED+DRAIN+RESERVED".
	State string `json:"state"`
	// Base is the first word of State (IDLE, MIXED, ALLOCATED, DOWN, ...).
	Base string `json:"base"`
	// Flags are the words after "+" (DRAIN, MAINT, RESERVED, NOT_RESPONDING, ...).
	Flags []string `json:"flags,omitempty"`
	// Reason without Slurm's " [user@time]" suffix.
	Reason string `json:"reason,omitempty"`
}

// Has reports whether the state's base or flags include word.
func (n NodeInfo) Has(word string) bool {
	if strings.EqualFold(n.Base, word) {
		return true
	}
	for _, f := range n.Flags {
		if strings.EqualFold(f, word) {
			return true
		}
	}
	return false
}

// Drained reports a drain in any of Slurm's spellings.
func (n NodeInfo) Drained() bool {
	return n.Has("DRAIN") || n.Has("DRAINED") || n.Has("DRAINING") || n.Has("FAIL") || n.Has("FAILING")
}

// Ours reports whether the reason is one gpuprobe set.
func (n NodeInfo) Ours() bool { return strings.HasPrefix(n.Reason, ReasonPrefix) }

var reasonSuffix = regexp.MustCompile(`\s*\[[^\[\]@]*@[^\[\]]*\]\s*$`)

// ParseShowNode reads "scontrol show node NAME" (multi-line or -o) output.
func ParseShowNode(out string) (NodeInfo, error) {
	var n NodeInfo
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

// Action is what a health-check run does to the node.
type Action string

// Actions.
const (
	None   Action = "none"
	Drain  Action = "drain"
	Resume Action = "resume"
)

// Decision is the action with its reason, for the log.
type Decision struct {
	Action Action `json:"action"`
	// Reason is the drain reason to set (Drain only).
	Reason string `json:"reason,omitempty"`
	Why    string `json:"why"`
}

// leaveAlone are states NHC's node-mark-offline/online do not touch: the node
// is down, powered off, in maintenance or reserved, so an admin or Slurm
// itself owns it.
var leaveAlone = []string{"DOWN", "MAINT", "RESERVED", "FUTURE", "POWERED_DOWN", "POWERING_DOWN", "POWERING_UP",
	"POWER_DOWN", "REBOOT_REQUESTED", "REBOOT_ISSUED", "UNKNOWN"}

// Decide applies NHC's drain/resume rules. failing says whether a node check
// failed and reason is the drain reason built from it (see DrainReason).
//
//   - A state listed in leaveAlone: nothing, whatever the result.
//   - Failing, not drained: drain.
//   - Failing, drained by gpuprobe: update the reason if it changed.
//   - Failing, drained for another reason (or none): nothing, never overwrite.
//   - Passing, drained by gpuprobe: resume.
//   - Passing otherwise: nothing.
func Decide(n NodeInfo, failing bool, reason string) Decision {
	for _, s := range leaveAlone {
		if n.Has(s) {
			return Decision{Action: None, Why: fmt.Sprintf("node is %s: left alone", n.State)}
		}
	}
	switch {
	case failing && !n.Drained():
		return Decision{Action: Drain, Reason: reason, Why: "a node check failed"}
	case failing && n.Ours() && n.Reason == reason:
		return Decision{Action: None, Why: "already drained by gpuprobe for the same reason"}
	case failing && n.Ours():
		return Decision{Action: Drain, Reason: reason, Why: "already drained by gpuprobe: updating the reason"}
	case failing:
		return Decision{Action: None, Why: fmt.Sprintf("already drained by someone else (%q): not overwriting", n.Reason)}
	case n.Drained() && n.Ours():
		return Decision{Action: Resume, Why: "all node checks pass and the drain is gpuprobe's"}
	case n.Drained():
		return Decision{Action: None, Why: fmt.Sprintf("drained by someone else (%q): not resuming", n.Reason)}
	}
	return Decision{Action: None, Why: "healthy and not drained"}
}

// Failure is a failing check, as the drain reason names it.
type Failure struct {
	ID      string
	Summary string
}

// DrainReason builds "gpuprobe: <check>: <summary>" for the first failure,
// counts the others, and cuts it to MaxReasonLen. Control characters and
// quotes are dropped: the reason travels as one argv element (no shell), but
// admins paste it into shells and tickets.
func DrainReason(fails []Failure) string {
	if len(fails) == 0 {
		return ""
	}
	s := ReasonPrefix + " " + fails[0].ID + ": " + fails[0].Summary
	more := ""
	if len(fails) > 1 {
		more = fmt.Sprintf(" (+%d more)", len(fails)-1)
	}
	s = cleanReason(s)
	if len(s)+len(more) > MaxReasonLen {
		cut := MaxReasonLen - len(more) - len("...")
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = strings.TrimRight(s[:cut], " ") + "..."
	}
	return s + more
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func cleanReason(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == '"' || r == '\'' || r == '`':
			continue
		case unicode.IsSpace(r) || unicode.IsControl(r):
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}
