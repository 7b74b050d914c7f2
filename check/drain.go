package check

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// The drain decision table: what a HealthCheckProgram run does to the node
// given its Slurm state and the node checks' verdict (LBNL NHC's
// node-mark-offline/online rules). cmd/ reads the node with scontrol and
// carries the decision out; the policy is here with the other verdicts.

// ReasonPrefix marks the drains gpuprobe owns. Like NHC's "NHC:" it is how a
// later run knows it may update or lift a drain, and that it must leave any
// other reason alone.
const ReasonPrefix = "gpuprobe:"

// VerifyReasonPrefix marks the drains `gpuprobe verify --slurm-drain` owns.
// It is a prefix of its own, not ReasonPrefix with a verify check in it, so
// that each owner lifts only its own drains: a health check that passes
// every few minutes must not resume a node verify quarantined for a slow
// link (the passive checks cannot see it), and a verify that passes must
// not lift a health check's drain for an Xid it never looked at. Neither
// string is a prefix of the other.
const VerifyReasonPrefix = "gpuprobe-verify:"

// ownedBy reports whether the node's reason carries this owner's prefix
// ("" is ReasonPrefix).
func ownedBy(n slurmstate.NodeInfo, prefix string) bool {
	if prefix == "" {
		prefix = ReasonPrefix
	}
	return strings.HasPrefix(n.Reason, prefix)
}

// MaxReasonLen keeps drain reasons readable in sinfo/scontrol and far from
// any message size limit.
const MaxReasonLen = 200

// gpuprobeDrain reports whether either owner (health check or verify) set
// the node's reason: the circuit breaker counts both.
func gpuprobeDrain(reason string) bool {
	return strings.HasPrefix(reason, ReasonPrefix) || strings.HasPrefix(reason, VerifyReasonPrefix)
}

// DrainAction is what a health-check run does to the node.
type DrainAction string

// Actions.
const (
	DrainNone   DrainAction = "none"
	DrainSet    DrainAction = "drain"
	DrainResume DrainAction = "resume"
)

// DrainDecision is the action with its reason, for the log.
type DrainDecision struct {
	Action DrainAction `json:"action"`
	// Reason is the drain reason to set (Drain only).
	Reason string `json:"reason,omitempty"`
	Why    string `json:"why"`
	// Breaker is the circuit breaker's verdict on a new drain (nil when it
	// was not asked); Suppressed there means the node was not drained.
	Breaker *BreakerVerdict `json:"breaker,omitempty"`
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
func Decide(n slurmstate.NodeInfo, failing bool, reason string) DrainDecision {
	return decideFor(n, failing, reason, "")
}

// decideFor is Decide for the owner of prefix ("": the health checks):
// "ours" is a reason with that prefix; the other owner's is someone else's.
func decideFor(n slurmstate.NodeInfo, failing bool, reason, prefix string) DrainDecision {
	ours := func(n slurmstate.NodeInfo) bool { return ownedBy(n, prefix) }
	for _, s := range leaveAlone {
		if n.Has(s) {
			return DrainDecision{Action: DrainNone, Why: fmt.Sprintf("node is %s: left alone", n.State)}
		}
	}
	switch {
	case failing && !n.Drained():
		return DrainDecision{Action: DrainSet, Reason: reason, Why: "a node check failed"}
	case failing && ours(n) && n.Reason == reason:
		return DrainDecision{Action: DrainNone, Why: "already drained by gpuprobe for the same reason"}
	case failing && ours(n):
		return DrainDecision{Action: DrainSet, Reason: reason, Why: "already drained by gpuprobe: updating the reason"}
	case failing:
		return DrainDecision{Action: DrainNone, Why: fmt.Sprintf("already drained by someone else (%q): not overwriting", n.Reason)}
	case n.Drained() && ours(n):
		return DrainDecision{Action: DrainResume, Why: "all node checks pass and the drain is gpuprobe's"}
	case n.Drained():
		return DrainDecision{Action: DrainNone, Why: fmt.Sprintf("drained by someone else (%q): not resuming", n.Reason)}
	}
	return DrainDecision{Action: DrainNone, Why: "healthy and not drained"}
}

// DrainFailure is a failing check, as the drain reason names it.
type DrainFailure struct {
	ID      string
	Summary string
	// GPUs are the indexes of the GPUs at fault, if the check named any.
	GPUs []int
}

// configChecks judge the Slurm configuration, not the node's hardware.
var configChecks = map[string]bool{"slurm.gres": true, "slurm.topology": true}

// drainFirst orders failures of equal status: a GPU that is gone or has
// reported a fault the driver says needs a reset comes before a symptom
// (a link down, a slow link), which is often its consequence.
var drainFirst = []string{"gpu.driver", "gpu.count", "gpu.xid", "gpu.row_remap", "gpu.ecc", "gpu.retired_pages", "fabric.state", "nvlink.state"}

func drainRank(id string) int {
	for i, d := range drainFirst {
		if d == id {
			return i
		}
	}
	return len(drainFirst)
}

// DrainFailures picks the results that count against the node under
// --slurm-drain: node checks that failed or errored (a node that cannot be
// judged is not healthy), warnings under strict; not job-step checks, and
// not configuration checks unless cfg.Drain.ConfigChecks. They come most
// severe first (fail, then error, then warn; catalogue order within), so
// the drain reason names the worst finding.
func DrainFailures(rs []Result, cfg *Config) []DrainFailure {
	scope := map[string]Scope{}
	for _, ch := range All() {
		scope[ch.ID] = ch.Scope
	}
	var picked []Result
	for _, r := range rs {
		if scope[r.ID] == JobScope || scope[r.ID] == PerfScope || configChecks[r.ID] && !cfg.Drain.ConfigChecks {
			continue
		}
		if r.Status == Fail || r.Status == Error || cfg.Strict && r.Status == Warn {
			picked = append(picked, r)
		}
	}
	sort.SliceStable(picked, func(i, j int) bool {
		a, b := picked[i], picked[j]
		if a.Status != b.Status {
			return a.Status.Worse(b.Status)
		}
		return drainRank(a.ID) < drainRank(b.ID)
	})
	out := make([]DrainFailure, len(picked))
	for i, r := range picked {
		out[i] = DrainFailure{ID: r.ID, Summary: r.Summary}
		for _, d := range r.Devices {
			out[i].GPUs = append(out[i].GPUs, d.Index)
		}
	}
	return out
}

// DrainReason builds the reason for the first failure in the grammar of
// reason.go ("gpuprobe: <check> <class> [gpu=<i>] <summary> (+N more)"),
// counting the others, cut to MaxReasonLen. Control characters and quotes
// are dropped: the reason travels as one argv element (no shell), but admins
// paste it into shells and tickets.
func DrainReason(fails []DrainFailure) string {
	if len(fails) == 0 {
		return ""
	}
	return reasonFor(fails[0], len(fails)-1).String()
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
