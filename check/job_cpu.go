package check

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"

	"github.com/gpuprobe/gpuprobe/state"
)

const fixNUMA = "bind each task near its GPUs: srun --gpu-bind=closest with --cpu-bind=cores (task/affinity or task/cgroup), or gres.conf Cores= that match the GPUs' NUMA nodes"

const cpuOnlySummary = "a CPU-only step: Slurm allocated it no GPU (no SLURM_STEP_GPUS, SLURM_JOB_GPUS, SLURM_GPUS_ON_NODE or CUDA_VISIBLE_DEVICES)"

// cpuOnlyWords is cpuOnlySummary, naming a SLURM_JOB_GPUS the step only
// inherited from the batch script.
func cpuOnlyWords(n *state.Node) string {
	if e := n.Slurm.Env; e.InheritedJobGPUs() {
		return "a CPU-only step: Slurm allocated it no GPU (no SLURM_STEP_GPUS or CUDA_VISIBLE_DEVICES; " + inheritedWords(e) + ")"
	}
	return cpuOnlySummary
}

func checkNUMAAffinity(n *state.Node, cfg *Config) Result {
	if r, skip := jobNVMLSkip(n, cfg); skip {
		return r
	}
	if cpuOnlyStep(n) {
		return Result{Status: Skip, Summary: cpuOnlyWords(n)}
	}
	if n.Slurm.Task == nil || len(n.Slurm.Task.CPUs) == 0 {
		return Result{Status: Skip, Summary: "the task's CPU mask was not collected"}
	}
	task := n.Slurm.Task.CPUs
	t := visibleGPUs(n)
	if len(t.visible) == 0 {
		return t.noVisible()
	}
	v := verdict{id: "job.numa_affinity"}
	var union []int
	judged, src := 0, ""
	for _, g := range t.visible {
		cpus, from := gpuCPUs(n, g)
		if cpus == nil {
			v.add(Skip, g, "", "NUMA locality unknown (no sysfs local_cpulist, no NVML CPU affinity)")
			continue
		}
		judged++
		src = from
		union = append(union, cpus...)
		if len(t.visible) > 1 && len(cpulist.Intersect(task, cpus)) == 0 {
			v.add(Warn, g, fixNUMA, fmt.Sprintf("on %s (CPUs %s); this task has no CPU there", numaName(g), cpulist.Format(cpus)))
		}
	}
	if judged == 0 {
		return v.result("")
	}
	near := cpulist.Intersect(task, union)
	far := cpulist.Subtract(task, union)
	gpus := listOr(indexes(t.visible))
	switch {
	case len(near) == 0:
		v.add(Fail, nil, fixNUMA, fmt.Sprintf("all of the task's CPUs (%s) are on another NUMA node than GPU %s (local CPUs %s): every transfer crosses the socket link",
			cpulist.Format(task), gpus, cpulist.Format(union)))
	case len(far) > 0:
		v.add(Warn, nil, fixNUMA, fmt.Sprintf("%d of the task's %d CPUs (%s) are not local to GPU %s (local CPUs %s)",
			len(far), len(task), cpulist.Format(far), gpus, cpulist.Format(union)))
	}
	return v.result(fmt.Sprintf("task CPUs %s are local to GPU %s (%s)", cpulist.Format(task), gpus, src))
}

func checkCPUsPerGPU(n *state.Node, cfg *Config) Result {
	if r, skip := jobNVMLSkip(n, cfg); skip {
		return r
	}
	if cpuOnlyStep(n) {
		return Result{Status: Skip, Summary: cpuOnlyWords(n)}
	}
	min := cfg.Job.MinCPUsPerGPU
	if min <= 0 {
		return Result{Status: Skip, Summary: "no minimum set (job.min_cpus_per_gpu: 0)"}
	}
	env := n.Slurm.Env
	t := visibleGPUs(n)
	var cpus, gpus int
	var from string
	switch {
	case env.CPUsOnNode != nil && env.StepGPUsOnNode() != nil && *env.GPUsOnNode > 0:
		// The job's allocation on this node is what its data loaders share.
		cpus, gpus = *env.CPUsOnNode, *env.GPUsOnNode
		from = fmt.Sprintf("SLURM_CPUS_ON_NODE=%d / SLURM_GPUS_ON_NODE=%d", cpus, gpus)
	case len(t.visible) == 0:
		return t.noVisible()
	case env.CPUsPerTask != nil:
		cpus, gpus = *env.CPUsPerTask, len(t.visible)
		from = fmt.Sprintf("SLURM_CPUS_PER_TASK=%d / %d visible GPU(s)", cpus, gpus)
	case n.Slurm.Task != nil && len(n.Slurm.Task.CPUs) > 0:
		cpus, gpus = len(n.Slurm.Task.CPUs), len(t.visible)
		from = fmt.Sprintf("%d CPUs in the task's mask / %d visible GPU(s)", cpus, gpus)
	default:
		return Result{Status: Skip, Summary: "the task's CPU count is unknown"}
	}
	ratio := float64(cpus) / float64(gpus)
	summary := fmt.Sprintf("%.1f CPUs per GPU (%s)", ratio, from)
	if ratio < min {
		return Result{Status: Warn, Summary: fmt.Sprintf("%s, below %g: data-loader workers will starve the GPUs", summary, min),
			Remedy: fmt.Sprintf("request more CPUs: --cpus-per-gpu=%g (or --cpus-per-task)", min)}
	}
	return Result{Status: Pass, Summary: summary}
}
