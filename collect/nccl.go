package collect

import (
	"context"

	"github.com/gpuprobe/gpuprobe/nccl"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() { collectors = append(collectors, collector{name: "nccl", run: collectNCCL}) }

// collectNCCL reads the NCCL logs given with --nccl-log and records the
// facts the parser found; the verdict is check's (nccl.transport). Without
// logs it records nothing and nccl.transport skips.
func collectNCCL(ctx context.Context, n *state.Node, o Options) state.Source {
	if len(o.NCCLLogs) == 0 {
		return state.Source{OK: true}
	}
	f, err := nccl.AnalyzeFiles(ctx, o.NCCLLogs...)
	n.NCCL = &state.NCCLLog{Files: o.NCCLLogs, Facts: f}
	if err != nil {
		n.NCCL.Error = err.Error()
		return state.Source{Error: err.Error()}
	}
	return state.Source{OK: true}
}
