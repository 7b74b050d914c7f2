package check

import (
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

func TestSXid(t *testing.T) {
	with := func(evs ...state.SXIDEvent) *state.Node {
		return healthy(func(n *state.Node) { n.Kernel = &state.Kernel{SXIDs: evs} })
	}
	// Lines as the nvswitch driver prints them (NVIDIA's NVSentinel and
	// gpud tests carry them from real logs).
	nonFatal := state.SXIDEvent{Code: 12028, Device: "nvswitch3", BusID: "0000:05:00.0", Severity: "non-fatal", Message: "Link 32 egress non-posted PRIV error (First)"}
	fatal := state.SXIDEvent{Code: 23001, Device: "nvswitch0", BusID: "0000:59:00.0", Severity: "fatal", Message: "Link 12 Always Fatal"}
	runCases(t, checkSXid, []checkCase{
		{name: "none", node: with(), status: Pass, summary: "no NVSwitch SXid errors since boot"},
		{name: "non-fatal is informational", node: with(nonFatal, nonFatal), status: Pass, summary: "non-fatal (informational): nvswitch3 SXid 12028 ×2"},
		{name: "fatal fails", node: with(nonFatal, fatal), status: Fail, summary: "nvswitch0 (PCI 0000:59:00.0): fatal SXid 23001: Link 12 Always Fatal"},
		{name: "fatal before a driver load", node: with(func() state.SXIDEvent { e := fatal; e.BeforeDriverLoad = true; return e }()), status: Pass, summary: "1 SXid(s) logged before the driver was last loaded"},
		{name: "no severity word", node: with(state.SXIDEvent{Code: 20009, Device: "nvswitch1"}), status: Pass, summary: "without a severity word"},
		{name: "log unread", node: healthy(func(n *state.Node) { n.Kernel = &state.Kernel{XIDError: "permission denied"} }), status: Skip},
		{name: "not collected", node: healthy(func(n *state.Node) { n.Kernel = nil }), status: Skip},
	})
}
