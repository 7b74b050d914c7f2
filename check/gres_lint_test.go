package check

import (
	"testing"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// slurmctld refuses a node whose Gres= types one item and not another.
func TestLintGresSpecMixedTypes(t *testing.T) {
	if p := LintGresSpec("x", []slurmstate.GresSpec{{Name: "gpu", Type: "tesla", Count: 1}, {Name: "gpu", Count: 1}}); len(p) != 1 {
		t.Errorf("mixed typed Gres: %v", p)
	}
	if p := LintGresSpec("x", []slurmstate.GresSpec{{Name: "gpu", Type: "a100", Count: 4}, {Name: "gpu", Type: "h100", Count: 4}}); len(p) != 0 {
		t.Errorf("two typed items: %v", p)
	}
}
