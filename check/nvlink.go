package check

import (
	"fmt"
	"strings"

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

func checkNVLinkState(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	if n.Lacks("nvlinks") {
		return Result{Status: Skip, Summary: "NVLinks not collected (the capture does not hold them)"}
	}
	gpus := usable(n)
	// Without a configured count, the expectation is the most links up on
	// any GPU of the same model: identical GPUs on one baseboard have the
	// same wiring, so a GPU with fewer has lost links.
	expected := map[string]int{}
	any := false
	for _, g := range gpus {
		up, _ := linksUp(g)
		expected[g.Name] = max(expected[g.Name], up)
		any = any || len(g.NVLinks) > 0
	}
	if !any && cfg.NVLink.ExpectedLinks == 0 {
		return Result{Status: Skip, Summary: "no NVLinks on this node"}
	}
	v := verdict{id: "nvlink.state"}
	total := 0
	for _, g := range gpus {
		want := expected[g.Name]
		if cfg.NVLink.ExpectedLinks > 0 {
			want = cfg.NVLink.ExpectedLinks
		}
		up, down := linksUp(g)
		total += up
		if up < want {
			msg := fmt.Sprintf("%d of %d NVLinks up", up, want)
			if len(down) > 0 {
				msg += fmt.Sprintf(" (down: %s)", joinInts(down))
			}
			v.add(Fail, g, "drain; reset the GPU; check nvidia-smi nvlink -s and the NVSwitch/fabric manager; reseat or RMA the baseboard if links stay down", msg)
			continue
		}
		v.add(Pass, g, "", "")
	}
	return v.result(fmt.Sprintf("%d NVLinks up on %d GPUs", total, len(gpus)))
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
