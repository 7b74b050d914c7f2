package check

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// The verdict of each code follows NVIDIA's Xid catalogue ("Resolution
// Bucket (Immediate Action)"), through one rule (verdictFor). The cases
// marked "was" are the false alarms and misses of the earlier table.
func TestXIDCatalogue(t *testing.T) {
	for _, tc := range []struct {
		code int
		want XIDSeverity
	}{
		{63, XIDIgnored},  // was critical: NVIDIA says IGNORE
		{92, XIDIgnored},  // was critical: IGNORE
		{94, XIDWarning},  // was critical: RESTART_APP (contained ECC)
		{46, XIDCritical}, // was a warning: RESET_GPU
		{110, XIDCritical}, {136, XIDCritical}, {143, XIDCritical}, {155, XIDCritical}, {156, XIDCritical}, {158, XIDCritical},
		{144, XIDCritical}, {147, XIDCritical}, {150, XIDCritical}, // NVLink 5 workflow, were warnings
		{48, XIDCritical}, {79, XIDCritical}, {95, XIDCritical}, {154, XIDCritical},
		{13, XIDWarning}, {31, XIDWarning}, {45, XIDWarning}, {159, XIDWarning},
		// From NVIDIA's full table (NVSentinel's mapping), each a change:
		{43, XIDIgnored},                       // was a warning: IGNORE (the channel reset was verified)
		{137, XIDIgnored},                      // was a warning: IGNORE
		{61, XIDCritical},                      // was a warning: UNEXPECTED_ERR_REPORT_ISSUE (contact support)
		{54, XIDCritical},                      // was unknown: CHECK_MECHANICALS
		{160, XIDCritical}, {162, XIDCritical}, // newest codes: RESTART_BM, RESET_GPU
		{121, XIDIgnored}, {157, XIDIgnored},
		{999, XIDWarning}, // unknown: reported with its own text
	} {
		if got := XIDLookup(tc.code, nil); got.Severity != tc.want || got.Meaning == "" || got.Remedy == "" {
			t.Errorf("Xid %d: %+v, want %s", tc.code, got, tc.want)
		}
	}
	if i := XIDLookup(13, []int{13}); i.Severity != XIDCritical {
		t.Errorf("configured critical set ignored: %+v", i)
	}
	if i := XIDLookup(79, []int{13}); i.Severity != XIDWarning || i.Meaning == "" {
		t.Errorf("configured set must replace the default: %+v", i)
	}
	if i := XIDLookup(63, []int{13}); i.Severity != XIDIgnored {
		t.Errorf("a configured critical set keeps NVIDIA's IGNORE for the rest: %+v", i)
	}
	for code, row := range nvidiaXIDs {
		if got := XIDLookup(code, nil); got.Severity != verdictFor(row.action) || got.Action != row.action || got.Remedy == "" {
			t.Errorf("Xid %d does not follow the rule from its action %s: %+v", code, row.action, got)
		}
	}
	for code := range xidWords {
		if _, ok := nvidiaXIDs[code]; !ok {
			t.Errorf("Xid %d has gpuprobe's words but no row in NVIDIA's table", code)
		}
	}
}

// The Go table is NVIDIA's CSV, row for row: every code, its mnemonic and
// its action as NVSentinel ships them (the file keeps its source line).
func TestNVIDIAXIDTableMatchesItsSource(t *testing.T) {
	actions := map[string]XIDAction{"Follow guidance as it aapplies to another Xid": ActionFollowLinked}
	for _, a := range []XIDAction{ActionIgnore, ActionRestartApp, ActionResetGPU, ActionRestartBM, ActionRestartVM, ActionReportIssue,
		ActionCheckMechanicals, ActionUpdateSWFW, ActionCheckUVM, ActionWorkflow45, ActionWorkflow48, ActionNVLinkWorkflow, ActionNVLink5Workflow} {
		actions[string(a)] = a
	}
	rows := nvsentinelRows(t, "testdata/nvsentinel-xiderrorsmapping.csv")
	for _, r := range rows {
		want := nvidiaXID{r.name, actions[r.action]}
		if want.action == "" {
			t.Fatalf("line %d: unknown action %q", r.line, r.action)
		}
		if got := nvidiaXIDs[r.code]; got != want {
			t.Errorf("Xid %d: table has %+v, NVIDIA's file %+v", r.code, got, want)
		}
	}
	if rows := len(rows); rows != len(nvidiaXIDs) || rows < 160 {
		t.Errorf("%d rows in the file, %d in the table", rows, len(nvidiaXIDs))
	}
}

// nvsentinelRow is one data row of an NVSentinel mapping file
// (code,name,action,fourth column), as the tables are checked against it.
type nvsentinelRow struct {
	line                 int
	code                 int
	name, action, fourth string
}

// nvsentinelRows reads a mapping file check/testdata keeps verbatim under
// its '#' source lines; a malformed row stops the test.
func nvsentinelRows(t *testing.T, path string) []nvsentinelRow {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []nvsentinelRow
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 4 {
			t.Fatalf("%s line %d: %q", path, i+1, line)
		}
		code, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatalf("%s line %d: %v", path, i+1, err)
		}
		out = append(out, nvsentinelRow{i + 1, code, strings.TrimSpace(f[1]), strings.TrimSpace(f[2]), strings.TrimSpace(f[3])})
	}
	return out
}
