package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
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
// error naming it within the open timeout; the input is streamed (see
// TestSummarizeStreams) and a runaway line or report costs itself.
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

	// 64 MiB of NUL bytes: one line over the line limit, skipped and said.
	big := filepath.Join(dir, "big.json")
	f, _ := os.Create(big)
	f.Truncate(64<<20 + 1)
	f.Close()
	code, out, errs := runWithin(t, 60*time.Second, "summarize", big)
	if code != 1 || !strings.Contains(out, big+" line 1: longer than 16 MiB, skipped") || !strings.Contains(out, "0 report(s): 1 unreadable") {
		t.Errorf("summarize of a 64 MiB line: exit %d\n%s%s", code, out, errs)
	}
	// A document that never closes, over many short lines: that report is
	// skipped once it passes the report limit, and the rest is read.
	var open strings.Builder
	open.WriteString("{\"schema_version\": 1, \"x\": [\n")
	for open.Len() <= fleet.MaxReport+(1<<20) {
		open.WriteString(strings.Repeat("1,", 1000) + "\n")
	}
	code, out, _ = summarize(t, open.String()+"{\"schema_version\": 1, \"host\": \"after\", \"status\": \"pass\"}\n")
	if code != 1 || !strings.Contains(out, "unreadable report #1: longer than 16 MiB, skipped") || !strings.Contains(out, "\nafter ") {
		t.Errorf("a report that never closes:\n%s", out)
	}
}

// The bug (issue 32): summarize held about 9.5x its input (100 MB of
// reports: 945 MB; 1.2 GB: out of memory) and refused more than 64 MiB.
// It now decodes one report at a time from a stream and keeps only each
// node's row: 200 MB of real reports (~30,000 nodes) through a pipe must
// grow the heap by no more than the rows, far below the input. Measured
// against the growth for a small input in the same run.
func TestSummarizeStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 200 MB of reports")
	}
	var docs []string
	for _, spec := range []string{"dgx-h100", "dgx-h100:row-remap-pending=3", "dgx-a100:ecc-uncorrectable=5"} {
		t.Setenv("SLURMD_NODENAME", "gpu00000")
		_, out, _ := runCLI(t, "check", "--simulate", spec, "--format", "json")
		docs = append(docs, out)
	}
	size := int64(200 << 20)
	if raceEnabled {
		size = 16 << 20 // the race detector runs this some 10x slower (40 MB: 64 s)
	}
	// peak feeds reports totalling n bytes through a pipe and returns the
	// growth of the live heap at its highest (sampled after a collection
	// every 512 reports written: what summarize holds, not garbage the
	// collector has yet to take), the number of reports and summarize's
	// output.
	peak := func(n int64) (growth uint64, reports int, out string) {
		pr, pw := io.Pipe()
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		var high uint64
		go func() {
			var written int64
			for i := 0; written < n; i++ {
				d := strings.Replace(docs[i%len(docs)], "gpu00000", fmt.Sprintf("gpu%05d", i), 1)
				if _, err := io.WriteString(pw, d); err != nil {
					break
				}
				written += int64(len(d))
				reports++
				if i%512 == 0 {
					runtime.GC()
					runtime.ReadMemStats(&ms)
					high = max(high, ms.HeapAlloc)
				}
			}
			pw.Close()
		}()
		var b, e bytes.Buffer
		code := run([]string{"summarize"}, pr, &b, &e, func(string) string { return "" })
		if code != 1 || e.Len() > 0 {
			t.Fatalf("summarize of %d bytes: exit %d: %s", n, code, e.String())
		}
		if high > base {
			growth = high - base
		}
		return growth, reports, b.String()
	}
	small, nsmall, _ := peak(2 << 20)
	big, nbig, out := peak(size)
	if want := fmt.Sprintf("%d report(s): ", nbig); !strings.Contains(out, want) {
		t.Fatalf("want %q in the summary:\n%s", want, out[max(0, len(out)-500):])
	}
	perNode := float64(big-min(big, small)) / float64(nbig-nsmall)
	t.Logf("heap growth: %.1f MiB for %d reports (%.1f MiB), %.1f MiB for %d reports (%.0f MiB); %.0f bytes per further node",
		float64(small)/(1<<20), nsmall, 2.0, float64(big)/(1<<20), nbig, float64(size)/(1<<20), perNode)
	// The rows: some hundred bytes a node (a report is ~7 KiB): 30,000
	// nodes' rows are ~16 MiB here, an eighth of the input at most. Before,
	// the growth was ~9.5x the input.
	if limit := small + uint64(size/8); big > limit {
		t.Errorf("heap grew by %.0f MiB for %.0f MiB of input (small input: %.1f MiB): not streamed",
			float64(big)/(1<<20), float64(size)/(1<<20), float64(small)/(1<<20))
	}
	if perNode > 1024 {
		t.Errorf("%.0f bytes of heap per node: a row should be some hundred", perNode)
	}
}
