package state

import "time"

// JobPerf is what `gpuprobe job` measured of one running job on this node
// over a sampling window: the GPU readings NVML gave at each tick, and the
// job's CPU, memory and I/O counters from its cgroup and /proc at the
// window's two ends. Everything is raw: check/ (job.perf.*) decides what is
// idle, saturated or starved. A nil sub-struct means the source could not be
// read; Errors then says why.
type JobPerf struct {
	JobID string `json:"job_id"`
	// User owns the job (from the cgroup path's uid or scontrol), "" if unknown.
	User string `json:"user,omitempty"`
	// Tasks are how the job's processes were found: "cgroup-v2", "cgroup-v1"
	// (the job_<id> directory slurmd's cgroup plugins make) or "scontrol"
	// (`scontrol listpids`, proctrack without cgroups).
	TasksFrom string `json:"tasks_from"`
	// CgroupPath is the job's cgroup directory, relative to the cgroup root.
	CgroupPath string `json:"cgroup_path,omitempty"`
	// PIDs are the job's processes seen during the window.
	PIDs []int32 `json:"pids,omitempty"`
	// Containers are the job's GPU processes that run in a container: the
	// runtime holding each and its marker (collect.ProcessContainer), PID
	// order; absent when none does. The PIDs are the host's (NVML's).
	Containers []ProcessContainer `json:"containers,omitempty"`

	Start           time.Time `json:"start"`
	WindowSeconds   float64   `json:"window_seconds"`
	IntervalSeconds float64   `json:"interval_seconds"`

	// GPUsFrom says how the job's GPUs were found: "scontrol" (the job's
	// GRES index list), "step-env" (SLURM_STEP_GPUS/CUDA_VISIBLE_DEVICES of
	// the step gpuprobe runs in), "processes" (GPUs running the job's PIDs;
	// "processes (...)" with why Slurm's numbers were not taken: MIG on).
	GPUsFrom string   `json:"gpus_from,omitempty"`
	GPUs     []JobGPU `json:"gpus"`

	CPU    *JobCPU    `json:"cpu,omitempty"`
	Memory *JobMemory `json:"memory,omitempty"`
	IO     *JobIO     `json:"io,omitempty"`
	// Hang is what `gpuprobe job --hang` read of each rank process: its
	// state, what its threads wait on and whether its CPU time moved.
	Hang *JobHang `json:"hang,omitempty"`

	Errors []string `json:"errors,omitempty"`
}

// JobGPU is one of the job's GPUs and what NVML said at each tick.
type JobGPU struct {
	Index            int    `json:"index"`
	UUID             string `json:"uuid,omitempty"`
	PCIBusID         string `json:"pci_bus_id,omitempty"`
	Name             string `json:"name,omitempty"`
	MemoryTotalBytes uint64 `json:"memory_total_bytes,omitempty"`
	// JobPIDs are the job's processes NVML lists on this GPU (compute
	// processes, at the last tick).
	JobPIDs []uint32    `json:"job_pids,omitempty"`
	Samples []GPUSample `json:"samples"`
	// Unsupported names calls the GPU answered NOT_SUPPORTED; Errors the
	// ones that failed.
	Unsupported []string    `json:"unsupported,omitempty"`
	Errors      []CallError `json:"errors,omitempty"`
}

// GPUSample is one tick of one GPU. Nil is "not read" (unsupported or failed).
type GPUSample struct {
	At time.Time `json:"at"`
	// UtilGPUPercent and UtilMemoryPercent are nvmlDeviceGetUtilizationRates:
	// the percent of the driver's last sample period in which a kernel ran,
	// and in which device memory was read or written.
	UtilGPUPercent    *uint32 `json:"util_gpu_percent,omitempty"`
	UtilMemoryPercent *uint32 `json:"util_memory_percent,omitempty"`
	MemoryUsedBytes   *uint64 `json:"memory_used_bytes,omitempty"`
	// PCIe throughput over the driver's 20 ms window, KB/s
	// (nvmlDeviceGetPcieThroughput).
	PCIeTxKBps *uint32 `json:"pcie_tx_kbps,omitempty"`
	PCIeRxKBps *uint32 `json:"pcie_rx_kbps,omitempty"`
	// NVLink data counters, bytes since the driver loaded, summed over links
	// (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX, which NVML gives in KiB).
	NVLinkTxBytes   *uint64  `json:"nvlink_tx_bytes,omitempty"`
	NVLinkRxBytes   *uint64  `json:"nvlink_rx_bytes,omitempty"`
	PowerWatts      *float64 `json:"power_watts,omitempty"`
	PowerLimitWatts *float64 `json:"power_limit_watts,omitempty"`
	// TempC is nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU); nil not read
	// (a 0 the driver answers is kept: the checks treat 0 °C as unknown).
	TempC         *uint32 `json:"temp_c,omitempty"`
	SMClockMHz    *uint32 `json:"sm_clock_mhz,omitempty"`
	MaxSMClockMHz *uint32 `json:"max_sm_clock_mhz,omitempty"`
	// ClockEventMask is nvmlDeviceGetCurrentClocksEventReasons.
	ClockEventMask *uint64 `json:"clock_event_mask,omitempty"`
	// Processes is per-process SM utilisation where the GPU supports it
	// (nvmlDeviceGetProcessUtilization), for the samples since the last tick.
	Processes []ProcessUtil `json:"processes,omitempty"`
}

// ProcessUtil is one process's share of a GPU in one tick.
type ProcessUtil struct {
	PID             uint32 `json:"pid"`
	SMUtilPercent   uint32 `json:"sm_util_percent"`
	MemUtilPercent  uint32 `json:"mem_util_percent"`
	UsedMemoryBytes uint64 `json:"used_memory_bytes,omitempty"`
	InJob           bool   `json:"in_job,omitempty"`
}

// JobCPU is the job's CPU allocation on this node and what it used.
type JobCPU struct {
	// AllocatedCPUs is the job's cpuset on this node (cpulist format);
	// AllocatedCount its size. From the cgroup's cpuset, else the union of
	// the tasks' Cpus_allowed_list.
	AllocatedCPUs  string `json:"allocated_cpus"`
	AllocatedCount int    `json:"allocated_count"`
	// UsedSeconds is CPU time (user+system) the job's tasks used during the
	// window; From names the counter ("cpu.stat", "cpuacct.usage", "proc").
	UsedSeconds float64 `json:"used_seconds"`
	From        string  `json:"from"`
	// ThrottledSeconds is cpu.stat throttled_usec over the window (a CPU
	// quota the job ran into); nil where the cgroup has no quota counters.
	ThrottledSeconds *float64 `json:"throttled_seconds,omitempty"`
	// PressureSomeSeconds is cpu.pressure "some" total over the window
	// (cgroup v2 PSI): time some task waited for a CPU.
	PressureSomeSeconds *float64 `json:"pressure_some_seconds,omitempty"`
	// RunnableTaskSamples counts, over all ticks, the job's tasks found in
	// state R (running or runnable).
	RunnableTaskSamples int `json:"runnable_task_samples"`
	// TopProcesses are the job's busiest processes over the window, most
	// CPU time first (at most a handful; processes that used none are left
	// out). Only processes present at both ends of the window are counted.
	TopProcesses []JobProcess `json:"top_processes,omitempty"`
}

// JobProcess is one of the job's processes and the CPU time it used over the
// window (/proc/PID/stat utime+stime at the window's two ends).
type JobProcess struct {
	PID int32 `json:"pid"`
	// Comm is /proc/PID/stat's command name as read: untrusted (the user
	// chooses it), escape it before printing.
	Comm       string  `json:"comm"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// SeenSeconds is the part of the window CPUSeconds was measured over
	// when the process started after the window did (a DataLoader worker
	// forked mid-window); 0 is the whole window.
	SeenSeconds float64 `json:"seen_seconds,omitempty"`
	// Threads is /proc/PID/status Threads: at the window's end, 0 if not read.
	Threads int `json:"threads,omitempty"`
}

// JobMemory is the job's memory on this node at the window's end.
type JobMemory struct {
	UsedBytes uint64 `json:"used_bytes"`
	// PeakBytes is memory.peak / memory.max_usage_in_bytes, nil where absent.
	PeakBytes *uint64 `json:"peak_bytes,omitempty"`
	// LimitBytes is memory.max / memory.limit_in_bytes; nil = no limit.
	LimitBytes *uint64 `json:"limit_bytes,omitempty"`
	HighBytes  *uint64 `json:"high_bytes,omitempty"`
	// SwapBytes is memory.swap.current (v2) or memsw - mem usage (v1).
	SwapBytes *uint64 `json:"swap_bytes,omitempty"`
	// Events are the cgroup's counters since the job started, as the kernel
	// names them: memory.events (v2: low, high, max, oom, oom_kill) or
	// memory.oom_control's oom_kill and memory.failcnt (v1).
	Events map[string]uint64 `json:"events,omitempty"`
	// PressureSomeSeconds is memory.pressure "some" total over the window.
	PressureSomeSeconds *float64 `json:"pressure_some_seconds,omitempty"`
}

// JobIO is the job's reads over the window and how its tasks waited.
type JobIO struct {
	// Ticks is how many times the tasks' states were read; DStateTaskSamples
	// counts, over all ticks, tasks in state D (uninterruptible sleep: mostly
	// waiting for storage or a network filesystem).
	Ticks             int `json:"ticks"`
	TaskSamples       int `json:"task_samples"`
	DStateTaskSamples int `json:"d_state_task_samples"`
	// ReadBytes is /proc/PID/io rchar over the window (every read(2), page
	// cache and network filesystems included); StorageReadBytes is
	// read_bytes (what reached a block device).
	ReadBytes        uint64 `json:"read_bytes"`
	StorageReadBytes uint64 `json:"storage_read_bytes"`
	// PressureSomeSeconds is io.pressure "some" total over the window.
	PressureSomeSeconds *float64 `json:"pressure_some_seconds,omitempty"`
	// Filesystems are where the tasks' open regular files live, with the
	// bytes read through them over the window (fdinfo pos advances).
	Filesystems []JobFilesystem `json:"filesystems,omitempty"`
}

// JobFilesystem is one mount the job reads from.
type JobFilesystem struct {
	Type       string `json:"type"`
	MountPoint string `json:"mount_point"`
	Source     string `json:"source,omitempty"`
	OpenFiles  int    `json:"open_files"`
	ReadBytes  uint64 `json:"read_bytes"`
}

// CPUs is how many CPUs the process kept busy over the part of a window of
// w seconds it was seen in, and that part's length.
func (p JobProcess) CPUs(w float64) (cpus, seen float64) {
	seen = w
	if p.SeenSeconds > 0 && p.SeenSeconds < w {
		seen = p.SeenSeconds
	}
	if seen <= 0 {
		return 0, 0
	}
	return p.CPUSeconds / seen, seen
}

// JobHang is the process side of `gpuprobe job --hang`: the job's rank
// processes on this node over the window. The GPU side is JobPerf.GPUs.
type JobHang struct {
	// Ticks is how many times the processes were read.
	Ticks int `json:"ticks"`
	// Ranks are the job's rank processes: the processes NVML runs on one
	// of the job's GPUs, and the processes whose environment holds
	// SLURM_PROCID and whose parent is not one of the job's processes (the
	// tasks slurmstepd started).
	Ranks []HangRank `json:"ranks"`
	// RAS is what NCCL's RAS said of the job, or why it did not answer
	// (nil: not asked).
	RAS *HangRAS `json:"ras,omitempty"`
	// RASStart is RAS asked at the start of the window, and RAS at its
	// end: a collective count that lags at both and did not move is not
	// progressing; one that moved is a slow rank (nil: asked once, or not).
	RASStart *HangRAS `json:"ras_start,omitempty"`
	// PySpy is the py-spy executable used for the Python stacks, and
	// PySpyError why none was (py-spy not installed in the directories
	// searched, not root-owned); both empty when no rank runs python.
	PySpy      string `json:"py_spy,omitempty"`
	PySpyError string `json:"py_spy_error,omitempty"`
}

// HangRAS is NCCL's RAS (NCCL 2.24+) status of the job, asked on the node's
// loopback RAS port with NCCL's text protocol (src/ras/client.cc) and parsed
// from its text report (src/ras/client_support.cc). Every string came from
// whatever listened on the port: untrusted, escape it before printing.
type HangRAS struct {
	// Addr is the host:port asked ("" when none was valid); AddrFrom says
	// where it came from ("default", "NCCL_RAS_ADDR of pid 4121").
	Addr     string `json:"addr,omitempty"`
	AddrFrom string `json:"addr_from,omitempty"`
	// Answered: the port answered the handshake ("SERVER PROTOCOL n");
	// Protocol is n. Error says why there is no (complete) answer:
	// refused, not loopback, a deadline, the size cap.
	Answered bool `json:"answered"`
	// ListenerUID owns the socket listening on Addr (/proc/net/tcp{,6};
	// "" not found or not looked up: simulation); JobUID is the job's
	// tasks' real UID. A port on loopback can be any user's.
	ListenerUID string `json:"listener_uid,omitempty"`
	JobUID      string `json:"job_uid,omitempty"`
	Protocol    int    `json:"protocol,omitempty"`
	Error       string `json:"error,omitempty"`
	// Seconds is how long the query took; Bytes how much text came back,
	// Truncated whether it stopped at the size cap.
	Seconds   float64 `json:"seconds"`
	Bytes     int     `json:"bytes"`
	Truncated bool    `json:"truncated,omitempty"`
	// NCCLVersion is the report's "NCCL version" line.
	NCCLVersion string `json:"nccl_version,omitempty"`
	// Nodes, Processes and GPUs are the job summary's totals (0: not read).
	Nodes     int `json:"nodes,omitempty"`
	Processes int `json:"processes,omitempty"`
	GPUs      int `json:"gpus,omitempty"`
	// Groups are the rows of the communicators table.
	Groups []RASGroup `json:"groups,omitempty"`
	// Unresponsive are the job processes RAS is missing communicator data
	// from (Errors, INCOMPLETE); Dead those it considers dead (DEAD);
	// MissingProcesses / DeadProcesses are the counts RAS gave (it lists
	// the processes only when they are few).
	Unresponsive     []RASProcess `json:"unresponsive,omitempty"`
	MissingProcesses int          `json:"missing_processes,omitempty"`
	Dead             []RASProcess `json:"dead,omitempty"`
	DeadProcesses    int          `json:"dead_processes,omitempty"`
	// Comms are the communicators RAS reports a problem with
	// (INCOMPLETE, ERROR, MISMATCH blocks).
	Comms []RASComm `json:"comms,omitempty"`
	// Timeouts is the TIMEOUT warning's count of communication timeouts.
	Timeouts int `json:"timeouts,omitempty"`
	// Unparsed counts the lines the parser did not recognise.
	Unparsed int `json:"unparsed,omitempty"`
}

// RASGroup is one row of RAS's communicators table.
type RASGroup struct {
	Group        int    `json:"group"`
	Comms        int    `json:"comms"`
	Nodes        int    `json:"nodes"`
	RanksPerNode string `json:"ranks_per_node"`
	RanksPerComm int    `json:"ranks_per_comm"`
	RanksInGroup int    `json:"ranks_in_group"`
	Status       string `json:"status"`
	Errors       string `json:"errors"`
}

// RASProcess is a job process RAS names: "Process 3487984 on node
// 172.16.64.213 managing GPU 5". Local is set when Node is one of this
// node's own addresses.
type RASProcess struct {
	PID   int    `json:"pid"`
	Node  string `json:"node"`
	GPUs  string `json:"gpus"`
	Local bool   `json:"local,omitempty"`
}

// RASComm is one communicator block of RAS's Errors or Warnings:
// "#0-0 (cf264af53edbe986) INCOMPLETE".
type RASComm struct {
	ID   string `json:"id"`
	Hash string `json:"hash"`
	Kind string `json:"kind"`
	// MissingRanks is "Missing communicator data from N ranks"; Missing
	// the ranks RAS lists.
	MissingRanks int       `json:"missing_ranks,omitempty"`
	Missing      []RASRank `json:"missing,omitempty"`
	// Splits are the ways its ranks disagree ("different status",
	// "different AllReduce operation counts", "Asynchronous errors").
	Splits []RASSplit `json:"splits,omitempty"`
}

// RASSplit is one disagreement of a communicator's ranks, with the groups
// RAS counted ("26 ranks have launched up to operation 6650").
type RASSplit struct {
	What   string         `json:"what"`
	Groups []RASRankGroup `json:"groups"`
}

// RASRankGroup is ranks that share a value: Ranks is RAS's count, Listed
// the ranks it printed (it prints the outliers only). Op is the operation
// count for an operation-count split (-1 otherwise; 0: none launched).
type RASRankGroup struct {
	Ranks  int       `json:"ranks"`
	Value  string    `json:"value"`
	Op     int64     `json:"op"`
	Listed []RASRank `json:"listed,omitempty"`
}

// RASRank is "Rank 12 -- GPU 4 managed by process 323032 on node
// 10.137.190.124"; PID 0 and Node "" when RAS had no process information.
type RASRank struct {
	Rank  int    `json:"rank"`
	GPU   string `json:"gpu,omitempty"`
	PID   int    `json:"pid,omitempty"`
	Node  string `json:"node,omitempty"`
	Local bool   `json:"local,omitempty"`
}

// HangRank is one rank process over the window.
type HangRank struct {
	PID int32 `json:"pid"`
	// Rank is SLURM_PROCID from the process's environment ("" where the
	// environment was unreadable or lacks it).
	Rank string `json:"rank,omitempty"`
	// Comm is /proc/PID/stat's command name: untrusted, escape it.
	Comm string `json:"comm"`
	// GPUs are the job GPUs (NVML indexes) NVML lists the process on.
	GPUs []int `json:"gpus,omitempty"`
	// States is the process's /proc/PID/stat state letter at each tick it
	// was read ("RRSR"); Exited is set when it was read at one tick and
	// gone at a later one.
	States string `json:"states"`
	Exited bool   `json:"exited,omitempty"`
	// Wchan is /proc/PID/wchan at the last tick it was read: the kernel
	// function the process sleeps in ("" running, or unreadable).
	Wchan string `json:"wchan,omitempty"`
	// Threads is how many of its threads were read at the last tick;
	// DThreads how many of them were in state D (uninterruptible sleep),
	// and DWchans the distinct functions those wait in.
	Threads  int      `json:"threads"`
	DThreads int      `json:"d_threads"`
	DWchans  []string `json:"d_wchans,omitempty"`
	// DTicks counts the ticks at which the process or one of its threads
	// was in state D.
	DTicks int `json:"d_ticks"`
	// CPUSeconds is utime+stime over the part of the window it was seen
	// in, SeenSeconds.
	CPUSeconds  float64 `json:"cpu_seconds"`
	SeenSeconds float64 `json:"seen_seconds"`
	// Mounts are the filesystems it holds regular files open on at the
	// last tick it was read (at most 8).
	Mounts []HangMount `json:"mounts,omitempty"`
	// NCCLRASAddr and NCCLRASEnable are NCCL_RAS_ADDR and NCCL_RAS_ENABLE
	// from its environment as read (the job's text: untrusted; at most 64
	// bytes kept; "" absent or unreadable).
	NCCLRASAddr   string `json:"nccl_ras_addr,omitempty"`
	NCCLRASEnable string `json:"nccl_ras_enable,omitempty"`
	// KernelStack is the top frames of /proc/PID/stack (its main thread's
	// kernel stack) at the last tick it was read, innermost first, each a
	// function and, for a module's, the module: "rpc_wait_bit_killable
	// [sunrpc]". Empty: unreadable (root only) or running in user space.
	KernelStack []string `json:"kernel_stack,omitempty"`
	// DStacks are the distinct kernel stacks of its other threads in D at
	// that tick (at most 8, their top frames).
	DStacks [][]string `json:"d_stacks,omitempty"`
	// Exe is /proc/PID/exe as read (untrusted: a path the job chose; ""
	// unreadable).
	Exe string `json:"exe,omitempty"`
	// NCCLLibrary says whether a libnccl shared object is mapped into the
	// process (/proc/PID/maps, read once): NCCLLoaded, NCCLNotLoaded, or
	// "" not known (maps unreadable, as for another user's process without
	// root; cut at its size cap before a match; not read). Mapped is not
	// in use: a PyTorch process maps libnccl.so.2 at import, before any
	// communicator exists. Not mapped is proof it runs no NCCL. No path
	// from maps is kept.
	NCCLLibrary string `json:"nccl_library,omitempty"`
	// Python is the main thread's Python stack from `py-spy dump`, asked
	// only of a rank whose executable is python* (nil: not asked, or
	// py-spy absent: JobHang.PySpyError says so).
	Python *HangPython `json:"python,omitempty"`
}

// HangRank.NCCLLibrary's values ("" is not known).
const (
	NCCLLoaded    = "loaded"
	NCCLNotLoaded = "not-loaded"
)

// HangPython is what `py-spy dump --pid PID --nonblocking` said of a rank.
type HangPython struct {
	// Thread is the thread dumped (its id and name: "4121 MainThread");
	// Status py-spy's (idle, active, active+gil).
	Thread string `json:"thread,omitempty"`
	Status string `json:"status,omitempty"`
	// Frames are its innermost frames, as py-spy prints them
	// ("all_reduce (torch/distributed/distributed_c10d.py:2501)"; the
	// process's own names: untrusted), at most 12; MoreFrames counts the
	// rest.
	Frames     []string `json:"frames,omitempty"`
	MoreFrames int      `json:"more_frames,omitempty"`
	// Error says why there is no stack (a deadline, the output cap, py-spy's
	// own error); Seconds is how long py-spy ran.
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"`
}

// HangMount is a filesystem a rank holds files open on.
type HangMount struct {
	Type  string `json:"type"`
	Point string `json:"point"`
}

// ProcessContainer is one process and the container runtime holding it.
type ProcessContainer struct {
	PID     uint32 `json:"pid"`
	Runtime string `json:"runtime"`
	From    string `json:"from"`
}
