package check

import (
	"testing"
)

// A task that sees only some of the node's /dev/nvidiaN, all of which it may
// open, has its GPUs numbered from 0 (a container exposing the allocated
// GPUs: NVIDIA/pyxis#47). Slurm without ConstrainDevices still writes the
// node's index (gres.c gres_use_local_device_index), which CUDA cannot find.
func TestPartialDeviceFilesRenumber(t *testing.T) {
	slurmEnv := func(cvd string) []string {
		return []string{"SLURM_JOB_ID=77", "SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURMD_NODENAME=nodeGPU01",
			"SLURM_STEP_TASKS_PER_NODE=1", "SLURM_STEP_GPUS=2", "SLURM_GPUS_ON_NODE=1", "GPU_DEVICE_ORDINAL=2", "CUDA_VISIBLE_DEVICES=" + cvd}
	}
	a100 := realEnvNode{model: "NVIDIA A100-SXM4-40GB", gpus: 1, devFiles: []int{2}, nodeGPUs: 8, memoryGiB: 40, driverCUDA: "11.2"}
	full := realEnvNode{model: "NVIDIA A100-SXM4-40GB", gpus: 8, nodeGPUs: 8, memoryGiB: 40, driverCUDA: "11.2"}
	for _, c := range []struct {
		name   string
		env    []string
		node   realEnvNode
		status Status
		has    []string
		hasNot []string
	}{
		{"Slurm's global index in a one-GPU container", slurmEnv("2"), a100, Fail,
			[]string{"entry 2 is the node's number of /dev/nvidia2", "ConstrainDevices=yes", "renumbered"}, []string{"job script"}},
		{"the container's own number", slurmEnv("0"), a100, Pass,
			[]string{"sees GPU 0, as allocated (SLURM_STEP_GPUS=2)", "renumbered: this task has only /dev/nvidia2"}, nil},
		// A device cgroup (the others' open() is EPERM): Slurm numbers from
		// 0 itself there, so an index past the task's GPUs is no node
		// number and ConstrainDevices is no fix (deepops#1102's 21.08
		// task of --gpu-bind=single:1 got local_list=1).
		{"device cgroup, index past the task's GPUs", []string{"SLURM_JOB_ID=77", "SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURMD_NODENAME=n1",
			"SLURM_STEP_TASKS_PER_NODE=2", "SLURM_STEP_GPUS=1", "SLURM_GPUS_ON_NODE=2", "CUDA_VISIBLE_DEVICES=1"},
			realEnvNode{model: "NVIDIA RTX A5000", gpus: 1, cgroupGPUs: []int{1}, nodeGPUs: 4, memoryGiB: 24, driverCUDA: "11.4"}, Fail,
			[]string{"index 1, but NVML sees only 1 GPUs", "device cgroup"}, []string{"ConstrainDevices=yes", "node's number"}},
		// All eight files: the node's numbering, whatever the minors.
		{"whole node", slurmEnv("2"), full, Pass, []string{"indexes are global"}, []string{"renumbered"}},
	} {
		n := realEnvStateNode(c.env, c.node)
		r := checkVisibleDevices(n, DefaultConfig())
		wantResult(t, c.name, r, c.status, c.has, c.hasNot)
	}
}

// Slurm's numbering from 0 is read only where Slurm wrote it (the same
// list in GPU_DEVICE_ORDINAL) and it differs from the allocation.
func TestSlurmNumberedFromZero(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want bool
	}{
		{[]string{"SLURM_JOB_ID=1", "SLURM_JOB_GPUS=1,2,3,5", "GPU_DEVICE_ORDINAL=0,1,2,3", "CUDA_VISIBLE_DEVICES=0,1,2,3"}, true},
		{[]string{"SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_STEP_GPUS=4", "ROCR_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=0"}, true},
		// The job rewrote it: GPU_DEVICE_ORDINAL keeps Slurm's list.
		{[]string{"SLURM_JOB_ID=1", "SLURM_JOB_GPUS=4,5", "GPU_DEVICE_ORDINAL=4,5", "CUDA_VISIBLE_DEVICES=0,1"}, false},
		// Nothing repeats it: who wrote it is unknown.
		{[]string{"SLURM_JOB_ID=1", "SLURM_JOB_GPUS=4,5", "CUDA_VISIBLE_DEVICES=0,1"}, false},
		// The node's indexes, or a list that reads the same either way.
		{[]string{"SLURM_JOB_ID=1", "SLURM_JOB_GPUS=4,5", "GPU_DEVICE_ORDINAL=4,5", "CUDA_VISIBLE_DEVICES=4,5"}, false},
		{[]string{"SLURM_JOB_ID=1", "SLURM_JOB_GPUS=0,1", "GPU_DEVICE_ORDINAL=0,1", "CUDA_VISIBLE_DEVICES=0,1"}, false},
		// Fewer entries than GPUs: per-task binding, not a renumbering to judge.
		{[]string{"SLURM_JOB_ID=1", "SLURM_JOB_GPUS=4,5", "GPU_DEVICE_ORDINAL=0", "CUDA_VISIBLE_DEVICES=0"}, false},
	} {
		n := realEnvStateNode(c.env, realEnvNode{model: "NVIDIA A100-SXM4-80GB", gpus: 4, memoryGiB: 80, driverCUDA: "12.2"})
		if got := slurmNumberedFromZero(n.Slurm.Env) != ""; got != c.want {
			t.Errorf("%v: %v, want %v", c.env, got, c.want)
		}
	}
}
