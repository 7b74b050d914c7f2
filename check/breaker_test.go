package check

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// cluster builds n nodes "n0".."n{n-1}" in partition "gpu"; drained[i] is
// the reason of a drained node (a gpuprobe reason or an admin's).
func cluster(n int, drained map[int]string, at time.Time) []slurmstate.NodeInfo {
	out := make([]slurmstate.NodeInfo, n)
	for i := range out {
		out[i] = slurmstate.NodeInfo{Name: fmt.Sprintf("n%d", i), State: "IDLE", Base: "IDLE", Partitions: []string{"gpu"}}
		if r, ok := drained[i]; ok {
			out[i].State, out[i].Flags, out[i].Reason, out[i].ReasonTime = "IDLE+DRAIN", []string{"DRAIN"}, r, at
		}
	}
	return out
}

func owned(k int, from int) map[int]string {
	m := map[int]string{}
	for i := 0; i < k; i++ {
		m[from+i] = "gpuprobe: gpu.ecc node gpu=1 GPU 1: uncorrectable ECC errors"
	}
	return m
}

func TestBreaker(t *testing.T) {
	now := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	old := now.Add(-2 * time.Hour)
	def := DefaultBreakerConfig()
	with := func(f func(*BreakerConfig)) BreakerConfig { c := def; f(&c); return c }
	admin := map[int]string{1: "admin: PSU", 2: "admin: PSU", 3: "admin: PSU", 4: "NHC: check_hw_ib failed", 5: "Prolog error"}
	// Two partitions: n0..n9 "gpu", n10..n99 "cpu"; n0 asks.
	twoParts := cluster(100, owned(1, 1), old)
	for i := 10; i < 100; i++ {
		twoParts[i].Partitions = []string{"cpu"}
	}
	oldFmt := map[int]string{}
	for i := 1; i <= 10; i++ {
		oldFmt[i] = "gpuprobe: gpu.xid: GPU 3: Xid 79"
	}
	tests := []struct {
		name     string
		cfg      BreakerConfig
		nodes    []slurmstate.NodeInfo
		listErr  string
		check    string
		suppress bool
		why      string
	}{
		{"first drain of a 100-node cluster", def, cluster(100, nil, old), "", "gpu.ecc", false, "within"},
		{"9 owned of 100: the 10th is at 10%", def, cluster(100, owned(9, 1), old), "", "gpu.ecc", false, "within"},
		{"10 owned of 100: an 11th passes 10%", def, cluster(100, owned(10, 1), old), "", "gpu.ecc", true, "max_percent"},
		{"admin drains do not count", def, cluster(20, admin, old), "", "gpu.ecc", false, "within"},
		{"absolute cap", with(func(c *BreakerConfig) { c.MaxNodes = 5 }), cluster(1000, owned(5, 1), old), "", "gpu.ecc", true, "max_nodes"},
		{"cap 0 is no cap", with(func(c *BreakerConfig) { c.MaxNodes = 0 }), cluster(10000, owned(200, 1), old), "", "gpu.ecc", false, "within"},
		{"small cluster exempt", def, cluster(4, owned(3, 1), old), "", "gpu.ecc", false, "small cluster"},
		{"at the minimum the share applies", def, cluster(10, owned(1, 1), old), "", "gpu.ecc", true, "max_percent"},
		{"2 nodes at 50%: the first drains", with(func(c *BreakerConfig) { c.MaxPercent, c.MinClusterNodes = 50, 2 }), cluster(2, nil, old), "", "gpu.ecc", false, "within"},
		{"2 nodes at 50%: the second is suppressed", with(func(c *BreakerConfig) { c.MaxPercent, c.MinClusterNodes = 50, 2 }), cluster(2, owned(1, 1), old), "", "gpu.ecc", true, "max_percent"},
		{"this node's own old drain is not counted", with(func(c *BreakerConfig) { c.MaxPercent, c.MinClusterNodes = 50, 2 }), cluster(2, owned(1, 0), old), "", "gpu.ecc", false, "within"},
		{"partition share", def, twoParts, "", "gpu.ecc", true, "partition gpu"},
		{"partition smaller than the minimum is not judged", with(func(c *BreakerConfig) { c.MinClusterNodes = 20 }), twoParts, "", "gpu.ecc", false, "within"},
		{"per check per hour", with(func(c *BreakerConfig) { c.MaxPercent, c.MaxPerCheckPerHour = 50, 3 }), cluster(100, owned(3, 1), now.Add(-10*time.Minute)), "", "gpu.ecc", true, "last hour"},
		{"per check: another check does not count", with(func(c *BreakerConfig) { c.MaxPercent, c.MaxPerCheckPerHour = 50, 3 }), cluster(100, owned(3, 1), now.Add(-10*time.Minute)), "", "gpu.xid", false, "within"},
		{"per check: older drains do not count", with(func(c *BreakerConfig) { c.MaxPercent, c.MaxPerCheckPerHour = 50, 3 }), cluster(100, owned(3, 1), old), "", "gpu.ecc", false, "within"},
		{"per check: no drain time, not counted", with(func(c *BreakerConfig) { c.MaxPercent, c.MaxPerCheckPerHour = 50, 3 }), cluster(100, owned(3, 1), time.Time{}), "", "gpu.ecc", false, "within"},
		{"per check 0 is no limit", with(func(c *BreakerConfig) { c.MaxPercent, c.MaxPerCheckPerHour = 50, 0 }), cluster(100, owned(30, 1), now), "", "gpu.ecc", false, "within"},
		{"old-format gpuprobe reasons count", def, cluster(100, oldFmt, now), "", "gpu.xid", true, "max_percent"},
		{"unreadable: suppress", def, nil, "no answer within 10s", "gpu.ecc", true, "cannot list"},
		{"empty listing: suppress", def, nil, "", "gpu.ecc", true, "named no node"},
		{"unreadable: drain when told", with(func(c *BreakerConfig) { c.Unreadable = "drain" }), nil, "exit 1", "gpu.ecc", false, "anyway"},
		{"off", with(func(c *BreakerConfig) { c.Off = true }), cluster(100, owned(90, 1), now), "", "gpu.ecc", false, "off"},
		{"off beats unreadable", with(func(c *BreakerConfig) { c.Off = true }), nil, "exit 1", "gpu.ecc", false, "off"},
	}
	for _, tt := range tests {
		v := Breaker(tt.cfg, BreakerInput{Node: "n0", Check: tt.check, Cluster: tt.nodes, ListError: tt.listErr, Now: now})
		if v.Suppressed != tt.suppress || !strings.Contains(v.Why, tt.why) {
			t.Errorf("%s: suppressed %v (%s), want %v (%q)", tt.name, v.Suppressed, v.Why, tt.suppress, tt.why)
		}
	}
}

func TestBreakerConfigValidate(t *testing.T) {
	for _, y := range []string{
		"drain: {breaker: {max_percent: 0}}", "drain: {breaker: {max_percent: 101}}", "drain: {breaker: {max_percent: -5}}",
		"drain: {breaker: {unreadable: maybe}}", "drain: {breaker: {max_nodes: -1}}", "drain: {breaker: {min_cluster_nodes: 2000000}}",
	} {
		if err := ParseConfig([]byte(y), DefaultConfig()); err == nil {
			t.Errorf("%s: accepted", y)
		}
	}
	cfg := DefaultConfig()
	if err := ParseConfig([]byte("drain: {breaker: {max_percent: 50, min_cluster_nodes: 2, unreadable: drain}}"), cfg); err != nil {
		t.Fatal(err)
	}
	if b := cfg.Drain.Breaker; b.MaxPercent != 50 || b.MinClusterNodes != 2 || b.MaxNodes != 100 || b.Unreadable != "drain" {
		t.Errorf("%+v", b)
	}
}
