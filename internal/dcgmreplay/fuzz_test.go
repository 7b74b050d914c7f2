package dcgmreplay

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse feeds the DCGM excerpt parser arbitrary text, seeded with the
// pinned excerpt and cuts of it: never a panic, no more generations than
// lines, generations numbered from 1, and positive rates.
func FuzzParse(f *testing.F) {
	raw, err := os.ReadFile("../../" + Source)
	if err != nil {
		f.Fatal(err)
	}
	s := string(raw)
	f.Add(s)
	f.Add(s[:len(s)/2])
	f.Add(strings.ReplaceAll(s, "1000", "0"))
	f.Add(strings.ReplaceAll(s, "x10^", "x10^99"))
	f.Add(signature)
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		gens, err := Parse(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if n := strings.Count(s, "\n") + 1; len(gens) > n {
			t.Fatalf("%d generations from %d lines", len(gens), n)
		}
		for i, g := range gens {
			if g.Gen != i+1 || g.Divisor <= 0 || g.Rate <= 0 {
				t.Fatalf("generation %d: %+v", i, g)
			}
		}
	})
}
