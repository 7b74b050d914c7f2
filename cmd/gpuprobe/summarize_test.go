package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/fleet"
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

// Issue 32: summarize hung on a FIFO with no writer, and held about 9.5x
// its input in memory (1.2 GB of reports: out of memory). A FIFO is now an
// error naming it within the open timeout, and the input is capped (all
// files together) with an error naming the file and the limit.
func TestSummarizeBoundsItsInput(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "reports.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Release the open left waiting for a writer.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	}()
	old := summarizeOpenTimeout
	summarizeOpenTimeout = 200 * time.Millisecond
	defer func() { summarizeOpenTimeout = old }()
	code, _, errs := runWithin(t, 10*time.Second, "summarize", fifo)
	if code == 0 || !strings.Contains(errs, fifo) || !strings.Contains(errs, "FIFO") {
		t.Errorf("summarize FIFO: exit %d %s", code, errs)
	}

	big := filepath.Join(dir, "big.json")
	f, _ := os.Create(big)
	f.Truncate(fleet.MaxInput + 1)
	f.Close()
	code, _, errs = runWithin(t, 20*time.Second, "summarize", big)
	if code == 0 || !strings.Contains(errs, big) || !strings.Contains(errs, "over the size limit") {
		t.Errorf("summarize of a file over the limit: exit %d %s", code, errs)
	}
	// Two files over the limit together.
	half := filepath.Join(dir, "half.json")
	f, _ = os.Create(half)
	f.Truncate(fleet.MaxInput/2 + 1)
	f.Close()
	code, _, errs = runWithin(t, 20*time.Second, "summarize", half, half)
	if code == 0 || !strings.Contains(errs, half) || !strings.Contains(errs, "over the size limit") {
		t.Errorf("summarize of two files over the limit together: exit %d %s", code, errs)
	}
}
