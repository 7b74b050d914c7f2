package collect

import (
	"context"

	"github.com/gpuprobe/gpuprobe/kernel"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() { collectors = append(collectors, collector{name: "kernel", run: collectKernel}) }

func collectKernel(ctx context.Context, n *state.Node, o Options) state.Source {
	if o.Simulate != nil {
		var bus []string
		driver := ""
		if n.NVML != nil {
			driver = n.NVML.DriverVersion
			for _, g := range n.NVML.GPUs {
				bus = append(bus, g.PCIBusID)
			}
		}
		st, err := kernel.Simulated(o.Simulate, bus, driver)
		if err != nil {
			n.Kernel = &state.Kernel{XIDError: err.Error()}
			return state.Source{Error: err.Error()}
		}
		n.Kernel = st
		return state.Source{OK: true}
	}
	n.Kernel = kernel.Collect(ctx, kernel.Options{Kmsg: o.KmsgPath, Procfs: o.procfs()})
	src := state.Source{OK: n.Kernel.XIDError == ""}
	src.Error = n.Kernel.XIDError
	return src
}
