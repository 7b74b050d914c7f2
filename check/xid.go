package check

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

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
		// reset: the driver's NV_ERR_RESET_REQUIRED lines (no Xid).
		reset bool
		// sub separates an NVLink 5 Xid's (144-150) lines by what NVIDIA's
		// decode sheet makes of them: "subcode action", or "undecoded".
		sub string
	}
	counts := map[key]int{}
	// notices counts the fallen-off notices folded into an Xid 79 finding:
	// one loss prints both (below), so they are no further losses.
	notices := map[key]int{}
	gpuOf := map[key]*state.GPU{} // by identity: an index is not a position in a scoped state
	last := map[key]state.XIDEvent{}
	// marked: the strongest reset the error-containment lines (Xid 94/95)
	// of a key said the driver marked the GPU for ("RST: Yes", "D-RST:
	// Yes"), whatever the code's catalogue row.
	marked := map[key]string{}
	var keys []key
	cleared := 0
	var appFaults []appFault // RESTART_APP-class events, for recurrence
	recovery := latestRecoveryActions(k.XIDs)
	decoded := map[key]nvlink5Decoding{}
	var nv5 nvlink5Notes
	ignored := map[int]int{} // code -> lines read that need no action
	// The driver's fallen-off-the-bus notice (no Xid number) and an Xid 79
	// for the same GPU are one loss: the notice joins the 79's finding.
	with79 := map[string]bool{}
	namedLost := false // the log names a GPU it lost
	for _, ev := range k.XIDs {
		if ev.Code == 79 && ev.BusID != "" {
			with79[ev.BusID] = true
		}
		namedLost = namedLost || ev.BusID != "" && fellOffBus(ev)
	}
	// A recovery an Xid 154 line asks for (a reset or more), a GPU the log
	// names as lost, or a named GPU's Xid whose action is a reset or more
	// (62 PMU_HALT_ERROR before "Check failed: Reset required" in a real
	// journal) is what the driver's unnamed NV_ERR_RESET_REQUIRED lines are
	// about: they join it rather than make a finding of their own.
	explained := namedLost
	for _, a := range recovery {
		explained = explained || a.code != 0
	}
	for _, ev := range k.XIDs {
		explained = explained || ev.BusID != "" && ev.Code != 0 && XIDLookup(ev.Code, cfg.XID.Critical).Severity == XIDCritical
	}
	for i, ev := range k.XIDs {
		// Xid 154 says what recovery the driver now requires; its latest
		// line for a GPU is what holds. "0x0 (None)" after a reset is the
		// recovery done: none of that GPU's 154 lines is a finding.
		if ev.Code == 154 {
			if a, ok := recovery[ev.BusID]; ok && a.code == 0 {
				continue
			}
		}
		// NVIDIA's IGNORE codes (63, 92: a row remap recorded, a high SBE
		// rate) are no finding of their own: gpu.row_remap and gpu.ecc judge
		// those conditions from NVML's counters, which a reset clears.
		// xid.ignore drops a code outright; an IGNORE row still counts on a
		// line that says the GPU fell off the bus. XIDSeverityFor is what
		// the exporter's severity label says too.
		if XIDSeverityFor(ev.Code, cfg.XID) == XIDIgnored && (slices.Contains(cfg.XID.Ignore, ev.Code) || !fellOffBus(ev)) {
			ignored[ev.Code]++ // read, and said so: never "no XIDs"
			continue
		}
		if cfg.XID.Window > 0 && !ev.Time.IsZero() && ev.Time.Before(n.CollectedAt.Add(-cfg.XID.Window)) {
			continue
		}
		if clearedByDriverLoad(k, ev, cfg) {
			cleared++
			continue
		}
		// The driver's NV_ERR_GPU_IS_LOST lines mostly name no GPU; where
		// the log names the GPU it lost, they are that loss, not another.
		if ev.Code == 0 && ev.BusID == "" && gpuIsLost(ev) && namedLost {
			continue
		}
		if resetRequired(ev) && ev.BusID == "" && explained {
			continue
		}
		kk := key{gpu: -1, bus: ev.BusID, code: ev.Code, lost: ev.Code == 0 && fellOffBus(ev), reset: resetRequired(ev)}
		notice := false
		if kk.lost && with79[ev.BusID] {
			kk.code, kk.lost, notice = 79, false, true
		}
		g := gpuByBus(n, ev)
		if g != nil {
			kk.gpu = g.Index
		}
		// NVLink 5 Xids (144-150): NVIDIA's action is in the line's
		// registers (WORKFLOW_NVLINK5_ERR: decode IntrInfo and Error
		// Status with the XID 144-150 Decode sheet). A code the admin made
		// critical is not decoded.
		if isNVLink5(ev.Code) && !slices.Contains(cfg.XID.Critical, ev.Code) {
			d := decodeNVLink5(ev)
			switch {
			case d.row == nil:
				kk.sub = "undecoded"
			case d.action == "IGNORE":
				nv5.ignore(ev, d)
				continue
			case d.action == "XID_154_EVAL" && xid154After(k.XIDs[i+1:], ev.BusID):
				nv5.followed++
				continue
			default:
				kk.sub = d.row.subcode + " " + d.action
			}
			decoded[kk] = d
		}
		if g != nil {
			gpuOf[kk] = g
		}
		if counts[kk] == 0 {
			keys = append(keys, kk)
		}
		counts[kk]++
		if notice {
			notices[kk]++
			if _, ok := last[kk]; ok {
				continue // the Xid 79 line says more (pid, process)
			}
		}
		last[kk] = ev
		if m := containmentReset(ev.Message); m != "" && (marked[kk] == "" || m == "D-RST") {
			marked[kk] = m
		}
		if info := XIDLookup(ev.Code, cfg.XID.Critical); kk.sub == "" && info.Action == ActionRestartApp && info.Severity == XIDWarning && !kk.lost && containmentReset(ev.Message) == "" {
			appFaults = append(appFaults, appFault{gpu: kk.gpu, bus: kk.bus, at: ev.Time, pid: ev.PID, process: ev.Process})
		}
	}
	recurring := recurrences(appFaults, cfg.XID.Recurrence)
	notJudged := ignoredNote(ignored, cfg.XID) + nv5.note()
	read := notJudged + clearedNote(cleared)
	var aer verdict
	pcieFatal(n, k, cfg, &aer)
	initFailures(n, k, cfg, &aer)
	gspTimeouts(n, k, cfg, &aer)
	if len(keys) == 0 && len(aer.findings) == 0 {
		window := "since boot"
		if cfg.XID.Window > 0 {
			window = "in the last " + cfg.XID.Window.String()
		}
		switch {
		case read != "" && !nvmlOK:
			// A saved log (--kernel-log) whose Xids all need no action:
			// they were read, and NVIDIA's catalogue says so.
			return Result{Status: Pass, Summary: "no XID events needing action in the kernel log" + read}
		case !nvmlOK && k.DriverLoads > 0:
			// A saved log that shows the NVIDIA driver loading and no Xid
			// is a clean log of a GPU node (issue 26), not an empty one.
			return Result{Status: Pass, Summary: fmt.Sprintf("no XID events in the kernel log, which shows the NVIDIA driver loading (%d time(s))", k.DriverLoads)}
		case !nvmlOK:
			return Result{Status: Skip, Summary: "no NVIDIA GPUs to judge and no XIDs in the kernel log"}
		case notJudged != "":
			return Result{Status: Pass, Summary: "no XID events needing action " + window + read}
		}
		return Result{Status: Pass, Summary: "no XID events " + window + read}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].gpu != keys[j].gpu {
			return keys[i].gpu < keys[j].gpu
		}
		if keys[i].code != keys[j].code {
			return keys[i].code < keys[j].code
		}
		return keys[i].sub < keys[j].sub
	})
	v := verdict{id: "gpu.xid"}
	for _, kk := range keys {
		g := gpuOf[kk]
		where := ""
		if g == nil && kk.bus != "" {
			where = "PCI " + kk.bus + ": "
		}
		times := ""
		if c := losses(counts[kk], notices[kk]); c > 1 {
			times = fmt.Sprintf(" (%d times)", c)
		}
		if kk.lost {
			what := "GPU has fallen off the bus"
			if gpuIsLost(last[kk]) {
				what = "GPU lost from the bus (the driver's NV_ERR_GPU_IS_LOST, no Xid line)"
			}
			if where == "" && g == nil {
				where = "a GPU the line does not name: "
			}
			v.add(Fail, g, "drain and reboot the node; check PCIe power and seating; RMA if it recurs",
				where+what+times)
			continue
		}
		if kk.reset {
			// nvml.h NVML_ERROR_RESET_REQUIRED: "The GPU requires a reset
			// before it can be used again"; the driver's own line says so.
			if where == "" && g == nil {
				where = "a GPU the line does not name: "
			}
			v.add(Fail, g, "drain and reset the GPU (nvidia-smi -r), or reboot the node when the line names no GPU; contact NVIDIA support if it recurs",
				where+"the driver says the GPU requires a reset before it can be used again (NV_ERR_RESET_REQUIRED, no Xid line)"+times)
			continue
		}
		if d, ok := decoded[kk]; ok && d.row != nil {
			// Decoded: NVIDIA's action decides. RESET_GPU fails; XID_154_EVAL
			// without a later Xid 154 is RESTART_APP, the job's business.
			sev := Fail
			if d.action == "XID_154_EVAL" {
				sev = Warn
			}
			if fellOffBus(last[kk]) {
				sev = Fail
			}
			v.add(sev, g, d.remedy(), fmt.Sprintf("%sXid %d: %s%s", where, kk.code, d.words(last[kk]), times))
			continue
		}
		info := XIDLookup(kk.code, cfg.XID.Critical)
		sev := Warn
		if info.Severity == XIDCritical || fellOffBus(last[kk]) {
			sev = Fail
		}
		msg := fmt.Sprintf("%sXid %d: %s%s", where, kk.code, info.Meaning, times)
		if p := last[kk].Process; p != "" {
			msg += fmt.Sprintf(", last by %s (pid %d)", p, last[kk].PID)
		}
		remedy := info.Remedy
		if d, ok := decoded[kk]; ok {
			msg += "; not decoded: " + d.why
		}
		// The line's own reset flags outrank a RESTART_APP row; a code that
		// already fails keeps its remedy and says the flag.
		switch m := marked[kk]; {
		case m == "RST":
			msg += "; the driver marked the GPU for reset (RST: Yes)"
			if sev != Fail {
				remedy = "drain and reset the GPU (nvidia-smi -r): the driver marked it for reset; gpu.row_remap says whether a remap is pending"
			}
			sev = Fail
		case m == "D-RST":
			msg += "; the driver marked the GPU for drain and reset (D-RST: Yes)"
			if sev != Fail {
				remedy = "drain the GPU (stop every job on it) and reset it (nvidia-smi -r): the driver marked it for drain and reset"
			}
			sev = Fail
		}
		if a, ok := recovery[kk.bus]; ok && kk.code == 154 {
			msg = fmt.Sprintf("%sXid 154: the driver now requires %s (%s)%s", where, a.words, a.raw, times)
			remedy = a.remedy
		}
		if r, ok := recurring[gpuKey{kk.gpu, kk.bus}]; ok && sev == Warn && info.Action == ActionRestartApp {
			sev = Fail
			msg += "; " + r
			remedy = "application-class faults recur on this GPU alone: drain it and run DCGM diagnostics (dcgmi diag -r 3); " +
				"if they find a fault or the faults keep recurring across jobs, contact NVIDIA support (RMA) — NVIDIA's Xid catalogue " +
				"gives CONTACT_SUPPORT or a support workflow as the investigatory action for these codes"
		}
		v.add(sev, g, remedy, msg)
	}
	v.findings = append(v.findings, aer.findings...)
	r := v.result("")
	if n := ignoredNote(ignored, cfg.XID); n != "" {
		r.Details = append(r.Details, n[2:])
	}
	if cleared > 0 && len(r.Details) > 0 {
		r.Details = append(r.Details, clearedNote(cleared)[2:])
	}
	if n := nv5.note(); n != "" {
		r.Details = append(r.Details, n[2:])
	}
	return r
}

// isNVLink5 says NVIDIA's decode sheet has rows for the code (144-150).
func isNVLink5(code int) bool {
	for i := range nvlink5Decode {
		if nvlink5Decode[i].code == code {
			return true
		}
	}
	return false
}

// xid154After: an Xid 154 for the GPU at bus comes later in the log (the
// events after the line); NVIDIA's XID_154_EVAL then defers to it.
func xid154After(after []state.XIDEvent, bus string) bool {
	for _, e := range after {
		if e.Code == 154 && e.BusID == bus {
			return true
		}
	}
	return false
}

// nvlink5Notes counts the NVLink 5 lines that NVIDIA's decode sheet leaves
// without a finding of their own, so the result says they were read.
type nvlink5Notes struct {
	ignored, followed int
	names             map[string]int // "Xid 145 RLW_CTRL" -> IGNORE lines
}

func (n *nvlink5Notes) ignore(ev state.XIDEvent, d nvlink5Decoding) {
	n.ignored++
	if n.names == nil {
		n.names = map[string]int{}
	}
	n.names[fmt.Sprintf("Xid %d %s", ev.Code, d.row.subcode)]++
}

func (n nvlink5Notes) note() string {
	s := ""
	if n.ignored > 0 {
		names := make([]string, 0, len(n.names))
		for k, c := range n.names {
			names = append(names, fmt.Sprintf("%s ×%d", k, c))
		}
		sort.Strings(names)
		s += fmt.Sprintf("; %d NVLink 5 Xid line(s) (144-150) decoded by NVIDIA's XID 144-150 Decode sheet as IGNORE (%s): no action", n.ignored, strings.Join(names, ", "))
	}
	if n.followed > 0 {
		s += fmt.Sprintf("; %d NVLink 5 Xid line(s) decoded as XID_154_EVAL with an Xid 154 after them: the Xid 154 decides", n.followed)
	}
	return s
}

// recoveryAction is what an Xid 154 line says the driver now requires:
// "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset
// Required)". The codes are nvml.h's nvmlDeviceGpuRecoveryAction_t.
type recoveryAction struct {
	code          uint64
	raw           string // as logged: "0x1 (GPU Reset Required)"
	words, remedy string
}

var recoveryActions = map[uint64][2]string{
	1: {"a GPU reset", "drain and reset the GPU (nvidia-smi -r)"},
	2: {"a node reboot", "drain and reboot the node"},
	3: {"peer-to-peer traffic drained", "drain the node so no job uses the GPU's peer-to-peer paths; then reset the GPU"},
	4: {"P2P drained and a GPU reset", "drain and reset the GPU (nvidia-smi -r)"},
	5: {"the IMEX domain recovered", "drain; recover the IMEX domain (nvidia-imex) of this node's NVLink domain"},
	6: {"a reset of the GPU's PCIe bus", "drain and reset the GPU's PCIe bus (or reboot the node)"},
	7: {"a system reboot", "drain and reboot the node"},
}

// latestRecoveryActions is, per bus ID, what the last Xid 154 line for that
// GPU says. Lines whose action cannot be read are left out (the code is
// then judged by its catalogue row alone).
func latestRecoveryActions(events []state.XIDEvent) map[string]recoveryAction {
	out := map[string]recoveryAction{}
	for _, ev := range events {
		if ev.Code != 154 {
			continue
		}
		_, after, ok := strings.Cut(ev.Message, " to 0x")
		if !ok {
			continue
		}
		hex, rest, _ := strings.Cut(after, " ")
		code, err := strconv.ParseUint(hex, 16, 8)
		if err != nil {
			continue
		}
		raw := strings.TrimSpace("0x" + hex + " " + rest)
		if len(raw) > 64 {
			raw = raw[:64] + "..."
		}
		a := recoveryAction{code: code, raw: raw}
		if w, known := recoveryActions[code]; known {
			a.words, a.remedy = w[0], w[1]
		} else if code != 0 {
			a.words, a.remedy = "recovery action "+a.raw, "drain and perform the recovery action the driver logged"
		}
		out[ev.BusID] = a
	}
	return out
}

// appFault is one RESTART_APP-class XID line: which GPU, and when.
type appFault struct {
	gpu int
	bus string
	at  time.Time
	// pid and process are the line's pid= and name= (0 and "" when the
	// driver printed none or '<unknown>'): lines of one process are one
	// incident however long it kept failing.
	pid     int
	process string
}

// proc names the process a fault came from; "" when the line named none.
func (f appFault) proc() string {
	if f.pid <= 0 {
		return ""
	}
	return fmt.Sprintf("%d/%s", f.pid, f.process)
}

type gpuKey struct {
	gpu int
	bus string
}

// burstGap separates incidents: one application fault logs a burst of
// lines (a real log, testdata/xid-burst-pastebin-fTNHmgzB.txt: nine lines
// of Xid 69 and 31 over 39 s, gaps up to 25 s), and a quick resubmission
// of the same job is the same incident. Lines that name one process (the
// driver's pid= and name=) are one incident whatever the gaps: one job
// that kept faulting for hours (issue 26: 629 Xid 13 lines from one
// PyTorch job in 2 h) is one application's fault, not the GPU's; faults
// recurring in different processes are the evidence.
const burstGap = 5 * time.Minute

// recurrences finds the GPUs whose application-class XIDs recur: at least
// rc.Count separate incidents within any rc.Window. An incident is a burst
// of lines on the GPU (gaps under burstGap); a burst that another GPU of
// the node shares (an application-class XID on it within burstGap) is a
// multi-GPU job failing everywhere, which says nothing about this GPU, and
// is not counted. Events without a time cannot be placed: where a GPU has
// any, its lines are one incident at most for those, and the count runs
// since boot, which the finding says. The value is the text for the
// finding.
func recurrences(faults []appFault, rc XIDRecurrence) map[gpuKey]string {
	if rc.Count < 2 || len(faults) == 0 {
		return nil
	}
	byGPU := map[gpuKey][]appFault{}
	undated := map[gpuKey]bool{}
	for _, f := range faults {
		k := gpuKey{f.gpu, f.bus}
		if f.at.IsZero() {
			undated[k] = true
			continue
		}
		byGPU[k] = append(byGPU[k], f)
	}
	sharedWithOther := func(k gpuKey, t time.Time) bool {
		for o, fs := range byGPU {
			if o == k {
				continue
			}
			for _, u := range fs {
				if d := u.at.Sub(t); d > -burstGap && d < burstGap {
					return true
				}
			}
		}
		return false
	}
	out := map[gpuKey]string{}
	keys := map[gpuKey]bool{}
	for k := range byGPU {
		keys[k] = true
	}
	for k := range undated {
		keys[k] = true
	}
	for k := range keys {
		fs := byGPU[k]
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].at.Before(fs[j].at) })
		var starts []time.Time    // incidents of this GPU alone
		seen := map[string]bool{} // processes whose incident is counted
		for i, f := range fs {
			p := f.proc()
			burst := i > 0 && f.at.Sub(fs[i-1].at) < burstGap
			again := p != "" && seen[p]
			if p != "" {
				seen[p] = true
			}
			if burst || again {
				continue // the same burst, or the same process failing on
			}
			if !sharedWithOther(k, f.at) {
				starts = append(starts, f.at)
			}
		}
		if undated[k] {
			// No time: the window cannot be applied; count since boot.
			if n := len(starts) + 1; n >= rc.Count {
				out[k] = fmt.Sprintf("recurring: %d separate incidents on this GPU since boot (some lines carry no time, so xid.recurrence.window could not be applied; escalates at %d)", n, rc.Count)
			}
			continue
		}
		if n, span := densest(starts, rc.Window); n >= rc.Count {
			within := "since boot"
			if rc.Window > 0 {
				within = "within " + span.Round(time.Minute).String() + " (window " + rc.Window.String() + ")"
			}
			out[k] = fmt.Sprintf("recurring: %d separate incidents on this GPU alone %s, escalates at %d", n, within, rc.Count)
		}
	}
	return out
}

// densest is the most incidents within any window (all of them when the
// window is 0), and the time they span.
func densest(starts []time.Time, window time.Duration) (int, time.Duration) {
	best, span := 0, time.Duration(0)
	j := 0
	for i := range starts {
		for window > 0 && starts[i].Sub(starts[j]) > window {
			j++
		}
		if n := i - j + 1; n > best {
			best, span = n, starts[i].Sub(starts[j])
		}
	}
	return best, span
}

// clearedByDriverLoad: an XID whose remedy NVIDIA gives as a GPU reset or an
// application restart is answered by a later driver load, which resets
// every GPU (docs/checks.md, gpu.xid). A reboot or support case is not:
// those still count, as does a GPU that fell off the bus, and a code the
// admin made critical.
func clearedByDriverLoad(k *state.Kernel, ev state.XIDEvent, cfg *Config) bool {
	if !beforeDriverLoad(k, ev.DriverLoad) || fellOffBus(ev) || slices.Contains(cfg.XID.Critical, ev.Code) {
		return false
	}
	if resetRequired(ev) {
		return true // the load reset the GPU the line asked to reset
	}
	return resetClass(XIDLookup(ev.Code, nil).Action)
}

// ignoredNote names the Xid lines read and left without a finding: codes
// NVIDIA's catalogue classes IGNORE (or gives no action), and codes the
// configuration's xid.ignore drops. A log that held only those was read,
// not empty (issue 26: "say it was read and why it is ignored").
func ignoredNote(ignored map[int]int, cfg XIDConfig) string {
	if len(ignored) == 0 {
		return ""
	}
	codes := make([]int, 0, len(ignored))
	for c := range ignored {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		why := "NVIDIA's Xid catalogue: no action"
		switch row, ok := nvidiaXIDs[c]; {
		case slices.Contains(cfg.Ignore, c):
			why = "xid.ignore in the configuration"
		case ok && row.action != "":
			why = "NVIDIA's Xid catalogue: " + string(row.action)
		}
		name := ""
		if row, ok := nvidiaXIDs[c]; ok && row.mnemonic != "" {
			name = " " + row.mnemonic
		}
		parts = append(parts, fmt.Sprintf("Xid %d%s ×%d (%s)", c, name, ignored[c], why))
	}
	return "; read and needing no action of their own: " + strings.Join(parts, ", ")
}

func clearedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d XID(s) needing a GPU reset or an application restart were logged before the driver was last loaded, which reset the GPUs: not counted", n)
}

// losses is how many times a GPU fell off the bus, from its Xid 79 lines
// and the fallen-off notices folded into them (lines in all, notices of
// them). The driver reports one loss with both: osHandleGpuLost logs Xid 79
// (nvErrorLog_va, ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS, "GPU has fallen
// off the bus.") and then its own notice (NV_DEV_PRINTF, "GPU
// 0000:06:00.0: GPU has fallen off the bus."), once, returning early when
// the GPU is already disconnected (open-gpu-kernel-modules,
// src/nvidia/arch/nvalloc/unix/src/osinit.c, commit
// 1739a20efc4acb55fd1dc53dcc66057b70c2613c). Counting both said "2 times"
// of one loss (issue 26's 79 + notice; OGKM issue 1151's RTX 5090 log). A
// driver that printed only one of the two still counts each of its lines.
func losses(lines, notices int) int {
	return max(lines-notices, notices)
}

// fellOffBus: the line says the GPU is gone, with or without an XID
// number: Xid 79, or the driver's "fallen off the bus" text (older drivers
// and the probe-time notice print it without one).
func fellOffBus(ev state.XIDEvent) bool {
	return ev.Code == 79 || strings.Contains(ev.Message, "fallen off the bus") || gpuIsLost(ev)
}

// gpuIsLost: the driver's assertion that the GPU is gone
// ("Assertion failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST]"), which
// a lost GPU can log without any Xid line (issue 26).
func gpuIsLost(ev state.XIDEvent) bool {
	return strings.Contains(ev.Message, "NV_ERR_GPU_IS_LOST") || strings.Contains(ev.Message, "GPU lost from the bus")
}

// containmentReset reads the reset an error-containment Xid line (94
// contained, 95 uncontained) says the driver marked the GPU for: "...
// RST: Yes, D-RST: No" is gpuMarkDeviceForReset, "D-RST: Yes"
// gpuMarkDeviceForDrainAndReset (open-gpu-kernel-modules,
// src/nvidia/src/kernel/gpu/arch/ampere/kern_gpu_ga100.c,
// _gpuGenerateErrorLog_GA100 prints bGpuResetReqd and bGpuDrainAndResetReqd
// so, and gpuUpdateErrorContainmentState_GA100 marks the device by the same
// flags; commit 448d5cc65624d3aa69015efa0d3fb50fd9729f41). "D-RST" when
// drain and reset is marked, "RST" for a reset, "" for neither (hw3: a
// contained Xid 94 the driver marked for reset only warned, as its
// catalogue row RESTART_APP says for the usual "RST: No, D-RST: No").
func containmentReset(msg string) string {
	switch {
	case strings.Contains(msg, "D-RST: Yes"):
		return "D-RST"
	case strings.Contains(msg, "RST: Yes"):
		return "RST"
	}
	return ""
}

// resetRequired: the driver's assertion that a GPU must be reset before it
// is used again ("Assertion failed: Reset required [NV_ERR_RESET_REQUIRED]";
// nvml.h's NVML_ERROR_RESET_REQUIRED, "The GPU requires a reset before it
// can be used again"), logged with no Xid line (hw3).
func resetRequired(ev state.XIDEvent) bool {
	return ev.Code == 0 && strings.Contains(ev.Message, "NV_ERR_RESET_REQUIRED")
}

// beforeDriverLoad: a line logged after `load` driver loads has a later one
// after it in the same log ("NVRM: loading NVIDIA UNIX ... Kernel Module"),
// which re-initialised every GPU. The kernel collector records the order;
// this is where it is read as "answered by a driver load".
func beforeDriverLoad(k *state.Kernel, load int) bool {
	return load < k.DriverLoads
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

// pcieFatal judges the kernel's failed AER recoveries (issue 26: a GPU lost
// to a fatal PCIe error leaves no Xid line). Linux's PCIe error recovery
// (drivers/pci/pcie/err.c, Documentation/PCI/pci-error-recovery.rst) logs
// "AER: can't recover" on the device and "AER: device recovery failed" on
// the reporting port when it gave up: the device stays unusable until a
// reset. On a GPU (one NVML lists, or a line the nvidia driver printed) it
// fails; where the log names no device, or a device that cannot be told a
// GPU (no NVML: a saved log), it warns, naming the port and device; a
// device that is none of the GPUs NVML lists is another driver's. Like
// a fallen-off GPU, a later driver load does not answer it.
func pcieFatal(n *state.Node, k *state.Kernel, cfg *Config, v *verdict) {
	type where struct {
		gpu       *state.GPU
		dev, port string
	}
	counts := map[where]int{}
	var order []where
	for _, ev := range k.PCIeFatal {
		if cfg.XID.Window > 0 && !ev.Time.IsZero() && ev.Time.Before(n.CollectedAt.Add(-cfg.XID.Window)) {
			continue
		}
		w := where{dev: ev.Device, port: ev.Port}
		if ev.Device != "" {
			w.gpu = gpuByBus(n, state.XIDEvent{BusID: ev.Device})
		}
		switch {
		case w.gpu != nil:
			w.dev, w.port = "", ""
		case ev.Driver == "nvidia", ev.DeviceDriver == "nvidia":
			w.port = "" // the nvidia function's own line and its port's: one finding
		case ev.Driver != "pcieport" && ev.Driver != "":
			// Another driver's device (hw3: a USB controller's, a
			// Thunderbolt bridge's, a SATA card's, the GPU board's HDMI
			// audio): its own line names its driver, and it is no GPU.
			// It was failed as "(nvidia)" in a saved log.
			continue
		case ev.DeviceDriver != "":
			continue // the port failed on another driver's device
		case ev.Device != "" && n.NVML != nil && n.NVML.Available && len(n.NVML.GPUs) > 0:
			continue // another device's error: not a GPU of this node
		}
		if counts[w] == 0 {
			order = append(order, w)
		}
		counts[w]++
	}
	for _, w := range order {
		times := ""
		if c := counts[w]; c > 1 {
			times = fmt.Sprintf(" (%d lines)", c)
		}
		const fix = "drain and reboot the node (the device stays unusable until reset); check the GPU's seating, riser and PCIe switch; RMA if it recurs"
		switch {
		case w.gpu != nil:
			v.add(Fail, w.gpu, fix, "uncorrectable PCIe error and the kernel's AER recovery failed"+times)
		case w.dev != "" && w.port == "":
			v.add(Fail, nil, fix, "PCI "+w.dev+" (nvidia): uncorrectable PCIe error and the kernel's AER recovery failed"+times)
		case w.dev != "":
			// No GPU list to tell (a saved log): it may be a NIC's.
			v.add(Warn, nil, "if PCI "+w.dev+" is a GPU (lspci -s "+w.dev+"), drain and reboot the node",
				"PCI "+w.dev+" behind port "+w.port+": uncorrectable PCIe error and the kernel's AER recovery failed; whether it is a GPU is not known here"+times)
		default:
			v.add(Warn, nil, "find the device behind the port (lspci -t); if it is a GPU, drain and reboot the node",
				"port "+w.port+": uncorrectable PCIe error and the kernel's AER recovery failed; the log does not name the device (a GPU's?)"+times)
		}
	}
}
