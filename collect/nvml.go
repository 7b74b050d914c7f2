package collect

import (
	"context"

	"github.com/gpuprobe/gpuprobe/nvml"
	"github.com/gpuprobe/gpuprobe/nvml/sim"
	"github.com/gpuprobe/gpuprobe/state"
)

func collectNVML(ctx context.Context, n *state.Node, opts Options) state.Source {
	nopts := nvml.Options{CallTimeout: opts.CallTimeout}
	if opts.Simulate != nil {
		sys, err := sim.New(opts.Simulate)
		if err != nil {
			n.NVML = &state.NVML{GPUs: []state.GPU{}, Error: err.Error()}
		} else {
			n.NVML = nvml.Collect(ctx, sys.Lib, nopts)
			describeProcesses(ctx, n, func(_ context.Context, pid int32) (string, string, string) {
				o := sys.Owners[uint32(pid)]
				return o.User, simExe(o.Command), optional(opts.ProcessCommandLines, o.Command)
			})
		}
	} else if lib, err := nvml.Open(); err != nil {
		n.NVML = &state.NVML{GPUs: []state.GPU{}, Error: err.Error()}
	} else {
		nopts.Real = true
		n.NVML = nvml.Collect(ctx, lib, nopts)
		describeProcesses(ctx, n, hostProcesses(opts))
	}
	return state.Source{OK: n.NVML.Available, Error: n.NVML.Error}
}
