package check

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// TestDecide is the drain/resume decision table: node state × existing
// reason × check result → action, following NHC's node-mark-offline/online.
func TestDecide(t *testing.T) {
	const ours = "gpuprobe: gpu.row_remap: GPU 3: row remap pending"
	const newer = "gpuprobe: gpu.ecc: GPU 1: 2 uncorrectable ECC errors since the last reset"
	tests := []struct {
		state, reason string
		failing       bool
		want          DrainAction
	}{
		// Healthy nodes in service: drain on failure, nothing on success.
		{"IDLE", "", true, DrainSet},
		{"MIXED", "", true, DrainSet},
		{"ALLOCATED", "", true, DrainSet},
		{"COMPLETING", "", true, DrainSet},
		{"IDLE+NOT_RESPONDING", "", true, DrainSet},
		{"IDLE", "", false, DrainNone},
		{"ALLOCATED", "", false, DrainNone},
		// Drained by gpuprobe: update a changed reason, resume when healthy.
		{"IDLE+DRAIN", ours, true, DrainNone},
		{"IDLE+DRAIN", newer, true, DrainSet},
		{"MIXED+DRAIN", newer, true, DrainSet},
		{"IDLE+DRAIN", ours, false, DrainResume},
		{"MIXED+DRAIN", ours, false, DrainResume},
		{"DRAINED", ours, false, DrainResume},
		{"DRAINING", ours, false, DrainResume},
		// Both the grammar and the format before it are gpuprobe's.
		{"IDLE+DRAIN", "gpuprobe: gpu.ecc node gpu=1 GPU 1: 2 uncorrectable ECC errors", false, DrainResume},
		{"IDLE+DRAIN", "gpuprobe: fabric.state transient fabric still training", true, DrainSet},
		// Drained by anyone else: never overwrite, never resume.
		{"IDLE+DRAIN", "admin: replacing PSU", true, DrainNone},
		{"IDLE+DRAIN", "admin: replacing PSU", false, DrainNone},
		{"IDLE+DRAIN", "", true, DrainNone},
		{"IDLE+DRAIN", "", false, DrainNone},
		{"IDLE+DRAIN", "Prolog error", false, DrainNone},
		{"IDLE+DRAIN", "NHC: check_hw_ib failed", false, DrainNone},
		{"IDLE+DRAIN", "GPUPROBE: upper case is someone else", false, DrainNone},
		// States NHC leaves alone, whatever the result and reason.
		{"DOWN", "", true, DrainNone},
		{"DOWN+DRAIN", ours, false, DrainNone},
		{"DOWN+NOT_RESPONDING", "Not responding", true, DrainNone},
		{"IDLE+MAINT", "", true, DrainNone},
		{"IDLE+MAINT+RESERVED", "", true, DrainNone},
		{"RESERVED", "", true, DrainNone},
		{"IDLE+RESERVED+DRAIN", ours, false, DrainNone},
		{"IDLE+POWERED_DOWN", "", true, DrainNone},
		{"FUTURE", "", true, DrainNone},
	}
	for _, tt := range tests {
		parts := strings.Split(tt.state, "+")
		n := slurmstate.NodeInfo{Name: "n1", State: tt.state, Base: parts[0], Flags: parts[1:], Reason: tt.reason}
		d := Decide(n, tt.failing, ours)
		if d.Action != tt.want || d.Why == "" {
			t.Errorf("state %s reason %q failing %v: %s (%s), want %s", tt.state, tt.reason, tt.failing, d.Action, d.Why, tt.want)
		}
		if d.Action == DrainSet && d.Reason != ours {
			t.Errorf("drain reason %q", d.Reason)
		}
	}
}

func TestDrainReason(t *testing.T) {
	if r := DrainReason(nil); r != "" {
		t.Errorf("no failures: %q", r)
	}
	r := DrainReason([]DrainFailure{{ID: "gpu.row_remap", Summary: "GPU 3 (0000:5d:00.0): row remap pending", GPUs: []int{3}}})
	if r != "gpuprobe: gpu.row_remap node gpu=3 GPU 3 (0000:5d:00.0): row remap pending" {
		t.Errorf("reason %q", r)
	}
	r = DrainReason([]DrainFailure{{ID: "fabric.state", Summary: "fabric still training"}})
	if r != "gpuprobe: fabric.state transient fabric still training" {
		t.Errorf("reason %q", r)
	}
	long := strings.Repeat("GPU 7: link down; ", 40) + "\"quoted\"\n$(rm -rf /)`x`"
	r = DrainReason([]DrainFailure{{ID: "nvlink.state", Summary: long, GPUs: []int{7}}, {ID: "gpu.ecc", Summary: "x"}, {ID: "gpu.count", Summary: "y"}})
	if len(r) > MaxReasonLen || !strings.HasPrefix(r, ReasonPrefix+" nvlink.state node gpu=7 GPU 7") || !strings.HasSuffix(r, "... (+2 more)") {
		t.Errorf("long reason (%d bytes) %q", len(r), r)
	}
	r = DrainReason([]DrainFailure{{ID: "x", Summary: "tab\there \"q\" 'q' `q` line\nbreak"}})
	if strings.ContainsAny(r, "\"'`\n\t") {
		t.Errorf("reason keeps quotes or control characters: %q", r)
	}
	r = DrainReason([]DrainFailure{{ID: "x", Summary: strings.Repeat("é", 300)}})
	if !utf8.ValidString(r) || len(r) > MaxReasonLen {
		t.Errorf("cut inside a rune or too long: %q", r)
	}
	many := []int{9, 1, 2, 3, 4, 5, 6, 7, 8, 1}
	r = DrainReason([]DrainFailure{{ID: "gpu.ecc", Summary: "9 GPUs", GPUs: many}})
	if r != "gpuprobe: gpu.ecc node gpu=1,2,3,4,5,6,7,8+ 9 GPUs" {
		t.Errorf("many GPUs: %q", r)
	}
}

// The drain reason names the worst finding first, and a gres.conf mistake
// (one file shared by every node) does not drain unless asked to.
func TestDrainFailures(t *testing.T) {
	rs := []Result{
		{ID: "nvlink.state", Status: Fail, Summary: "GPU 3: 18 of 18 NVLinks down"},
		{ID: "slurm.gres", Status: Fail, Summary: "gres.conf File #1 ..."},
		{ID: "gpu.temperature", Status: Warn, Summary: "GPU 2 at 86 °C"},
		{ID: "gpu.processes", Status: Error, Summary: "no answer"},
		{ID: "gpu.xid", Status: Fail, Summary: "GPU 3: Xid 79, fallen off the bus"},
		{ID: "job.visible_devices", Status: Fail, Summary: "job step check"},
	}
	ids := func(fs []DrainFailure) string {
		var out []string
		for _, f := range fs {
			out = append(out, f.ID)
		}
		return strings.Join(out, ",")
	}
	cfg := DefaultConfig()
	if got := ids(DrainFailures(rs, cfg)); got != "gpu.xid,nvlink.state,gpu.processes" {
		t.Errorf("default: %s", got)
	}
	if r := DrainReason(DrainFailures(rs, cfg)); !strings.HasPrefix(r, "gpuprobe: gpu.xid node GPU 3: Xid 79") {
		t.Errorf("reason %q does not lead with the XID", r)
	}
	cfg.Strict, cfg.Drain.ConfigChecks = true, true
	if got := ids(DrainFailures(rs, cfg)); got != "gpu.xid,nvlink.state,slurm.gres,gpu.processes,gpu.temperature" {
		t.Errorf("strict, config checks: %s", got)
	}
}
