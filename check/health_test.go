package check

import (
	"testing"
	"time"

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
		// Retired pages below the limit are said beside the pass, not hidden
		// (nvsmi/testdata/gls_v100x8_550.127.05_nvidia-smi-q.txt).
		{name: "few retired are named", node: older(func(*state.RetiredPages) {}), status: Pass,
			summary: "pages retired and blacklisted, below the limit of 60: GPU 0: 2 (2 single-bit, 0 double-bit), GPU 1: 2 (2 single-bit, 0 double-bit)"},
		{name: "few retired, no limit", node: older(func(*state.RetiredPages) {}), cfg: func(c *Config) { c.RetiredPages.Max = 0 }, status: Pass,
			summary: "pages retired and blacklisted, no limit set: GPU 0: 2"},
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
		// An older driver: the collector asked the ThrottleReasons name, and
		// its failure was read as "not supported" (a skip).
		{name: "the older entry point failed", node: healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].ClockEvents = nil
				n.NVML.GPUs[i].Errors = []state.CallError{{Call: "nvmlDeviceGetCurrentClocksThrottleReasons", Error: "unknown error"}}
			}
		}), status: Error, summary: "nvmlDeviceGetCurrentClocksThrottleReasons: unknown error", devices: []int{0, 1}},
		{name: "app clocks and sync boost pass", node: reasons(0, "applications_clocks_setting", "sync_boost"), status: Pass},
		// One sample of HW slowdown alone can be a clock change: a warning,
		// not a drain. With its thermal cause it fails.
		{name: "hw slowdown alone", node: reasons(1, "hw_slowdown"), status: Warn, summary: "GPU 1 (0000:11:00.0): hw_slowdown active in this sample", devices: []int{1}},
		// Issue 26: HW thermal slowdown or power brake in the one sample of
		// a one-shot run warns (DCGM's thermal watch warns; gpud asks for a
		// rate over minutes); the daemon fails it when it held
		// (TestThrottleOverTime).
		{name: "hw slowdown with its thermal cause, one sample", node: reasons(1, "hw_slowdown", "hw_thermal_slowdown"), status: Warn, summary: "hw_slowdown active in this sample (a one-shot run takes one sample", devices: []int{1}},
		{name: "hw thermal, one sample", node: reasons(0, "hw_thermal_slowdown"), status: Warn, summary: "hw_thermal_slowdown active in this sample (a one-shot run", devices: []int{0}},
		{name: "power brake, one sample", node: reasons(0, "hw_power_brake_slowdown"), status: Warn, summary: "hw_power_brake_slowdown active in this sample", devices: []int{0}},
		// A busy GPU at its power limit reports SW power cap; with --strict
		// this used to drain busy nodes.
		{name: "sw power cap on a busy GPU passes", node: reasons(1, "sw_power_cap"), status: Pass},
		{name: "sw thermal warns", node: reasons(1, "sw_thermal_slowdown"), status: Warn, devices: []int{1}},
	})
}

// In the daemon, NVML's cumulative violation counters between two cycles
// decide, not the one sample: a slowdown that held between scrapes is seen
// though the sample at the scrape shows none, and a momentary one in the
// sample is not a finding.
// hwSampled adds GPU 1's HW slowdown counters (moved by thermalNs and
// brakeNs over the 30 s of TestThrottleOverTime's samples) and the previous
// cycle's clock event reasons (nil: not recorded) to every GPU.
func hwSampled(n *state.Node, prevReasons []string, thermalNs, brakeNs uint64) *state.Node {
	const refUs = 1_700_000_000_000_000
	for i := range n.NVML.GPUs {
		g := &n.NVML.GPUs[i]
		th, br := uint64(0), uint64(0)
		if i == 1 {
			th, br = thermalNs, brakeNs
		}
		n.Previous.GPUs[i].Violations = append(n.Previous.GPUs[i].Violations,
			state.Violation{Policy: "hw_thermal_slowdown", ReferenceTimeUs: refUs, ViolationNs: 7e9},
			state.Violation{Policy: "hw_power_brake_slowdown", ReferenceTimeUs: refUs, ViolationNs: 0})
		g.Violations = append(g.Violations,
			state.Violation{Policy: "hw_thermal_slowdown", ReferenceTimeUs: refUs + 30e6, ViolationNs: 7e9 + th},
			state.Violation{Policy: "hw_power_brake_slowdown", ReferenceTimeUs: refUs + 30e6, ViolationNs: br})
		n.Previous.GPUs[i].ClockEvents = prevReasons
	}
	return n
}

func TestThrottleOverTime(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	const refUs = 1_700_000_000_000_000
	// sampled: GPU 1's counters moved by thermalNs and boardNs over 30 s
	// (NVML's reference times 30 s apart); the mask holds reasons.
	sampled := func(thermalNs, boardNs uint64, reasons ...string) *state.Node {
		return healthy(func(n *state.Node) {
			n.CollectedAt = t0.Add(30 * time.Second)
			n.Previous = &state.Previous{CollectedAt: t0}
			for i := range n.NVML.GPUs {
				g := &n.NVML.GPUs[i]
				old := []state.Violation{{Policy: "power", ReferenceTimeUs: refUs, ViolationNs: 5e9}, {Policy: "thermal", ReferenceTimeUs: refUs, ViolationNs: 1e9}, {Policy: "board_limit", ReferenceTimeUs: refUs, ViolationNs: 0}}
				n.Previous.GPUs = append(n.Previous.GPUs, state.PreviousGPU{UUID: g.UUID, Violations: old})
				th, bl := uint64(0), uint64(0)
				if i == 1 {
					th, bl = thermalNs, boardNs
					if len(reasons) > 0 {
						g.ClockEvents.Reasons = reasons
					}
				}
				// power moved by the whole interval: a busy GPU at its power
				// limit, which is never a finding.
				g.Violations = []state.Violation{{Policy: "power", ReferenceTimeUs: refUs + 30e6, ViolationNs: 35e9}, {Policy: "thermal", ReferenceTimeUs: refUs + 30e6, ViolationNs: 1e9 + th}, {Policy: "board_limit", ReferenceTimeUs: refUs + 30e6, ViolationNs: bl}}
			}
		})
	}
	runCases(t, checkThrottle, []checkCase{
		{name: "no violation over the interval", node: sampled(0, 0), status: Pass, summary: "judged over the last 30s on 2"},
		{name: "thermal slowdown between scrapes warns though the sample is idle", node: sampled(15e9, 0), status: Warn,
			summary: "GPU 1 (0000:11:00.0): thermal (SW thermal slowdown) held the clocks below application clocks for 50% of the last 30s", devices: []int{1}},
		{name: "board limit between scrapes warns", node: sampled(0, 6e9), status: Warn, summary: "board limit held the clocks below application clocks for 20%", devices: []int{1}},
		{name: "momentary sw thermal in the sample passes", node: sampled(1e8, 0, "sw_thermal_slowdown"), status: Pass},
		{name: "10% is not above 10%", node: sampled(3e9, 0), status: Pass},
		{name: "threshold configurable", node: sampled(3e9, 0), cfg: func(c *Config) { c.Throttle.ViolationWarnPercent = 5 }, status: Warn, devices: []int{1}},
		// Turned off, the one sample decides again.
		{name: "off: the sample decides", node: sampled(15e9, 0, "sw_thermal_slowdown"), cfg: func(c *Config) { c.Throttle.ViolationWarnPercent = 0 }, status: Warn, summary: "sw_thermal_slowdown active", devices: []int{1}},
		// HW slowdown has no violation counter: its one-sample rule stands.
		{name: "hw slowdown alone still judged on the sample", node: sampled(0, 0, "hw_slowdown"), status: Warn, summary: "hw_slowdown active in this sample", devices: []int{1}},
		// nvml.h's HW thermal / power-brake slowdown counters (field values
		// 270, 271) and the previous cycle's reasons: HW slowdown in one
		// sample with neither counter moving is the clock-change transient;
		// in two samples in a row it is held; a counter that moved fails
		// though the sample at the scrape is clean.
		{name: "hw slowdown once, counters still: transient", node: hwSampled(sampled(0, 0, "hw_slowdown"), []string{"gpu_idle"}, 0, 0), status: Pass},
		{name: "hw slowdown in two samples in a row warns", node: hwSampled(sampled(0, 0, "hw_slowdown"), []string{"hw_slowdown"}, 0, 0), status: Warn,
			summary: "hw_slowdown active in two samples 30s apart", devices: []int{1}},
		{name: "HW thermal slowdown between scrapes fails", node: hwSampled(sampled(0, 0), []string{}, 6e9, 0), status: Fail,
			summary: "GPU 1 (0000:11:00.0): HW thermal slowdown (clocks halved or more) held for 20% of the last 30s", devices: []int{1}},
		{name: "hw slowdown once while the power brake counter moved", node: hwSampled(sampled(0, 0, "hw_slowdown"), []string{}, 0, 15e9), status: Fail,
			summary: "HW power brake slowdown (clocks halved or more) held for 50%", devices: []int{1}},
		// Issue 26: over the daemon's window, HW thermal slowdown or power
		// brake in the sample fails when it held (in the previous sample
		// too, or its counter grew) and warns when it is momentary.
		{name: "hw thermal in two samples in a row fails", node: hwSampled(sampled(0, 0, "hw_thermal_slowdown"), []string{"hw_thermal_slowdown"}, 0, 0), status: Fail,
			summary: "hw_thermal_slowdown active in two samples 30s apart: held", devices: []int{1}},
		{name: "hw thermal once, counter still: momentary, warns", node: hwSampled(sampled(0, 0, "hw_thermal_slowdown"), []string{"gpu_idle"}, 0, 0), status: Warn,
			summary: "hw_thermal_slowdown active in this sample only (not active in the previous sample 30s ago", devices: []int{1}},
		{name: "power brake once, its counter held it: fails", node: hwSampled(sampled(0, 0, "hw_power_brake_slowdown"), []string{}, 0, 15e9), status: Fail,
			summary: "hw_power_brake_slowdown active and its NVML counter held it for 50%", devices: []int{1}},
		{name: "hw slowdown with its thermal cause once, previous reasons not read", node: hwSampled(sampled(0, 0, "hw_slowdown", "hw_thermal_slowdown"), nil, 0, 0), status: Warn,
			summary: "the previous sample's reasons were not read", devices: []int{1}},
		{name: "HW slowdown counters below the share pass", node: hwSampled(sampled(0, 0), nil, 1e9, 1e9), status: Pass},
		{name: "counter went backwards (driver reload): no rate, the sample decides", node: func() *state.Node {
			n := sampled(0, 0, "sw_thermal_slowdown")
			n.Previous.GPUs[1].Violations[1].ViolationNs = 9e18
			return n
		}(), status: Warn, summary: "sw_thermal_slowdown active", devices: []int{1}},
		{name: "previous sample of another GPU: no rate", node: func() *state.Node {
			n := sampled(15e9, 0, "sw_thermal_slowdown")
			n.Previous.GPUs[1].UUID = "GPU-other"
			return n
		}(), status: Warn, summary: "sw_thermal_slowdown active", devices: []int{1}},
		// NVML's reference times closer than the collections (they may be
		// when the counter last moved): the longer interval is used, so the
		// share is never overstated (15 s of 30 s, not of 10 s).
		{name: "reference times closer than the collections", node: func() *state.Node {
			n := sampled(15e9, 0)
			for i := range n.NVML.GPUs {
				for j := range n.NVML.GPUs[i].Violations {
					n.NVML.GPUs[i].Violations[j].ReferenceTimeUs = refUs + 10e6
				}
			}
			return n
		}(), status: Warn, summary: "for 50% of the last 30s", devices: []int{1}},
		{name: "reference times further apart than the collections", node: func() *state.Node {
			n := sampled(15e9, 0)
			for i := range n.NVML.GPUs {
				for j := range n.NVML.GPUs[i].Violations {
					n.NVML.GPUs[i].Violations[j].ReferenceTimeUs = refUs + 60e6
				}
			}
			return n
		}(), status: Warn, summary: "for 25% of the last 1m0s", devices: []int{1}},
		{name: "no reference times: the collection times are the interval", node: func() *state.Node {
			n := sampled(15e9, 0)
			for i := range n.NVML.GPUs {
				for j := range n.NVML.GPUs[i].Violations {
					n.NVML.GPUs[i].Violations[j].ReferenceTimeUs = 0
				}
			}
			return n
		}(), status: Warn, summary: "for 50% of the last 30s", devices: []int{1}},
	})
}

func TestPCIeLink(t *testing.T) {
	runCases(t, checkPCIeLink, []checkCase{
		{name: "full", node: healthy(nil), status: Pass},
		// nvidia-smi: width, like generation, may be reduced while idle.
		// An idle A10G at Gen1 x8 of Gen4 x16 (nvsmi/testdata/telegraf_a10g_515.105.01_nvidia-smi-q-x.xml)
		// passed as "at full width": true verdict, untrue words.
		{name: "idle GPU at x8 is fine", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].PCIe.CurrentWidth = 8 }), status: Pass,
			summary: "PCIe links at full width on 1 GPUs; 1 idle GPU(s) at a reduced link"},
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
		// Issue 32: a width of -16 or 0 in a snapshot passed as "idle at a
		// reduced link", and a max width of 0 as "full width".
		{name: "negative width is not read, not idle", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].PCIe.CurrentWidth = -16 }),
			status: Warn, summary: "PCIe link state could not be read (Gen5 of Gen5, x-16 of x16)", devices: []int{1}},
		{name: "zero width is not read", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].PCIe.CurrentWidth = 0 }),
			status: Warn, summary: "could not be read (Gen5 of Gen5, x0 of x16)", devices: []int{1}},
		{name: "zero max width is not full width", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].PCIe.MaxWidth = 0 }),
			status: Warn, summary: "could not be read (Gen5 of Gen5, x16 of x0)", devices: []int{0}},
		{name: "zero generation is not read", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[0].PCIe.CurrentGen = 0
			n.NVML.GPUs[0].ClockEvents.Reasons = nil
		}), status: Warn, summary: "could not be read (Gen0 of Gen5, x16 of x16)", devices: []int{0}},
		// Issue 26: idle GPUs whose Idle bit is clear (SW power cap set, or
		// no reason at all), as four real captures showed: at P8, 0 %
		// utilisation and a few watts, the reduced link is idle's. Both
		// warned "while busy".
		{name: "P8 at 0 % with SW power cap and no Idle bit is idle", node: healthy(func(n *state.Node) {
			g := &n.NVML.GPUs[0]
			g.PCIe.CurrentGen = 1
			g.ClockEvents.Reasons = []string{"sw_power_cap"}
			g.Utilization = &state.Utilization{}
			g.PerformanceState = ptr(8)
			g.Power = &state.Power{DrawWatts: 11, LimitWatts: ptr(300.0)}
		}), status: Pass, summary: "1 idle GPU(s) at a reduced link"},
		{name: "no reason at all, 0 % and a few watts (P-state not read) is idle", node: healthy(func(n *state.Node) {
			g := &n.NVML.GPUs[1]
			g.PCIe.CurrentGen = 1
			g.ClockEvents.Reasons = nil
			g.Utilization = &state.Utilization{}
			g.Power = &state.Power{DrawWatts: 9, LimitWatts: ptr(230.0)}
		}), status: Pass, summary: "1 idle GPU(s) at a reduced link"},
		// Guards (they warned before too): 0 % at P0, or 0 % with nothing
		// else read, stays busy.
		{name: "0 % at P0 is not called idle", node: healthy(func(n *state.Node) {
			g := &n.NVML.GPUs[0]
			g.PCIe.CurrentGen = 3
			g.ClockEvents.Reasons = nil
			g.Utilization = &state.Utilization{}
			g.PerformanceState = ptr(0)
		}), status: Warn, summary: "PCIe Gen3 of Gen5 while busy", devices: []int{0}},
		{name: "0 % with neither P-state nor power read is not called idle", node: healthy(func(n *state.Node) {
			g := &n.NVML.GPUs[0]
			g.PCIe.CurrentGen = 3
			g.ClockEvents.Reasons = nil
			g.Utilization = &state.Utilization{}
			g.Power = nil
		}), status: Warn, devices: []int{0}},
		{name: "replay storm", node: healthy(func(n *state.Node) {
			n.Kernel = nil
			n.NVML.GPUs[1].PCIe.ReplayCounter = u64(100000)
		}), status: Pass}, // no uptime, no rate
		{name: "replay rate over threshold", node: healthy(func(n *state.Node) {
			n.Kernel = kernelState(3600, nil)
			n.NVML.GPUs[1].PCIe.ReplayCounter = u64(2400) // 40/min, over Gen5 x16's 31/min
		}), status: Warn, summary: "2400 PCIe replays since boot (40.0/min, threshold 31/min, DCGM's limit for Gen5 x16)", devices: []int{1}},
		{name: "a few replays are normal", node: healthy(func(n *state.Node) {
			n.Kernel = kernelState(86400, nil)
			n.NVML.GPUs[1].PCIe.ReplayCounter = u64(67)
		}), status: Pass},
		// The daemon's previous cycle: a burst of 300 replays in the last
		// 15 s warns, though the average since boot (a day) is low.
		{name: "burst between two cycles", node: healthy(func(n *state.Node) {
			n.Kernel = kernelState(86400, nil)
			n.CollectedAt = time.Date(2026, 11, 24, 4, 0, 15, 0, time.UTC)
			n.NVML.GPUs[1].PCIe.ReplayCounter = u64(367)
			n.Previous = &state.Previous{CollectedAt: time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC),
				GPUs: []state.PreviousGPU{{UUID: n.NVML.GPUs[1].UUID, PCIeReplays: u64(67)}}}
		}), status: Warn, summary: "300 PCIe replays in the last 15s (1200.0/min", devices: []int{1}},
		// ... and a storm long past no longer warns once the daemon sees none new.
		{name: "old storm, quiet now", node: healthy(func(n *state.Node) {
			n.Kernel = kernelState(3600, nil)
			n.CollectedAt = time.Date(2026, 11, 24, 4, 0, 15, 0, time.UTC)
			n.NVML.GPUs[1].PCIe.ReplayCounter = u64(1200)
			n.Previous = &state.Previous{CollectedAt: time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC),
				GPUs: []state.PreviousGPU{{UUID: n.NVML.GPUs[1].UUID, PCIeReplays: u64(1200)}}}
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

// The memory (HBM) temperature, NVML_FI_DEV_MEMORY_TEMP, against the
// GPU's NVML_TEMPERATURE_THRESHOLD_MEM_MAX ("Memory Temperature at which
// the GPU will begin SW slowdown", nvml.h): fail at it, warn 5 °C below,
// as the core temperature. It was not read (issue 26): every row but the
// cool and unsupported ones passed.
func TestTemperatureMemory(t *testing.T) {
	mem := func(gpu, c int, limit *int, mut func(g *state.GPU)) *state.Node {
		return healthy(func(n *state.Node) {
			g := &n.NVML.GPUs[gpu]
			g.Thermal.MemoryTemperatureC, g.Thermal.MemoryMaxC = ptr(c), limit
			if mut != nil {
				mut(g)
			}
		})
	}
	runCases(t, checkTemperature, []checkCase{
		// The real H100's memory beside its core (34 °C, 35 °C:
		// nvsmi/testdata/realgpu_h100_580.159.04_nvidia-smi-q.txt).
		{name: "HBM cool", node: mem(0, 34, ptr(95), nil), status: Pass, summary: "hottest GPU 30 °C"},
		{name: "HBM at its max threshold", node: mem(1, 95, ptr(95), nil), status: Fail,
			summary: "memory at 95 °C, at or above its max threshold 95 °C", remedy: "cooling", devices: []int{1}},
		{name: "HBM above its max threshold", node: mem(1, 101, ptr(95), nil), status: Fail, devices: []int{1}},
		{name: "HBM within 5 °C of its max", node: mem(0, 90, ptr(95), nil), status: Warn,
			summary: "memory at 90 °C, within 5 °C of its max threshold 95 °C", devices: []int{0}},
		{name: "HBM 6 °C below its max", node: mem(0, 89, ptr(95), nil), status: Pass},
		// NOT_SUPPORTED is "not supported", not a fault: the reading is
		// left unjudged and the check passes on the core temperature.
		{name: "memory max threshold not supported", node: mem(0, 34, nil, func(g *state.GPU) {
			g.Unsupported = []string{state.MemoryMaxThresholdCall}
		}), status: Pass, summary: "hottest GPU 30 °C"},
		// Could not read is never a pass on the reading alone.
		{name: "memory max threshold call failed", node: mem(1, 92, nil, func(g *state.GPU) {
			g.Errors = []state.CallError{{Call: state.MemoryMaxThresholdCall, Error: "unknown error"}}
		}), status: Warn, summary: "could not read the memory max threshold (memory at 92 °C judged against nothing)", devices: []int{1}},
		{name: "memory temperature read failed", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[0].Errors = []state.CallError{{Call: "NVML_FI_DEV_MEMORY_TEMP", Error: "unknown error"}}
		}), status: Warn, summary: "could not read the memory temperature: NVML_FI_DEV_MEMORY_TEMP: unknown error", devices: []int{0}},
		{name: "field values call failed", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[0].Errors = []state.CallError{{Call: "nvmlDeviceGetFieldValues", Error: "unknown error"}}
		}), status: Warn, summary: "could not read the memory temperature: nvmlDeviceGetFieldValues", devices: []int{0}},
		{name: "memory temperature not supported", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[0].Unsupported = []string{"NVML_FI_DEV_MEMORY_TEMP"}
		}), status: Pass},
		// The core's failed slowdown threshold is not the memory's.
		{name: "core threshold error is not the memory's", node: mem(0, 34, ptr(95), func(g *state.GPU) {
			g.Errors = []state.CallError{{Call: "nvmlDeviceGetTemperatureThreshold", Error: "unknown error"}}
		}), status: Pass},
	})
}

func TestPower(t *testing.T) {
	runCases(t, checkPower, []checkCase{
		{name: "idle", node: healthy(nil), status: Pass, summary: "drawing 140 W"},
		{name: "capped", node: healthy(func(n *state.Node) { n.NVML.GPUs[0].Power.LimitWatts = ptr(300.0) }), cfg: func(c *Config) { c.Power.MinLimitWatts = 700 },
			status: Fail, summary: "power limit 300 W, below the required 700 W", devices: []int{0}},
		{name: "over limit", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].Power.DrawWatts = 800 }), status: Warn, summary: "drawing 800 W over its 700 W limit", devices: []int{1}},
		// nvml.h: "On GA100 and older architectures, instantaneous power is
		// returned": an A100's spike over its limit is no finding (it warned).
		{name: "A100 instantaneous spike", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[1].Name, n.NVML.GPUs[1].Architecture = "NVIDIA A100-SXM4-80GB", "ampere"
			n.NVML.GPUs[1].Power.DrawWatts, n.NVML.GPUs[1].Power.LimitWatts = 460, ptr(400.0)
		}), status: Pass},
		{name: "A10 averaged reading over its limit", node: healthy(func(n *state.Node) {
			n.NVML.GPUs[1].Name, n.NVML.GPUs[1].Architecture = "NVIDIA A10", "ampere"
			n.NVML.GPUs[1].Power.DrawWatts, n.NVML.GPUs[1].Power.LimitWatts = 180, ptr(150.0)
		}), status: Warn, summary: "drawing 180 W over its 150 W limit", devices: []int{1}},
	})
}

func TestProcesses(t *testing.T) {
	leftover := healthy(func(n *state.Node) {
		n.NVML.GPUs[0].Processes = []state.Process{{PID: 4242, UsedMemoryBytes: 4 << 30, User: "alice", Command: "python train.py"}}
	})
	running := healthy(func(n *state.Node) {
		n.NVML.GPUs[0].Processes = []state.Process{{PID: 4242, UsedMemoryBytes: 4 << 30, User: "alice", Command: "python train.py", JobID: "4242"}}
	})
	captured := healthy(func(n *state.Node) {
		n.Capture = &state.Capture{Format: "nvidia-smi -q", NotCollected: []string{"process_jobs"}}
		for i := range n.NVML.GPUs {
			n.NVML.GPUs[i].Processes = []state.Process{{PID: 2010222 + uint32(i), UsedMemoryBytes: 6724 << 20, Command: "python"}}
		}
	})
	desktop := healthy(func(n *state.Node) {
		n.Capture = &state.Capture{Format: "nvidia-smi -q -x", NotCollected: []string{"process_jobs"}}
		g := &n.NVML.GPUs[1]
		g.Memory.UsedBytes = 1128 << 20
		g.GraphicsProcesses = []state.Process{{PID: 1700, UsedMemoryBytes: 550 << 20, Command: "Xorg"}, {PID: 2910, UsedMemoryBytes: 541 << 20, Command: "firefox"}}
	})
	unseen := healthy(func(n *state.Node) {
		n.Capture = &state.Capture{Format: "nvidia-smi -q -x", NotCollected: []string{"process_jobs"}}
		g := &n.NVML.GPUs[1]
		g.Memory.UsedBytes = 9184 << 20
		g.Utilization = &state.Utilization{GPUPercent: 65}
		g.ClockEvents = &state.ClockEvents{Reasons: []string{}}
	})
	runCases(t, checkProcesses, []checkCase{
		{name: "idle", node: healthy(nil), status: Pass, summary: "2 GPUs idle"},
		{name: "leftover warns", node: leftover, status: Warn, summary: "pid 4242 (alice: python train.py) 4096 MiB", devices: []int{0}},
		{name: "leftover fails when idle expected", node: leftover, cfg: func(c *Config) { c.Processes.ExpectIdle = true }, status: Fail, devices: []int{0}},
		{name: "memory without process", node: healthy(func(n *state.Node) { n.NVML.GPUs[1].Memory.UsedBytes = 2 << 30 }), status: Warn, summary: "2048 MiB in use with no compute process", devices: []int{1}},
		// A rank of a running Slurm job (its cgroup names the job) is no
		// leftover: serve and the health check run beside jobs. It warned.
		{name: "a running job's rank", node: running, status: Pass, summary: "1 GPUs idle, the others running Slurm job 4242; no leftover processes"},
		{name: "a job's process when idle is expected", node: running, cfg: func(c *Config) { c.Processes.ExpectIdle = true }, status: Fail, summary: "pid 4242 (alice: python train.py) of job 4242", devices: []int{0}},
		// nvidia-smi -q lists processes but not their cgroups: the busy
		// GPUs of a real capture (nvsmi/testdata/gpud_rtx4090x8_535.154.05_nvidia-smi-q.txt,
		// one python rank on each of 8 RTX 4090s) warned as leftovers.
		{name: "a capture's processes, job unknown", node: captured, status: Skip, summary: "the capture does not say whose job they belong to"},
		{name: "a capture's processes when idle is expected", node: captured, cfg: func(c *Config) { c.Processes.ExpectIdle = true }, status: Fail, devices: []int{0, 1}},
		{name: "unknown process list", node: healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].ProcessesKnown = false
			}
		}), status: Skip},
		// A capture lists graphics-only processes (type G), NVML's compute
		// list does not: an idle desktop GPU whose 1128 MiB Xorg, Firefox
		// and the like hold warned "no compute process listed, kill the
		// leftovers" (nvsmi/testdata/telegraf_rtx3080-wddm_536.40_nvidia-smi-q-x.xml).
		{name: "memory held by graphics processes", node: desktop, status: Pass, summary: "graphics processes only"},
		{name: "graphics processes when idle is expected", node: desktop, cfg: func(c *Config) { c.Processes.ExpectIdle = true }, status: Fail, devices: []int{1}},
		// A capture of a GPU at work (65 % utilisation, no GPU-idle event)
		// with memory in use and no process listed: nvidia-smi could not
		// see its processes; a leftover is not in the capture
		// (nvsmi/testdata/telegraf_rtx3080_595.58.03_nvidia-smi-q-x.xml).
		{name: "a capture of a working GPU with no process listed", node: unseen, status: Pass, summary: "not judged: GPU 1 (0000:11:00.0): 9184 MiB in use while the GPU works"},
		{name: "the same, idle expected", node: unseen, cfg: func(c *Config) { c.Processes.ExpectIdle = true }, status: Fail, devices: []int{1}},
		// Live, the same GPU still warns: NVML's process list is the node's.
		{name: "live working GPU with no process listed", node: healthy(func(n *state.Node) {
			g := &n.NVML.GPUs[1]
			g.Memory.UsedBytes = 9184 << 20
			g.Utilization = &state.Utilization{GPUPercent: 65}
			g.ClockEvents = &state.ClockEvents{Reasons: []string{}}
		}), status: Warn, summary: "9184 MiB in use with no compute process", devices: []int{1}},
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
