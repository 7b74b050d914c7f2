package check

import (
	"strings"

	"github.com/gpuprobe/gpuprobe/check/ncclverdict"
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
	if l.Facts == nil {
		if len(l.LegacyVerdict) > 0 {
			return Result{Status: Error, Summary: "the snapshot holds an NCCL verdict from an older gpuprobe, not the log's facts: collect it again with --nccl-log"}
		}
		return Result{Status: Error, Summary: "the NCCL log produced no facts"}
	}
	// Judged here, from the facts: a replayed snapshot gets today's rules.
	v := ncclverdict.Judge(l.Facts)
	problems := v.Problems(ncclverdict.ProblemOptions{ExpectGDR: cfg.NCCL.ExpectGDR})
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
