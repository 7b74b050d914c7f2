package check

import "testing"

// The Go table is NVIDIA's CSV, row for row: every code, its name, its
// action and its FATAL/NONFATAL as NVSentinel ships them (the file keeps
// its source line).
func TestNVIDIASXIDTableMatchesItsSource(t *testing.T) {
	actions := map[string]SXIDAction{}
	for _, a := range []SXIDAction{SXActionIgnore, SXActionResetFabric, SXActionResetGPU, SXActionCheckThermals, SXActionCheckFMConfig,
		SXActionNVLinkWorkflow, SXActionInvestigateLinkSI, SXActionReportIssue, SXActionRunFieldDiag, SXActionCheckLinkMechanical, SXActionReportIssueShort} {
		actions[string(a)] = a
	}
	fatality := map[string]bool{"FATAL": true, "NONFATAL": false}
	rows := nvsentinelRows(t, "testdata/nvsentinel-sxiderrorsmapping.csv")
	for _, r := range rows {
		fat, ok := fatality[r.fourth]
		if !ok {
			t.Fatalf("line %d: unknown fatality %q", r.line, r.fourth)
		}
		want := nvidiaSXID{r.name, actions[r.action], fat}
		if want.action == "" {
			t.Fatalf("line %d: unknown action %q", r.line, r.action)
		}
		if got, ok := nvidiaSXIDs[r.code]; !ok || got != want {
			t.Errorf("SXid %d: table has %+v, NVIDIA's file %+v", r.code, got, want)
		}
	}
	if rows := len(rows); rows != len(nvidiaSXIDs) || rows < 390 {
		t.Errorf("%d rows in the file, %d in the table", rows, len(nvidiaSXIDs))
	}
	// Every FATAL action has gpuprobe's words for its fix.
	for code, row := range nvidiaSXIDs {
		if row.fatal && sxidActionRemedy[row.action] == "" {
			t.Errorf("SXid %d: no remedy for NVIDIA's action %s", code, row.action)
		}
	}
}
