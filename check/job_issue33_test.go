package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// Issue 33, class 2: srun --gres=none (or --gpus=0) inside sbatch
// --gres=gpu:2. The step inherits SLURM_JOB_GPUS=0,1 from the batch script
// (sbatch(1): SLURM_JOB_GPUS is "only set in batch and interactive jobs"),
// while slurmstepd sets the step's own GPU variables, none here. It failed
// "GPUs 2-7 visible but not allocated" and judged CPUs against GPUs the step
// does not have.
func gpulessStep(extra ...string) []string {
	return oneNode(step(0, 1, append([]string{"SLURM_JOB_GPUS=0,1", "SLURM_CPUS_PER_TASK=2"}, extra...)...))
}

func TestGPULessStepInGPUJob(t *testing.T) {
	runCases(t, checkVisibleDevices, []checkCase{
		{name: "srun --gres=none in sbatch --gres=gpu:2", node: jobNode(gpulessStep(), nil),
			status: Warn, summary: "Slurm allocated no GPUs to this step (SLURM_JOB_GPUS=0,1 is the job's, inherited from the batch script; this step has no SLURM_STEP_GPUS), yet CUDA can use all 8"},
		{name: "the same with the batch script's SLURM_GPUS_ON_NODE inherited too", node: jobNode(gpulessStep("SLURM_GPUS_ON_NODE=2"), nil),
			status: Warn, summary: "Slurm allocated no GPUs to this step"},
		{name: "a GPU step in the same job is still judged by SLURM_STEP_GPUS", node: jobNode(gpulessStep("SLURM_STEP_GPUS=0", "CUDA_VISIBLE_DEVICES=0,1"), nil),
			status: Fail, summary: "visible to this task but not allocated to it (SLURM_STEP_GPUS=0)", devices: []int{1}},
		// The batch script itself (no SLURM_STEP_ID) has only SLURM_JOB_GPUS.
		{name: "batch script: SLURM_JOB_GPUS is its allocation", node: jobNode(batchEnv(), nil), status: Pass, summary: "as allocated (SLURM_JOB_GPUS=0-3)"},
	})
	cfg := DefaultConfig()
	cfg.Job.MinCPUsPerGPU = 4
	n := jobNode(gpulessStep(), func(n *state.Node) { n.Slurm.Task = &slurmstate.Task{CPUs: []int{100, 101}} })
	for name, c := range map[string]func(*state.Node, *Config) Result{"cpus_per_gpu": checkCPUsPerGPU, "numa_affinity": checkNUMAAffinity, "gpu_sharing": checkGPUSharing} {
		if r := c(n, cfg); r.Status != Skip {
			t.Errorf("%s on a GPU-less step: %s %q, want skip", name, r.Status, r.Summary)
		}
	}
}

// Issue 33, class 3: a command typed into salloc's shell runs where salloc
// was started, not on the allocation: salloc sets SLURM_JOB_ID but neither
// SLURMD_NODENAME, SLURM_STEP_ID nor SLURM_PROCID, which only slurmd and
// slurmstepd set. It was told "Slurm allocated no GPUs to this step" and
// "the batch script is one process".
func TestSallocShell(t *testing.T) {
	env := []string{"SLURM_JOB_ID=100", "SLURM_JOBID=100", "SLURM_JOB_NODELIST=gpu001", "SLURM_NODELIST=gpu001", "SLURM_JOB_NUM_NODES=1",
		"SLURM_NNODES=1", "SLURM_TASKS_PER_NODE=1", "SLURM_SUBMIT_HOST=login1", "SLURM_CLUSTER_NAME=c", "SLURM_JOB_PARTITION=gpu"}
	n := jobNode(env, nil)
	for _, c := range All() {
		if c.Scope != JobScope {
			continue
		}
		r := c.Run(n, DefaultConfig())
		if r.Status != Skip || !strings.Contains(r.Summary, "not running on the allocation: use srun") {
			t.Errorf("%s in salloc's shell: %s %q", c.ID, r.Status, r.Summary)
		}
		if strings.Contains(r.Summary, "batch script") || strings.Contains(r.Summary, "allocated no GPUs") {
			t.Errorf("%s in salloc's shell: %q", c.ID, r.Summary)
		}
	}
	// salloc's interactive step (use_interactive_step) runs on the node.
	inter := jobNode(append(env, "SLURM_STEP_ID=interactive", "SLURMD_NODENAME=gpu001", "SLURM_PROCID=0"), nil)
	if !inter.Slurm.InJob {
		t.Errorf("interactive step: %s", inter.Slurm.JobReason)
	}
}

// Issue 33, class 1: srun -n 4 --gres=gpu:2 --gpu-bind=single:2 puts two
// tasks on each GPU by design (srun(1) --gpu-bind single:<tasks_per_gpu>:
// "the first <tasks_per_gpu> tasks are bound to the first GPU available").
// It failed "4 GPU processes on 2 GPU(s)" on every task.
func TestGPUBindSingleN(t *testing.T) {
	runCases(t, checkGPUSharing, []checkCase{
		{name: "single:2 from slurmstepd's SLURMD_TRES_BIND", node: jobNode(oneNode(step(2, 4, "CUDA_VISIBLE_DEVICES=1", "GPU_DEVICE_ORDINAL=1", "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "SLURMD_TRES_BIND=gpu:single:2")), nil),
			status: Pass, summary: "shared as requested (--gpu-bind=single:2, from SLURMD_TRES_BIND: 2 tasks per GPU, up to 4 on 2 GPU(s))"},
		{name: "single:2 from SLURM_GPU_BIND", node: jobNode(oneNode(step(2, 4, "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "SLURM_GPU_BIND=single:2")), nil),
			status: Pass, summary: "from SLURM_GPU_BIND: 2 tasks per GPU"},
		{name: "single:2 × torchrun 4", node: jobNode(oneNode(step(2, 4, "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "SLURMD_TRES_BIND=gpu:single:2",
			"TORCHELASTIC_RUN_ID=r1", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=4")), nil),
			status: Fail, summary: "more than the 4 that --gpu-bind=single:2 (SLURMD_TRES_BIND) allows"},
		{name: "single:1 is not sharing", node: jobNode(oneNode(step(2, 4, "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "SLURMD_TRES_BIND=gpu:single:1")), nil),
			status: Fail, summary: "= 4 GPU processes on 2 GPU(s)"},
	})
}

// Issue 33, class 8: the job script exported CUDA_VISIBLE_DEVICES=4,6 over
// the 4,5 Slurm set. The FAIL was right, but the fix said "request GPUs per
// task" and the evidence "this single task cannot use GPU 5". Slurm sets
// GPU_DEVICE_ORDINAL and ROCR_VISIBLE_DEVICES to the same list as
// CUDA_VISIBLE_DEVICES (gres.conf(5) Flags: each env flag sets one of them
// "for all GPUs allocated"), so a difference is the job's override.
func TestCUDAVisibleOverridden(t *testing.T) {
	const override = "no longer matches what Slurm set for this step"
	runCases(t, checkVisibleDevices, []checkCase{
		{name: "4,6 over 4,5, GPU_DEVICE_ORDINAL keeps Slurm's", node: jobNode(oneNode(step(0, 1, "CUDA_VISIBLE_DEVICES=4,6", "GPU_DEVICE_ORDINAL=4,5", "SLURM_STEP_GPUS=4,5", "SLURM_GPUS_ON_NODE=2")), nil),
			status: Fail, summary: "CUDA_VISIBLE_DEVICES=4,6 " + override + " (4,5, still in GPU_DEVICE_ORDINAL)", remedy: "remove the override", devices: []int{6}},
		{name: "4,6 over 4,5, only ROCR_VISIBLE_DEVICES keeps Slurm's", node: jobNode(oneNode(step(0, 1, "CUDA_VISIBLE_DEVICES=4,6", "ROCR_VISIBLE_DEVICES=4,5", "SLURM_STEP_GPUS=4,5", "SLURM_GPUS_ON_NODE=2")), nil),
			status: Fail, summary: "CUDA_VISIBLE_DEVICES=4,6 " + override + " (4,5, still in ROCR_VISIBLE_DEVICES)", remedy: "remove the override", devices: []int{6}},
		{name: "4,6 over 4,5 in a two-task step", node: jobNode(oneNode(step(0, 2, "CUDA_VISIBLE_DEVICES=4,6", "GPU_DEVICE_ORDINAL=4,5", "SLURM_STEP_GPUS=4,5", "SLURM_GPUS_ON_NODE=2")), nil),
			status: Fail, summary: override, remedy: "remove the override", devices: []int{6}},
	})
	n := jobNode(oneNode(step(0, 1, "CUDA_VISIBLE_DEVICES=4,6", "GPU_DEVICE_ORDINAL=4,5", "SLURM_STEP_GPUS=4,5", "SLURM_GPUS_ON_NODE=2")), nil)
	r := checkVisibleDevices(n, DefaultConfig())
	for _, d := range r.Details {
		if strings.Contains(d, "this single task cannot use") {
			t.Errorf("evidence blames the task, not the override: %q", d)
		}
	}
	if strings.Contains(r.Remedy, "request GPUs per task") {
		t.Errorf("remedy: %q", r.Remedy)
	}
	two := jobNode(oneNode(step(1, 2, "CUDA_VISIBLE_DEVICES=4,6", "GPU_DEVICE_ORDINAL=4,5", "SLURM_STEP_GPUS=4,5", "SLURM_GPUS_ON_NODE=2")), nil)
	if r := checkGPUSharing(two, DefaultConfig()); strings.Contains(r.Remedy, "request GPUs per task") || r.Status == Warn && !strings.Contains(r.Remedy, "remove the override") {
		t.Errorf("gpu_sharing on an overridden step: %s %q remedy %q", r.Status, r.Summary, r.Remedy)
	}
}

// Issue 33, class 9: an unset CUDA_VISIBLE_DEVICES printed as
// "CUDA_VISIBLE_DEVICES=".
func TestUnsetVariableWords(t *testing.T) {
	runCases(t, checkGPUSharing, []checkCase{
		{name: "two tasks, --gpu-bind=none", node: jobNode(oneNode(step(1, 2, "SLURM_STEP_GPUS=0-7", "SLURM_GPUS_ON_NODE=8")), nil),
			status: Warn, summary: "2 tasks on this node each see all 8 GPUs (CUDA_VISIBLE_DEVICES not set)"},
	})
}
