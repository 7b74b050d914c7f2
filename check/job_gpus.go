package check

import (
	"cmp"
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

const fixBinding = "request GPUs per task (srun --gpus-per-task=1, or --gres=gpu:N with --gpu-bind=single:1/map_gpu) so Slurm sets each task's CUDA_VISIBLE_DEVICES"

func checkVisibleDevices(n *state.Node, cfg *Config) Result {
	if r, skip := jobNVMLSkip(n, cfg); skip {
		return r
	}
	env := n.Slurm.Env
	cvd := env.CUDAVisible
	v := verdict{id: "job.visible_devices"}
	constrained, how := deviceMode(n)
	t := visibleGPUs(n)
	if t.migIndexes() > 0 {
		how = migIndexMode(how, constrained)
	}
	// The GPUs NVML reaches: one whose handle it was refused (a device
	// cgroup, state.GPU.Denied) is no GPU this task can use.
	nvmlCount := 0
	for _, g := range n.NVML.GPUs {
		if !g.Denied {
			nvmlCount++
		}
	}

	switch {
	case cvd.NoDevFiles:
		v.add(Warn, nil, "declare the GPUs with File= lines or AutoDetect=nvml in gres.conf",
			"CUDA_VISIBLE_DEVICES=NoDevFiles: gres.conf declares GPUs without device files, so Slurm cannot bind them")
	case cvd.Truncated:
		v.add(Fail, nil, "fix CUDA_VISIBLE_DEVICES: indexes, GPU-<uuid> or MIG-<uuid>, comma-separated",
			fmt.Sprintf("CUDA_VISIBLE_DEVICES=%q: entry %q is invalid, so CUDA ignores it and the %d after it", cvd.Raw, cvd.Invalid, cvd.Hidden))
	}
	// Slurm never sets these to something unreadable: a value that does not
	// parse was set by hand, and what the step was given is then unknown
	// (it used to pass as "no GPUs allocated").
	for _, e := range env.Errors {
		if e.Var == "SLURM_STEP_GPUS" || e.Var == "SLURM_JOB_GPUS" || e.Var == "SLURM_GPUS_ON_NODE" {
			v.add(Error, nil, "unset "+e.Var+" in the job script: Slurm sets it from --gres/--gpus",
				fmt.Sprintf("%s=%q does not parse (%s): the GPUs allocated to this step are unknown", e.Var, e.Value, e.Error))
		}
	}
	seen := map[int]string{}
	for _, r := range t.resolved {
		switch {
		case r.Unverifiable:
		case r.GPU < 0:
			if g := globalIndexHere(n, r.Ref); g != nil {
				v.add(Fail, g, fixGlobalIndexHere, fmt.Sprintf("CUDA_VISIBLE_DEVICES entry %s is the node's number of /dev/nvidia%d, but this task's GPUs are numbered from 0 (its GPU %d is /dev/nvidia%d): CUDA has no device %s here",
					r.Ref.Raw, *g.Minor, g.Index, *g.Minor, r.Ref.Raw))
				continue
			}
			v.add(Fail, nil, "fix CUDA_VISIBLE_DEVICES or the job script that sets it", "CUDA_VISIBLE_DEVICES entry "+r.Ref.Raw+": "+r.Err)
		case seen[r.GPU] != "":
			v.add(Warn, gpuByIndex(n, r.GPU), "list each GPU once", fmt.Sprintf("listed twice in CUDA_VISIBLE_DEVICES (%s and %s)", seen[r.GPU], r.Ref.Raw))
		default:
			seen[r.GPU] = r.Ref.Raw
		}
	}

	alloc, from := env.AllocatedGPUs()
	onNode := env.StepGPUsOnNode()
	visible := indexes(t.visible)
	// Slurm's gres/gpu plugin sets CUDA_VISIBLE_DEVICES and
	// GPU_DEVICE_ORDINAL to the same list; when they differ, the job (or a
	// module it loaded) rewrote CUDA_VISIBLE_DEVICES afterwards, and that
	// is what to fix, not Slurm's binding.
	binding := fixBinding
	override := overwritten(env)
	if override {
		binding = fixOverride(env)
	}
	// A Ray worker's CUDA_VISIBLE_DEVICES is Ray's own accounting: the
	// raylet sets each worker's to the GPUs it assigned the worker, a
	// subset of what the raylet saw (the step's). That is not a binding
	// error; a GPU outside the step's allocation still is.
	ray := env.RayWorker()
	if ray && override {
		binding = fixRay
	}
	noEnvWhy, noEnvFix := noCUDAEnv(n)
	if !cvd.Set && noEnvFix != "" {
		binding = noEnvFix
	}
	if cvd.Set && strings.TrimSpace(cvd.Raw) == "" && (alloc != nil || onNode != nil) {
		v.add(Warn, nil, binding, "CUDA_VISIBLE_DEVICES is empty: CUDA sees no GPU at all, though Slurm allocated "+allocWords(alloc, from, env))
	}
	// MIG: Slurm numbers GRES records, not GPUs. SLURM_STEP_GPUS is each
	// record's index on the node (gres_common.c common_gres_set_env writes
	// gres_device->index into the global list), and a MIG instance is a
	// record of its own, which CUDA_VISIBLE_DEVICES names by UUID ("MIG
	// devices always use UUID", same function). SLURM_STEP_GPUS=12 is the
	// thirteenth MIG GRES, not GPU 12: only the counts compare.
	// A plain index on a GPU in MIG mode counts CUDA's MIG devices too
	// (slurmstate.Resolve): the same count comparison holds.
	migs := migEntries(cvd) + t.migIndexes()
	switch {
	case migs > 0 && alloc != nil:
		if len(cvd.Entries) > len(alloc) {
			v.add(Fail, nil, binding, fmt.Sprintf("this task can use %d GPU/MIG device(s), Slurm allocated %d (%s=%s numbers MIG GRES, not GPUs)", len(cvd.Entries), len(alloc), from, listOr(alloc)))
		}
		missingAllocated(&v, n, env, len(cvd.Entries) < len(alloc) && len(cvd.Entries) > 0, binding,
			fmt.Sprintf("this single task sees only %d of the %d allocated MIG GRES (%s=%s)", len(cvd.Entries), len(alloc), from, listOr(alloc)))
	case alloc == nil && onNode == nil:
		none := "Slurm allocated no GPUs to this step"
		if env.InheritedJobGPUs() {
			none += " (" + inheritedWords(env) + ")"
		}
		if !cvd.Set && nvmlCount > 0 && !constrained {
			v.add(Warn, nil, "request GPUs (--gres=gpu:N, --gpus-per-task) or set ConstrainDevices=yes in cgroup.conf so GPU-less steps cannot touch them",
				fmt.Sprintf("%s, yet CUDA can use all %d GPUs of the node (CUDA_VISIBLE_DEVICES unset; %s)", none, nvmlCount, how))
		}
		// Slurm sets CUDA_VISIBLE_DEVICES only beside SLURM_STEP_GPUS or
		// SLURM_JOB_GPUS and SLURM_GPUS_ON_NODE (gres_common.c,
		// gres_common_gpu_set_env): one set in a step Slurm gave no GPU was
		// set by the job, and without a device cgroup the GPUs it names are
		// reachable though nothing allocated them (a hard-coded
		// "export CUDA_VISIBLE_DEVICES=0" in a CPU step).
		// A step's inherited SLURM_JOB_GPUS (InheritedJobGPUs) still names
		// the job's own GPUs: CUDA_VISIBLE_DEVICES left from the batch
		// script (Slurm before it unset it in GPU-less steps) points there.
		var jobs []int
		if env.JobGPUs != nil {
			jobs = env.JobGPUs.Indexes
		}
		if extra := cpulist.Subtract(visible, jobs); cvd.Set && len(extra) > 0 && !constrained {
			v.add(Warn, nil, "request the GPUs (--gres=gpu:N, --gpus-per-task) instead of setting CUDA_VISIBLE_DEVICES, or set ConstrainDevices=yes in cgroup.conf",
				fmt.Sprintf("%s, yet %s gives this task GPU %s, which no device cgroup keeps it off: another job's, maybe (%s)", none, cvdWords(cvd), listOr(extra), how))
		}
	case alloc == nil:
		if len(visible) > *onNode {
			v.add(Fail, nil, "let Slurm bind the GPUs (drop --gpu-bind=none, or set CUDA_VISIBLE_DEVICES from SLURM_LOCALID)",
				fmt.Sprintf("Slurm allocated %d GPU(s) (SLURM_GPUS_ON_NODE=%d, no index list), but this task can use %d: %s", *onNode, *onNode, len(visible), listOr(visible)))
		}
	case constrained:
		// Local indexes: NVML sees what the cgroup lets through.
		if nvmlCount > len(alloc) {
			v.add(Fail, nil, "set ConstrainDevices=yes in cgroup.conf and check gres.conf File= lines",
				fmt.Sprintf("the device cgroup lets this task reach %d GPUs, Slurm allocated %d (%s=%s)", nvmlCount, len(alloc), from, listOr(alloc)))
		}
		if len(visible) > len(alloc) {
			v.add(Fail, nil, binding, fmt.Sprintf("this task can use %d GPUs, Slurm allocated %d (%s=%s)", len(visible), len(alloc), from, listOr(alloc)))
		}
		missingAllocated(&v, n, env, len(visible) < len(alloc) && len(visible) > 0, binding, fmt.Sprintf("this single task sees only %d of the %d allocated GPUs", len(visible), len(alloc)))
	default:
		// Global indexes: the visible set must be the allocated one.
		extra := cpulist.Subtract(visible, alloc)
		if override && len(extra) > 0 {
			words := overrideWords(env)
			if ray {
				words = rayWords(n) + ": " + words + ", and names GPUs outside the step's allocation"
			}
			v.add(Fail, nil, binding, words)
		}
		for _, i := range extra {
			v.add(Fail, gpuByIndex(n, i), binding,
				fmt.Sprintf("visible to this task but not allocated to it (%s=%s)", from, listOr(alloc)))
		}
		switch {
		case !cvd.Set && len(extra) > 0 && noEnvWhy != "":
			v.add(Fail, nil, noEnvFix, fmt.Sprintf("%s, so this task can use all %d GPUs", noEnvWhy, nvmlCount))
		case !cvd.Set && len(extra) > 0:
			v.add(Fail, nil, "let Slurm set CUDA_VISIBLE_DEVICES (do not unset it; avoid --gpu-bind=none)",
				fmt.Sprintf("CUDA_VISIBLE_DEVICES is unset, so this task can use all %d GPUs", nvmlCount))
		}
		for _, i := range alloc {
			if i >= nvmlCount {
				v.add(Fail, nil, "check that every GPU is healthy (gpu.count) and gres.conf matches NVML (slurm.gres)",
					fmt.Sprintf("Slurm allocated GPU %d (%s), NVML sees only %d GPUs", i, from, nvmlCount))
			}
		}
		missing := cpulist.Subtract(alloc, visible)
		msg := "this single task cannot use GPU(s) " + listOr(missing) + " of the allocated " + listOr(alloc)
		if override {
			msg = overrideWords(env) + ", leaving out GPU(s) " + listOr(missing) + " of the allocated " + listOr(alloc)
		}
		missingAllocated(&v, n, env, len(missing) > 0 && len(visible) > 0, binding, msg)
	}

	if cvd.IndexBased() && !strings.EqualFold(env.CUDADeviceOrder, "PCI_BUS_ID") {
		if names := modelNames(n); len(names) > 1 {
			v.add(Warn, nil, "export CUDA_DEVICE_ORDER=PCI_BUS_ID (or give UUIDs: gres.conf Flags=env_uuid)",
				fmt.Sprintf("CUDA_VISIBLE_DEVICES uses indexes, but without CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA orders GPUs fastest first, and this node mixes %s: CUDA's index %d may not be NVML's",
					strings.Join(names, " and "), visible0(visible)))
		}
	}

	pass := fmt.Sprintf("sees GPU %s", listOr(visible))
	if ray && override {
		pass = rayWords(n) + ": Ray gave this worker GPU " + listOr(visible) + " of the step's (Ray sets each worker's CUDA_VISIBLE_DEVICES); it"
	}
	// Indexes that count MIG devices name no GPU NVML numbers: say so,
	// not "GPU none".
	migIndexOnly := len(visible) == 0 && t.migIndexes() > 0
	if migIndexOnly {
		pass = fmt.Sprintf("sees %d CUDA device(s) by MIG instance, not mapped to NVML's GPUs", len(cvd.Entries))
	}
	if migs > 0 && alloc != nil && migIndexOnly {
		pass += fmt.Sprintf(", %d allocated (%s=%s numbers MIG GRES, not GPUs)", len(alloc), from, cpulist.Format(alloc))
	} else if migs > 0 && alloc != nil {
		pass = fmt.Sprintf("sees %d MIG instance(s) on GPU %s, %d allocated (%s=%s numbers MIG GRES, not GPUs)", migs, listOr(visible), len(alloc), from, cpulist.Format(alloc))
	} else if alloc != nil {
		pass += fmt.Sprintf(", as allocated (%s=%s)", from, cpulist.Format(alloc))
	} else if onNode != nil {
		pass += fmt.Sprintf(", %d allocated (SLURM_GPUS_ON_NODE)", *onNode)
	} else {
		pass += ", no GPUs allocated"
		if env.InheritedJobGPUs() {
			pass += " to this step (" + inheritedWords(env) + ")"
		}
	}
	if t.unverifiable > 0 && !migIndexOnly {
		pass += fmt.Sprintf("; %d MIG instance(s) not verifiable", t.unverifiable)
	}
	r := v.result(pass + "; " + how)
	if r.Status != Pass {
		r.Details = append([]string{"mode: " + how}, r.Details...)
	}
	if ev := RayStep(n); len(ev) > 0 {
		r.Details = append(r.Details, "Ray on Slurm: "+strings.Join(ev, "; "))
	}
	return r
}

// migIndexMode words the device mode where CUDA_VISIBLE_DEVICES holds
// plain indexes on a node whose GPUs are in MIG mode: those indexes count
// CUDA's devices, a MIG instance each on a GPU in MIG mode
// (slurmstate.Resolve), not NVML's GPUs, so deviceMode's "indexes are
// global" (the node's NVML numbering) and "CUDA numbers the node's GPUs"
// are not what they are. Which devices they count is the mode's: every
// GPU's without a device cgroup, those it lets through with one.
func migIndexMode(how string, constrained bool) string {
	how = strings.TrimSuffix(how, "; indexes are global")
	how = strings.Replace(how, "CUDA numbers the node's GPUs", "CUDA numbers the devices of all the node's GPUs", 1)
	how = strings.Replace(how, "CUDA numbers this task's GPUs from 0", "CUDA numbers the devices of this task's GPUs from 0", 1)
	of := "all the node's GPUs"
	if constrained {
		of = "the GPUs this task can reach"
	}
	return how + "; in MIG mode CUDA_VISIBLE_DEVICES indexes count CUDA devices, the MIG instances of " + of + " (a GPU not in MIG mode is one), not NVML's GPUs"
}

// fixGlobalIndexHere: Slurm numbers CUDA_VISIBLE_DEVICES from 0 only when
// it constrains devices itself (src/interfaces/gres.c,
// gres_use_local_device_index: TaskPlugin task/cgroup and cgroup.conf
// ConstrainDevices=yes), else it writes the node's indexes.
const fixGlobalIndexHere = "Slurm wrote the node's GPU index because it does not constrain devices itself: set ConstrainDevices=yes in cgroup.conf with TaskPlugin=task/cgroup (Slurm then numbers CUDA_VISIBLE_DEVICES from 0), or let the container show every GPU (NVIDIA_VISIBLE_DEVICES=all, as enroot/pyxis expect) so the node's numbers hold"

// globalIndexHere finds the GPU a CUDA_VISIBLE_DEVICES index names by the
// node's numbering where a container shows this task some of the node's
// GPUs, numbered from 0 (partialDeviceFiles): the GPU whose device file's
// minor is that index, beyond the GPUs the task sees. nil otherwise. Under
// a device cgroup Slurm itself numbers from 0, so an index beyond the
// task's GPUs there is not the node's and is judged as any bad entry.
func globalIndexHere(n *state.Node, ref slurmstate.DeviceRef) *state.GPU {
	if _, ok := partialDeviceFiles(n.Slurm); !ok || ref.Kind != slurmstate.RefIndex || ref.Index < len(n.NVML.GPUs) {
		return nil
	}
	for i := range n.NVML.GPUs {
		g := &n.NVML.GPUs[i]
		if g.Minor != nil && *g.Minor == ref.Index && g.Index != ref.Index {
			return g
		}
	}
	return nil
}

// noCUDAEnv says why Slurm set no CUDA_VISIBLE_DEVICES for a step it gave
// GPUs, when the site's gres.conf is the cause, and the admin's fix: the
// node's gres.conf env flags (no_gpu_env, or amd_gpu_env without
// nvidia_gpu_env), else ROCR_VISIBLE_DEVICES set without
// CUDA_VISIBLE_DEVICES, amd_gpu_env's mark in the environment.
func noCUDAEnv(n *state.Node) (why, fix string) {
	env := n.Slurm.Env
	if env.CUDAVisible != nil && env.CUDAVisible.Set {
		return "", ""
	}
	const workaround = "; until then: export CUDA_VISIBLE_DEVICES=$SLURM_STEP_GPUS in the job (global indexes, no device cgroup)"
	if c := n.Slurm.Conf; c != nil {
		if flags, where := noCUDAEnvFlag(c.GresConf, n.Slurm.NodeName); flags != "" {
			why = fmt.Sprintf("gres.conf Flags=%s (%s) makes Slurm set no CUDA_VISIBLE_DEVICES", flags, where)
			if flags == "no_gpu_env" {
				return why, "ask the admins to drop Flags=no_gpu_env from gres.conf (it sets no GPU variable), or to set ConstrainDevices=yes" + workaround
			}
			return why, "ask the admins to add nvidia_gpu_env to gres.conf Flags= (" + flags + " sets only the AMD/Intel variables)" + workaround
		}
	}
	// Slurm's gres/gpu plugin writes CUDA_VISIBLE_DEVICES,
	// ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK and GPU_DEVICE_ORDINAL from one
	// list, each under its own gres.conf env flag, and unsets them together
	// (src/plugins/gres/common/gres_common.c, gres_common_gpu_set_env, as
	// since 22.05): one of them set without CUDA_VISIBLE_DEVICES is either
	// a gres.conf without nvidia_gpu_env or a job that unset the variable.
	// Not --gpu-bind=none: that sets all of them to the step's GPUs
	// (src/interfaces/gres.c, _get_usable_gres, "none": the whole
	// allocation) or, before 24.05 knew the word, clears them all alike.
	// Which of the two the environment cannot tell; the verdict says both.
	// (The awslabs#71 dumps, env | grep GPU, show GPU_DEVICE_ORDINAL=0,1,2,3
	// and no CUDA_VISIBLE_DEVICES: it said "avoid --gpu-bind=none".)
	for _, v := range []struct {
		name, val, flag string
	}{{"ROCR_VISIBLE_DEVICES", derefOr(env.ROCRVisible), "amd_gpu_env"}, {"GPU_DEVICE_ORDINAL", env.GPUDeviceOrdinal, "opencl_env"}} {
		if strings.TrimSpace(v.val) == "" {
			continue
		}
		return fmt.Sprintf("Slurm set %s=%s but no CUDA_VISIBLE_DEVICES, which it sets from the same list (gres.conf Flags=%s without nvidia_gpu_env, or the job unset CUDA_VISIBLE_DEVICES)", v.name, v.val, v.flag),
			"if the job script or a module unsets CUDA_VISIBLE_DEVICES, stop it; otherwise ask the admins to add nvidia_gpu_env to gres.conf Flags=" + workaround
	}
	return "", ""
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// migEntries counts the MIG instances CUDA_VISIBLE_DEVICES names.
func migEntries(cvd *slurmstate.VisibleDevices) int {
	n := 0
	if cvd != nil {
		for _, e := range cvd.Entries {
			if e.Kind == slurmstate.RefMIG {
				n++
			}
		}
	}
	return n
}

// missingAllocated judges allocated GPUs this task does not see: normal with
// per-task binding in a multi-task step, suspicious otherwise.
func missingAllocated(v *verdict, n *state.Node, env *slurmstate.Env, missing bool, binding, msg string) {
	if !missing {
		return
	}
	// Ray hands each worker a subset of the step's GPUs on purpose.
	if env.RayWorker() {
		v.add(Pass, nil, "", "")
		return
	}
	// The batch script is one process, whatever SLURM_TASKS_PER_NODE says.
	// An override is the job's doing however many tasks there are.
	if tasks, _ := env.LocalTasks(); tasks > 1 && !singleStep(env) && !overwritten(env) {
		v.add(Pass, nil, "", "")
		return
	}
	fix := "check CUDA_VISIBLE_DEVICES: something narrowed it after Slurm set it"
	if overwritten(env) {
		fix = binding
	}
	v.add(Warn, nil, fix, msg)
}

func singleStep(env *slurmstate.Env) bool {
	single, _ := env.SingleProcessStep()
	return single
}

// overwritten: CUDA_VISIBLE_DEVICES differs from GPU_DEVICE_ORDINAL (else
// ROCR_VISIBLE_DEVICES), which Slurm sets to the same list.
func overwritten(env *slurmstate.Env) bool {
	cvd := env.CUDAVisible
	slurm, _ := env.SlurmVisible()
	return slurm != "" && cvd != nil && cvd.Set && strings.TrimSpace(cvd.Raw) != slurm
}

// overrideWords says that CUDA_VISIBLE_DEVICES is no longer Slurm's.
func overrideWords(env *slurmstate.Env) string {
	slurm, by := env.SlurmVisible()
	return fmt.Sprintf("%s no longer matches what Slurm set for this step (%s, still in %s): the job overrode it", cvdWords(env.CUDAVisible), slurm, by)
}

func fixOverride(env *slurmstate.Env) string {
	slurm, by := env.SlurmVisible()
	return fmt.Sprintf("remove the override: do not set CUDA_VISIBLE_DEVICES in the job script or its modules (Slurm set it to %s, still in %s); to pick one GPU per process use LOCAL_RANK/SLURM_LOCALID as an index into it", slurm, by)
}

// cvdWords prints CUDA_VISIBLE_DEVICES's value, or that it is not set (an
// unset variable printed as "CUDA_VISIBLE_DEVICES=", which reads as empty,
// and empty hides every GPU).
func cvdWords(cvd *slurmstate.VisibleDevices) string {
	if cvd == nil || !cvd.Set {
		return "CUDA_VISIBLE_DEVICES not set"
	}
	return "CUDA_VISIBLE_DEVICES=" + cvd.Raw
}

func allocWords(alloc []int, from string, env *slurmstate.Env) string {
	if alloc != nil {
		return fmt.Sprintf("GPU %s (%s)", listOr(alloc), from)
	}
	return fmt.Sprintf("%d GPU(s) (SLURM_GPUS_ON_NODE)", *env.StepGPUsOnNode())
}

// inheritedWords says why a step's SLURM_JOB_GPUS is not its allocation.
func inheritedWords(env *slurmstate.Env) string {
	return fmt.Sprintf("SLURM_JOB_GPUS=%s is the job's, inherited from the batch script; this step has no SLURM_STEP_GPUS", env.JobGPUs.Raw)
}

func modelNames(n *state.Node) []string {
	var names []string
	for _, g := range n.NVML.GPUs {
		if g.Name != "" && !containsStr(names, g.Name) {
			names = append(names, g.Name)
		}
	}
	return names
}

func visible0(v []int) int {
	if len(v) == 0 {
		return 0
	}
	return v[0]
}

func checkGPUSharing(n *state.Node, cfg *Config) Result {
	if r, skip := jobNVMLSkip(n, cfg); skip {
		return r
	}
	env := n.Slurm.Env
	v := verdict{id: "job.gpu_sharing"}
	for _, e := range env.Errors {
		switch e.Var {
		case "SLURMD_TRES_BIND", "SLURM_GPU_BIND", "SLURM_TRES_BIND", "SLURM_TRES_PER_TASK", "SLURM_GPUS_PER_TASK", "SLURM_NTASKS_PER_GPU", "SLURM_NTASKS_PER_TRES", "SLURM_SHARDS_ON_NODE":
			v.add(Warn, nil, "unset "+e.Var+" in the job script: srun sets it from its options",
				fmt.Sprintf("%s=%q does not parse (%s): the binding Slurm was asked for is unknown", e.Var, e.Value, e.Error))
		}
	}
	if cpuOnlyStep(n) {
		return Result{Status: Skip, Summary: cpuOnlyWords(n)}
	}
	t := visibleGPUs(n)
	alloc, _ := env.AllocatedGPUs()
	gpus, gpusFrom, gpusKnown := len(t.visible), "visible to this task", false
	if onNode := env.StepGPUsOnNode(); onNode != nil {
		gpus, gpusFrom, gpusKnown = *onNode, "SLURM_GPUS_ON_NODE", true
	} else if len(alloc) > gpus {
		gpus, gpusFrom = len(alloc), "allocated"
	}
	if gpus == 0 && t.unverifiable > 0 {
		return t.noVisible()
	}
	if gpus == 0 {
		return Result{Status: Skip, Summary: "no GPUs allocated to or visible in this step"}
	}
	tasks, tasksFrom := env.LocalTasks()
	// The batch script is one process: SLURM_TASKS_PER_NODE there is the
	// job's task count, which only the srun steps it starts will have
	// (slurmstepd sets no SLURM_STEP_ID in the batch step; see
	// slurmstate.SingleProcessStep). Judging it as N tasks sharing the
	// job's GPUs warned on every sbatch --gpus-per-task script.
	single, singleWhy := env.SingleProcessStep()
	if single {
		why := singleWhy + " is one process"
		if tasks > 1 {
			why += fmt.Sprintf("; %s counts the tasks its srun steps will start", tasksFrom)
		}
		tasks, tasksFrom = 1, why
	}
	if tasks == 0 {
		tasks, tasksFrom = 1, "one task assumed (no SLURM_STEP_TASKS_PER_NODE)"
	}

	// GPU processes per node: the step's tasks, times the workers a launcher
	// inside each task starts (torchrun, a nested mpirun).
	inner, innerFrom := 1, ""
	switch {
	case env.TorchElastic && env.LocalWorldSize != nil:
		inner, innerFrom = *env.LocalWorldSize, fmt.Sprintf("LOCAL_WORLD_SIZE=%d torchrun workers per task", *env.LocalWorldSize)
	case env.OMPILocalSize != nil && nestedMPI(env):
		inner, innerFrom = *env.OMPILocalSize, fmt.Sprintf("OMPI_COMM_WORLD_LOCAL_SIZE=%d mpirun ranks per task", *env.OMPILocalSize)
	}
	procs := tasks * inner
	arith := fmt.Sprintf("%d task(s) on this node (%s)", tasks, tasksFrom)
	if inner > 1 {
		arith += fmt.Sprintf(" × %d (%s)", inner, innerFrom)
	}
	arith += fmt.Sprintf(" = %d GPU processes", procs)
	// A launcher's own count of its processes on this node says the same
	// on every rank; the rank numbers above only reveal nesting on ranks
	// whose numbers differ from Slurm's (rank 0 of a nested mpirun passed
	// while ranks 1-7 failed).
	if local, from := launcherLocalSize(env); local > procs {
		procs = local
		arith += fmt.Sprintf(", and %s: %d processes of the launcher on this node,", from, local)
	}
	arith += fmt.Sprintf(" on %d GPU(s) (%s)", gpus, gpusFrom)

	// Deliberate sharing: --ntasks-per-gpu=N puts N tasks on each GPU
	// (srun(1); it implies --tres-bind=gres/gpu:single:N; the tasks see it
	// as SLURM_NTASKS_PER_TRES, see slurmstate.Env.NTasksPerGPU), and a GPU shard
	// (gres/shard) is a slice of a GPU other tasks and jobs share.
	shared, limitBy, mapped := "", "", false
	capacity := gpus
	if env.NTasksPerGPU != nil && *env.NTasksPerGPU > 1 {
		capacity = gpus * *env.NTasksPerGPU
		limitBy = fmt.Sprintf("%s=%d", env.NTasksPerGPUVar, *env.NTasksPerGPU)
		shared = fmt.Sprintf("shared as requested (%s=%d, --ntasks-per-gpu: up to %d processes on %d GPU(s))", env.NTasksPerGPUVar, *env.NTasksPerGPU, capacity, gpus)
	}
	// --gpu-bind=map_gpu/mask_gpu that names a GPU for several tasks is a
	// placement the user wrote out (srun(1)); the tasks it binds are what
	// it allows, a launcher inside them multiplies past that.
	// --gpu-bind=single:N binds N tasks to each GPU, block-wise (srun(1):
	// "the first <tasks_per_gpu> tasks are bound to the first GPU
	// available, the second <tasks_per_gpu> tasks are bound to the second
	// GPU available, etc."): the placement --ntasks-per-gpu=N gives.
	if b, err := slurmstate.ParseGPUBind(env.GPUBind); err == nil && shared == "" && b.Type == "single" && b.N > 1 {
		capacity = gpus * b.N
		limitBy = fmt.Sprintf("--gpu-bind=%s (%s)", env.GPUBind, env.GPUBindVar)
		shared = fmt.Sprintf("shared as requested (--gpu-bind=%s, from %s: %d tasks per GPU, up to %d on %d GPU(s))", env.GPUBind, env.GPUBindVar, b.N, capacity, gpus)
	}
	if b, err := slurmstate.ParseGPUBind(env.GPUBind); err == nil && shared == "" {
		if per := b.TasksPerGPU(tasks); per > 1 {
			capacity = max(capacity, tasks)
			limitBy, mapped = fmt.Sprintf("--gpu-bind=%s (%s)", env.GPUBind, env.GPUBindVar), true
			shared = fmt.Sprintf("shared as requested (--gpu-bind=%s, from %s: up to %d tasks on one GPU)", env.GPUBind, env.GPUBindVar, per)
		}
	}
	if env.ShardsOnNode != nil && *env.ShardsOnNode > 0 {
		capacity = procs
		shared = fmt.Sprintf("shared as requested (SLURM_SHARDS_ON_NODE=%d: GPU shards are meant to be shared)", *env.ShardsOnNode)
	}
	// gres/mps: Slurm sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE in the job and
	// every step it gives MPS shares (src/plugins/gres/mps/gres_mps.c,
	// _set_env; gres.html "MPS Management"), and SLURM_GPUS_ON_NODE counts
	// the one GPU they sit on (gres_common_gpu_set_env counts its bitmap):
	// several tasks on it is what MPS is for. It used to fail "2 GPU
	// processes on 1 GPU".
	if env.MPSThreadPercent != nil && *env.MPSThreadPercent > 0 && shared == "" {
		capacity = procs
		shared = fmt.Sprintf("shared as requested (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d: MPS clients, each given a share of the GPU)", *env.MPSThreadPercent)
	}
	mps := mpsEvidence(n, t)
	driver := mpsFromDriver(n, t)
	timeSliced := procs > capacity && shared == "" && len(driver.plain) > 0
	if timeSliced {
		// The driver read the GPU's MPS clients and the job's processes
		// sharing it are not among them: they time-slice it, whatever the
		// environment suggests. The other findings below still apply.
		v.add(Fail, nil, "start one process per GPU: srun --ntasks-per-node=<GPUs> without an inner launcher, or srun --ntasks-per-node=1 torchrun --nproc_per_node=<GPUs>; if sharing is intended, use --ntasks-per-gpu, MPS (the processes must connect to its daemon: check CUDA_MPS_PIPE_DIRECTORY) or Slurm shards",
			fmt.Sprintf("%s, and NVML lists %s: they time-slice the GPU", arith, strings.Join(driver.plain, "; ")))
	}
	if !timeSliced && procs > capacity && shared == "" && len(driver.clients) > 0 && len(driver.notRead) == 0 && len(driver.undecided) == 0 {
		// nvmlDeviceGetMPSComputeRunningProcesses is the driver's own list
		// of a GPU's MPS clients, which the job's user cannot write: every
		// process of the job that shares a GPU is on it (the one other
		// process a GPU with clients lists is their MPS server).
		capacity = procs
		shared = "shared through MPS, as the driver reports: NVML lists " + strings.Join(driver.clients, "; ")
	}
	if !timeSliced && procs > capacity && shared == "" && len(driver.clients)+len(driver.undecided) > 0 {
		// MPS clients on some GPU, but not every sharing GPU decided.
		var w []string
		if len(driver.clients) > 0 {
			w = append(w, "NVML lists "+strings.Join(driver.clients, "; "))
		}
		w = append(append(w, driver.undecided...), driver.notRead...)
		v.add(Skip, nil, "", fmt.Sprintf("unknown: %s; %s: whether every shared GPU is shared through MPS is not known",
			arith, strings.Join(w, "; ")))
		return v.result(arith)
	}
	if !timeSliced && procs > capacity && shared == "" && len(mps) > 0 {
		if w := append(driver.notRead, driver.undecided...); len(w) > 0 {
			v.add(Skip, nil, "", fmt.Sprintf("unknown: %s, more than one per GPU unless an MPS daemon serves them, as %s suggest(s), and the driver's word is missing (%s), so whether the GPUs are time-sliced is not judged",
				arith, strings.Join(mps, " and "), strings.Join(w, "; ")))
			return v.result(arith)
		}
		// An MPS daemon started by hand or by a site's prolog (Jean Zay's
		// "-C mps": 40 ranks on a node's 4 GPUs) is sharing as its admins
		// mean it, and failing it is a false alarm. But what shows it here
		// is the job's own: its environment, and the name of a program on
		// the GPU (the basename of /proc/PID/exe, which is any file the
		// user names so; the MPS server runs as its client's user). Neither
		// may pass a step that may be time-slicing its GPUs, so the verdict
		// is unknown, with the evidence.
		v.add(Skip, nil, "", fmt.Sprintf("unknown: %s, more than one per GPU unless an MPS daemon serves them, as %s suggest(s); gpuprobe does not take that for MPS (the job's user controls its environment and the names of its programs), so whether the GPUs are time-sliced is not judged",
			arith, strings.Join(mps, " and ")))
		return v.result(arith)
	}
	if procs > capacity && !timeSliced {
		sev := Fail
		if !gpusKnown {
			sev = Warn
		}
		what := arith
		if capacity > gpus {
			what += fmt.Sprintf(", more than the %d that %s allows", capacity, limitBy)
		}
		v.add(sev, nil, "start one process per GPU: srun --ntasks-per-node=<GPUs> without an inner launcher, or srun --ntasks-per-node=1 torchrun --nproc_per_node=<GPUs>; if sharing is intended, use --ntasks-per-gpu, MPS or Slurm shards",
			what)
	}
	if tasks > 1 && len(t.visible) > 1 && len(t.visible) >= gpus && inner == 1 && procs <= gpus && shared == "" {
		fix, why := fixBinding+"; or have each rank pick its device from SLURM_LOCALID/LOCAL_RANK", "with no per-task binding"
		if overwritten(env) {
			fix, why = fixOverride(env), overrideWords(env)
		}
		v.add(Warn, nil, fix,
			fmt.Sprintf("%d tasks on this node each see all %d GPUs (%s): %s, every rank that does not map its local rank to a device uses GPU 0",
				tasks, len(t.visible), cvdWords(env.CUDAVisible), why))
	}
	overlap(&v, env, t, tasks, gpus, procs, inner, shared)
	summary := arith + fmt.Sprintf("; this task sees %d", len(t.visible))
	if k := t.migIndexes(); k > 0 && len(t.visible) == 0 {
		summary = arith + fmt.Sprintf("; this task sees %d MIG device(s) by CUDA index, not mapped to NVML's GPUs", k)
	}
	if shared != "" && (procs > gpus || mapped) {
		summary += "; " + shared
	}
	if n, from := env.GPUsPerTaskCount(); single && n > 0 {
		summary += fmt.Sprintf("; its srun steps bind %d GPU(s) per task (%s)", n, from)
	}
	return v.result(summary)
}

// mpsEvidence lists what suggests that an MPS daemon the job or the site
// started (not Slurm's gres/mps, which sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE)
// serves this task's GPUs: CUDA_MPS_PIPE_DIRECTORY in the environment (the
// MPS client finds its control daemon there; NVIDIA's MPS guide), and an
// nvidia-cuda-mps-server among the processes NVML lists on a GPU this task
// sees (under MPS the server holds the GPU's context for its clients; the
// name is the executable's, or the first 15 characters of comm,
// "nvidia-cuda-mps", where the executable cannot be read). Both are
// evidence the job's user controls, for a verdict of unknown, never a
// pass.
func mpsEvidence(n *state.Node, t taskGPUs) []string {
	var out []string
	if d := n.Slurm.Env.MPSPipeDirectory; d != "" {
		out = append(out, "CUDA_MPS_PIPE_DIRECTORY="+safetext.Clean(d))
	}
	for _, g := range t.visible {
		for _, p := range g.Processes {
			if p.Command == "nvidia-cuda-mps-server" || p.Command == "nvidia-cuda-mps" {
				who := ""
				if p.User != "" {
					who = ", " + safetext.Clean(p.User)
				}
				out = append(out, fmt.Sprintf("%s (pid %d%s) on GPU %d", safetext.Clean(p.Command), p.PID, who, g.Index))
			}
		}
	}
	return out
}

// mpsDriver is what NVML's MPS client list (state.GPU.MPSProcessesKnown,
// state.Process.MPSClient) says of the job's processes on the GPUs this
// task sees, in words, a GPU at a time.
type mpsDriver struct {
	// clients: GPUs where every process of the job is an MPS client, or
	// all but one, the only process on the GPU that is not (the MPS
	// server: under MPS the server holds the GPU's context for its
	// clients, so a GPU with clients lists it).
	clients []string
	// plain: GPUs where two or more of the job's processes are not MPS
	// clients: at least one of them time-slices the GPU.
	plain []string
	// undecided: one process of the job is not a client and another
	// process on the GPU is not one either: which is the server is not known.
	undecided []string
	// notRead: GPUs with two or more of the job's processes whose MPS
	// list (or process list) was not read.
	notRead []string
}

// mpsFromDriver judges the GPUs this task sees on which NVML lists two or
// more of the job's processes (its cgroup's, or from its environment for
// the user's own; the task itself). Sources: NVML API reference,
// nvmlDeviceGetMPSComputeRunningProcesses_v3 ("Get information about
// processes with a MPS compute context on a device") beside
// nvmlDeviceGetComputeRunningProcesses; NVIDIA's MPS guide (the MPS server
// holds the GPU's context and its clients' work runs in it without time
// slicing; a client that cannot reach the daemon runs as it would without
// MPS).
func mpsFromDriver(n *state.Node, t taskGPUs) mpsDriver {
	var d mpsDriver
	env := n.Slurm.Env
	if env.JobID == "" {
		return d
	}
	owners := map[uint32]string{}
	for _, p := range n.Slurm.Processes {
		owners[p.PID] = p.JobID
	}
	mine := func(p state.Process) bool {
		if n.Slurm.Task != nil && int(p.PID) == n.Slurm.Task.PID {
			return true
		}
		return cmp.Or(p.JobID, owners[p.PID]) == env.JobID
	}
	pids := func(ps []uint32) string {
		s := make([]string, len(ps))
		for i, p := range ps {
			s[i] = strconv.FormatUint(uint64(p), 10)
		}
		return "pid(s) " + strings.Join(s, ", ")
	}
	for _, g := range t.visible {
		var clients, jobPlain []uint32
		otherPlain := 0
		for _, p := range g.Processes {
			switch {
			case !mine(p):
				if !p.MPSClient {
					otherPlain++
				}
			case p.MPSClient:
				clients = append(clients, p.PID)
			default:
				jobPlain = append(jobPlain, p.PID)
			}
		}
		if len(clients)+len(jobPlain) < 2 {
			continue
		}
		switch {
		case !g.ProcessesKnown || !g.MPSProcessesKnown:
			d.notRead = append(d.notRead, fmt.Sprintf("GPU %d runs %d of the job's processes and its MPS client list (nvmlDeviceGetMPSComputeRunningProcesses) was not read", g.Index, len(clients)+len(jobPlain)))
		case len(jobPlain) >= 2:
			d.plain = append(d.plain, fmt.Sprintf("the job's %s on GPU %d as plain compute processes, not MPS clients (nvmlDeviceGetMPSComputeRunningProcesses)", pids(jobPlain), g.Index))
		case len(jobPlain) == 1 && otherPlain > 0:
			d.undecided = append(d.undecided, fmt.Sprintf("on GPU %d NVML lists the job's %s as MPS clients, but its pid %d is not one and neither is another process there: which of the two is their MPS server is not known", g.Index, pids(clients), jobPlain[0]))
		default:
			w := fmt.Sprintf("the job's %s on GPU %d as MPS clients", pids(clients), g.Index)
			if len(jobPlain) == 1 {
				w += fmt.Sprintf(" (and pid %d, the one process there that is not, as their MPS server)", jobPlain[0])
			}
			d.clients = append(d.clients, w)
		}
	}
	return d
}

// launcherLocalSize is the number of processes a launcher says it started
// on this node: Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, MPICH/Intel MPI
// Hydra's MPI_LOCALNRANKS, torchrun's LOCAL_WORLD_SIZE. The largest wins.
func launcherLocalSize(e *slurmstate.Env) (int, string) {
	best, from := 0, ""
	for _, c := range []struct {
		v    *int
		name string
	}{{e.OMPILocalSize, "OMPI_COMM_WORLD_LOCAL_SIZE"}, {e.MPILocalNRanks, "MPI_LOCALNRANKS"}, {e.LocalWorldSize, "LOCAL_WORLD_SIZE"}} {
		if c.v != nil && *c.v > best {
			best, from = *c.v, fmt.Sprintf("%s=%d", c.name, *c.v)
		}
	}
	return best, from
}

// overlap warns when the tasks' GPU sets overlap although there are enough
// GPUs for one each: --gpu-bind=closest binds a task to every GPU of its
// NUMA node (srun(1), --tres-bind "closest": "each task may be bound to more
// than one gres"), so with 8 tasks on 8 GPUs four ranks share each set of
// four, and a rank that picks its device by local rank (5 of 0-7) asks for
// an ordinal beyond the 4 it sees.
func overlap(v *verdict, env *slurmstate.Env, t taskGPUs, tasks, gpus, procs, inner int, shared string) {
	vis := len(t.visible)
	if shared != "" || inner != 1 || tasks < 2 || procs > gpus || vis < 2 || vis >= gpus || tasks*vis <= gpus {
		return
	}
	how := ""
	if b, err := slurmstate.ParseGPUBind(env.GPUBind); err == nil && b.Type == "closest" {
		how = fmt.Sprintf(" (%s=%s binds each task to every GPU of its NUMA node)", env.GPUBindVar, env.GPUBind)
	}
	msg := fmt.Sprintf("%d tasks on %d GPUs, but this task sees %d (%s)%s: about %d tasks share each set, so ranks collide on its GPUs",
		tasks, gpus, vis, cvdWords(env.CUDAVisible), how, (tasks*vis+gpus-1)/gpus)
	rank, rankVar := env.LocalRank, "LOCAL_RANK"
	if rank == nil {
		rank, rankVar = env.LocalID, "SLURM_LOCALID"
	}
	if rank != nil && *rank >= vis {
		msg += fmt.Sprintf("; its local rank %d (%s) is beyond the %d GPUs it sees: cuda.set_device(%s) fails with \"invalid device ordinal\"", *rank, rankVar, vis, rankVar)
	}
	v.add(Warn, nil, fmt.Sprintf("bind one GPU per task: srun --gpu-bind=single:1 (the closest GPU, one per task) or --gpus-per-task=1; or select the device as %s %% %d", rankVar, vis), msg)
}

// nestedMPI tells an mpirun started inside each srun task (its ranks'
// numbering restarts per task) from Open MPI ranks srun launched directly
// (they are the tasks: the numbers agree).
func nestedMPI(e *slurmstate.Env) bool {
	if e.OMPIRank != nil && e.ProcID != nil && *e.OMPIRank != *e.ProcID {
		return true
	}
	if e.OMPILocalRank != nil && e.LocalID != nil && *e.OMPILocalRank != *e.LocalID {
		return true
	}
	return false
}

func checkGPUMemory(n *state.Node, cfg *Config) Result {
	if r, skip := jobNVMLSkip(n, cfg); skip {
		return r
	}
	min, err := ParseMemory(cfg.Job.MinGPUMemory)
	if err != nil {
		return Result{Status: Error, Summary: "--min-gpu-memory: " + err.Error()}
	}
	if min == 0 {
		return Result{Status: Skip, Summary: "no minimum set (--min-gpu-memory)"}
	}
	v := verdict{id: "job.gpu_memory"}
	t := visibleGPUs(n)
	for _, g := range t.visible {
		if g.Memory == nil {
			missing(n, &v, g, "nvmlDeviceGetMemoryInfo", "memory size")
			continue
		}
		// The size a card is sold by includes what the driver and firmware
		// reserve (NVML memory v2's "reserved"): a real "80 GB" H100 shows
		// 81,559 MiB total and 551 MiB reserved, and must meet "80G".
		if have := g.Memory.TotalBytes + g.Memory.ReservedBytes; have < min {
			v.add(Fail, g, "request GPUs with more memory (a --constraint or --gres=gpu:<type>:N for the larger model, or a partition that has them)",
				fmt.Sprintf("%d MiB (%d MiB usable + %d reserved by the driver), below the required %s (%d MiB)", have>>20, g.Memory.TotalBytes>>20, g.Memory.ReservedBytes>>20, cfg.Job.MinGPUMemory, min>>20))
			continue
		}
		v.add(Pass, g, "", "")
	}
	if len(t.visible) == 0 {
		return t.noVisible()
	}
	return v.result(fmt.Sprintf("%d GPU(s) with at least %s", len(t.visible), cfg.Job.MinGPUMemory))
}

const fixRay = "Ray assigns GPUs from those its raylet saw: start the raylet inside the step (srun ... ray start --block, as the Ray-on-Slurm guide does) with Slurm's CUDA_VISIBLE_DEVICES, and do not widen it or --num-gpus beyond the step's GPUs"

// rayWords says the task is a Ray worker, with the variable that says so.
func rayWords(n *state.Node) string {
	env := n.Slurm.Env
	for _, k := range []string{"RAY_RAYLET_PID", "RAY_JOB_ID"} {
		if v, ok := env.Ray[k]; ok {
			return "a Ray worker (" + k + "=" + v + ")"
		}
	}
	return "a Ray worker"
}

// RayStep lists what marks the step as a Ray head or worker node, as the
// Ray-on-Slurm guide launches them (srun ... ray start --head / --address
// ... --block in each step): Ray's variables in the task's environment
// (slurmstate.RayVars); among the job's GPU processes, and the busiest
// processes `gpuprobe job` saw, the raylet and Ray's workers, which set
// their process title (and so comm) to "ray::<task or actor>"
// (ray_constants.py, WORKER_PROCESS_TYPE_*: "ray::IDLE"). Empty when
// nothing does.
func RayStep(n *state.Node) []string {
	var out []string
	if n.Slurm != nil && n.Slurm.Env != nil {
		for _, k := range slurmstate.RayVars {
			if v, ok := n.Slurm.Env.Ray[k]; ok {
				out = append(out, "env "+k+"="+v)
			}
		}
	}
	isRay := func(name string) bool { return name == "raylet" || strings.HasPrefix(name, "ray::") }
	if p := n.JobPerf; p != nil && p.CPU != nil {
		for _, pr := range p.CPU.TopProcesses {
			if isRay(pr.Comm) {
				out = append(out, fmt.Sprintf("job process %d %s", pr.PID, safetext.Clean(pr.Comm)))
			}
		}
	}
	if n.NVML == nil {
		return out
	}
	job := ""
	if n.Slurm != nil && n.Slurm.Env != nil {
		job = n.Slurm.Env.JobID
	}
	seen := map[uint32]bool{}
	for _, g := range n.NVML.GPUs {
		for _, p := range g.Processes {
			if seen[p.PID] || (job != "" && p.JobID != job) {
				continue
			}
			// The executable is python for a worker; its title is in the
			// command line (collected when asked).
			if isRay(p.Command) || isRay(p.CommandLine) {
				seen[p.PID] = true
				out = append(out, fmt.Sprintf("GPU process %d %s on GPU %d", p.PID, safetext.Clean(cmp.Or(p.CommandLine, p.Command)), g.Index))
			}
		}
	}
	return out
}
