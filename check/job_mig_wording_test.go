package check

import "testing"

// Plain CUDA_VISIBLE_DEVICES indexes on a node whose GPUs are in MIG mode
// count CUDA's devices (a MIG instance each), not NVML's GPUs
// (slurmstate.Resolve): job.visible_devices must not call them the node's
// (global) GPU indexes, with or without a device cgroup; a node not in MIG
// mode keeps "indexes are global".
func TestVisibleDevicesMIGIndexWording(t *testing.T) {
	migNode := func(cgroup []int) realEnvNode {
		return realEnvNode{model: "NVIDIA H200 NVL", gpus: 2, nodeGPUs: 2, memoryGiB: 141, driverCUDA: "12.8", cgroupGPUs: cgroup,
			mig: [][]string{{"MIG-8210e6aa-6e55-5fcc-b76a-18069cb47525"},
				{"MIG-69119060-baa9-56cb-8d2a-a144214426ae", "MIG-00000000-0000-0000-0000-000000000002", "MIG-00000000-0000-0000-0000-000000000003"}}}
	}
	env := func(cvd string, step ...string) []string {
		e := []string{"SLURM_JOB_ID=77", "SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURMD_NODENAME=n1", "SLURM_STEP_TASKS_PER_NODE=1", "CUDA_VISIBLE_DEVICES=" + cvd}
		if len(step) > 0 {
			e = append(e, "SLURM_STEP_GPUS="+step[0])
		}
		return e
	}
	cgNode := migNode([]int{1})
	cgNode.gpus, cgNode.mig = 1, cgNode.mig[1:]
	for _, c := range []struct {
		name   string
		env    []string
		node   realEnvNode
		status Status
		has    []string
		hasNot []string
	}{
		{"MIG mode, no device cgroup", env("0,1,2,3"), migNode(nil), Pass,
			[]string{"sees 4 CUDA device(s) by MIG instance, not mapped to NVML's GPUs", "no device cgroup: all 2 GPU device files open",
				"in MIG mode CUDA_VISIBLE_DEVICES indexes count CUDA devices, the MIG instances of all the node's GPUs (a GPU not in MIG mode is one), not NVML's GPUs"},
			[]string{"indexes are global", "GPU none"}},
		{"MIG mode, a device cgroup", env("0,1", "2,3"), cgNode, Pass,
			[]string{"device cgroup: /dev/nvidia0 is blocked (EPERM)",
				"in MIG mode CUDA_VISIBLE_DEVICES indexes count CUDA devices, the MIG instances of the GPUs this task can reach (a GPU not in MIG mode is one), not NVML's GPUs"},
			[]string{"global", "all the node's GPUs"}},
		// A MIG instance named by UUID maps to its GPU: the mode's words
		// stand as they are.
		{"MIG UUID, not an index", env("MIG-8210e6aa-6e55-5fcc-b76a-18069cb47525", "0"), migNode(nil), Pass,
			[]string{"sees 1 MIG instance(s) on GPU 0", "indexes are global"}, []string{"in MIG mode"}},
		{"not in MIG mode", env("0,1", "0,1"), realEnvNode{model: "NVIDIA H200 NVL", gpus: 2, nodeGPUs: 2, memoryGiB: 141, driverCUDA: "12.8"}, Pass,
			[]string{"sees GPU 0,1", "indexes are global"}, []string{"MIG"}},
	} {
		r := checkVisibleDevices(realEnvStateNode(c.env, c.node), DefaultConfig())
		wantResult(t, c.name, r, c.status, c.has, c.hasNot)
	}
}

// migIndexMode rewrites each of deviceMode's words that call the indexes
// the node's GPUs.
func TestMIGIndexModeWords(t *testing.T) {
	for _, c := range []struct {
		how         string
		constrained bool
		want        string
	}{
		{"no ConstrainDevices in the configuration; indexes are global", false,
			"no ConstrainDevices in the configuration; in MIG mode CUDA_VISIBLE_DEVICES indexes count CUDA devices, the MIG instances of all the node's GPUs (a GPU not in MIG mode is one), not NVML's GPUs"},
		{"NVML reaches 4 GPUs, more than the 2 allocated: no device cgroup confines this task, so CUDA numbers the node's GPUs (no device file decided)", false,
			"NVML reaches 4 GPUs, more than the 2 allocated: no device cgroup confines this task, so CUDA numbers the devices of all the node's GPUs (no device file decided); in MIG mode CUDA_VISIBLE_DEVICES indexes count CUDA devices, the MIG instances of all the node's GPUs (a GPU not in MIG mode is one), not NVML's GPUs"},
		{"renumbered: NVML reaches 1 GPU(s), as many as allocated: CUDA numbers this task's GPUs from 0 (no device file decided)", true,
			"renumbered: NVML reaches 1 GPU(s), as many as allocated: CUDA numbers the devices of this task's GPUs from 0 (no device file decided); in MIG mode CUDA_VISIBLE_DEVICES indexes count CUDA devices, the MIG instances of the GPUs this task can reach (a GPU not in MIG mode is one), not NVML's GPUs"},
	} {
		if got := migIndexMode(c.how, c.constrained); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.how, got, c.want)
		}
	}
}
