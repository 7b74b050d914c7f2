package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/slurm"
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

// The "parses but is wrong" rules that used to live in the parser
// (slurm/gres.go): findings naming file and line, a FAIL of slurm.gres as
// before.
func TestLintGresMovedFromParser(t *testing.T) {
	g := slurm.ParseGresConfData("gres.conf", []byte("AutoDetect=magic\nNodeName=gpu001 AutoDetect=nvm\nName=gpu File=/dev/nvidia0 MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21\n"))
	var got []string
	for _, p := range append(LintAutoDetect(g, "gpu001"), LintGres(g, "gpu001", "gpu")...) {
		got = append(got, p.String())
	}
	want := []string{`gres.conf:1: AutoDetect="magic" is not one of`, `gres.conf:2: AutoDetect="nvm" is not one of`, "gres.conf:3: File= and MultipleFiles= on one line"}
	if len(got) != len(want) {
		t.Fatalf("findings %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("finding %d = %q, want %q", i, got[i], want[i])
		}
	}
	n := gresNode("gpu001", 1, "NVIDIA H100 80GB HBM3", nil, confs{slurm: "GresTypes=gpu\nNodeName=gpu001 Gres=gpu:1\n", gres: "AutoDetect=magic\nName=gpu File=/dev/nvidia0\n"}, nil)
	if r := checkSlurmGres(n, DefaultConfig()); r.Status != Fail || !strings.Contains(r.Summary, `gres.conf:1: AutoDetect="magic"`) {
		t.Errorf("slurm.gres: %s %q", r.Status, r.Summary)
	}
}
