package collect

import (
	"context"

	"github.com/gpuprobe/gpuprobe/nvml"
	"github.com/gpuprobe/gpuprobe/nvml/sim"
	"github.com/gpuprobe/gpuprobe/state"
)

func collectNVML(ctx context.Context, n *state.Node, opts Options) state.Source {
	n.NVML = readNVML(ctx, opts)
	return state.Source{OK: n.NVML.Available, Error: n.NVML.Error}
}

func readNVML(ctx context.Context, opts Options) *state.NVML {
	nopts := nvml.Options{CallTimeout: opts.CallTimeout}
	if opts.Simulate != nil {
		sys, err := sim.New(opts.Simulate)
		if err != nil {
			return &state.NVML{GPUs: []state.GPU{}, Error: err.Error()}
		}
		return nvml.Collect(ctx, sys.Lib, nopts)
	}
	lib, err := nvml.Open()
	if err != nil {
		return &state.NVML{GPUs: []state.GPU{}, Error: err.Error()}
	}
	nopts.Real = true
	return nvml.Collect(ctx, lib, nopts)
}
