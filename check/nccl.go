package check

import (
	"strings"

	"github.com/gpuprobe/gpuprobe/nccl"
	"github.com/gpuprobe/gpuprobe/state"
)

// NCCLConfig sets nccl.transport.
type NCCLConfig struct {
	// ExpectGDR makes inter-node traffic without GPUDirect RDMA a failure
	// (--nccl-expect-gdr).
	ExpectGDR bool `yaml:"expect_gdr"`
}

func init() {
	register(Check{ID: "nccl.transport", Title: "the NCCL log shows the expected inter-node transport (no TCP fallback)", Run: checkNCCLTransport})
}

func checkNCCLTransport(n *state.Node, cfg *Config) Result {
	l := n.NCCL
	if l == nil {
		return Result{Status: Skip, Summary: "no NCCL log given (--nccl-log FILE)"}
	}
	if l.Error != "" {
		return Result{Status: Error, Summary: "cannot read the NCCL log: " + l.Error}
	}
	v := l.Verdict
	if v == nil {
		return Result{Status: Error, Summary: "the NCCL log produced no verdict"}
	}
	problems := v.Problems(nccl.ProblemOptions{ExpectGDR: cfg.NCCL.ExpectGDR})
	if len(problems) == 0 {
		return Result{Status: Pass, Summary: v.Summary}
	}
	r := Result{Status: Fail, Summary: problems[0].Message, Remedy: problems[0].Remedy}
	for _, p := range problems {
		r.Details = append(r.Details, p.Code+": "+p.Message)
	}
	if r.Remedy == "" {
		var rs []string
		for _, p := range problems[1:] {
			if p.Remedy != "" {
				rs = append(rs, p.Remedy)
			}
		}
		r.Remedy = strings.Join(rs, "; ")
	}
	if r.Remedy == "" {
		r.Remedy = "see docs/nccl.md for the fixes of each NCCL transport outcome"
	}
	return r
}
