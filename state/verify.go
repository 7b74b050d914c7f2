package state

import "time"

// Verify is what `gpuprobe verify` measured on the node's GPUs, or what a
// saved benchmark output (nccl-tests, nvbandwidth, dcgmi diag) read with
// `verify --from` says was measured. Plain facts: what each figure means
// against the platform's expectation is check/verify*.go's.
type Verify struct {
	// Source is "measured" for a run of gpuprobe verify, or the tool whose
	// output was read: "nccl-tests", "nvbandwidth", "dcgmi-diag".
	Source string `json:"source"`
	// File is the file a --from run read; empty when measured.
	File string `json:"file,omitempty"`
	// Tier is "quick" or "default" for a measured run.
	Tier string `json:"tier,omitempty"`
	// Started and Took bound the run (zero for --from).
	Started time.Time     `json:"started,omitempty"`
	Took    time.Duration `json:"took_ns,omitempty"`
	// Driver says how the CUDA driver API was reached: "libcuda.so.1
	// (driver 550.54.15, CUDA 12.4)", "simulated", or why it could not be
	// ("libcuda.so.1 not found: no NVIDIA driver on this machine").
	Driver string `json:"driver,omitempty"`
	// Error is set when verify could not run at all; the measurements then
	// hold what was measured before it stopped.
	Error string `json:"error,omitempty"`
	// Devices are the GPUs the run used, as the CUDA driver names them.
	Devices []VerifyDevice `json:"devices,omitempty"`
	// Measurements are the figures, one per kind × GPU (× peer).
	Measurements []Measurement `json:"measurements,omitempty"`
	// Refused names GPUs verify would not touch, and why (another user's
	// processes on it).
	Refused []string `json:"refused,omitempty"`
	// Notes carry what a --from parser read that bears on the verdict but
	// is not a figure ("every process reports nranks 1: built without MPI").
	Notes []string `json:"notes,omitempty"`
	// From is what a --from output says beyond its figures (state/verifyfrom.go).
	From *FromRun `json:"from,omitempty"`
}

// VerifyDevice is one GPU as the CUDA driver API enumerates it.
type VerifyDevice struct {
	// Ordinal is the CUDA device ordinal in this process.
	Ordinal int `json:"ordinal"`
	// Index is the NVML index of the same GPU (matched by PCI bus id); -1
	// when it could not be matched.
	Index    int    `json:"index"`
	Name     string `json:"name,omitempty"`
	PCIBusID string `json:"pci_bus_id,omitempty"`
	// TotalMemory is in bytes.
	TotalMemory uint64 `json:"total_memory,omitempty"`
}

// Measurement kinds.
const (
	MeasureH2D     = "h2d"     // pinned host → device copy, GB/s
	MeasureD2H     = "d2h"     // device → pinned host copy, GB/s
	MeasureD2D     = "d2d"     // device-local copy, GB/s of bytes copied, counted once as nvbandwidth's device_local_copy does (HBM moves twice that)
	MeasurePeer    = "peer"    // GPU → GPU copy, GB/s, unidirectional
	MeasureCompute = "compute" // FMA loop, TFLOP/s, with the load watch
	MeasureMemTest = "memtest" // write/read-back/compare, Mismatches
	MeasureBusBW   = "bus_bw"  // nccl-tests bus bandwidth at one size, GB/s
	MeasureDiag    = "diag"    // one dcgmi diag test line
)

// Measurement is one figure.
type Measurement struct {
	Kind string `json:"kind"`
	// GPU is the NVML index (VerifyDevice.Index) the figure is about; -1
	// for a figure about no single GPU (an nccl-tests run).
	GPU int `json:"gpu"`
	// Peer is the destination GPU of a peer copy; -1 otherwise.
	Peer int `json:"peer"`
	// Path is how a peer copy travelled as the driver reports it: "p2p"
	// (direct; NVLink or PCIe is the topology's word, which check/ reads
	// from the node state) or "p2p-unsupported" (cuDeviceCanAccessPeer said
	// no: staged through the host), or a --from tool's test name
	// ("all_reduce_perf", "host_to_device_memcpy_ce").
	Path string `json:"path,omitempty"`
	// Bytes is the transfer size per iteration; Iterations how many.
	Bytes      int64 `json:"bytes,omitempty"`
	Iterations int   `json:"iterations,omitempty"`
	// Value is the figure in Unit ("GB/s" = 1e9 bytes/s, "TFLOP/s").
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
	// Mismatches counts words that read back wrong (memtest).
	Mismatches int64 `json:"mismatches,omitempty"`
	// Load is what NVML showed during a compute load; nil when not watched.
	Load *LoadWatch `json:"load,omitempty"`
	// Status is a --from tool's own verdict for the line ("Pass", "Fail",
	// "Skip", "Warn"), kept as printed.
	Status string `json:"status,omitempty"`
	// Error is why this figure could not be measured ("cuMemcpyPeer:
	// deadline 5s exceeded"); Value is then meaningless.
	Error string `json:"error,omitempty"`
}

// LoadWatch is what NVML showed for one GPU while verify loaded it.
type LoadWatch struct {
	Samples int `json:"samples"`
	// MinSMClockMHz and MaxSMClockMHz over the samples; MaxClockMHz is the
	// GPU's maximum SM clock (0 when unknown).
	MinSMClockMHz uint32  `json:"min_sm_clock_mhz"`
	MaxSMClockMHz uint32  `json:"max_sm_clock_mhz"`
	MaxClockMHz   uint32  `json:"max_clock_mhz,omitempty"`
	MaxPowerW     float64 `json:"max_power_w"`
	MaxTempC      uint32  `json:"max_temp_c"`
	// ThrottleReasons is the OR of the clock event reasons seen (nvml.h
	// nvmlClocksEventReason* bits) across the samples.
	ThrottleReasons uint64 `json:"throttle_reasons"`
	// ECCDelta is the increase in volatile uncorrected ECC errors over the
	// load; -1 when it could not be read.
	ECCDelta int64 `json:"ecc_delta"`
	// XIDs are the Xid codes the kernel logged for this GPU during the load.
	XIDs []int `json:"xids,omitempty"`
	// Lost says the GPU stopped answering during the load (GPU_IS_LOST).
	Lost bool `json:"lost,omitempty"`
	// ReadError names what could not be read during the watch.
	ReadError string `json:"read_error,omitempty"`
}
