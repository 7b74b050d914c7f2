package collect

import (
	"context"

	"github.com/gpuprobe/gpuprobe/nccl"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() { collectors = append(collectors, collector{name: "nccl", run: collectNCCL}) }

// collectNCCL analyses the NCCL logs given with --nccl-log; without any it
// records nothing and nccl.transport skips.
func collectNCCL(ctx context.Context, n *state.Node, o Options) state.Source {
	if len(o.NCCLLogs) == 0 {
		return state.Source{OK: true}
	}
	v, err := nccl.AnalyzeFiles(ctx, o.NCCLLogs...)
	n.NCCL = &state.NCCLLog{Files: o.NCCLLogs, Verdict: v}
	if err != nil {
		n.NCCL.Error = err.Error()
		return state.Source{Error: err.Error()}
	}
	return state.Source{OK: true}
}
