package nccl

import (
	"strings"
	"testing"
)

// TestTreesSelf reads the printing rank of every Trees form NCCL printed
// (the middle number is comm->rank), which check/ncclverdict uses with the
// ring order listing (printed by rank 0 only) to place a whole ring in one
// process.
func TestTreesSelf(t *testing.T) {
	for _, tc := range []struct {
		m    string
		want int64
		ok   bool
	}{
		{"Trees [0] 26->25->-1/-1/-1", 25, true},                                           // 2.4: up->me->down
		{"Trees [0] 1/-1/-1->0->7|7->0->1/-1/-1 [1] 1/-1/-1->0->7|7->0->1/-1/-1", 0, true}, // 2.5-2.7
		{"Trees [0] -1/-1/-1->1->0 [1] -1/-1/-1->1->0", 1, true},                           // 2.8+
		{"Trees [0] 3/-1/-1->2->1 [1] 3/-1/-1->2->1", 2, true},
		{"Trees", 0, false},
		{"Trees [0] 1/-1/-1->", 0, false},
	} {
		got, ok := treesSelf([]byte(tc.m))
		if got != tc.want || ok != tc.ok {
			t.Errorf("treesSelf(%q) = %d, %v; want %d, %v", tc.m, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		p    string
		want int64
	}{
		{"h:1:2 [3]", 3}, {"ai-vtraining-prd-10-193-84-3:96540:96549 [1]", 1}, {"h:1:2", -1}, {"h:1:2 [x]", -1}, {"h:1:2 [12", -1},
	} {
		if got := prefixDev([]byte(tc.p)); got != tc.want {
			t.Errorf("prefixDev(%q) = %d, want %d", tc.p, got, tc.want)
		}
	}
}

// TestRankTaggedCommLine: from NCCL 2.29 the Init START line starts with
// the rank ("[Rank %d] %s comm %p rank %d nranks %d …" in src/init.cc).
// posted/122.log (NeMo Automodel#3032) had no communicator size before
// 2026-11-28.
func TestRankTaggedCommLine(t *testing.T) {
	v := analyzeFile(t, "testdata/posted/122.log")
	if v.NRanks == nil || *v.NRanks != 8 || v.NRanksInferred || len(v.Communicators) != 1 || v.Communicators[0].ID != "0x673ba095326ff9de" {
		t.Errorf("nranks %v (inferred %v), communicators %+v", v.NRanks, v.NRanksInferred, v.Communicators)
	}
	for _, m := range []string{"[Rank 5]", "[Rank ] comm 0x1 rank 0", "[Rank 5]comm 0x1 rank 0", "[Ranks 5] comm 0x1 rank 0"} {
		if _, ok := cutRankTag([]byte(m)); ok {
			t.Errorf("cutRankTag(%q) accepted", m)
		}
	}
}

// TestCollNetErrorsNotBeforeConnections: NCCL sets CollNet up after the
// ring and tree connections (ncclCollNetSetup in src/init.cc) unless
// NCCL_RUNTIME_CONNECT defers those, so a log whose errors come from
// CollNet/SHARP setup is not "only errors from before any connection"
// (posted/145.log, nccl#1219, also holds a CollNet connection line;
// posted/146.log, nccl#1050). Both said so before 2026-11-28.
func TestCollNetErrorsNotBeforeConnections(t *testing.T) {
	for _, p := range []string{"testdata/posted/145.log", "testdata/posted/146.log"} {
		v := analyzeFile(t, p)
		if v.InterNode != "unknown" || strings.Contains(v.Missing, "before any connection") || !strings.Contains(v.Missing, "CollNet") {
			t.Errorf("%s: %s: missing %q", p, v.InterNode, v.Missing)
		}
	}
}

// TestResultNameLine: PyTorch's "ncclInternalError: Internal check
// failed." detail line is an NCCL failure even without the "NCCL error
// in: …" line above it (posted/150.log, nccl#1837, which had no errors
// before 2026-11-28), and a framework error alone does not date the
// failure before the connections.
func TestResultNameLine(t *testing.T) {
	v := analyzeFile(t, "testdata/posted/150.log")
	if len(v.Errors) != 1 || v.Errors[0].Code != "framework_nccl_error" || strings.Contains(v.Missing, "before any connection") {
		t.Errorf("errors %+v, missing %q", v.Errors, v.Missing)
	}
	if foreignRules[frameworkError].code != "framework_nccl_error" {
		t.Fatal("frameworkError does not name the framework_nccl_error rule")
	}
	for m, want := range map[string]bool{
		"[trainer0|0]:ncclInternalError: Internal check failed.":         true,
		"ncclRemoteError: A call failed possibly due to a network error": true,
		"ncclSuccess: no error": false, "ncclInProgress: pending": false,
		"ValueError: bad value": false, "myncclFooError: x": false,
	} {
		if got := resultLine([]byte(m)); got != want {
			t.Errorf("resultLine(%q) = %v", m, got)
		}
	}
}
