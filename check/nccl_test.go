package check

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/nccl"
	"github.com/gpuprobe/gpuprobe/state"
)

func TestNCCLTransport(t *testing.T) {
	// Facts come from the real parser on real line shapes (see
	// nccl/testdata/logs/FORMATS.md); the check judges them.
	withLog := func(lines ...string) *state.Node {
		f, err := nccl.Analyze(context.Background(), nccl.Input{Name: "run.log", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")})
		if err != nil {
			t.Fatal(err)
		}
		return healthy(func(n *state.Node) { n.NCCL = &state.NCCLLog{Files: []string{"run.log"}, Facts: f} })
	}
	gdr := withLog(
		"a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA",
		"b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [receive] via NET/IB/0/GDRDMA")
	ib := withLog(
		"a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0",
		"b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [receive] via NET/IB/0")
	legacy := healthy(func(n *state.Node) {
		n.NCCL = &state.NCCLLog{Files: []string{"run.log"}, LegacyVerdict: json.RawMessage(`{"inter_node":"GDRDMA"}`)}
	})
	runCases(t, checkNCCLTransport, []checkCase{
		{name: "no log", node: healthy(nil), status: Skip, summary: "--nccl-log"},
		{name: "unreadable log", node: healthy(func(n *state.Node) { n.NCCL = &state.NCCLLog{Error: "open run.log: permission denied"} }),
			status: Error, summary: "permission denied"},
		{name: "snapshot from before the facts", node: legacy, status: Error, summary: "collect it again"},
		{name: "GDR", node: gdr, status: Pass, summary: "GPUDirect RDMA"},
		{name: "TCP fallback", node: withLog(
			"a:1:1 [0] NCCL INFO NET/IB : No device found.",
			"a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0",
			"b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0"),
			status: Fail, summary: "TCP sockets"},
		{name: "IB without GDR is fine by default", node: ib, status: Pass},
		{name: "IB without GDR when GDR expected", node: ib, cfg: func(c *Config) { c.NCCL.ExpectGDR = true }, status: Fail, summary: "WITHOUT GPUDirect RDMA"},
		{name: "NCCL errors", node: withLog(
			"a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0",
			"a:1:1 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<53249> with error 12, opcode 0, len 0, vendor err 129 (Recv)"),
			status: Fail, summary: "Got completion from peer"},
	})
}
