package node

import (
	"context"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/jobperf"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// The XID faults go through the real kernel-log parser of the real
// collector: code, GPU and "fallen off the bus" come back from the lines.
func TestSimulatedXIDsReachTheState(t *testing.T) {
	spec, err := simulate.Parse("dgx-h100:xid=79@2,xid=13@0")
	if err != nil {
		t.Fatal(err)
	}
	src, err := Sources(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := collect.Node(ctx, collect.Options{Sources: src, CallTimeout: 5 * time.Second})
	k := n.Kernel
	if k == nil || len(k.XIDs) != 2 || k.XIDSource != "simulated" {
		t.Fatalf("kernel = %+v", k)
	}
	if x := k.XIDs[0]; x.Code != 79 || !x.MatchGPU(n.NVML.GPUs[2].PCIBusID) || x.Time.IsZero() {
		t.Errorf("first XID = %+v", x)
	}
	if k.ModuleVersion == "" || k.UptimeSeconds != 86400 {
		t.Errorf("module %q, uptime %v: the simulated /proc was not read", k.ModuleVersion, k.UptimeSeconds)
	}
	if n.Topology == nil || len(n.Topology.GPUs) != 8 || n.Simulated != spec.Raw {
		t.Errorf("topology %+v, simulated %q", n.Topology, n.Simulated)
	}
}

func TestBadXIDFault(t *testing.T) {
	spec, err := simulate.Parse("dgx-h100:xid=abc@1")
	if err == nil {
		_, err = Sources(spec)
	}
	if err == nil {
		t.Error("bad xid fault accepted")
	}
}

// A job scenario lays the job's cgroup and /proc over the node's tree: the
// node's own collectors still read their files, and the job collector finds
// the job from /proc/self/cgroup.
func TestSimulatedJobOverTheNodeTree(t *testing.T) {
	spec, err := simulate.Parse("dgx-h100:job-input-bound")
	if err != nil {
		t.Fatal(err)
	}
	src, err := Sources(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := collect.Node(ctx, collect.Options{Sources: src, CallTimeout: 5 * time.Second})
	if n.Topology == nil || len(n.Topology.GPUs) != 8 || n.Kernel == nil || n.Kernel.UptimeSeconds != 86400 {
		t.Fatalf("the node's tree under the job overlay: topology %+v kernel %+v", n.Topology, n.Kernel)
	}
	j, err := jobperf.Find(ctx, jobperf.Options{Root: src.Root, CallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if j.ID() != simulate.SimJob.ID {
		t.Errorf("job %q, want %q", j.ID(), simulate.SimJob.ID)
	}
}
