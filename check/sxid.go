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

// checkSXid judges NVSwitch errors per code by NVIDIA's SXid table
// (NVSentinel's sxiderrorsmapping.csv, check/sxidnvidia.go) and by the
// severity the nvswitch driver prints on the line ("Fatal"/"Non-fatal"):
// judgeSXID lets the line's word decide (a table-FATAL code printed
// Non-fatal warns) and the table decide a line without one, and names
// NVIDIA's action in the fix. NVIDIA's Fabric Manager user guide ("Runtime NVSwitch and GPU
// errors"): a fatal SXid stops the fabric for the GPUs behind that switch,
// whose jobs fail, and the GPUs and NVSwitches must be reset (or the node
// rebooted); non-fatal ones are corrected by the hardware and are
// informational. An SXid logged before the driver was last loaded is
// answered by that load, which resets the switches with the GPUs.
func checkSXid(n *state.Node, cfg *Config) Result {
	k := n.Kernel
	if k == nil {
		return Result{Status: Skip, Summary: "kernel log not collected"}
	}
	if k.XIDError != "" {
		return Result{Status: Skip, Summary: "the kernel log was not read (see gpu.xid)"}
	}
	if len(k.SXIDs) == 0 {
		return Result{Status: Pass, Summary: "no NVSwitch SXid errors " + sxidSpan(n)}
	}
	type key struct {
		dev  string
		code int
	}
	fatal, info, warned := map[key]int{}, map[key]int{}, map[key]int{}
	last := map[key]state.SXIDEvent{}
	cleared, unknown := 0, 0
	for _, ev := range k.SXIDs {
		kk := key{ev.Device, ev.Code}
		if beforeDriverLoad(k, ev.DriverLoad) {
			cleared++
			continue
		}
		switch {
		case judgeSXID(ev).fatal:
			fatal[kk]++
			last[kk] = ev
		case judgeSXID(ev).warn:
			warned[kk]++
			last[kk] = ev
		default:
			info[kk]++
			if _, known := nvidiaSXIDs[ev.Code]; !known && ev.Severity == "" {
				unknown++
			}
		}
	}
	note := ""
	if len(info) > 0 {
		var parts []string
		for kk, c := range info {
			p := fmt.Sprintf("%s SXid %d ×%d", kk.dev, kk.code, c)
			if row, ok := nvidiaSXIDs[kk.code]; ok {
				p += fmt.Sprintf(" (NVIDIA: %s)", row.action)
			}
			parts = append(parts, p)
		}
		sort.Strings(parts)
		note = "; non-fatal (informational): " + strings.Join(parts, ", ")
		if unknown > 0 {
			note += fmt.Sprintf(" (%d line(s) without a severity word and not in NVIDIA's SXid table, counted as non-fatal)", unknown)
		}
	}
	if cleared > 0 {
		note += fmt.Sprintf("; %d SXid(s) logged before the driver was last loaded, which reset the switches: not counted", cleared)
	}
	if len(fatal) == 0 && len(warned) == 0 {
		return Result{ID: "fabric.sxid", Status: Pass, Summary: "no fatal NVSwitch SXid " + sxidSpan(n) + note, Devices: []Device{}}
	}
	var keys []key
	for kk := range fatal {
		keys = append(keys, kk)
	}
	for kk := range warned {
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
		c := judgeSXID(ev)
		times := ""
		if c.warn {
			if n := warned[kk]; n > 1 {
				times = fmt.Sprintf(" (%d times)", n)
			}
			v.add(Warn, nil, c.remedy, fmt.Sprintf("%s (PCI %s): SXid %d printed Non-fatal: %s%s [%s]", kk.dev, ev.BusID, kk.code, ev.Message, times, c.note))
			continue
		}
		if n := fatal[kk]; n > 1 {
			times = fmt.Sprintf(" (%d times)", n)
		}
		why := ""
		if c.note != "" {
			why = " [" + c.note + "]"
		}
		v.add(Fail, nil, c.remedy, fmt.Sprintf("%s (PCI %s): fatal SXid %d: %s%s%s", kk.dev, ev.BusID, kk.code, ev.Message, times, why))
	}
	r := v.result("")
	if note != "" {
		r.Details = append(r.Details, strings.TrimPrefix(note, "; "))
	}
	return r
}

// sxidSpan is what the kernel log covers: the ring buffer since boot when
// the node is judged live, or a saved log (--kernel-log, no NVML: gpu.xid
// tells them apart the same way), whose span is the file's.
func sxidSpan(n *state.Node) string {
	if n.NVML == nil || !n.NVML.Available {
		return "in the kernel log"
	}
	return "since boot"
}
