package check

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

// The job checks judge how one task of a job step was launched on this node:
// its GPUs, its CPUs, its neighbours and its launcher's arithmetic. They skip
// outside a job step (--job forces them, --no-job turns them off).
func init() {
	for _, c := range []Check{
		{ID: "job.visible_devices", Title: "the GPUs this task can use are exactly the ones Slurm allocated", Run: checkVisibleDevices},
		{ID: "job.gpu_sharing", Title: "no two local tasks share a GPU set; no more GPU processes than GPUs", Run: checkGPUSharing},
		{ID: "job.numa_affinity", Title: "the task's CPUs sit on its GPUs' NUMA node", Run: checkNUMAAffinity},
		{ID: "job.cpus_per_gpu", Title: "enough CPUs per GPU to feed it", Run: checkCPUsPerGPU},
		{ID: "job.exclusive", Title: "no other job's process or memory on this job's GPUs", Run: checkExclusive},
		{ID: "job.master_addr", Title: "MASTER_ADDR resolves and is the job's first node", Run: checkMasterAddr},
		{ID: "job.nccl_env", Title: "NCCL_* variables name HCAs and interfaces that exist and do not disable fast paths", Run: checkNCCLEnv},
		{ID: "job.cuda_compat", Title: "the job's CUDA runtime is not newer than the driver supports", Run: checkCUDACompat},
		{ID: "job.gpu_memory", Title: "every visible GPU has at least --min-gpu-memory", Run: checkGPUMemory},
	} {
		c.Scope = JobScope
		register(c)
	}
}

// jobSkip is the precondition every job check shares.
func jobSkip(n *state.Node, cfg *Config) (Result, bool) {
	if cfg.Job.Mode == "never" {
		return Result{Status: Skip, Summary: "job checks off (--no-job or --slurm-drain)"}, true
	}
	if n.Slurm == nil || n.Slurm.Env == nil {
		return Result{Status: Skip, Summary: "Slurm environment not collected"}, true
	}
	if cfg.Job.Mode != "always" && !n.Slurm.InJob {
		return Result{Status: Skip, Summary: "not inside a job step (" + n.Slurm.JobReason + ")"}, true
	}
	return Result{}, false
}

// jobNVMLSkip adds the NVML precondition for checks that look at GPUs.
func jobNVMLSkip(n *state.Node, cfg *Config) (Result, bool) {
	if r, skip := jobSkip(n, cfg); skip {
		return r, true
	}
	return nvmlSkip(n)
}

// taskGPUs is what this task can use: the GPUs CUDA_VISIBLE_DEVICES resolves
// to through NVML (every GPU when it is unset), and the entries that do not
// resolve.
type taskGPUs struct {
	visible      []*state.GPU
	resolved     []slurmstate.Resolved
	unverifiable int
}

func idents(n *state.Node) []slurmstate.GPUIdent {
	out := make([]slurmstate.GPUIdent, len(n.NVML.GPUs))
	for i, g := range n.NVML.GPUs {
		out[i] = slurmstate.GPUIdent{Index: g.Index, UUID: g.UUID}
		for _, m := range g.MIGDevices {
			out[i].MIGUUIDs = append(out[i].MIGUUIDs, m.UUID)
		}
	}
	return out
}

// cpuOnlyStep reports a job step that was given no GPU: Slurm set none of
// its GPU variables (SLURM_STEP_GPUS, SLURM_JOB_GPUS, SLURM_GPUS_ON_NODE,
// CUDA_VISIBLE_DEVICES; srun(1), "OUTPUT ENVIRONMENT VARIABLES"). Without
// ConstrainDevices such a step can open every GPU, but it did not ask for
// any: judging its CPUs against the GPUs' would be a false alarm.
func cpuOnlyStep(n *state.Node) bool {
	e := n.Slurm.Env
	if e == nil {
		return false
	}
	gpus, _ := e.AllocatedGPUs()
	inherited := e.InheritedJobGPUs() // srun --gres=none inside a GPU job: the batch script's variables
	onNode := e.StepGPUsOnNode()
	return len(gpus) == 0 && e.StepGPUs == nil && (e.JobGPUs == nil || inherited) && (onNode == nil || *onNode == 0) &&
		(e.GPUsPerTask == "" || inherited) && (e.CUDAVisible == nil || !e.CUDAVisible.Set)
}

func visibleGPUs(n *state.Node) taskGPUs {
	var t taskGPUs
	cvd := n.Slurm.Env.CUDAVisible
	if cvd == nil || !cvd.Set {
		for i := range n.NVML.GPUs {
			t.visible = append(t.visible, &n.NVML.GPUs[i])
		}
		return t
	}
	t.resolved = cvd.Resolve(idents(n))
	seen := map[int]bool{}
	for _, r := range t.resolved {
		if r.Unverifiable {
			t.unverifiable++
		}
		if r.GPU < 0 || seen[r.GPU] {
			continue
		}
		seen[r.GPU] = true
		if g := gpuByIndex(n, r.GPU); g != nil {
			t.visible = append(t.visible, g)
		}
	}
	return t
}

func gpuByIndex(n *state.Node, i int) *state.GPU {
	for k := range n.NVML.GPUs {
		if n.NVML.GPUs[k].Index == i {
			return &n.NVML.GPUs[k]
		}
	}
	return nil
}

func indexes(gpus []*state.GPU) []int {
	out := make([]int, 0, len(gpus))
	for _, g := range gpus {
		out = append(out, g.Index)
	}
	sort.Ints(out)
	return out
}

// listOr prints a GPU index list, or "none".
func listOr(l []int) string {
	if len(l) == 0 {
		return "none"
	}
	return cpulist.Format(l)
}

// deviceMode tells whether a device cgroup confines this task (Slurm's
// ConstrainDevices): then NVML sees only the allocated GPUs and
// CUDA_VISIBLE_DEVICES is renumbered from 0; otherwise indexes are global.
// The open() probe of the device files is the strongest evidence, the
// cgroup's devices.list next, the configuration last.
func deviceMode(s *slurmstate.State) (constrained bool, how string) {
	okFiles := 0
	for _, d := range s.Devices {
		if d.Access == "denied" && strings.Contains(d.Error, "cgroup") {
			return true, "device cgroup: " + d.Path + " is blocked (EPERM)"
		}
		if d.Access == "ok" {
			okFiles++
		}
	}
	if s.Task != nil && len(s.Task.DeviceRules) > 0 && !containsStr(s.Task.DeviceRules, "a *:* rwm") {
		return true, "device cgroup: devices.list allows only listed devices"
	}
	if present, ok := partialDeviceFiles(s); ok {
		return true, "renumbered: this task has only " + strings.Join(present, ", ") +
			" of the GPU device files (a container or namespace that shows it some of the node's GPUs, or GPUs the driver made no file for): NVML and CUDA number what is there from 0"
	}
	if okFiles > 0 {
		return false, fmt.Sprintf("no device cgroup: all %d GPU device files open; indexes are global", okFiles)
	}
	if why := slurmNumberedFromZero(s.Env); why != "" {
		return true, why
	}
	if c := s.Conf; c != nil && c.SlurmConf != nil {
		if c.SlurmConf.UsesCgroupTasks() && c.CgroupConf != nil && c.CgroupConf.ConstrainDevices {
			return true, "ConstrainDevices=yes with TaskPlugin=task/cgroup (per the configuration)"
		}
		return false, "no ConstrainDevices in the configuration; indexes are global"
	}
	return false, "no device cgroup seen; indexes taken as global"
}

// slurmNumberedFromZero reads Slurm's own numbering when no device file
// says whether a device cgroup confines the task: Slurm writes
// CUDA_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL from one list
// (gres_common.c, gres_common_gpu_set_env), which counts the step's GPUs
// from 0 only when it constrains devices (src/interfaces/gres.c,
// gres_use_local_device_index: task/cgroup with ConstrainDevices=yes;
// common_gres_set_env, local_inx) and is the node's indexes otherwise. So
// a CUDA_VISIBLE_DEVICES that GPU_DEVICE_ORDINAL (or ROCR_VISIBLE_DEVICES)
// repeats, counting 0..n-1 for n allocated GPUs that are not 0..n-1, is
// Slurm's local numbering: "SLURM_JOB_GPUS=1,2,3,5",
// "CUDA_VISIBLE_DEVICES=0,1,2,3" as a Mila batch script noted them
// (realenv/mila-batch-jobgpus-1235-local.env). It returns why, or "".
func slurmNumberedFromZero(e *slurmstate.Env) string {
	if e == nil || e.CUDAVisible == nil || !e.CUDAVisible.Set || e.CUDAVisible.Truncated {
		return ""
	}
	slurm, by := e.SlurmVisible()
	if slurm == "" || strings.TrimSpace(e.CUDAVisible.Raw) != slurm {
		return ""
	}
	alloc, from := e.AllocatedGPUs()
	ents := e.CUDAVisible.Entries
	if len(alloc) == 0 || len(ents) != len(alloc) {
		return ""
	}
	same := true
	for i, r := range ents {
		if r.Kind != slurmstate.RefIndex || r.Index != i {
			return ""
		}
		same = same && alloc[i] == i
	}
	if same {
		return ""
	}
	return fmt.Sprintf("Slurm numbered CUDA_VISIBLE_DEVICES from 0 (%s, as %s) for its GPUs %s (%s), which it does only when it constrains devices (task/cgroup, ConstrainDevices=yes)",
		e.CUDAVisible.Raw, by, cpulist.Format(alloc), from)
}

// partialDeviceFiles reports a task that sees only some of the node's GPU
// device files, all of which it may open: /dev/nvidia2 alone, where the
// node has /dev/nvidia0 and /dev/nvidia1 too. The driver makes one
// /dev/nvidiaN per GPU, numbered from 0 by minor; a container runtime that
// exposes the allocated GPUs alone (libnvidia-container's --device, as
// enroot's 98-nvidia.sh passes it NVIDIA_VISIBLE_DEVICES) creates only
// theirs. NVML there numbers what it sees from 0, as under a device
// cgroup. Real case: NVIDIA/pyxis#47, a 1-GPU step whose container had
// /dev/nvidia2 only and CUDA_VISIBLE_DEVICES=2. It returns the files.
func partialDeviceFiles(s *slurmstate.State) ([]string, bool) {
	var present []string
	minors := map[int]bool{}
	for _, d := range s.Devices {
		base := strings.TrimPrefix(d.Path, "/dev/nvidia")
		if base == d.Path || base == "" || strings.Trim(base, "0123456789") != "" {
			continue
		}
		if !d.Exist || !d.Char {
			continue
		}
		if d.Access != "ok" {
			return nil, false
		}
		present = append(present, d.Path)
		minors[d.Minor] = true
	}
	for i := range len(present) {
		if !minors[i] {
			return present, true
		}
	}
	return nil, false
}

// gpuCPUs returns the CPUs local to a GPU and where that came from: the
// topology collector's sysfs view, else the Slurm collector's own read of
// local_cpulist (neither is narrowed to the task's cpuset), else NVML's CPU
// affinity, which inside a job step can be.
func gpuCPUs(n *state.Node, g *state.GPU) ([]int, string) {
	if n.Topology != nil {
		if tg := n.Topology.GPU(g.PCIBusID); tg != nil && tg.LocalCPUs != "" {
			if cpus, err := cpulist.Parse(tg.LocalCPUs); err == nil && len(cpus) > 0 {
				return cpus, "topology local_cpulist"
			}
		}
	}
	if n.Slurm != nil {
		for _, c := range n.Slurm.GPUCPUs {
			if strings.EqualFold(c.PCIBusID, g.PCIBusID) && len(c.CPUs) > 0 {
				return c.CPUs, "sysfs local_cpulist"
			}
		}
	}
	if g.CPUAffinity != "" {
		if cpus, err := cpulist.Parse(g.CPUAffinity); err == nil && len(cpus) > 0 {
			return cpus, "NVML CPU affinity"
		}
	}
	return nil, ""
}

func numaName(g *state.GPU) string {
	if g.NUMANode != nil {
		return "NUMA node " + strconv.Itoa(*g.NUMANode)
	}
	return "its NUMA node"
}
