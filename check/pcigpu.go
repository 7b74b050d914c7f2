package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/state"
)

// This file holds gpu.count's rule for the GPUs on the PCI bus that NVML
// does not list (docs/checks.md, gpu.count). What the driver does, from its
// source (NVIDIA/open-gpu-kernel-modules, kernel-open/nvidia/nv-pci.c and
// nv.c, 595.45.04 @ df1c9a3de2be4b130f4fc7680f7198193d8ac6ad):
//
//   - nv_pci_probe binds every supported NVIDIA display/3D function; when
//     the probe fails (a legacy GPU, pci_enable_device failed, no IRQ, a
//     bad BAR, the GPU lost) it returns an error and the function is left
//     with no driver. Linux leaves a function no driver claims unbound too,
//     and an admin can unbind one: the sysfs tree cannot tell them apart.
//   - A bound GPU is initialised (RmInitAdapter) when it is first opened
//     (nv_open_device -> nv_start_device), and logs "RmInitAdapter failed"
//     / "rm_init_adapter failed" when that fails. NVML then either lists it
//     with its handle failing (nvidia-smi: "Unable to determine the device
//     handle for GPU ...": gpu.count's unreachable GPU) or does not count
//     it (nvidia-smi: "No devices were found" on a one-GPU node: NVIDIA
//     open-gpu-kernel-modules issue 789). Both are seen in the field.
//   - A GPU excluded by NVreg_ExcludedGpus / NVreg_ExcludeAllGpus stays
//     bound to nvidia, is not in the driver's card list
//     (nvidia_read_card_info: "We do not include excluded GPUs") and so not
//     in NVML's count (NVML's nvmlGetExcludedDeviceCount lists those).
//
// NVML lists the excluded GPUs itself (NVML API reference, "Excluded GPU
// Queries": nvmlGetExcludedDeviceCount, nvmlGetExcludedDeviceInfoByIndex;
// state.NVML.Excluded, complete when ExcludedKnown). So a GPU bound to
// nvidia and not in NVML's list:
//
//   - in the excluded list: an admin's choice, no finding; the pass names it;
//   - the kernel log shows its initialisation failing: fails;
//   - the excluded list was read and does not name it: the driver neither
//     brought it up nor excluded it: fails, where this process sees every
//     GPU NVML has (below); otherwise it warns;
//   - the excluded list was not read: warns, since an exclusion looks the
//     same.
//
// A view that may hide GPUs from NVML keeps the warning: a scoped run, a
// container (its runtime hands NVML only its GPUs), a Slurm job step or a
// device cgroup (NVML then enumerates the GPUs the cgroup lets through:
// the other jobs' GPUs are on the bus, bound to nvidia and unlisted, and
// must not fail here). A GPU with no driver warns. A GPU bound to vfio-pci,
// pci-stub, nouveau or another driver is not the NVIDIA driver's and no
// finding: the pass says so.

// pciGPUs judges Topology.PCIGPUs against NVML's GPUs, adding findings to v,
// and returns what the pass text adds.
func pciGPUs(n *state.Node, v *verdict) string {
	t := n.Topology
	if n.Capture != nil || n.NVML == nil {
		return ""
	}
	if t == nil {
		for _, s := range n.Sources {
			if s.Name == "topo" && s.Error != "" {
				return "; the GPUs on the PCI bus were not compared (sysfs not read: " + s.Error + ")"
			}
		}
		return ""
	}
	if t.PCIGPUs == nil {
		return "; the GPUs on the PCI bus were not compared (the state has no sysfs GPU list)"
	}
	listed := map[string]bool{}
	anon := 0 // NVML GPUs without a bus ID: a handle refused or failed
	for _, g := range n.NVML.GPUs {
		if g.PCIBusID == "" {
			anon++
			continue
		}
		listed[busid.Canonical(g.PCIBusID)] = true
	}
	onBus := map[string]bool{}
	for _, f := range t.PCIGPUs {
		onBus[f.BusID] = true
	}
	if len(listed) > 0 {
		in := false
		for id := range listed {
			in = in || onBus[id]
		}
		if !in {
			// --path.sysfs of another machine (a capture): nothing to
			// compare NVML's GPUs with.
			return fmt.Sprintf("; the GPUs on the PCI bus were not compared (%s holds none of NVML's GPUs)", t.SysfsRoot)
		}
	}
	excl := map[string]bool{}
	for _, id := range n.NVML.Excluded {
		excl[busid.Canonical(id)] = true
	}
	var bound, unbound, linkless, excluded []string
	other := map[string][]string{}
	for _, f := range t.PCIGPUs {
		if listed[f.BusID] {
			continue
		}
		switch {
		case f.Driver == "nvidia" && excl[f.BusID]:
			// Not in NVML's enumeration because the driver excludes it
			// (NVML names it): not one of NVML's GPUs without a bus ID.
			excluded = append(excluded, f.BusID)
		case f.Driver == "nvidia":
			bound = append(bound, f.BusID)
		case f.Driver == "" && f.HostBridge == "":
			// A tree copied without its links (cp -rL) has lost the
			// driver link with the others: which driver is unknown.
			linkless = append(linkless, f.BusID)
		case f.Driver == "":
			unbound = append(unbound, f.BusID)
		default:
			other[f.Driver] = append(other[f.Driver], f.BusID)
		}
	}
	note := ""
	if len(excluded) > 0 {
		note += fmt.Sprintf("; GPU(s) %s excluded by the driver (NVreg_ExcludedGpus), not judged", strings.Join(excluded, ", "))
	}
	// NVML's GPUs without a bus ID (a handle refused: another job's GPU
	// under a device cgroup; or failed: gpu.count's unreachable finding)
	// are GPUs of the bus it does list: as many bound GPUs are theirs.
	var behind []string // unlisted GPUs a restricted view hides, not judged
	hidden := hiddenView(n)
	if len(bound) > anon {
		failed := initFailed(n)
		const bringUp = "drain; reset the GPU or reboot the node, and check its power, seating and PCIe link (dmesg | grep NVRM); RMA if it recurs"
		for _, id := range bound {
			which := id
			if anon > 0 {
				which = fmt.Sprintf("%s (one of %s not matched to NVML's %d GPU(s) without a bus ID)", id, strings.Join(bound, ", "), anon)
			}
			if ev, ok := failed[id]; ok && anon == 0 && hidden == "" {
				v.add(Fail, nil, bringUp,
					fmt.Sprintf("the driver did not bring up GPU %s: it is bound to nvidia, NVML does not list it, and the kernel log shows %q (%d line(s))", which, ev.Message, ev.Lines))
				continue
			}
			if n.NVML.ExcludedKnown && anon == 0 && hidden == "" {
				v.add(Fail, nil, bringUp,
					fmt.Sprintf("the driver did not bring up GPU %s: it is bound to nvidia, and NVML neither lists it nor has it excluded (nvmlGetExcludedDeviceCount: %d excluded)", id, len(n.NVML.Excluded)))
				continue
			}
			if _, logged := failed[id]; hidden != "" && !logged {
				// A job's or a container's view: the node's other GPUs are
				// meant to be out of sight, on every srun of a step. Said,
				// not a finding; one whose failure the log shows still warns.
				behind = append(behind, id)
				continue
			}
			why := "which is not known here"
			switch {
			case hidden != "":
				why = "the kernel log shows its initialisation failing, but " + hidden + " may hide it from NVML"
			case n.NVML.ExcludedKnown:
				why = "NVML does not exclude it; whether it is one of NVML's GPUs without a bus ID is not known here"
			}
			v.add(Warn, nil, "check dmesg for NVRM errors on it (RmInitAdapter failed: the driver could not initialise it) and the driver's NVreg_ExcludedGpus/NVreg_ExcludeAllGpus options (nvidia-smi -q lists none of an excluded GPU)",
				fmt.Sprintf("GPU %s is bound to the nvidia driver but NVML does not list it: the driver failed to initialise it, or it is excluded (NVreg_ExcludedGpus); %s", which, why))
		}
	}
	if len(behind) > 0 {
		note += fmt.Sprintf("; %d more GPU(s) on the bus bound to nvidia and not listed by NVML (%s): not judged, %s may hide the node's other GPUs from NVML", len(behind), strings.Join(behind, ", "), hidden)
	}
	for _, id := range unbound {
		v.add(Warn, nil, "check dmesg for NVRM lines about it (the driver refused it at probe) and whether someone unbound it (ls -l /sys/bus/pci/devices/"+id+"/driver); lspci -k -s "+id,
			"NVIDIA GPU "+id+" on the PCI bus has no driver bound: the nvidia driver refused it at probe, or it was unbound; which cannot be told from sysfs")
	}
	if len(linkless) > 0 {
		note += fmt.Sprintf("; %d NVIDIA GPU(s) on the bus not listed by NVML (%s) have a driver not known here (the sysfs tree has no links)", len(linkless), strings.Join(linkless, ", "))
	}
	drivers := make([]string, 0, len(other))
	for d := range other {
		drivers = append(drivers, d)
	}
	sort.Strings(drivers)
	for _, d := range drivers {
		ids := other[d]
		note += fmt.Sprintf("; %d GPU(s) bound to %s (%s), not for CUDA here", len(ids), d, strings.Join(ids, ", "))
	}
	return note
}

// hiddenView says why this process's NVML may not list every GPU the
// driver brought up, "" when nothing says so: a scoped run, a container
// (nvidia-container-toolkit hands it only the GPUs it asks for), a Slurm
// job step, or a GPU device file a device cgroup closes (Slurm's
// ConstrainDevices: NVML enumerates the GPUs the cgroup lets through).
// These only keep a finding a warning; none raises one.
func hiddenView(n *state.Node) string {
	switch {
	case n.Scope != "":
		return "the run's scope (" + n.Scope + ")"
	case n.Container != nil && n.Container.Runtime != "":
		return "the " + n.Container.Runtime + " container"
	case n.Slurm != nil && (n.Slurm.InJob || n.Slurm.Env != nil && n.Slurm.Env.JobID != "" && !n.Slurm.Env.SlurmdScript()):
		// A job's environment (SLURM_JOB_ID), a step or a batch script:
		// its device cgroup (ConstrainDevices) may hide the other GPUs.
		// slurmd's own Prolog/Epilog have the job's ID but run in
		// slurmd's context (a Prolog that runs in the job's cgroup,
		// PrologFlags=RunInJob, is the cgroup case below).
		return "the Slurm job step's device cgroup"
	case n.Slurm != nil && n.Slurm.Task != nil && n.Slurm.Task.CgroupJobID != "":
		// In a job's cgroup without its environment: an ssh session that
		// pam_slurm_adopt put in the job's cgroup (its device rules apply,
		// SLURM_JOB_ID is not set).
		return "Slurm job " + n.Slurm.Task.CgroupJobID + "'s cgroup (this process runs in it)"
	case n.Slurm != nil:
		for _, d := range n.Slurm.Devices {
			if d.Access == "denied" {
				return "a device cgroup (" + d.Path + " denied)"
			}
		}
	}
	return ""
}

// excludedGPU reports whether NVML lists the function among the GPUs the
// driver excludes (state.NVML.Excluded).
func excludedGPU(n *state.Node, bus string) bool {
	if n.NVML == nil {
		return false
	}
	for _, id := range n.NVML.Excluded {
		if busid.Canonical(id) == bus {
			return true
		}
	}
	return false
}

// initFailed is the kernel log's failed GPU initialisations, by function.
func initFailed(n *state.Node) map[string]state.InitFailureEvent {
	out := map[string]state.InitFailureEvent{}
	if n.Kernel == nil {
		return out
	}
	for _, ev := range n.Kernel.InitFailures {
		if ev.BusID == "" {
			continue
		}
		if prev, ok := out[ev.BusID]; ok {
			ev.Lines += prev.Lines
		}
		out[ev.BusID] = ev
	}
	return out
}
