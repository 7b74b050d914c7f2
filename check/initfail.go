package check

import (
	"fmt"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/busid"

	"github.com/gpuprobe/gpuprobe/state"
)

// initFailures judges the driver's failed GPU initialisations in the
// kernel log ("NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (...)",
// "rm_init_adapter failed"), for gpu.xid (docs/checks.md). The driver
// initialises a GPU at its first open (kernel-open/nvidia/nv.c
// nv_open_device -> nv_start_device -> rm_init_adapter), tries again at
// every later open, and logs no success: a log alone cannot say whether
// the GPU came up later. Live, NVML says it:
//
//   - NVML reaches the GPU now: it failed once and came up: warn.
//   - NVML lists it but cannot use it (unreachable, lost, reset required):
//     fail, with the log's reason beside gpu.count's finding.
//   - NVML does not list it and lists it among the GPUs the driver
//     excludes (NVreg_ExcludedGpus; nvmlGetExcludedDeviceInfoByIndex): an
//     admin took the failing GPU out of service: warn, saying so.
//   - NVML does not list it: the driver did not bring it up: fail. Where
//     NVML has GPUs without a bus ID (a handle refused or failed), the GPU
//     may be one of them: a scoped run (another job's GPU) says nothing,
//     another warns.
//   - A line naming no GPU (older drivers) names its device minor number:
//     live, NVML's minor numbers map it to a GPU, judged as above
//     (minorBus); one they do not map warns.
//
// A saved log (no NVML) warns: the failure is read, its outcome unknown.
func initFailures(n *state.Node, k *state.Kernel, cfg *Config, v *verdict) {
	type agg struct {
		ev    state.InitFailureEvent
		lines int
	}
	byBus := map[string]*agg{}
	var order []string
	for _, ev := range k.InitFailures {
		if cfg.XID.Window > 0 && !ev.Time.IsZero() && ev.Time.Before(n.CollectedAt.Add(-cfg.XID.Window)) {
			continue
		}
		key := ev.BusID
		if key == "" {
			if bus := minorBus(n, k, ev); bus != "" {
				key, ev.BusID = bus, bus
			}
		}
		a, ok := byBus[key]
		if !ok {
			a = &agg{}
			byBus[key] = a
			order = append(order, key)
		}
		a.ev, a.lines = ev, a.lines+ev.Lines
	}
	nvmlOK := n.NVML != nil && n.NVML.Available
	anon := 0
	if nvmlOK {
		for _, g := range n.NVML.GPUs {
			if g.PCIBusID == "" {
				anon++
			}
		}
	}
	hidden := hiddenView(n)
	const recheck = "check dmesg | grep NVRM for why (GSP firmware, BAR mapping, PCIe link); check the GPU's power, seating and PCIe link"
	for _, bus := range order {
		a := byBus[bus]
		what := fmt.Sprintf("the driver failed to initialise the GPU (%q, %d line(s))", a.ev.Message, a.lines)
		if m := a.ev.Minors; len(m) == 1 && bus != "" {
			what = fmt.Sprintf("the driver failed to initialise the GPU (%q, %d line(s); device minor number %d, NVML's minor number for this GPU)", a.ev.Message, a.lines, m[0])
		}
		switch {
		case bus == "":
			which := "a GPU the line does not name"
			if m := a.ev.Minors; len(m) > 0 {
				which = fmt.Sprintf("a GPU the line names by device minor number only (%s)", joinInts(m))
				if nvmlOK && !strings.HasPrefix(k.XIDSource, "file:") {
					which += ", matched to no one GPU NVML lists now (one it does not list, several GPUs' lines, or a driver load ago)"
				}
			}
			v.add(Warn, nil, "find the GPU: nvidia-smi -L must list every GPU lspci -d 10de: shows; "+recheck,
				which+": "+what)
		case !nvmlOK:
			v.add(Warn, nil, "on the node, nvidia-smi -L must list "+bus+"; if it does not, drain, "+recheck+" and reboot",
				"PCI "+bus+": "+what+"; whether a later try brought it up the log cannot say (the driver logs no success)")
		default:
			g := gpuByBus(n, state.XIDEvent{BusID: bus})
			switch {
			case g != nil && g.Denied:
				// Another job's GPU (a device cgroup): the node's health
				// check judges it.
			case g != nil && (g.Lost || g.Unreachable || g.ResetRequired):
				v.add(Fail, g, "drain; reset the GPU or reboot the node; "+recheck+"; RMA if it recurs",
					what+", and NVML cannot use it")
			case g != nil:
				v.add(Warn, g, "the GPU came up after failing: "+recheck+" if it recurs; RMA if it keeps failing",
					what+"; NVML reaches it now")
			case boundElsewhere(n, bus) != "":
				// Now another driver's (vfio-pci for a VM): not a GPU of
				// the NVIDIA driver here; gpu.count's pass names it.
			case excludedGPU(n, bus):
				// The driver excludes it now: an admin took the failing
				// GPU out of service; it is not used, so nothing to drain.
				v.add(Warn, nil, "the GPU is excluded from the driver (NVreg_ExcludedGpus): repair or RMA it before lifting the exclusion; "+recheck,
					"PCI "+bus+": "+what+"; the driver excludes it now (NVreg_ExcludedGpus): an admin took it out of service, not judged further")
			case anon > 0 && n.Scope != "":
				// Maybe a GPU this process may not open: not judged here.
			case anon > 0:
				v.add(Warn, nil, "nvidia-smi -L must list "+bus+"; if it does not, drain and reboot; "+recheck,
					fmt.Sprintf("PCI %s: %s; NVML lists no GPU there, and %d of its GPUs have no bus ID (unreachable or closed): whether it is one of them is not known here", bus, what, anon))
			case hidden != "":
				// A job's device cgroup or a container hides other GPUs
				// from NVML: this one may be another job's, up and busy.
				v.add(Warn, nil, "on the node, outside any job, nvidia-smi -L must list "+bus+"; if it does not, drain and reboot; "+recheck,
					"PCI "+bus+": "+what+"; NVML does not list it, but "+hidden+" may hide it from NVML")
			default:
				v.add(Fail, nil, "drain; reset the GPU or reboot the node; "+recheck+"; RMA if it recurs",
					"PCI "+bus+": "+what+", and NVML does not list it")
			}
		}
	}
}

// boundElsewhere is the driver other than nvidia the sysfs list has bound
// to the function now, "" when none or not read.
func boundElsewhere(n *state.Node, bus string) string {
	if n.Topology == nil {
		return ""
	}
	for _, f := range n.Topology.PCIGPUs {
		if f.BusID == bus && f.Driver != "" && f.Driver != "nvidia" {
			return f.Driver
		}
	}
	return ""
}

// minorBus maps the device minor number an older driver's line names in
// place of the GPU (state.InitFailureEvent.Minors) to the bus ID of the GPU
// NVML gives that minor number (nvmlDeviceGetMinorNumber): "" unless NVML
// is live and the log is this node's (not a saved file, --kernel-log: its
// minor numbers are another boot's or machine's), the event is of the
// driver loaded now (a reload may number the GPUs anew), it names one minor
// number (several GPUs' lines cannot be told apart), and exactly one of
// NVML's GPUs has it.
func minorBus(n *state.Node, k *state.Kernel, ev state.InitFailureEvent) string {
	if n.NVML == nil || !n.NVML.Available || strings.HasPrefix(k.XIDSource, "file:") ||
		len(ev.Minors) != 1 || ev.DriverLoad != k.DriverLoads {
		return ""
	}
	bus := ""
	for _, g := range n.NVML.GPUs {
		if g.Minor == nil || *g.Minor != ev.Minors[0] || g.PCIBusID == "" {
			continue
		}
		if bus != "" {
			return ""
		}
		bus = busid.Canonical(g.PCIBusID)
	}
	return bus
}
