package check

import (
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

func ptr[T any](v T) *T { return &v }

// healthy fills in what a healthy idle H100 reports, on top of node().
func healthy(mut func(n *state.Node)) *state.Node {
	return node(func(n *state.Node) {
		for i := range n.NVML.GPUs {
			g := &n.NVML.GPUs[i]
			g.Name = "NVIDIA H100 80GB HBM3"
			g.ClockEvents = &state.ClockEvents{Mask: 1, Reasons: []string{"gpu_idle"}}
			g.PCIe = &state.PCIe{CurrentGen: 5, MaxGen: 5, CurrentWidth: 16, MaxWidth: 16, ReplayCounter: u64(0)}
			g.PersistenceMode = ptr(true)
			g.Thermal = &state.Thermal{TemperatureC: 30, SlowdownC: ptr(90)}
			g.Power = &state.Power{DrawWatts: 70, LimitWatts: ptr(700.0)}
			g.ProcessesKnown = true
			g.Memory = &state.Memory{TotalBytes: 80 << 30, UsedBytes: 0, FreeBytes: 80 << 30}
			g.MIG = &state.MIG{}
			for l := 0; l < 18; l++ {
				g.NVLinks = append(g.NVLinks, state.NVLink{Link: l, Up: true, CRCFlitErrors: u64(0), CRCDataErrors: u64(0), ReplayErrors: u64(0), RecoveryErrors: u64(0)})
			}
			g.Fabric = &state.Fabric{State: "completed", Status: "success"}
		}
		n.Kernel = nil
		if mut != nil {
			mut(n)
		}
	})
}

func TestRetiredPages(t *testing.T) {
	older := func(mut func(*state.RetiredPages)) *state.Node {
		return healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].RemappedRows = nil
				n.NVML.GPUs[i].RetiredPages = &state.RetiredPages{SingleBitECC: 2}
			}
			mut(n.NVML.GPUs[1].RetiredPages)
		})
	}
	runCases(t, checkRetiredPages, []checkCase{
		{name: "few retired", node: older(func(*state.RetiredPages) {}), status: Pass, summary: "no pending retirement on 2 GPUs"},
		{name: "pending", node: older(func(r *state.RetiredPages) { r.Pending = true }), status: Fail, summary: "page retirement pending", devices: []int{1}},
		{name: "at RMA threshold", node: older(func(r *state.RetiredPages) { r.SingleBitECC, r.DoubleBitECC = 50, 10 }), status: Fail, summary: "60 pages retired", devices: []int{1}},
		{name: "threshold configurable", node: older(func(r *state.RetiredPages) { r.SingleBitECC = 50 }), cfg: func(c *Config) { c.RetiredPages.Max = 40 }, status: Fail, devices: []int{1}},
		{name: "row remapping GPUs", node: healthy(nil), status: Skip, summary: "uses row remapping instead"},
	})
}

func TestThrottle(t *testing.T) {
	reasons := func(gpu int, r ...string) *state.Node {
		return healthy(func(n *state.Node) { n.NVML.GPUs[gpu].ClockEvents.Reasons = r })
	}
	runCases(t, checkThrottle, []checkCase{
		{name: "idle", node: healthy(nil), status: Pass},
		{name: "app clocks and sync boost pass", node: reasons(0, "applications_clocks_setting", "sync_boost"), status: Pass},
		// One sample of HW slowdown alone can be a clock change: a warning,
		// not a drain. With its thermal cause it fails.
		{name: "hw slowdown alone", node: reasons(1, "hw_slowdown"), status: Warn, summary: "GPU 1 (0000:11:00.0): hw_slowdown active in this sample", devices: []int{1}},
		{name: "hw slowdown with its thermal cause", node: reasons(1, "hw_slowdown", "hw_thermal_slowdown"), status: Fail, summary: "hw_slowdown active", devices: []int{1}},
		{name: "hw thermal", node: reasons(0, "hw_thermal_slowdown"), status: Fail, summary: "hw_thermal_slowdown", devices: []int{0}},
		{name: "power brake", node: reasons(0, "hw_power_brake_slowdown"), status: Fail, summary: "power_brake", devices: []int{0}},
		// A busy GPU at its power limit reports SW power cap; with --strict
		// this used to drain busy nodes.
		{name: "sw power cap on a busy GPU passes", node: reasons(1, "sw_power_cap"), status: Pass},
		{name: "sw thermal warns", node: reasons(1, "sw_thermal_slowdown"), status: Warn, devices: []int{1}},
	})
}

func TestPCIeLink(t *testing.T) {
	runCases(t, checkPCIeLink, []checkCase{
		{name: "full", node: healthy(nil), status: Pass},
		// nvidia-smi: width, like generation, may be reduced while idle.
		{name: "idle GPU at x8 is fine", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].PCIe.CurrentWidth = 8 }), status: Pass},
		{name: "busy GPU at x8 of x16 fails", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[1].PCIe.CurrentWidth = 8
			n.NVML.GPUs[1].ClockEvents.Reasons = nil
		}), status: Fail, summary: "PCIe link x8 of x16 while busy", devices: []int{1}},
		// An idle process holding a context is not work: no Gen warning.
		{name: "idle GPU with a process at gen1 is fine", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[0].PCIe.CurrentGen = 1
			n.NVML.GPUs[0].Processes = []state.Process{{PID: 7}}
		}), status: Pass},
		{name: "unknown idleness is not judged", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[0].PCIe.CurrentWidth = 8
			n.NVML.GPUs[0].ClockEvents = nil
		}), status: Pass, summary: "whether the GPU is idle is unknown"},
		{name: "idle GPU at gen1 is fine", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].PCIe.CurrentGen = 1 }), status: Pass},
		{name: "busy GPU below max gen warns", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[0].PCIe.CurrentGen = 3
			n.NVML.GPUs[0].ClockEvents.Reasons = nil
		}), status: Warn, summary: "PCIe Gen3 of Gen5 while busy", devices: []int{0}},
		{name: "replay storm", node: healthy(func(n *state.Node) {
			n.Kernel = nil
			n.NVML.GPUs[1].PCIe.ReplayCounter = u64(100000)
		}), status: Pass}, // no uptime, no rate
		{name: "replay rate over threshold", node: healthy(func(n *state.Node) {
			n.Kernel = kernelState(3600, nil)
			n.NVML.GPUs[1].PCIe.ReplayCounter = u64(1200) // 20/min
		}), status: Warn, summary: "1200 PCIe replays since boot (20.0/min", devices: []int{1}},
		{name: "a few replays are normal", node: healthy(func(n *state.Node) {
			n.Kernel = kernelState(86400, nil)
			n.NVML.GPUs[1].PCIe.ReplayCounter = u64(67)
		}), status: Pass},
	})
}

func TestPersistence(t *testing.T) {
	runCases(t, checkPersistence, []checkCase{
		{name: "on", node: healthy(nil), status: Pass},
		{name: "off", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].PersistenceMode = ptr(false) }), status: Warn, summary: "persistence mode off", devices: []int{0}},
		{name: "all off merges", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[0].PersistenceMode = ptr(false)
			n.NVML.GPUs[1].PersistenceMode = ptr(false)
		}), status: Warn, summary: "GPUs 0,1: persistence mode off", devices: []int{0, 1}},
	})
}

func TestTemperature(t *testing.T) {
	runCases(t, checkTemperature, []checkCase{
		{name: "cool", node: healthy(nil), status: Pass, summary: "hottest GPU 30 °C"},
		{name: "near slowdown", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].Thermal.TemperatureC = 86 }), status: Warn, summary: "86 °C", devices: []int{1}},
		{name: "at slowdown", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].Thermal.TemperatureC = 90 }), status: Fail, summary: "at or above the slowdown threshold 90", devices: []int{1}},
		{name: "configured limit", node: healthy(nil), cfg: func(c *Config) { c.Temperature.FailC = 25 }, status: Fail, devices: []int{0, 1}},
	})
}

func TestPower(t *testing.T) {
	runCases(t, checkPower, []checkCase{
		{name: "idle", node: healthy(nil), status: Pass, summary: "drawing 140 W"},
		{name: "capped", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].Power.LimitWatts = ptr(300.0) }), cfg: func(c *Config) { c.Power.MinLimitWatts = 700 },
			status: Fail, summary: "power limit 300 W, below the required 700 W", devices: []int{0}},
		{name: "over limit", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].Power.DrawWatts = 800 }), status: Warn, summary: "drawing 800 W over its 700 W limit", devices: []int{1}},
	})
}

func TestProcesses(t *testing.T) {
	leftover := healthy(func(n *state.Node) {
		n.NVML.GPUs[0].Processes = []state.Process{{PID: 4242, UsedMemoryBytes: 4 << 30, User: "alice", Command: "python train.py"}}
	})
	runCases(t, checkProcesses, []checkCase{
		{name: "idle", node: healthy(nil), status: Pass, summary: "2 GPUs idle"},
		{name: "leftover warns", node: leftover, status: Warn, summary: "pid 4242 (alice: python train.py) 4096 MiB", devices: []int{0}},
		{name: "leftover fails when idle expected", node: leftover, cfg: func(c *Config) { c.Processes.ExpectIdle = true }, status: Fail, devices: []int{0}},
		{name: "memory without process", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].Memory.UsedBytes = 2 << 30 }), status: Warn, summary: "2048 MiB in use with no compute process", devices: []int{1}},
		{name: "unknown process list", node: healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].ProcessesKnown = false
			}
		}), status: Skip},
	})
}

func TestMIG(t *testing.T) {
	runCases(t, checkMIG, []checkCase{
		{name: "off everywhere", node: healthy(nil), status: Pass, summary: "MIG disabled on 2 GPUs"},
		{name: "pending", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].MIG.Pending = true }), status: Warn, summary: "pending a GPU reset", devices: []int{1}},
		{name: "mixed, uniform expected", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].MIG = &state.MIG{Current: true, Pending: true} }),
			cfg: func(c *Config) { c.MIG.Uniform = true }, status: Fail, summary: "MIG mode differs across GPUs"},
		{name: "mixed allowed", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].MIG = &state.MIG{Current: true, Pending: true} }), status: Pass, summary: "mixed"},
		{name: "expected enabled", node: healthy(nil), cfg: func(c *Config) { c.MIG.Expect = "enabled" }, status: Fail, summary: "MIG disabled, expected enabled", devices: []int{0, 1}},
	})
}
