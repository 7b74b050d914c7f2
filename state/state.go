// Package state holds the node state: plain, JSON-serialisable data that the
// collectors fill and the checks judge. Nothing here does I/O, so a saved
// snapshot can be judged anywhere and every check can be tested without hardware.
package state

import (
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"strconv"
	"time"
)

// SchemaVersion is bumped whenever a field changes meaning or is removed;
// adding a field does not bump it (readers ignore unknown fields).
const SchemaVersion = 1

// Node is everything gpuprobe knows about one node at one moment.
type Node struct {
	SchemaVersion int       `json:"schema_version"`
	Host          string    `json:"host"`
	CollectedAt   time.Time `json:"collected_at"`
	// Simulated is the --simulate spec the state came from; empty for real hardware.
	Simulated string `json:"simulated,omitempty"`
	// Capture says the state was read from a saved tool output
	// (snapshot --from-nvidia-smi), not collected by gpuprobe; nil otherwise.
	Capture *Capture `json:"capture,omitempty"`
	// Scope says the run judged only some GPUs ("SLURM_JOB_GPUS=0,1": a
	// Prolog or Epilog scoped to its job); the others, and the XIDs that
	// name them, were left out of the state. Empty: the whole node.
	Scope           string `json:"scope,omitempty"`
	GpuprobeVersion string `json:"gpuprobe_version,omitempty"`

	NVML *NVML `json:"nvml,omitempty"`
	// NCCL is what the NCCL logs given with --nccl-log show (state/nccl.go).
	NCCL *NCCLLog `json:"nccl,omitempty"`
	// Kernel is the kernel's view of the driver: XIDs, module version, uptime.
	Kernel *Kernel `json:"kernel,omitempty"`
	// Slurm is the job step's launch environment and the node's Slurm configuration.
	Slurm *slurmstate.State `json:"slurm,omitempty"`
	// Topology is the PCIe/NUMA/InfiniBand/GPUDirect view read from sysfs.
	Topology *topostate.Topology `json:"topology,omitempty"`
	// Container is the container the step runs in, as its own files and
	// environment show it (state/container.go).
	Container *Container `json:"container,omitempty"`
	// JobPerf is a running job sampled by `gpuprobe job` (state/jobperf.go).
	JobPerf *JobPerf `json:"job_perf,omitempty"`
	// Verify is what `gpuprobe verify` measured, or what a saved benchmark
	// output read with `verify --from` says (state/verify.go); nil in every
	// other run, so the verify.* checks never judge a plain `check`.
	Verify *Verify `json:"verify,omitempty"`
	// Previous is the daemon's previous cycle, for counters judged as rates
	// (state/violations.go); nil in a one-shot run.
	Previous *Previous `json:"previous,omitempty"`

	// Sources records how each collector fared, so a report can say what was
	// not looked at and why.
	Sources []Source `json:"sources,omitempty"`
}

// Capture is where a state read from a saved tool output came from, and
// what that output cannot hold.
type Capture struct {
	// Format is the tool output: "nvidia-smi -q" or "nvidia-smi -q -x".
	Format string `json:"format"`
	// File is the file it was read from ("-" for stdin).
	File string `json:"file"`
	// Timestamp is the capture's own time stamp, as printed (no time zone).
	Timestamp string `json:"timestamp,omitempty"`
	// NotCollected names the parts of the node state the format does not
	// hold ("kernel", "topology", "slurm", "nvlinks", ...): checks that need
	// them skip, never pass.
	NotCollected []string `json:"not_collected,omitempty"`
	// Unknown lists, per GPU, the values the checks read that the capture
	// leaves unknown, with what it printed instead ("" when it printed
	// nothing for them), so a skip can say why.
	Unknown []CaptureUnknown `json:"unknown,omitempty"`
	// Partial says the capture shows only some of the node's GPUs (an
	// excerpt that marks its cuts with "[...]", nvidia-smi -q -i N, a cut
	// or truncated file, a fragment without the header): only the GPU
	// blocks it shows are in the state, and the rest are not in the capture.
	Partial string `json:"partial,omitempty"`
	// AttachedGPUs is the capture's "Attached GPUs" (nvmlDeviceGetCount)
	// where it is more than the GPU blocks the capture shows; 0 otherwise,
	// and for a fragment that does not print it.
	AttachedGPUs int `json:"attached_gpus,omitempty"`
	// NVLinkFile is the saved `nvidia-smi nvlink -s` / `-e` of the same
	// node added to the capture ("" when none): the NVLink state and
	// counters come from it, and NotCollected says which of the two it
	// lacks ("nvlink_state", "nvlink_errors").
	NVLinkFile string `json:"nvlink_file,omitempty"`
}

// CaptureUnknown is one value a capture leaves unknown: the GPU (index),
// the NVML entry point the value stands for (as in GPU.Unsupported), what
// the capture printed ("N/A", "[Unknown Error]"; "" when absent) and where.
type CaptureUnknown struct {
	GPU     int    `json:"gpu"`
	Call    string `json:"call"`
	Printed string `json:"printed,omitempty"`
	Line    int    `json:"line,omitempty"`
}

// CaptureUnknownFor returns what a capture printed for a GPU's value in
// place of it, or nil when the state is no capture or has no record.
func (n *Node) CaptureUnknownFor(gpu int, call string) *CaptureUnknown {
	if n == nil || n.Capture == nil {
		return nil
	}
	for i := range n.Capture.Unknown {
		if u := &n.Capture.Unknown[i]; u.GPU == gpu && u.Call == call {
			return u
		}
	}
	return nil
}

// Lacks reports whether the node state came from a capture that cannot hold
// part (a name from Capture.NotCollected).
func (n *Node) Lacks(part string) bool {
	if n == nil || n.Capture == nil {
		return false
	}
	for _, p := range n.Capture.NotCollected {
		if p == part {
			return true
		}
	}
	return false
}

// Source is one collector's outcome.
type Source struct {
	Name            string  `json:"name"`
	OK              bool    `json:"ok"`
	DurationSeconds float64 `json:"duration_seconds"`
	Error           string  `json:"error,omitempty"`
}

// NVML is what the NVML collector saw.
type NVML struct {
	// Available is false when the library could not be loaded or initialised;
	// Error then carries the loader's own message.
	Available         bool        `json:"available"`
	Error             string      `json:"error,omitempty"`
	DriverVersion     string      `json:"driver_version,omitempty"`
	NVMLVersion       string      `json:"nvml_version,omitempty"`
	CUDADriverVersion string      `json:"cuda_driver_version,omitempty"`
	DeviceCount       int         `json:"device_count"`
	GPUs              []GPU       `json:"gpus"`
	Errors            []CallError `json:"errors,omitempty"`

	// Excluded are the GPUs the driver excludes (NVreg_ExcludedGpus,
	// NVreg_ExcludeAllGpus), by canonical PCI bus ID, as
	// nvmlGetExcludedDeviceCount / nvmlGetExcludedDeviceInfoByIndex list
	// them (NVML API reference, "Excluded GPU Queries"): bound to nvidia,
	// not in DeviceCount. ExcludedKnown is true only when the whole list
	// was read; false when the library lacks the entry points, answers
	// NOT_SUPPORTED, fails (the call in Errors), hangs (a timeout in
	// Errors) or names an entry without a bus ID. Not read is never "none
	// excluded": Excluded then holds only the entries that were read.
	Excluded      []string `json:"excluded,omitempty"`
	ExcludedKnown bool     `json:"excluded_known,omitempty"`
}

// CallError is an NVML call that failed for a reason other than "not supported".
type CallError struct {
	Call    string `json:"call"`
	Error   string `json:"error"`
	Timeout bool   `json:"timeout,omitempty"`
}

// GPU is one device. Pointer fields are nil when the value is unavailable:
// the call's name is then in Unsupported (the GPU or driver lacks it) or in
// Errors (the call failed or timed out).
type GPU struct {
	Index             int    `json:"index"`
	UUID              string `json:"uuid,omitempty"`
	Name              string `json:"name,omitempty"`
	Serial            string `json:"serial,omitempty"`
	PCIBusID          string `json:"pci_bus_id,omitempty"`
	Minor             *int   `json:"minor,omitempty"`
	Architecture      string `json:"architecture,omitempty"`
	ComputeCapability string `json:"compute_capability,omitempty"`

	// Lost is set when NVML answered GPU_IS_LOST: the GPU fell off the bus.
	Lost bool `json:"lost,omitempty"`
	// Unreachable is set when NVML could not even hand out a handle.
	Unreachable bool `json:"unreachable,omitempty"`
	// ResetRequired is set when NVML answered NVML_ERROR_RESET_REQUIRED to
	// any call on the GPU (nvml.h: "The GPU requires a reset before it can
	// be used again"); in a capture, when nvidia-smi printed "[GPU requires
	// reset]" for one of its values.
	ResetRequired bool `json:"reset_required,omitempty"`
	// RecoveryAction is the action the driver says the GPU needs before it
	// is used again: the field value NVML_FI_DEV_GET_GPU_RECOVERY_ACTION,
	// nvml.h's nvmlDeviceGpuRecoveryAction_t (0 none, 1 GPU reset, 2 node
	// reboot, 3 drain P2P, 4 drain P2P and reset, 5 recover the IMEX domain,
	// 6 PCIe bus reset, 7 system reboot). A capture: nvidia-smi's "GPU
	// Recovery Action", or the older "GPU Reset Status" (Reset Required: 1,
	// Drain and Reset Recommended: 4). Nil when not read (the field is then
	// in Unsupported: drivers before it, a capture without it).
	RecoveryAction *int `json:"recovery_action,omitempty"`
	// Denied is set when NVML refused the handle with NO_PERMISSION: the
	// device file is closed to this process (a job's device cgroup,
	// ConstrainDevices), which says nothing about the GPU.
	Denied bool `json:"denied,omitempty"`

	Memory          *Memory       `json:"memory,omitempty"`
	PersistenceMode *bool         `json:"persistence_mode,omitempty"`
	MIG             *MIG          `json:"mig,omitempty"`
	MIGDevices      []MIGDevice   `json:"mig_devices,omitempty"`
	ECC             *ECC          `json:"ecc,omitempty"`
	RetiredPages    *RetiredPages `json:"retired_pages,omitempty"`
	RemappedRows    *RemappedRows `json:"remapped_rows,omitempty"`
	// SRAMECC is nil when not read: nvmlDeviceGetSramEccErrorStatus is
	// then in Unsupported (pre-Ampere, a driver without the entry point)
	// or Errors (NO_PERMISSION when not root, among others).
	SRAMECC     *SRAMECC     `json:"sram_ecc,omitempty"`
	ClockEvents *ClockEvents `json:"clock_events,omitempty"`
	PCIe        *PCIe        `json:"pcie,omitempty"`
	Thermal     *Thermal     `json:"thermal,omitempty"`
	Power       *Power       `json:"power,omitempty"`
	Utilization *Utilization `json:"utilization,omitempty"`
	// PerformanceState is nvmlDeviceGetPerformanceState: 0 (P0, maximum
	// performance) to 15 (minimum); nil when not read (NVML_PSTATE_UNKNOWN
	// is not recorded).
	PerformanceState *int      `json:"performance_state,omitempty"`
	Processes        []Process `json:"processes,omitempty"`
	ProcessesKnown   bool      `json:"processes_known,omitempty"`
	// MPSProcessesKnown: nvmlDeviceGetMPSComputeRunningProcesses answered,
	// so each process's MPSClient is the driver's word (false there: not
	// an MPS client). False: the list was not read (the call is in
	// Unsupported or Errors, or a capture holds no such list), and no
	// MPSClient means anything: not "no MPS clients".
	MPSProcessesKnown bool `json:"mps_processes_known,omitempty"`
	// GraphicsProcesses are the graphics-only (type G) processes an
	// nvidia-smi capture lists (nvmlDeviceGetGraphicsRunningProcesses):
	// desktop clients such as Xorg, which hold memory without a compute
	// context. Only a capture fills it; the NVML collector lists compute
	// processes alone, and leaves it empty.
	GraphicsProcesses []Process   `json:"graphics_processes,omitempty"`
	NUMANode          *int        `json:"numa_node,omitempty"`
	CPUAffinity       string      `json:"cpu_affinity,omitempty"`
	NVLinks           []NVLink    `json:"nvlinks,omitempty"`
	Fabric            *Fabric     `json:"fabric,omitempty"`
	Unsupported       []string    `json:"unsupported,omitempty"`
	Errors            []CallError `json:"errors,omitempty"`

	// Violations are NVML's cumulative perf-policy violation times
	// (state/violations.go); empty when unsupported.
	Violations []Violation `json:"violations,omitempty"`
}

// Memory is framebuffer memory in bytes.
type Memory struct {
	TotalBytes    uint64 `json:"total_bytes"`
	UsedBytes     uint64 `json:"used_bytes"`
	FreeBytes     uint64 `json:"free_bytes"`
	ReservedBytes uint64 `json:"reserved_bytes,omitempty"`
}

// MIG is the current and pending MIG mode.
type MIG struct {
	Current bool `json:"current"`
	Pending bool `json:"pending"`
}

// MIGDevice is one MIG instance of a GPU in MIG mode: what a job sees as
// "MIG-<uuid>" in CUDA_VISIBLE_DEVICES.
type MIGDevice struct {
	UUID              string `json:"uuid"`
	GPUInstanceID     int    `json:"gpu_instance_id"`
	ComputeInstanceID int    `json:"compute_instance_id"`
	MemoryTotalBytes  uint64 `json:"memory_total_bytes,omitempty"`
}

// ECC holds the ECC mode and error counters. Counters are nil when unsupported.
type ECC struct {
	EnabledCurrent bool      `json:"enabled_current"`
	EnabledPending bool      `json:"enabled_pending"`
	Volatile       ECCCounts `json:"volatile"`
	Aggregate      ECCCounts `json:"aggregate"`
}

// ECCCounts are corrected (single-bit) and uncorrected (double-bit) totals.
type ECCCounts struct {
	Corrected   *uint64 `json:"corrected"`
	Uncorrected *uint64 `json:"uncorrected"`
}

// RetiredPages is dynamic page retirement (pre-Ampere GPUs).
type RetiredPages struct {
	SingleBitECC int  `json:"single_bit_ecc"`
	DoubleBitECC int  `json:"double_bit_ecc"`
	Pending      bool `json:"pending"`
}

// RemappedRows is row remapping (Ampere and later).
type RemappedRows struct {
	Correctable   int  `json:"correctable"`
	Uncorrectable int  `json:"uncorrectable"`
	Pending       bool `json:"pending"`
	Failure       bool `json:"failure"`
}

// ClockEvents are the active clock-event (throttle) reasons.
type ClockEvents struct {
	Mask    uint64   `json:"mask"`
	Reasons []string `json:"reasons"`
}

// PCIe is the GPU's own link.
type PCIe struct {
	CurrentGen    int     `json:"current_gen"`
	MaxGen        int     `json:"max_gen"`
	CurrentWidth  int     `json:"current_width"`
	MaxWidth      int     `json:"max_width"`
	ReplayCounter *uint64 `json:"replay_counter,omitempty"`
}

// Thermal is the GPU core temperature and the GPU's own thresholds.
type Thermal struct {
	TemperatureC int  `json:"temperature_c"`
	SlowdownC    *int `json:"slowdown_c,omitempty"`
	ShutdownC    *int `json:"shutdown_c,omitempty"`
	// MemoryTemperatureC is the field value NVML_FI_DEV_MEMORY_TEMP
	// ("Memory temperature for the device", nvml.h): HBM on data-centre
	// GPUs. Nil when not read: "NVML_FI_DEV_MEMORY_TEMP" (or the whole
	// nvmlDeviceGetFieldValues call) is then in the GPU's Unsupported or
	// Errors.
	MemoryTemperatureC *int `json:"memory_temperature_c,omitempty"`
	// MemoryMaxC is nvmlDeviceGetTemperatureThreshold with
	// NVML_TEMPERATURE_THRESHOLD_MEM_MAX ("Memory Temperature at which the
	// GPU will begin SW slowdown", nvml.h). Nil when not read (asked only
	// where the memory temperature was): the call is filed as
	// MemoryMaxThresholdCall in Unsupported or Errors.
	MemoryMaxC *int `json:"memory_max_c,omitempty"`
}

// MemoryMaxThresholdCall names the memory-max threshold read in a GPU's
// Unsupported and Errors, apart from the slowdown/shutdown thresholds the
// same entry point gives.
const MemoryMaxThresholdCall = "nvmlDeviceGetTemperatureThreshold(NVML_TEMPERATURE_THRESHOLD_MEM_MAX)"

// SRAMECC is nvmlDeviceGetSramEccErrorStatus (nvmlEccSramErrorStatus_v1_t,
// Ampere and later, root only): the GPU's on-chip SRAM error counters and
// bThresholdExceeded, "if the error threshold of field diag is exceeded"
// (nvml.h) — nvidia-smi's <sram_threshold_exceeded>.
type SRAMECC struct {
	AggregateUncParity uint64 `json:"aggregate_unc_parity"`
	AggregateUncSecDed uint64 `json:"aggregate_unc_secded"`
	AggregateCor       uint64 `json:"aggregate_cor"`
	VolatileUncParity  uint64 `json:"volatile_unc_parity"`
	VolatileUncSecDed  uint64 `json:"volatile_unc_secded"`
	VolatileCor        uint64 `json:"volatile_cor"`
	ThresholdExceeded  bool   `json:"threshold_exceeded"`
}

// TLimitThresholds turns T.Limit margins into absolute thresholds: the
// GPU is margin degrees below its T.Limit now (nvmlDeviceGetMarginTemperature,
// nvidia-smi's "GPU T.Limit Temp"), and slowdown/shutdown begin at margins
// slowAt/shutAt (NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT/_SHUTDOWN_TLIMIT,
// "GPU Slowdown T.Limit Temp"), so a threshold is current + margin - its
// margin (a real H200: 33 + 54 + 2 = 89 C, what the threshold call said). A
// nil or implausible margin leaves that threshold nil; a slowdown not below
// the shutdown leaves both nil.
func TLimitThresholds(current int, margin, slowAt, shutAt *int) (slow, shut *int) {
	plausible := func(v *int) bool { return v != nil && *v >= -200 && *v <= 200 }
	if !plausible(margin) {
		return nil, nil
	}
	abs := func(at *int) *int {
		if !plausible(at) {
			return nil
		}
		if a := current + *margin - *at; a > 0 && a < 200 {
			return &a
		}
		return nil
	}
	slow, shut = abs(slowAt), abs(shutAt)
	if slow != nil && shut != nil && *slow >= *shut {
		return nil, nil
	}
	return slow, shut
}

// Power is in watts.
type Power struct {
	DrawWatts  float64  `json:"draw_watts"`
	LimitWatts *float64 `json:"limit_watts,omitempty"`
}

// Process is a compute process NVML lists on a GPU.
type Process struct {
	PID             uint32 `json:"pid"`
	UsedMemoryBytes uint64 `json:"used_memory_bytes"`
	// UsedMemoryUnknown: the memory the process holds is not known
	// (NVML_VALUE_NOT_AVAILABLE, which nvml.h says WDDM always reports;
	// nvidia-smi prints "N/A" or "Not available in WDDM driver model").
	// UsedMemoryBytes is then 0 and means nothing.
	UsedMemoryUnknown bool `json:"used_memory_unknown,omitempty"`
	// MPSClient: NVML lists the process as an MPS client of this GPU
	// (nvmlDeviceGetMPSComputeRunningProcesses: "processes with a MPS
	// compute context"). A client the compute list does not name is in
	// Processes all the same. Meaningful only where the GPU's
	// MPSProcessesKnown is true.
	MPSClient bool `json:"mps_client,omitempty"`
	// User and Command come from the process table (empty when the process
	// is in another PID namespace or already gone). Command is the
	// executable's name ("python3"), never its arguments: any user's
	// arguments can hold tokens, and reports and drain reasons are read by
	// everyone.
	User    string `json:"user,omitempty"`
	Command string `json:"command,omitempty"`
	// CommandLine is the full command line, cut to 120 characters; only
	// collected when asked (serve --web.expose-process-details).
	CommandLine string `json:"command_line,omitempty"`
	// JobID is the Slurm job whose cgroup holds the process (the job_<id>
	// directory of Slurm's cgroup layouts in /proc/PID/cgroup, which
	// slurmstepd, not the user, sets: slurmstate.JobFromCgroup); empty
	// outside a job or when it cannot be told.
	JobID string `json:"job_id,omitempty"`
	// Container is the container runtime holding the process ("docker",
	// "podman", "kubernetes", "enroot", "apptainer"; empty when none is
	// seen) and ContainerFrom the marker: a runtime's directory in
	// /proc/PID/cgroup, else /proc/PID/root/run/.containerenv, else a
	// runtime's variable in /proc/PID/environ (collect.ProcessContainer).
	Container     string `json:"container,omitempty"`
	ContainerFrom string `json:"container_from,omitempty"`
}

// Utilization is nvmlDeviceGetUtilizationRates: percent of the driver's
// last sample period in which a kernel ran (GPU) and in which device memory
// was read or written (memory).
type Utilization struct {
	GPUPercent    uint32 `json:"gpu_percent"`
	MemoryPercent uint32 `json:"memory_percent"`
}

// NVLink is one link of a GPU.
type NVLink struct {
	Link           int     `json:"link"`
	Up             bool    `json:"up"`
	Version        int     `json:"version,omitempty"`
	RemoteType     string  `json:"remote_type,omitempty"`
	RemotePCIBusID string  `json:"remote_pci_bus_id,omitempty"`
	CRCFlitErrors  *uint64 `json:"crc_flit_errors,omitempty"`
	CRCDataErrors  *uint64 `json:"crc_data_errors,omitempty"`
	ReplayErrors   *uint64 `json:"replay_errors,omitempty"`
	RecoveryErrors *uint64 `json:"recovery_errors,omitempty"`
}

// Fabric is the NVSwitch fabric registration of a GPU.
type Fabric struct {
	// API names the NVML entry point that answered, newest first.
	API    string `json:"api"`
	State  string `json:"state"`
	Status string `json:"status"`
	// HealthMask and HealthSummary are as NVML returned them; check/
	// decodes them (nvml.h NVML_GPU_FABRIC_HEALTH_*).
	HealthMask    uint32 `json:"health_mask"`
	HealthSummary uint8  `json:"health_summary,omitempty"`
	CliqueID      uint32 `json:"clique_id"`
	ClusterUUID   string `json:"cluster_uuid,omitempty"`
}

// Label names a GPU the way every report line does: index, UUID and bus ID.
func (g *GPU) Label() string {
	s := "GPU " + strconv.Itoa(g.Index)
	if g.PCIBusID != "" {
		s += " (" + g.PCIBusID + ")"
	}
	return s
}

// ErrorFor returns the recorded error of a call, if any.
func (g *GPU) ErrorFor(call string) *CallError {
	for i := range g.Errors {
		if g.Errors[i].Call == call {
			return &g.Errors[i]
		}
	}
	return nil
}
