package nccl

import "testing"

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
