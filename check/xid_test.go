package check

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

func kernelState(uptime float64, evs []state.XIDEvent) *state.Kernel {
	return &state.Kernel{UptimeSeconds: uptime, XIDs: evs, XIDSource: "test"}
}

// reloadedLog is a kernel log where the driver was loaded once, after the
// events in before and before those in after.
func reloadedLog(before, after []state.XIDEvent) *state.Kernel {
	k := kernelState(86400, append([]state.XIDEvent(nil), before...))
	k.DriverLoads = 1
	for _, e := range after {
		e.DriverLoad = 1
		k.XIDs = append(k.XIDs, e)
	}
	return k
}

func TestXID(t *testing.T) {
	at := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	withXIDs := func(evs ...state.XIDEvent) *state.Node {
		return healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.Kernel = kernelState(86400, evs)
		})
	}
	ev := func(code int, bus string, ago time.Duration) state.XIDEvent {
		return state.XIDEvent{Code: code, BusID: bus, Time: at.Add(-ago)}
	}
	// reloaded: the driver was loaded once, after the events in before and
	// before those in after.
	reloaded := func(before []state.XIDEvent, after ...state.XIDEvent) *state.Node {
		return healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.Kernel = reloadedLog(before, after)
		})
	}
	evs := func(e ...state.XIDEvent) []state.XIDEvent { return e }
	recovery := func(bus string, ago time.Duration, change string) state.XIDEvent {
		return state.XIDEvent{Code: 154, BusID: bus, Time: at.Add(-ago), Message: "GPU recovery action changed from " + change}
	}
	runCases(t, checkXID, []checkCase{
		{name: "none", node: withXIDs(), status: Pass, summary: "no XID events since boot"},
		{name: "79 on GPU 1", node: withXIDs(ev(79, "0000:11:00", time.Hour)), status: Fail, summary: "GPU 1 (0000:11:00.0): Xid 79: GPU has fallen off the bus", devices: []int{1}},
		{name: "13 warns", node: withXIDs(ev(13, "0000:10:00", time.Hour)), status: Warn, summary: "Xid 13", devices: []int{0}},
		{name: "storm counted once", node: withXIDs(ev(48, "0000:10:00", 3*time.Hour), ev(48, "0000:10:00", time.Hour)), status: Fail, summary: "(2 times)", devices: []int{0}},
		{name: "outside the window", node: withXIDs(ev(79, "0000:11:00", 48*time.Hour)), cfg: func(c *Config) { c.XID.Window = 24 * time.Hour }, status: Pass, summary: "in the last 24h0m0s"},
		{name: "ignored", node: withXIDs(ev(13, "0000:10:00", time.Hour)), cfg: func(c *Config) { c.XID.Ignore = []int{13} }, status: Pass},
		{name: "critical set replaced", node: withXIDs(ev(13, "0000:10:00", time.Hour)), cfg: func(c *Config) { c.XID.Critical = []int{13} }, status: Fail, devices: []int{0}},
		// Issue 26: the driver's notice and an Xid 79 for the same GPU are
		// one finding (they were two), in either order. One loss, too: the
		// driver prints both for it (kernel log corpus; TestFallenOffNoticeIsNoSecondLoss).
		{name: "fallen-off notice and Xid 79 on one GPU are one finding", node: withXIDs(
			state.XIDEvent{BusID: "0000:11:00", Message: "The NVIDIA GPU 0000:11:00.0 (PCI ID: 10de:2330) installed in this system has fallen off the bus and is not responding to commands."},
			ev(79, "0000:11:00", time.Hour)),
			status: Fail, summary: "GPU 1 (0000:11:00.0): Xid 79: GPU has fallen off the bus", devices: []int{1}},
		{name: "fell off without an XID number", node: withXIDs(state.XIDEvent{BusID: "0000:11:00", Message: "GPU has fallen off the bus."}),
			status: Fail, summary: "GPU has fallen off the bus", devices: []int{1}},
		// NVIDIA's catalogue: IGNORE. A row remap recorded is gpu.row_remap's
		// to judge; as a critical XID it drained healthy nodes for good.
		{name: "Xid 63 alone is no finding", node: withXIDs(ev(63, "0000:10:00", time.Hour)), status: Pass},
		// A scoped state (check --gpus 1) holds GPU 1 at position 0: the XID
		// finds it by bus, not by taking its index as a position (a panic).
		{name: "GPU index is not a position", node: healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.NVML.GPUs = n.NVML.GPUs[1:2]
			n.Kernel = kernelState(86400, []state.XIDEvent{ev(79, "0000:11:00", time.Hour)})
		}), status: Fail, summary: "GPU 1 (0000:11:00.0): Xid 79", devices: []int{1}},
		{name: "unknown bus still reported", node: withXIDs(ev(79, "0000:99:00", time.Hour)), status: Fail, summary: "PCI 0000:99:00: Xid 79"},
		{name: "unreadable log is an error", node: healthy(func(n *state.Node) { n.Kernel = &state.Kernel{XIDError: "cannot read /dev/kmsg: permission denied"} }),
			status: Error, summary: "permission denied"},
		// srun gpuprobe check as an ordinary user on Debian/Ubuntu
		// (kernel.dmesg_restrict=1): not the node's fault, so not an error.
		{name: "user refused by dmesg_restrict", node: healthy(func(n *state.Node) {
			uid := 1000
			n.Kernel = &state.Kernel{XIDError: "cannot read /dev/kmsg: permission denied", XIDDenied: true, ReaderUID: &uid}
		}), status: Skip, summary: "readable only by root here (uid 1000"},
		{name: "root refused is still an error", node: healthy(func(n *state.Node) {
			uid := 0
			n.Kernel = &state.Kernel{XIDError: "cannot read /dev/kmsg: operation not permitted", XIDDenied: true, ReaderUID: &uid}
		}), status: Error, summary: "operation not permitted"},
		// The driver was reloaded after these lines: a reset-class (48) and
		// an application fault (13) are answered; a lost GPU (79, reboot)
		// and a code the admin made critical are not.
		{name: "reset-class XID before a driver load", node: reloaded(evs(ev(48, "0000:10:00", 3*time.Hour), ev(13, "0000:10:00", 3*time.Hour))),
			status: Pass, summary: "no XID events since boot; 2 XID(s) needing a GPU reset or an application restart were logged before the driver was last loaded"},
		{name: "fallen off the bus before a driver load still fails", node: reloaded(evs(ev(79, "0000:11:00", 3*time.Hour))), status: Fail, summary: "Xid 79", devices: []int{1}},
		{name: "admin-critical before a driver load still fails", node: reloaded(evs(ev(13, "0000:10:00", 3*time.Hour))),
			cfg: func(c *Config) { c.XID.Critical = []int{13} }, status: Fail, devices: []int{0}},
		// The parser records the text; "fallen off the bus" is read here, on
		// any code (the kernel package used to decide it while parsing).
		{name: "fallen-off text on a warning code fails", node: withXIDs(state.XIDEvent{Code: 13, BusID: "0000:10:00", Time: at.Add(-time.Hour), Message: "GPU has fallen off the bus."}),
			status: Fail, summary: "GPU 0 (0000:10:00.0): Xid 13", devices: []int{0}},
		{name: "fallen-off text before a driver load still fails", node: reloaded(evs(state.XIDEvent{BusID: "0000:11:00", Message: "GPU has fallen off the bus."})),
			status: Fail, summary: "GPU has fallen off the bus", devices: []int{1}},
		// The log's load order: two loads, the event between them was
		// answered by the second; one after the last is not.
		{name: "between two driver loads", node: healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.Kernel = kernelState(86400, []state.XIDEvent{{Code: 48, BusID: "0000:10:00", Time: at.Add(-time.Hour), DriverLoad: 1}})
			n.Kernel.DriverLoads = 2
		}), status: Pass, summary: "1 XID(s) needing a GPU reset"},
		{name: "after the last of two driver loads", node: healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.Kernel = kernelState(86400, []state.XIDEvent{{Code: 48, BusID: "0000:10:00", Time: at.Add(-time.Hour), DriverLoad: 2}})
			n.Kernel.DriverLoads = 2
		}), status: Fail, summary: "Xid 48", devices: []int{0}},
		{name: "after the load it counts", node: reloaded(evs(ev(48, "0000:10:00", 3*time.Hour)), ev(48, "0000:10:00", time.Hour)), status: Fail, summary: "GPU 0 (0000:10:00.0): Xid 48", devices: []int{0}},
		// Xid 154 names the recovery the driver now requires (the line from a
		// real GH200 log, xid/xid_test.go); its latest line per GPU holds, and
		// "to 0x0 (None)" after the reset is the recovery done.
		{name: "154: reset required", node: withXIDs(recovery("0000:10:00", time.Hour, "0x0 (None) to 0x1 (GPU Reset Required)")), status: Fail,
			summary: "GPU 0 (0000:10:00.0): Xid 154: the driver now requires a GPU reset (0x1 (GPU Reset Required))", devices: []int{0}},
		{name: "154: reboot required", node: withXIDs(recovery("0000:11:00", time.Hour, "0x0 (None) to 0x2 (Node Reboot Required)")), status: Fail,
			summary: "requires a node reboot", devices: []int{1}},
		{name: "154: recovered after the reset", node: withXIDs(recovery("0000:10:00", 2*time.Hour, "0x0 (None) to 0x1 (GPU Reset Required)"),
			recovery("0000:10:00", time.Hour, "0x1 (GPU Reset Required) to 0x0 (None)")), status: Pass},
		{name: "154 unreadable: the catalogue row decides", node: withXIDs(state.XIDEvent{Code: 154, BusID: "0000:10:00", Time: at.Add(-time.Hour), Message: "GPU recovery action changed"}),
			status: Fail, summary: "Xid 154: GPU recovery action changed", devices: []int{0}},
		// NVIDIA's table: IGNORE (ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR); it warned.
		{name: "Xid 43 is no finding", node: withXIDs(ev(43, "0000:10:00", time.Hour)), status: Pass},
		{name: "no driver, nothing logged", node: healthy(func(n *state.Node) {
			n.NVML = &state.NVML{}
			n.Kernel = kernelState(1, nil)
		}), status: Skip},
		{name: "no driver but the log shows a lost GPU", node: healthy(func(n *state.Node) {
			n.NVML = &state.NVML{}
			n.Kernel = kernelState(1, []state.XIDEvent{{Code: 79, BusID: "0000:3b:00"}})
		}), status: Fail, summary: "PCI 0000:3b:00: Xid 79"},
	})
}

// The driver reports one loss of a GPU with two records: the Xid 79 line and
// its own notice ("GPU 0000:06:00.0: GPU has fallen off the bus."), both
// from osHandleGpuLost (open-gpu-kernel-modules,
// src/nvidia/arch/nvalloc/unix/src/osinit.c, commit
// 1739a20efc4acb55fd1dc53dcc66057b70c2613c). gpu.xid said "(2 times)" of
// one loss (kernel-logs/ogkm1151-bare-xid79-gpu-notice-5090.txt).
func TestFallenOffNoticeIsNoSecondLoss(t *testing.T) {
	at := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	ev := func(code int, bus string, ago time.Duration) state.XIDEvent {
		return state.XIDEvent{Code: code, BusID: bus, Time: at.Add(-ago), Message: "GPU has fallen off the bus."}
	}
	notice := state.XIDEvent{BusID: "0000:11:00", Message: "GPU 0000:11:00.0: GPU has fallen off the bus."}
	for name, c := range map[string]struct {
		evs   []state.XIDEvent
		times string
	}{
		"79 then notice":         {[]state.XIDEvent{ev(79, "0000:11:00", time.Hour), notice}, ""},
		"notice then 79":         {[]state.XIDEvent{notice, ev(79, "0000:11:00", time.Hour)}, ""},
		"two losses, one notice": {[]state.XIDEvent{ev(79, "0000:11:00", 2*time.Hour), notice, ev(79, "0000:11:00", time.Hour)}, " (2 times)"},
		"two notices, no 79":     {[]state.XIDEvent{notice, notice}, " (2 times)"},
	} {
		n := healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.Kernel = kernelState(86400, c.evs)
		})
		r := checkXID(n, DefaultConfig())
		if r.Status != Fail || !strings.HasSuffix(r.Summary, "GPU has fallen off the bus"+c.times) {
			t.Errorf("%s: %s %q, want fail ending %q", name, r.Status, r.Summary, "GPU has fallen off the bus"+c.times)
		}
	}
}
