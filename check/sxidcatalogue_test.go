package check

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// The Go table is NVIDIA's CSV, row for row: every code, its name, its
// action and its FATAL/NONFATAL as NVSentinel ships them (the file keeps
// its source line).
func TestNVIDIASXIDTableMatchesItsSource(t *testing.T) {
	raw, err := os.ReadFile("testdata/nvsentinel-sxiderrorsmapping.csv")
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]SXIDAction{}
	for _, a := range []SXIDAction{SXActionIgnore, SXActionResetFabric, SXActionResetGPU, SXActionCheckThermals, SXActionCheckFMConfig,
		SXActionNVLinkWorkflow, SXActionInvestigateLinkSI, SXActionReportIssue, SXActionRunFieldDiag, SXActionCheckLinkMechanical, SXActionReportIssueShort} {
		actions[string(a)] = a
	}
	fatality := map[string]bool{"FATAL": true, "NONFATAL": false}
	rows := 0
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 4 {
			t.Fatalf("line %d: %q", i+1, line)
		}
		code, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		fat, ok := fatality[strings.TrimSpace(f[3])]
		if !ok {
			t.Fatalf("line %d: unknown fatality %q", i+1, f[3])
		}
		want := nvidiaSXID{strings.TrimSpace(f[1]), actions[strings.TrimSpace(f[2])], fat}
		if want.action == "" {
			t.Fatalf("line %d: unknown action %q", i+1, f[2])
		}
		if got, ok := nvidiaSXIDs[code]; !ok || got != want {
			t.Errorf("SXid %d: table has %+v, NVIDIA's file %+v", code, got, want)
		}
		rows++
	}
	if rows != len(nvidiaSXIDs) || rows < 390 {
		t.Errorf("%d rows in the file, %d in the table", rows, len(nvidiaSXIDs))
	}
	// Every FATAL action has gpuprobe's words for its fix.
	for code, row := range nvidiaSXIDs {
		if row.fatal && sxidActionRemedy[row.action] == "" {
			t.Errorf("SXid %d: no remedy for NVIDIA's action %s", code, row.action)
		}
	}
}
