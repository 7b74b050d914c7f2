package check

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() {
	register(Check{ID: "nvlink.state", Title: "every NVLink that should be up is up", Run: checkNVLinkState})
	register(Check{ID: "nvlink.errors", Title: "NVLink CRC, replay and recovery errors: growth between daemon cycles, else totals, under thresholds", Run: checkNVLinkErrors})
	register(Check{ID: "fabric.state", Title: "NVSwitch fabric registration completed and healthy", Run: checkFabric})
}

func linksUp(g *state.GPU) (up int, down []int) {
	for _, l := range g.NVLinks {
		if l.Up {
			up++
		} else {
			down = append(down, l.Link)
		}
	}
	return up, down
}

// fabricAttached: the fabric manager registered the GPU with an NVSwitch
// fabric (nvmlDeviceGetGpuFabricInfo: state COMPLETED, status SUCCESS).
// Every NVLink of such a GPU runs to an NVSwitch and is meant to be up.
// PCIe cards and GPUs without NVSwitches answer NOT_SUPPORTED. go-nvlib's
// IsFabricAttached reads the call the same way and further asks for a
// cluster UUID, which only multi-node NVLink (GB200 NVL) systems have.
// A registration not (yet) completed is fabric.state's finding, not a
// reason to expect links here.
func fabricAttached(g *state.GPU) bool {
	return FabricRegistered(g.Fabric)
}

// FabricRegistered: the GPU's fabric registration completed with success,
// as fabric.state passes it before reading the health mask. The exporter's
// gpu_fabric_registered gauge asks here.
func FabricRegistered(f *state.Fabric) bool {
	return f != nil && f.State == "completed" && f.Status == "success"
}

// fabricCallFailed: the GPU's fabric call (whichever entry point the
// collector used) failed, or NVML stopped answering the GPU before it.
func fabricCallFailed(g *state.GPU) bool {
	for _, c := range append([]string{"nvmlDeviceGetGpuFabricInfo"}, sameCall["nvmlDeviceGetGpuFabricInfo"]...) {
		if g.ErrorFor(c) != nil {
			return true
		}
	}
	return hungCall(g) != nil
}

// hungCall is the call that timed out on the GPU, if one did.
func hungCall(g *state.GPU) *state.CallError {
	for i := range g.Errors {
		if g.Errors[i].Timeout {
			return &g.Errors[i]
		}
	}
	return nil
}

const nvlinkFix = "drain; reset the GPU; check nvidia-smi nvlink -s and the NVSwitch/fabric manager; reseat or RMA the baseboard if links stay down"

// checkNVLinkState holds every GPU to the links its platform has
// (check/platform.go): nvlink.expected_links when set, else the platform
// profile's count. Only where the platform is unknown does it fall back to
// the node's own majority (the most links up on any GPU of the same model),
// and even then a GPU that NVML reports attached to an NVSwitch fabric
// must have its links up: a node whose every GPU lost every link otherwise
// looks uniform, and uniform looked healthy.
func checkNVLinkState(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	if n.Lacks("nvlinks") {
		return Result{Status: Skip, Summary: "NVLinks not collected (the capture does not hold them)"}
	}
	if n.Lacks("nvlink_state") {
		// An nvidia-smi nvlink -e capture alone: counters, no state
		// (nvidia-smi nvlink -h: -s "Display link state (active/inactive)").
		return Result{Status: Skip, Summary: "NVLink state not in the capture (its nvidia-smi nvlink capture has no -s)"}
	}
	gpus := usable(n)
	p := cfg.PlatformFor(n)
	majority := map[string]int{}
	listed := false
	for _, g := range gpus {
		up, _ := linksUp(g)
		majority[g.Name] = max(majority[g.Name], up)
		listed = listed || len(g.NVLinks) > 0
	}
	if !listed && cfg.NVLink.ExpectedLinks == 0 && !(p.LinksKnown && p.NVLinks > 0 && !p.Bridge) {
		if p.LinksKnown {
			return Result{Status: Skip, Summary: "no NVLinks on this node, none expected (platform " + p.Name + ": " + p.Basis + ")"}
		}
		return Result{Status: Skip, Summary: "no NVLinks on this node"}
	}
	v := verdict{id: "nvlink.state"}
	total, bridgeless := 0, 0
	for _, g := range gpus {
		up, down := linksUp(g)
		total += up
		if migEnabled(g) {
			v.add(Skip, g, "", "MIG enabled: NVLink carries no traffic under MIG (no GPU-to-GPU P2P), its links are not judged")
			continue
		}
		want, fromPlatform := NVLinkExpectation(g, p, cfg)
		if u := n.CaptureUnknownFor(g.Index, "nvmlDeviceGetNvLinkState"); u != nil && len(g.NVLinks) == 0 {
			// A capture that cannot decide: the GPU is not in the nvlink
			// capture, is cut in it, or nvidia-smi printed a message in
			// place of its links. Unknown, never "down".
			_, why := notRead(n, g, "nvmlDeviceGetNvLinkState", "NVLink state", Skip)
			v.add(Skip, g, "", why)
			continue
		}
		switch {
		case fromPlatform && len(g.NVLinks) == 0 && want > 0:
			// NVML listed no link at all: that is not "links down" (a GPU
			// that lost its links still answers DISABLED for each), so it
			// cannot be judged.
			if e := g.ErrorFor("nvmlDeviceGetNvLinkState"); e != nil {
				v.add(Error, g, "", "NVLink state not read: nvmlDeviceGetNvLinkState: "+e.Error)
			} else if e := hungCall(g); e != nil {
				// The collector asks nothing more of a GPU after a hung call.
				v.add(Error, g, "", "NVLink state not read: "+e.Call+" hung before it ("+e.Error+")")
			} else {
				v.add(Error, g, "", fmt.Sprintf("NVML lists no NVLink on a GPU that has %d (platform %s): cannot judge", want, p.Name))
			}
			continue
		case fromPlatform && p.Bridge && cfg.NVLink.ExpectedLinks == 0 && up == 0:
			bridgeless++
			v.add(Pass, g, "", "")
			continue
		case !fromPlatform:
			want = majority[g.Name]
			if up == 0 && fabricAttached(g) && len(g.NVLinks) > 0 {
				v.add(Fail, g, nvlinkFix, fmt.Sprintf("0 of %d NVLinks up, on a GPU registered with an NVSwitch fabric (fabric registration completed)", len(g.NVLinks)))
				continue
			}
			if want == 0 && len(g.NVLinks) > 0 && n.Capture != nil {
				// A saved nvidia-smi nvlink -s whose GPUs of this model
				// show every link <inactive>, with no platform to say what
				// they have: an inactive link is no fault on a GPU with no
				// NVLink peer (a PCIe card without a bridge), and a fault
				// on one with peers. The capture cannot tell which.
				v.add(Skip, g, "", fmt.Sprintf("%d NVLinks listed, none active: the capture cannot tell a GPU without NVLink peers (a PCIe card without a bridge) from one that lost its links; set platform.profile or nvlink.expected_links to judge it", len(g.NVLinks)))
				continue
			}
		}
		if up < want {
			msg := fmt.Sprintf("%d of %d NVLinks up", up, want)
			// "(down: 0)" read as "none down": name the links.
			switch len(down) {
			case 0:
			case 1:
				msg += fmt.Sprintf(" (link %d down)", down[0])
			default:
				msg += fmt.Sprintf(" (links %s down)", cpulist.Format(down))
			}
			v.add(Fail, g, nvlinkFix, msg)
			continue
		}
		v.add(Pass, g, "", "")
	}
	summary := fmt.Sprintf("%d NVLinks up on %d GPUs", total, len(gpus))
	switch {
	case cfg.NVLink.ExpectedLinks > 0:
		summary += fmt.Sprintf(" (%d each, nvlink.expected_links)", cfg.NVLink.ExpectedLinks)
	case p.LinksKnown && p.Bridge:
		summary += fmt.Sprintf(" (platform %s: %d each where a bridge is fitted", p.Name, p.NVLinks)
		if bridgeless > 0 {
			summary += fmt.Sprintf("; %d GPUs without NVLink up are taken as unbridged, which a bridge that lost every link looks like too", bridgeless)
		}
		summary += ")"
	case p.LinksKnown:
		summary += fmt.Sprintf(" (platform %s: %d each)", p.Name, p.NVLinks)
	default:
		summary += " (platform unknown, " + p.Basis + ": GPUs compared with the best of their model here)"
	}
	return v.result(summary)
}

// nvlinkCounter is one of a link's error counters, now and in the
// daemon's previous sample (nil: not read).
type nvlinkCounter struct {
	name      string
	cur, prev *uint64
	// totalWarn is the one-sample limit on the total (0: none; recovery
	// totals are judged against nvlink.recovery_fail instead).
	totalWarn uint64
}

// counterGrowth is how much a counter grew between two samples. A counter
// that went down was reset in between (a driver reload, a GPU reset,
// nvidia-smi nvlink -re: NVML's counters start again from zero), so what
// it holds now all came after the reset, inside the interval: that is the
// growth, never a negative or wrapped-around one.
func counterGrowth(cur, prev uint64) (growth uint64, reset bool) {
	if cur < prev {
		return cur, true
	}
	return cur - prev, false
}

const (
	nvlinkWatchFix    = "watch the link (nvidia-smi nvlink -e); reset the GPU at the next drain; reseat if the count keeps rising"
	nvlinkRecoveryFix = "drain and reset the GPU; if recoveries return, reseat or RMA (check Xid 74 in dmesg)"
	nvlinkCRCFix      = "drain and reset the GPU; if the CRC rate returns, reseat the GPU or baseboard and check the NVSwitch trays; RMA if it stays (nvidia-smi nvlink -e)"
	nvlinkOldFix      = "see whether the count grows (gpuprobe serve judges growth; or nvidia-smi nvlink -e twice, minutes apart); reset the GPU at the next drain; reseat or RMA if recoveries return"
)

// checkNVLinkErrors judges NVML's per-link error counters
// (nvmlDeviceGetNvLinkErrorCounter), which count since the driver loaded
// or the GPU was last reset. With the daemon's previous sample of a link
// it judges their growth over the interval, by DCGM's NVLink health watch
// (DcgmHealthWatch::MonitorNVLink): recovery growth fails, CRC growth
// warns and fails at 100/s, replay growth warns (DCGM fails it; see
// docs/checks.md). From one sample (a one-shot check, the daemon's first
// cycle) only the totals are known: they warn, a recovery count included,
// since nothing says the errors are still happening.
func checkNVLinkErrors(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	if n.Lacks("nvlinks") {
		return Result{Status: Skip, Summary: "NVLinks not collected (the capture does not hold them)"}
	}
	if n.Lacks("nvlink_errors") {
		// An nvidia-smi nvlink -s capture alone (nvidia-smi nvlink -h:
		// -e "Display error counters for a link").
		return Result{Status: Skip, Summary: "NVLink error counters not in the capture (its nvidia-smi nvlink capture has no -e)"}
	}
	v := verdict{id: "nvlink.errors"}
	t := cfg.NVLink
	links, overTime := 0, 0
	var span time.Duration
	var unread []string // per GPU: the counters not read, and why
	unreadLinks, downLinks := 0, 0
	var unknownGPUs []string // a capture's GPUs whose counters it cannot show
	for _, g := range usable(n) {
		if len(g.NVLinks) == 0 {
			if n.CaptureUnknownFor(g.Index, "nvmlDeviceGetNvLinkErrorCounter") != nil {
				why, _ := nvlinkCounterWhy(n, g)
				unknownGPUs = append(unknownGPUs, fmt.Sprintf("GPU %d: %s", g.Index, why))
			}
			continue
		}
		var prev *state.PreviousGPU
		if p := n.Previous.GPU(g.UUID); p != nil && n.CollectedAt.After(n.Previous.CollectedAt) {
			prev, span = p, n.CollectedAt.Sub(n.Previous.CollectedAt)
		}
		ok := true
		flag := func(s Status, fix, msg string) {
			v.add(s, g, fix, msg)
			ok = false
		}
		missing := map[string][]int{} // counter name -> links it could not be read on
		var missingOrder []string
		for _, l := range g.NVLinks {
			if !l.Up && l.RecoveryErrors == nil && l.CRCFlitErrors == nil && l.CRCDataErrors == nil && l.ReplayErrors == nil {
				// A down link's counters are not collected; nvlink.state
				// judges the link.
				downLinks++
				continue
			}
			read := 0
			for _, c := range []struct {
				name string
				v    *uint64
			}{{"recovery", l.RecoveryErrors}, {"CRC flit", l.CRCFlitErrors}, {"CRC data", l.CRCDataErrors}, {"replay", l.ReplayErrors}} {
				if c.v != nil {
					read++
					continue
				}
				if missing[c.name] == nil {
					missingOrder = append(missingOrder, c.name)
				}
				missing[c.name] = append(missing[c.name], l.Link)
			}
			if read == 0 {
				// Not read is not "no errors": the link is not judged.
				unreadLinks++
				continue
			}
			links++
			pl := prev.NVLink(l.Link)
			var was struct{ flit, data, replay, recovery *uint64 }
			if pl != nil {
				was.flit, was.data, was.replay, was.recovery = pl.CRCFlitErrors, pl.CRCDataErrors, pl.ReplayErrors, pl.RecoveryErrors
			}
			timed := false
			for _, c := range []nvlinkCounter{
				{"recovery", l.RecoveryErrors, was.recovery, 0},
				{"CRC flit", l.CRCFlitErrors, was.flit, t.CRCFlitWarn},
				{"CRC data", l.CRCDataErrors, was.data, t.CRCDataWarn},
				{"replay", l.ReplayErrors, was.replay, t.ReplayWarn},
			} {
				if c.cur == nil {
					continue
				}
				if c.prev == nil {
					judgeNVLinkTotal(l.Link, c, t, flag)
					continue
				}
				timed = true
				judgeNVLinkGrowth(l.Link, c, span, t, flag)
			}
			if timed {
				overTime++
			}
		}
		if len(missing) > 0 {
			why, failed := nvlinkCounterWhy(n, g)
			var parts []string
			for _, name := range missingOrder {
				parts = append(parts, fmt.Sprintf("%s on %s", name, linkList(missing[name])))
			}
			if len(missingOrder) == 4 && slices.Equal(missing["recovery"], missing["CRC flit"]) &&
				slices.Equal(missing["recovery"], missing["CRC data"]) && slices.Equal(missing["recovery"], missing["replay"]) {
				parts = []string{"all four counters on " + linkList(missing["recovery"])}
			}
			msg := fmt.Sprintf("could not read the NVLink %s error counters (%s)", strings.Join(missingOrder, ", "), why)
			unread = append(unread, fmt.Sprintf("GPU %d: %s: %s", g.Index, strings.Join(parts, "; "), why))
			if failed {
				// A call that failed is a counter that may be counting:
				// warn, never pass on it.
				flag(Warn, "check the driver and NVML on this GPU (nvidia-smi nvlink -e); rerun the check", msg)
			}
		}
		if ok {
			v.add(Pass, g, "", "")
		}
	}
	if links == 0 && unreadLinks == 0 && downLinks == 0 {
		if len(unknownGPUs) > 0 {
			return Result{Status: Skip, Summary: "NVLink error counters unknown: " + strings.Join(unknownGPUs, "; ")}
		}
		return Result{Status: Skip, Summary: "no NVLinks on this node"}
	}
	notRead := ""
	if len(unknownGPUs) > 0 {
		notRead = "; unknown in the capture, so not judged: " + strings.Join(unknownGPUs, "; ")
	}
	if len(unread) > 0 {
		notRead += "; not read, so not judged (not read is not \"no errors\"): " + strings.Join(unread, "; ")
	}
	if downLinks > 0 {
		notRead += fmt.Sprintf("; %d down link(s) without counters not judged here (nvlink.state judges them)", downLinks)
	}
	if links == 0 && unreadLinks == 0 {
		if r := v.result(""); r.Status != Pass {
			return r
		}
		return Result{Status: Skip, Summary: fmt.Sprintf("every NVLink (%d) is down: their error counters are not judged here (nvlink.state judges the links)", downLinks)}
	}
	if links == 0 {
		if r := v.result(""); r.Status != Pass {
			return r
		}
		return Result{Status: Skip, Summary: fmt.Sprintf("could not read the NVLink error counters on any of %d links: not judged%s", unreadLinks, notRead)}
	}
	summary := fmt.Sprintf("no NVLink errors over thresholds on %d links", links)
	switch {
	case overTime == links:
		summary = fmt.Sprintf("no NVLink error growth over thresholds on %d links in the last %s", links, span.Round(time.Second))
	case overTime > 0:
		summary += fmt.Sprintf(" (%d judged by their growth in the last %s, the rest by their totals from one sample)", overTime, span.Round(time.Second))
	default:
		summary += " (totals since the counters were last reset, from one sample)"
	}
	return v.result(summary + notRead)
}

// nvlinkCounterWhy says why a GPU's NVLink error counters were not read:
// the driver answered NOT_SUPPORTED (nvml.h: the legacy per-link counters
// are not supported on Blackwell and later), or the call failed (failed:
// true), or nothing recorded says.
func nvlinkCounterWhy(n *state.Node, g *state.GPU) (why string, failed bool) {
	const call = "nvmlDeviceGetNvLinkErrorCounter"
	if u := n.CaptureUnknownFor(g.Index, call); u != nil {
		if u.Printed == "" {
			return "not in the capture", false
		}
		return fmt.Sprintf("the capture prints %s (line %d)", u.Printed, u.Line), false
	}
	for _, e := range g.Errors {
		if e.Call == call {
			return call + " failed: " + e.Error, true
		}
	}
	if slices.Contains(g.Unsupported, call) {
		return call + " answered NOT_SUPPORTED", false
	}
	return "no value collected", false
}

// linkList is "link 3" or "links 0-17" or "links 0, 2, 5".
func linkList(ls []int) string {
	if len(ls) == 1 {
		return fmt.Sprintf("link %d", ls[0])
	}
	contiguous := true
	for i := 1; i < len(ls); i++ {
		if ls[i] != ls[i-1]+1 {
			contiguous = false
		}
	}
	if contiguous {
		return fmt.Sprintf("links %d-%d", ls[0], ls[len(ls)-1])
	}
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = strconv.Itoa(l)
	}
	return "links " + strings.Join(s, ", ")
}

// judgeNVLinkGrowth judges one counter's growth since the daemon's
// previous sample, span ago.
func judgeNVLinkGrowth(link int, c nvlinkCounter, span time.Duration, t NVLinkConfig, flag func(Status, string, string)) {
	d, reset := counterGrowth(*c.cur, *c.prev)
	if d == 0 {
		return
	}
	what := fmt.Sprintf("link %d: %d %s errors in the last %s", link, d, c.name, span.Round(time.Second))
	if reset {
		what = fmt.Sprintf("link %d: %d %s errors in the last %s (the counter went back from %d: reset since the previous sample, counted from zero)",
			link, d, c.name, span.Round(time.Second), *c.prev)
	}
	switch c.name {
	case "recovery":
		if t.RecoveryFail > 0 && d >= t.RecoveryFail {
			flag(Fail, nvlinkRecoveryFix, fmt.Sprintf("%s: the link went down and retrained while in use (fail at %d, DCGM's NVLink health watch)", what, t.RecoveryFail))
		}
	case "replay":
		switch {
		case t.ReplayGrowthFail > 0 && d >= t.ReplayGrowthFail:
			flag(Fail, nvlinkCRCFix, fmt.Sprintf("%s (fail at %d, nvlink.replay_growth_fail)", what, t.ReplayGrowthFail))
		case t.ReplayGrowthWarn > 0 && d >= t.ReplayGrowthWarn:
			flag(Warn, nvlinkWatchFix, fmt.Sprintf("%s: retransmitted, not lost (warn at %d)", what, t.ReplayGrowthWarn))
		}
	default: // CRC flit, CRC data
		perSec := float64(d) / span.Seconds()
		switch {
		case t.CRCFailPerSecond > 0 && perSec >= t.CRCFailPerSecond:
			flag(Fail, nvlinkCRCFix, fmt.Sprintf("%s (%.1f/s; fail at %g/s, DCGM's NVLink CRC limit)", what, perSec, t.CRCFailPerSecond))
		case t.CRCWarnPerMinute > 0 && perSec*60 >= t.CRCWarnPerMinute:
			flag(Warn, nvlinkWatchFix, fmt.Sprintf("%s (%.1f/min; warn at %g/min, fail at %g/s)", what, perSec*60, t.CRCWarnPerMinute, t.CRCFailPerSecond))
		}
	}
}

// judgeNVLinkTotal judges one counter from one sample: its total since the
// counters were last reset. Nothing says the errors are still happening,
// so even recoveries only warn: a node is not drained for errors that may
// be months old.
func judgeNVLinkTotal(link int, c nvlinkCounter, t NVLinkConfig, flag func(Status, string, string)) {
	v := *c.cur
	switch c.name {
	case "recovery":
		if t.RecoveryFail > 0 && v >= t.RecoveryFail {
			flag(Warn, nvlinkOldFix, fmt.Sprintf("link %d: %d recovery errors since the counters were last reset (driver load or GPU reset); "+
				"one sample cannot tell whether they are still happening, so this warns; growing recoveries fail in the daemon (gpuprobe serve)", link, v))
		}
		return
	}
	if c.totalWarn > 0 && v >= c.totalWarn {
		flag(Warn, nvlinkWatchFix, fmt.Sprintf("link %d: %d %s errors since the counters were last reset (one sample)", link, v, c.name))
	}
}

func checkFabric(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "fabric.state"}
	judged := 0
	for _, g := range usable(n) {
		f := g.Fabric
		if f == nil && fabricCallFailed(g) {
			// Not read is not "no fabric" (issue 26): a failed fabric call
			// on an HGX node said "no NVSwitch fabric on this node".
			judged++
			st, msg := notRead(n, g, "nvmlDeviceGetGpuFabricInfo", "fabric registration", Error)
			v.add(st, g, "", msg)
			continue
		}
		if f == nil || f.State == "not_supported" {
			continue // no NVSwitch fabric on this GPU (PCIe boards, pre-Hopper)
		}
		judged++
		const fix = "start or restart nvidia-fabricmanager (systemctl restart nvidia-fabricmanager) and check its log; reset the GPUs if registration stays incomplete"
		switch {
		case f.State == "in_progress":
			// DCGM's NVSwitch health watch warns here: Fabric Manager
			// trains the links for a while after boot, so a health check
			// run at boot must not drain a healthy node.
			v.add(Warn, g, "wait for nvidia-fabricmanager to finish training the fabric and run the check again; if it stays in progress, restart nvidia-fabricmanager and check its log",
				"fabric registration in progress (Fabric Manager still training the links)")
		case f.State != "completed":
			// NVML defines the status only once registration has completed.
			v.add(Fail, g, fix, "fabric registration "+strings.ReplaceAll(f.State, "_", " "))
		case f.Status != "success":
			v.add(Fail, g, fix, "fabric registration completed with status "+f.Status)
		default:
			worst, what := Pass, ""
			for _, fd := range fabricHealth(f.HealthMask, f.HealthSummary) {
				if fd.status.Worse(worst) {
					worst = fd.status
				}
				if what != "" {
					what += ", "
				}
				what += fd.what
			}
			if worst == Pass {
				v.add(Pass, g, "", "")
				break
			}
			v.add(worst, g, "check the NVSwitch trays and the fabric manager log (nvidia-fabricmanager); reset the GPU if it persists",
				fmt.Sprintf("fabric health: %s (health mask 0x%x)", what, f.HealthMask))
		}
	}
	if judged == 0 {
		return Result{Status: Skip, Summary: "no NVSwitch fabric on this node"}
	}
	return v.result(fmt.Sprintf("fabric registration completed on %d GPUs", judged))
}
