package check

import (
	"fmt"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// Where no device file was probed and GPU_DEVICE_ORDINAL is not in the
// environment (a gres.conf that sets CUDA_VISIBLE_DEVICES alone: UVA's
// batch job, realenv/uva-batch-gres-a6000x2-grep.env, SLURM_JOB_GPUS=0,4 as
// CUDA_VISIBLE_DEVICES=0,1), the indexes were taken as the node's and the
// step failed "GPU 1 visible but not allocated", "Slurm allocated GPU 4,
// NVML sees only 2 GPUs". What decides instead is what NVML reaches in the
// task (nvmlNumbering), else a cgroup.conf that was read cleanly.
func TestVisibleDevicesWithoutDeviceFiles(t *testing.T) {
	uva := append(readRealEnv(t, realEnvDir+"/uva-batch-gres-a6000x2-grep.env"), "SLURM_JOB_ID=1")
	behind := realEnvNode{model: "NVIDIA RTX A6000", gpus: 2, cgroupGPUs: []int{0, 4}, memoryGiB: 48, driverCUDA: "12.4"} // no device files
	whole := realEnvNode{model: "NVIDIA RTX A6000", gpus: 8, memoryGiB: 48, driverCUDA: "12.4"}
	conf := func(cgroup string) func(*state.Node) {
		return func(n *state.Node) {
			n.Slurm.Conf = &slurmstate.Conf{SlurmConfPath: "/etc/slurm/slurm.conf",
				SlurmConf:  slurmstate.ParseSlurmConfData("slurm.conf", []byte("TaskPlugin=task/cgroup,task/affinity\n")),
				CgroupConf: slurmstate.ParseCgroupConfData("cgroup.conf", []byte(cgroup))}
		}
	}
	// NVML counts the node's eight and is refused the six the cgroup
	// closes (NO_PERMISSION, state.GPU.Denied).
	denied := func(n *state.Node) {
		var gpus []state.GPU
		for i := 0; i < 8; i++ {
			g := state.GPU{Index: i, UUID: fmt.Sprintf("GPU-%d0000000-1111-2222-3333-444444444444", i), Name: "NVIDIA RTX A6000", Minor: ptr(i), Denied: i != 0 && i != 4}
			if !g.Denied {
				g.Memory, g.ProcessesKnown = &state.Memory{TotalBytes: 48 << 30}, true
			}
			gpus = append(gpus, g)
		}
		n.NVML.GPUs, n.NVML.DeviceCount = gpus, 8
	}
	for _, c := range []struct {
		name   string
		env    []string
		node   realEnvNode
		edit   func(*state.Node)
		status Status
		has    []string
		hasNot []string
	}{
		{"UVA batch: NVML reaches the two allocated, numbered from 0", uva, behind, nil, Pass,
			[]string{"sees GPU 0,1, as allocated (SLURM_JOB_GPUS=0,4)", "renumbered: NVML reaches 2 GPU(s), as many as allocated"}, []string{"indexes taken as global"}},
		// The configuration read says no ConstrainDevices, but the task
		// reaches only two GPUs and Slurm's GPU 4 is not among NVML's
		// numbers: CUDA numbers them from 0 whatever the file says.
		{"cgroup.conf says no, NVML says renumbered", uva, behind, conf("ConstrainDevices=no\n"), Pass,
			[]string{"renumbered"}, []string{"not allocated"}},
		// Every GPU reachable: CUDA_VISIBLE_DEVICES=0,1 is the node's GPUs
		// 0 and 1, and GPU 1 is not the job's.
		{"NVML reaches all eight", uva, whole, nil, Fail,
			[]string{"NVML reaches 8 GPUs, more than the 2 allocated", "visible to this task but not allocated"}, nil},
		// CUDA numbers the two it can open 0 and 1: NVML's 0 and 4.
		{"NVML refused six (NO_PERMISSION)", uva, whole, denied, Pass,
			[]string{"sees GPU 0,4, as allocated", "NVML was refused GPU 1-3,5-7 (NO_PERMISSION) and reaches 2"}, []string{"lets this task reach"}},
		// "ConstrainDevices = yes" is slurmd's too (parse_config.c); read
		// as no device cgroup it failed a whole-node view as global.
		{"cgroup.conf with blanks around '=', every GPU reachable", uva, whole, conf("ConstrainDevices = yes\n"), Fail,
			[]string{"ConstrainDevices=yes with TaskPlugin=task/cgroup", "the device cgroup lets this task reach 8 GPUs"}, nil},
		// A cgroup.conf line slurmd refuses says nothing of the running
		// slurmd: NVML's view decides.
		{"cgroup.conf that does not parse", uva, whole, conf("ConstrainDevices=maybe\n"), Fail,
			[]string{"NVML reaches 8 GPUs"}, []string{"per the configuration"}},
		// The allocated GPUs are 0..n-1: both numberings name them alike.
		{"alike", []string{"SLURM_JOB_ID=1", "SLURM_JOB_GPUS=0,1", "CUDA_VISIBLE_DEVICES=0,1"},
			realEnvNode{model: "NVIDIA RTX A6000", gpus: 2, cgroupGPUs: []int{0, 1}, memoryGiB: 48, driverCUDA: "12.4"}, nil, Pass,
			[]string{"which the node's numbering and the task's name alike"}, nil},
		// A per-task cgroup: the task reaches one of the step's two.
		{"one of two, two tasks", []string{"SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_STEP_TASKS_PER_NODE=2", "SLURM_STEP_GPUS=0,4", "CUDA_VISIBLE_DEVICES=0"},
			realEnvNode{model: "NVIDIA RTX A6000", gpus: 1, cgroupGPUs: []int{4}, memoryGiB: 48, driverCUDA: "12.4"}, nil, Pass,
			[]string{"fewer than the 2 allocated"}, []string{"NVML sees only"}},
	} {
		n := realEnvStateNode(c.env, c.node)
		if c.edit != nil {
			c.edit(n)
		}
		cfg := DefaultConfig()
		cfg.Job.Mode = "always"
		r := checkVisibleDevices(n, cfg)
		wantResult(t, c.name, r, c.status, c.has, c.hasNot)
	}
}
