package collect

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/jobperf"
	"github.com/gpuprobe/gpuprobe/nvml"
	"github.com/gpuprobe/gpuprobe/state"
)

// JobOptions say which job to sample, for how long, and where its GPUs are.
type JobOptions struct {
	Options
	// JobID is the Slurm job; "" samples the job gpuprobe itself runs in.
	JobID string
	// Duration is the sampling window; Interval the time between ticks.
	Duration, Interval time.Duration
	// GPUs are the job's GPUs as NVML indexes, and GPUsFrom how the caller
	// found them ("scontrol", "step-env", "flag"); nil GPUs: the GPUs that
	// run the job's processes.
	GPUs     []int
	GPUsFrom string
	// SlurmGPUNumbers: GPUs are Slurm's numbers (scontrol's IDX, the
	// step's SLURM_STEP_GPUS), which count GRES records: on a node with MIG
	// on, one record per MIG instance, not GPUs. Job then asks NVML first.
	SlurmGPUNumbers bool
	// ListPIDs lists the job's processes when it has no cgroup of its own
	// (`scontrol listpids`); nil: none.
	ListPIDs func(ctx context.Context, jobID string) ([]int32, error)
	// AllocatedCPUs is the job's CPU_IDs on this node from scontrol: the
	// allocation when no cgroup cpuset says it (task/none lets the tasks
	// run anywhere, so their affinity is not the allocation).
	AllocatedCPUs []int
	// Hang also records what `gpuprobe job --hang` judges: each rank
	// process's state, wait channels and CPU time over the window.
	Hang bool
}

// Job samples one running job: every Interval for Duration, NVML's view of
// its GPUs and the cgroup's and /proc's view of its tasks, side by side at
// the same ticks so the verdicts compare like with like. It never judges.
func Job(ctx context.Context, o JobOptions) (*state.JobPerf, error) {
	if o.Interval <= 0 || o.Duration < o.Interval {
		return nil, fmt.Errorf("sampling: --interval %s must be positive and no longer than --duration %s", o.Interval, o.Duration)
	}
	host, err := jobperf.Find(ctx, jobperf.Options{
		Root: o.Sources.Root, SysfsRoot: o.SysfsRoot, ProcfsRoot: o.procfs(), JobID: o.JobID,
		ListPIDs: o.ListPIDs, CallTimeout: o.CallTimeout, Hang: o.Hang,
	})
	if err != nil {
		return nil, err
	}
	p := &state.JobPerf{Start: time.Now().UTC(), IntervalSeconds: o.Interval.Seconds()}
	host.Describe(p)

	migNote, initFailed := slurmNumbersOnMIG(ctx, &o)
	var sampler *nvml.Sampler
	gpuErr := initFailed
	if initFailed == nil {
		sampler, gpuErr = openSampler(ctx, o)
	}
	if gpuErr != nil {
		p.Errors = append(p.Errors, "GPUs: "+gpuErr.Error())
	}
	var ticks []*jobperf.Sample
	var ras func() *state.HangRAS // the first RAS query, asked beside the window
	var gpuTicks [][]state.GPUSample
	var pidsOnGPU [][]uint32
	start := time.Now()
	next := start
	for {
		s, err := host.Sample(ctx)
		if err != nil {
			p.Errors = append(p.Errors, "host sample: "+err.Error())
		} else {
			ticks = append(ticks, s)
			if o.Hang && ras == nil {
				ras = startRAS(ctx, o, s)
			}
		}
		if sampler != nil {
			gpuTicks = append(gpuTicks, sampler.Sample(ctx))
		}
		next = next.Add(o.Interval)
		if next.Sub(start) > o.Duration || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
		}
		if ctx.Err() != nil {
			break
		}
	}
	p.WindowSeconds = time.Since(start).Seconds()
	if len(ticks) > 0 {
		p.WindowSeconds = ticks[len(ticks)-1].At.Sub(ticks[0].At).Seconds()
	}
	// One entry a cause: each is printed on its own "not read:" line, and
	// a list folded into one string was unreadable on a real node.
	var errs []string
	p.CPU, p.Memory, p.IO, errs = jobperf.Summarize(host, ticks)
	p.Errors = append(p.Errors, errs...)
	if p.CPU != nil && p.TasksFrom == "scontrol" && len(o.AllocatedCPUs) > 0 {
		p.CPU.AllocatedCPUs, p.CPU.AllocatedCount = cpulist.Format(o.AllocatedCPUs)+" (scontrol CPU_IDs)", len(o.AllocatedCPUs)
	}
	host.Describe(p) // the PIDs seen over the window
	p.User = userName(ctx, o, p)
	if sampler != nil {
		pidsOnGPU = sampler.ComputePIDs(ctx)
		p.GPUs = sampler.GPUs()
		sampler.Close()
		for _, t := range gpuTicks {
			for i := range p.GPUs {
				if i < len(t) {
					p.GPUs[i].Samples = append(p.GPUs[i].Samples, t[i])
				}
			}
		}
		p.GPUsFrom = o.GPUsFrom
		attribute(p, pidsOnGPU, o.GPUs == nil)
		if migNote != "" {
			p.GPUsFrom = "processes (" + migNote + ")"
		}
		containerOf := o.Sources.ProcessContainer
		if containerOf == nil {
			containerOf = hostProcessContainers(o.Options)
		}
		p.Containers = jobContainers(ctx, p, containerOf)
	}
	if o.Hang {
		p.Hang = jobperf.SummarizeHang(ticks, ranksOnGPU(p), int32(os.Getpid()))
		// RAS again at the end of the window, once the first answered: a
		// lagging count that moved between the two is a slow rank, one that
		// did not is stuck (check/perfhang_ras.go). The Python stacks are
		// read meanwhile.
		var first *state.HangRAS
		var end func() *state.HangRAS
		if ras != nil {
			if first = ras(); first.Answered && ctx.Err() == nil {
				end = startRAS(ctx, o, ticks[len(ticks)-1])
			}
		}
		pythonStacks(ctx, o, p.Hang)
		switch {
		case end != nil:
			p.Hang.RASStart, p.Hang.RAS = first, end()
		case first != nil:
			p.Hang.RAS = first
		}
	}
	return p, nil
}

// slurmNumbersOnMIG keeps Slurm's GPU numbers only where they are GPUs.
// Slurm numbers GRES records (gres_common.c common_gres_set_env writes each
// record's index), and on a node with MIG on each MIG instance is a record
// of its own (gres.conf(5) "MultipleFiles", AutoDetect=nvml's one record
// per MIG instance): scontrol's IDX:12 is the thirteenth MIG instance, not
// GPU 12 (real records: "gpu:a100.MIG.20gb:5(IDX:0,3,5-7)",
// "gpu:a100.MIG.10gb:2(IDX:8,9)" on one node). Which GPU a record sits on
// Slurm does not say, so the job's GPUs are then those running its
// processes, and the note says why. Where whether MIG is on cannot be read,
// the numbers are not taken either. initFailed is nvmlInit's failure: NVML
// is not called again.
func slurmNumbersOnMIG(ctx context.Context, o *JobOptions) (note string, initFailed error) {
	if !o.SlurmGPUNumbers || len(o.GPUs) == 0 {
		return "", nil
	}
	lib, nopts, err := openNVML(o.Options)
	if err != nil {
		return "", err
	}
	from := o.GPUsFrom
	mig, initialised, err := nvml.MIGEnabled(ctx, lib, nopts)
	switch {
	case !initialised:
		return "", err
	case len(mig) > 0:
		note = fmt.Sprintf("%s numbers Slurm's GRES records, and MIG is on for GPU %s here, one record per MIG instance: they are not GPU numbers", from, cpulist.Format(mig))
	case err != nil:
		note = fmt.Sprintf("%s numbers Slurm's GRES records, and whether MIG is on here was not read (%v): they are not taken as GPU numbers", from, err)
	default:
		return "", nil
	}
	o.GPUs = nil
	return note, nil
}

// openSampler opens NVML once for the window (the daemon's own handle is
// not shared: a job run is its own short process).
func openSampler(ctx context.Context, o JobOptions) (*nvml.Sampler, error) {
	lib, nopts, err := openNVML(o.Options)
	if err != nil {
		return nil, err
	}
	return nvml.NewSampler(ctx, lib, nopts, o.GPUs)
}

// openNVML is the source's NVML (a simulated node's fresh mock), else the
// driver's library.
func openNVML(o Options) (gonvml.Interface, nvml.Options, error) {
	nopts := nvml.Options{CallTimeout: o.CallTimeout}
	open := o.Sources.OpenNVML
	if open == nil {
		nopts.Library = "nvml"
		open = func() (gonvml.Interface, error) { return nvml.Open() }
	}
	lib, err := open()
	return lib, nopts, err
}

// attribute records which of the job's processes run on each GPU and, when
// the caller did not know the job's GPUs, keeps only the GPUs that run one.
func attribute(p *state.JobPerf, pidsOnGPU [][]uint32, byProcess bool) {
	job := map[uint32]bool{}
	for _, pid := range p.PIDs {
		job[uint32(pid)] = true
	}
	var kept []state.JobGPU
	for i := range p.GPUs {
		g := p.GPUs[i]
		if i < len(pidsOnGPU) {
			for _, pid := range pidsOnGPU[i] {
				if job[pid] {
					g.JobPIDs = append(g.JobPIDs, pid)
				}
			}
		}
		sort.Slice(g.JobPIDs, func(a, b int) bool { return g.JobPIDs[a] < g.JobPIDs[b] })
		for t := range g.Samples {
			for k := range g.Samples[t].Processes {
				g.Samples[t].Processes[k].InJob = job[g.Samples[t].Processes[k].PID]
			}
		}
		if byProcess && len(g.JobPIDs) == 0 {
			continue
		}
		kept = append(kept, g)
	}
	p.GPUs = kept
	if byProcess {
		p.GPUsFrom = "processes"
	}
}

// userName turns the numeric owner jobperf found into a name, through the
// process table (NSS on a real node, the simulated owners otherwise).
func userName(ctx context.Context, o JobOptions, p *state.JobPerf) string {
	if p.User == "" || strings.Trim(p.User, "0123456789") != "" || len(p.PIDs) == 0 {
		return p.User
	}
	lookup := o.Sources.Process
	if lookup == nil {
		lookup = hostProcesses(o.Options)
	}
	for _, pid := range p.PIDs {
		if u, _, _ := lookup(ctx, pid); u != "" {
			return u
		}
	}
	return p.User
}

// ranksOnGPU maps each of the job's processes NVML ran on a job GPU (at
// the last tick, or in any tick's per-process utilisation) to those GPUs.
func ranksOnGPU(p *state.JobPerf) map[int32][]int {
	out := map[int32][]int{}
	add := func(pid uint32, gpu int) {
		k := int32(pid)
		if !slices.Contains(out[k], gpu) {
			out[k] = append(out[k], gpu)
		}
	}
	for _, g := range p.GPUs {
		for _, pid := range g.JobPIDs {
			add(pid, g.Index)
		}
		for _, s := range g.Samples {
			for _, pr := range s.Processes {
				if pr.InJob {
					add(pr.PID, g.Index)
				}
			}
		}
	}
	return out
}
