package check

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/gpuprobe/gpuprobe/kernel"
	"github.com/gpuprobe/gpuprobe/state"
)

// TestNVSentinelNVLink5AndXid154Cases holds check's reading of the Xid
// lines whose action NVSentinel derives from the line itself (the Xid
// 144-150 IntrInfo/Error Status decode, and Xid 154's new recovery action)
// to what NVSentinel's parser tests assert (kernel/testdata/nvsentinel,
// SOURCE there). NVSentinel's actions are its proto's names for NVIDIA's:
// RESET_GPU is COMPONENT_RESET there, no matching row is NONE. The other
// cases' actions are NVSentinel's remediation policy for a code, not a
// reading of the line, and are not compared here (check's catalogue is
// NVIDIA's, third_party/nvidia-xid-catalog).
func TestNVSentinelNVLink5AndXid154Cases(t *testing.T) {
	b, err := os.ReadFile("../kernel/testdata/nvsentinel/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []struct {
			Test, Name, Driver, Input, Kind, Action, Mnemonic string
			XID                                               int
			Match                                             bool
		}
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	asNVSentinel := map[string]string{"RESET_GPU": "COMPONENT_RESET"}
	n := 0
	for _, c := range f.Cases {
		if c.Kind != "xid" || !c.Match || !(isNVLink5(c.XID) || c.XID == 154) {
			continue
		}
		n++
		ev, ok := kernel.Parse([]byte(c.Input))
		if !ok || ev.Code != c.XID {
			t.Errorf("%s/%s: kernel.Parse = %+v %v", c.Test, c.Name, ev, ok)
			continue
		}
		ev.DriverVersion = c.Driver
		if c.XID == 154 {
			a, read := latestRecoveryActions([]state.XIDEvent{ev})[ev.BusID]
			switch {
			case !read:
				// "154 (": no action in the line. NVSentinel falls back to
				// CONTACT_SUPPORT; check leaves the line to NVIDIA's
				// catalogue row for 154 (informational: the action is the
				// line's), so it drains nothing on a line that says nothing.
				if c.Action != "CONTACT_SUPPORT" {
					t.Errorf("%s: NVSentinel %s for a line with no readable action", c.Name, c.Action)
				}
			case a.code == 0 && c.Action != "NONE", a.code == 1 && c.Action != "COMPONENT_RESET":
				t.Errorf("%s: check reads recovery action %#x (%s), NVSentinel %s", c.Name, a.code, a.words, c.Action)
			}
			continue
		}
		d := decodeNVLink5(ev)
		got := "NONE"
		if d.row != nil {
			got = d.action
			if a, ok := asNVSentinel[got]; ok {
				got = a
			}
			if c.Mnemonic != "" && d.row.subcode != c.Mnemonic {
				t.Errorf("%s: row %s, NVSentinel %s", c.Name, d.row.subcode, c.Mnemonic)
			}
		}
		if got != c.Action {
			t.Errorf("%s/%s: check decodes %s (%s; %s), NVSentinel %s", c.Test, c.Name, got, d.layout, d.why, c.Action)
		}
	}
	if n != 8 {
		t.Errorf("%d Xid 144-150 and 154 cases, want 8", n)
	}
}
