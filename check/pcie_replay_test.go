package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

// DCGM scales its PCIe replay limit by the link's generation and width
// (DcgmHealthWatch::GetExpectedPcieReplayRate: 1e-12 bit errors at the
// lane rate, × lanes, rounded up): Gen4 x16 16/min, Gen5 x16 31/min, Gen3
// x8 4/min. The fixed 8/min warned on healthy Hopper and Blackwell links.
func TestPCIeReplayLimitScaledAsDCGM(t *testing.T) {
	for _, tc := range []struct {
		gen, width int
		perMinute  uint64 // replays per minute over an hour since boot
		want       Status
		words      string
	}{
		{5, 16, 20, Pass, ""}, // warned before: 20 > 8
		{5, 16, 32, Warn, "threshold 31/min, DCGM's limit for Gen5 x16"},
		{4, 16, 12, Pass, ""}, // warned before
		{4, 16, 17, Warn, "threshold 16/min, DCGM's limit for Gen4 x16"},
		{3, 8, 5, Warn, "threshold 4/min, DCGM's limit for Gen3 x8"}, // passed before: 5 < 8
	} {
		n := healthy(func(n *state.Node) {
			n.Kernel = kernelState(3600, nil)
			p := n.NVML.GPUs[1].PCIe
			p.CurrentGen, p.MaxGen, p.CurrentWidth, p.MaxWidth = tc.gen, tc.gen, tc.width, tc.width
			p.ReplayCounter = u64(tc.perMinute * 60)
		})
		r := checkPCIeLink(n, DefaultConfig())
		if r.Status != tc.want || !strings.Contains(r.Summary, tc.words) {
			t.Errorf("Gen%d x%d at %d/min: %s %q, want %s %q", tc.gen, tc.width, tc.perMinute, r.Status, r.Summary, tc.want, tc.words)
		}
	}
	// A fixed limit in the configuration still wins.
	cfg := DefaultConfig()
	cfg.PCIe.ReplayRatePerMinuteWarn = 8
	n := healthy(func(n *state.Node) {
		n.Kernel = kernelState(3600, nil)
		n.NVML.GPUs[1].PCIe.ReplayCounter = u64(20 * 60)
	})
	if r := checkPCIeLink(n, cfg); r.Status != Warn || !strings.Contains(r.Summary, "pcie.replay_rate_per_minute_warn") {
		t.Errorf("fixed limit: %+v", r)
	}
}
