package slurmstate

// State is everything the Slurm collector found on a node, as plain data: it
// lands in the node state under "slurm" and the checks judge it.
type State struct {
	// NodeName is this node's Slurm name (SLURMD_NODENAME, else the short
	// host name) and NodeNameFrom says which.
	NodeName     string `json:"node_name"`
	NodeNameFrom string `json:"node_name_from"`
	// InJob is true inside a job step's task; JobReason says why (or why not),
	// including "forced by --job".
	InJob     bool   `json:"in_job"`
	JobReason string `json:"job_reason"`

	Env  *Env  `json:"env,omitempty"`
	Task *Task `json:"task,omitempty"`
	Conf *Conf `json:"conf,omitempty"`

	// Devices are the GPU device files (gres.conf File=, /dev/nvidia*) as
	// this task sees them: a device cgroup answers EPERM on open.
	Devices []DeviceFile `json:"devices,omitempty"`
	// GPUCPUs are kept for snapshots of gpuprobe before 0.2, which read
	// local_cpulist here as well as in the topology; the checks now take it
	// from the topology. The CPUs local to each GPU from sysfs, which unlike NVML's
	// answer is not narrowed to the task's cpuset.
	GPUCPUs []GPUCPUs `json:"gpu_cpus,omitempty"`
	// Processes are the compute processes NVML listed, with their owners.
	Processes []Process `json:"gpu_processes,omitempty"`
	Host      *Host     `json:"host,omitempty"`

	// Errors are problems of the collection itself (unreadable files).
	Errors []string `json:"errors,omitempty"`
}

// Task is this process as the kernel sees it.
type Task struct {
	PID  int    `json:"pid"`
	UID  int    `json:"uid"`
	User string `json:"user,omitempty"`
	// CPUs is the sched_getaffinity mask, as a list.
	CPUs []int `json:"cpus"`
	// PIDNamespace is the task's PID namespace as /proc/self/ns/pid names
	// it ("pid:[4026531836]"); empty when unread. NVML reports the host's
	// PIDs (the initial namespace's, InitPIDNamespace): in another
	// namespace (a Docker, Podman or Kubernetes container without
	// --pid=host) they are not this task's PIDs, and /proc here shows other
	// processes, or none, under those numbers.
	PIDNamespace string `json:"pid_namespace,omitempty"`
	// Cgroup is the task's cgroup path (v2, else the devices controller's).
	Cgroup string `json:"cgroup,omitempty"`
	// CgroupJobID is the job ID in the cgroup path (".../job_123/...").
	CgroupJobID string `json:"cgroup_job_id,omitempty"`
	// DeviceRules is the v1 devices.list of the task's cgroup; v2 keeps its
	// device rules in eBPF, so there the open() probe of Devices is the truth.
	DeviceRules []string `json:"device_rules,omitempty"`
}

// Conf is the node's Slurm configuration.
type Conf struct {
	SlurmConfPath string      `json:"slurm_conf_path"`
	SlurmConf     *SlurmConf  `json:"slurm_conf,omitempty"`
	GresConfPath  string      `json:"gres_conf_path,omitempty"`
	GresConf      *GresConf   `json:"gres_conf,omitempty"`
	CgroupConf    *CgroupConf `json:"cgroup_conf,omitempty"`
	// TopologyConf is topology.conf or topology.yaml beside slurm.conf, if any.
	TopologyConf string `json:"topology_conf,omitempty"`
	// Plugins is what slurmd's plugin directory holds of the plugins the
	// checks depend on (nil when not looked at).
	Plugins *Plugins `json:"plugins,omitempty"`
	// Missing lists the files looked for and not found.
	Missing []string `json:"missing,omitempty"`
	// Unreadable lists the files that are there (or were named) but could
	// not be read: a permission error, over the size limit, a timeout, a
	// directory. The Slurm checks are an error then, never "not a Slurm node".
	Unreadable []FileError `json:"unreadable,omitempty"`
}

// Plugins is what the collector found in slurmd's plugin directory.
type Plugins struct {
	// Dirs are the directories looked in: slurm.conf's PluginDir= list, or
	// else the distributions' default plugin directories that exist here.
	Dirs []string `json:"dirs,omitempty"`
	// From is "PluginDir" (slurm.conf) or "default".
	From string `json:"from"`
	// GPUNVML is whether slurmd has gpu_nvml.so, the plugin AutoDetect=nvml
	// loads: "yes", "no", or "unknown" (no plugin directory found, one could
	// not be read, or two candidate defaults disagree); Why says why.
	GPUNVML string `json:"gpu_nvml"`
	// GPUNVMLPath is where gpu_nvml.so was found.
	GPUNVMLPath string `json:"gpu_nvml_path,omitempty"`
	Why         string `json:"why,omitempty"`
}

// UnreadableFile returns the entry of Unreadable for path, if any.
func (c *Conf) UnreadableFile(path string) (FileError, bool) {
	for _, e := range c.Unreadable {
		if e.Path == path {
			return e, true
		}
	}
	return FileError{}, false
}

// FileError is a file that could not be read and why.
type FileError struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// DeviceFile is one device node and whether this task may open it.
type DeviceFile struct {
	Path  string `json:"path"`
	Exist bool   `json:"exists"`
	// Char is false for a regular file, which Slurm refuses as a GRES file.
	Char  bool `json:"char"`
	Major int  `json:"major"`
	Minor int  `json:"minor"`
	// Access: "ok" (opened, or ENXIO: no driver bound, yet allowed),
	// "denied" (EPERM/EACCES: a device cgroup), "absent", "timeout", "error".
	Access string `json:"access"`
	Error  string `json:"error,omitempty"`
}

// GPUCPUs is the sysfs view of one GPU's locality.
type GPUCPUs struct {
	PCIBusID string `json:"pci_bus_id"`
	NUMANode *int   `json:"numa_node,omitempty"`
	CPUs     []int  `json:"cpus,omitempty"`
}

// Process is a compute process on a GPU, and whose it is.
type Process struct {
	GPU             int    `json:"gpu"`
	PID             uint32 `json:"pid"`
	UsedMemoryBytes uint64 `json:"used_memory_bytes"`
	UID             *int   `json:"uid,omitempty"`
	User            string `json:"user,omitempty"`
	Command         string `json:"command,omitempty"`
	// JobID is the process's Slurm job, from its environment (readable only
	// to root or its owner) or else its cgroup path; JobFrom says which.
	JobID   string `json:"job_id,omitempty"`
	JobFrom string `json:"job_from,omitempty"`
	// Gone marks a process that exited between NVML's list and /proc.
	Gone bool `json:"gone,omitempty"`
}

// Host is what the job checks need to know of the node beyond the GPUs.
type Host struct {
	// IBDevices are /sys/class/infiniband entries (mlx5_0, ...).
	IBDevices []string `json:"ib_devices"`
	// NetInterfaces are the network interface names.
	NetInterfaces []string `json:"net_interfaces"`
	// Resolved maps names (MASTER_ADDR, the first node of the job) to their
	// addresses; a name that does not resolve maps to an empty list.
	Resolved map[string][]string `json:"resolved,omitempty"`
	// ResolveErrors are lookup errors by name.
	ResolveErrors map[string]string `json:"resolve_errors,omitempty"`
	// LocalAddresses are this node's own interface addresses (without
	// prefix length), read when MASTER_ADDR is set: the first node may name
	// itself by another of its addresses (IPoIB).
	LocalAddresses []string `json:"local_addresses,omitempty"`
	// CUDARuntime is the CUDA runtime the job would load, if one was found.
	CUDARuntime *CUDARuntime `json:"cuda_runtime,omitempty"`
}

// CUDARuntime is a CUDA runtime version and where it was seen.
type CUDARuntime struct {
	Version string `json:"version"`
	From    string `json:"from"`
}

// InitPIDNamespace is the initial PID namespace's name: the kernel gives it
// the fixed inode PROC_PID_INIT_INO, 0xEFFFFFFC (include/linux/proc_ns.h).
const InitPIDNamespace = "pid:[4026531836]"
