package spec

import "fmt"

// A simulated running job, for `gpuprobe job --simulate MODEL:job-...`: the
// one table the GPU side (nvml/sim: utilisation, memory, the job's processes
// on its GPUs) and the host side (the job's cgroup and /proc in the
// simulated tree) both read, so the PIDs, CPUs and GPUs agree. Each
// scenario is what the matching job.perf verdict needs to see, and nothing
// is the reference for healthy: the thresholds come from docs/job.md.
type JobScenario struct {
	// Fault is the --simulate fault name that selects it.
	Fault  string
	Effect string
	// GPUUtil is each job GPU's utilisation (nvmlDeviceGetUtilizationRates
	// .gpu), percent; MemUtil the memory controller's.
	GPUUtil []uint32
	MemUtil []uint32
	// GPUMemPercent is each GPU's used framebuffer, percent of total.
	GPUMemPercent []uint32
	// RanksOnGPU says which job GPUs run one of the job's processes.
	RanksOnGPU []bool
	// CPUBusyPercent is the job's CPU time over the window as a percent of
	// its allocated CPUs (100 = every allocated CPU busy all the time).
	CPUBusyPercent uint32
	// HotWorkerCPUs is the CPU time per second of the first data-loader
	// worker alone (1 = one CPU flat out), taken out of CPUBusyPercent; the
	// rest is spread as usual. 0: no worker stands out.
	HotWorkerCPUs float64
	// DStateTasks is how many of the job's tasks sit in state D at each tick.
	DStateTasks int
	// ReadFSType is the filesystem the job reads its data from ("nfs4",
	// "ext4"), at ReadMiBps.
	ReadFSType string
	ReadMiBps  uint64
	// MemPercentOfLimit is the cgroup's memory use against its limit;
	// SwapMiB and OOMKills are the cgroup's swap use and oom_kill events.
	MemPercentOfLimit uint32
	SwapMiB           uint64
	OOMKills          uint64
	// The --hang shapes. PowerPercent is each job GPU's power draw as a
	// percent of its power limit (nil: in proportion to GPUUtil). DStateRank
	// and ExitedRank name a rank by its GPU (1-based; 0: none): the first
	// sits in state D with two threads waiting on an NFS RPC and a file
	// open on the NFS mount; the second is read at the first tick and gone
	// from the next (its GPU idle, no process on it).
	PowerPercent []uint32
	DStateRank   int
	ExitedRank   int
	// RASRemoteRank: NCCL's RAS port answers, naming a rank on another
	// node unresponsive (sim/job's RAS report); false: nothing listens.
	RASRemoteRank bool
}

// SimJob is the simulated job: its ID, owner, GPUs (NVML indices), CPUs (the
// cgroup's cpuset on dgx-h100: 16 cores of socket 0 and their siblings)
// and the PIDs of its ranks (one per job GPU, in order) and of its
// data-loader workers.
var SimJob = struct {
	ID, User, UID string
	GPUs          []int
	CPUs          string
	CPUCount      int
	RankPIDs      []int32
	WorkerPIDs    []int32
	LimitMiB      uint64
}{
	ID: "4242", User: "alice", UID: "1001",
	GPUs: []int{0, 1, 2, 3}, CPUs: "0-15,112-127", CPUCount: 32,
	RankPIDs:   []int32{70100, 70101, 70102, 70103},
	WorkerPIDs: []int32{70110, 70111, 70112, 70113, 70114, 70115, 70116, 70117},
	LimitMiB:   256 * 1024,
}

// JobScenarios are the simulated jobs, by fault name.
var JobScenarios = []JobScenario{
	{Fault: "job-healthy", Effect: "a running job whose 4 GPUs are busy (GPU-bound: nothing to fix)",
		GPUUtil: []uint32{97, 96, 98, 97}, MemUtil: []uint32{55, 54, 56, 55}, GPUMemPercent: []uint32{78, 78, 77, 78},
		RanksOnGPU: []bool{true, true, true, true}, CPUBusyPercent: 35, ReadFSType: "ext4", ReadMiBps: 40,
		MemPercentOfLimit: 40},
	{Fault: "job-input-bound", Effect: "a running job whose GPUs wait while its allocated CPUs are saturated (data loader CPU-bound)",
		GPUUtil: []uint32{12, 9, 14, 11}, MemUtil: []uint32{4, 3, 5, 4}, GPUMemPercent: []uint32{60, 60, 61, 60},
		RanksOnGPU: []bool{true, true, true, true}, CPUBusyPercent: 98, ReadFSType: "ext4", ReadMiBps: 30,
		MemPercentOfLimit: 45},
	{Fault: "job-loader-starved", Effect: "a running job whose GPUs wait on its one busy DataLoader worker: it keeps one CPU busy while the job's other allocated CPUs idle (the real cpustarve run's shape)",
		GPUUtil: []uint32{7, 6, 8, 7}, MemUtil: []uint32{2, 2, 3, 2}, GPUMemPercent: []uint32{30, 30, 30, 30},
		RanksOnGPU: []bool{true, true, true, true}, CPUBusyPercent: 5, HotWorkerCPUs: 1, ReadFSType: "ext4", ReadMiBps: 5,
		MemPercentOfLimit: 20},
	{Fault: "job-io-bound", Effect: "a running job whose GPUs wait while its tasks sit in I/O wait reading from NFS",
		GPUUtil: []uint32{8, 6, 7, 9}, MemUtil: []uint32{2, 2, 2, 3}, GPUMemPercent: []uint32{60, 60, 60, 60},
		RanksOnGPU: []bool{true, true, true, true}, CPUBusyPercent: 15, DStateTasks: 8, ReadFSType: "nfs4", ReadMiBps: 90,
		MemPercentOfLimit: 40},
	{Fault: "job-one-gpu", Effect: "a running job that asked for 4 GPUs and uses one (a single process on GPU 0)",
		GPUUtil: []uint32{96, 0, 0, 0}, MemUtil: []uint32{50, 0, 0, 0}, GPUMemPercent: []uint32{70, 1, 1, 1},
		RanksOnGPU: []bool{true, false, false, false}, CPUBusyPercent: 10, ReadFSType: "ext4", ReadMiBps: 20,
		MemPercentOfLimit: 20},
	{Fault: "job-oversized", Effect: "a running job whose 4 GPUs are lightly used and hold little memory (it would fit on fewer)",
		GPUUtil: []uint32{18, 15, 17, 16}, MemUtil: []uint32{6, 5, 6, 5}, GPUMemPercent: []uint32{9, 8, 9, 8},
		RanksOnGPU: []bool{true, true, true, true}, CPUBusyPercent: 20, ReadFSType: "ext4", ReadMiBps: 5,
		MemPercentOfLimit: 15},
	{Fault: "job-memory-pressure", Effect: "a running job at its cgroup memory limit, swapping, with an OOM kill",
		GPUUtil: []uint32{60, 58, 61, 59}, MemUtil: []uint32{30, 30, 31, 30}, GPUMemPercent: []uint32{70, 70, 70, 70},
		RanksOnGPU: []bool{true, true, true, true}, CPUBusyPercent: 40, ReadFSType: "ext4", ReadMiBps: 20,
		MemPercentOfLimit: 99, SwapMiB: 6144, OOMKills: 1},
	{Fault: "job-hang-peer", Effect: "a hung job whose 4 local ranks all wait in NCCL for a peer on another node: kernels resident (99% utilisation) at a quarter of the power limit, CPU time still; NCCL RAS names rank 37 on another node unresponsive",
		GPUUtil: []uint32{99, 99, 99, 99}, MemUtil: []uint32{0, 0, 0, 0}, GPUMemPercent: []uint32{78, 78, 77, 78}, PowerPercent: []uint32{24, 25, 24, 25},
		RanksOnGPU: []bool{true, true, true, true}, ReadFSType: "ext4", MemPercentOfLimit: 40, RASRemoteRank: true},
	{Fault: "job-hang-dstate", Effect: "a hung job: rank 3 sits in uninterruptible sleep on an NFS RPC (its GPU idle) while the other 3 local ranks wait in NCCL",
		GPUUtil: []uint32{99, 99, 99, 0}, MemUtil: []uint32{0, 0, 0, 0}, GPUMemPercent: []uint32{78, 78, 77, 78}, PowerPercent: []uint32{24, 25, 24, 10},
		RanksOnGPU: []bool{true, true, true, true}, ReadFSType: "nfs4", MemPercentOfLimit: 40, DStateRank: 4},
	{Fault: "job-hang-dead", Effect: "a hung job: rank 3's process exited (its GPU idle, no process) while the other 3 local ranks wait in NCCL",
		GPUUtil: []uint32{99, 99, 99, 0}, MemUtil: []uint32{0, 0, 0, 0}, GPUMemPercent: []uint32{78, 78, 77, 1}, PowerPercent: []uint32{24, 25, 24, 10},
		RanksOnGPU: []bool{true, true, true, true}, ReadFSType: "ext4", MemPercentOfLimit: 40, ExitedRank: 4},
	{Fault: "job-slow-not-hung", Effect: "a slow job that is not hung: its 4 GPUs busy at 85-90% of their power limit",
		GPUUtil: []uint32{97, 96, 98, 97}, MemUtil: []uint32{55, 54, 56, 55}, GPUMemPercent: []uint32{78, 78, 77, 78}, PowerPercent: []uint32{88, 86, 90, 87},
		RanksOnGPU: []bool{true, true, true, true}, CPUBusyPercent: 35, ReadFSType: "ext4", ReadMiBps: 40, MemPercentOfLimit: 40},
}

func init() {
	for _, s := range JobScenarios {
		Register(FaultDoc{Name: s.Fault, Effect: s.Effect})
	}
}

// Job returns the job scenario the spec asks for, if any. More than one is
// an error: one node runs one simulated job.
func (s *Spec) Job() (*JobScenario, error) {
	var found *JobScenario
	for i := range JobScenarios {
		if len(s.Has(JobScenarios[i].Fault)) == 0 {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("--simulate %q: %s and %s: one simulated job at a time", s.Raw, found.Fault, JobScenarios[i].Fault)
		}
		found = &JobScenarios[i]
	}
	return found, nil
}
