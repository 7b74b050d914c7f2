package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/report"
)

func doc(host string, status check.Status, results ...check.Result) string {
	d := report.Document{SchemaVersion: 1, Host: host, Status: status, GPUs: 8, Counts: map[string]int{}, Checks: results}
	b, _ := json.MarshalIndent(d, "", "  ")
	return string(b) + "\n"
}

// Lines of two srun tasks, interleaved as srun --label prints them, are
// told apart by task, and the worst node comes first.
func TestReadLabelledInterleaved(t *testing.T) {
	a := strings.Split(strings.TrimSpace(doc("n1", check.Pass, check.Result{ID: "gpu.ecc", Status: check.Pass})), "\n")
	b := strings.Split(strings.TrimSpace(doc("n2", check.Fail, check.Result{ID: "gpu.ecc", Status: check.Fail, Summary: "GPU 3"})), "\n")
	var in strings.Builder
	for i := 0; i < max(len(a), len(b)); i++ {
		if i < len(a) {
			in.WriteString("0: " + a[i] + "\n")
		}
		if i < len(b) {
			in.WriteString("1: " + b[i] + "\n")
		}
	}
	rows, problems, err := Read(strings.NewReader(in.String()), "in")
	if err != nil || len(problems) != 0 || len(rows) != 2 || rows[0].Name != "n1 [0]" || rows[1].Name != "n2 [1]" {
		t.Fatalf("rows %+v, problems %v, err %v", rows, problems, err)
	}
	var out bytes.Buffer
	failed, err := Print(&out, rows, problems)
	lines := strings.Split(out.String(), "\n")
	if err != nil || !failed || !strings.HasPrefix(lines[1], "n2 [1]") || !strings.Contains(out.String(), "n2 [1]: fail gpu.ecc: GPU 3") ||
		!strings.Contains(out.String(), "2 report(s): 1 fail, 1 pass") {
		t.Errorf("failed %v, err %v:\n%s", failed, err, out.String())
	}
}

// A torn report costs itself, not the report after it.
func TestReadTornReport(t *testing.T) {
	healthy, bad := doc("n1", check.Pass), doc("n2", check.Fail, check.Result{ID: "gpu.ecc", Status: check.Fail})
	rows, problems, err := Read(strings.NewReader(healthy[:len(healthy)/2]+"\n"+bad), "in")
	if err != nil || len(rows) != 1 || rows[0].Name != "n2" || len(problems) != 1 || !strings.Contains(problems[0], "unreadable report #1") {
		t.Fatalf("rows %+v, problems %v, err %v", rows, problems, err)
	}
}

// The bug: summarize printed hosts and summaries raw, and stopped at the
// first line over 16 MiB.
func TestHostileAndHugeLines(t *testing.T) {
	const hostile = "evil\x1b[2J\x1b[H  PASS gpu.driver\u202Etxt.exe\u200B"
	mk := func(host, summary string) string {
		d := report.Document{SchemaVersion: 1, Host: host, Status: "fail", GPUs: 8, Counts: map[string]int{"fail": 1},
			Checks: []check.Result{{ID: "gpu.processes", Status: "fail", Summary: summary}}}
		b, _ := json.Marshal(d)
		return string(b)
	}
	input := mk("n1\x1b]0;pwned\x07", hostile) + "\n" + strings.Repeat("x", 17<<20) + "\n" + mk("n2", "ok")
	rows, problems, err := Read(strings.NewReader(input), "-")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	failed, err := Print(&b, rows, problems)
	out := b.String()
	if strings.ContainsAny(out, "\x1b\u202E\u200B\x07") {
		t.Errorf("summarize prints raw control characters:\n%q", out)
	}
	if !strings.Contains(out, "n1") || !strings.Contains(out, "n2") {
		t.Errorf("a report after the 17 MiB line was lost:\n%s", out)
	}
	if !strings.Contains(out, "line 2: longer than 16 MiB, skipped") || !failed || err != nil {
		t.Errorf("failed %v, err %v; the long line is not reported:\n%s", failed, err, out)
	}
}

func FuzzRead(f *testing.F) {
	f.Add("0: {\"schema_version\": 1, \"host\": \"a\", \"status\": \"pass\"}\n1: {\n1: }\n")
	f.Add("{\"schema_version\":1}{\"schema_version\":1}")
	f.Fuzz(func(t *testing.T, s string) {
		rows, problems, err := Read(strings.NewReader(s), "fuzz")
		if err != nil {
			return
		}
		var out bytes.Buffer
		if _, err := Print(&out, rows, problems); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzReadLine(f *testing.F) {
	f.Add("a\nbb\n\nccc", 2)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 1 || max > 1<<10 {
			return
		}
		br := bufio.NewReaderSize(strings.NewReader(s), 16)
		for i := 0; i <= len(s)+1; i++ {
			line, tooLong, err := readLine(br, max)
			if !tooLong && len(line) > max {
				t.Fatalf("line of %d bytes over max %d not flagged", len(line), max)
			}
			if err != nil {
				return
			}
		}
	})
}

// What the rows hold is bounded, all inputs together: a budget spent is an
// error naming the input and the limit, not memory without end.
func TestReadBudgetSpent(t *testing.T) {
	b := NewBudget()
	b.Left = 4 << 10
	one := doc("n1", check.Fail, check.Result{ID: "gpu.ecc", Status: check.Fail, Summary: strings.Repeat("s", 500)})
	if _, _, err := ReadBudget(strings.NewReader(one), "a.json", b); err != nil {
		t.Fatalf("first input within the budget: %v", err)
	}
	_, _, err := ReadBudget(strings.NewReader(strings.Repeat(one, 20)), "b.json", b)
	if err == nil || !strings.Contains(err.Error(), "b.json: over the size limit") || !strings.Contains(err.Error(), "128 MiB") {
		t.Fatalf("got %v, want the budget spent on b.json", err)
	}
}

// Reports arrive a line at a time (a pipe from srun): each is decoded as
// it completes, whatever the read sizes, with the same rows as at once.
func TestReadOneByteAtATime(t *testing.T) {
	a := doc("n1", check.Pass, check.Result{ID: "gpu.ecc", Status: check.Pass})
	bad := doc("n2", check.Fail, check.Result{ID: "gpu.ecc", Status: check.Fail, Summary: "GPU 3"})
	in := a + bad[:len(bad)/2] + "\n" + bad + "0: " + strings.ReplaceAll(strings.TrimSpace(a), "\n", "\n0: ") + "\n"
	rows, problems, err := Read(iotest.OneByteReader(strings.NewReader(in)), "in")
	if err != nil || len(rows) != 3 || len(problems) != 1 || rows[0].Name != "n1" || rows[1].Name != "n2" || rows[2].Name != "n1 [0]" ||
		!strings.Contains(problems[0], "in: unreadable report #2") {
		t.Fatalf("rows %+v, problems %q, err %v", rows, problems, err)
	}
}

// srun tasks each with a report open at once are bounded together: five
// tasks with 14 MiB open each (each under the 16 MiB report limit) are an
// error naming the input and the limit, not 70 MiB held.
func TestReadPendingBounded(t *testing.T) {
	line := `"` + strings.Repeat("x", 1<<20) + `",`
	pr, pw := io.Pipe()
	go func() {
		for task := 0; task < 5; task++ {
			fmt.Fprintf(pw, "%d: {\"schema_version\": 1, \"x\": [\n", task)
		}
		for i := 0; i < 14; i++ {
			for task := 0; task < 5; task++ {
				if _, err := fmt.Fprintf(pw, "%d: %s\n", task, line); err != nil {
					return
				}
			}
		}
		pw.Close()
	}()
	_, _, err := Read(pr, "srun.out")
	pr.Close()
	if err == nil || !strings.Contains(err.Error(), "srun.out: over the size limit: more than 64 MiB of unfinished reports at once (5 tasks)") {
		t.Fatalf("got %v, want the pending limit named", err)
	}
}

// splitLabel is the regular expression it replaced, without its cost on
// long lines.
func FuzzSplitLabel(f *testing.F) {
	re := regexp.MustCompile(`^\s*(\d+): ?(.*)$`)
	for _, s := range []string{"0: {", " 12:x", "\t3:  y", "a: b", "12", "12:", ": x", "\r\f\n7: z", "1 : x", "٣: x", "1:\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "\n") {
			return // lines never hold one
		}
		label, rest, ok := splitLabel([]byte(s))
		m := re.FindStringSubmatch(s)
		if ok != (m != nil) || ok && (string(label) != m[1] || string(rest) != m[2]) {
			t.Fatalf("%q: splitLabel %q %q %v, regexp %q", s, label, rest, ok, m)
		}
	})
}
