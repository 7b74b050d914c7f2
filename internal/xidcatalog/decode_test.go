package xidcatalog

import (
	"os"
	"testing"
)

// The pinned sheet parses whole: every row's cells add up to the sheet's
// columns with its closing line, and the masks are 32 bits.
func TestParseDecodePinned(t *testing.T) {
	raw, err := os.ReadFile("../../third_party/nvidia-xid-catalog/xid144-150-decode.txt")
	if err != nil {
		t.Fatal(err)
	}
	rows, guidance, err := ParseDecode(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 95 {
		t.Errorf("%d decode rows, want 95", len(rows))
	}
	// The example: 145 RLW_RXPIPE, IntrInfo 0x0409a0c2 (V1),
	// Error Status 0x8: IGNORE.
	n := 0
	for _, r := range rows {
		if r.Code == 145 && r.V1.Match(0x0409a0c2) && len(r.Status) == 1 && r.Status[0] == 8 {
			n++
			if r.Subcode != "RLW_RXPIPE" || r.Action != "IGNORE" {
				t.Errorf("example row: %+v", r)
			}
		}
	}
	if n != 1 {
		t.Errorf("example matches %d rows", n)
	}
	classes := map[string]bool{}
	for _, g := range guidance {
		classes[g.Class] = true
	}
	for _, c := range []string{"IGNORE", "RESET_GPU", "XID_154_EVAL", "CONTACT_SUPPORT", "WORKFLOW_NVLINK5_ERR"} {
		if !classes[c] {
			t.Errorf("guidance class %s missing", c)
		}
	}
}
