package check

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

func init() {
	register(Check{ID: "gpu.retired_pages", Title: "no pending page retirement; retired pages under the RMA threshold", Run: onReachableGPUs(checkRetiredPages)})
	register(Check{ID: "gpu.throttle", Title: "no hardware slowdown, thermal slowdown or power brake", Run: onReachableGPUs(checkThrottle)})
	register(Check{ID: "gpu.pcie_link", Title: "PCIe link at full width (and generation when busy); replay rate low", Run: onReachableGPUs(checkPCIeLink)})
	register(Check{ID: "gpu.persistence", Title: "persistence mode on", Run: onReachableGPUs(checkPersistence)})
	register(Check{ID: "gpu.temperature", Title: "temperature below the GPU's slowdown threshold", Run: onReachableGPUs(checkTemperature)})
	register(Check{ID: "gpu.power", Title: "power limit not capped; draw within the limit", Run: onReachableGPUs(checkPower)})
	register(Check{ID: "gpu.processes", Title: "no leftover compute processes or memory on idle GPUs", Run: onReachableGPUs(checkProcesses)})
	register(Check{ID: "gpu.mig", Title: "no MIG mode change pending; MIG mode as expected", Run: onReachableGPUs(checkMIG)})
}

func checkRetiredPages(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "gpu.retired_pages"}
	judged := 0
	var retired []string // passed GPUs with pages retired (not pending)
	for _, g := range usable(n) {
		rp := g.RetiredPages
		if rp == nil {
			if g.RemappedRows != nil {
				v.add(Skip, g, "", "uses row remapping instead (see gpu.row_remap)")
			} else {
				missing(n, &v, g, "nvmlDeviceGetRetiredPages", "page retirement")
			}
			continue
		}
		judged++
		total := rp.SingleBitECC + rp.DoubleBitECC
		switch {
		case rp.Pending:
			v.add(Fail, g, "drain the node and reset the GPU (nvidia-smi -r) to retire the pending pages",
				fmt.Sprintf("page retirement pending (%d pages retired)", total))
		case cfg.RetiredPages.Max > 0 && total >= cfg.RetiredPages.Max:
			v.add(Fail, g, "replace the GPU (RMA): its page retirement table is nearly full",
				fmt.Sprintf("%d pages retired (%d single-bit, %d double-bit), limit %d", total, rp.SingleBitECC, rp.DoubleBitECC, cfg.RetiredPages.Max))
		default:
			if total > 0 {
				retired = append(retired, fmt.Sprintf("GPU %d: %d (%d single-bit, %d double-bit)", g.Index, total, rp.SingleBitECC, rp.DoubleBitECC))
			}
			v.add(Pass, g, "", "")
		}
	}
	summary := fmt.Sprintf("no pending retirement on %d GPUs", judged)
	if len(retired) > 0 {
		// Pages retired and already blacklisted are the mechanism working
		// (NVIDIA, Dynamic Page Retirement: "once a page has been retired it
		// will always be blacklisted"), below the limit no finding; said, so
		// that the pass is not read as "no page ever retired" (a real V100
		// with one: nvsmi/testdata/gls_v100x8_550.127.05_nvidia-smi-q.txt).
		limit := fmt.Sprintf("below the limit of %d", cfg.RetiredPages.Max)
		if cfg.RetiredPages.Max == 0 {
			limit = "no limit set"
		}
		summary += fmt.Sprintf("; pages retired and blacklisted, %s: %s", limit, strings.Join(retired, ", "))
	}
	return v.result(summary)
}

// Throttle reasons by what they say about the node: the hardware ones mean
// cooling, power delivery or a failing board; the software ones mean the GPU
// is at a configured limit.
var (
	hwThrottle = map[string]string{
		"hw_slowdown":             "check cooling, power supplies and cabling (HW slowdown is asserted by the board)",
		"hw_thermal_slowdown":     "check cooling: fans, airflow, inlet temperature, heatsink contact",
		"hw_power_brake_slowdown": "check power supplies and the power brake signal (PSU or PDU fault)",
	}
	// sw_power_cap is not here: it is what every busy GPU running at its
	// power limit reports (nvidia-smi -q: "SW Power Cap ... the GPU is
	// consuming too much power" at the limit); whether the limit itself was
	// lowered is gpu.power's question.
	swThrottle = map[string]string{
		"sw_thermal_slowdown": "check cooling; the GPU is near its thermal limit",
	}
)

func checkThrottle(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "gpu.throttle"}
	gpus := usable(n)
	overTime := 0 // GPUs judged from two samples of the violation counters
	read := 0     // GPUs whose clock event reasons were read
	var interval time.Duration
	for _, g := range gpus {
		if g.ClockEvents == nil {
			missing(n, &v, g, "nvmlDeviceGetCurrentClocksEventReasons", "clock event reasons")
			continue
		}
		read++
		flagged := false
		active := map[string]bool{}
		for _, r := range g.ClockEvents.Reasons {
			active[r] = true
		}
		shares, span := violationShares(n, g)
		if cfg.Throttle.ViolationWarnPercent <= 0 {
			shares = nil
		}
		if shares != nil {
			overTime++
			interval = span
		}
		for _, r := range g.ClockEvents.Reasons {
			if fix, ok := hwThrottle[r]; ok {
				// HW slowdown on its own, in one sample, can be the board
				// changing P-state or clocks (DCGM's health docs; gpud asks
				// for a rate over a window): warn. With its thermal or
				// power-brake cause it is real.
				if r == "hw_slowdown" && !active["hw_thermal_slowdown"] && !active["hw_power_brake_slowdown"] {
					// The daemon has the previous cycle's reasons: a slowdown
					// seen once, with NVML's thermal and power-brake slowdown
					// counters still over the interval, is the transient;
					// seen in two samples in a row it is held.
					if prev := n.Previous.GPU(g.UUID); prev != nil && prev.ClockEvents != nil {
						if !slices.Contains(prev.ClockEvents, "hw_slowdown") && !hwCounted(shares, cfg) {
							continue
						}
						if slices.Contains(prev.ClockEvents, "hw_slowdown") {
							v.add(Warn, g, fix, fmt.Sprintf("%s active in two samples %s apart (no thermal or power-brake cause reported): held, not a clock change; persistent means a board fault",
								r, n.CollectedAt.Sub(n.Previous.CollectedAt).Round(time.Second)))
							flagged = true
							continue
						}
					}
					v.add(Warn, g, fix, r+" active in this sample (no thermal or power-brake cause reported; transient during clock changes, persistent means a board fault)")
					flagged = true
					continue
				}
				// HW thermal slowdown and power brake (or HW slowdown with
				// either cause) fail when they held: in the previous sample
				// too, or their NVML counter grew over the window. Seen in
				// one sample they warn: DCGM's thermal watch warns on a
				// violation, gpud asks for a rate over minutes, and a
				// one-shot run has one sample.
				if held, how := hwHeld(n, g, r, shares, cfg); held {
					v.add(Fail, g, fix, r+" active "+how)
				} else {
					v.add(Warn, g, fix, r+" active "+how)
				}
				flagged = true
			} else if fix, ok := swThrottle[r]; ok {
				// With two samples the thermal counter (which nvml.h maps to
				// SW thermal slowdown) says how long, not just "now".
				if _, timed := shares["thermal"]; timed && r == "sw_thermal_slowdown" {
					continue
				}
				v.add(Warn, g, fix, r+" active")
				flagged = true
			}
		}
		for _, pol := range []struct {
			name, what, fix string
			sev             Status
		}{
			{"thermal", "thermal (SW thermal slowdown) held the clocks below application clocks", "check cooling: fans, airflow, inlet temperature; the GPU is held at its thermal limit", Warn},
			{"board_limit", "board limit held the clocks below application clocks", "check the board's power and thermal limits and the PSUs feeding it (nvidia-smi -q -d PERFORMANCE)", Warn},
			// Between two samples: a HW slowdown the sample at the scrape
			// missed. Its causes fail as they do when a sample shows them.
			{"hw_thermal_slowdown", "HW thermal slowdown (clocks halved or more) held", hwThrottle["hw_thermal_slowdown"], Fail},
			{"hw_power_brake_slowdown", "HW power brake slowdown (clocks halved or more) held", hwThrottle["hw_power_brake_slowdown"], Fail},
		} {
			share, ok := shares[pol.name]
			if !ok || share*100 <= cfg.Throttle.ViolationWarnPercent || active[pol.name] {
				continue
			}
			verb := "warn"
			if pol.sev == Fail {
				verb = "fail"
			}
			v.add(pol.sev, g, pol.fix, fmt.Sprintf("%s for %.0f%% of the last %s (NVML violation counter; %s above %g%%)",
				pol.what, share*100, span.Round(time.Second), verb, cfg.Throttle.ViolationWarnPercent))
			flagged = true
		}
		if !flagged {
			v.add(Pass, g, "", "")
		}
	}
	summary := fmt.Sprintf("no hardware or thermal slowdown on %d GPUs", read)
	if overTime > 0 {
		summary += fmt.Sprintf(" (thermal and board-limit violation time judged over the last %s on %d)", interval.Round(time.Second), overTime)
	}
	return v.result(summary)
}

// hwHeld says whether a HW thermal or power-brake slowdown (or HW slowdown
// with one of them) active in this sample held over the daemon's window: it
// was active in the previous sample as well, or its NVML counter
// (NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN / _HW_POWER_BRAKE_SLOWDOWN)
// grew for more than the warning share of the interval. The text says how
// it was judged.
func hwHeld(n *state.Node, g *state.GPU, r string, shares map[string]float64, cfg *Config) (bool, string) {
	prev := n.Previous.GPU(g.UUID)
	if prev == nil {
		return false, "in this sample (a one-shot run takes one sample, which cannot tell a momentary slowdown from a held one; gpuprobe serve judges it over its window)"
	}
	apart := n.CollectedAt.Sub(n.Previous.CollectedAt).Round(time.Second)
	if slices.Contains(prev.ClockEvents, r) {
		return true, fmt.Sprintf("in two samples %s apart: held", apart)
	}
	policies := []string{r}
	if r == "hw_slowdown" {
		policies = []string{"hw_thermal_slowdown", "hw_power_brake_slowdown"}
	}
	for _, p := range policies {
		if s, ok := shares[p]; ok && s*100 > cfg.Throttle.ViolationWarnPercent {
			return true, fmt.Sprintf("and its NVML counter held it for %.0f%% of the last %s", s*100, apart)
		}
	}
	prevRead := "not active in the previous sample"
	if prev.ClockEvents == nil {
		prevRead = "the previous sample's reasons were not read"
	}
	return false, fmt.Sprintf("in this sample only (%s %s ago, and its counter did not hold it over the window): momentary", prevRead, apart)
}

// hwCounted: NVML's HW thermal or power-brake slowdown counter grew by
// more than the warning share over the daemon's interval.
func hwCounted(shares map[string]float64, cfg *Config) bool {
	for _, p := range []string{"hw_thermal_slowdown", "hw_power_brake_slowdown"} {
		if s, ok := shares[p]; ok && s*100 > cfg.Throttle.ViolationWarnPercent {
			return true
		}
	}
	return false
}

// violationShares is, per perf policy, the share of the time between the
// daemon's previous sample and this one in which NVML's cumulative
// violation counter grew (nvmlDeviceGetViolationStatus: violationTime in
// ns, referenceTime a CPU timestamp in µs). The interval is the longer of
// NVML's reference times and the two collection times. A counter that went backwards (driver reload) gives no rate. Nil
// when there is no earlier sample of this GPU: a one-shot run.
func violationShares(n *state.Node, g *state.GPU) (map[string]float64, time.Duration) {
	prev := n.Previous.GPU(g.UUID)
	if prev == nil {
		return nil, 0
	}
	before := map[string]state.Violation{}
	for _, pv := range prev.Violations {
		before[pv.Policy] = pv
	}
	var shares map[string]float64
	var span time.Duration
	for _, cur := range g.Violations {
		old, ok := before[cur.Policy]
		if !ok || cur.ViolationNs < old.ViolationNs {
			continue
		}
		// nvml.h does not say whether referenceTime is when NVML read the
		// counter or when the counter last moved; the longer of it and the
		// collection times never overstates the share.
		d := n.CollectedAt.Sub(n.Previous.CollectedAt)
		if old.ReferenceTimeUs > 0 && cur.ReferenceTimeUs > old.ReferenceTimeUs {
			d = max(d, time.Duration(cur.ReferenceTimeUs-old.ReferenceTimeUs)*time.Microsecond)
		}
		if d <= 0 {
			continue
		}
		if shares == nil {
			shares = map[string]float64{}
		}
		shares[cur.Policy] = min(1, float64(cur.ViolationNs-old.ViolationNs)/float64(d.Nanoseconds()))
		span = d
	}
	return shares, span
}

// gpuIdle reads NVML's GPU-idle clock event reason ("nothing is running on
// the GPU and the clocks are dropping to idle"); known is false when the
// reasons were not read.
//
// The Idle bit alone calls busy an idle GPU whose bit is clear (issue 26:
// four real captures, three models, at P8, 0 % utilisation and a few watts
// with "SW Power Cap" or no reason set). So a GPU is idle too when NVML's
// utilisation says no kernel ran and no memory was touched in its last
// sample period (nvmlDeviceGetUtilizationRates 0 % and 0 %) and it rests:
// at a power-saving P-state (P8 or lower; nvml.h nvmlPstates_t: P0 is
// maximum performance, P15 minimum), or, with the P-state not read, drawing
// under a quarter of its power limit (an idle H100 at P0 draws 70 of
// 700 W; a busy one near its limit). A GPU at 0 % with neither read stays
// busy: no new guess where the facts are missing.
// working: NVML says the GPU is not idle (gpuIdle read and false).
func working(g *state.GPU) bool {
	idle, known := gpuIdle(g)
	return known && !idle
}

func gpuIdle(g *state.GPU) (idle, known bool) {
	if g.ClockEvents != nil && slices.Contains(g.ClockEvents.Reasons, "gpu_idle") {
		return true, true
	}
	if u := g.Utilization; u != nil && u.GPUPercent == 0 && u.MemoryPercent == 0 {
		switch {
		case g.PerformanceState != nil:
			if *g.PerformanceState >= 8 {
				return true, true
			}
		case g.Power != nil && g.Power.LimitWatts != nil && *g.Power.LimitWatts > 0:
			if g.Power.DrawWatts < *g.Power.LimitWatts/4 {
				return true, true
			}
		}
	}
	return false, g.ClockEvents != nil
}

func checkPCIeLink(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "gpu.pcie_link"}
	gpus := usable(n)
	unjudged := 0 // reduced links on GPUs whose idleness is unknown
	idleReduced := 0
	noUptime := 0 // replay counters read, but no time to make them a rate
	linkRead := 0
	unreadable := 0 // links whose width or generation is not a real value
	uptime := 0.0
	if n.Kernel != nil {
		uptime = n.Kernel.UptimeSeconds
	}
	for _, g := range gpus {
		p := g.PCIe
		if p == nil {
			missing(n, &v, g, "nvmlDeviceGetCurrPcieLinkWidth", "PCIe link state")
			continue
		}
		linkRead++
		ok := true
		// nvidia-smi -q documents the current generation and width as
		// "may be reduced when the GPU is not in use": a reduced link is
		// judged only on a GPU NVML says is working (no GPU-idle clock
		// event). A process holding a context on an idle GPU is not work.
		idle, known := gpuIdle(g)
		reduced := p.CurrentWidth < p.MaxWidth || p.CurrentGen < p.MaxGen
		// A link has at least one lane and generation 1: zero or less is a
		// value that was not read (a snapshot with width -16 or 0 passed as
		// "idle at a reduced link", issue 32), so it is said, never judged
		// healthy.
		unread := p.CurrentWidth <= 0 || p.MaxWidth <= 0 || p.CurrentGen <= 0 || p.MaxGen <= 0
		switch {
		case unread:
			unreadable++
			v.add(Warn, g, "read the link with lspci -vv (LnkSta, LnkCap) or nvidia-smi -q; reseat the GPU if the link is down",
				fmt.Sprintf("PCIe link state could not be read (Gen%d of Gen%d, x%d of x%d): not judged", p.CurrentGen, p.MaxGen, p.CurrentWidth, p.MaxWidth))
			ok = false
		case !reduced:
		case idle:
			idleReduced++
		case !known:
			unjudged++
		default:
			if p.CurrentWidth < p.MaxWidth {
				v.add(Fail, g, "reseat the GPU or its riser/cable; check the PCIe switch port (lspci -vv LnkSta)",
					fmt.Sprintf("PCIe link x%d of x%d while busy", p.CurrentWidth, p.MaxWidth))
				ok = false
			}
			if p.CurrentGen < p.MaxGen {
				v.add(Warn, g, "check the slot, riser and BIOS PCIe speed setting; reseat the GPU",
					fmt.Sprintf("PCIe Gen%d of Gen%d while busy", p.CurrentGen, p.MaxGen))
				ok = false
			}
		}
		// The daemon has the counter of its previous cycle: the rate over
		// that interval shows a burst now, where the average since boot
		// dilutes it (and keeps warning long after one). A one-shot run has
		// only the lifetime average. The limit is DCGM's, scaled by the
		// link's current generation and width (pcieReplayLimit).
		limit, basis := pcieReplayLimit(p, cfg.PCIe)
		if prev := n.Previous.GPU(g.UUID); prev != nil && prev.PCIeReplays != nil && p.ReplayCounter != nil && *p.ReplayCounter >= *prev.PCIeReplays &&
			n.CollectedAt.After(n.Previous.CollectedAt) && limit > 0 {
			d := *p.ReplayCounter - *prev.PCIeReplays
			span := n.CollectedAt.Sub(n.Previous.CollectedAt)
			if rate := float64(d) / span.Minutes(); rate > limit {
				v.add(Warn, g, "reseat the GPU; check the riser, retimer and PCIe switch for signal problems",
					fmt.Sprintf("%d PCIe replays in the last %s (%.1f/min, threshold %.0f/min, %s)", d, span.Round(time.Second), rate, limit, basis))
				ok = false
			}
		} else if p.ReplayCounter == nil {
			// Not read is not "no replays" (issue 26).
			notReadFinding(n, &v, g, "nvmlDeviceGetPcieReplayCounter", "the PCIe replay counter")
		} else if uptime <= 0 && limit > 0 {
			noUptime++
		} else if uptime > 0 && limit > 0 {
			rate := float64(*p.ReplayCounter) / (uptime / 60)
			if rate > limit {
				v.add(Warn, g, "reseat the GPU; check the riser, retimer and PCIe switch for signal problems",
					fmt.Sprintf("%d PCIe replays since boot (%.1f/min, threshold %.0f/min, %s)", *p.ReplayCounter, rate, limit, basis))
				ok = false
			}
		}
		if ok {
			v.add(Pass, g, "", "")
		}
	}
	summary := fmt.Sprintf("PCIe links at full width on %d GPUs", linkRead-unjudged-idleReduced-unreadable)
	if idleReduced > 0 {
		// Said, not judged: an idle A10G at Gen1 x8 of Gen4 x16 is what a
		// healthy one shows (nvsmi/testdata/telegraf_a10g_515.105.01_nvidia-smi-q-x.xml).
		summary += fmt.Sprintf("; %d idle GPU(s) at a reduced link, as nvidia-smi documents for an idle GPU", idleReduced)
	}
	if unjudged > 0 {
		summary += fmt.Sprintf("; %d reduced link(s) not judged: whether the GPU is idle is unknown (no clock event reasons)", unjudged)
	}
	if noUptime > 0 {
		summary += fmt.Sprintf("; replay rate not judged on %d GPU(s): the counter counts since boot and the kernel's uptime is not known", noUptime)
	}
	return v.result(summary)
}

func checkPersistence(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "gpu.persistence"}
	on := 0
	for _, g := range usable(n) {
		switch {
		case g.PersistenceMode == nil:
			missing(n, &v, g, "nvmlDeviceGetPersistenceMode", "persistence mode")
		case !*g.PersistenceMode:
			v.add(Warn, g, "enable nvidia-persistenced (systemctl enable --now nvidia-persistenced)",
				"persistence mode off: every NVML/CUDA client pays the driver's start-up cost")
		default:
			on++
			v.add(Pass, g, "", "")
		}
	}
	return v.result(fmt.Sprintf("persistence mode on for %d GPUs", on))
}

func checkTemperature(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "gpu.temperature"}
	hottest := -1
	for _, g := range usable(n) {
		t := g.Thermal
		if t == nil {
			missing(n, &v, g, "nvmlDeviceGetTemperature", "temperature")
			continue
		}
		hottest = max(hottest, t.TemperatureC)
		memoryTemperature(n, &v, g)
		fail, warn := cfg.Temperature.FailC, cfg.Temperature.WarnC
		if fail == 0 && t.SlowdownC != nil {
			fail = *t.SlowdownC
		}
		if warn == 0 && fail > 0 {
			warn = fail - 5
		}
		if fail == 0 && warn == 0 {
			// Nothing to judge the reading against: the GPU's threshold
			// was not read and the config sets none (issue 26: named, not
			// a pass on the temperature alone).
			notReadFinding(n, &v, g, "nvmlDeviceGetTemperatureThreshold", fmt.Sprintf("the slowdown threshold (%d °C judged against nothing)", t.TemperatureC))
			continue
		}
		const fix = "check cooling: fans, airflow, inlet temperature; nvidia-smi -q -d TEMPERATURE"
		switch {
		case fail > 0 && t.TemperatureC >= fail:
			v.add(Fail, g, fix, fmt.Sprintf("%d °C, at or above the slowdown threshold %d °C", t.TemperatureC, fail))
		case warn > 0 && t.TemperatureC >= warn:
			v.add(Warn, g, fix, fmt.Sprintf("%d °C, within 5 °C of the slowdown threshold %d °C", t.TemperatureC, fail))
		default:
			v.add(Pass, g, "", "")
		}
	}
	return v.result(fmt.Sprintf("hottest GPU %d °C", hottest))
}

// memoryTemperature judges the memory (HBM) temperature, the field value
// NVML_FI_DEV_MEMORY_TEMP, against the GPU's own memory limit,
// NVML_TEMPERATURE_THRESHOLD_MEM_MAX ("Memory Temperature at which the GPU
// will begin SW slowdown", nvml.h): it fails at the limit and warns 5 °C
// below it, the convention of the core temperature. A memory temperature
// not read is named (a failed read warns, NOT_SUPPORTED is said); a limit
// not read leaves the reading unjudged and named, never a pass.
func memoryTemperature(n *state.Node, v *verdict, g *state.GPU) {
	t := g.Thermal
	if t.MemoryTemperatureC == nil {
		if g.ErrorFor("NVML_FI_DEV_MEMORY_TEMP") != nil || g.ErrorFor("nvmlDeviceGetFieldValues") != nil {
			notReadFinding(n, v, g, "NVML_FI_DEV_MEMORY_TEMP", "the memory temperature")
		}
		return
	}
	mt := *t.MemoryTemperatureC
	if t.MemoryMaxC == nil {
		// The reading is named only where the call failed: a threshold
		// not supported is said alike on every GPU, and folds.
		what := "the memory max threshold (the memory temperature not judged)"
		if st, _ := notRead(n, g, state.MemoryMaxThresholdCall, what, Warn); st == Warn {
			what = fmt.Sprintf("the memory max threshold (memory at %d °C judged against nothing)", mt)
		}
		notReadFinding(n, v, g, state.MemoryMaxThresholdCall, what)
		return
	}
	const fix = "check cooling of the GPU's memory: fans, airflow, inlet temperature, heatsink contact; nvidia-smi -q -d TEMPERATURE"
	switch limit := *t.MemoryMaxC; {
	case mt >= limit:
		v.add(Fail, g, fix, fmt.Sprintf("memory at %d °C, at or above its max threshold %d °C (the GPU slows down)", mt, limit))
	case mt >= limit-5:
		v.add(Warn, g, fix, fmt.Sprintf("memory at %d °C, within 5 °C of its max threshold %d °C", mt, limit))
	}
}

func checkPower(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "gpu.power"}
	total := 0.0
	for _, g := range usable(n) {
		p := g.Power
		if p == nil {
			missing(n, &v, g, "nvmlDeviceGetPowerUsage", "power draw")
			continue
		}
		total += p.DrawWatts
		ok := true
		if p.LimitWatts == nil {
			// The limit is what both rules judge against: not read is
			// named, never "within limits" (issue 26).
			notReadFinding(n, &v, g, "nvmlDeviceGetEnforcedPowerLimit", "the enforced power limit")
		}
		if p.LimitWatts != nil {
			if cfg.Power.MinLimitWatts > 0 && *p.LimitWatts < cfg.Power.MinLimitWatts {
				v.add(Fail, g, "restore the power limit (nvidia-smi -pl) and check what capped it",
					fmt.Sprintf("power limit %.0f W, below the required %.0f W", *p.LimitWatts, cfg.Power.MinLimitWatts))
				ok = false
			}
			// Draw above the enforced limit means the limiter or the sensor
			// is not working, where the reading is a 1 s average. Where it is
			// instantaneous, spikes above the limit are how a limiter that
			// works on the average looks, and say nothing.
			if p.DrawWatts > *p.LimitWatts*1.05 && !instantPower(g) {
				v.add(Warn, g, "check the power sensor and board firmware; report it to the vendor",
					fmt.Sprintf("drawing %.0f W over its %.0f W limit", p.DrawWatts, *p.LimitWatts))
				ok = false
			}
		}
		if ok {
			v.add(Pass, g, "", "")
		}
	}
	return v.result(fmt.Sprintf("drawing %.0f W in total, within limits", total))
}

// instantPower: nvmlDeviceGetPowerUsage returns an instantaneous reading
// "on GA100 and older architectures" and a 1 s average "on Ampere (except
// GA100) or newer" (nvml.h). GA100 is the A100, A30 and A800.
func instantPower(g *state.GPU) bool {
	switch g.Architecture {
	case "kepler", "maxwell", "pascal", "volta", "turing":
		return true
	case "ampere":
		for _, ga100 := range []string{"A100", "A30", "A800"} {
			if strings.Contains(g.Name, ga100) {
				return true
			}
		}
	}
	return false
}

func checkProcesses(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "gpu.processes"}
	sev := Warn
	if cfg.Processes.ExpectIdle {
		sev = Fail
	}
	const fix = "kill the leftover processes (or fix the epilog that should have); reset the GPU if memory stays in use"
	idle := 0
	noProcess := 0 // no process listed, memory in use not read
	graphics := 0  // memory held by graphics-only processes a capture lists
	var jobs []string
	for _, g := range usable(n) {
		if !g.ProcessesKnown {
			missing(n, &v, g, "nvmlDeviceGetComputeRunningProcesses", "process list")
			continue
		}
		// A process inside a Slurm job's cgroup (JobID, from the kernel) is
		// that running job's, not a leftover: the daemon and the health check
		// run beside jobs. Only a Prolog or Epilog (--expect-idle) wants the
		// GPU empty whoever holds it.
		var stray []state.Process
		for _, p := range g.Processes {
			if p.JobID != "" && !cfg.Processes.ExpectIdle {
				if !containsStr(jobs, p.JobID) {
					jobs = append(jobs, p.JobID)
				}
				continue
			}
			stray = append(stray, p)
		}
		if len(stray) > 0 && !cfg.Processes.ExpectIdle && n.Lacks("process_jobs") {
			// A capture (nvidia-smi -q) lists the processes but not their
			// cgroups: whether they are a running job's ranks or leftovers
			// cannot be told, and busy GPUs are no finding
			// (nvsmi/testdata/gpud_rtx4090x8_535.154.05_nvidia-smi-q.txt).
			v.add(Skip, g, "", fmt.Sprintf("%d compute process(es) listed, but the capture does not say whose job they belong to", len(stray)))
			continue
		}
		if len(stray) > 0 {
			var who []string
			for _, p := range stray {
				who = append(who, describeProcess(p))
			}
			v.add(sev, g, fix, fmt.Sprintf("%d compute process(es): %s", len(stray), strings.Join(who, ", ")))
			continue
		}
		if len(g.Processes) > 0 {
			v.add(Pass, g, "", "")
			continue
		}
		if m := g.Memory; m != nil && cfg.Processes.IdleMemoryMiB > 0 && m.UsedBytes>>20 >= cfg.Processes.IdleMemoryMiB {
			switch {
			case len(g.GraphicsProcesses) > 0 && !cfg.Processes.ExpectIdle:
				// A capture lists graphics-only (type G) processes, which
				// nvmlDeviceGetComputeRunningProcesses does not: a desktop's
				// Xorg and browsers hold that memory, not a leftover compute
				// context (nvsmi/testdata/telegraf_rtx3080-wddm_536.40_nvidia-smi-q-x.xml).
				graphics++
				v.add(Pass, g, "", "")
			case n.Lacks("process_jobs") && !cfg.Processes.ExpectIdle && g.Utilization != nil && g.Utilization.GPUPercent > 0 && working(g):
				// A capture of a GPU at work (no GPU-idle clock event,
				// utilisation above 0) with memory in use and no process
				// listed: its processes exist but nvidia-smi did not see them
				// (run in another PID namespace); whether any is a leftover
				// is not in the capture
				// (nvsmi/testdata/telegraf_rtx3080_595.58.03_nvidia-smi-q-x.xml).
				v.add(Skip, g, "", fmt.Sprintf("%d MiB in use while the GPU works (%d%% utilisation) and no process listed: nvidia-smi did not see its processes (another PID namespace?); whether any is a leftover is not in the capture",
					m.UsedBytes>>20, g.Utilization.GPUPercent))
			default:
				v.add(sev, g, fix, fmt.Sprintf("%d MiB in use with no compute process listed", m.UsedBytes>>20))
			}
			continue
		}
		if g.Memory == nil && cfg.Processes.IdleMemoryMiB > 0 {
			// Memory held with no process listed is the leftover this
			// rule finds; unread, the GPU is not called idle (issue 26).
			notReadFinding(n, &v, g, "nvmlDeviceGetMemoryInfo", "memory in use")
			v.add(Pass, g, "", "")
			noProcess++
			continue
		}
		idle++
		v.add(Pass, g, "", "")
	}
	pass := fmt.Sprintf("%d GPUs idle, no leftover processes", idle)
	if noProcess > 0 {
		pass = fmt.Sprintf("%d GPUs idle, %d with no compute process (memory in use not read), no leftover processes", idle, noProcess)
	}
	if graphics > 0 {
		pass += fmt.Sprintf("; %d GPU(s) hold memory for graphics processes only (desktop clients, not a compute context)", graphics)
	}
	if len(jobs) > 0 {
		sort.Strings(jobs)
		pass = fmt.Sprintf("%d GPUs idle, the others running Slurm job %s; no leftover processes", idle, strings.Join(jobs, ", "))
	}
	return v.result(pass)
}

func describeProcess(p state.Process) string {
	s := fmt.Sprintf("pid %d", p.PID)
	if p.User != "" {
		s += " (" + p.User
		if p.Command != "" {
			s += ": " + p.Command
		}
		s += ")"
	}
	if p.JobID != "" {
		s += " of job " + p.JobID
	}
	if p.UsedMemoryUnknown {
		return s + " memory unknown"
	}
	return s + fmt.Sprintf(" %d MiB", p.UsedMemoryBytes>>20)
}

func checkMIG(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "gpu.mig"}
	modes := map[bool][]int{}
	for _, g := range usable(n) {
		m := g.MIG
		if m == nil {
			missing(n, &v, g, "nvmlDeviceGetMigMode", "MIG")
			continue
		}
		modes[m.Current] = append(modes[m.Current], g.Index)
		switch {
		case m.Current != m.Pending:
			v.add(Warn, g, "reset the GPU (nvidia-smi -r) to apply the pending MIG mode",
				fmt.Sprintf("MIG mode change to %s pending a GPU reset", onOff(m.Pending)))
		case cfg.MIG.Expect != "" && onOff(m.Current) != cfg.MIG.Expect:
			v.add(Fail, g, "set the MIG mode (nvidia-smi -mig 0|1) and reset the GPU",
				fmt.Sprintf("MIG %s, expected %s", onOff(m.Current), cfg.MIG.Expect))
		default:
			v.add(Pass, g, "", "")
		}
	}
	if cfg.MIG.Uniform && len(modes[true]) > 0 && len(modes[false]) > 0 {
		v.add(Fail, nil, "make the MIG mode the same on every GPU (nvidia-smi -mig) and reset them",
			fmt.Sprintf("MIG mode differs across GPUs: enabled on %v, disabled on %v", modes[true], modes[false]))
	}
	return v.result(fmt.Sprintf("MIG %s on %d GPUs, nothing pending", migSummary(modes), len(modes[true])+len(modes[false])))
}

func onOff(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

func migSummary(modes map[bool][]int) string {
	switch {
	case len(modes[true]) == 0:
		return "disabled"
	case len(modes[false]) == 0:
		return "enabled"
	}
	return "mixed"
}

// dcgmReplayPerLanePerMinute (dcgmreplay.go) is DCGM's PCIe replay limit
// per lane and minute for Gen1..Gen6, 0.15 ... 3.84: a bit error rate of
// 1e-12 at the generation's transfer rate (2.5, 5, 8, 16, 32, 64 GT/s)
// over 60 s. tools/dcgmgen generates it from the pinned excerpt of
// DcgmHealthWatch::GetExpectedPcieReplayRate (third_party/dcgm/, NVIDIA/
// DCGM modules/health/DcgmHealthWatch.cpp; commit in its SOURCE);
// TestDCGMReplayTableMatchesItsSource re-reads the excerpt.

//go:generate go run ../tools/dcgmgen

// pcieReplayLimit is the replay rate per minute above which gpu.pcie_link
// warns, and where it comes from: pcie.replay_rate_per_minute_warn when
// set, else DCGM's limit for the link's current generation and width
// (per-lane rate × lanes, rounded up; a generation above DCGM's table is
// judged as its highest, as DCGM does): Gen4 x16 16/min, Gen5 x16 31/min.
// 0 when the link's generation or width is not known: DCGM does not judge
// the rate then either.
func pcieReplayLimit(p *state.PCIe, cfg PCIeConfig) (float64, string) {
	if cfg.ReplayRatePerMinuteWarn > 0 {
		return cfg.ReplayRatePerMinuteWarn, "pcie.replay_rate_per_minute_warn"
	}
	if p.CurrentGen <= 0 || p.CurrentWidth <= 0 {
		return 0, ""
	}
	gen := min(p.CurrentGen, len(dcgmReplayPerLanePerMinute))
	limit := math.Ceil(dcgmReplayPerLanePerMinute[gen-1] * float64(p.CurrentWidth))
	return limit, fmt.Sprintf("DCGM's limit for Gen%d x%d", p.CurrentGen, p.CurrentWidth)
}
