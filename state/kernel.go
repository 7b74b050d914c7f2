package state

import (
	"time"

	"github.com/gpuprobe/gpuprobe/internal/busid"
)

// Kernel is the kernel's part of the node state.
type Kernel struct {
	// XIDSource says where XIDs were read from ("/dev/kmsg", "simulated").
	XIDSource string     `json:"xid_source,omitempty"`
	XIDs      []XIDEvent `json:"xids"`
	// SXIDs are NVSwitch errors from the same log (HGX/DGX baseboards).
	SXIDs []SXIDEvent `json:"sxids,omitempty"`
	// PCIeFatal are uncorrectable PCIe errors whose AER recovery failed,
	// from the same log.
	PCIeFatal []PCIeFatalEvent `json:"pcie_fatal,omitempty"`
	// InitFailures are the driver's reports that it could not initialise a
	// GPU it had probed ("NVRM: GPU 0000:01:00.0: RmInitAdapter failed!
	// (0x22:0x56:894)"), one per GPU and driver load, from the same log.
	InitFailures []InitFailureEvent `json:"init_failures,omitempty"`
	// GSPTimeouts are the driver's "GSP Timeout" banners, one per GPU (as
	// the driver numbers it) and driver load, from the same log: the
	// driver prints one just before the Xid it logs for a GSP RPC timeout.
	GSPTimeouts []GSPTimeoutEvent `json:"gsp_timeouts,omitempty"`
	// XIDError is why the log could not be read (no permission, ...). A
	// check must report it, never treat an unreadable log as a clean one.
	XIDError string `json:"xid_error,omitempty"`
	// XIDDenied says the log was refused for lack of permission, and
	// ReaderUID is the effective uid that asked: an ordinary user in a job
	// step cannot read it where kernel.dmesg_restrict=1 (Debian and Ubuntu's
	// default), which says nothing about the node.
	XIDDenied bool `json:"xid_denied,omitempty"`
	ReaderUID *int `json:"reader_uid,omitempty"`
	// DriverLoads is how many times the log shows the driver being loaded
	// ("NVRM: loading NVIDIA UNIX ... Kernel Module"); each event's
	// DriverLoad says how many of those came before it.
	DriverLoads int `json:"driver_loads,omitempty"`
	// ModuleVersion is the nvidia.ko version from /proc/driver/nvidia/version.
	ModuleVersion string  `json:"module_version,omitempty"`
	ModuleError   string  `json:"module_error,omitempty"`
	UptimeSeconds float64 `json:"uptime_seconds,omitempty"`
}

// XIDEvent is one XID (or "fallen off the bus") report.
type XIDEvent struct {
	// Code is the XID number; 0 for a "fallen off the bus" line without one.
	Code int `json:"code"`
	// BusID is the PCI address as the driver printed it, normalised to
	// "0000:1b:00" (domain:bus:device, no function).
	BusID string `json:"bus_id,omitempty"`
	// Instance is the MIG instance the driver attributed the Xid to, as it
	// printed it after the address ("GPU-I:01 GPU-CI:00", "GPU-I:02");
	// empty when the line names none.
	Instance string `json:"instance,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Process  string `json:"process,omitempty"`
	Message  string `json:"message"`
	// Registers are the hex words the line ends with in parentheses, as
	// logged ("(0x0409a0c2 0x00000008 0x0 ...)"): NVLink Xids 74 and
	// 144-150 print their interrupt registers so (for 144-150: IntrInfo,
	// Error Status, then errorDebugData). check decodes them.
	Registers []uint32 `json:"registers,omitempty"`
	// DriverVersion is the driver version of the last driver load the log
	// showed before this line ("NVRM: loading NVIDIA UNIX ... Kernel
	// Module  550.54.15 ..."); empty when the log shows none.
	DriverVersion string `json:"driver_version,omitempty"`
	// DriverLoad is how many driver loads the log showed before this line
	// (see Kernel.DriverLoads): the line's place in the log's load order.
	DriverLoad int `json:"driver_load,omitempty"`
	// Time is when the kernel logged it (zero when the source had no time).
	Time time.Time `json:"time,omitempty"`
	// Seq is the kernel's record sequence number, for de-duplication.
	Seq uint64 `json:"seq,omitempty"`
}

// MatchGPU reports whether an event names the GPU at pciBusID: the kernel
// prints the slot ("0000:1b:00"), NVML the function ("00000000:1B:00.0").
func (e XIDEvent) MatchGPU(pciBusID string) bool {
	return e.BusID != "" && busid.SameSlot(e.BusID, pciBusID)
}

// SXIDEvent is one NVSwitch error line ("nvidia-nvswitch3: SXid
// (PCI:0000:05:00.0): 12028, Non-fatal, ...").
type SXIDEvent struct {
	Code int `json:"code"`
	// Device is the driver's name for the switch ("nvswitch3"); BusID its
	// PCI address as printed.
	Device string `json:"device,omitempty"`
	BusID  string `json:"bus_id,omitempty"`
	// Severity is the driver's own word: "fatal", "non-fatal", or "" when
	// the line carries none.
	Severity string    `json:"severity,omitempty"`
	Message  string    `json:"message,omitempty"`
	Time     time.Time `json:"time,omitempty"`
	Seq      uint64    `json:"seq,omitempty"`
	// DriverLoad is how many driver loads the log showed before this line.
	DriverLoad int `json:"driver_load,omitempty"`
}

// PCIeFatalEvent is a kernel AER line saying recovery from an uncorrectable
// PCIe error failed (drivers/pci/pcie/err.c: "AER: can't recover (...)" on
// the device, "AER: device recovery failed" on the port that reported it).
type PCIeFatalEvent struct {
	// Device is the function the error was on ("0000:01:00.0"): the line's
	// own when a device driver printed it; on a port's line, the device
	// whose "can't recover" line came just before it (the nvidia one when
	// there are several), else the one the port last reported ("AER:
	// Uncorrected (Fatal) error received: 0000:01:00.0"); empty when the
	// log does not say.
	Device string `json:"device,omitempty"`
	// Port is the reporting port when the line was the port's.
	Port string `json:"port,omitempty"`
	// Driver is the driver name the kernel printed the line with
	// ("nvidia", "pcieport", "snd_hda_intel", "xhci_hcd").
	Driver string `json:"driver,omitempty"`
	// DeviceDriver, on a port's line, is the driver of the device the port
	// failed on, from that device's own "can't recover" line just before
	// it (Linux reports each device below the port, then the port's
	// verdict: drivers/pci/pcie/err.c); empty when no such line names it.
	DeviceDriver string `json:"device_driver,omitempty"`
	Message      string `json:"message"`
	// DriverLoad is how many NVIDIA driver loads the log showed before it.
	DriverLoad int       `json:"driver_load,omitempty"`
	Time       time.Time `json:"time,omitempty"`
}

// GSPTimeoutEvent is the driver's "GSP Timeout" banner for one GPU
// ("NVRM: GPU6 _kgspLogRpcTimeout: ****... GSP Timeout ****..."):
// open-gpu-kernel-modules src/nvidia/src/kernel/gpu/gsp/kernel_gsp.c
// (_kgspLogRpcTimeout; _kgspLogXid119 in older drivers) prints it and then
// the timeout's Xid line (119 GSP_RPC_TIMEOUT, or 175 MEMORY_SUBSYSTEM_ERROR
// on R595). The banner names no PCI address.
type GSPTimeoutEvent struct {
	// GPU is the driver's own name for the GPU, as the line prints it
	// ("GPU6": its instance number, no PCI address); empty when the line
	// names none (drivers before the prefix).
	GPU string `json:"gpu,omitempty"`
	// Lines counts the banners.
	Lines int `json:"lines"`
	// DriverLoad is how many driver loads the log showed before the first
	// banner (see Kernel.DriverLoads).
	DriverLoad int `json:"driver_load,omitempty"`
	// Time is when the last banner was logged (zero when the source had no
	// time).
	Time time.Time `json:"time,omitempty"`
}

// InitFailureEvent is the driver failing to initialise one GPU: RM's
// "RmInitAdapter failed! (...)" line and the "rm_init_adapter failed,
// device minor number N" line after it (kernel-open/nvidia/nv.c
// nv_start_device), on every open that tried. A success is not logged.
type InitFailureEvent struct {
	// BusID is the function the lines name ("0000:01:00.0"); empty when
	// they name none (drivers before the "GPU <bus>:" prefix).
	BusID string `json:"bus_id,omitempty"`
	// Message is the first line's text from "RmInitAdapter" on
	// ("RmInitAdapter failed! (0x22:0x56:894)").
	Message string `json:"message"`
	// Lines counts the RmInitAdapter lines (a log holding only the
	// rm_init_adapter line counts that one).
	Lines int `json:"lines"`
	// Minors are the device minor numbers (/dev/nvidiaN) the lines name
	// where they name no GPU (older drivers: "rm_init_adapter failed for
	// device bearing minor number 0"), ascending; NVML's minor numbers
	// (GPU.Minor) map them to GPUs.
	Minors []int `json:"minors,omitempty"`
	// DriverLoad is how many driver loads the log showed before the first
	// line (see Kernel.DriverLoads).
	DriverLoad int `json:"driver_load,omitempty"`
	// Time is when the last line was logged (zero when the source had no
	// time).
	Time time.Time `json:"time,omitempty"`
}
