package check

import (
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// busNode is node() with its sysfs GPU list: NVML's two GPUs (0000:10,
// 0000:11) bound to nvidia, then the extra functions given.
func busNode(extra []topostate.PCIFunction, mut func(n *state.Node)) *state.Node {
	return node(func(n *state.Node) {
		n.Topology = &topostate.Topology{SysfsRoot: "/sys", GPUSource: "nvml",
			PCIGPUs: append([]topostate.PCIFunction{pciGPU("0000:10:00.0", "nvidia"), pciGPU("0000:11:00.0", "nvidia")}, extra...)}
		if mut != nil {
			mut(n)
		}
	})
}

// excludedList sets NVML's excluded list as read (ExcludedKnown).
func excludedList(ids ...string) func(n *state.Node) {
	return func(n *state.Node) {
		n.NVML.Excluded, n.NVML.ExcludedKnown = ids, true
	}
}

func pciGPU(bus, drv string) topostate.PCIFunction {
	return topostate.PCIFunction{BusID: bus, Vendor: "0x10de", Class: "0x030200", Driver: drv, HostBridge: "pci0000:00"}
}

// gpu.count against the PCI bus (docs/checks.md): a GPU the NVIDIA driver
// did not bring up is invisible to NVML's count, which alone passed "2 GPUs
// reachable" with a third GPU on the bus.
func TestCountPCIBus(t *testing.T) {
	rmFailed := func(n *state.Node) {
		n.Kernel = &state.Kernel{XIDs: []state.XIDEvent{}, InitFailures: []state.InitFailureEvent{
			{BusID: "0000:12:00.0", Message: "RmInitAdapter failed! (0x22:0x56:894)", Lines: 6}}}
	}
	runCases(t, checkCount, []checkCase{
		{name: "every GPU on the bus listed", node: busNode(nil, nil), status: Pass, summary: "2 GPUs reachable"},
		{name: "bound to nvidia, not listed, init failed in the log", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, rmFailed),
			status: Fail, summary: `the driver did not bring up GPU 0000:12:00.0: it is bound to nvidia, NVML does not list it, and the kernel log shows "RmInitAdapter failed! (0x22:0x56:894)" (6 line(s))`,
			remedy: "drain"},
		// An excluded GPU (NVreg_ExcludedGpus) looks the same without the
		// log's word: unknown, said so.
		{name: "bound to nvidia, not listed, nothing in the log", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, nil),
			status: Warn, summary: "GPU 0000:12:00.0 is bound to the nvidia driver but NVML does not list it: the driver failed to initialise it, or it is excluded (NVreg_ExcludedGpus); which is not known here"},
		// NVML's excluded list (nvmlGetExcludedDeviceCount): read, it
		// decides.
		{name: "bound to nvidia, not listed, excluded by the driver", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, excludedList("00000000:12:00.0")),
			status: Pass, summary: "2 GPUs reachable; GPU(s) 0000:12:00.0 excluded by the driver (NVreg_ExcludedGpus), not judged"},
		{name: "excluded wins over an old RmInitAdapter failure", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, func(n *state.Node) {
			rmFailed(n)
			excludedList("0000:12:00.0")(n)
		}), status: Pass, summary: "GPU(s) 0000:12:00.0 excluded by the driver"},
		{name: "bound to nvidia, neither listed nor excluded", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia"), pciGPU("0000:13:00.0", "nvidia")}, excludedList("0000:13:00.0")),
			status: Fail, summary: "the driver did not bring up GPU 0000:12:00.0: it is bound to nvidia, and NVML neither lists it nor has it excluded (nvmlGetExcludedDeviceCount: 1 excluded)",
			remedy: "drain; reset the GPU or reboot the node"},
		{name: "excluded list read empty", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, excludedList()),
			status: Fail, summary: "NVML neither lists it nor has it excluded (nvmlGetExcludedDeviceCount: 0 excluded)"},
		// A partial list (an entry failed) still names what it read.
		{name: "excluded list partly read: what it names is not judged", node: busNode([]topostate.PCIFunction{pciGPU("0000:13:00.0", "nvidia")}, func(n *state.Node) {
			n.NVML.Excluded = []string{"0000:13:00.0"}
		}), status: Pass, summary: "2 GPUs reachable; GPU(s) 0000:13:00.0 excluded by the driver (NVreg_ExcludedGpus), not judged"},
		{name: "excluded list partly read: the others warn", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia"), pciGPU("0000:13:00.0", "nvidia")}, func(n *state.Node) {
			n.NVML.Excluded = []string{"0000:13:00.0"}
		}), status: Warn, summary: "GPU 0000:12:00.0 is bound to the nvidia driver but NVML does not list it: the driver failed to initialise it, or it is excluded (NVreg_ExcludedGpus); which is not known here"},
		// Views that may hide GPUs from NVML: another job's GPU is no
		// finding at all (srun gpuprobe check in every ConstrainDevices
		// step would warn); the pass says what was not judged.
		{name: "list read, in a container: said, not judged", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, func(n *state.Node) {
			excludedList()(n)
			n.Container = &state.Container{Runtime: "enroot"}
		}), status: Pass, summary: "1 more GPU(s) on the bus bound to nvidia and not listed by NVML (0000:12:00.0): not judged, the enroot container may hide the node's other GPUs from NVML"},
		{name: "list read, in a Slurm job step: said, not judged", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, func(n *state.Node) {
			excludedList()(n)
			n.Slurm = &slurmstate.State{InJob: true}
		}), status: Pass, summary: "not judged, the Slurm job step's device cgroup may hide the node's other GPUs"},
		{name: "list read, a Slurm job's environment: said, not judged", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, func(n *state.Node) {
			excludedList()(n)
			n.Slurm = &slurmstate.State{Env: &slurmstate.Env{JobID: "4242"}}
		}), status: Pass, summary: "not judged, the Slurm job step's device cgroup may hide the node's other GPUs"},
		// pam_slurm_adopt: an ssh session in the job's cgroup, no SLURM_JOB_ID.
		{name: "list read, in a job's cgroup without its environment: said, not judged", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, func(n *state.Node) {
			excludedList()(n)
			n.Slurm = &slurmstate.State{Task: &slurmstate.Task{Cgroup: "/system.slice/slurmstepd.scope/job_77/step_extern", CgroupJobID: "77"}}
		}), status: Pass, summary: "not judged, Slurm job 77's cgroup (this process runs in it) may hide the node's other GPUs"},
		{name: "init failed in the log, in a job's cgroup: warn", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, func(n *state.Node) {
			rmFailed(n)
			n.Slurm = &slurmstate.State{Task: &slurmstate.Task{CgroupJobID: "77"}}
		}), status: Warn, summary: "GPU 0000:12:00.0 is bound to the nvidia driver but NVML does not list it"},
		{name: "list read, a device file denied: said, not judged", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, func(n *state.Node) {
			excludedList()(n)
			n.Slurm = &slurmstate.State{Devices: []slurmstate.DeviceFile{{Path: "/dev/nvidia2", Access: "denied"}}}
		}), status: Pass, summary: "not judged, a device cgroup (/dev/nvidia2 denied) may hide"},
		{name: "list read, scoped run: said, not judged", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, func(n *state.Node) {
			excludedList()(n)
			n.Scope = "SLURM_JOB_GPUS=0,1"
		}), status: Pass, summary: "not judged, the run's scope (SLURM_JOB_GPUS=0,1) may hide"},
		{name: "list read, scoped run, another job's GPU closed: nothing", node: busNode(nil, func(n *state.Node) {
			excludedList()(n)
			n.Scope = "SLURM_JOB_GPUS=0"
			n.NVML.GPUs[1] = state.GPU{Index: 1, Denied: true}
		}), status: Pass, summary: "1 GPUs reachable, 1 more closed to this process"},
		{name: "list read, more unmatched than NVML's GPUs without a bus ID: warn", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, func(n *state.Node) {
			excludedList()(n)
			n.NVML.GPUs[1] = state.GPU{Index: 1, Denied: true}
		}), status: Warn, summary: "NVML does not exclude it; whether it is one of NVML's GPUs without a bus ID is not known here"},
		// An excluded GPU is none of NVML's GPUs without a bus ID.
		{name: "excluded GPU is none of NVML's GPUs without a bus ID", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, func(n *state.Node) {
			excludedList("0000:12:00.0")(n)
			n.NVML.GPUs[1] = state.GPU{Index: 1, Denied: true}
		}), status: Pass, summary: "1 GPUs reachable, 1 more closed to this process (NVML: no permission; a device cgroup); GPU(s) 0000:12:00.0 excluded by the driver"},
		{name: "count short of the platform's: still fails, the exclusion said", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, excludedList("0000:12:00.0")),
			cfg: func(c *Config) { c.ExpectGPUs = 3 }, status: Fail,
			summary: "NVML sees 2 GPUs, expected 3; the driver excludes 1 GPU(s) (NVreg_ExcludedGpus: 0000:12:00.0): set expect_gpus, or lift the exclusion"},
		{name: "no driver bound", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "")}, nil),
			status: Warn, summary: "NVIDIA GPU 0000:12:00.0 on the PCI bus has no driver bound: the nvidia driver refused it at probe, or it was unbound; which cannot be told from sysfs"},
		{name: "vfio-pci is no failure", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "vfio-pci"), pciGPU("0000:13:00.0", "nouveau")}, nil),
			status: Pass, summary: "2 GPUs reachable; 1 GPU(s) bound to nouveau (0000:13:00.0), not for CUDA here; 1 GPU(s) bound to vfio-pci (0000:12:00.0), not for CUDA here"},
		{name: "a tree without links: driver unknown", node: busNode([]topostate.PCIFunction{{BusID: "0000:12:00.0", Vendor: "0x10de", Class: "0x030200"}}, nil),
			status: Pass, summary: "1 NVIDIA GPU(s) on the bus not listed by NVML (0000:12:00.0) have a driver not known here"},
		// Inside a job (ConstrainDevices) NVML lists every GPU but refuses
		// the others' handles: those GPUs have no bus ID, and the bus's
		// GPUs they are must not be called missing.
		{name: "scoped run: another job's GPU", node: busNode(nil, func(n *state.Node) {
			n.Scope = "SLURM_JOB_GPUS=0"
			n.NVML.GPUs[1] = state.GPU{Index: 1, Denied: true, Errors: []state.CallError{{Call: "nvmlDeviceGetHandleByIndex", Error: "no permission"}}}
		}), status: Pass, summary: "1 GPUs reachable, 1 more closed to this process"},
		// An unreachable GPU has no bus ID either: it is gpu.count's own
		// finding, not a second GPU missing.
		{name: "unreachable GPU is the unmatched one", node: busNode(nil, func(n *state.Node) {
			n.NVML.GPUs[1] = state.GPU{Index: 1, Unreachable: true, Errors: []state.CallError{{Call: "nvmlDeviceGetHandleByIndex", Error: "unknown NVML error"}}}
		}), status: Fail, summary: "GPU 1: NVML cannot open the GPU", devices: []int{1}},
		{name: "more unmatched than NVML's GPUs without a bus ID", node: busNode([]topostate.PCIFunction{pciGPU("0000:12:00.0", "nvidia")}, func(n *state.Node) {
			n.NVML.GPUs[1] = state.GPU{Index: 1, Denied: true}
		}), status: Warn, summary: "(one of 0000:11:00.0, 0000:12:00.0 not matched to NVML's 1 GPU(s) without a bus ID)"},
		{name: "sysfs of another machine", node: busNode(nil, func(n *state.Node) {
			n.Topology.SysfsRoot = "/captures/node7/sys"
			n.Topology.PCIGPUs = []topostate.PCIFunction{pciGPU("0000:3b:00.0", "")}
		}), status: Pass, summary: "the GPUs on the PCI bus were not compared (/captures/node7/sys holds none of NVML's GPUs)"},
		{name: "sysfs not read", node: node(func(n *state.Node) {
			n.Sources = []state.Source{{Name: "topo", Error: "listing PCI devices: permission denied"}}
		}), status: Pass, summary: "the GPUs on the PCI bus were not compared (sysfs not read: listing PCI devices: permission denied)"},
		{name: "a snapshot from before the list", node: busNode(nil, func(n *state.Node) { n.Topology.PCIGPUs = nil }),
			status: Pass, summary: "the GPUs on the PCI bus were not compared (the state has no sysfs GPU list)"},
		// NVML counting none ("No devices were found", open-gpu-kernel-modules
		// issue 789): the bus's GPU is still judged.
		{name: "NVML lists none", node: busNode(nil, func(n *state.Node) {
			n.NVML.GPUs = nil
			n.NVML.DeviceCount = 0
			rmFailed(n)
			n.Topology.PCIGPUs[0].BusID = "0000:12:00.0"
		}),
			status: Fail, summary: "the driver did not bring up GPU 0000:12:00.0"},
	})
}
