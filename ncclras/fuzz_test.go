package ncclras

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/gpuprobe/gpuprobe/state"
)

// FuzzParse: any text from the RAS port parses without a panic, within
// the bounds, and keeps only valid UTF-8 of bounded length.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "ras", "*.txt"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("#0-0 (1) MISMATCH\n  Rank 1 has status ABORT -- [process information not found]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &state.HangRAS{}
		Parse(data, r)
		if len(r.Groups) > maxGroups || len(r.Unresponsive) > maxProcesses || len(r.Dead) > maxProcesses || len(r.Comms) > maxComms {
			t.Fatalf("bounds: %d groups %d unresponsive %d dead %d comms", len(r.Groups), len(r.Unresponsive), len(r.Dead), len(r.Comms))
		}
		ok := func(s string) {
			if len(s) > maxField || !utf8.ValidString(s) {
				t.Fatalf("kept %q", s)
			}
		}
		for _, p := range append(r.Unresponsive, r.Dead...) {
			ok(p.Node)
			ok(p.GPUs)
		}
		for _, c := range r.Comms {
			if len(c.Splits) > maxSplits || len(c.Missing) > maxListed {
				t.Fatalf("comm bounds %d %d", len(c.Splits), len(c.Missing))
			}
			for _, s := range c.Splits {
				ok(s.What)
				if len(s.Groups) > maxRankGroup {
					t.Fatalf("%d groups", len(s.Groups))
				}
				for _, g := range s.Groups {
					ok(g.Value)
					for _, l := range g.Listed {
						ok(l.Node)
						ok(l.GPU)
					}
				}
			}
		}
	})
}
