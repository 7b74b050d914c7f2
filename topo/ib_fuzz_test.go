package topo

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseIB reads arbitrary /sys/class/infiniband/*/ports/*/state and
// rate text: never a panic, a rate that is finite and not negative (the
// topology must encode as JSON), and a state name that is a trimmed part
// of the input.
func FuzzParseIB(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "5: LinkUp", "1: DOWN\n", "400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)", "NaN Gb/sec", "-Inf", "-1 Gb/sec", "1e400", "", ":", "x:y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := parseIBRate(s)
		if r < 0 {
			t.Fatalf("rate %v from %q", r, s)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("rate %v from %q: %v", r, s, err)
		}
		_, name := parseIBState(s)
		if !strings.Contains(s, name) || name != strings.TrimSpace(name) {
			t.Fatalf("state name %q from %q", name, s)
		}
	})
}
