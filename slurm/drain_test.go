package slurm

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
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
	if n.Name != "vm" || n.Base != "IDLE" || !n.Drained() || !strings.HasPrefix(n.Reason, check.ReasonPrefix) || n.Reason != "gpuprobe: fake ECC error on GPU1" {
		t.Errorf("%+v", n)
	}
	idle, err := ParseShowNode("NodeName=vm\n   State=IDLE+NOT_RESPONDING ThreadsPerCore=1\n")
	if err != nil || idle.Drained() || !idle.Has("NOT_RESPONDING") || idle.Reason != "" {
		t.Errorf("%+v %v", idle, err)
	}
	one, err := ParseShowNode("NodeName=n1 State=MIXED+DRAIN Reason=admin: bad fan [alice@2026-01-01T00:00:00]\n")
	if err != nil || one.Reason != "admin: bad fan" || strings.HasPrefix(one.Reason, check.ReasonPrefix) {
		t.Errorf("%+v %v", one, err)
	}
	if _, err := ParseShowNode("Node vm not found\n"); err == nil {
		t.Error("output without State= accepted")
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
			d := check.Decide(n, failing, check.DrainReason([]check.DrainFailure{{ID: "a", Summary: s}}))
			if d.Action == check.DrainResume && !strings.HasPrefix(n.Reason, check.ReasonPrefix) {
				t.Fatalf("resumes a drain that is not gpuprobe's: %+v", n)
			}
			if d.Action == check.DrainSet && n.Drained() && !strings.HasPrefix(n.Reason, check.ReasonPrefix) {
				t.Fatalf("overwrites someone else's drain: %+v", n)
			}
		}
	})
}

// "scontrol -o show nodes": one node a line, the reason with blanks and its
// [user@time] in the middle of the line.
const showNodesOneLine = `NodeName=gp2n1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE ThreadsPerCore=1 Partitions=debug,gpu BootTime=2026-11-22T04:00:00 CfgTRES=cpu=2 CurrentWatts=0 AveWatts=0
NodeName=gp2n2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE+DRAIN ThreadsPerCore=1 Partitions=gpu BootTime=2026-11-22T04:00:00 Reason=gpuprobe: gpu.row_remap node gpu=3 GPU 3: row remap pending [slurm@2026-11-22T05:08:27] Comment=x
NodeName=gp2n3 State=DOWN+DRAIN+NOT_RESPONDING Partitions=gpu Reason=admin: see [ticket@jira] PSU [root@2026-11-21T01:02:03]
NodeName=gp2n4 State=IDLE Partitions=(null)
`

func TestParseShowNodes(t *testing.T) {
	ns, err := ParseShowNodes(showNodesOneLine)
	if err != nil || len(ns) != 4 {
		t.Fatalf("%d nodes, %v", len(ns), err)
	}
	if n := ns[0]; n.Name != "gp2n1" || n.Drained() || n.Reason != "" || strings.Join(n.Partitions, ",") != "debug,gpu" {
		t.Errorf("%+v", n)
	}
	want := time.Date(2026, 11, 22, 5, 8, 27, 0, time.Local)
	if n := ns[1]; !n.Drained() || n.Reason != "gpuprobe: gpu.row_remap node gpu=3 GPU 3: row remap pending" || !n.ReasonTime.Equal(want) || strings.Join(n.Partitions, ",") != "gpu" {
		t.Errorf("%+v", n)
	}
	if n := ns[2]; n.Reason != "admin: see [ticket@jira] PSU" || n.Base != "DOWN" {
		t.Errorf("%+v", n)
	}
	if n := ns[3]; len(n.Partitions) != 0 {
		t.Errorf("%+v", n)
	}
	for _, bad := range []string{"garbage\n", "NodeName=x Arch=y\n", "State=IDLE\n"} {
		if _, err := ParseShowNodes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if ns, err := ParseShowNodes("\n"); err != nil || len(ns) != 0 {
		t.Errorf("empty: %v %v", ns, err)
	}
	// The multi-line form keeps the reason's time too.
	n, _ := ParseShowNode(showNodeDrained)
	if !n.ReasonTime.Equal(want) {
		t.Errorf("reason time %v", n.ReasonTime)
	}
}
