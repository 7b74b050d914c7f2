package check

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

func slurmNode(state, reason string) slurmstate.NodeInfo {
	parts := strings.Split(state, "+")
	return slurmstate.NodeInfo{Name: "n1", State: state, Base: parts[0], Flags: parts[1:], Reason: reason}
}

// TestDecideQuarantine is the quarantine table: node state × reason ×
// failures × history × config → action, reason class and history kept.
func TestDecideQuarantine(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	remap3 := []DrainFailure{{ID: "gpu.row_remap", Summary: "GPU 3: row remap pending", GPUs: []int{3}}}
	remap5 := []DrainFailure{{ID: "gpu.row_remap", Summary: "GPU 5: row remap pending", GPUs: []int{5}}}
	fabric := []DrainFailure{{ID: "fabric.state", Summary: "fabric still training"}}
	gres := []DrainFailure{{ID: "slurm.gres", Summary: "gres.conf names 4 GPUs, 8 found"}}
	lifted := func(check string, gpus []int, class Class, resumed time.Duration) DrainEpisode {
		return DrainEpisode{Check: check, GPUs: gpus, Class: class, Drained: ago(resumed + time.Hour), Resumed: ago(resumed)}
	}
	open := func(check string, gpus []int, class Class, hold bool) DrainEpisode {
		return DrainEpisode{Check: check, GPUs: gpus, Class: class, Hold: hold, Drained: ago(time.Hour)}
	}
	hist := func(es ...DrainEpisode) DrainHistory { return DrainHistory{Version: 1, Episodes: es} }
	def := DefaultDrainConfig()
	keepNode := def
	keepNode.ResumeNodeClass = false
	noEscalation := def
	noEscalation.EscalateWithin = 0

	const remapReason = "gpuprobe: gpu.row_remap node gpu=3 GPU 3: row remap pending"
	const fabricReason = "gpuprobe: fabric.state transient fabric still training"
	tests := []struct {
		name          string
		state, reason string
		fails         []DrainFailure
		hist          DrainHistory
		cfg           DrainConfig
		want          DrainAction
		wantReason    string // prefix, for DrainSet
		wantOpen      int    // open episodes in the history kept
		wantLifted    int    // lifted episodes in the history kept
		wantHold      bool   // the open episode holds
	}{
		// First drains: the class of the table, an open episode.
		{name: "node fault drains", state: "IDLE", fails: remap3, cfg: def, want: DrainSet, wantReason: remapReason, wantOpen: 1},
		{name: "transient fault drains", state: "IDLE", fails: fabric, cfg: def, want: DrainSet, wantReason: fabricReason, wantOpen: 1},
		// Lifting: transient always, node unless resume_node_class is false.
		{name: "transient lifted", state: "IDLE+DRAIN", reason: fabricReason, hist: hist(open("fabric.state", nil, ClassTransient, false)), cfg: keepNode, want: DrainResume, wantLifted: 1},
		{name: "node lifted by default", state: "IDLE+DRAIN", reason: remapReason, hist: hist(open("gpu.row_remap", []int{3}, ClassNode, false)), cfg: def, want: DrainResume, wantLifted: 1},
		{name: "node kept when resume_node_class is false", state: "IDLE+DRAIN", reason: remapReason, hist: hist(open("gpu.row_remap", []int{3}, ClassNode, false)), cfg: keepNode, want: DrainNone, wantOpen: 1},
		{name: "legacy node reason kept when resume_node_class is false", state: "IDLE+DRAIN", reason: "gpuprobe: gpu.ecc: GPU 1: 2 uncorrectable", cfg: keepNode, want: DrainNone},
		{name: "config lifted when resume_node_class is false", state: "IDLE+DRAIN", reason: "gpuprobe: slurm.gres config gres.conf wrong", cfg: keepNode, want: DrainResume},
		{name: "held drain never lifted", state: "IDLE+DRAIN", reason: "gpuprobe: gpu.row_remap node gpu=3 recurred: GPU 3: row remap pending", hist: hist(open("gpu.row_remap", []int{3}, ClassNode, true)), cfg: def, want: DrainNone, wantOpen: 1, wantHold: true},
		{name: "history lost: node lifted as by default", state: "IDLE+DRAIN", reason: "gpuprobe: gpu.row_remap node gpu=3 recurred: GPU 3: row remap pending", cfg: def, want: DrainResume},
		// An admin's drain: never lifted, never overwritten, history kept.
		{name: "admin drain, passing", state: "IDLE+DRAIN", reason: "admin: PSU", hist: hist(open("gpu.row_remap", []int{3}, ClassNode, false)), cfg: def, want: DrainNone, wantOpen: 1},
		{name: "admin drain, failing", state: "IDLE+DRAIN", reason: "admin: PSU", fails: remap3, cfg: def, want: DrainNone},
		// Escalation: the same fault within the window after a resume.
		{name: "transient recurs: node", state: "IDLE", fails: fabric, hist: hist(lifted("fabric.state", nil, ClassTransient, 2*day)), cfg: def,
			want: DrainSet, wantReason: "gpuprobe: fabric.state node recurred: fabric still training", wantOpen: 1, wantLifted: 1},
		{name: "transient recurs twice: held", state: "IDLE", fails: fabric, hist: hist(lifted("fabric.state", nil, ClassTransient, 5*day), lifted("fabric.state", nil, ClassNode, day)), cfg: def,
			want: DrainSet, wantReason: "gpuprobe: fabric.state node recurred:", wantOpen: 1, wantLifted: 2, wantHold: true},
		{name: "node recurs on the same GPU: held", state: "MIXED", fails: remap3, hist: hist(lifted("gpu.row_remap", []int{3}, ClassNode, 3*day)), cfg: def,
			want: DrainSet, wantReason: "gpuprobe: gpu.row_remap node gpu=3 recurred: GPU 3", wantOpen: 1, wantLifted: 1, wantHold: true},
		{name: "node fault on another GPU: not a repeat", state: "IDLE", fails: remap5, hist: hist(lifted("gpu.row_remap", []int{3}, ClassNode, 3*day)), cfg: def,
			want: DrainSet, wantReason: "gpuprobe: gpu.row_remap node gpu=5 GPU 5", wantOpen: 1, wantLifted: 1},
		{name: "another check on the same GPU: not a repeat", state: "IDLE", fails: remap3, hist: hist(lifted("gpu.ecc", []int{3}, ClassNode, 3*day)), cfg: def,
			want: DrainSet, wantReason: remapReason, wantOpen: 1, wantLifted: 1},
		{name: "repeat outside the window: pruned, not escalated", state: "IDLE", fails: remap3, hist: hist(lifted("gpu.row_remap", []int{3}, ClassNode, 8*day)), cfg: def,
			want: DrainSet, wantReason: remapReason, wantOpen: 1},
		{name: "escalation off", state: "IDLE", fails: fabric, hist: hist(lifted("fabric.state", nil, ClassTransient, day)), cfg: noEscalation,
			want: DrainSet, wantReason: fabricReason, wantOpen: 1},
		{name: "config does not escalate", state: "IDLE", fails: gres, hist: hist(lifted("slurm.gres", nil, ClassConfig, day)), cfg: def,
			want: DrainSet, wantReason: "gpuprobe: slurm.gres config gres.conf", wantOpen: 1, wantLifted: 1},
		// Held drains stay held through a reason update.
		{name: "reason update keeps the hold", state: "IDLE+DRAIN", reason: "gpuprobe: gpu.row_remap node gpu=3 recurred: GPU 3: row remap pending",
			fails: []DrainFailure{{ID: "gpu.ecc", Summary: "GPU 3: uncorrectable", GPUs: []int{3}}}, hist: hist(open("gpu.row_remap", []int{3}, ClassNode, true)), cfg: def,
			want: DrainSet, wantReason: "gpuprobe: gpu.ecc node gpu=3 GPU 3", wantOpen: 1, wantHold: true},
		// A drain the history does not know is recorded; one gone is closed.
		{name: "unknown drain of ours recorded", state: "IDLE+DRAIN", reason: remapReason, fails: remap3, cfg: def, want: DrainNone, wantOpen: 1},
		{name: "drain gone (admin resumed): closed", state: "IDLE", hist: hist(open("gpu.row_remap", []int{3}, ClassNode, true)), cfg: def, want: DrainNone, wantLifted: 1},
		{name: "down node: left alone, history as it was", state: "DOWN+DRAIN", reason: remapReason, hist: hist(open("gpu.row_remap", []int{3}, ClassNode, false)), cfg: def, want: DrainNone, wantOpen: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := QuarantineInput{Node: slurmNode(tt.state, tt.reason), Failures: tt.fails, History: tt.hist, Config: tt.cfg, Now: now}
			before, _ := tt.hist.Marshal()
			d, h := DecideQuarantine(in)
			if after, _ := tt.hist.Marshal(); string(after) != string(before) {
				t.Errorf("the input history was changed")
			}
			if d.Action != tt.want || d.Why == "" {
				t.Fatalf("%s (%s), want %s", d.Action, d.Why, tt.want)
			}
			if d.Action == DrainSet && !strings.HasPrefix(d.Reason, tt.wantReason) {
				t.Errorf("reason %q, want prefix %q", d.Reason, tt.wantReason)
			}
			if d.Reason != "" {
				if _, err := ParseReason(d.Reason); err != nil {
					t.Errorf("reason does not parse: %v", err)
				}
			}
			var nOpen, nLifted int
			hold := false
			for _, e := range h.Episodes {
				if e.Open() {
					nOpen++
					hold = hold || e.Hold
				} else {
					nLifted++
				}
			}
			if nOpen != tt.wantOpen || nLifted != tt.wantLifted || hold != tt.wantHold {
				t.Errorf("history: %d open, %d lifted, hold %v; want %d, %d, %v: %+v", nOpen, nLifted, hold, tt.wantOpen, tt.wantLifted, tt.wantHold, h.Episodes)
			}
			b, err := h.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ParseDrainHistory(b); err != nil && len(h.Episodes) > 0 {
				t.Errorf("history kept does not parse: %v", err)
			}
		})
	}
}

// TestDrainHistoryFlapStops runs the cycle a flapping transient fault goes
// through: drained, lifted, drained as node, lifted, drained and held.
func TestDrainHistoryFlapStops(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	fabric := []DrainFailure{{ID: "fabric.state", Summary: "fabric still training"}}
	var h DrainHistory
	cfg := DefaultDrainConfig()
	n := slurmNode("IDLE", "")
	var classes []string
	for i := 0; i < 6; i++ {
		fails := fabric
		if i%2 == 1 {
			fails = nil
		}
		d, kept := DecideQuarantine(QuarantineInput{Node: n, Failures: fails, History: h, Config: cfg, Now: now})
		h = kept
		switch d.Action {
		case DrainSet:
			r, _ := ParseReason(d.Reason)
			classes = append(classes, string(r.Class))
			n = slurmNode("IDLE+DRAIN", d.Reason)
		case DrainResume:
			classes = append(classes, "resume")
			n = slurmNode("IDLE", "")
		default:
			classes = append(classes, "none")
		}
		now = now.Add(time.Hour)
	}
	if got := strings.Join(classes, " "); got != "transient resume node resume node none" {
		t.Errorf("cycle: %s", got)
	}
}

func TestParseDrainHistoryRejects(t *testing.T) {
	for _, b := range []string{
		"", "{", "null", `{"version":2,"episodes":[]}`, `{"version":1,"episodes":[{"check":"A B","class":"node","drained":"2026-01-01T00:00:00Z"}]}`,
		`{"version":1,"episodes":[{"check":"gpu.ecc","class":"bogus","drained":"2026-01-01T00:00:00Z"}]}`,
		`{"version":1,"episodes":[{"check":"gpu.ecc","class":"node"}]}`,
		`{"version":1,"episodes":[` + strings.Repeat(`{"check":"gpu.ecc","class":"node","drained":"2026-01-01T00:00:00Z"},`, MaxHistoryEpisodes) + `{"check":"gpu.ecc","class":"node","drained":"2026-01-01T00:00:00Z"}]}`,
		`{"version":1,"episodes":[]}` + strings.Repeat(" ", MaxHistoryBytes),
	} {
		if _, err := ParseDrainHistory([]byte(b)); err == nil {
			t.Errorf("accepted %.80q", b)
		}
	}
	if h, err := ParseDrainHistory([]byte(`{"version":1,"episodes":[{"check":"gpu.ecc","gpus":[1],"class":"node","drained":"2026-01-01T00:00:00Z"}]}`)); err != nil || len(h.Episodes) != 1 {
		t.Errorf("valid history: %v %+v", err, h)
	}
}

func TestResumeNeedsVerify(t *testing.T) {
	on := DrainConfig{ResumeVerify: true}
	for _, tc := range []struct {
		reason string
		cfg    DrainConfig
		want   bool
	}{
		{"gpuprobe: gpu.row_remap node gpu=3 GPU 3: row remap pending", on, true},
		{"gpuprobe: gpu.row_remap node gpu=3 GPU 3: row remap pending", DrainConfig{}, false},
		{"gpuprobe: gpu.processes transient gpu=2 GPU 2: 1 compute process", on, false},
		{"gpuprobe: slurm.gres config gres.conf: count too low", on, false},
		{"gpuprobe: gpu.ecc: GPU 4: 2 uncorrectable ECC errors", on, true}, // legacy: the check's class
		{"admin: cable swap", on, false},
	} {
		if got := ResumeNeedsVerify(tc.reason, tc.cfg); got != tc.want {
			t.Errorf("ResumeNeedsVerify(%q, %+v) = %v, want %v", tc.reason, tc.cfg, got, tc.want)
		}
	}
}
