package check

import (
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

func TestSXid(t *testing.T) {
	with := func(evs ...state.SXIDEvent) *state.Node {
		return healthy(func(n *state.Node) { n.Kernel = &state.Kernel{SXIDs: evs} })
	}
	ev := func(code int, sev, msg string) state.SXIDEvent {
		return state.SXIDEvent{Code: code, Device: "nvswitch1", BusID: "0000:84:00.0", Severity: sev, Message: msg}
	}
	// Lines as the nvswitch driver prints them (NVIDIA's NVSentinel and
	// gpud tests, nvtrust#124 and gpud#338 carry them from real logs). The
	// verdict per code is NVIDIA's SXid table (sxiderrorsmapping.csv); the
	// "was" cases are those the line's word alone judged otherwise.
	privNonFatal := state.SXIDEvent{Code: 12028, Device: "nvswitch3", BusID: "0000:05:00.0", Severity: "non-fatal", Message: "Link 32 egress non-posted PRIV error (First)"}
	privNoWord := ev(12028, "", "Data {0x000001c0, 0x00bd5c8a, 0x00000500}")
	minion := ev(22013, "non-fatal", "Link 00 Minion Link DLREQ interrupt")
	fatal := state.SXIDEvent{Code: 23001, Device: "nvswitch0", BusID: "0000:59:00.0", Severity: "fatal", Message: "Link 12 Always Fatal"}
	// reloaded: the log shows one driver load, after the events in before
	// and before those in after.
	reloaded := func(before []state.SXIDEvent, after ...state.SXIDEvent) *state.Node {
		n := with(before...)
		n.Kernel.DriverLoads = 1
		for _, e := range after {
			e.DriverLoad = 1
			n.Kernel.SXIDs = append(n.Kernel.SXIDs, e)
		}
		return n
	}
	runCases(t, checkSXid, []checkCase{
		{name: "none", node: with(), status: Pass, summary: "no NVSwitch SXid errors since boot"},
		// A saved log (--kernel-log, no NVML) covers what the file holds,
		// not a boot.
		{name: "none, saved log", node: &state.Node{Kernel: &state.Kernel{}}, status: Pass, summary: "no NVSwitch SXid errors in the kernel log"},
		{name: "non-fatal only, saved log", node: &state.Node{Kernel: &state.Kernel{SXIDs: []state.SXIDEvent{minion}}}, status: Pass, summary: "no fatal NVSwitch SXid in the kernel log; non-fatal"},
		// NONFATAL + IGNORE: counted and named, not judged.
		{name: "22013 non-fatal, IGNORE", node: with(minion, minion), status: Pass, summary: "non-fatal (informational): nvswitch1 SXid 22013 ×2 (NVIDIA: IGNORE)"},
		// was pass: 12028 PRIVRSPERR is RESET_FABRIC, FATAL in NVIDIA's table.
		{name: "12028 without a severity word", node: with(privNoWord), status: Fail,
			summary: "fatal SXid 12028: Data {0x000001c0, 0x00bd5c8a, 0x00000500} [NVSWITCH_ERR_HW_NPORT_EGRESS_PRIVRSPERR; NVIDIA: RESET_FABRIC, FATAL; the line has no severity word]",
			remedy:  "reset the NVSwitch fabric"},
		// The driver's Non-fatal decides (issue 26): a FATAL row printed
		// Non-fatal warns, it does not drain the node.
		{name: "12028 printed Non-fatal", node: with(privNonFatal, privNonFatal, privNonFatal), status: Warn,
			summary: "nvswitch3 (PCI 0000:05:00.0): SXid 12028 printed Non-fatal: Link 32 egress non-posted PRIV error (First) (3 times) [NVSWITCH_ERR_HW_NPORT_EGRESS_PRIVRSPERR; NVIDIA: RESET_FABRIC, FATAL; the driver printed Non-fatal on this line, which decides]",
			remedy:  "if the SXid repeats, reset the NVSwitch fabric"},
		{name: "fatal fails", node: with(minion, fatal), status: Fail, summary: "nvswitch0 (PCI 0000:59:00.0): fatal SXid 23001: Link 12 Always Fatal [NVSWITCH_ERR_HW_NXBAR_TILE_INGRESS_BUFFER_OVERFLOW; NVIDIA: RESET_FABRIC, FATAL]", remedy: "reset the NVSwitch fabric"},
		// The driver's Fatal on a NONFATAL code still fails, table named.
		{name: "Fatal on a NONFATAL code", node: with(ev(22009, "fatal", "Link 03 Minion fatal interrupt")), status: Fail,
			summary: "fatal SXid 22009: Link 03 Minion fatal interrupt [NVSWITCH_ERR_HW_MINION_FATAL_INTR; NVIDIA: IGNORE, NONFATAL; the driver printed Fatal on this line]",
			remedy:  "reset the GPUs and NVSwitches"},
		// Each FATAL action's fix (was: one generic fix, and pass without "Fatal").
		{name: "CHECK_THERMALS", node: with(ev(10004, "", "thermal event")), status: Fail, summary: "fatal SXid 10004", remedy: "temperatures"},
		{name: "CHECK_FM_CONFIG", node: with(ev(11004, "", "Link 07 ingress ACL fail")), status: Fail, summary: "NVIDIA: CHECK_FM_CONFIG, FATAL", remedy: "Fabric Manager configuration"},
		{name: "RESET_GPU", node: with(ev(24007, "fatal", "Link 28 sourcetrack timeout error (First)")), status: Fail, summary: "NVIDIA: RESET_GPU, FATAL", remedy: "reset the GPU behind the failing switch link"},
		{name: "INVESTIGATE_LINK_SI", node: with(ev(18001, "", "DL protocol")), status: Fail, summary: "NVIDIA: INVESTIGATE_LINK_SI, FATAL", remedy: "signal integrity"},
		{name: "WORKFLOW_NVLINK", node: with(ev(11001, "fatal", "ingress invalid command")), status: Fail, summary: "NVIDIA: WORKFLOW_NVLINK_POTENTIALY_FATAL_ERR, FATAL", remedy: "access or a trunk port"},
		{name: "UNEXPECTED_ERR_REPORT_ISSUE", node: with(ev(12004, "fatal", "egress header DBE")), status: Fail, summary: "NVIDIA: UNEXPECTED_ERR_REPORT_ISSUE, FATAL", remedy: "report the SXid to NVIDIA"},
		{name: "CHECK_LINK_MECHANICAL_CONNECTIONS", node: with(ev(20009, "", "Link 04 RX Short Error Rate")), status: Fail, summary: "NVIDIA: CHECK_LINK_MECHANICAL_CONNECTIONS, FATAL", remedy: "mechanical connections"},
		{name: "RUN_FIELDDIAG", node: with(ev(20036, "", "PHY A")), status: Fail, summary: "NVIDIA: RUN_FIELDDIAG, FATAL", remedy: "fieldiag"},
		// Codes NVIDIA's table lacks keep the line's own word.
		{name: "unknown code, Non-fatal", node: with(ev(31001, "non-fatal", "new error")), status: Pass, summary: "nvswitch1 SXid 31001 ×1"},
		{name: "unknown code, no severity word", node: with(ev(31001, "", "new error")), status: Pass, summary: "1 line(s) without a severity word and not in NVIDIA's SXid table, counted as non-fatal"},
		{name: "unknown code, Fatal", node: with(ev(31001, "fatal", "new error")), status: Fail, summary: "nvswitch1 (PCI 0000:84:00.0): fatal SXid 31001: new error", remedy: "reset the GPUs and NVSwitches"},
		// Since the last driver load only, whatever the table says.
		{name: "fatal before a driver load", node: reloaded([]state.SXIDEvent{fatal, privNonFatal}), status: Pass, summary: "2 SXid(s) logged before the driver was last loaded"},
		{name: "fatal after the driver load", node: reloaded([]state.SXIDEvent{privNonFatal}, fatal), status: Fail, summary: "nvswitch0 (PCI 0000:59:00.0): fatal SXid 23001"},
		{name: "log unread", node: healthy(func(n *state.Node) { n.Kernel = &state.Kernel{XIDError: "permission denied"} }), status: Skip},
		{name: "not collected", node: healthy(func(n *state.Node) { n.Kernel = nil }), status: Skip},
	})
}
