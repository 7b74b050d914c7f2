package check

import (
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

func kernelState(uptime float64, evs []state.XIDEvent) *state.Kernel {
	return &state.Kernel{UptimeSeconds: uptime, XIDs: evs, XIDSource: "test"}
}

func TestNVLinkState(t *testing.T) {
	runCases(t, checkNVLinkState, []checkCase{
		{name: "all up", node: healthy(nil), status: Pass, summary: "36 NVLinks up on 2 GPUs"},
		{name: "one down", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].NVLinks[3].Up = false }),
			status: Fail, summary: "17 of 18 NVLinks up (down: 3)", devices: []int{1}},
		{name: "missing links inferred from the identical GPU", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].NVLinks = n.NVML.GPUs[0].NVLinks[:12] }),
			status: Fail, summary: "12 of 18 NVLinks up", devices: []int{0}},
		{name: "configured expectation", node: healthy(nil), cfg: func(c *Config) { c.NVLink.ExpectedLinks = 12 }, status: Pass},
		// nvidia-smi -q prints no NVLink state: an H100 capture is not a node without NVLinks.
		{name: "capture without NVLinks", node: healthy(func(n *state.Node) {
			n.Capture = &state.Capture{NotCollected: []string{"nvlinks"}}
		}), status: Skip, summary: "NVLinks not collected"},
		{name: "no NVLink", node: healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].NVLinks = nil
			}
		}), status: Skip, summary: "no NVLinks"},
	})
}

func TestNVLinkErrors(t *testing.T) {
	runCases(t, checkNVLinkErrors, []checkCase{
		{name: "clean", node: healthy(nil), status: Pass, summary: "on 36 links"},
		{name: "crc over threshold", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].NVLinks[2].CRCFlitErrors = u64(500) }),
			status: Warn, summary: "link 2: 500 CRC flit errors", devices: []int{0}},
		{name: "replay", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].NVLinks[7].ReplayErrors = u64(100) }), status: Warn, devices: []int{1}},
		{name: "any recovery fails", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].NVLinks[0].RecoveryErrors = u64(1) }),
			status: Fail, summary: "link 0: 1 recovery errors", devices: []int{1}},
		{name: "below thresholds", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].NVLinks[2].CRCFlitErrors = u64(5) }), status: Pass},
	})
}

func TestFabric(t *testing.T) {
	runCases(t, checkFabric, []checkCase{
		{name: "completed", node: healthy(nil), status: Pass, summary: "fabric registration completed on 2 GPUs"},
		{name: "in progress", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].Fabric.State = "in_progress" }),
			status: Fail, summary: "fabric registration in progress", devices: []int{1}},
		{name: "bad status", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].Fabric.Status = "unknown NVML error" }),
			status: Fail, summary: "completed with status unknown NVML error", devices: []int{0}},
		// 0x1aa: every flag FALSE (2) and configuration NONE (1), what a
		// healthy driver that fills every field reports; read as "two
		// bits, 1 = bad" it failed every GPU.
		{name: "healthy v4 mask", node: healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].Fabric.HealthMask, n.NVML.GPUs[i].Fabric.HealthSummary = 0x1aa, 1
			}
		}), status: Pass},
		{name: "degraded bandwidth", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].Fabric.HealthMask = 0x1a9 }),
			status: Fail, summary: "bandwidth degraded", devices: []int{0}},
		{name: "insufficient NVLinks", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].Fabric.HealthMask = 0x5aa }),
			status: Fail, summary: "incorrect configuration: insufficient NVLinks", devices: []int{1}},
		{name: "route recovery is transient", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].Fabric.HealthMask = 0x1a6 }),
			status: Warn, summary: "route recovery in progress", devices: []int{0}},
		{name: "summary unhealthy", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].Fabric.HealthSummary = 2 }),
			status: Fail, summary: "health summary: unhealthy", devices: []int{0}},
		{name: "summary limited capacity", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].Fabric.HealthSummary = 3 }),
			status: Warn, summary: "limited capacity", devices: []int{0}},
		{name: "PCIe GPUs", node: healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].Fabric = &state.Fabric{State: "not_supported"}
			}
		}), status: Skip, summary: "no NVSwitch fabric"},
	})
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
		return state.XIDEvent{Code: code, BusID: bus, Time: at.Add(-ago), FellOffBus: code == 79}
	}
	before := func(e state.XIDEvent) state.XIDEvent { e.BeforeDriverLoad = true; return e }
	runCases(t, checkXID, []checkCase{
		{name: "none", node: withXIDs(), status: Pass, summary: "no XID events since boot"},
		{name: "79 on GPU 1", node: withXIDs(ev(79, "0000:11:00", time.Hour)), status: Fail, summary: "GPU 1 (0000:11:00.0): Xid 79: GPU has fallen off the bus", devices: []int{1}},
		{name: "13 warns", node: withXIDs(ev(13, "0000:10:00", time.Hour)), status: Warn, summary: "Xid 13", devices: []int{0}},
		{name: "storm counted once", node: withXIDs(ev(48, "0000:10:00", 3*time.Hour), ev(48, "0000:10:00", time.Hour)), status: Fail, summary: "(2 times)", devices: []int{0}},
		{name: "outside the window", node: withXIDs(ev(79, "0000:11:00", 48*time.Hour)), cfg: func(c *Config) { c.XID.Window = 24 * time.Hour }, status: Pass, summary: "in the last 24h0m0s"},
		{name: "ignored", node: withXIDs(ev(13, "0000:10:00", time.Hour)), cfg: func(c *Config) { c.XID.Ignore = []int{13} }, status: Pass},
		{name: "critical set replaced", node: withXIDs(ev(13, "0000:10:00", time.Hour)), cfg: func(c *Config) { c.XID.Critical = []int{13} }, status: Fail, devices: []int{0}},
		{name: "fell off without an XID number", node: withXIDs(state.XIDEvent{BusID: "0000:11:00", FellOffBus: true, Message: "GPU has fallen off the bus."}),
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
		{name: "reset-class XID before a driver load", node: withXIDs(before(ev(48, "0000:10:00", 3*time.Hour)), before(ev(13, "0000:10:00", 3*time.Hour))),
			status: Pass, summary: "no XID events since boot; 2 XID(s) needing a GPU reset or an application restart were logged before the driver was last loaded"},
		{name: "fallen off the bus before a driver load still fails", node: withXIDs(before(ev(79, "0000:11:00", 3*time.Hour))), status: Fail, summary: "Xid 79", devices: []int{1}},
		{name: "admin-critical before a driver load still fails", node: withXIDs(before(ev(13, "0000:10:00", 3*time.Hour))),
			cfg: func(c *Config) { c.XID.Critical = []int{13} }, status: Fail, devices: []int{0}},
		{name: "after the load it counts", node: withXIDs(before(ev(48, "0000:10:00", 3*time.Hour)), ev(48, "0000:10:00", time.Hour)), status: Fail, summary: "GPU 0 (0000:10:00.0): Xid 48", devices: []int{0}},
		{name: "no driver, nothing logged", node: healthy(func(n *state.Node) {
			n.NVML = &state.NVML{}
			n.Kernel = kernelState(1, nil)
		}), status: Skip},
		{name: "no driver but the log shows a lost GPU", node: healthy(func(n *state.Node) {
			n.NVML = &state.NVML{}
			n.Kernel = kernelState(1, []state.XIDEvent{{Code: 79, BusID: "0000:3b:00", FellOffBus: true}})
		}), status: Fail, summary: "PCI 0000:3b:00: Xid 79"},
	})
}

func TestDriverModuleMismatch(t *testing.T) {
	runCases(t, checkDriver, []checkCase{
		{name: "match", node: healthy(func(n *state.Node) { n.Kernel = &state.Kernel{ModuleVersion: "550.54.15"} }), status: Pass},
		{name: "mismatch", node: healthy(func(n *state.Node) { n.Kernel = &state.Kernel{ModuleVersion: "535.161.08"} }),
			status: Fail, summary: "kernel module 535.161.08 but NVML library 550.54.15"},
	})
}
