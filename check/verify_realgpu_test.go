package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

// TestVerifyRealGPURun7 re-judges what verify measured on a real H100 80GB
// HBM3 (testdata/realgpu-run7-verify, SOURCE): the node as nvidia-smi -q
// showed it (Gen5 x16, no NVLink) with the captured figures must pass every
// row it passed there, with the same share of the expected figure. A change
// to the expectation table that would fail a healthy real H100 fails here;
// the figures cut to 60% must not pass, so the test can fail.
func TestVerifyRealGPURun7(t *testing.T) {
	for _, file := range []string{"verify-quick.json", "verify-quick-after.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "realgpu-run7-verify", file))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Verify *state.Verify `json:"verify"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || doc.Verify == nil || len(doc.Verify.Measurements) != 5 {
			t.Fatalf("%s: %v", file, err)
		}
		judge := func(v *state.Verify) map[string]Result {
			n := verifyNode(h100, 1, false)
			n.Verify = v
			out := map[string]Result{}
			for _, c := range All() {
				if strings.HasPrefix(c.ID, "verify.") {
					out[c.ID] = c.Run(n, DefaultConfig())
				}
			}
			return out
		}
		got := judge(doc.Verify)
		for id, want := range map[string]struct {
			status Status
			text   string
		}{
			"verify.run":     {Pass, "measured 1 GPUs (quick tier)"},
			"verify.h2d":     {Pass, "host → device: 1 GPUs at 5"},
			"verify.d2h":     {Pass, "device → host: 1 GPUs at 5"},
			"verify.d2d":     {Pass, "% of expected (3,350 GB/s ÷ 2 (read + write) × 0.8 achieved)"},
			"verify.peer":    {Skip, "not measured"},
			"verify.compute": {Pass, "FP32 FMA: 1 GPUs at 63.7 TFLOP/s, 119% of expected"},
			"verify.memtest": {Pass, "1024 MiB each written and read back unchanged"},
		} {
			r := got[id]
			if r.Status != want.status || !strings.Contains(r.Summary, want.text) {
				t.Errorf("%s %s: %s %q, want %s containing %q", file, id, r.Status, r.Summary, want.status, want.text)
			}
		}
		// The same run at 60% of what it measured: each copy and the FMA
		// rate fall below the table's floor.
		slow := *doc.Verify
		slow.Measurements = append([]state.Measurement(nil), doc.Verify.Measurements...)
		for i := range slow.Measurements {
			if m := &slow.Measurements[i]; m.Kind != state.MeasureMemTest {
				m.Value *= 0.6
			}
		}
		for id, r := range judge(&slow) {
			if id == "verify.h2d" || id == "verify.d2h" || id == "verify.d2d" || id == "verify.compute" {
				if r.Status == Pass {
					t.Errorf("%s %s at 60%%: %s %q, want not pass", file, id, r.Status, r.Summary)
				}
			}
		}
	}
}
