package collect

import (
	"context"
	"strings"
	"sync"

	"github.com/gpuprobe/gpuprobe/simulate"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/topo"
	toposim "github.com/gpuprobe/gpuprobe/topo/sim"
)

func init() { collectors = append(collectors, collector{name: "topo", run: collectTopo}) }

// collectTopo reads the PCIe/NUMA/IB topology. It takes the GPUs' bus IDs
// and NVLink counts from NVML when NVML answered, and lets topo find the
// GPUs in sysfs when it did not. Under --simulate it reads a generated tree
// that matches the NVML simulation.
func collectTopo(ctx context.Context, n *state.Node, o Options) state.Source {
	opts := topo.Options{SysfsRoot: o.SysfsRoot, ProcfsRoot: o.ProcfsRoot, Virt: o.Virt}
	opts.GPUs, opts.NVLinkKnown = gpuHints(n.NVML)
	if o.Simulate != nil {
		sys, proc, err := simulatedTree(o.Simulate)
		if err != nil {
			return state.Source{Error: err.Error()}
		}
		opts.SysfsRoot, opts.ProcfsRoot = sys, proc
	}
	t, err := topo.Collect(ctx, opts)
	if err != nil {
		return state.Source{Error: err.Error()}
	}
	if o.Simulate != nil {
		if err := topo.Relocate(t, "/sys", "/proc"); err != nil {
			return state.Source{Error: err.Error()}
		}
		t.SysfsRoot, t.ProcfsRoot = "simulated:/sys", "simulated:/proc"
	}
	n.Topology = t
	return state.Source{OK: true}
}

// simTrees caches the generated sysfs trees per spec: a daemon would
// otherwise write ~700 files every cycle, and an abandoned cycle would leave
// its tree behind. Close removes them.
var simTrees = struct {
	sync.Mutex
	m map[string]simTree
}{m: map[string]simTree{}}

type simTree struct {
	sys, proc string
	cleanup   func()
}

func simulatedTree(spec *simulate.Spec) (string, string, error) {
	simTrees.Lock()
	defer simTrees.Unlock()
	if t, ok := simTrees.m[spec.Raw]; ok {
		return t.sys, t.proc, nil
	}
	sys, proc, cleanup, err := toposim.Materialize(spec)
	if err != nil {
		return "", "", err
	}
	simTrees.m[spec.Raw] = simTree{sys, proc, cleanup}
	return sys, proc, nil
}

// Close removes what collection left on disk (the simulated trees). Every
// command calls it on the way out.
func Close() {
	simTrees.Lock()
	defer simTrees.Unlock()
	for k, t := range simTrees.m {
		t.cleanup()
		delete(simTrees.m, k)
	}
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
