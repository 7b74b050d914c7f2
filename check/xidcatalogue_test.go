package check

import "testing"

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
		{144, XIDCritical}, {147, XIDCritical}, {150, XIDCritical}, // NVLink 5, were warnings
		{48, XIDCritical}, {79, XIDCritical}, {95, XIDCritical}, {154, XIDCritical},
		{13, XIDWarning}, {31, XIDWarning}, {43, XIDWarning},
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
	for code, row := range xidCatalogue {
		if got := XIDLookup(code, nil); got.Severity != verdictFor(row.action) || got.Action != row.action {
			t.Errorf("Xid %d does not follow the rule from its action %s: %+v", code, row.action, got)
		}
	}
}
