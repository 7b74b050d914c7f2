package collect

import (
	"context"

	"github.com/gpuprobe/gpuprobe/kernel"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() { collectors = append(collectors, collector{name: "kernel", run: collectKernel}) }

func collectKernel(ctx context.Context, n *state.Node, o Options) state.Source {
	n.Kernel = kernel.Collect(ctx, kernel.Options{Kmsg: o.KmsgPath, Procfs: o.procfs(), FS: o.Sources.Root,
		Log: o.Sources.KernelLog, LogName: o.Sources.KernelLogName, LogUndated: o.Sources.KernelLogForeign})
	src := state.Source{OK: n.Kernel.XIDError == ""}
	src.Error = n.Kernel.XIDError
	return src
}
