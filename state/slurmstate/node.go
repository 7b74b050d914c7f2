package slurmstate

import (
	"strings"
	"time"
)

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
	// ReasonTime is the time in that suffix, when scontrol printed one.
	ReasonTime time.Time `json:"reason_time,omitzero"`
	// Partitions are the node's partitions (from a cluster listing).
	Partitions []string `json:"partitions,omitempty"`
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
