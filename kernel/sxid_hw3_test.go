package kernel

import (
	"strings"
	"testing"
)

// hw3: the switches of a node log side by side, so an SXid's "Severity" and
// "Data" records need not follow their own head: each belongs to the last
// head its switch logged (a real Service VM log: four heads, then the
// details interleaved). Read against the previous record only, they were
// SXids of their own with no severity word.
func TestSXidDetailsInterleavedAcrossSwitches(t *testing.T) {
	l := readString(t, strings.Join([]string{
		"[ 8123.617543] nvidia-nvswitch1: SXid (PCI:0000:00:08.0): 11004, Non-fatal, Link 36 ingress invalid ACL (First)",
		"[ 8123.617548] nvidia-nvswitch2: SXid (PCI:0000:00:09.0): 11004, Non-fatal, Link 42 ingress invalid ACL (First)",
		"[ 8123.617798] nvidia-nvswitch2: SXid (PCI:0000:00:09.0): 11004, Severity 0 Engine instance 42 Sub-engine instance 00",
		"[ 8123.618226] nvidia-nvswitch1: SXid (PCI:0000:00:08.0): 11004, Severity 0 Engine instance 36 Sub-engine instance 00",
		"[ 8123.619785] nvidia-nvswitch1: SXid (PCI:0000:00:08.0): 11004, Data {0x00000008, 0xff9fc39c, 0x00000008, 0xff9fc39c, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}",
		"[ 8123.619817] nvidia-nvswitch2: SXid (PCI:0000:00:09.0): 11004, Data {0x00000008, 0xff9fc39c, 0x00000008, 0xff9fc39c, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}",
		// A lone detail of a switch with no head in the log stays a record.
		"[ 8123.619827] nvidia-nvswitch0: SXid (PCI:0000:00:07.0): 11004, Data {0x00000008}",
	}, "\n")+"\n")
	if len(l.SXIDs) != 3 {
		t.Fatalf("%d SXids, want 3 (two heads, the lone detail): %+v", len(l.SXIDs), l.SXIDs)
	}
	for i, want := range []string{"nvswitch1 non-fatal", "nvswitch2 non-fatal", "nvswitch0 "} {
		if got := l.SXIDs[i].Device + " " + l.SXIDs[i].Severity; got != want {
			t.Errorf("SXid %d: %q, want %q", i, got, want)
		}
	}
}
