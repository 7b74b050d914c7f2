package collect

import (
	"context"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/gpuprobe/gpuprobe/nvml"

	"github.com/gpuprobe/gpuprobe/state"
)

func collectNVML(ctx context.Context, n *state.Node, opts Options) state.Source {
	nopts := nvml.Options{CallTimeout: opts.CallTimeout, Library: opts.NVMLName}
	open := opts.Sources.OpenNVML
	if open == nil {
		nopts.Library = "nvml"
		open = func() (gonvml.Interface, error) { return nvml.Open() }
	}
	var lib gonvml.Interface
	var err error
	if opts.NVMLSession != nil && opts.Sources.OpenNVML == nil {
		lib, nopts.Held, err = opts.NVMLSession.Acquire(ctx)
	} else {
		lib, err = open()
	}
	if err != nil {
		n.NVML = &state.NVML{GPUs: []state.GPU{}, Error: err.Error()}
		return state.Source{Error: err.Error()}
	}
	n.NVML = nvml.Collect(ctx, lib, nopts)
	if nopts.Held {
		opts.NVMLSession.Observe(n.NVML)
	}
	lookup := opts.Sources.Process
	if lookup == nil {
		lookup = hostProcesses(opts)
	}
	jobOf := opts.Sources.ProcessJob
	if jobOf == nil {
		jobOf = hostProcessJobs(opts)
	}
	describeProcesses(ctx, n, func(ctx context.Context, pid int32) (string, string, string) {
		user, exe, cmdline := lookup(ctx, pid)
		return user, exe, optional(opts.ProcessCommandLines, cmdline)
	}, jobOf)
	containerOf := opts.Sources.ProcessContainer
	if containerOf == nil {
		containerOf = hostProcessContainers(opts)
	}
	describeContainers(ctx, n, containerOf)
	return state.Source{OK: n.NVML.Available, Error: n.NVML.Error}
}
