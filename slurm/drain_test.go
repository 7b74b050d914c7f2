package slurm

import (
	"strings"
	"testing"

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
