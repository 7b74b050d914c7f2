package check

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"path/filepath"
	"slices"
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

// idents are the GPUs CUDA can number, in NVML's order: a GPU whose handle
// NVML was refused (NO_PERMISSION, a device cgroup: state.GPU.Denied) is
// none of CUDA's, which counts the devices it can open from 0, so
// CUDA_VISIBLE_DEVICES=1 is the second GPU the task reaches, not NVML's 1.
func idents(n *state.Node) []slurmstate.GPUIdent {
	out := make([]slurmstate.GPUIdent, 0, len(n.NVML.GPUs))
	for _, g := range n.NVML.GPUs {
		if g.Denied {
			continue
		}
		id := slurmstate.GPUIdent{Index: g.Index, UUID: g.UUID, MIG: g.MIG != nil && g.MIG.Current}
		for _, m := range g.MIGDevices {
			id.MIGUUIDs = append(id.MIGUUIDs, m.UUID)
		}
		out = append(out, id)
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
			if !n.NVML.GPUs[i].Denied { // closed to this task (idents)
				t.visible = append(t.visible, &n.NVML.GPUs[i])
			}
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

// noVisible is the skip of a check that needs the GPUs this task uses when
// none resolved: none visible, or (MIG) entries that cannot be mapped to
// NVML's GPUs, where which GPUs the task uses is unknown, not "none".
func (t taskGPUs) noVisible() Result {
	if t.unverifiable > 0 {
		return Result{Status: Skip, Summary: fmt.Sprintf("which GPUs this task uses is unknown: %d CUDA_VISIBLE_DEVICES entries name MIG devices, which cannot be mapped to NVML's GPUs", t.unverifiable)}
	}
	return Result{Status: Skip, Summary: "no GPUs visible to this task"}
}

// migIndexes counts the CUDA_VISIBLE_DEVICES indexes that count CUDA's MIG
// devices (a GPU in MIG mode), which NVML's indexes do not number.
func (t taskGPUs) migIndexes() int {
	k := 0
	for _, r := range t.resolved {
		if r.Unverifiable && r.Ref.Kind == slurmstate.RefIndex {
			k++
		}
	}
	return k
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
// cgroup's devices.list next, Slurm's own numbering next, then NVML's view
// where it leaves one reading (nvmlNumbering), the configuration last.
func deviceMode(n *state.Node) (constrained bool, how string) {
	s := n.Slurm
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
	nm, nwhy := nvmlNumbering(n)
	if nm == numberedLocal {
		return true, nwhy
	}
	if c := s.Conf; c != nil && c.SlurmConf != nil && confDecides(c) {
		if c.SlurmConf.UsesCgroupTasks() && c.CgroupConf != nil && c.CgroupConf.ConstrainDevices {
			return true, "ConstrainDevices=yes with TaskPlugin=task/cgroup (per the configuration)"
		}
		return false, "no ConstrainDevices in the configuration; indexes are global"
	}
	if nm != numberedUnknown {
		return false, nwhy
	}
	return false, "unknown: " + nwhy
}

// confDecides: the configuration read says what slurmd does with devices
// only when cgroup.conf was read without an error (a line slurmd would
// refuse, or a file that could not be read, says nothing of what the
// running slurmd uses). A cgroup.conf that is absent is slurmd's defaults
// (ConstrainDevices=no).
func confDecides(c *slurmstate.Conf) bool {
	if c.CgroupConf != nil && len(c.CgroupConf.Errors) > 0 {
		return false
	}
	for _, u := range c.Unreadable {
		if filepath.Base(u.Path) == "cgroup.conf" || u.Path == c.SlurmConfPath {
			return false
		}
	}
	return true
}

type numbering int

const (
	numberedUnknown numbering = iota
	numberedLocal             // the task's GPUs are numbered from 0
	numberedGlobal            // the node's numbering
	numberedAlike             // both read the same here
)

// nvmlNumbering reads which numbering CUDA_VISIBLE_DEVICES's indexes are in
// from the GPUs NVML reaches in this task, where no device file decided it
// and Slurm's own numbering (GPU_DEVICE_ORDINAL) does not show it
// (a gres.conf that sets CUDA_VISIBLE_DEVICES alone, as UVA's; a dump of
// a few variables). NVML inside the task sees what its device cgroup lets
// through: either only those GPUs, or every GPU with the others' handles
// refused NO_PERMISSION (state.GPU.Denied). CUDA numbers the GPUs it can
// open from 0, so:
//   - a GPU NVML was refused: a device cgroup, numbered from 0;
//   - NVML reaches no more GPUs than were allocated, and an allocated
//     node index is beyond what it reaches: the node's numbering cannot
//     name that GPU here, so the task's GPUs are numbered from 0 (a device
//     cgroup, or a container that shows only them; with fewer than were
//     allocated, a cgroup per task or a GPU this task cannot reach);
//   - NVML reaches more GPUs than were allocated: nothing confines the
//     task to them, and CUDA numbers the GPUs it reaches as NVML does, the
//     node's numbering, whatever Slurm meant to write;
//   - NVML reaches exactly the allocated GPUs 0..n-1: both numberings name
//     the same GPUs.
//
// Anything else (MIG instances, no index list) is unknown, and why.
func nvmlNumbering(n *state.Node) (numbering, string) {
	env := n.Slurm.Env
	reach, denied := 0, []int{}
	for _, g := range n.NVML.GPUs {
		if g.Denied {
			denied = append(denied, g.Index)
			continue
		}
		reach++
	}
	if len(denied) > 0 {
		return numberedLocal, fmt.Sprintf("device cgroup: NVML was refused GPU %s (NO_PERMISSION) and reaches %d: CUDA numbers those from 0", cpulist.Format(denied), reach)
	}
	alloc, from := env.AllocatedGPUs()
	if len(alloc) == 0 || migEntries(env.CUDAVisible) > 0 {
		if reach > 0 && len(alloc) == 0 {
			return numberedGlobal, fmt.Sprintf("no device cgroup keeps this task off the GPUs: NVML reaches %d (no device file decided)", reach)
		}
		return numberedUnknown, "no device file decided, and no GPU index list to hold NVML's view against"
	}
	top := slices.Max(alloc)
	switch {
	case reach <= len(alloc) && top >= reach:
		how := fmt.Sprintf("renumbered: NVML reaches %d GPU(s), as many as allocated, and cannot be the node's numbering (%s=%s names GPU %d)", reach, from, cpulist.Format(alloc), top)
		if reach < len(alloc) {
			how = fmt.Sprintf("renumbered: NVML reaches %d GPU(s), fewer than the %d allocated (%s=%s; a device cgroup per task, or allocated GPUs this task cannot reach)", reach, len(alloc), from, cpulist.Format(alloc))
		}
		return numberedLocal, how + ": CUDA numbers this task's GPUs from 0 (no device file decided)"
	case reach > len(alloc):
		return numberedGlobal, fmt.Sprintf("NVML reaches %d GPUs, more than the %d allocated: no device cgroup confines this task, so CUDA numbers the node's GPUs (no device file decided)", reach, len(alloc))
	default:
		return numberedAlike, fmt.Sprintf("NVML reaches exactly the %d allocated GPUs, %s=%s, which the node's numbering and the task's name alike (no device file decided)", reach, from, cpulist.Format(alloc))
	}
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
