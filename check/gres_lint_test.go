package check

import (
	"strconv"
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

// FuzzLintGres runs the lints over arbitrary gres.conf text: never a panic,
// and a Links= they pass is one slurmd's gres_links_validate passes too:
// exactly one -1 among its non-empty fields, each -2..1023.
func FuzzLintGres(f *testing.F) {
	for _, s := range []string{"Name=gpu File=/dev/nvidia2 Cores=16-31 Links=0,0,-1,,0,0,0,0,0\n", "AutoDetect=nvml\nName=gpu\nName=gpu\n", "Name=gpu Links=-2,+1,-1\n", "Name=gpu Links=,,,\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g := slurm.ParseGresConfData("gres.conf", []byte(s))
		for _, node := range []string{"", "n1"} {
			LintGres(g, node, "gpu")
			LintAutoDetect(g, node)
		}
		for _, r := range g.Records {
			if !r.LinksSet || len(r.Files) > 1 || GresLinksProblem(r) != "" {
				continue
			}
			self := 0
			for _, p := range strings.Split(r.Links, ",") {
				if p == "" {
					continue
				}
				n, err := strconv.Atoi(p)
				if err != nil || n < -2 || n > 1023 {
					t.Fatalf("Links=%q passed with field %q", r.Links, p)
				}
				if n == -1 {
					self++
				}
			}
			if self != 1 {
				t.Fatalf("Links=%q passed with %d self entries", r.Links, self)
			}
		}
	})
}
