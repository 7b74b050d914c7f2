package fleet

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/check"
)

// srun --overlap -N3 ... gpuprobe job --hang --format json | gpuprobe
// summarize: the node holding the stopped rank is named with its rank.
func TestPrintHangNamesTheNodeAndRank(t *testing.T) {
	in := doc("gpu011", check.Warn, check.Result{ID: "perf.hang", Status: check.Warn, Summary: "all 8 local ranks wait in NCCL for a peer: the rank they wait on is not on this node (NCCL RAS: not asked)"}) +
		doc("gpu012", check.Fail, check.Result{ID: "perf.hang", Status: check.Fail, Summary: "rank 37 (pid 4121, GPU 5) stopped (state T at every tick: SIGSTOP or a debugger); 7 local ranks wait in NCCL"}) +
		doc("gpu013", check.Warn, check.Result{ID: "perf.hang", Status: check.Warn, Summary: "all 8 local ranks wait in NCCL for a peer: the rank they wait on is not on this node (RAS says: rank 37 (GPU 5, pid 4121) on 10.0.0.12 unresponsive (missing from communicator #0-0))"})
	rows, problems, err := Read(strings.NewReader(in), "in")
	if err != nil || len(problems) != 0 {
		t.Fatal(err, problems)
	}
	var out bytes.Buffer
	if failed, err := Print(&out, rows, problems); err != nil || !failed {
		t.Fatalf("failed %v err %v", failed, err)
	}
	for _, want := range []string{
		"hang: perf.hang on 3 node(s)",
		"  the job waits on gpu012: rank 37 (pid 4121, GPU 5) stopped",
		"  NCCL RAS, asked on gpu013: rank 37 (GPU 5, pid 4121) on 10.0.0.12 unresponsive (missing from communicator #0-0)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// A failing node is named as the culprit already, not again.
	if strings.Contains(out.String(), "odd one out") || strings.Contains(out.String(), "no node holds") {
		t.Errorf("%s", out.String())
	}
}

func TestPrintHangOddOneOutAndNoCulprit(t *testing.T) {
	wait := check.Result{ID: "perf.hang", Status: check.Warn, Summary: "all 8 local ranks wait in NCCL for a peer: the rank they wait on is not on this node (NCCL RAS not asked)"}
	in := doc("a", check.Warn, wait) + doc("b", check.Warn, wait) +
		doc("c", check.Pass, check.Result{ID: "perf.hang", Status: check.Pass, Summary: "all 8 local ranks are computing (slow, not hung)"})
	rows, _, _ := Read(strings.NewReader(in), "in")
	var out bytes.Buffer
	Print(&out, rows, nil)
	if !strings.Contains(out.String(), "  c is the odd one out (pass while the 2 others are not): all 8 local ranks are computing") ||
		!strings.Contains(out.String(), "no node holds a stopped, stuck or gone rank") {
		t.Errorf("%s", out.String())
	}
	// No --hang report: nothing printed.
	rows, _, _ = Read(strings.NewReader(doc("n", check.Pass, check.Result{ID: "gpu.ecc", Status: check.Pass})), "in")
	out.Reset()
	Print(&out, rows, nil)
	if strings.Contains(out.String(), "hang:") {
		t.Errorf("%s", out.String())
	}
}
