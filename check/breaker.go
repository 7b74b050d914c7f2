package check

import (
	"fmt"
	"time"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// The drain circuit breaker: a driver update, a changed config file or a
// bug in gpuprobe can make one check fail on every node at once, and every
// node's health check would then drain itself within one interval. Before a
// new drain the run reads the cluster's nodes once (cmd/gpuprobe, one
// bounded scontrol call) and Breaker decides, from the drains gpuprobe
// already owns, whether this one may go ahead (NVSentinel stops at a share
// of the cluster the same way).

// BreakerConfig is drain.breaker in the config (docs/slurm.md).
type BreakerConfig struct {
	// Off turns the breaker off: every failing node drains (the emergency
	// override, also --no-drain-breaker).
	Off bool `yaml:"off"`
	// MaxPercent: no new drain when gpuprobe's drains, this one included,
	// would cover more than this share of the cluster or of one of the
	// node's partitions. Default 10.
	MaxPercent float64 `yaml:"max_percent"`
	// MaxNodes: no new drain when gpuprobe's drains, this one included,
	// would be more than this many nodes (0: no cap). Default 100.
	MaxNodes int `yaml:"max_nodes"`
	// MaxPerCheckPerHour: no new drain for a check that already drained
	// this many nodes in the last hour (0: no limit; needs the drain time
	// scontrol prints after the reason). Default 10.
	MaxPerCheckPerHour int `yaml:"max_per_check_per_hour"`
	// MinClusterNodes: a cluster (or partition, for the share) of fewer
	// nodes is exempt, so a 4-node lab still drains. Default 10.
	MinClusterNodes int `yaml:"min_cluster_nodes"`
	// Unreadable is what a run does when it cannot list the cluster:
	// "suppress" (the default: it cannot tell a fleet-wide wave from one bad
	// node) or "drain" (for a cluster known to be small).
	Unreadable string `yaml:"unreadable"`
}

// DefaultBreakerConfig is the breaker's defaults.
func DefaultBreakerConfig() BreakerConfig {
	return BreakerConfig{MaxPercent: 10, MaxNodes: 100, MaxPerCheckPerHour: 10, MinClusterNodes: 10, Unreadable: "suppress"}
}

func (b BreakerConfig) validate(bad func(string, ...any)) {
	if b.MaxPercent <= 0 || b.MaxPercent > 100 {
		bad("drain.breaker.max_percent: %g is outside (0, 100] (to turn the breaker off, set drain.breaker.off)", b.MaxPercent)
	}
	switch b.Unreadable {
	case "", "suppress", "drain":
	default:
		bad("drain.breaker.unreadable: %q is not suppress or drain", b.Unreadable)
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"max_nodes", b.MaxNodes}, {"max_per_check_per_hour", b.MaxPerCheckPerHour}, {"min_cluster_nodes", b.MinClusterNodes}} {
		if n.v > 1_000_000 {
			bad("drain.breaker.%s: %d nodes is more than a Slurm cluster holds", n.key, n.v)
		}
	}
}

// BreakerInput is what the breaker judges.
type BreakerInput struct {
	// Node is this node's Slurm name; Check the check its drain names.
	Node  string
	Check string
	// Cluster is every node of the cluster, from one listing.
	Cluster []slurmstate.NodeInfo
	// ListError says why the listing could not be read ("" when it was).
	ListError string
	Now       time.Time
}

// BreakerVerdict is the breaker's answer, for the log, the report and the
// gpuprobe_drain_suppressed metric.
type BreakerVerdict struct {
	Suppressed bool   `json:"suppressed"`
	Why        string `json:"why"`
	// Owned is how many nodes gpuprobe had drained, of Nodes listed.
	Owned int `json:"owned_drains"`
	Nodes int `json:"nodes"`
}

// Breaker decides whether a new drain of in.Node may go ahead:
//
//   - breaker off: drain.
//   - listing unreadable or empty: suppress, or drain with unreadable: drain.
//   - fewer than MinClusterNodes nodes listed: drain (small cluster).
//   - gpuprobe's drains, this one included, more than MaxNodes: suppress.
//   - ... more than MaxPercent of the cluster, or of a partition of the node
//     that has at least MinClusterNodes nodes: suppress.
//   - MaxPerCheckPerHour nodes already drained for in.Check in the hour
//     before in.Now (by the time in their reason): suppress.
//   - otherwise drain.
//
// Only a new drain asks: updating the reason of a node gpuprobe drained, or
// resuming one, never does.
func Breaker(cfg BreakerConfig, in BreakerInput) BreakerVerdict {
	if cfg.Off {
		return BreakerVerdict{Why: "circuit breaker off (drain.breaker.off)"}
	}
	if in.ListError == "" && len(in.Cluster) == 0 {
		in.ListError = "the listing named no node"
	}
	if in.ListError != "" {
		if cfg.Unreadable == "drain" {
			return BreakerVerdict{Why: "cannot list the cluster (" + in.ListError + "): draining anyway (drain.breaker.unreadable: drain)"}
		}
		return BreakerVerdict{Suppressed: true, Why: "cannot list the cluster (" + in.ListError + "), so cannot tell one bad node from a fleet-wide wave: not draining (drain.breaker.unreadable: suppress)"}
	}
	v := BreakerVerdict{Nodes: len(in.Cluster)}
	var self slurmstate.NodeInfo
	partSize, partOwned := map[string]int{}, map[string]int{}
	recent := 0
	for _, n := range in.Cluster {
		for _, p := range n.Partitions {
			partSize[p]++
		}
		if n.Name == in.Node {
			self = n
			continue
		}
		if !n.Drained() || !gpuprobeDrain(n.Reason) {
			continue
		}
		v.Owned++
		for _, p := range n.Partitions {
			partOwned[p]++
		}
		if r, err := ParseReason(n.Reason); err == nil && r.Check == in.Check && !n.ReasonTime.IsZero() &&
			in.Now.Sub(n.ReasonTime) < time.Hour && n.ReasonTime.Sub(in.Now) < time.Hour {
			recent++
		}
	}
	if v.Nodes < cfg.MinClusterNodes {
		v.Why = fmt.Sprintf("small cluster (%d nodes, fewer than drain.breaker.min_cluster_nodes %d): exempt from the breaker", v.Nodes, cfg.MinClusterNodes)
		return v
	}
	after := v.Owned + 1
	over := func(owned, total int) bool { return float64(owned)*100 > cfg.MaxPercent*float64(total)+1e-9 }
	switch {
	case cfg.MaxNodes > 0 && after > cfg.MaxNodes:
		v.Suppressed, v.Why = true, fmt.Sprintf("gpuprobe has drained %d nodes; one more would pass drain.breaker.max_nodes %d", v.Owned, cfg.MaxNodes)
	case over(after, v.Nodes):
		v.Suppressed, v.Why = true, fmt.Sprintf("gpuprobe has drained %d of %d nodes; one more would pass drain.breaker.max_percent %g%% of the cluster", v.Owned, v.Nodes, cfg.MaxPercent)
	case cfg.MaxPerCheckPerHour > 0 && recent >= cfg.MaxPerCheckPerHour:
		v.Suppressed, v.Why = true, fmt.Sprintf("%s drained %d nodes in the last hour, drain.breaker.max_per_check_per_hour is %d", in.Check, recent, cfg.MaxPerCheckPerHour)
	}
	if v.Suppressed {
		return v
	}
	for _, p := range self.Partitions {
		if size := partSize[p]; size >= cfg.MinClusterNodes && over(partOwned[p]+1, size) {
			v.Suppressed, v.Why = true, fmt.Sprintf("gpuprobe has drained %d of the %d nodes of partition %s; one more would pass drain.breaker.max_percent %g%%", partOwned[p], size, p, cfg.MaxPercent)
			return v
		}
	}
	v.Why = fmt.Sprintf("gpuprobe has drained %d of %d nodes: within the breaker's limits", v.Owned, v.Nodes)
	return v
}
