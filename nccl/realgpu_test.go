package nccl

import (
	"context"
	"strings"
	"testing"
)

// Logs captured on a real H100 (testdata/realgpu, README there).

// Two ranks on one GPU: NCCL's Duplicate GPU error, and no version
// warning. PyTorch's "NCCL error in: …, NCCL version 2.28.9" is not an NCCL
// record; before the fix it was read as a second version and the verdict
// warned "ranks run the same NCCL built for different CUDA versions:
// 2.28.9+cuda13.0, 2.28.9".
func TestRealDuplicateGPU(t *testing.T) {
	v, err := judgeFiles(context.Background(), "testdata/realgpu/nccl-dup-r0.log", "testdata/realgpu/nccl-dup-r1.log")
	if err != nil {
		t.Fatal(err)
	}
	dup := false
	for _, e := range v.Errors {
		if strings.Contains(e.Message, "Duplicate GPU detected") {
			dup = true
		}
	}
	if !dup {
		t.Errorf("no Duplicate GPU error: %+v", v.Errors)
	}
	for _, w := range v.Warnings {
		if strings.Contains(w.Code, "version") || strings.Contains(w.Code, "build") {
			t.Errorf("version warning on one NCCL build: %s", w.Message)
		}
	}
	if len(v.NCCLVersions) != 1 || v.NCCLVersions[0] != "2.28.9+cuda13.0" {
		t.Errorf("nccl_versions %v, want [2.28.9+cuda13.0]", v.NCCLVersions)
	}
	if v.InterNode != InterNone {
		t.Errorf("inter_node %q for two ranks on one host: %s", v.InterNode, v.Summary)
	}
}

// One rank in one process: no inter-node traffic.
func TestRealOneRank(t *testing.T) {
	for _, name := range []string{"nccl-1proc.log", "nccl-1proc-all.log"} {
		v := analyzeFile(t, "testdata/realgpu/"+name)
		if v.InterNode != InterNone || len(v.Errors) != 0 {
			t.Errorf("%s: inter_node %q, errors %+v: %s", name, v.InterNode, v.Errors, v.Summary)
		}
		if len(v.NCCLVersions) != 1 || v.NCCLVersions[0] != "2.28.9+cuda13.0" {
			t.Errorf("%s: nccl_versions %v", name, v.NCCLVersions)
		}
	}
}
