package check

import (
	"testing"

	"github.com/gpuprobe/gpuprobe/nccl"
	"github.com/gpuprobe/gpuprobe/state"
)

func TestNCCLTransport(t *testing.T) {
	withVerdict := func(v *nccl.Verdict) *state.Node {
		return healthy(func(n *state.Node) { n.NCCL = &state.NCCLLog{Files: []string{"run.log"}, Verdict: v} })
	}
	yes := true
	runCases(t, checkNCCLTransport, []checkCase{
		{name: "no log", node: healthy(nil), status: Skip, summary: "--nccl-log"},
		{name: "unreadable log", node: healthy(func(n *state.Node) { n.NCCL = &state.NCCLLog{Error: "open run.log: permission denied"} }),
			status: Error, summary: "permission denied"},
		{name: "GDR", node: withVerdict(&nccl.Verdict{InterNode: nccl.InterGDRDMA, GDR: &yes, Summary: "Inter-node traffic used GPUDirect RDMA"}),
			status: Pass, summary: "GPUDirect RDMA"},
		{name: "TCP fallback", node: withVerdict(&nccl.Verdict{InterNode: nccl.InterSocket, TCPFallback: true, Summary: "Inter-node traffic used TCP sockets"}),
			status: Fail, summary: "TCP sockets"},
		{name: "IB without GDR is fine by default", node: withVerdict(&nccl.Verdict{InterNode: nccl.InterIB, Summary: "IB without GDR"}), status: Pass},
		{name: "IB without GDR when GDR expected", node: withVerdict(&nccl.Verdict{InterNode: nccl.InterIB, Summary: "IB without GDR"}),
			cfg: func(c *Config) { c.NCCL.ExpectGDR = true }, status: Fail, summary: "IB without GDR"},
		{name: "NCCL errors", node: withVerdict(&nccl.Verdict{InterNode: nccl.InterNone, Summary: "one node",
			Errors: []nccl.Finding{{Code: "ib_completion", Message: "NET/IB : Got completion with error 12", Hint: "check the fabric"}}}),
			status: Fail, summary: "Got completion with error 12"},
	})
}
