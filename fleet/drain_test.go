package fleet

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/report"
)

// summarize reads each --slurm-drain run's reason with the reason grammar
// (check.ParseReason) and counts the drains by class: who must act.
func TestPrintDrainsByClass(t *testing.T) {
	drained := func(host, reason string, suppressed bool) string {
		d := report.Document{SchemaVersion: 1, Host: host, Status: check.Fail, GPUs: 8, Counts: map[string]int{},
			Checks: []check.Result{{ID: "gpu.ecc", Status: check.Fail, Summary: "x"}},
			Drain:  &check.DrainDecision{Action: check.DrainSet, Reason: reason, Why: "a node check failed"}}
		if suppressed {
			d.Drain.Breaker = &check.BreakerVerdict{Suppressed: true, Why: "over 10%"}
		}
		b, _ := json.Marshal(d)
		return string(b) + "\n"
	}
	in := drained("n1", "gpuprobe: gpu.row_remap node gpu=3 GPU 3: row remap pending", false) +
		drained("n2", "gpuprobe: gpu.processes transient gpu=2 GPU 2: 1 compute process", false) +
		drained("n3", "gpuprobe: gpu.ecc: GPU 4: 2 uncorrectable ECC errors", false) + // legacy: the check's class
		drained("n4", "gpuprobe: gpu.xid node gpu=1 GPU 1: Xid 79", true) +
		doc("n5", check.Pass, check.Result{ID: "gpu.ecc", Status: check.Pass})
	rows, problems, err := Read(strings.NewReader(in), "in")
	if err != nil || len(problems) != 0 {
		t.Fatal(err, problems)
	}
	var out bytes.Buffer
	if _, err := Print(&out, rows, problems); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  n1: drained [node] gpuprobe: gpu.row_remap node gpu=3",
		"  n2: drained [transient] gpuprobe: gpu.processes",
		"  n3: drained [node] gpuprobe: gpu.ecc:",
		"  n4: not drained (circuit breaker) [node] gpuprobe: gpu.xid",
		"drains: 2 node, 1 transient, 1 held back by the breaker\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "n5: drained") {
		t.Errorf("a node without a drain is listed:\n%s", out.String())
	}
}
