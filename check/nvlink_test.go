package check

import (
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// linksOf sets the GPUs' model, their NVLinks (count listed, the first up
// of them up) and their fabric state.
func linksOf(n *state.Node, gpu int, name string, listed, up int, fabric string) {
	g := &n.NVML.GPUs[gpu]
	g.Name, g.NVLinks = name, nil
	for l := 0; l < listed; l++ {
		g.NVLinks = append(g.NVLinks, state.NVLink{Link: l, Up: l < up})
	}
	g.Fabric = &state.Fabric{State: fabric}
}

// metal is healthy() on bare metal with the topology collected (no DMI):
// the platform comes from the GPU model.
func metal(mut func(n *state.Node)) *state.Node {
	return healthy(func(n *state.Node) {
		n.Topology = &topostate.Topology{Virtualization: topostate.Virtualization{Kind: "none"}}
		if mut != nil {
			mut(n)
		}
	})
}

func TestNVLinkState(t *testing.T) {
	healthy := metal
	dgx := func(mut func(n *state.Node)) *state.Node {
		return healthy(func(n *state.Node) {
			n.Topology.DMI = &topostate.DMI{SysVendor: "NVIDIA", ProductName: "DGX H100"}
			mut(n)
		})
	}
	every := func(name string, listed, up int, fabric string) *state.Node {
		return healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				linksOf(n, i, name, listed, up, fabric)
			}
		})
	}
	runCases(t, checkNVLinkState, []checkCase{
		{name: "all up", node: healthy(nil), status: Pass, summary: "36 NVLinks up on 2 GPUs (platform hgx-h100: 18 each)"},
		{name: "one down", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].NVLinks[3].Up = false }),
			status: Fail, summary: "17 of 18 NVLinks up (link 3 down)", devices: []int{1}},
		// nvidia-smi -q prints no NVLink state: an H100 capture is not a node without NVLinks.
		{name: "capture without NVLinks", node: healthy(func(n *state.Node) {
			n.Capture = &state.Capture{NotCollected: []string{"nvlinks"}}
		}), status: Skip, summary: "NVLinks not collected"},
		{name: "links the driver no longer lists", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].NVLinks = n.NVML.GPUs[0].NVLinks[:12] }),
			status: Fail, summary: "12 of 18 NVLinks up", devices: []int{0}},
		{name: "configured expectation", node: healthy(nil), cfg: func(c *Config) { c.NVLink.ExpectedLinks = 12 }, status: Pass, summary: "(12 each, nvlink.expected_links)"},
		// The platform, not the node's majority: every GPU lost every link.
		// Compared with each other they looked alike, and this passed.
		{name: "every GPU lost every link (DGX H100)", node: dgx(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				linksOf(n, i, "NVIDIA H100 80GB HBM3", 18, 0, "completed")
			}
		}), status: Fail, summary: "0 of 18 NVLinks up (links 0-17 down)", devices: []int{0, 1}},
		{name: "every GPU lost every link (HGX board, no DMI)", node: every("NVIDIA H100 80GB HBM3", 18, 0, "not_supported"),
			status: Fail, summary: "0 of 18 NVLinks up", devices: []int{0, 1}},
		// An NVSwitch tray down: the same six links on every GPU.
		{name: "every GPU lost the same links", node: every("NVIDIA H100 80GB HBM3", 18, 12, "completed"),
			status: Fail, summary: "12 of 18 NVLinks up (links 12-17 down)", devices: []int{0, 1}},
		{name: "A100 SXM4 with its 12", node: every("NVIDIA A100-SXM4-80GB", 12, 12, "not_supported"), status: Pass, summary: "(platform hgx-a100: 12 each)"},
		// PCIe cards: NVML lists the links of an unbridged A100 as disabled.
		{name: "PCIe A100 without a bridge", node: every("NVIDIA A100 80GB PCIe", 12, 0, "not_supported"),
			status: Pass, summary: "2 GPUs without NVLink up are taken as unbridged"},
		{name: "PCIe A100 pair with a bridge missing links", node: healthy(func(n *state.Node) {
			linksOf(n, 0, "NVIDIA A100 80GB PCIe", 12, 12, "not_supported")
			linksOf(n, 1, "NVIDIA A100 80GB PCIe", 12, 8, "not_supported")
		}), status: Fail, summary: "8 of 12 NVLinks up (links 8-11 down)", devices: []int{1}},
		// One bridged card beside an unbridged one: by the node's majority
		// the unbridged card failed.
		{name: "PCIe A100, one bridged and one not", node: healthy(func(n *state.Node) {
			linksOf(n, 0, "NVIDIA A100 80GB PCIe", 12, 12, "not_supported")
			linksOf(n, 1, "NVIDIA A100 80GB PCIe", 12, 0, "not_supported")
		}), status: Pass, summary: "1 GPUs without NVLink up are taken as unbridged"},
		{name: "L40S: none, none expected", node: every("NVIDIA L40S", 0, 0, "not_supported"), status: Skip, summary: "none expected (platform pcie-l40s"},
		// NVML answered NOT_SUPPORTED for every link of an SXM GPU: nothing
		// says the links are down, so it is not judged.
		{name: "SXM GPU with no link listed", node: every("NVIDIA H100 80GB HBM3", 0, 0, "completed"),
			status: Error, summary: "NVML lists no NVLink on a GPU that has 18", devices: []int{0, 1}},
		{name: "SXM GPU whose link call failed", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[1].NVLinks = nil
			n.NVML.GPUs[1].Errors = []state.CallError{{Call: "nvmlDeviceGetNvLinkState", Error: "timeout", Timeout: true}}
		}), status: Error, summary: "nvmlDeviceGetNvLinkState: timeout", devices: []int{1}},
		{name: "SXM GPU after a hung call", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[0].NVLinks = nil
			n.NVML.GPUs[0].Errors = []state.CallError{{Call: "nvmlDeviceGetPowerUsage", Error: "no answer within 5s", Timeout: true}}
		}), status: Error, summary: "NVLink state not read: nvmlDeviceGetPowerUsage hung before it", devices: []int{0}},
		// Unknown platform (the H800 is not in the table): the node's own
		// majority, as before ...
		{name: "unknown model, one GPU short", node: healthy(func(n *state.Node) {
			linksOf(n, 0, "NVIDIA H800", 18, 8, "not_supported")
			linksOf(n, 1, "NVIDIA H800", 18, 6, "not_supported")
		}), status: Fail, summary: "6 of 8 NVLinks up", devices: []int{1}},
		{name: "unknown model, no link up, no fabric", node: every("NVIDIA H800", 18, 0, "not_supported"), status: Pass, summary: "platform unknown"},
		// ... but a GPU NVML reports attached to an NVSwitch fabric has
		// every link wired to a switch, whatever its neighbours show.
		{name: "unknown model on an NVSwitch fabric, every link lost", node: healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				linksOf(n, i, "NVIDIA H800", 18, 0, "completed")
				n.NVML.GPUs[i].Fabric.Status = "success"
			}
		}), status: Fail, summary: "0 of 18 NVLinks up, on a GPU registered with an NVSwitch fabric", devices: []int{0, 1}},
		// A registration still running is fabric.state's finding; the
		// links are not expected from it.
		{name: "unknown model, fabric registration in progress", node: every("NVIDIA H800", 18, 0, "in_progress"), status: Pass, summary: "platform unknown"},
		{name: "profile none keeps the node's majority", node: every("NVIDIA H100 80GB HBM3", 18, 0, "not_supported"),
			cfg: func(c *Config) { c.Platform.Profile = "none" }, status: Pass, summary: "platform unknown"},
		{name: "config sets the links of an unknown model", node: every("NVIDIA H800", 18, 0, "not_supported"),
			cfg: func(c *Config) { c.Platform.NVLinksPerGPU = ptr(8) }, status: Fail, summary: "0 of 8 NVLinks up", devices: []int{0, 1}},
		// MIG on: NVLink carries nothing, and the driver may train the
		// links down; the GPU is not judged (the majority rule failed it
		// beside GPUs without MIG).
		{name: "MIG GPU with its links down beside a full one", node: healthy(func(n *state.Node) {
			linksOf(n, 1, "NVIDIA H100 80GB HBM3", 18, 0, "completed")
			n.NVML.GPUs[1].MIG = &state.MIG{Current: true}
		}), status: Pass, summary: "18 NVLinks up on 2 GPUs"},
		{name: "every GPU in MIG", node: healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				linksOf(n, i, "NVIDIA H100 80GB HBM3", 18, 0, "completed")
				n.NVML.GPUs[i].MIG = &state.MIG{Current: true}
			}
		}), status: Skip, summary: "MIG enabled"},
		// Without the topology (a failed collector, an old snapshot) the
		// platform is not decided: the node's majority, as before.
		{name: "no topology: every link lost passes as before", node: healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				linksOf(n, i, "NVIDIA H100 80GB HBM3", 18, 0, "not_supported")
			}
			n.Topology = nil
		}), status: Pass, summary: "platform unknown, the topology (DMI, virtualization) was not collected"},
		// A guest sees what the hypervisor passes: one SXM GPU without links.
		{name: "VM with an SXM GPU and no link up", node: healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				linksOf(n, i, "NVIDIA H100 80GB HBM3", 18, 0, "not_supported")
			}
			n.Topology.Virtualization.Kind = "vm"
		}), status: Pass, summary: "platform unknown, a virtual machine"},
		{name: "no NVLink on an unknown model", node: healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].Name = "NVIDIA RTX 6000 Ada Generation"
				n.NVML.GPUs[i].NVLinks = nil
			}
		}), status: Skip, summary: "no NVLinks"},
	})
}

func TestNVLinkErrors(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	// set sets one counter of one link: "flit", "data", "replay" or "recovery".
	set := func(gpu, link int, counter string, v uint64) func(n *state.Node) {
		return func(n *state.Node) {
			l := &n.NVML.GPUs[gpu].NVLinks[link]
			*map[string]**uint64{"flit": &l.CRCFlitErrors, "data": &l.CRCDataErrors, "replay": &l.ReplayErrors, "recovery": &l.RecoveryErrors}[counter] = u64(v)
		}
	}
	// daemon is the daemon's second cycle, span after its first: before
	// sets the first sample's counters, now this one's.
	daemon := func(span time.Duration, before, now func(n *state.Node)) *state.Node {
		first := healthy(before)
		first.CollectedAt = t0
		n := healthy(now)
		n.CollectedAt = t0.Add(span)
		n.Previous = state.PreviousOf(first)
		return n
	}
	both := func(fs ...func(n *state.Node)) func(n *state.Node) {
		return func(n *state.Node) {
			for _, f := range fs {
				f(n)
			}
		}
	}
	runCases(t, checkNVLinkErrors, []checkCase{
		// One sample (a one-shot check): the totals since the counters were
		// last reset, which may be months old.
		{name: "clean, one sample", node: healthy(nil), status: Pass, summary: "on 36 links (totals since the counters were last reset, from one sample)"},
		{name: "crc total over threshold", node: healthy(set(0, 2, "flit", 500)),
			status: Warn, summary: "link 2: 500 CRC flit errors since the counters were last reset", devices: []int{0}},
		{name: "replay total", node: healthy(set(1, 7, "replay", 100)), status: Warn, summary: "link 7: 100 replay errors", devices: []int{1}},
		{name: "crc total below threshold", node: healthy(set(0, 2, "flit", 5)), status: Pass},
		// An old recovery count is not known to be growing: it failed, and
		// drained a healthy node for a months-old error; it warns now.
		{name: "old recovery count warns from one sample", node: healthy(set(1, 0, "recovery", 1)),
			status: Warn, summary: "link 0: 1 recovery errors since the counters were last reset (driver load or GPU reset); one sample cannot tell", devices: []int{1}},
		// The daemon: growth over the interval, DCGM's health-watch rules.
		{name: "clean, over the interval", node: daemon(30*time.Second, nil, nil), status: Pass, summary: "no NVLink error growth over thresholds on 36 links in the last 30s"},
		{name: "old recovery count, not growing, passes", node: daemon(30*time.Second, set(1, 0, "recovery", 5), set(1, 0, "recovery", 5)), status: Pass},
		{name: "old CRC and replay totals, not growing, pass", node: daemon(30*time.Second,
			both(set(0, 2, "flit", 5000), set(0, 3, "replay", 900)), both(set(0, 2, "flit", 5000), set(0, 3, "replay", 900))), status: Pass},
		{name: "recovery growth fails", node: daemon(30*time.Second, set(1, 4, "recovery", 5), set(1, 4, "recovery", 6)),
			status: Fail, summary: "link 4: 1 recovery errors in the last 30s", remedy: "Xid 74", devices: []int{1}},
		{name: "CRC growth at a low rate warns", node: daemon(30*time.Second, set(0, 2, "flit", 40), set(0, 2, "flit", 50)),
			status: Warn, summary: "link 2: 10 CRC flit errors in the last 30s (20.0/min; warn at 1/min", devices: []int{0}},
		{name: "CRC growth at 100/s fails", node: daemon(30*time.Second, nil, set(0, 5, "data", 3000)),
			status: Fail, summary: "link 5: 3000 CRC data errors in the last 30s (100.0/s; fail at 100/s", devices: []int{0}},
		{name: "CRC growth just under 100/s warns", node: daemon(30*time.Second, nil, set(0, 5, "data", 2999)), status: Warn, devices: []int{0}},
		{name: "one CRC error in five minutes is under the warning rate", node: daemon(5*time.Minute, nil, set(0, 5, "flit", 1)), status: Pass},
		{name: "CRC warning off", node: daemon(30*time.Second, nil, set(0, 2, "flit", 10)),
			cfg: func(c *Config) { c.NVLink.CRCWarnPerMinute = 0 }, status: Pass},
		{name: "replay growth warns", node: daemon(30*time.Second, set(1, 7, "replay", 3), set(1, 7, "replay", 4)),
			status: Warn, summary: "link 7: 1 replay errors in the last 30s", devices: []int{1}},
		{name: "replay growth fails as DCGM's when configured", node: daemon(30*time.Second, set(1, 7, "replay", 3), set(1, 7, "replay", 4)),
			cfg: func(c *Config) { c.NVLink.ReplayGrowthFail = 1 }, status: Fail, summary: "fail at 1, nvlink.replay_growth_fail", devices: []int{1}},
		// A counter that went down was reset (driver reload, GPU reset):
		// not negative growth, nor a wrapped-around huge one.
		{name: "counters reset to zero", node: daemon(30*time.Second,
			both(set(0, 2, "flit", 5000), set(0, 2, "recovery", 7)), nil), status: Pass},
		{name: "recoveries after a reset fail", node: daemon(30*time.Second, set(0, 2, "recovery", 7), set(0, 2, "recovery", 1)),
			status: Fail, summary: "link 2: 1 recovery errors in the last 30s (the counter went back from 7: reset since the previous sample", devices: []int{0}},
		// A GPU the previous cycle did not see (a new UUID) has one sample.
		{name: "GPU without a previous sample", node: func() *state.Node {
			n := daemon(30*time.Second, nil, set(1, 0, "recovery", 3))
			n.Previous.GPUs = n.Previous.GPUs[:1]
			return n
		}(), status: Warn, summary: "3 recovery errors since the counters were last reset", devices: []int{1}},
		{name: "part judged over time", node: func() *state.Node {
			n := daemon(30*time.Second, nil, nil)
			n.Previous.GPUs = n.Previous.GPUs[:1]
			return n
		}(), status: Pass, summary: "on 36 links (18 judged by their growth in the last 30s, the rest by their totals from one sample)"},
		// The clock went back: no interval, one sample.
		{name: "previous sample not earlier", node: func() *state.Node {
			n := daemon(30*time.Second, set(1, 0, "recovery", 2), set(1, 0, "recovery", 2))
			n.CollectedAt = t0
			return n
		}(), status: Warn, summary: "one sample cannot tell", devices: []int{1}},
	})
}

func TestFabric(t *testing.T) {
	runCases(t, checkFabric, []checkCase{
		{name: "completed", node: healthy(nil), status: Pass, summary: "fabric registration completed on 2 GPUs"},
		// DCGM warns: Fabric Manager trains the links after boot (issue 26).
		{name: "in progress", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].Fabric.State = "in_progress" }),
			status: Warn, summary: "fabric registration in progress", devices: []int{1}},
		{name: "not started", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].Fabric.State = "not_started" }),
			status: Fail, summary: "fabric registration not started", devices: []int{1}},
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
