package exporter

import (
	"context"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

// A simulated job with one rank on GPU 0: serve exports GPU 0's utilisation
// as a ratio and one gpu_job_info naming the job and its owner, which a
// recording rule joins to aggregate utilisation by job (docs/metrics.md).
func TestJobAttributionSeries(t *testing.T) {
	d := daemonFor(t, "dgx-h100:job-one-gpu", false)
	d.Cycle(context.Background())
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(d.Exporter)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	util := map[string]float64{}
	var jobs []map[string]string
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetName() {
			case "gpuprobe_gpu_utilization_ratio":
				util[labels["gpu"]] = m.GetGauge().GetValue()
			case "gpuprobe_gpu_job_info":
				jobs = append(jobs, labels)
			}
		}
	}
	if u := util["0"]; u < 0.9 || u > 1 {
		t.Errorf("GPU 0 utilisation %v, want the busy rank's ~0.96", u)
	}
	if u, ok := util["1"]; !ok || u != 0 {
		t.Errorf("GPU 1 utilisation %v (exported %v), want 0", u, ok)
	}
	if len(jobs) != 1 || jobs[0]["gpu"] != "0" || jobs[0]["job_id"] != "4242" || jobs[0]["user"] != "alice" || jobs[0]["uuid"] == "" {
		t.Errorf("gpu_job_info %v, want one series: GPU 0, job 4242, alice", jobs)
	}
}

// gpu_job_info is one series per job on a GPU however many of its processes
// run there, none for a process outside any job, and at most maxJobsPerGPU
// per GPU (MPS or time-slicing can put many jobs on one GPU; the exposition
// has a series budget).
func TestJobInfoOnePerJobAndBounded(t *testing.T) {
	g := state.GPU{Index: 3, UUID: "GPU-3", ProcessesKnown: true}
	g.Processes = append(g.Processes,
		state.Process{PID: 1, JobID: "7", User: "alice"},
		state.Process{PID: 2, JobID: "7", User: "alice"}, // a second rank of job 7
		state.Process{PID: 3, User: "root"},              // outside any job
	)
	for j := 0; j < 30; j++ {
		g.Processes = append(g.Processes, state.Process{PID: uint32(100 + j), JobID: strconv.Itoa(1000 + j), User: "bob"})
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(gpusOnly{&state.Node{NVML: &state.NVML{GPUs: []state.GPU{g}}}})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != "gpuprobe_gpu_job_info" {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "job_id" {
					jobs[l.GetValue()]++
				}
			}
		}
	}
	if len(jobs) != maxJobsPerGPU || jobs["7"] != 1 || jobs[""] != 0 {
		t.Errorf("gpu_job_info by job_id %v: want %d jobs, job 7 once, none without a job", jobs, maxJobsPerGPU)
	}
}

// gpusOnly is a collector of one node state's per-GPU series.
type gpusOnly struct{ n *state.Node }

func (gpusOnly) Describe(chan<- *prometheus.Desc) {}
func (c gpusOnly) Collect(ch chan<- prometheus.Metric) {
	emitGPUs(emitter{ch}, c.n, check.DefaultConfig(), false)
}

// gpu_job_info names the container runtime holding the job's first process
// on the GPU (a Pyxis step's ranks stay in the job's cgroup, so the job is
// known and the runtime comes from their environment), empty for a bare one.
func TestJobInfoContainerLabel(t *testing.T) {
	g := state.GPU{Index: 0, UUID: "GPU-0", ProcessesKnown: true, Processes: []state.Process{
		{PID: 1, JobID: "7", User: "alice", Container: "enroot", ContainerFrom: "environ ENROOT_ROOTFS"},
		{PID: 2, JobID: "8", User: "bob"},
	}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(gpusOnly{&state.Node{NVML: &state.NVML{GPUs: []state.GPU{g}}}})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		if mf.GetName() != "gpuprobe_gpu_job_info" {
			continue
		}
		for _, m := range mf.Metric {
			l := map[string]string{}
			for _, p := range m.Label {
				l[p.GetName()] = p.GetValue()
			}
			got[l["job_id"]] = l["container"]
		}
	}
	if len(got) != 2 || got["7"] != "enroot" || got["8"] != "" {
		t.Errorf("container by job %v, want 7: enroot, 8: none", got)
	}
}
