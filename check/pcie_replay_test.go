package check

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/internal/dcgmreplay"
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

// The per-lane table is generated (tools/dcgmgen, go generate ./check) from
// DCGM's own function as pinned in third_party/dcgm/: the checked-in
// dcgmreplay.go is byte for byte what the generator makes of the excerpt
// today, and each generation's value is DCGM's row.
func TestDCGMReplayTableMatchesItsSource(t *testing.T) {
	excerpt, err := os.ReadFile("../" + dcgmreplay.Source)
	if err != nil {
		t.Fatal(err)
	}
	note, err := os.ReadFile("../" + dcgmreplay.SourceNote)
	if err != nil {
		t.Fatal(err)
	}
	want, err := dcgmreplay.Go(string(excerpt), string(note))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("dcgmreplay.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("dcgmreplay.go is not what tools/dcgmgen makes of %s: run go generate ./check", dcgmreplay.Source)
	}
	gens, err := dcgmreplay.Parse(string(excerpt))
	if err != nil {
		t.Fatal(err)
	}
	if len(gens) != len(dcgmReplayPerLanePerMinute) {
		t.Fatalf("%d generations in DCGM's table, %d in ours", len(gens), len(dcgmReplayPerLanePerMinute))
	}
	for i, g := range gens {
		if dcgmReplayPerLanePerMinute[i] != g.PerLanePerMinute {
			t.Errorf("Gen%d: %v per lane and minute, DCGM's row %v", g.Gen, dcgmReplayPerLanePerMinute[i], g.PerLanePerMinute)
		}
	}
	// The figures docs/checks.md and the comments quote, from the table.
	for _, tc := range []struct{ gen, width, limit int }{{3, 8, 4}, {4, 16, 16}, {5, 16, 31}, {6, 16, 62}, {7, 16, 62}} {
		p := &state.PCIe{CurrentGen: tc.gen, CurrentWidth: tc.width}
		if l, _ := pcieReplayLimit(p, PCIeConfig{}); l != float64(tc.limit) {
			t.Errorf("Gen%d x%d: %v/min, want %d", tc.gen, tc.width, l, tc.limit)
		}
	}
}
