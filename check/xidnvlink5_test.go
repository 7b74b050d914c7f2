package check

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/internal/xidcatalog"
	"github.com/gpuprobe/gpuprobe/state"
)

// The generated decode table (tools/xidgen) is NVIDIA's "XID 144-150
// Decode" sheet as pinned in third_party, row for row, and every guidance
// class a row names has NVIDIA's text where the Guidance Classes sheet has
// one.
func TestNVLink5DecodeMatchesItsSource(t *testing.T) {
	raw, err := os.ReadFile("../third_party/nvidia-xid-catalog/xid144-150-decode.txt")
	if err != nil {
		t.Fatal(err)
	}
	rows, guidance, err := xidcatalog.ParseDecode(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(nvlink5Decode) {
		t.Fatalf("%d rows in the pinned sheet, %d in the table", len(rows), len(nvlink5Decode))
	}
	for i, r := range rows {
		want := nvlink5Row{r.Code, r.Subcode, mask{r.V1.Care, r.V1.Value}, mask{r.V2.Care, r.V2.Value}, r.Status, r.Action,
			mask{r.V1Action2.Care, r.V1Action2.Value}, mask{r.V2Action2.Care, r.V2Action2.Value}, r.Action2, r.Investigatory, r.Severity}
		if !reflect.DeepEqual(nvlink5Decode[i], want) {
			t.Errorf("row %d:\n table %+v\n sheet %+v", i, nvlink5Decode[i], want)
		}
	}
	text := map[string]string{}
	for _, g := range guidance {
		if _, dup := text[g.Class]; !dup {
			text[g.Class] = g.Action
		}
	}
	for c, a := range nvidiaGuidance {
		if text[c] != a {
			t.Errorf("guidance %s: table %q, sheet %q", c, a, text[c])
		}
	}
	for _, r := range rows {
		for _, c := range []string{r.Action, r.Action2} {
			if c != "" && nvidiaGuidance[c] == "" {
				t.Errorf("Xid %d %s: action %s has no guidance text", r.Code, r.Subcode, c)
			}
		}
	}
	// Every catalogue row for 144-150 sends the reader to this sheet.
	for code := 144; code <= 150; code++ {
		if a := nvidiaXIDs[code].action; a != ActionNVLink5Workflow {
			t.Errorf("Xid %d: catalogue action %s", code, a)
		}
	}
}

// Xid 144-150 lines are judged by NVIDIA's decode of their IntrInfo and
// Error Status registers (issue 26): each case failed gpu.xid before the
// decode, except the two that must still fail.
func TestNVLink5XIDDecoded(t *testing.T) {
	line := func(code int, driver string, regs ...uint32) state.XIDEvent {
		return state.XIDEvent{Code: code, BusID: "0000:10:00", Registers: regs, DriverVersion: driver, Message: "NVLink 5 error (registers)"}
	}
	for _, tc := range []struct {
		name   string
		evs    []state.XIDEvent
		status Status
		words  []string
	}{
		// Issue 26's real line: "145, ..., RLW_RXPIPE Nonfatal XC0 i0 Link 13
		// (0x0409a0c2 0x00000008 ...)": RLW_RXPIPE, status 0x8, IGNORE.
		{"issue 26: 145 RLW_RXPIPE 0x8", []state.XIDEvent{line(145, "", 0x0409a0c2, 0x8, 0, 0, 0, 0, 0)}, Pass,
			[]string{"IGNORE"}},
		{"149 NETIR_BER_EVENT non-fatal (V1)", []state.XIDEvent{line(149, "550.127.05", 0x226, 0x2)}, Pass, []string{"IGNORE"}},
		{"149 NETIR_BER_EVENT non-fatal (V2)", []state.XIDEvent{line(149, "580.65.06", 0x13, 0x0)}, Pass, []string{"IGNORE"}},
		{"145 RLW_CTRL 0x80000000", []state.XIDEvent{line(145, "", 0x62, 0x80000000)}, Pass, []string{"IGNORE"}},
		// RESET_GPU rows fail with NVIDIA's action.
		{"145 RLW_REMAP 0x40 fatal", []state.XIDEvent{line(145, "570.86.15", 0x82, 0x40)}, Fail,
			[]string{"RLW_REMAP", "RESET_GPU", "Fatal", "nvidia-smi -r", "CONTACT_SUPPORT"}},
		{"149 link down (V2)", []state.XIDEvent{line(149, "580.65.06", 0x00100011, 0)}, Fail,
			[]string{"NETIR_LINK_EVT/NETIR_LINK_DOWN", "RESET_GPU", "REPORT_ISSUE"}},
		// A promotable row: IntrInfo's fatal bit selects action 2.
		{"145 RLW_RXPIPE promoted", []state.XIDEvent{line(145, "550.54.15", 0x4c2, 0x1)}, Fail, []string{"RLW_RXPIPE", "RESET_GPU"}},
		// XID_154_EVAL: restart the application unless an Xid 154 follows.
		{"145 RLW_REMAP 0x1 solo", []state.XIDEvent{line(145, "580.65.06", 0x04, 0x1)}, Warn,
			[]string{"XID_154_EVAL", "restart the application unless an Xid 154 follows"}},
		{"145 RLW_REMAP 0x1 then 154", []state.XIDEvent{line(145, "580.65.06", 0x04, 0x1),
			{Code: 154, BusID: "0000:10:00", Message: "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"}}, Fail,
			[]string{"Xid 154: the driver now requires a GPU reset"}},
		// No row: stays a failure, and says so.
		{"no row", []state.XIDEvent{line(145, "", 0x82, 0x400)}, Fail, []string{"matched no row"}},
		{"no registers", []state.XIDEvent{{Code: 146, BusID: "0000:10:00"}}, Fail, []string{"registers were not in the line"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := healthy(func(n *state.Node) { n.Kernel = kernelState(86400, tc.evs) })
			r := checkXID(n, DefaultConfig())
			all := r.Summary + "\n" + strings.Join(r.Details, "\n") + "\n" + r.Remedy
			if r.Status != tc.status {
				t.Errorf("status %s, want %s: %s", r.Status, tc.status, all)
			}
			for _, w := range tc.words {
				if !strings.Contains(all, w) {
					t.Errorf("%q missing from %s", w, all)
				}
			}
		})
	}
}
