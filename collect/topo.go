package collect

import (
	"context"
	"slices"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/topo"
)

func init() { collectors = append(collectors, collector{name: "topo", run: collectTopo}) }

// collectTopo reads the PCIe/NUMA/IB topology. It takes the GPUs' bus IDs
// and NVLink counts from NVML when NVML answered, and lets topo find the
// GPUs in sysfs when it did not.
func collectTopo(ctx context.Context, n *state.Node, o Options) state.Source {
	opts := topo.Options{SysfsRoot: o.SysfsRoot, ProcfsRoot: o.ProcfsRoot, Virt: o.Virt, FS: o.Sources.Root}
	opts.GPUs, opts.NVLinkKnown = gpuHints(n.NVML)
	t, err := topo.Collect(ctx, opts)
	if err != nil {
		return state.Source{Error: err.Error()}
	}
	if l := o.Sources.RootLabel; l != "" {
		t.SysfsRoot, t.ProcfsRoot = l+":"+t.SysfsRoot, l+":"+t.ProcfsRoot
	}
	n.Topology = t
	return state.Source{OK: true}
}

// gpuHints turns NVML's GPUs into topo's hints: bus IDs, and NVLinks that
// are up, to an NVSwitch or straight to another GPU.
func gpuHints(nv *state.NVML) ([]topo.GPUHint, bool) {
	if nv == nil || !nv.Available {
		return nil, false
	}
	known := false
	var hints []topo.GPUHint
	for _, g := range nv.GPUs {
		if g.PCIBusID == "" {
			continue
		}
		h := topo.GPUHint{Index: g.Index, BusID: g.PCIBusID}
		// NOT_SUPPORTED for the link state is NVML's answer for a GPU
		// with no NVLinks (a real PCIe H100 says so): known, none.
		if slices.Contains(g.Unsupported, "nvmlDeviceGetNvLinkState") {
			known = true
		}
		for _, l := range g.NVLinks {
			known = true
			if !l.Up {
				continue
			}
			switch strings.ToLower(l.RemoteType) {
			case "switch":
				h.SwitchLinks++
			case "gpu":
				if h.PeerLinks == nil {
					h.PeerLinks = map[string]int{}
				}
				h.PeerLinks[l.RemotePCIBusID]++
			}
		}
		hints = append(hints, h)
	}
	return hints, known
}
