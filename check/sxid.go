package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

func init() {
	register(Check{ID: "fabric.sxid", Title: "no fatal NVSwitch SXid error in the kernel log", Run: checkSXid})
}

// checkSXid judges NVSwitch errors by the severity the nvswitch driver
// prints on the line itself ("Fatal"/"Non-fatal"). NVIDIA's Fabric Manager
// user guide ("Runtime NVSwitch and GPU errors"): a fatal SXid stops the
// fabric for the GPUs behind that switch, whose jobs fail, and the GPUs and
// NVSwitches must be reset (or the node rebooted); non-fatal ones are
// corrected by the hardware and are informational. An SXid logged before
// the driver was last loaded is answered by that load, which resets the
// switches with the GPUs.
func checkSXid(n *state.Node, cfg *Config) Result {
	k := n.Kernel
	if k == nil {
		return Result{Status: Skip, Summary: "kernel log not collected"}
	}
	if k.XIDError != "" {
		return Result{Status: Skip, Summary: "the kernel log was not read (see gpu.xid)"}
	}
	if len(k.SXIDs) == 0 {
		return Result{Status: Pass, Summary: "no NVSwitch SXid errors since boot"}
	}
	type key struct {
		dev  string
		code int
	}
	fatal, info := map[key]int{}, map[key]int{}
	last := map[key]state.SXIDEvent{}
	cleared, unknown := 0, 0
	for _, ev := range k.SXIDs {
		kk := key{ev.Device, ev.Code}
		switch {
		case ev.BeforeDriverLoad:
			cleared++
		case ev.Severity == "fatal":
			fatal[kk]++
			last[kk] = ev
		case ev.Severity == "":
			unknown++
			info[kk]++
		default:
			info[kk]++
		}
	}
	note := ""
	if len(info) > 0 {
		var parts []string
		for kk, c := range info {
			parts = append(parts, fmt.Sprintf("%s SXid %d ×%d", kk.dev, kk.code, c))
		}
		sort.Strings(parts)
		note = "; non-fatal (informational): " + strings.Join(parts, ", ")
		if unknown > 0 {
			note += fmt.Sprintf(" (%d line(s) without a severity word, counted as non-fatal)", unknown)
		}
	}
	if cleared > 0 {
		note += fmt.Sprintf("; %d SXid(s) logged before the driver was last loaded, which reset the switches: not counted", cleared)
	}
	if len(fatal) == 0 {
		return Result{ID: "fabric.sxid", Status: Pass, Summary: "no fatal NVSwitch SXid since boot" + note, Devices: []Device{}}
	}
	var keys []key
	for kk := range fatal {
		keys = append(keys, kk)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].dev != keys[j].dev {
			return keys[i].dev < keys[j].dev
		}
		return keys[i].code < keys[j].code
	})
	v := verdict{id: "fabric.sxid"}
	for _, kk := range keys {
		ev := last[kk]
		times := ""
		if c := fatal[kk]; c > 1 {
			times = fmt.Sprintf(" (%d times)", c)
		}
		v.add(Fail, nil, "drain the node; reset the GPUs and NVSwitches (or reboot) and restart nvidia-fabricmanager; contact NVIDIA support if it recurs",
			fmt.Sprintf("%s (PCI %s): fatal SXid %d: %s%s", kk.dev, ev.BusID, kk.code, ev.Message, times))
	}
	r := v.result("")
	if note != "" {
		r.Details = append(r.Details, strings.TrimPrefix(note, "; "))
	}
	return r
}
