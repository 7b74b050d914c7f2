package node

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/jobperf"
	"github.com/gpuprobe/gpuprobe/kernel"
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

// The simulated log is rebuilt every cycle, and the daemon counts its XIDs
// as it counts /dev/kmsg's, by record number (cmd/gpuprobe used to ask
// whether the log was "simulated" and count levels instead). So a record
// keeps its number from one build to the next, and distinct faults, even
// repeated ones or one --simulate-file adds in place of another, have
// distinct numbers.
func TestSimulatedXIDRecordNumbers(t *testing.T) {
	bus := []string{"00000000:10:00.0", "00000000:11:00.0", "00000000:12:00.0"}
	seqs := func(raw string) []uint64 {
		t.Helper()
		spec, err := simulate.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		log, err := KernelLog(spec, bus)
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
			ev, ok := kernel.ParseKmsg([]byte(line), time.Unix(0, 0))
			if !ok {
				t.Fatalf("unparsed %q", line)
			}
			out = append(out, ev.Seq)
		}
		return out
	}
	for _, tc := range []struct {
		name, a, b string
		same       bool // the first records of a and b have the same number
	}{
		{"rebuilt alike", "dgx-h100:xid=79@2", "dgx-h100:xid=79@2", true},
		{"another code in its place", "dgx-h100:xid=13@0", "dgx-h100:xid=48@0", false},
		{"another GPU in its place", "dgx-h100:xid=13@0", "dgx-h100:xid=13@1", false},
	} {
		if got := seqs(tc.a)[0] == seqs(tc.b)[0]; got != tc.same {
			t.Errorf("%s: same record number %v, want %v", tc.name, got, tc.same)
		}
	}
	if s := seqs("dgx-h100:xid=79@2,xid=79@2"); s[0] == s[1] {
		t.Errorf("a repeated fault is two records, numbered alike: %v", s)
	}
}

// The Slurm collector's hooks: no device files for simulated GPUs, and a
// /proc status for the processes the faults put on them, none for others.
func TestSimulatedProcessFiles(t *testing.T) {
	spec, err := simulate.Parse("dgx-h100:leftover-process=1")
	if err != nil {
		t.Fatal(err)
	}
	src, err := Sources(spec)
	if err != nil {
		t.Fatal(err)
	}
	if d := src.GPUDeviceFiles(); len(d) != 0 {
		t.Errorf("device files %v", d)
	}
	for _, c := range []struct {
		pid  int32
		name string
		want string // "" for no such file
	}{
		{424242, "status", "Uid:\t1001\t1001\t1001\t1001\n"},
		{424242, "environ", ""},
		{1, "status", ""},
	} {
		data, err := src.ProcessFile(c.pid, c.name)
		if c.want == "" && !errors.Is(err, fs.ErrNotExist) || c.want != "" && (err != nil || !strings.Contains(string(data), c.want)) {
			t.Errorf("%d/%s: %q, %v; want %q", c.pid, c.name, data, err, c.want)
		}
	}
}
