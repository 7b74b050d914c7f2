package check

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

var socketCPUs = [2]string{"0-55,112-167", "56-111,168-223"}

// jobNode builds an 8-GPU HGX node (GPUs 0-3 on NUMA node 0, 4-7 on 1) with
// a task of a job step whose environment is env; mut adjusts the rest.
func jobNode(env []string, mut func(n *state.Node)) *state.Node {
	n := &state.Node{SchemaVersion: state.SchemaVersion, NVML: &state.NVML{Available: true, DriverVersion: "550.54.15", CUDADriverVersion: "12.4"}}
	for i := 0; i < 8; i++ {
		numa := i / 4
		n.NVML.GPUs = append(n.NVML.GPUs, state.GPU{
			Index: i, UUID: fmt.Sprintf("GPU-%d%d%d%d0000-1111-2222-3333-444444444444", i, i, i, i), Name: "NVIDIA H100 80GB HBM3",
			PCIBusID: fmt.Sprintf("00000000:%02x:00.0", 0x19+i*0x20), Minor: ptr(i), NUMANode: ptr(numa), CPUAffinity: socketCPUs[numa],
			Memory:         &state.Memory{TotalBytes: 80 << 30, UsedBytes: 0},
			ProcessesKnown: true,
			NVLinks:        []state.NVLink{{Link: 0, Up: true}},
		})
	}
	n.NVML.DeviceCount = 8
	e := slurmstate.ParseEnv(env)
	in, why := e.InJobStep()
	cpus, _ := cpulist.Parse("0-7")
	n.Slurm = &slurmstate.State{NodeName: "gpu001", NodeNameFrom: "SLURMD_NODENAME", InJob: in, JobReason: why, Env: e,
		Task: &slurmstate.Task{PID: 4242, UID: 1000, User: "alice", CPUs: cpus},
		Host: &slurmstate.Host{IBDevices: []string{"mlx5_0", "mlx5_1"}, NetInterfaces: []string{"lo", "eth0", "ib0"}}}
	for i := 0; i < 8; i++ {
		n.Slurm.Devices = append(n.Slurm.Devices, slurmstate.DeviceFile{Path: fmt.Sprintf("/dev/nvidia%d", i), Exist: true, Char: true, Major: 195, Minor: i, Access: "ok"})
	}
	if mut != nil {
		mut(n)
	}
	return n
}

// step is the environment of task procid of a step on gpu001.
func step(procid, tasks int, extra ...string) []string {
	return append([]string{"SLURM_JOB_ID=100", "SLURM_STEP_ID=0", "SLURMD_NODENAME=gpu001", "SLURM_JOB_NODELIST=gpu[001-002]",
		"SLURM_STEP_NODELIST=gpu[001-002]", fmt.Sprintf("SLURM_PROCID=%d", procid), fmt.Sprintf("SLURM_LOCALID=%d", procid),
		fmt.Sprintf("SLURM_STEP_TASKS_PER_NODE=%d(x2)", tasks)}, extra...)
}

// oneNode makes a step's job a one-node job (gpu001).
func oneNode(env []string) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		switch {
		case strings.HasPrefix(e, "SLURM_JOB_NODELIST="):
			e = "SLURM_JOB_NODELIST=gpu001"
		case strings.HasPrefix(e, "SLURM_STEP_NODELIST="):
			e = "SLURM_STEP_NODELIST=gpu001"
		case strings.HasPrefix(e, "SLURM_STEP_TASKS_PER_NODE="):
			e = strings.TrimSuffix(e, "(x2)")
		}
		out = append(out, e)
	}
	return out
}

// onNode runs a step's task on another node of the job.
func onNode(node string, env []string) []string {
	for i, e := range env {
		if strings.HasPrefix(e, "SLURMD_NODENAME=") {
			env[i] = "SLURMD_NODENAME=" + node
		}
	}
	return env
}

func TestJobChecksSkipOutsideAJob(t *testing.T) {
	hc := jobNode([]string{"SLURMD_NODENAME=gpu001"}, nil) // what a HealthCheckProgram sees
	for _, c := range All() {
		if c.Scope != JobScope {
			continue
		}
		r := c.Run(hc, DefaultConfig())
		if r.Status != Skip || !strings.Contains(r.Summary, "not inside a job step") {
			t.Errorf("%s outside a job: %s %q", c.ID, r.Status, r.Summary)
		}
		cfg := DefaultConfig()
		cfg.Job.Mode = "never"
		inJob := jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), nil)
		if r := c.Run(inJob, cfg); r.Status != Skip || !strings.Contains(r.Summary, "off") {
			t.Errorf("%s with --no-job: %s %q", c.ID, r.Status, r.Summary)
		}
		if r := c.Run(&state.Node{}, DefaultConfig()); r.Status != Skip {
			t.Errorf("%s without Slurm state: %s", c.ID, r.Status)
		}
	}
	cfg := DefaultConfig()
	cfg.Job.Mode = "always"
	forced := jobNode([]string{"CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=0"}, nil)
	if r := checkVisibleDevices(forced, cfg); r.Status != Pass {
		t.Errorf("--job outside a job: %s %s", r.Status, r.Summary)
	}
}

func TestVisibleDevices(t *testing.T) {
	denied := func(n *state.Node) {
		// ConstrainDevices: NVML sees the two allowed GPUs, renumbered 0-1.
		n.NVML.GPUs = n.NVML.GPUs[4:6]
		n.NVML.GPUs[0].Index, n.NVML.GPUs[1].Index = 0, 1
		for i := range n.Slurm.Devices {
			if i != 4 && i != 5 {
				n.Slurm.Devices[i].Access, n.Slurm.Devices[i].Error = "denied", "operation not permitted (device cgroup)"
			}
		}
	}
	mixed := func(n *state.Node) { n.NVML.GPUs[1].Name = "NVIDIA A100-SXM4-80GB" }
	runCases(t, checkVisibleDevices, []checkCase{
		{name: "SLURM_STEP_GPUS=-1 is not 'no GPUs'", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=-1"), nil),
			status: Error, summary: `SLURM_STEP_GPUS="-1" does not parse`},
		{name: "SLURM_STEP_GPUS beyond any machine", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=0-4294967295"), nil),
			status: Error, summary: "SLURM_STEP_GPUS="},
		{name: "srun --gres=gpu:2, global indexes", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2"), nil),
			status: Pass, summary: "sees GPU 0,1, as allocated (SLURM_STEP_GPUS=0,1); no device cgroup"},
		{name: "second job on GPUs 2,3", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=2,3", "SLURM_STEP_GPUS=2,3"), nil), status: Pass, summary: "sees GPU 2,3"},
		{name: "UUIDs and short prefixes", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=GPU-22220000-1111-2222-3333-444444444444,GPU-3333", "SLURM_STEP_GPUS=2,3"), nil),
			status: Pass, summary: "sees GPU 2,3"},
		{name: "batch step: SLURM_JOB_GPUS", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_JOB_GPUS=0,1"), nil), status: Pass, summary: "SLURM_JOB_GPUS=0,1"},
		{name: "ConstrainDevices renumbers", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=4,5", "SLURM_GPUS_ON_NODE=2"), denied),
			status: Pass, summary: "device cgroup: /dev/nvidia0 is blocked"},
		{name: "per-task binding: one of the step's GPUs", node: jobNode(step(1, 2, "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=0,1"), nil), status: Pass, summary: "sees GPU 1"},
		{name: "job overrode CUDA_VISIBLE_DEVICES", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1"), nil),
			status: Fail, summary: "visible to this task but not allocated to it (SLURM_STEP_GPUS=0,1)", devices: []int{2, 3}},
		{name: "unset with an allocation (--gpu-bind=none)", node: jobNode(step(0, 1, "SLURM_GPUS_ON_NODE=2"), nil),
			status: Fail, summary: "SLURM_GPUS_ON_NODE=2, no index list), but this task can use 8"},
		{name: "unset, global list known", node: jobNode(step(0, 1, "SLURM_STEP_GPUS=0"), nil), status: Fail, summary: "not allocated", devices: []int{1, 2, 3, 4, 5, 6, 7}},
		{name: "no GPUs requested, none constrained", node: jobNode(step(0, 1), nil), status: Warn, summary: "Slurm allocated no GPUs to this step, yet CUDA can use all 8"},
		// A CPU step whose script exports CUDA_VISIBLE_DEVICES=0 by hand:
		// Slurm set no GPU variable, nothing keeps it off GPU 0. It passed
		// as "sees GPU 0, no GPUs allocated".
		{name: "no GPUs requested, CUDA_VISIBLE_DEVICES set by hand", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), nil), status: Warn,
			summary: "Slurm allocated no GPUs to this step, yet CUDA_VISIBLE_DEVICES=0 gives this task GPU 0, which no device cgroup keeps it off"},
		{name: "no GPUs requested, cgroup hides them", node: jobNode(step(0, 1), func(n *state.Node) { denied(n); n.NVML.GPUs = nil }), status: Pass, summary: "no GPUs allocated"},
		{name: "invalid entry hides the rest", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,-1,1", "SLURM_STEP_GPUS=0,1"), nil),
			status: Fail, summary: `entry "-1" is invalid, so CUDA ignores it and the 1 after it`},
		{name: "unknown UUID", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=GPU-deadbeef", "SLURM_STEP_GPUS=0"), nil), status: Fail, summary: "no GPU has UUID GPU-deadbeef"},
		{name: "empty: no GPU at all", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=", "SLURM_STEP_GPUS=0"), nil), status: Warn, summary: "CUDA_VISIBLE_DEVICES is empty: CUDA sees no GPU at all, though Slurm allocated GPU 0"}, // it said "sees only GPU(s) 0": the missing GPU, as the one seen
		{name: "NoDevFiles", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=NoDevFiles", "SLURM_GPUS_ON_NODE=2"), nil), status: Warn, summary: "NoDevFiles"},
		{name: "Slurm index beyond NVML", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,9", "SLURM_STEP_GPUS=0,9"), nil), status: Fail, summary: "index 9, but NVML sees only 8 GPUs"},
		{name: "cgroup lets more through", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=4,5"), func(n *state.Node) {
			denied(n)
			n.NVML.GPUs = append(n.NVML.GPUs, state.GPU{Index: 2, UUID: "GPU-x"})
		}), status: Fail, summary: "the device cgroup lets this task reach 3 GPUs, Slurm allocated 2"},
		{name: "index order on a mixed node", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=0,1"), mixed),
			status: Warn, summary: "without CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA orders GPUs fastest first"},
		{name: "mixed node with PCI_BUS_ID order", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=0,1", "CUDA_DEVICE_ORDER=PCI_BUS_ID"), mixed),
			status: Pass, summary: "as allocated"},
		{name: "MIG instance", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=MIG-dcf43e8e-5d19-5fa8-8b1d-8aaca1e467f0", "SLURM_STEP_GPUS=0"), func(n *state.Node) {
			for i := range n.Slurm.Devices {
				n.Slurm.Devices[i].Access = "denied"
				n.Slurm.Devices[i].Error = "operation not permitted (device cgroup)"
			}
			n.NVML.GPUs = n.NVML.GPUs[:1]
		}), status: Pass, summary: "1 MIG instance(s) not verifiable"}, // counted, not judged (docs/checks.md): it used to warn "sees only 0 of 1"
		// MIG under AutoDetect=nvml: each MIG instance is a GRES record, and
		// SLURM_STEP_GPUS holds the record's index on the node, while
		// CUDA_VISIBLE_DEVICES names the instance by UUID (gres_common.c
		// common_gres_set_env: "MIG devices always use UUID"). Record 12 is a
		// slice of GPU 3 here. It gave FAILs: GPU 3 "not allocated", and
		// "Slurm allocated GPU 12, NVML sees only 8".
		{name: "MIG GRES 12 on GPU 3", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES="+migUUID, "GPU_DEVICE_ORDINAL="+migUUID, "SLURM_STEP_GPUS=12", "SLURM_GPUS_ON_NODE=1"), withMIG),
			status: Pass, summary: "sees 1 MIG instance(s) on GPU 3, 1 allocated (SLURM_STEP_GPUS=12 numbers MIG GRES, not GPUs)"},
		{name: "MIG GRES 12, instance not in the state", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES="+migUUID, "SLURM_STEP_GPUS=12", "SLURM_GPUS_ON_NODE=1"), nil),
			status: Pass, summary: "1 allocated (SLURM_STEP_GPUS=12 numbers MIG GRES, not GPUs); 1 MIG instance(s) not verifiable"},
		{name: "two MIG instances, one allocated", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES="+migUUID+",MIG-0c5e1a3b-9d2f-5e4a-8b7c-6d5e4f3a2b1c", "SLURM_STEP_GPUS=12", "SLURM_GPUS_ON_NODE=1"), withMIG),
			status: Fail, summary: "this task can use 2 GPU/MIG device(s), Slurm allocated 1 (SLURM_STEP_GPUS=12 numbers MIG GRES, not GPUs)"},
		{name: "one of two MIG GRES, single task", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES="+migUUID, "SLURM_STEP_GPUS=12-13", "SLURM_GPUS_ON_NODE=2"), withMIG),
			status: Warn, summary: "this single task sees only 1 of the 2 allocated MIG GRES (SLURM_STEP_GPUS=12,13)"},
		// The batch script narrowed to one of the job's four GPUs: one process
		// (no SLURM_STEP_ID), not SLURM_TASKS_PER_NODE=4 tasks sharing them. It passed.
		{name: "batch script sees 1 of the job's 4", node: jobNode(batchEnv("CUDA_VISIBLE_DEVICES=2"), nil),
			status: Warn, summary: "CUDA_VISIBLE_DEVICES=2 no longer matches what Slurm set for this step (0,1,2,3, still in GPU_DEVICE_ORDINAL): the job overrode it, leaving out GPU(s) 0,1,3 of the allocated 0-3", remedy: "Slurm set it to 0,1,2,3"},
		// The user replaced Slurm's 4,5 by 4,6 in the job script: GPU 6 is
		// not theirs, GPU 5 is unused, and the fix is to stop overwriting
		// (GPU_DEVICE_ORDINAL keeps Slurm's value), not "request GPUs per task".
		{name: "overwritten: 4,6 instead of 4,5", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=4,6", "GPU_DEVICE_ORDINAL=4,5", "SLURM_STEP_GPUS=4,5", "SLURM_GPUS_ON_NODE=2"), nil),
			status: Fail, summary: "GPU 6 (00000000:d9:00.0): visible to this task but not allocated to it (SLURM_STEP_GPUS=4,5)", remedy: "remove the override: do not set CUDA_VISIBLE_DEVICES in the job script or its modules (Slurm set it to 4,5", devices: []int{6}},
		{name: "narrowed to 4 of 4,5", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=4", "GPU_DEVICE_ORDINAL=4,5", "SLURM_STEP_GPUS=4,5", "SLURM_GPUS_ON_NODE=2"), nil),
			status: Warn, summary: "CUDA_VISIBLE_DEVICES=4 no longer matches what Slurm set for this step (4,5, still in GPU_DEVICE_ORDINAL): the job overrode it, leaving out GPU(s) 5 of the allocated 4,5", remedy: "still in GPU_DEVICE_ORDINAL"},
		{name: "empty hides every GPU", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=", "GPU_DEVICE_ORDINAL=4,5", "SLURM_STEP_GPUS=4,5", "SLURM_GPUS_ON_NODE=2"), nil),
			status: Warn, summary: "CUDA_VISIBLE_DEVICES is empty: CUDA sees no GPU at all, though Slurm allocated GPU 4,5 (SLURM_STEP_GPUS)"},
	})
}

// migUUID is a MIG instance on GPU 3 of jobNode's node (withMIG).
const migUUID = "MIG-dcf43e8e-5d19-5fa8-8b1d-8aaca1e467f0"

func withMIG(n *state.Node) {
	n.NVML.GPUs[3].MIGDevices = []state.MIGDevice{{UUID: migUUID, GPUInstanceID: 1}, {UUID: "MIG-0c5e1a3b-9d2f-5e4a-8b7c-6d5e4f3a2b1c", GPUInstanceID: 2}}
}

func TestGPUSharing(t *testing.T) {
	runCases(t, checkGPUSharing, []checkCase{
		{name: "srun -n 2 --gres=gpu:2: both tasks see both", node: jobNode(step(1, 2, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2"), nil),
			status: Warn, summary: "2 tasks on this node each see all 2 GPUs"},
		{name: "srun -n 2 --gpus-per-task=1", node: jobNode(step(1, 2, "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=1", "SLURM_GPUS_ON_NODE=2"), nil),
			status: Pass, summary: "2 task(s) on this node (SLURM_STEP_TASKS_PER_NODE=2(x2)) = 2 GPU processes on 2 GPU(s)"},
		{name: "ntasks-per-node=4 × torchrun nproc 4", node: jobNode(step(2, 4, "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4",
			"TORCHELASTIC_RUN_ID=r1", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=4", "WORLD_SIZE=32"), nil),
			status: Fail, summary: "4 task(s) on this node (SLURM_STEP_TASKS_PER_NODE=4(x2)) × 4 (LOCAL_WORLD_SIZE=4 torchrun workers per task) = 16 GPU processes on 4 GPU(s)"},
		{name: "one task per node × torchrun nproc 4", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4",
			"TORCHELASTIC_RUN_ID=r1", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=4"), nil), status: Pass, summary: "× 4"},
		{name: "LOCAL_RANK set from SLURM_LOCALID without torchrun", node: jobNode(step(3, 4, "CUDA_VISIBLE_DEVICES=3", "SLURM_STEP_GPUS=3", "SLURM_GPUS_ON_NODE=4",
			"LOCAL_RANK=3", "LOCAL_WORLD_SIZE=4"), nil), status: Pass, summary: "= 4 GPU processes on 4 GPU(s)"},
		{name: "mpirun nested in each srun task", node: jobNode(step(1, 2, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2",
			"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_LOCAL_RANK=0", "OMPI_COMM_WORLD_LOCAL_SIZE=2"), nil), status: Fail, summary: "× 2 (OMPI_COMM_WORLD_LOCAL_SIZE=2 mpirun ranks per task) = 4 GPU processes on 2"},
		{name: "Open MPI ranks launched by srun", node: jobNode(step(1, 2, "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=1", "SLURM_GPUS_ON_NODE=2",
			"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2"), nil), status: Pass, summary: "= 2 GPU processes"},
		// srun -n 4 --gres=gpu:2 --gpu-bind=map_gpu:0,0,1,1: two tasks on each
		// GPU, written out by the user (srun(1) --gpu-bind map_gpu); it failed
		// as "4 GPU processes on 2 GPU(s)".
		{name: "map_gpu naming each GPU twice: shared as requested", node: jobNode(step(2, 4, "CUDA_VISIBLE_DEVICES=1", "GPU_DEVICE_ORDINAL=1", "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "SLURM_GPU_BIND=map_gpu:0,0,1,1"), nil),
			status: Pass, summary: "= 4 GPU processes on 2 GPU(s) (SLURM_GPUS_ON_NODE); this task sees 1; shared as requested (--gpu-bind=map_gpu:0,0,1,1, from SLURM_GPU_BIND: up to 2 tasks on one GPU)"},
		{name: "map_gpu sharing × torchrun 4", node: jobNode(step(2, 4, "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "SLURM_GPU_BIND=map_gpu:0*2,1*2",
			"TORCHELASTIC_RUN_ID=r1", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=4"), nil),
			status: Fail, summary: "= 16 GPU processes on 2 GPU(s) (SLURM_GPUS_ON_NODE), more than the 4 that --gpu-bind=map_gpu:0*2,1*2 (SLURM_GPU_BIND) allows"},
		// Real slurmd 22.05: the tasks get SLURMD_TRES_BIND=gpu:map_gpu:0,0 and
		// no SLURM_GPU_BIND (scripts/slurm-e2e.sh).
		{name: "map_gpu from slurmstepd's SLURMD_TRES_BIND", node: jobNode(step(1, 2, "CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=0", "SLURM_GPUS_ON_NODE=1", "SLURMD_TRES_BIND=gpu:map_gpu:0,0"), nil),
			status: Pass, summary: "shared as requested (--gpu-bind=map_gpu:0,0, from SLURMD_TRES_BIND: up to 2 tasks on one GPU)"},
		{name: "map_gpu one GPU each is not sharing", node: jobNode(step(1, 4, "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "SLURM_GPU_BIND=map_gpu:0,1,2,3"), nil),
			status: Fail, summary: "= 4 GPU processes on 2 GPU(s)"},
		{name: "overlapping mask_gpu: shared as requested", node: jobNode(step(0, 2, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "SLURM_GPU_BIND=mask_gpu:0x3"), nil),
			status: Pass, summary: "shared as requested (--gpu-bind=mask_gpu:0x3, from SLURM_GPU_BIND: up to 2 tasks on one GPU)"},
		{name: "more tasks than GPUs, count inferred", node: jobNode(step(1, 4, "CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=0"), nil),
			status: Warn, summary: "4 GPU processes on 1 GPU(s) (visible to this task)"},
		{name: "no GPUs", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES="), nil), status: Skip, summary: "no GPUs"},
		// srun --ntasks-per-gpu=2 --gpus=4: eight tasks, each bound to one GPU
		// (srun(1): --ntasks-per-gpu implies --tres-bind=gres/gpu:single:2).
		// srun/launch.c sends it as the step's ntasks_per_tres and env.c
		// setup_env exports SLURM_NTASKS_PER_TRES: what real slurmd 22.05
		// gave each task of srun -n 2 --ntasks-per-gpu=2 in scripts/slurm-e2e.sh
		// (no SLURM_NTASKS_PER_GPU). It failed "8 GPU processes on 4 GPU(s)".
		{name: "--ntasks-per-gpu=2: shared as requested", node: jobNode(step(3, 8, "CUDA_VISIBLE_DEVICES=1", "GPU_DEVICE_ORDINAL=1", "SLURM_STEP_GPUS=1", "SLURM_GPUS_ON_NODE=4", "SLURM_NTASKS_PER_TRES=2"), nil),
			status: Pass, summary: "= 8 GPU processes on 4 GPU(s) (SLURM_GPUS_ON_NODE); this task sees 1; shared as requested (SLURM_NTASKS_PER_TRES=2, --ntasks-per-gpu: up to 8 processes on 4 GPU(s))"},
		// The batch script of sbatch --ntasks-per-gpu=2 has SLURM_NTASKS_PER_GPU (sbatch(1)).
		{name: "SLURM_NTASKS_PER_GPU, as sbatch sets it", node: jobNode(step(3, 8, "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=1", "SLURM_GPUS_ON_NODE=4", "SLURM_NTASKS_PER_GPU=2"), nil),
			status: Pass, summary: "shared as requested (SLURM_NTASKS_PER_GPU=2, --ntasks-per-gpu: up to 8 processes on 4 GPU(s))"},
		{name: "--ntasks-per-gpu=2 × torchrun 4", node: jobNode(step(3, 8, "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=1", "SLURM_GPUS_ON_NODE=4", "SLURM_NTASKS_PER_TRES=2",
			"TORCHELASTIC_RUN_ID=r1", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=4"), nil),
			status: Fail, summary: "= 32 GPU processes on 4 GPU(s) (SLURM_GPUS_ON_NODE), more than the 8 that SLURM_NTASKS_PER_TRES=2 allows"},
		// srun -n 4 --gres=shard:4: the shard plugin sets SLURM_SHARDS_ON_NODE
		// and CUDA_VISIBLE_DEVICES, not SLURM_GPUS_ON_NODE
		// (src/plugins/gres/shard/gres_shard.c). It warned "4 GPU processes on 1".
		{name: "shards: shared as requested", node: jobNode(step(1, 4, "CUDA_VISIBLE_DEVICES=0", "SLURM_SHARDS_ON_NODE=4"), nil),
			status: Pass, summary: "shared as requested (SLURM_SHARDS_ON_NODE=4: GPU shards are meant to be shared)"},
		// srun -n 2 --gres=mps:50: gres/mps sets CUDA_VISIBLE_DEVICES,
		// SLURM_STEP_GPUS and SLURM_GPUS_ON_NODE of the one GPU
		// (gres_common_gpu_set_env) and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
		// (src/plugins/gres/mps/gres_mps.c, _set_env). It failed "2 GPU
		// processes on 1 GPU(s)".
		{name: "gres/mps: shared as requested", node: jobNode(step(1, 2, "CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=0", "SLURM_GPUS_ON_NODE=1", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"), nil),
			status: Pass, summary: "= 2 GPU processes on 1 GPU(s) (SLURM_GPUS_ON_NODE); this task sees 1; shared as requested (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25: MPS clients, each given a share of the GPU)"},
		// Jean Zay's "-C mps" (idris.fr, "Usage of CUDA MPS"): 40 tasks on a
		// node's 4 GPUs, each seeing all four, with an MPS daemon the
		// site's prolog starts. It failed "40 GPU processes on 4 GPU(s)".
		// What shows MPS is the job's own (its environment, a program's
		// name), so the verdict is unknown, never a pass.
		{name: "hand-started MPS: CUDA_MPS_PIPE_DIRECTORY", node: jobNode(oneNode(step(7, 40, "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4", "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps_100")), nil),
			status: Skip, summary: "unknown: 40 task(s) on this node (SLURM_STEP_TASKS_PER_NODE=40) = 40 GPU processes on 4 GPU(s) (SLURM_GPUS_ON_NODE), more than one per GPU unless an MPS daemon serves them, as CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps_100 suggest(s)"},
		{name: "hand-started MPS: the MPS server on the GPU", node: jobNode(oneNode(step(7, 40, "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4")), func(n *state.Node) {
			n.NVML.GPUs[2].Processes = []state.Process{{PID: 5150, User: "alice", Command: "nvidia-cuda-mps-server", UsedMemoryBytes: 300 << 20}}
		}), status: Skip, summary: "as nvidia-cuda-mps-server (pid 5150, alice) on GPU 2 suggest(s)"},
		// The server on a GPU this task does not see is no evidence.
		{name: "MPS server on another GPU", node: jobNode(oneNode(step(7, 40, "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4")), func(n *state.Node) {
			n.NVML.GPUs[5].Processes = []state.Process{{PID: 5150, User: "bob", Command: "nvidia-cuda-mps-server"}}
		}), status: Fail, summary: "= 40 GPU processes on 4 GPU(s)"},
		// sbatch --ntasks=4 --gpus-per-task=1: the batch script gets the job's
		// SLURM_TASKS_PER_NODE=4, all four GPUs, SLURM_TRES_PER_TASK
		// (env.c env_array_for_batch_job) and no SLURM_STEP_ID
		// (slurmstepd_job.c batch_stepd_step_rec_create leaves it NO_VAL). It
		// warned "4 tasks on this node each see all 4 GPUs".
		{name: "batch script with --gpus-per-task=1", node: jobNode(batchEnv("SLURM_TRES_PER_TASK=gres/gpu:1"), nil), status: Pass,
			summary: "1 task(s) on this node (the batch script (no SLURM_STEP_ID) is one process; SLURM_TASKS_PER_NODE=4 counts the tasks its srun steps will start) = 1 GPU processes on 4 GPU(s) (SLURM_GPUS_ON_NODE); this task sees 4; its srun steps bind 1 GPU(s) per task (SLURM_TRES_PER_TASK=gres/gpu:1)"},
		{name: "batch step numbered as before 20.11", node: jobNode(batchEnv("SLURM_STEP_ID=4294967294", "SLURM_GPUS_PER_TASK=1", "SLURM_TRES_PER_TASK=cpu=2,gres/gpu=1"), nil), status: Pass,
			summary: "the batch step (SLURM_STEP_ID=4294967294) is one process"},
		{name: "batch script running torchrun ×8 on 4", node: jobNode(batchEnv("TORCHELASTIC_RUN_ID=r1", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=8"), nil), status: Fail,
			summary: "× 8 (LOCAL_WORLD_SIZE=8 torchrun workers per task) = 8 GPU processes on 4 GPU(s)"},
		// srun -n 8 --gpus=8 --gpu-bind=closest on a 2-socket HGX: each task
		// is bound to the four GPUs of its NUMA node (srun(1) --tres-bind
		// closest: "each task may be bound to more than one gres"). It passed.
		{name: "--gpu-bind=closest: task 5 sees 4-7", node: jobNode(step(5, 8, "CUDA_VISIBLE_DEVICES=4,5,6,7", "SLURM_STEP_GPUS=4,5,6,7", "SLURM_GPUS_ON_NODE=8", "SLURM_GPU_BIND=closest"), nil),
			status: Warn, summary: "8 tasks on 8 GPUs, but this task sees 4 (CUDA_VISIBLE_DEVICES=4,5,6,7) (SLURM_GPU_BIND=closest binds each task to every GPU of its NUMA node): about 4 tasks share each set, so ranks collide on its GPUs; its local rank 5 (SLURM_LOCALID) is beyond the 4 GPUs it sees",
			remedy: "srun --gpu-bind=single:1 (the closest GPU, one per task) or --gpus-per-task=1; or select the device as SLURM_LOCALID % 4"},
		{name: "--gpu-bind=closest: task 1 sees 0-3", node: jobNode(step(1, 8, "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=8", "SLURM_TRES_BIND=gres/gpu:closest", "LOCAL_RANK=1"), nil),
			status: Warn, summary: "(SLURM_TRES_BIND=closest binds each task to every GPU of its NUMA node): about 4 tasks share each set, so ranks collide on its GPUs"},
		{name: "--gpu-bind=closest, 2 tasks on 8 GPUs", node: jobNode(step(1, 2, "CUDA_VISIBLE_DEVICES=4,5,6,7", "SLURM_STEP_GPUS=4,5,6,7", "SLURM_GPUS_ON_NODE=8", "SLURM_GPU_BIND=closest"), nil),
			status: Pass},
		// sbatch --gres=gpu:4, mpirun -np 8 inside: Open MPI numbers its own
		// ranks, so rank 0 matched SLURM_PROCID=0 and passed while ranks 1-7
		// failed. OMPI_COMM_WORLD_LOCAL_SIZE says 8 on every rank.
		{name: "nested mpirun: rank 0 too", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4",
			"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_LOCAL_RANK=0", "OMPI_COMM_WORLD_LOCAL_SIZE=8"), nil),
			status: Fail, summary: "1 task(s) on this node (SLURM_STEP_TASKS_PER_NODE=1(x2)) = 1 GPU processes, and OMPI_COMM_WORLD_LOCAL_SIZE=8: 8 processes of the launcher on this node, on 4 GPU(s)"},
		{name: "nested mpirun: rank 5", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4",
			"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_LOCAL_RANK=5", "OMPI_COMM_WORLD_LOCAL_SIZE=8"), nil),
			status: Fail, summary: "= 8 GPU processes on 4 GPU(s)"},
		{name: "Hydra mpiexec -np 8 (MPI_LOCALNRANKS)", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4",
			"PMI_RANK=0", "MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=8"), nil),
			status: Fail, summary: "and MPI_LOCALNRANKS=8: 8 processes of the launcher on this node, on 4 GPU(s)"},
		{name: "Hydra one rank per GPU", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4",
			"PMI_RANK=2", "MPI_LOCALRANKID=2", "MPI_LOCALNRANKS=4"), nil),
			status: Pass, summary: "MPI_LOCALNRANKS=4: 4 processes of the launcher on this node, on 4 GPU(s)"},
		{name: "hand-set SLURM_GPU_BIND", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=0", "SLURM_GPUS_ON_NODE=1", "SLURM_GPU_BIND=nearest"), nil),
			status: Warn, summary: `SLURM_GPU_BIND="nearest" does not parse (unknown binding type "nearest")`},
	})
}

// batchEnv is what slurmstepd gives an sbatch --ntasks=4 --gres=gpu:4
// script on gpu001: the job's variables, the job's GPUs, no step.
func batchEnv(extra ...string) []string {
	return append([]string{"SLURM_JOB_ID=100", "SLURMD_NODENAME=gpu001", "SLURM_JOB_NODELIST=gpu001", "SLURM_NODELIST=gpu001",
		"SLURM_TASKS_PER_NODE=4", "SLURM_NTASKS=4", "SLURM_JOB_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4", "CUDA_VISIBLE_DEVICES=0,1,2,3",
		"GPU_DEVICE_ORDINAL=0,1,2,3", "SLURM_PROCID=0", "SLURM_LOCALID=0"}, extra...)
}

func TestNUMAAffinity(t *testing.T) {
	cpus := func(list string) func(n *state.Node) {
		return func(n *state.Node) { n.Slurm.Task.CPUs, _ = cpulist.Parse(list) }
	}
	runCases(t, checkNUMAAffinity, []checkCase{
		{name: "near", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1"), cpus("0-15")), status: Pass, summary: "task CPUs 0-15 are local to GPU 0,1 (NVML CPU affinity)"},
		{name: "far socket", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=4"), cpus("0-15")), status: Fail, summary: "all of the task's CPUs (0-15) are on another NUMA node than GPU 4"},
		{name: "half and half", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), cpus("50-59")), status: Warn, summary: "4 of the task's 10 CPUs (56-59) are not local to GPU 0"},
		{name: "GPUs on both sockets, CPUs on one", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=3,4"), cpus("0-7")), status: Warn, summary: "GPU 4", devices: []int{4}},
		{name: "sysfs beats NVML's cpuset-narrowed answer", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), func(n *state.Node) {
			n.NVML.GPUs[0].CPUAffinity = "0-7" // narrowed to the task's cpuset
			n.Slurm.GPUCPUs = []slurmstate.GPUCPUs{{PCIBusID: n.NVML.GPUs[0].PCIBusID, CPUs: []int{100, 101}}}
		}), status: Fail, summary: "local CPUs 100,101"},
		{name: "unknown locality", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), func(n *state.Node) { n.NVML.GPUs[0].CPUAffinity = "" }), status: Skip, summary: "NUMA locality unknown"},
		{name: "no mask", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), func(n *state.Node) { n.Slurm.Task = nil }), status: Skip, summary: "CPU mask"},
	})
}

func TestCPUsPerGPU(t *testing.T) {
	runCases(t, checkCPUsPerGPU, []checkCase{
		{name: "node allocation", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_CPUS_ON_NODE=32", "SLURM_GPUS_ON_NODE=2"), nil), status: Pass, summary: "16.0 CPUs per GPU (SLURM_CPUS_ON_NODE=32 / SLURM_GPUS_ON_NODE=2)"},
		{name: "starved", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_CPUS_ON_NODE=2", "SLURM_GPUS_ON_NODE=2"), nil), status: Warn, summary: "1.0 CPUs per GPU"},
		{name: "cpus per task", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0", "SLURM_CPUS_PER_TASK=3"), nil), status: Warn, summary: "3.0 CPUs per GPU (SLURM_CPUS_PER_TASK=3 / 1 visible GPU(s))"},
		{name: "task mask", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), nil), status: Pass, summary: "8.0 CPUs per GPU (8 CPUs in the task's mask"},
		{name: "threshold from config", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), nil), cfg: func(c *Config) { c.Job.MinCPUsPerGPU = 12 }, status: Warn, summary: "below 12"},
		{name: "disabled", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), nil), cfg: func(c *Config) { c.Job.MinCPUsPerGPU = 0 }, status: Skip, summary: "no minimum"},
	})
}

func TestExclusive(t *testing.T) {
	procs := func(gpu int, ps []state.Process, owners []slurmstate.Process) func(n *state.Node) {
		return func(n *state.Node) {
			n.NVML.GPUs[gpu].Processes = ps
			n.Slurm.Processes = owners
		}
	}
	env := step(0, 1, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=0,1", "SLURM_JOB_UID=1000")
	runCases(t, checkExclusive, []checkCase{
		{name: "empty", node: jobNode(env, nil), status: Pass, summary: "no other job's processes on GPU 0,1"},
		{name: "own process", node: jobNode(env, procs(0, []state.Process{{PID: 50, UsedMemoryBytes: 4 << 30}}, []slurmstate.Process{{PID: 50, JobID: "100", JobFrom: "environ"}})), status: Pass},
		{name: "another job's process", node: jobNode(env, procs(1, []state.Process{{PID: 77, User: "bob", Command: "python train.py"}}, []slurmstate.Process{{PID: 77, JobID: "99", JobFrom: "cgroup", UID: ptr(1001)}})),
			status: Fail, summary: "pid 77 (bob, python train.py) belongs to job 99, not this job 100 (from its cgroup)", devices: []int{1}},
		{name: "someone outside any job", node: jobNode(env, procs(0, []state.Process{{PID: 78, User: "carol"}}, []slurmstate.Process{{PID: 78, UID: ptr(1002)}})),
			status: Fail, summary: "pid 78 (carol) is not part of job 100", devices: []int{0}},
		{name: "own user, no job", node: jobNode(env, procs(0, []state.Process{{PID: 79, User: "alice"}}, []slurmstate.Process{{PID: 79, UID: ptr(1000)}})),
			status: Warn, summary: "could not be tied to job 100", devices: []int{0}},
		{name: "simulated: no owner lookup", node: jobNode(env, procs(0, []state.Process{{PID: 424242, User: "mallory"}}, nil)), status: Fail, summary: "mallory", devices: []int{0}},
		{name: "memory without a process", node: jobNode(env, func(n *state.Node) { n.NVML.GPUs[1].Memory.UsedBytes = 10 << 30 }),
			status: Warn, summary: "10240 MiB of memory already in use", devices: []int{1}},
		// Issue 26: this job's process whose memory NVML does not know
		// (WDDM; NVML_VALUE_NOT_AVAILABLE) leaves "used by something else"
		// unknown: no warning (it warned, counting the process as 0 MiB).
		{name: "own process, memory unknown", node: jobNode(env, func(n *state.Node) {
			procs(0, []state.Process{{PID: 50, UsedMemoryUnknown: true}}, []slurmstate.Process{{PID: 50, JobID: "100", JobFrom: "environ"}})(n)
			n.NVML.GPUs[0].Memory.UsedBytes = 10 << 30
		}), status: Pass},
		{name: "gone in between", node: jobNode(env, procs(0, []state.Process{{PID: 80}}, []slurmstate.Process{{PID: 80, Gone: true}})), status: Pass},
		{name: "other GPUs do not count", node: jobNode(env, procs(5, []state.Process{{PID: 81, User: "bob"}}, []slurmstate.Process{{PID: 81, JobID: "99"}})), status: Pass},
		{name: "process list unavailable", node: jobNode(env, func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].ProcessesKnown = false
				n.NVML.GPUs[i].Unsupported = append(n.NVML.GPUs[i].Unsupported, "nvmlDeviceGetComputeRunningProcesses")
			}
		}), status: Skip, summary: "process list not supported"},
	})
}

func TestMasterAddr(t *testing.T) {
	resolved := func(m map[string][]string, errs map[string]string) func(n *state.Node) {
		return func(n *state.Node) { n.Slurm.Host.Resolved, n.Slurm.Host.ResolveErrors = m, errs }
	}
	runCases(t, checkMasterAddr, []checkCase{
		{name: "unset", node: jobNode(step(0, 1), nil), status: Skip, summary: "not set"},
		{name: "first node", node: jobNode(step(0, 1, "MASTER_ADDR=gpu001", "MASTER_PORT=29500"), resolved(map[string][]string{"gpu001": {"10.0.0.1"}}, nil)),
			status: Pass, summary: "MASTER_ADDR=gpu001 is the job's first node"},
		{name: "FQDN of the first node", node: jobNode(step(0, 1, "MASTER_ADDR=gpu001.cluster.local"), resolved(map[string][]string{"gpu001.cluster.local": {"10.0.0.1"}, "gpu001": {"10.0.0.1"}}, nil)),
			status: Pass, summary: "first node"},
		{name: "IP of the first node", node: jobNode(step(0, 1, "MASTER_ADDR=10.0.0.1"), resolved(map[string][]string{"10.0.0.1": {"10.0.0.1"}, "gpu001": {"10.0.0.1"}}, nil)),
			status: Pass, summary: "has the address of the job's first node gpu001"},
		{name: "second node", node: jobNode(step(0, 1, "MASTER_ADDR=gpu002"), resolved(map[string][]string{"gpu002": {"10.0.0.2"}, "gpu001": {"10.0.0.1"}}, nil)),
			status: Warn, summary: "is node 2 of the job, not the first (gpu001)"},
		{name: "not in the job, on the first node", node: jobNode(step(0, 1, "MASTER_ADDR=login1"), func(n *state.Node) {
			resolved(map[string][]string{"login1": {"10.0.9.9"}, "gpu001": {"10.0.0.1"}}, nil)(n)
			n.Slurm.Host.LocalAddresses = []string{"10.0.0.1", "127.0.0.1"}
		}), status: Fail, summary: "MASTER_ADDR=login1 (10.0.9.9) is not a node of this job (gpu[001-002]), nor an address of its first node gpu001"},
		// On another node a name outside the job's list that shares no
		// address with the first node's name may be the first node's other
		// interface (JSC's "<node>i"): unknown there.
		{name: "not in the job, on the second node", node: jobNode(onNode("gpu002", step(1, 1, "MASTER_ADDR=login1")), func(n *state.Node) {
			resolved(map[string][]string{"login1": {"10.0.9.9"}, "gpu001": {"10.0.0.1"}}, nil)(n)
			n.Slurm.Host.LocalAddresses = []string{"10.0.0.2", "127.0.0.1"}
		}), status: Skip, summary: "whether rank 0 is there is unknown from this node"},
		{name: "not in the job, own addresses unknown", node: jobNode(step(0, 1, "MASTER_ADDR=login1"), resolved(map[string][]string{"login1": {"10.0.9.9"}, "gpu001": {"10.0.0.1"}}, nil)),
			status: Skip, summary: "is not a node name of this job"},
		{name: "does not resolve", node: jobNode(step(0, 1, "MASTER_ADDR=gpu0001"), resolved(map[string][]string{"gpu0001": {}}, map[string]string{"gpu0001": "lookup gpu0001: no such host"})),
			status: Fail, summary: "does not resolve: lookup gpu0001: no such host"},
		// The first node names itself by its IPoIB address: not in the job's
		// node list, not gpu001's Ethernet address, but one of this node's own.
		{name: "first node by its own other address", node: jobNode(step(0, 1, "MASTER_ADDR=gpu001-ib"), func(n *state.Node) {
			resolved(map[string][]string{"gpu001-ib": {"10.1.0.1"}, "gpu001": {"10.0.0.1"}}, nil)(n)
			n.Slurm.Host.LocalAddresses = []string{"10.0.0.1", "10.1.0.1", "127.0.0.1"}
		}), status: Pass, summary: "MASTER_ADDR=gpu001-ib has the address of the job's first node gpu001"},
		{name: "the second node's own address", node: jobNode(onNode("gpu002", step(1, 1, "MASTER_ADDR=gpu002-ib")), func(n *state.Node) {
			resolved(map[string][]string{"gpu002-ib": {"10.1.0.2"}, "gpu001": {"10.0.0.1"}}, nil)(n)
			n.Slurm.Host.LocalAddresses = []string{"10.0.0.2", "10.1.0.2"}
		}), status: Warn, summary: "is node 2 of the job, not the first (gpu001)"},
		// Seen on a real two-node Slurm (scripts/slurm-2node-e2e.sh): the first
		// node took localhost for one of its own addresses and passed, the
		// second warned "node 2 of the job"; both must fail.
		{name: "localhost on a two-node job, first node", node: jobNode(step(0, 1, "MASTER_ADDR=localhost"), func(n *state.Node) {
			resolved(map[string][]string{"localhost": {"127.0.0.1", "::1"}, "gpu001": {"10.0.0.1"}}, nil)(n)
			n.Slurm.Host.LocalAddresses = []string{"10.0.0.1", "127.0.0.1", "::1"}
		}), status: Fail, summary: "MASTER_ADDR=localhost is a loopback address (127.0.0.1, ::1) on a 2-node job"},
		{name: "localhost on a two-node job, second node", node: jobNode(onNode("gpu002", step(1, 1, "MASTER_ADDR=localhost")), func(n *state.Node) {
			resolved(map[string][]string{"localhost": {"127.0.0.1"}, "gpu001": {"10.0.0.1"}}, nil)(n)
			n.Slurm.Host.LocalAddresses = []string{"10.0.0.2", "127.0.0.1"}
		}), status: Fail, summary: "is a loopback address"},
		{name: "127.0.0.1 on a two-node job, not resolved", node: jobNode(step(0, 1, "MASTER_ADDR=127.0.0.1"), nil), status: Fail, summary: "MASTER_ADDR=127.0.0.1 is a loopback address on a 2-node job"},
		{name: "an alias of loopback on a two-node job", node: jobNode(step(0, 1, "MASTER_ADDR=me"), resolved(map[string][]string{"me": {"127.0.1.1"}, "gpu001": {"10.0.0.1"}}, nil)),
			status: Fail, summary: "MASTER_ADDR=me is a loopback address (127.0.1.1)"},
		{name: "localhost on a one-node job", node: jobNode(oneNode(step(0, 1, "MASTER_ADDR=localhost")), func(n *state.Node) {
			resolved(map[string][]string{"localhost": {"127.0.0.1"}, "gpu001": {"10.0.0.1"}}, nil)(n)
			n.Slurm.Host.LocalAddresses = []string{"10.0.0.1", "127.0.0.1"}
		}), status: Pass, summary: "has the address of the job's first node gpu001"},
		// Debian's /etc/hosts maps the host's own name to 127.0.1.1: on the
		// first node its own name resolves to loopback, and that is fine.
		{name: "first node's name resolving to 127.0.1.1 on itself", node: jobNode(step(0, 1, "MASTER_ADDR=gpu001"), func(n *state.Node) {
			resolved(map[string][]string{"gpu001": {"127.0.1.1"}}, nil)(n)
			n.Slurm.Host.LocalAddresses = []string{"10.0.0.1", "127.0.0.1"}
		}), status: Pass, summary: "MASTER_ADDR=gpu001 is the job's first node"},
		{name: "bad port", node: jobNode(step(0, 1, "MASTER_ADDR=gpu001", "MASTER_PORT=99999"), resolved(map[string][]string{"gpu001": {"10.0.0.1"}}, nil)),
			status: Fail, summary: `MASTER_PORT="99999" is not a port number`},
	})
}

func TestNCCLEnv(t *testing.T) {
	runCases(t, checkNCCLEnv, []checkCase{
		{name: "none", node: jobNode(step(0, 1), nil), status: Pass, summary: "no NCCL_* variables"},
		{name: "good", node: jobNode(step(0, 1, "NCCL_IB_HCA=mlx5_0:1,mlx5_1", "NCCL_SOCKET_IFNAME=eth", "NCCL_DEBUG=INFO"), nil), status: Pass, summary: "3 NCCL_* variable(s)"},
		{name: "exact match wanted", node: jobNode(step(0, 1, "NCCL_IB_HCA==mlx5"), nil), status: Warn, summary: "NCCL_IB_HCA==mlx5 selects none of this node's HCAs (mlx5_0, mlx5_1)"},
		{name: "exclusion of every HCA", node: jobNode(step(0, 1, "NCCL_IB_HCA=^mlx5"), nil), status: Warn, summary: "selects none of this node's HCAs"},
		{name: "exact exclusion of one HCA", node: jobNode(step(0, 1, "NCCL_IB_HCA=^=mlx5_0"), nil), status: Pass},
		{name: "exclusion list", node: jobNode(step(0, 1, "NCCL_IB_HCA=^mlx5_9", "NCCL_SOCKET_IFNAME=^docker,lo"), nil), status: Pass},
		{name: "missing HCA", node: jobNode(step(0, 1, "NCCL_IB_HCA=mlx5_0,mlx5_4"), nil), status: Warn, summary: "names mlx5_4, not an HCA here (have mlx5_0, mlx5_1): NCCL skips it and uses mlx5_0"},
		{name: "no IB at all", node: jobNode(step(0, 1, "NCCL_IB_HCA=mlx5_0"), func(n *state.Node) { n.Slurm.Host.IBDevices = nil }), status: Warn, summary: "no InfiniBand devices"},
		{name: "absent interface", node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=bond0"), nil), status: Fail, summary: "bond0 matches no interface here (have lo, eth0, ib0): NCCL's bootstrap finds no socket interface"},
		{name: "absent interface with NCCL_COMM_ID", node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=bond0", "NCCL_COMM_ID=10.0.0.1:5000"), nil), status: Warn, summary: "bond0 matches no interface here"},
		{name: "exclusion of every interface", node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=^lo,eth,ib"), nil), status: Fail, summary: "excludes every interface here"},
		{name: "absent and present interfaces", node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME==bond0,eth0"), nil), status: Pass, summary: "bond0 matches no interface here, NCCL uses eth0"},
		{name: "interface alias", node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=eth0:1"), nil), status: Pass},
		{name: "one character: ignored by NCCL", node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=x"), nil), status: Pass, summary: `NCCL_SOCKET_IFNAME="x" is ignored`},
		{name: "interfaces not read", node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=bond0"), func(n *state.Node) { n.Slurm.Host.NetInterfaces = nil }), status: Pass},
		{name: "IB disabled", node: jobNode(step(0, 1, "NCCL_IB_DISABLE=1"), nil), status: Warn, summary: "goes over TCP sockets"},
		{name: "IB disabled on a one-node job", node: jobNode(oneNode(step(0, 1, "NCCL_IB_DISABLE=1")), nil), status: Pass},
		{name: "loopback on a two-node job", node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=lo"), nil), status: Fail, summary: "NCCL_SOCKET_IFNAME=lo selects only the loopback interface on a 2-node job"},
		{name: "exact loopback on a two-node job", node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME==lo"), nil), status: Fail, summary: "loopback"},
		{name: "loopback and Ethernet", node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=lo,eth0"), nil), status: Pass},
		{name: "loopback on a one-node job", node: jobNode(oneNode(step(0, 1, "NCCL_SOCKET_IFNAME=lo")), nil), status: Pass},
		{name: "IB disabled where there is none", node: jobNode(step(0, 1, "NCCL_IB_DISABLE=1"), func(n *state.Node) { n.Slurm.Host.IBDevices = nil }), status: Pass},
		{name: "P2P off on NVLink", node: jobNode(step(0, 1, "NCCL_P2P_DISABLE=1"), nil), status: Warn, summary: "NVLink"},
		{name: "SHM off", node: jobNode(step(0, 1, "NCCL_SHM_DISABLE=1"), nil), status: Warn, summary: "NCCL_SHM_DISABLE=1"},
		{name: "GDR level LOC", node: jobNode(step(0, 1, "NCCL_NET_GDR_LEVEL=LOC"), nil), status: Warn, summary: "disables GPUDirect RDMA for every GPU/NIC pair"},
		{name: "GDR legacy 0", node: jobNode(step(0, 1, "NCCL_NET_GDR_LEVEL=0"), nil), status: Warn, summary: "disables GPUDirect RDMA"},
		{name: "GDR level nonsense", node: jobNode(step(0, 1, "NCCL_NET_GDR_LEVEL=FAST"), nil), status: Warn, summary: "not a level NCCL knows"},
		{name: "GDR level PHB", node: jobNode(step(0, 1, "NCCL_NET_GDR_LEVEL=PHB"), nil), status: Pass},
		{name: "not collected", node: jobNode(step(0, 1, "NCCL_DEBUG=INFO"), func(n *state.Node) { n.Slurm.Host = nil }), status: Skip},
	})
}

// srun -n1 -c2 ./preprocess.py on a GPU node, no --gres: the step asked for
// no GPU, so "0.2 CPUs per GPU ... starve the GPUs" and a NUMA warning were
// false alarms.
func TestCPUOnlyStep(t *testing.T) {
	cpuOnly := jobNode(step(0, 1, "SLURM_CPUS_PER_TASK=2"), func(n *state.Node) {
		n.Slurm.Task = &slurmstate.Task{CPUs: []int{100, 101}}
	})
	cfg := DefaultConfig()
	cfg.Job.MinCPUsPerGPU = 4
	for _, c := range []func(*state.Node, *Config) Result{checkCPUsPerGPU, checkNUMAAffinity} {
		if r := c(cpuOnly, cfg); r.Status != Skip || !strings.Contains(r.Summary, "CPU-only step") {
			t.Errorf("%+v", r)
		}
	}
	// The same step with one GPU is judged.
	withGPU := jobNode(step(0, 1, "SLURM_CPUS_PER_TASK=2", "CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=0"), func(n *state.Node) {
		n.Slurm.Task = &slurmstate.Task{CPUs: []int{100, 101}}
	})
	if r := checkCPUsPerGPU(withGPU, cfg); r.Status != Warn {
		t.Errorf("with a GPU: %+v", r)
	}
}

func TestCUDACompat(t *testing.T) {
	rt := func(v string) func(n *state.Node) {
		return func(n *state.Node) {
			n.Slurm.Host.CUDARuntime = &slurmstate.CUDARuntime{Version: v, From: "/opt/cuda/lib64/libcudart.so." + v}
		}
	}
	old := func(n *state.Node) { n.NVML.CUDADriverVersion, n.NVML.DriverVersion = "11.4", "470.82.01" }
	runCases(t, checkCUDACompat, []checkCase{
		{name: "none found", node: jobNode(step(0, 1), nil), status: Skip, summary: "no CUDA runtime"},
		{name: "same", node: jobNode(step(0, 1), rt("12.4")), status: Pass, summary: "driver 550.54.15 supports CUDA 12.4"},
		{name: "older", node: jobNode(step(0, 1), rt("11.8")), status: Pass},
		{name: "module load cuda/12 on a 470 driver", node: jobNode(step(0, 1), func(n *state.Node) { rt("12.2")(n); old(n) }),
			status: Fail, summary: "needs a CUDA 12 driver; this node's driver 470.82.01 supports CUDA 11.4"},
		{name: "newer minor", node: jobNode(step(0, 1), rt("12.6")), status: Warn, summary: "minor-version compatibility"},
		{name: "pre-11 minor", node: jobNode(step(0, 1), func(n *state.Node) { rt("10.2")(n); n.NVML.CUDADriverVersion = "10.1" }), status: Fail, summary: "no minor-version compatibility"},
		{name: "major only from libcudart.so.12", node: jobNode(step(0, 1), func(n *state.Node) { rt("12")(n); old(n) }), status: Fail},
		// Forward compatibility: NVIDIA's cuda-compat libcuda on
		// LD_LIBRARY_PATH runs CUDA 12 on a 470 data center driver; the
		// mismatch alone used to fail.
		{name: "cuda-compat on LD_LIBRARY_PATH outside a container", node: jobNode(step(0, 1, "LD_LIBRARY_PATH=/usr/local/cuda-12.2/compat:/usr/local/cuda-12.2/lib64"), func(n *state.Node) { rt("12.2")(n); old(n) }),
			status: Warn, summary: "LD_LIBRARY_PATH holds /usr/local/cuda-12.2/compat, which looks like NVIDIA's forward-compatibility package: unknown whether it runs"},
		{name: "compat libcuda on the path in a container: container.cuda_compat judges", node: jobNode(step(0, 1), func(n *state.Node) {
			rt("12.2")(n)
			old(n)
			n.Container = &state.Container{CompatLibraries: []state.NVMLLibrary{{Path: "/usr/local/cuda/compat/libcuda.so.535.104.05", Version: "535.104.05", OnLDLibraryPath: true}}}
		}), status: Skip, summary: "container.cuda_compat judges"},
		// The Container Toolkit's enable-cuda-compat hook puts the compat
		// directory in the loader cache through /etc/ld.so.conf.d, not on
		// LD_LIBRARY_PATH: still no proof of the mismatch.
		{name: "compat libcuda in the loader cache in a container: container.cuda_compat judges", node: jobNode(step(0, 1), func(n *state.Node) {
			rt("12.2")(n)
			old(n)
			n.Container = &state.Container{CompatLibraries: []state.NVMLLibrary{{Path: "/usr/local/cuda-12.2/compat/libcuda.so.535.104.05", Version: "535.104.05", LoaderConf: "/etc/ld.so.conf.d/00-compat-1.conf"}}}
		}), status: Skip, summary: "is on the loader cache (/etc/ld.so.conf.d/00-compat-1.conf): container.cuda_compat judges"},
		{name: "compat libcuda in the image but not on the path still fails", node: jobNode(step(0, 1), func(n *state.Node) {
			rt("12.2")(n)
			old(n)
			n.Container = &state.Container{CompatLibraries: []state.NVMLLibrary{{Path: "/usr/local/cuda/compat/libcuda.so.535.104.05", Version: "535.104.05"}}}
		}), status: Fail, summary: "needs a CUDA 12 driver"},
		// CUDA_VERSION=garbage used to be an ERROR and exit 1: the user's
		// variable says nothing about the node.
		{name: "garbage", node: jobNode(step(0, 1), rt("twelve")), status: Skip, summary: `is "twelve", not a CUDA version`},
		{name: "driver's version unreadable", node: jobNode(step(0, 1), func(n *state.Node) { rt("12.4")(n); n.NVML.CUDADriverVersion = "x" }), status: Error},
	})
}

func TestGPUMemory(t *testing.T) {
	small := func(n *state.Node) { n.NVML.GPUs[1].Memory.TotalBytes = 40 << 30 }
	runCases(t, checkGPUMemory, []checkCase{
		{name: "no minimum", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1"), nil), status: Skip, summary: "no minimum"},
		{name: "enough", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1"), nil), cfg: func(c *Config) { c.Job.MinGPUMemory = "80GB" }, status: Pass, summary: "2 GPU(s) with at least 80GB"},
		{name: "too small", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0,1"), small), cfg: func(c *Config) { c.Job.MinGPUMemory = "80GiB" }, status: Fail, summary: "40960 MiB (40960 MiB usable + 0 reserved by the driver), below the required 80GiB", devices: []int{1}},
		// A real H100 80GB (nvidia-smi -q: 81559 MiB total, 551 MiB
		// reserved) meets --min-gpu-memory 80G; it used to fail.
		{name: "real 80 GB H100 meets 80G", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), func(n *state.Node) {
			n.NVML.GPUs[0].Memory = &state.Memory{TotalBytes: 81559 << 20, ReservedBytes: 551 << 20}
		}), cfg: func(c *Config) { c.Job.MinGPUMemory = "80G" }, status: Pass},
		{name: "the small one is not ours", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), small), cfg: func(c *Config) { c.Job.MinGPUMemory = "81920" }, status: Pass},
		{name: "bad size", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0"), nil), cfg: func(c *Config) { c.Job.MinGPUMemory = "lots" }, status: Error},
	})
}

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]uint64{"": 0, "1024": 1 << 30, "80GB": 80e9, "80GiB": 80 << 30, "80G": 80 << 30, "40 gib": 40 << 30, "512M": 512 << 20, "1.5TB": 1.5e12} {
		if got, err := ParseMemory(in); err != nil || got != want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"x", "80XB", "-1G", "1e400"} {
		if _, err := ParseMemory(bad); err == nil {
			t.Errorf("ParseMemory(%q) accepted", bad)
		}
	}
	if err := (JobConfig{Mode: "sometimes"}).Validate(); err == nil {
		t.Error("bad mode accepted")
	}
	if err := DefaultJobConfig().Validate(); err != nil {
		t.Error(err)
	}
}
