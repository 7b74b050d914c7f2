package slurm

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Real "scontrol show node" output from the reference cluster, drained by
// the health check.
const showNodeDrained = `NodeName=vm Arch=x86_64 CoresPerSocket=2
   CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.13
   AvailableFeatures=(null)
   ActiveFeatures=(null)
   Gres=gpu:4
   NodeAddr=127.0.0.1 NodeHostName=vm Version=22.05.8
   OS=Linux 6.18.0 #1 SMP
   RealMemory=1024 AllocMem=0 FreeMem=20000 Sockets=1 Boards=1
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=debug
   BootTime=2026-11-22T04:00:00 SlurmdStartTime=2026-11-22T05:00:00
   LastBusyTime=2026-11-22T05:08:00
   CfgTRES=cpu=2,mem=1G,billing=2
   AllocTRES=
   CapWatts=n/a
   CurrentWatts=0 AveWatts=0
   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s
   Reason=gpuprobe: fake ECC error on GPU1 [root@2026-11-22T05:08:27]
`

func TestParseShowNode(t *testing.T) {
	n, err := ParseShowNode(showNodeDrained)
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "vm" || n.Base != "IDLE" || !n.Drained() || !n.Ours() || n.Reason != "gpuprobe: fake ECC error on GPU1" {
		t.Errorf("%+v", n)
	}
	idle, err := ParseShowNode("NodeName=vm\n   State=IDLE+NOT_RESPONDING ThreadsPerCore=1\n")
	if err != nil || idle.Drained() || !idle.Has("NOT_RESPONDING") || idle.Reason != "" {
		t.Errorf("%+v %v", idle, err)
	}
	one, err := ParseShowNode("NodeName=n1 State=MIXED+DRAIN Reason=admin: bad fan [alice@2026-01-01T00:00:00]\n")
	if err != nil || one.Reason != "admin: bad fan" || one.Ours() {
		t.Errorf("%+v %v", one, err)
	}
	if _, err := ParseShowNode("Node vm not found\n"); err == nil {
		t.Error("output without State= accepted")
	}
}

// TestDecide is the drain/resume decision table: node state × existing
// reason × check result → action, following NHC's node-mark-offline/online.
func TestDecide(t *testing.T) {
	const ours = "gpuprobe: gpu.row_remap: GPU 3: row remap pending"
	const newer = "gpuprobe: gpu.ecc: GPU 1: 2 uncorrectable ECC errors since the last reset"
	tests := []struct {
		state, reason string
		failing       bool
		want          Action
	}{
		// Healthy nodes in service: drain on failure, nothing on success.
		{"IDLE", "", true, Drain},
		{"MIXED", "", true, Drain},
		{"ALLOCATED", "", true, Drain},
		{"COMPLETING", "", true, Drain},
		{"IDLE+NOT_RESPONDING", "", true, Drain},
		{"IDLE", "", false, None},
		{"ALLOCATED", "", false, None},
		// Drained by gpuprobe: update a changed reason, resume when healthy.
		{"IDLE+DRAIN", ours, true, None},
		{"IDLE+DRAIN", newer, true, Drain},
		{"MIXED+DRAIN", newer, true, Drain},
		{"IDLE+DRAIN", ours, false, Resume},
		{"MIXED+DRAIN", ours, false, Resume},
		{"DRAINED", ours, false, Resume},
		{"DRAINING", ours, false, Resume},
		// Drained by anyone else: never overwrite, never resume.
		{"IDLE+DRAIN", "admin: replacing PSU", true, None},
		{"IDLE+DRAIN", "admin: replacing PSU", false, None},
		{"IDLE+DRAIN", "", true, None},
		{"IDLE+DRAIN", "", false, None},
		{"IDLE+DRAIN", "Prolog error", false, None},
		{"IDLE+DRAIN", "NHC: check_hw_ib failed", false, None},
		{"IDLE+DRAIN", "GPUPROBE: upper case is someone else", false, None},
		// States NHC leaves alone, whatever the result and reason.
		{"DOWN", "", true, None},
		{"DOWN+DRAIN", ours, false, None},
		{"DOWN+NOT_RESPONDING", "Not responding", true, None},
		{"IDLE+MAINT", "", true, None},
		{"IDLE+MAINT+RESERVED", "", true, None},
		{"RESERVED", "", true, None},
		{"IDLE+RESERVED+DRAIN", ours, false, None},
		{"IDLE+POWERED_DOWN", "", true, None},
		{"FUTURE", "", true, None},
	}
	for _, tt := range tests {
		parts := strings.Split(tt.state, "+")
		n := NodeInfo{Name: "n1", State: tt.state, Base: parts[0], Flags: parts[1:], Reason: tt.reason}
		d := Decide(n, tt.failing, ours)
		if d.Action != tt.want || d.Why == "" {
			t.Errorf("state %s reason %q failing %v: %s (%s), want %s", tt.state, tt.reason, tt.failing, d.Action, d.Why, tt.want)
		}
		if d.Action == Drain && d.Reason != ours {
			t.Errorf("drain reason %q", d.Reason)
		}
	}
}

func TestDrainReason(t *testing.T) {
	if r := DrainReason(nil); r != "" {
		t.Errorf("no failures: %q", r)
	}
	r := DrainReason([]Failure{{"gpu.row_remap", "GPU 3 (0000:5d:00.0): row remap pending"}})
	if r != "gpuprobe: gpu.row_remap: GPU 3 (0000:5d:00.0): row remap pending" {
		t.Errorf("reason %q", r)
	}
	long := strings.Repeat("GPU 7: link down; ", 40) + "\"quoted\"\n$(rm -rf /)`x`"
	r = DrainReason([]Failure{{"nvlink.state", long}, {"gpu.ecc", "x"}, {"gpu.count", "y"}})
	if len(r) > MaxReasonLen || !strings.HasPrefix(r, ReasonPrefix+" nvlink.state: GPU 7") || !strings.HasSuffix(r, "... (+2 more)") {
		t.Errorf("long reason (%d bytes) %q", len(r), r)
	}
	r = DrainReason([]Failure{{"x", "tab\there \"q\" 'q' `q` line\nbreak"}})
	if strings.ContainsAny(r, "\"'`\n\t") {
		t.Errorf("reason keeps quotes or control characters: %q", r)
	}
	r = DrainReason([]Failure{{"x", strings.Repeat("é", 300)}})
	if !utf8.ValidString(r) || len(r) > MaxReasonLen {
		t.Errorf("cut inside a rune or too long: %q", r)
	}
}

func FuzzParseShowNode(f *testing.F) {
	f.Add(showNodeDrained)
	f.Add("State=DOWN Reason=x [a@b]")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseShowNode(s)
		if err != nil {
			return
		}
		for _, failing := range []bool{true, false} {
			d := Decide(n, failing, DrainReason([]Failure{{"a", s}}))
			if d.Action == Resume && !n.Ours() {
				t.Fatalf("resumes a drain that is not gpuprobe's: %+v", n)
			}
			if d.Action == Drain && n.Drained() && !n.Ours() {
				t.Fatalf("overwrites someone else's drain: %+v", n)
			}
		}
	})
}
