package collect_test

import (
	"context"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuprobe/gpuprobe/collect"
	simnode "github.com/gpuprobe/gpuprobe/sim/node"
	nvmlsim "github.com/gpuprobe/gpuprobe/sim/nvml"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// An MPS client that only NVML's MPS list names
// (nvmlDeviceGetMPSComputeRunningProcesses) is a GPU process like the
// others: its job is read from its cgroup and its owner from the process
// table, so job.gpu_sharing and job.exclusive can tie it to the job.
func TestMPSOnlyClientIsDescribed(t *testing.T) {
	spec, err := simulate.Parse("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	src := simSources(t, spec, func(s *nvmlsim.System) {
		d := s.Devices[0]
		d.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
			return []gonvml.ProcessInfo{{Pid: 500, UsedGpuMemory: 30 << 20}}, gonvml.SUCCESS
		}
		d.GetMPSComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
			return []gonvml.ProcessInfo{{Pid: 501, UsedGpuMemory: 1 << 30}}, gonvml.SUCCESS
		}
	})
	src.ProcessJob = func(_ context.Context, pid int32) string {
		if pid == 501 {
			return "4242"
		}
		return ""
	}
	n := collect.Node(context.Background(), collect.Options{Sources: src, CallTimeout: time.Second, Environ: func() []string { return nil }})
	g := n.NVML.GPUs[0]
	if !g.MPSProcessesKnown || len(g.Processes) != 2 {
		t.Fatalf("MPS list known %v, processes %+v", g.MPSProcessesKnown, g.Processes)
	}
	server, client := g.Processes[0], g.Processes[1]
	if server.PID != 500 || server.MPSClient || server.JobID != "" {
		t.Errorf("server %+v", server)
	}
	if client.PID != 501 || !client.MPSClient || client.JobID != "4242" || client.UsedMemoryBytes != 1<<30 {
		t.Errorf("client %+v, want pid 501, an MPS client of job 4242", client)
	}
}

// simSources is the simulated node's sources with NVML opened from spec
// and changed by tweak before the collector sees it.
func simSources(t *testing.T, spec *simulate.Spec, tweak func(*nvmlsim.System)) collect.Sources {
	t.Helper()
	src, err := simnode.Sources(spec)
	if err != nil {
		t.Fatal(err)
	}
	src.OpenNVML = func() (gonvml.Interface, error) {
		s, err := nvmlsim.New(spec)
		if err != nil {
			return nil, err
		}
		tweak(s)
		return s.Lib, nil
	}
	return src
}
