package check

import (
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// job.gpu_sharing against NVML's own list of a GPU's MPS clients
// (nvmlDeviceGetMPSComputeRunningProcesses; state.GPU.MPSProcessesKnown,
// state.Process.MPSClient): 40 tasks of job 100 on the node's 4 GPUs. The
// driver's list, which the job's user cannot write, passes a GPU whose
// shared processes are all MPS clients (the one process there that is not
// being their server), fails one where they are plain compute processes
// even with CUDA_MPS_PIPE_DIRECTORY set, and leaves "unknown" where it was
// not read. Before, none of it was read: the same nodes failed, or were
// unknown on the pipe directory alone.
func TestGPUSharingMPSFromDriver(t *testing.T) {
	env := func(extra ...string) []string {
		return oneNode(step(7, 40, append([]string{"CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_STEP_GPUS=0,1,2,3", "SLURM_GPUS_ON_NODE=4"}, extra...)...))
	}
	pipe := "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps_100"
	// on puts processes on a GPU whose MPS list NVML read.
	on := func(gpu int, ps ...state.Process) func(n *state.Node) {
		return func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].MPSProcessesKnown = true
			}
			n.NVML.GPUs[gpu].Processes = append(n.NVML.GPUs[gpu].Processes, ps...)
		}
	}
	both := func(fs ...func(n *state.Node)) func(n *state.Node) {
		return func(n *state.Node) {
			for _, f := range fs {
				f(n)
			}
		}
	}
	client := func(pid uint32, job string) state.Process {
		return state.Process{PID: pid, JobID: job, User: "alice", Command: "python", MPSClient: true}
	}
	plain := func(pid uint32, job string) state.Process {
		return state.Process{PID: pid, JobID: job, User: "alice", Command: "python"}
	}
	notRead := func(gpu int) func(n *state.Node) {
		return func(n *state.Node) {
			n.NVML.GPUs[gpu].MPSProcessesKnown = false
			n.NVML.GPUs[gpu].Unsupported = append(n.NVML.GPUs[gpu].Unsupported, "nvmlDeviceGetMPSComputeRunningProcesses")
		}
	}
	runCases(t, checkGPUSharing, []checkCase{
		// Jean Zay's -C mps: the daemon started for the job, its server in
		// the job's cgroup (the one process on GPU 0 that is not a client),
		// and a site's server outside the job on GPU 1. No environment
		// evidence needed: it failed "40 GPU processes on 4 GPU(s)".
		{name: "every sharing process an MPS client", node: jobNode(env(), both(
			on(0, plain(500, "100"), client(501, "100"), client(502, "100")),
			on(1, state.Process{PID: 510, User: "alice", Command: "nvidia-cuda-mps-server"}, client(511, "100"), client(512, "100")))),
			status: Pass, summary: "shared through MPS, as the driver reports: NVML lists the job's pid(s) 501, 502 on GPU 0 as MPS clients (and pid 500, the one process there that is not, as their MPS server); the job's pid(s) 511, 512 on GPU 1 as MPS clients"},
		// The job's processes known from their environment (no job cgroup),
		// as job.exclusive ties them.
		{name: "job from the owners' table", node: jobNode(env(), both(
			on(2, client(521, ""), client(522, "")),
			func(n *state.Node) {
				n.Slurm.Processes = []slurmstate.Process{{GPU: 2, PID: 521, JobID: "100", JobFrom: "environ"}, {GPU: 2, PID: 522, JobID: "100", JobFrom: "environ"}}
			})),
			status: Pass, summary: "NVML lists the job's pid(s) 521, 522 on GPU 2 as MPS clients"},
		// The pipe directory is set (a module exports it) but the daemon is
		// not reached: the driver lists plain compute processes. It was
		// "unknown".
		{name: "pipe directory set, plain processes", node: jobNode(env(pipe), on(0, plain(501, "100"), plain(502, "100"))),
			status: Fail, summary: "and NVML lists the job's pid(s) 501, 502 on GPU 0 as plain compute processes, not MPS clients (nvmlDeviceGetMPSComputeRunningProcesses): they time-slice the GPU"},
		// An MPS server by name on the GPU is no pass either when the
		// driver lists the job's processes beside it as plain.
		{name: "server by name, two plain processes", node: jobNode(env(), on(3,
			state.Process{PID: 530, User: "alice", Command: "nvidia-cuda-mps-server"}, plain(531, "100"), plain(532, "100"))),
			status: Fail, summary: "the job's pid(s) 531, 532 on GPU 3 as plain compute processes"},
		// Another job's MPS clients do not make the job's plain processes clients.
		{name: "clients of another job", node: jobNode(env(pipe), on(0, client(601, "99"), client(602, "99"), plain(501, "100"), plain(502, "100"))),
			status: Fail, summary: "the job's pid(s) 501, 502 on GPU 0 as plain compute processes"},
		// Not read (NOT_SUPPORTED, an error): unknown, never "no MPS clients".
		{name: "pipe directory set, MPS list not read", node: jobNode(env(pipe), both(on(0, plain(501, "100"), plain(502, "100")), notRead(0))),
			status: Skip, summary: "as CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps_100 suggest(s), and the driver's word is missing (GPU 0 runs 2 of the job's processes and its MPS client list (nvmlDeviceGetMPSComputeRunningProcesses) was not read)"},
		{name: "clients on one GPU, list not read on another", node: jobNode(env(), both(
			on(0, client(501, "100"), client(502, "100")), on(1, plain(511, "100"), plain(512, "100")), notRead(1))),
			status: Skip, summary: "unknown: 40 task(s) on this node (SLURM_STEP_TASKS_PER_NODE=40) = 40 GPU processes on 4 GPU(s) (SLURM_GPUS_ON_NODE); NVML lists the job's pid(s) 501, 502 on GPU 0 as MPS clients; GPU 1 runs 2 of the job's processes and its MPS client list (nvmlDeviceGetMPSComputeRunningProcesses) was not read: whether every shared GPU is shared through MPS is not known"},
		// One process of the job is not a client, and another process on
		// the GPU is not one either: which is the server is not known.
		{name: "two processes outside the list", node: jobNode(env(), on(0, client(501, "100"), plain(502, "100"), state.Process{PID: 700, User: "bob"})),
			status: Skip, summary: "on GPU 0 NVML lists the job's pid(s) 501 as MPS clients, but its pid 502 is not one and neither is another process there"},
		// A client alone on its GPU shares nothing; no GPU shared, no
		// driver word: the arithmetic stands.
		{name: "one process per GPU listed", node: jobNode(env(), on(0, client(501, "100"))),
			status: Fail, summary: "= 40 GPU processes on 4 GPU(s)"},
		// MPS clients on a GPU the task does not see are no evidence.
		{name: "clients on another GPU", node: jobNode(env(), on(5, client(551, "100"), client(552, "100"))),
			status: Fail, summary: "= 40 GPU processes on 4 GPU(s)"},
	})
}

// job.exclusive names the MPS server of the job's clients when it runs
// outside the job: the one process on the GPU that NVML's MPS list does not
// name beside the job's clients. It warned "could not be tied to job 100"
// and counted its memory as someone else's.
func TestExclusiveMPSServer(t *testing.T) {
	env := step(0, 1, "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=0,1", "SLURM_JOB_UID=1000")
	gpu0 := func(known bool, ps []state.Process, owners []slurmstate.Process) func(n *state.Node) {
		return func(n *state.Node) {
			n.NVML.GPUs[0].MPSProcessesKnown = known
			n.NVML.GPUs[0].Processes = ps
			n.NVML.GPUs[0].Memory.UsedBytes = 6 << 30
			n.Slurm.Processes = owners
		}
	}
	server := state.Process{PID: 79, User: "alice", Command: "nvidia-cuda-mps-server", UsedMemoryBytes: 2 << 30}
	clients := []state.Process{{PID: 50, MPSClient: true, UsedMemoryBytes: 2 << 30}, {PID: 51, MPSClient: true, UsedMemoryBytes: 2 << 30}}
	mine := []slurmstate.Process{{PID: 50, JobID: "100", JobFrom: "cgroup"}, {PID: 51, JobID: "100", JobFrom: "cgroup"}, {PID: 79, UID: ptr(1000)}}
	runCases(t, checkExclusive, []checkCase{
		{name: "server of the job's clients outside the job", node: jobNode(env, gpu0(true, append([]state.Process{server}, clients...), mine)),
			status: Warn, summary: "pid 79 (alice, nvidia-cuda-mps-server) runs on this GPU outside job 100; it is the MPS server of this job's pid(s) 50, 51: NVML lists them as MPS clients of this GPU and it as the one process there that is not",
			remedy: "start the MPS control daemon inside the job", devices: []int{0}},
		// Another job's process serving this job's clients is still another job's.
		{name: "server in another job", node: jobNode(env, gpu0(true, append([]state.Process{server}, clients...),
			append(mine[:2:2], slurmstate.Process{PID: 79, JobID: "99", JobFrom: "cgroup", UID: ptr(1000)}))),
			status: Fail, summary: "belongs to job 99, not this job 100 (from its cgroup); it is the MPS server of this job's pid(s) 50, 51", devices: []int{0}},
		// Without the driver's list the process is what it was: untied.
		{name: "MPS list not read", node: jobNode(env, gpu0(false, append([]state.Process{server}, clients...), mine)),
			status: Warn, summary: "could not be tied to job 100", devices: []int{0}},
		// Two processes outside the list: which one serves is not known.
		{name: "two candidates", node: jobNode(env, gpu0(true, append([]state.Process{server, {PID: 80, User: "alice"}}, clients...),
			append(mine, slurmstate.Process{PID: 80, UID: ptr(1000)}))),
			status: Warn, summary: "pid 79 (alice, nvidia-cuda-mps-server) runs on this GPU; it could not be tied to job 100", devices: []int{0}},
	})
}
