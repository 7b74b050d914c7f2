package busid

import "testing"

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"00000000:19:00.0", "0000:19:00.0"}, // NVML
		{"0000:3B:00.0", "0000:3b:00.0"},     // nvidia-smi
		{"19:00.0", "0000:19:00.0"},          // lspci without -D
		{"0000:1b:00", "0000:1b:00.0"},       // NVRM Xid line (slot only)
		{" 0001:c1:00.1 ", "0001:c1:00.1"},
		{"not-a-bus", "not-a-bus"},
		{"0000:1g:00.0", "0000:1g:00.0"},
		{"0000:19:20.0", "0000:19:20.0"}, // device 0x20 > 0x1f: not an address, kept as read
	} {
		if got := Canonical(tc.in); got != tc.want {
			t.Errorf("Canonical(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestValidAndSlot(t *testing.T) {
	if !Valid("0000:19:00.0") || Valid("19:00.0") || Valid("0000:19:00") || Valid("devices") {
		t.Error("Valid accepts or refuses the wrong names")
	}
	id, err := Parse("00000000:DB:00.0")
	if err != nil || id.Slot() != "0000:db:00" {
		t.Errorf("Slot = %q, %v", id.Slot(), err)
	}
	if !SameSlot("0000:1b:00", "00000000:1B:00.0") || SameSlot("0000:1b:00", "0000:1c:00.0") {
		t.Error("SameSlot wrong")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"00000000:19:00.0", "19:00.0", "0000:1b:00", ":", "ffffffff:ff:1f.7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(id.String())
		if err != nil || again != id {
			t.Fatalf("%q -> %v -> %q does not round-trip: %v", s, id, id.String(), err)
		}
	})
}
