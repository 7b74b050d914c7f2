package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

func h100Ranks(nodes, per int) []state.CollectiveRank {
	var out []state.CollectiveRank
	for n := 0; n < nodes; n++ {
		for g := 0; g < per; g++ {
			out = append(out, state.CollectiveRank{Rank: n*per + g, Host: string(rune('a' + n)), Device: g, Model: "NVIDIA H100 80GB HBM3"})
		}
	}
	return out
}

func busRows(vals map[int64]float64, wrong int64) []state.Measurement {
	var out []state.Measurement
	for b, v := range vals {
		out = append(out, state.Measurement{Kind: state.MeasureBusBW, GPU: -1, Peer: -1, Bytes: b, Value: v, Mismatches: wrong})
	}
	return out
}

func TestVerifyFromNcclTests(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name    string
		c       state.CollectiveRun
		rows    []state.Measurement
		status  Status
		summary string
	}{
		{"healthy 8xH100", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(1, 8)},
			busRows(map[int64]float64{256 << 20: 300, 4 * gib: 470}, 0), Pass, "470.00 GB/s at 4 GiB"},
		// The small-size 300 is never judged: only >= 1 GiB.
		{"degraded 8xH100", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(1, 8)},
			busRows(map[int64]float64{gib: 320}, 0), Warn, "89% of the 360 GB/s"},
		{"slow 8xH100", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(1, 8)},
			busRows(map[int64]float64{8 * gib: 200}, 0), Fail, "56% of the 360 GB/s"},
		{"avg line is not the figure", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(1, 8), AvgBusBW: []float64{40}},
			busRows(map[int64]float64{8 * gib: 470}, 0), Pass, "470.00"},
		{"4 of 8 GPUs: no row", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(1, 4)},
			busRows(map[int64]float64{8 * gib: 100}, 0), Skip, "no expectation for this shape"},
		{"two nodes: no row", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(2, 8)},
			busRows(map[int64]float64{8 * gib: 20}, 0), Skip, "no expectation for this shape"},
		{"unknown test: no row", state.CollectiveRun{Headers: 1, Ranks: h100Ranks(1, 8)},
			busRows(map[int64]float64{8 * gib: 100}, 0), Skip, "no expectation"},
		{"wrong data fails", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(1, 8), WrongCounted: true},
			busRows(map[int64]float64{8 * gib: 470}, 3), Fail, "3 wrong element(s)"},
		{"out of bounds fails", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(1, 8), OutOfBounds: []state.OutOfBounds{{Count: 2, Status: "FAILED", Line: 9}}},
			busRows(map[int64]float64{8 * gib: 470}, 0), Fail, "out of bounds values: 2 FAILED"},
		{"nranks 1 everywhere", state.CollectiveRun{Test: "all_reduce_perf", Headers: 2, Ranks: []state.CollectiveRank{{Rank: 0, Host: "a"}, {Rank: 0, Host: "b"}}},
			busRows(map[int64]float64{8 * gib: 0}, 0), Error, "measured nothing: every process reports nranks 1"},
		{"nranks 1 from INFO lines", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(1, 1), CommRanks: []int{1}},
			busRows(map[int64]float64{8 * gib: 0}, 0), Error, "measured nothing"},
		{"separate 8-rank worlds", state.CollectiveRun{Test: "all_reduce_perf", Headers: 2, Ranks: append(h100Ranks(1, 8), h100Ranks(1, 8)...)},
			busRows(map[int64]float64{8 * gib: 470}, 0), Error, "2 processes each ran their own 8-rank test"},
		{"tcp sockets warn", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(2, 8),
			Transports: []state.TransportLine{{Kind: "channel", Name: "NET/Socket", Line: 40, Text: "a:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0"}}},
			busRows(map[int64]float64{8 * gib: 10}, 0), Warn, "TCP sockets: NCCL used NET/Socket (line 40"},
		// "Using network Socket" on two nodes: the network NCCL chose.
		{"socket network across nodes warns", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(2, 8),
			Transports: []state.TransportLine{{Kind: "network", Name: "Socket", Line: 12, Text: "a:1:2 [0] NCCL INFO Using network Socket"}}},
			busRows(map[int64]float64{8 * gib: 10}, 0), Warn, "TCP sockets: NCCL used Socket (line 12"},
		// The same line on one node (nNodes 1, no rank lines): NCCL sets
		// the plugin up, nothing goes over it; the one-node row judges.
		{"socket network on one node is no finding", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Nodes: 1,
			Transports: []state.TransportLine{{Kind: "network", Name: "Socket", Line: 12, Text: "a:1:2 [0] NCCL INFO Using network Socket"}}},
			busRows(map[int64]float64{8 * gib: 470}, 0), Skip, "no expectation for this shape"},
		{"socket network on one 8 x H100 node", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(1, 8),
			Transports: []state.TransportLine{{Kind: "network", Name: "Socket", Line: 12, Text: "a:1:2 [0] NCCL INFO Using network Socket"}}},
			busRows(map[int64]float64{8 * gib: 470}, 0), Pass, "470.00 GB/s at 8 GiB"},
		{"too small", state.CollectiveRun{Test: "all_reduce_perf", Headers: 1, Ranks: h100Ranks(1, 8)},
			busRows(map[int64]float64{256 << 20: 200}, 0), Skip, "largest size 256 MiB is under 1 GiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			n := &state.Node{Verify: &state.Verify{Source: "nccl-tests", Measurements: tc.rows, From: &state.FromRun{Collective: &c}}}
			r := checkNcclTests(n, DefaultConfig())
			if r.Status != tc.status || !strings.Contains(r.Summary, tc.summary) {
				t.Errorf("= %s %q, want %s containing %q\n%v", r.Status, r.Summary, tc.status, tc.summary, r.Details)
			}
		})
	}
	if r := checkNcclTests(&state.Node{}, DefaultConfig()); r.Status != Skip {
		t.Errorf("no verify state: %s", r.Status)
	}
}

func TestVerifyFromDcgmiDiag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		d       state.DiagRun
		status  Status
		summary string
		devices int
	}{
		{"all pass", state.DiagRun{Tests: []state.DiagTest{{Name: "memory", Result: "Pass", GPUs: []state.DiagResult{{GPU: 0, Status: "Pass"}}}}}, Pass, "1 test(s) passed", 0},
		{"skip is not a failure", state.DiagRun{Tests: []state.DiagTest{{Name: "Denylist", Result: "Pass"}, {Name: "PCIe", Result: "Skip - All"}}}, Pass, "1 test(s) passed, 1 skipped", 0},
		{"everything skipped", state.DiagRun{Tests: []state.DiagTest{{Name: "PCIe", Result: "Skip - All"}}}, Skip, "every test was skipped", 0},
		{"a GPU fails", state.DiagRun{Tests: []state.DiagTest{{Name: "memory", Result: "Fail", GPUs: []state.DiagResult{{GPU: 0, Status: "Pass"}, {GPU: 3, Status: "Fail"}},
			Messages: []string{"Warning: GPU3 memory error"}}}}, Fail, "GPU 3 failed memory: Warning: GPU3 memory error", 1},
		{"harness error", state.DiagRun{Tests: []state.DiagTest{{Name: "software", Result: "Fail", GPUs: []state.DiagResult{{GPU: 0, Status: "Pass"}, {GPU: 1, Status: "Pass"}},
			Messages: []string{"Error: unable to set CPU affinity"}}}}, Error, "a harness error, not a GPU failure: Error: unable to set CPU affinity", 0},
		{"old format names the GPU", state.DiagRun{Tests: []state.DiagTest{{Name: "PCIe", Result: "Fail - GPU: 1"}}}, Fail, "GPU 1 failed PCIe", 1},
		{"runtime error", state.DiagRun{Errors: []string{"Error: Unable to complete diagnostic for group 2147483647."}}, Error, "dcgmi could not run", 0},
		{"unknown word is not a pass", state.DiagRun{Tests: []state.DiagTest{{Name: "x", Result: "Incomplete"}}}, Error, "not one dcgmi prints", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.d
			r := checkDcgmiDiag(&state.Node{Verify: &state.Verify{Source: "dcgmi-diag", From: &state.FromRun{Diag: &d}}}, DefaultConfig())
			if r.Status != tc.status || !strings.Contains(r.Summary, tc.summary) || len(r.Devices) != tc.devices {
				t.Errorf("= %s %q devices %v, want %s containing %q, %d devices", r.Status, r.Summary, r.Devices, tc.status, tc.summary, tc.devices)
			}
		})
	}
}

func TestVerifyChecksAreNotNodeChecks(t *testing.T) {
	all, _ := Select(nil, nil)
	for _, c := range all {
		if strings.HasPrefix(c.ID, "verify.nccl_tests") || c.ID == "verify.dcgmi_diag" {
			t.Errorf("%s is selected by check/serve", c.ID)
		}
	}
	v, err := VerifyChecks([]string{"verify.nccl_tests", "verify.dcgmi_diag"}, nil)
	if err != nil || len(v) != 2 {
		t.Errorf("VerifyChecks = %v, %v", v, err)
	}
}
