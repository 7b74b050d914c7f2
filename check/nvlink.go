package check

import (
	"fmt"
	"strings"

	"github.com/gpuprobe/gpuprobe/cpulist"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() {
	register(Check{ID: "nvlink.state", Title: "every NVLink that should be up is up", Run: checkNVLinkState})
	register(Check{ID: "nvlink.errors", Title: "NVLink CRC, replay and recovery counters under thresholds", Run: checkNVLinkErrors})
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
	return g.Fabric != nil && g.Fabric.State == "completed" && g.Fabric.Status == "success"
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

func checkNVLinkErrors(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	if n.Lacks("nvlinks") {
		return Result{Status: Skip, Summary: "NVLinks not collected (the capture does not hold them)"}
	}
	v := verdict{id: "nvlink.errors"}
	t := cfg.NVLink
	links := 0
	for _, g := range usable(n) {
		if len(g.NVLinks) == 0 {
			continue
		}
		ok := true
		for _, l := range g.NVLinks {
			links++
			if l.RecoveryErrors != nil && t.RecoveryFail > 0 && *l.RecoveryErrors >= t.RecoveryFail {
				v.add(Fail, g, "drain and reset the GPU; if recoveries return, reseat or RMA (check Xid 74 in dmesg)",
					fmt.Sprintf("link %d: %d recovery errors", l.Link, *l.RecoveryErrors))
				ok = false
			}
			for _, c := range []struct {
				name  string
				val   *uint64
				limit uint64
			}{{"CRC flit", l.CRCFlitErrors, t.CRCFlitWarn}, {"CRC data", l.CRCDataErrors, t.CRCDataWarn}, {"replay", l.ReplayErrors, t.ReplayWarn}} {
				if c.val != nil && c.limit > 0 && *c.val >= c.limit {
					v.add(Warn, g, "watch the link (nvidia-smi nvlink -e); reset the GPU at the next drain; reseat if the count keeps rising",
						fmt.Sprintf("link %d: %d %s errors", l.Link, *c.val, c.name))
					ok = false
				}
			}
		}
		if ok {
			v.add(Pass, g, "", "")
		}
	}
	if links == 0 {
		return Result{Status: Skip, Summary: "no NVLinks on this node"}
	}
	return v.result(fmt.Sprintf("no NVLink errors over thresholds on %d links", links))
}

func checkFabric(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "fabric.state"}
	judged := 0
	for _, g := range usable(n) {
		f := g.Fabric
		if f == nil || f.State == "not_supported" {
			continue // no NVSwitch fabric on this GPU (PCIe boards, pre-Hopper)
		}
		judged++
		const fix = "start or restart nvidia-fabricmanager (systemctl restart nvidia-fabricmanager) and check its log; reset the GPUs if registration stays incomplete"
		switch {
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

func joinInts(a []int) string {
	s := make([]string, len(a))
	for i, x := range a {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
