package check

import (
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// gpu.xid on the driver's "GSP Timeout" banner (docs/checks.md): the Xid
// the driver logs after it decides; without it the log shows a timeout it
// cannot attribute, which warns and is never a clean log.
func TestXIDGSPTimeoutBanner(t *testing.T) {
	banner := state.GSPTimeoutEvent{GPU: "GPU6", Lines: 1}
	saved := func(xids []state.XIDEvent, loads int, evs ...state.GSPTimeoutEvent) *state.Node {
		if xids == nil {
			xids = []state.XIDEvent{}
		}
		return &state.Node{Kernel: &state.Kernel{XIDs: xids, DriverLoads: loads, GSPTimeouts: evs}}
	}
	xid119 := state.XIDEvent{Code: 119, BusID: "0000:61:00", Message: "Timeout after 6s of waiting for RPC response from GPU6 GSP!"}
	at := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	runCases(t, checkXID, []checkCase{
		{name: "banner, Xid line cut (issue 1230)", node: saved(nil, 1, func() state.GSPTimeoutEvent { e := banner; e.DriverLoad = 1; return e }()), status: Warn,
			summary: `the driver logged a GSP RPC timeout on GPU6 (the driver's number for it, not a PCI address) (1 "GSP Timeout" banner(s)), but not the Xid line it logs with it: which GPU and which Xid the log cannot say`,
			remedy:  "Xid 119 means drain and reset the GPU"},
		{name: "banner naming no GPU", node: saved(nil, 0, state.GSPTimeoutEvent{Lines: 2}), status: Warn,
			summary: "on a GPU the banner does not name (2 \"GSP Timeout\" banner(s))"},
		{name: "the Xid 119 after it is the finding", node: saved([]state.XIDEvent{xid119}, 0, banner), status: Fail,
			summary: "PCI 0000:61:00: Xid 119"},
		{name: "a later driver load answers it", node: saved(nil, 1, banner), status: Pass},
		{name: "live, outside the window", node: healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.Kernel = kernelState(86400, nil)
			n.Kernel.XIDs = []state.XIDEvent{}
			n.Kernel.GSPTimeouts = []state.GSPTimeoutEvent{{GPU: "GPU0", Lines: 1, Time: at.Add(-time.Hour)}}
		}), cfg: func(c *Config) { c.XID.Window = 30 * time.Minute }, status: Pass},
		{name: "live, Xid line lost", node: healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.Kernel = kernelState(86400, nil)
			n.Kernel.XIDs = []state.XIDEvent{}
			n.Kernel.GSPTimeouts = []state.GSPTimeoutEvent{{GPU: "GPU0", Lines: 1, Time: at.Add(-time.Minute)}}
		}), status: Warn, summary: "GSP RPC timeout on GPU0"},
	})
}
