package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// The quarantine cycle (issue 31, item 3): which of gpuprobe's drains a
// passing run lifts, and how a fault that comes back after a resume
// escalates instead of flapping. The node keeps a short history of its own
// drains (cmd/gpuprobe reads and writes it, bounded, in a state file); the
// decision here is pure: Slurm's view of the node, the failures, the history
// and the clock in, the action and the history to keep out.
//
// Escalation counts the earlier episodes of the same fault (same check, and
// an overlapping GPU set, or no GPU on either side) that were lifted within
// drain.escalate_within of now ("repeats"):
//
//	level = repeats, plus 1 for a node-class check
//	level 0: transient (lifted by the next run that passes)
//	level 1: node      (lifted when the check passes, unless drain.resume_node_class is false)
//	level 2+: node, held: never lifted by gpuprobe; an admin resumes the node
//
// A config-class check does not escalate: its cause is a setting, lifted
// when the setting is fixed.

// MaxHistoryEpisodes bounds the drain history kept on the node; the oldest
// episodes go first.
const MaxHistoryEpisodes = 32

// MaxHistoryBytes bounds the state file: a larger one is not read.
const MaxHistoryBytes = 64 << 10

// DrainEpisode is one drain gpuprobe set on this node.
type DrainEpisode struct {
	Check string `json:"check"`
	GPUs  []int  `json:"gpus,omitempty"`
	// Class is the class the drain reason named (after escalation).
	Class Class `json:"class"`
	// Hold: the fault recurred; gpuprobe never lifts this drain.
	Hold    bool      `json:"hold,omitempty"`
	Drained time.Time `json:"drained"`
	// Resumed is when the drain ended (zero while it lasts): lifted by
	// gpuprobe, or found gone (an admin resumed the node).
	Resumed time.Time `json:"resumed,omitzero"`
}

// Open reports whether the drain still lasts.
func (e DrainEpisode) Open() bool { return e.Resumed.IsZero() }

// DrainHistory is the node's state file (version 1).
type DrainHistory struct {
	Version  int            `json:"version"`
	Episodes []DrainEpisode `json:"episodes"`
}

// historyVersion is the state file's format.
const historyVersion = 1

// ParseDrainHistory decodes a state file; anything but a valid, bounded
// version-1 document is an error (the caller logs it and starts afresh).
func ParseDrainHistory(b []byte) (DrainHistory, error) {
	var h DrainHistory
	if len(b) > MaxHistoryBytes {
		return DrainHistory{}, fmt.Errorf("drain history is %d bytes, more than %d", len(b), MaxHistoryBytes)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return DrainHistory{}, fmt.Errorf("drain history: %w", err)
	}
	if h.Version != historyVersion {
		return DrainHistory{}, fmt.Errorf("drain history: version %d, want %d", h.Version, historyVersion)
	}
	if len(h.Episodes) > MaxHistoryEpisodes {
		return DrainHistory{}, fmt.Errorf("drain history: %d episodes, more than %d", len(h.Episodes), MaxHistoryEpisodes)
	}
	for _, e := range h.Episodes {
		if !checkIDRe.MatchString(e.Check) || !e.Class.Valid() || e.Drained.IsZero() || len(e.GPUs) > maxReasonGPUs {
			return DrainHistory{}, fmt.Errorf("drain history: invalid episode %+v", e)
		}
	}
	return h, nil
}

// Marshal encodes the history for the state file.
func (h DrainHistory) Marshal() ([]byte, error) {
	h.Version = historyVersion
	b, err := json.MarshalIndent(h, "", " ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func (h DrainHistory) clone() DrainHistory {
	out := DrainHistory{Version: historyVersion, Episodes: make([]DrainEpisode, len(h.Episodes))}
	copy(out.Episodes, h.Episodes)
	return out
}

// sameFault: the same check on an overlapping set of GPUs (or no GPU named
// on either side).
func sameFault(e DrainEpisode, check string, gpus []int) bool {
	if e.Check != check {
		return false
	}
	if len(e.GPUs) == 0 || len(gpus) == 0 {
		return len(e.GPUs) == 0 && len(gpus) == 0
	}
	for _, g := range gpus {
		if slices.Contains(e.GPUs, g) {
			return true
		}
	}
	return false
}

// Repeats counts the earlier, lifted drains for the same fault that ended
// within window of now.
func (h DrainHistory) Repeats(check string, gpus []int, window time.Duration, now time.Time) int {
	n := 0
	for _, e := range h.Episodes {
		if !e.Open() && sameFault(e, check, gpus) && now.Sub(e.Resumed) <= window {
			n++
		}
	}
	return n
}

// Escalation is the class a failure is drained under given its history.
type Escalation struct {
	Class   Class `json:"class"`
	Repeats int   `json:"repeats,omitempty"`
	// Hold: gpuprobe will not lift this drain.
	Hold bool `json:"hold,omitempty"`
}

// Escalate applies the ladder above to a failure.
func Escalate(f DrainFailure, h DrainHistory, cfg DrainConfig, now time.Time) Escalation {
	base := ClassOf(f.ID)
	if base == ClassConfig || cfg.EscalateWithin <= 0 {
		return Escalation{Class: base}
	}
	e := Escalation{Class: base, Repeats: h.Repeats(f.ID, f.GPUs, cfg.EscalateWithin, now)}
	level := e.Repeats
	if base == ClassNode {
		level++
	}
	switch {
	case level >= 2:
		e.Class, e.Hold = ClassNode, true
	case level == 1:
		e.Class = ClassNode
	}
	return e
}

// QuarantineInput is what DecideQuarantine judges.
type QuarantineInput struct {
	Node     slurmstate.NodeInfo
	Failures []DrainFailure
	History  DrainHistory
	Config   DrainConfig
	Now      time.Time
	// Prefix is the owner whose drains this run sets and lifts: ""
	// (ReasonPrefix, the health checks) or VerifyReasonPrefix. Each owner
	// keeps its own history file.
	Prefix string
}

// DecideQuarantine is Decide with classes and history: the failing run's
// reason carries the escalated class (a summary starting "recurred:" when
// it was escalated), and a passing run lifts a gpuprobe drain only when its
// class allows. It returns the history to keep once the action has been
// carried out (the caller writes it only then, and not when the breaker
// suppresses a drain).
func DecideQuarantine(in QuarantineInput) (DrainDecision, DrainHistory) {
	h := in.History.clone()
	reason := ""
	var esc Escalation
	if len(in.Failures) > 0 {
		f := in.Failures[0]
		esc = Escalate(f, in.History, in.Config, in.Now)
		r := reasonFor(f, len(in.Failures)-1)
		r.Class = esc.Class
		if in.Prefix != ReasonPrefix {
			r.Prefix = in.Prefix
		}
		if esc.Class != ClassOf(f.ID) || esc.Hold {
			r.Summary = "recurred: " + r.Summary
		}
		reason = r.String()
	}
	d := decideFor(in.Node, len(in.Failures) > 0, reason, in.Prefix)
	owned := func(n slurmstate.NodeInfo) bool { return ownedBy(n, in.Prefix) }
	switch d.Action {
	case DrainSet:
		f := in.Failures[0]
		ep := DrainEpisode{Check: reasonCheck(f.ID), GPUs: reasonGPUs(f.GPUs), Class: esc.Class, Hold: esc.Hold, Drained: in.Now}
		if i := lastOpen(h); i >= 0 && in.Node.Drained() {
			// A reason update: the episode goes on, naming the new fault
			// (a hold, once set, stays).
			ep.Drained, ep.Hold = h.Episodes[i].Drained, ep.Hold || h.Episodes[i].Hold
			h.Episodes[i] = ep
		} else {
			h.Episodes = append(h.Episodes, ep)
		}
		if esc.Repeats > 0 {
			d.Why += fmt.Sprintf("; the same fault was lifted %d time(s) in the last %s: escalated to %s", esc.Repeats, in.Config.EscalateWithin, esc.Class)
			if esc.Hold {
				d.Why += ", held for an admin"
			}
		}
	case DrainResume:
		if why, keep := keepDrained(in.Node.Reason, h, in.Config); keep {
			return DrainDecision{Action: DrainNone, Why: why}, in.History.clone()
		}
		closeOpen(&h, in.Now)
	case DrainNone:
		if len(in.Failures) > 0 && in.Node.Drained() && owned(in.Node) && lastOpen(h) < 0 && !leftAlone(in.Node) {
			// A drain of ours the history does not know (set before the
			// state file existed, or the file was lost): it starts now.
			f := in.Failures[0]
			h.Episodes = append(h.Episodes, DrainEpisode{Check: reasonCheck(f.ID), GPUs: reasonGPUs(f.GPUs), Class: esc.Class, Hold: esc.Hold, Drained: in.Now})
		}
		if !in.Node.Drained() && !leftAlone(in.Node) {
			// gpuprobe's drain is gone without us (an admin resumed the
			// node): the episode ended, as far as this run can tell, now.
			closeOpen(&h, in.Now)
		}
	}
	prune(&h, in.Config.EscalateWithin, in.Now)
	return d, h
}

// keepDrained says why a passing run must not lift the node's gpuprobe drain.
func keepDrained(reason string, h DrainHistory, cfg DrainConfig) (string, bool) {
	if i := lastOpen(h); i >= 0 && h.Episodes[i].Hold {
		return fmt.Sprintf("the checks pass, but %s failed again after an earlier resume (held since %s): an admin resumes the node",
			h.Episodes[i].Check, h.Episodes[i].Drained.UTC().Format(time.RFC3339)), true
	}
	r, err := ParseReason(reason)
	if err != nil {
		return "", false
	}
	class := r.Class
	if r.Legacy {
		class = ClassOf(r.Check)
	}
	if class == ClassNode && !cfg.ResumeNodeClass {
		return "the checks pass, but the drain is node-class and drain.resume_node_class is false: an admin resumes the node", true
	}
	return "", false
}

// ResumeNeedsVerify says whether lifting the drain with this reason waits
// for verify --quick to pass (drain.resume_verify): a node-class drain
// (hardware or driver) is lifted only once the node has also shown it
// performs; a transient or config drain is lifted on the checks alone. A
// reason gpuprobe cannot parse is not its to lift anyway.
func ResumeNeedsVerify(reason string, cfg DrainConfig) bool {
	if !cfg.ResumeVerify {
		return false
	}
	r, err := ParseReason(reason)
	if err != nil {
		return false
	}
	class := r.Class
	if r.Legacy {
		class = ClassOf(r.Check)
	}
	return class == ClassNode
}

func leftAlone(n slurmstate.NodeInfo) bool {
	for _, s := range leaveAlone {
		if n.Has(s) {
			return true
		}
	}
	return false
}

func lastOpen(h DrainHistory) int {
	for i := len(h.Episodes) - 1; i >= 0; i-- {
		if h.Episodes[i].Open() {
			return i
		}
	}
	return -1
}

func closeOpen(h *DrainHistory, now time.Time) {
	for i := range h.Episodes {
		if h.Episodes[i].Open() {
			h.Episodes[i].Resumed = now
		}
	}
}

// prune drops lifted episodes older than the window and keeps at most
// MaxHistoryEpisodes (the newest).
func prune(h *DrainHistory, window time.Duration, now time.Time) {
	kept := h.Episodes[:0]
	for _, e := range h.Episodes {
		if e.Open() || window > 0 && now.Sub(e.Resumed) <= window {
			kept = append(kept, e)
		}
	}
	if len(kept) > MaxHistoryEpisodes {
		kept = kept[len(kept)-MaxHistoryEpisodes:]
	}
	h.Episodes = kept
}

// reasonCheck and reasonGPUs are the check and GPUs as the reason names them.
func reasonCheck(id string) string { return reasonFor(DrainFailure{ID: id}, 0).Check }
func reasonGPUs(gpus []int) []int  { return reasonFor(DrainFailure{ID: "x", GPUs: gpus}, 0).GPUs }
