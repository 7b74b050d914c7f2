package check

import (
	"fmt"
	"sort"

	"github.com/gpuprobe/gpuprobe/state"
)

func init() {
	register(Check{ID: "gpu.xid", Title: "no critical XID events in the kernel log", Run: checkXID})
}

func checkXID(n *state.Node, cfg *Config) Result {
	k := n.Kernel
	if k == nil {
		return Result{Status: Skip, Summary: "kernel log not collected"}
	}
	nvmlOK := n.NVML != nil && n.NVML.Available
	if k.XIDError != "" {
		if !nvmlOK {
			return Result{Status: Skip, Summary: "no usable NVIDIA driver (see gpu.driver); kernel log not readable either"}
		}
		if k.XIDDenied && k.ReaderUID != nil && *k.ReaderUID != 0 {
			// An ordinary user's run (srun gpuprobe check) meets
			// kernel.dmesg_restrict=1; the root health check and the daemon
			// read the log. Only root being refused says something is wrong.
			return Result{Status: Skip, Summary: fmt.Sprintf("the kernel log is readable only by root here (uid %d; kernel.dmesg_restrict=1): XIDs are judged by the root health check or the daemon (check --from-daemon)", *k.ReaderUID)}
		}
		return Result{Status: Error, Summary: "cannot read the kernel log: " + k.XIDError}
	}
	// Events are grouped per GPU and code so a storm of one XID is one finding.
	type key struct {
		gpu  int
		bus  string
		code int
		lost bool
	}
	counts := map[key]int{}
	gpuOf := map[key]*state.GPU{} // by identity: an index is not a position in a scoped state
	last := map[key]state.XIDEvent{}
	var keys []key
	cleared := 0
	for _, ev := range k.XIDs {
		// NVIDIA's IGNORE codes (63, 92: a row remap recorded, a high SBE
		// rate) are no finding of their own: gpu.row_remap and gpu.ecc judge
		// those conditions from NVML's counters, which a reset clears.
		if ignored(ev.Code, cfg.XID.Ignore) || !ev.FellOffBus && XIDLookup(ev.Code, cfg.XID.Critical).Severity == XIDIgnored {
			continue
		}
		if cfg.XID.Window > 0 && !ev.Time.IsZero() && ev.Time.Before(n.CollectedAt.Add(-cfg.XID.Window)) {
			continue
		}
		if clearedByDriverLoad(ev, cfg) {
			cleared++
			continue
		}
		kk := key{gpu: -1, bus: ev.BusID, code: ev.Code, lost: ev.FellOffBus && ev.Code == 0}
		if g := gpuByBus(n, ev); g != nil {
			kk.gpu = g.Index
			gpuOf[kk] = g
		}
		if counts[kk] == 0 {
			keys = append(keys, kk)
		}
		counts[kk]++
		last[kk] = ev
	}
	if len(keys) == 0 {
		if !nvmlOK {
			return Result{Status: Skip, Summary: "no NVIDIA GPUs to judge and no XIDs in the kernel log"}
		}
		window := "since boot"
		if cfg.XID.Window > 0 {
			window = "in the last " + cfg.XID.Window.String()
		}
		return Result{Status: Pass, Summary: "no XID events " + window + clearedNote(cleared)}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].gpu != keys[j].gpu {
			return keys[i].gpu < keys[j].gpu
		}
		return keys[i].code < keys[j].code
	})
	v := verdict{id: "gpu.xid"}
	for _, kk := range keys {
		g := gpuOf[kk]
		where := ""
		if g == nil && kk.bus != "" {
			where = "PCI " + kk.bus + ": "
		}
		times := ""
		if c := counts[kk]; c > 1 {
			times = fmt.Sprintf(" (%d times)", c)
		}
		if kk.lost {
			v.add(Fail, g, "drain and reboot the node; check PCIe power and seating; RMA if it recurs",
				where+"GPU has fallen off the bus"+times)
			continue
		}
		info := XIDLookup(kk.code, cfg.XID.Critical)
		sev := Warn
		if info.Severity == XIDCritical || last[kk].FellOffBus {
			sev = Fail
		}
		msg := fmt.Sprintf("%sXid %d: %s%s", where, kk.code, info.Meaning, times)
		if p := last[kk].Process; p != "" {
			msg += fmt.Sprintf(", last by %s (pid %d)", p, last[kk].PID)
		}
		v.add(sev, g, info.Remedy, msg)
	}
	r := v.result("")
	if cleared > 0 && len(r.Details) > 0 {
		r.Details = append(r.Details, clearedNote(cleared)[2:])
	}
	return r
}

// clearedByDriverLoad: an XID whose remedy NVIDIA gives as a GPU reset or an
// application restart is answered by a later driver load, which resets
// every GPU (docs/checks.md, gpu.xid). A reboot or support case is not:
// those still count, as does a GPU that fell off the bus, and a code the
// admin made critical.
func clearedByDriverLoad(ev state.XIDEvent, cfg *Config) bool {
	if !ev.BeforeDriverLoad || ev.FellOffBus || containsInt(cfg.XID.Critical, ev.Code) {
		return false
	}
	switch XIDLookup(ev.Code, nil).Action {
	case ActionResetGPU, ActionRestartApp:
		return true
	}
	return false
}

func clearedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d XID(s) needing a GPU reset or an application restart were logged before the driver was last loaded, which reset the GPUs: not counted", n)
}

func containsInt(l []int, x int) bool {
	for _, y := range l {
		if y == x {
			return true
		}
	}
	return false
}

func ignored(code int, list []int) bool {
	for _, c := range list {
		if c == code {
			return true
		}
	}
	return false
}

func gpuByBus(n *state.Node, ev state.XIDEvent) *state.GPU {
	if n.NVML == nil {
		return nil
	}
	for i := range n.NVML.GPUs {
		if ev.MatchGPU(n.NVML.GPUs[i].PCIBusID) {
			return &n.NVML.GPUs[i]
		}
	}
	return nil
}
