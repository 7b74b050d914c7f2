package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// label prefixes every line the way srun --label does, and interleaves the
// tasks' lines as srun may.
func label(docs ...string) string {
	split := make([][]string, len(docs))
	for i, d := range docs {
		split[i] = strings.Split(strings.TrimRight(d, "\n"), "\n")
	}
	var b strings.Builder
	for line := 0; ; line++ {
		any := false
		for task, lines := range split {
			if line < len(lines) {
				fmt.Fprintf(&b, "%d: %s\n", task, lines[line])
				any = true
			}
		}
		if !any {
			return b.String()
		}
	}
}

func summarize(t *testing.T, input string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run([]string{"summarize"}, strings.NewReader(input), &out, &errb, func(string) string { return "" })
	return code, out.String(), errb.String()
}

func TestSummarize(t *testing.T) {
	// Each report comes from its own node, named as Slurm names it.
	report := func(node, spec string) string {
		t.Setenv("SLURMD_NODENAME", node)
		_, out, _ := runCLI(t, "check", "--simulate", spec, "--checks", "gpu", "--format", "json")
		return out
	}
	healthy, remap, ecc := report("gpu001", "dgx-h100"), report("gpu002", "dgx-h100:row-remap-pending=3"), report("gpu003", "dgx-a100:ecc-uncorrectable=5,row-remap-pending=1")

	t.Run("srun --label, interleaved", func(t *testing.T) {
		code, out, errs := summarize(t, label(healthy, remap, ecc))
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
		}
		lines := strings.Split(out, "\n")
		// Worst first: the node with two failures, then one, then the healthy one.
		if !strings.HasPrefix(lines[0], "NODE") || !strings.Contains(lines[0], "gpu.row_remap") || !strings.Contains(lines[0], "gpu.ecc") ||
			!strings.HasPrefix(lines[1], "gpu003 (simulated dgx-a100) [2]") || !strings.HasPrefix(lines[2], "gpu002 (simulated dgx-h100) [1]") || !strings.HasPrefix(lines[3], "gpu001 (simulated dgx-h100) [0]") {
			t.Errorf("table:\n%s", out)
		}
		if !strings.Contains(lines[3], "PASS*") || !strings.Contains(out, "gpu002 (simulated dgx-h100) [1]: fail gpu.row_remap: GPU 3") ||
			!strings.Contains(out, "3 report(s): 2 fail, 1 pass") || !strings.Contains(out, "simulated") {
			t.Errorf("report:\n%s", out)
		}
	})
	t.Run("plain concatenation, all healthy", func(t *testing.T) {
		code, out, _ := summarize(t, healthy+healthy)
		if code != 0 || !strings.Contains(out, "2 report(s): 2 pass") || strings.Contains(out, "gpu.") {
			t.Errorf("exit %d\n%s", code, out)
		}
	})
	t.Run("nodes told apart without srun --label", func(t *testing.T) {
		_, out, _ := summarize(t, healthy+remap)
		if !strings.Contains(out, "\ngpu001 (simulated dgx-h100)  ") || !strings.Contains(out, "\ngpu002 (simulated dgx-h100)  ") {
			t.Errorf("rows not named by node:\n%s", out)
		}
	})
	t.Run("a torn report costs itself, not the others", func(t *testing.T) {
		torn := healthy[:len(healthy)/2]
		code, out, _ := summarize(t, torn+"\n"+remap)
		if code != 1 || !strings.Contains(out, "unreadable report #1") || !strings.Contains(out, "1 report(s): 1 fail, 1 unreadable") {
			t.Errorf("exit %d\n%s", code, out)
		}
	})
	t.Run("not a report", func(t *testing.T) {
		if code, _, errs := summarize(t, ""); code != 2 || !strings.Contains(errs, "no reports") {
			t.Errorf("empty input: exit %d %s", code, errs)
		}
		if code, out, _ := summarize(t, `{"hello": "world"}`); code != 1 || !strings.Contains(out, "not a gpuprobe report") {
			t.Errorf("foreign JSON: exit %d %s", code, out)
		}
	})
}
