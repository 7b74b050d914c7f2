package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// Ray on Slurm (the Ray-on-Slurm guide: one srun step per node runs
// `ray start ... --block`): the raylet sees the step's GPUs and sets each
// worker's CUDA_VISIBLE_DEVICES to the ones it assigned the worker. A
// worker's subset is Ray's accounting, not a binding error; a worker that
// sees a GPU outside the step's allocation still fails.
func TestVisibleDevicesRay(t *testing.T) {
	// A worker process: the raylet's internal flags (Ray's
	// RAY_INTERNAL_FLAGS) and the step's Slurm variables it inherited.
	worker := func(cvd string, extra ...string) []string {
		return step(0, 1, append([]string{"CUDA_VISIBLE_DEVICES=" + cvd, "GPU_DEVICE_ORDINAL=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4",
			"RAY_RAYLET_PID=81234", "RAY_ADDRESS=10.0.0.1:6379"}, extra...)...)
	}
	runCases(t, checkVisibleDevices, []checkCase{
		{name: "Ray worker on GPU 2 of the step's 0-3", node: jobNode(worker("2"), nil),
			status: Pass, summary: "a Ray worker (RAY_RAYLET_PID=81234): Ray gave this worker GPU 2 of the step's"},
		{name: "Ray worker on GPUs 1,3", node: jobNode(worker("1,3", "RAY_JOB_ID=01000000"), nil),
			status: Pass, summary: "Ray gave this worker GPU 1,3"},
		{name: "Ray worker seeing GPU 6 outside the step", node: jobNode(worker("2,6"), nil),
			status: Fail, summary: "a Ray worker (RAY_RAYLET_PID=81234): CUDA_VISIBLE_DEVICES=2,6 no longer matches", remedy: "start the raylet inside the step", devices: []int{6}},
		{name: "the same subset without Ray is still narrowed", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=2", "GPU_DEVICE_ORDINAL=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4"), nil),
			status: Warn, summary: "leaving out GPU(s) 0,1,3"},
		// RAY_ADDRESS alone (a driver script, `ray start` itself) is not a
		// worker: the raylet sets its flags only in the workers it starts.
		{name: "RAY_ADDRESS alone is no worker", node: jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=2", "GPU_DEVICE_ORDINAL=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4", "RAY_ADDRESS=10.0.0.1:6379"), nil),
			status: Warn, summary: "leaving out GPU(s) 0,1,3"},
	})
}

// container.visible_devices with a Ray worker inside Podman: the container
// has the step's GPUs numbered 0-3; a worker's subset of those passes, an
// index beyond them fails as before.
func TestContainerVisibleDevicesRay(t *testing.T) {
	ray := func(cvd string) *state.Node {
		n := inContainer("podman", []string{"RAY_RAYLET_PID=81234"}, func(c *state.Container) { c.NVIDIAVisibleDevices = strp("0,1,2,3") })
		n.Slurm.Env.StepGPUs.Raw, n.Slurm.Env.StepGPUs.Indexes = "0,1,2,3", []int{0, 1, 2, 3}
		n.Slurm.Env.CUDAVisible = slurmstate.ParseVisibleDevices(cvd, true)
		return n
	}
	runContainerCases(t, checkContainerVisible, []containerCase{
		{name: "Ray worker on GPU 2 of 4", node: ray("2"), want: Pass, summary: "agrees with Slurm's GPUs (0-3) and CUDA_VISIBLE_DEVICES (a Ray worker's: Ray's subset of the container's GPUs)"},
		{name: "Ray worker on GPU 5 of 4", node: ray("5"), want: Fail, summary: "names GPU 5"},
	})
}

// RayStep is the fact a report shows: Ray's variables, and the raylet or a
// ray:: worker among the job's processes.
func TestRayStep(t *testing.T) {
	n := jobNode(step(0, 1, "CUDA_VISIBLE_DEVICES=0", "RAY_NODE_IP_ADDRESS=10.0.0.2"), func(n *state.Node) {
		n.NVML.GPUs[0].Processes = []state.Process{
			{PID: 900, Command: "python3", CommandLine: "ray::TrainWorker.train", JobID: "100"},
			{PID: 901, Command: "python3", CommandLine: "ray::IDLE", JobID: "200"}, // another job's
		}
		n.JobPerf = &state.JobPerf{CPU: &state.JobCPU{TopProcesses: []state.JobProcess{{PID: 800, Comm: "raylet"}, {PID: 801, Comm: "python3"}}}}
	})
	got := strings.Join(RayStep(n), "; ")
	want := "env RAY_NODE_IP_ADDRESS=10.0.0.2; job process 800 raylet; GPU process 900 ray::TrainWorker.train on GPU 0"
	if got != want {
		t.Errorf("RayStep: %q\nwant %q", got, want)
	}
	if r := checkVisibleDevices(n, DefaultConfig()); !strings.Contains(strings.Join(r.Details, "\n"), "Ray on Slurm: env RAY_NODE_IP_ADDRESS") {
		t.Errorf("details %q", r.Details)
	}
	if ev := RayStep(jobNode(step(0, 1), nil)); ev != nil {
		t.Errorf("no Ray: %q", ev)
	}
}

// In its own PID namespace (a Podman container without --pid=host) the
// task cannot tie NVML's host PIDs to processes: /proc/77 there is some
// other process, or none. job.exclusive then judges no process and says
// why; in the host's namespace (Enroot, Apptainer) it judges as before.
func TestExclusiveForeignPIDNamespace(t *testing.T) {
	env := step(0, 1, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=0,1", "SLURM_JOB_UID=1000")
	node := func(ns string) *state.Node {
		return jobNode(env, func(n *state.Node) {
			n.Slurm.Task.PIDNamespace = ns
			// What /proc in the container said about "77": another job's
			// process, which it is not.
			n.NVML.GPUs[1].Processes = []state.Process{{PID: 77, User: "bob"}}
			n.Slurm.Processes = []slurmstate.Process{{PID: 77, JobID: "99", JobFrom: "cgroup", UID: ptr(1001)}}
		})
	}
	empty := node("pid:[4026532512]")
	empty.NVML.GPUs[1].Processes = nil
	runCases(t, checkExclusive, []checkCase{
		{name: "container's own PID namespace", node: node("pid:[4026532512]"), status: Skip,
			summary: "NVML reports host PIDs (pid 77 on GPU 1), but this task runs in its own PID namespace (pid:[4026532512], not the host's pid:[4026531836])", remedy: "--pid=host"},
		{name: "host PID namespace", node: node(slurmstate.InitPIDNamespace), status: Fail, summary: "belongs to job 99", devices: []int{1}},
		{name: "namespace not read", node: node(""), status: Fail, summary: "belongs to job 99", devices: []int{1}},
		{name: "no processes: nothing to map", node: empty, status: Pass},
	})
}
