package check

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

func init() {
	register(Check{ID: "gpu.driver", Title: "NVML loads; driver version (optional minimum)", Run: checkDriver})
	register(Check{ID: "gpu.count", Title: "every GPU is reachable and the count is as expected", Run: checkCount})
	register(Check{ID: "gpu.ecc", Title: "no uncorrectable ECC errors since the last reset", Run: onReachableGPUs(checkECC)})
	register(Check{ID: "gpu.row_remap", Title: "no row remap pending or failed", Run: onReachableGPUs(checkRowRemap)})
}

// onReachableGPUs wraps a check that judges each reachable GPU: when NVML lists GPUs
// and none of them can be judged (every one lost, unreachable or closed to
// this process), the check skips and says so. It passed "on 0 GPUs" before:
// a capture that holds only nvidia-smi's "Unable to determine the device
// handle for GPU ..." (the GPU off the bus) read as ECC, row remaps, power
// and temperature all fine. Whether the GPUs are there is gpu.count's.
func onReachableGPUs(run func(*state.Node, *Config) Result) func(*state.Node, *Config) Result {
	return func(n *state.Node, cfg *Config) Result {
		if n.NVML != nil && n.NVML.Available && len(n.NVML.GPUs) > 0 && len(usable(n)) == 0 {
			return Result{Status: Skip, Summary: fmt.Sprintf("no GPU to judge: all %d GPU(s) NVML lists are lost, unreachable or closed to this process (gpu.count judges them)", len(n.NVML.GPUs))}
		}
		return run(n, cfg)
	}
}

// nvmlSkip is the common precondition: without NVML a GPU check has nothing
// to judge, and gpu.driver already says why.
func nvmlSkip(n *state.Node) (Result, bool) {
	if n.NVML == nil {
		return Result{Status: Skip, Summary: "NVML not collected"}, true
	}
	if !n.NVML.Available {
		return Result{Status: Skip, Summary: "NVML unavailable (see gpu.driver)"}, true
	}
	return Result{}, false
}

func checkDriver(n *state.Node, cfg *Config) Result {
	if n.NVML == nil {
		return Result{Status: Skip, Summary: "NVML not collected"}
	}
	if !n.NVML.Available {
		return Result{Status: Fail, Summary: "NVIDIA driver not usable: " + n.NVML.Error,
			Remedy: "install the NVIDIA driver, or check that its kernel module is loaded and its user-space library is on the loader path (lsmod | grep nvidia; ldconfig -p | grep nvidia; nvidia-smi)"}
	}
	nv := n.NVML
	summary := fmt.Sprintf("driver %s, CUDA %s, NVML %s", orNA(nv.DriverVersion), orNA(nv.CUDADriverVersion), orNA(nv.NVMLVersion))
	// The classic half-finished upgrade: new user-space library, old module.
	if k := n.Kernel; k != nil && k.ModuleVersion != "" && nv.DriverVersion != "" && k.ModuleVersion != nv.DriverVersion {
		return Result{Status: Fail, Summary: fmt.Sprintf("kernel module %s but NVML library %s", k.ModuleVersion, nv.DriverVersion),
			Remedy: "reboot (or unload and reload the nvidia modules) so the kernel module matches the installed driver"}
	}
	// Not read is not a pass (issue 26): a capture that does not print
	// the version (a fragment) says nothing of the driver; a live version
	// that could not be read leaves min_driver unjudged.
	switch {
	case nv.DriverVersion == "" && n.Capture != nil:
		return Result{Status: Skip, Summary: "the driver version is not in the capture"}
	case nv.DriverVersion == "" && cfg.MinDriver != "":
		return Result{Status: Warn, Summary: "could not read the driver version: min_driver " + cfg.MinDriver + " not judged", Remedy: notReadFix}
	}
	if cfg.MinDriver != "" && nv.DriverVersion != "" && versionLess(nv.DriverVersion, cfg.MinDriver) {
		return Result{Status: Fail, Summary: fmt.Sprintf("driver %s is older than the required %s", nv.DriverVersion, cfg.MinDriver),
			Remedy: "upgrade the NVIDIA driver to " + cfg.MinDriver + " or later"}
	}
	return Result{Status: Pass, Summary: summary}
}

func checkCount(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "gpu.count"}
	for _, e := range n.NVML.Errors {
		if e.Call == "nvmlDeviceGetCount" {
			v.add(Error, nil, "", "could not count GPUs: "+e.Call+": "+e.Error)
		}
	}
	for i := range n.NVML.GPUs {
		g := &n.NVML.GPUs[i]
		switch {
		case g.Lost:
			// NVML's GPU_IS_LOST is the GPU off the bus (nvml.h: "The GPU
			// has fallen off the bus or has otherwise become
			// inaccessible"); NVIDIA's Xid catalogue gives its Xid 79
			// RESTART_BM, and nvidia-smi says "Reboot the system to recover
			// this GPU". The remedy said "reset the GPU (nvidia-smi -r)"
			// first, which a GPU off the bus does not take.
			v.add(Fail, g, "drain and reboot the node (a GPU off the bus does not come back with nvidia-smi -r); check PCIe power and seating; RMA if it recurs",
				"GPU is lost (fell off the bus)")
		case g.Unreachable:
			msg := "NVML cannot open the GPU"
			if len(g.Errors) > 0 {
				msg += ": " + g.Errors[0].Call + ": " + g.Errors[0].Error
			}
			v.add(Fail, g, "check dmesg for NVRM/Xid errors; reset the GPU or reboot the node", msg)
		case g.RecoveryAction != nil && *g.RecoveryAction != 0:
			// The driver's own verdict on the GPU (nvml.h
			// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, nvidia-smi's "GPU Recovery
			// Action"; NVIDIA's memory error management guide: Reset
			// "requires a reset to recover", Reboot "may have left the OS in
			// an inconsistent state", Drain P2P, Drain and Reset). What an Xid
			// 154 line says in the kernel log, read live.
			words, fix := fmt.Sprintf("recovery action %d (not in nvml.h's list known here)", *g.RecoveryAction), "drain; find the driver's recovery action in nvml.h and follow it"
			if a, ok := recoveryActions[uint64(*g.RecoveryAction)]; ok {
				words, fix = a[0], a[1]
			}
			v.add(Fail, g, fix, fmt.Sprintf("the driver requires %s before the GPU is used again (GPU recovery action %d)", words, *g.RecoveryAction))
		case g.ResetRequired:
			// nvml.h NVML_ERROR_RESET_REQUIRED: "The GPU requires a reset
			// before it can be used again" (nvidia-smi: "[GPU requires
			// reset]"). The GPU answers its handle but no work: CUDA calls
			// it unavailable. Each value it refused stays "not read".
			v.add(Fail, g, "drain and reset the GPU (nvidia-smi -r), or reboot the node; check dmesg for the Xid that led to it",
				"the driver requires a reset before the GPU can be used again (NVML: GPU requires reset)")
		}
	}
	seen, denied := len(n.NVML.GPUs), 0
	for _, g := range n.NVML.GPUs {
		if g.Denied {
			denied++
		}
	}
	// A partial capture (issue 26): the GPUs it does not show are not in
	// the capture, neither missing nor reachable. Its "Attached GPUs" is
	// NVML's count; a fragment without the header has none.
	unseen := 0
	if c := n.Capture; c != nil && c.Partial != "" {
		if c.AttachedGPUs == 0 {
			// How many GPUs the node has is not in a fragment, but a GPU
			// it shows as lost or unreachable (nvidia-smi's "Unable to
			// determine the device handle for GPU ...") is a finding of its
			// own: skipping it passed a capture of a GPU off the bus.
			if len(v.findings) > 0 {
				return v.result("")
			}
			return Result{ID: "gpu.count", Status: Skip, Devices: []Device{},
				Summary: fmt.Sprintf("how many GPUs the node has is not in the capture: a fragment of %d GPU block(s) without the Attached GPUs line", seen)}
		}
		if c.AttachedGPUs > seen {
			unseen = c.AttachedGPUs - seen
			seen = c.AttachedGPUs
		}
	}
	// The expectation: expect_gpus, else the platform's count where the
	// platform is certain of it (a DGX by its DMI name, or the config). A
	// run scoped to some GPUs (a job's Prolog) judges no count.
	expect, basis := cfg.ExpectGPUs, ""
	if expect == 0 && n.Scope == "" {
		if p := cfg.PlatformFor(n); p.GPUs > 0 {
			expect, basis = p.GPUs, "platform "+p.Name+": "+p.Basis
		}
	}
	// In a job's device cgroup (ConstrainDevices: NVML enumerates only the
	// GPUs the cgroup lets through, renumbered from 0, as nvidia-smi -L in
	// a step shows) or a container, fewer GPUs than the node's are what
	// this process is meant to see: the node's count is not judged there
	// (the health check and the daemon judge it, outside any job).
	countHidden := ""
	if h := hiddenView(n); h != "" && expect > 0 && seen < expect && unseen == 0 {
		countHidden = h
	}
	if expect > 0 && seen != expect && countHidden == "" {
		msg := fmt.Sprintf("NVML sees %d GPUs, expected %d", seen, expect)
		if unseen > 0 {
			msg = fmt.Sprintf("the capture's Attached GPUs is %d, expected %d", seen, expect)
		}
		if basis != "" {
			msg += " (" + basis + ")"
		}
		if x := n.NVML.Excluded; len(x) > 0 && unseen == 0 {
			// Still a failure: the node has fewer GPUs than expected. The
			// exclusion is said so the remedy is the config's or the
			// driver option's, not a reseat.
			msg += fmt.Sprintf("; the driver excludes %d GPU(s) (NVreg_ExcludedGpus: %s): set expect_gpus, or lift the exclusion", len(x), strings.Join(x, ", "))
		}
		v.add(Fail, nil, "check that every GPU is seated and powered (lspci -d 10de:), and dmesg for GPUs the driver rejected", msg)
	}
	bus := pciGPUs(n, &v)
	pass := fmt.Sprintf("%d GPUs reachable", seen-denied)
	if unseen > 0 {
		pass = fmt.Sprintf("%d GPUs attached (the capture's Attached GPUs); %d shown and judged, %d not in the capture (not judged)", seen, seen-unseen, unseen)
	}
	if denied > 0 {
		// NVML enumerates every GPU but refuses a handle (NO_PERMISSION) for
		// those whose device file this process may not open: inside a job
		// with ConstrainDevices, the other jobs' GPUs. They are counted as
		// present, not judged.
		pass += fmt.Sprintf(", %d more closed to this process (NVML: no permission; a device cgroup)", denied)
	}
	switch {
	case countHidden != "":
		pass += fmt.Sprintf(" (the node's %d not judged: %s may hide the other GPUs from NVML)", expect, countHidden)
	case basis != "":
		pass += fmt.Sprintf(" (expected %d, platform %s)", expect, cfg.PlatformFor(n).Name)
	case expect > 0:
		pass += fmt.Sprintf(" (expected %d)", expect)
	}
	return v.result(pass + bus)
}

// usable returns the GPUs a per-GPU check can judge; lost or unreachable ones
// are gpu.count's business.
func usable(n *state.Node) []*state.GPU {
	var out []*state.GPU
	for i := range n.NVML.GPUs {
		g := &n.NVML.GPUs[i]
		if !g.Lost && !g.Unreachable && !g.Denied {
			out = append(out, g)
		}
	}
	return out
}

// missing explains why a value is absent: the call's error (an error
// finding) or "not supported" (a skip); in a state read from an
// nvidia-smi capture, what the capture printed instead (a skip).
func missing(n *state.Node, v *verdict, g *state.GPU, call, what string) {
	st, msg := notRead(n, g, call, what, Error)
	v.add(st, g, "", msg)
}

// notReadFinding adds "not read" for a value that one rule of the check
// needs beside the value it judges: a failed call warns (the rule was not
// judged; the rest of the GPU was), anything else is said as a skip.
func notReadFinding(n *state.Node, v *verdict, g *state.GPU, call, what string) {
	st, msg := notRead(n, g, call, what, Warn)
	fix := ""
	if st == Warn {
		fix = notReadFix
	}
	v.add(st, g, fix, msg)
}

// notReadFix is the remedy of a "could not read" warning.
const notReadFix = "the driver failed to answer: check nvidia-smi -q and dmesg for NVRM errors; reset the GPU if the call keeps failing"

// notRead is "not read" as a status of its own (issue 26): why a value the
// check needed is absent, never a pass and never "no errors". In order:
// what a capture printed instead (skip); the call's own error (failed: an
// error where the value is what the check judges, a warning where it is
// one rule of several); a call on the GPU that timed out, after which NVML
// refuses the GPU's later calls without an error of their own (failed);
// NOT_SUPPORTED under MIG (skip: unknown, not absent); NOT_SUPPORTED (skip:
// the GPU or driver does not have it, as a GeForce has no ECC); and a value
// absent with no reason recorded (skip, said so: it is not "not supported").
func notRead(n *state.Node, g *state.GPU, call, what string, failed Status) (Status, string) {
	if u := n.CaptureUnknownFor(g.Index, call); u != nil {
		if u.Printed == "" {
			return Skip, what + " unknown: not in the capture"
		}
		return Skip, fmt.Sprintf("%s unknown: the capture prints %q (line %d)", what, u.Printed, u.Line)
	}
	calls := append([]string{call}, sameCall[call]...)
	for _, c := range calls {
		if e := g.ErrorFor(c); e != nil {
			return failed, fmt.Sprintf("could not read %s: %s: %s", what, c, e.Error)
		}
	}
	unsupported := false
	for _, c := range calls {
		unsupported = unsupported || slices.Contains(g.Unsupported, c)
	}
	// MIG first: with MIG instances the GPU-level memory counters (ECC,
	// remapped rows) answer NOT_SUPPORTED: unknown here, not absent from
	// the GPU. A call answered NOT_SUPPORTED before a later one hung was
	// answered; one never made after the hang was not.
	const underMIG = " unknown: not readable while MIG is enabled (NVML answers not supported); disable MIG or read it per instance"
	switch h := hungCall(g); {
	case unsupported && g.MIG != nil && g.MIG.Current:
		return Skip, what + underMIG
	case unsupported:
		return Skip, what + " not supported"
	case h != nil:
		return failed, fmt.Sprintf("could not read %s: NVML refused the GPU's later calls after %s timed out (%s)", what, h.Call, h.Error)
	case g.MIG != nil && g.MIG.Current:
		return Skip, what + underMIG
	case n.Capture != nil:
		return Skip, what + " unknown: not in the capture"
	}
	return Skip, what + " not read: no value and no reason recorded (neither an error nor NOT_SUPPORTED)"
}

// sameCall lists the other entry points the collector may have asked for
// the same value (older drivers lack the newer names, the _v2 forms fall
// back to v1, the PCIe link state is four calls, page retirement three): an
// error under any of them is the value's error, never a "not supported"
// skip.
var sameCall = map[string][]string{
	"nvmlDeviceGetCurrentClocksEventReasons": {"nvmlDeviceGetCurrentClocksThrottleReasons"},
	"nvmlDeviceGetMemoryInfo":                {"nvmlDeviceGetMemoryInfo_v2"},
	"nvmlDeviceGetCurrPcieLinkWidth":         {"nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth"},
	"nvmlDeviceGetRetiredPages":              {"nvmlDeviceGetRetiredPagesPendingStatus"},
	"nvmlDeviceGetTemperatureThreshold":      {"nvmlDeviceGetMarginTemperature"},
	"NVML_FI_DEV_MEMORY_TEMP":                {"nvmlDeviceGetFieldValues"},
	"nvmlDeviceGetGpuFabricInfo":             {"nvmlDeviceGetGpuFabricInfo_v4", "nvmlDeviceGetGpuFabricInfoV"},
}

func checkECC(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "gpu.ecc"}
	t := cfg.ECC
	judged := 0
	var lifetime []string // passed GPUs with uncorrectable errors before the last reset
	for _, g := range usable(n) {
		if g.ECC == nil {
			missing(n, &v, g, "nvmlDeviceGetEccMode", "ECC")
			continue
		}
		e := g.ECC
		// A lifetime flag, judged whatever the ECC mode and counters say.
		sramThreshold(&v, g)
		if !e.EnabledCurrent {
			v.add(Warn, g, "enable ECC (nvidia-smi -e 1) and reset the GPU", "ECC is disabled")
			continue
		}
		if e.EnabledPending != e.EnabledCurrent {
			v.add(Warn, g, "reset the GPU or reboot to apply the pending ECC mode", "ECC mode change pending a reset")
		}
		if e.Volatile.Uncorrected == nil {
			missing(n, &v, g, "nvmlDeviceGetTotalEccErrors", "ECC counters")
			continue
		}
		if vu := *e.Volatile.Uncorrected; t.VolatileUncorrectedFail > 0 && vu >= t.VolatileUncorrectedFail {
			v.add(Fail, g, "drain the node, reset the GPU (nvidia-smi -r); if errors return, replace the GPU",
				fmt.Sprintf("%d uncorrectable ECC errors since the last reset", vu))
		}
		if e.Aggregate.Uncorrected != nil && t.AggregateUncorrectedWarn > 0 && *e.Aggregate.Uncorrected >= t.AggregateUncorrectedWarn &&
			(t.VolatileUncorrectedFail == 0 || *e.Volatile.Uncorrected < t.VolatileUncorrectedFail) {
			v.add(Warn, g, "watch the GPU: check remapped rows and Xid 48/63/64 in dmesg",
				fmt.Sprintf("%d uncorrectable ECC errors in the GPU's lifetime", *e.Aggregate.Uncorrected))
		}
		if e.Volatile.Corrected != nil && t.VolatileCorrectedWarn > 0 && *e.Volatile.Corrected >= t.VolatileCorrectedWarn {
			v.add(Warn, g, "watch the GPU for row remaps; schedule a reset",
				fmt.Sprintf("%d corrected ECC errors since the last reset", *e.Volatile.Corrected))
		}
		// A counter a rule needs and could not read is named (issue 26):
		// a failed call warns, NOT_SUPPORTED is said beside the pass.
		if e.Volatile.Corrected == nil && t.VolatileCorrectedWarn > 0 {
			notReadFinding(n, &v, g, "nvmlDeviceGetTotalEccErrors", "the volatile corrected ECC counter")
		}
		if e.Aggregate.Uncorrected == nil && t.AggregateUncorrectedWarn > 0 {
			notReadFinding(n, &v, g, "nvmlDeviceGetTotalEccErrors", "the aggregate uncorrected ECC counter")
		}
		if e.Aggregate.Uncorrected != nil && *e.Aggregate.Uncorrected > 0 && (t.AggregateUncorrectedWarn == 0 || *e.Aggregate.Uncorrected < t.AggregateUncorrectedWarn) &&
			(t.VolatileUncorrectedFail == 0 || *e.Volatile.Uncorrected < t.VolatileUncorrectedFail) {
			lifetime = append(lifetime, fmt.Sprintf("GPU %d: %d", g.Index, *e.Aggregate.Uncorrected))
		}
		judged++
		v.add(Pass, g, "", "")
	}
	// The flag not read is said after the counters, so a skip of its own
	// never stands in for theirs.
	for _, g := range usable(n) {
		if g.ECC != nil && g.SRAMECC == nil {
			sramNotRead(n, &v, g)
		}
	}
	if len(lifetime) > 0 {
		// The pass is about the volatile count (since the last reset). A
		// lifetime count above 0 is said, not hidden behind "no
		// uncorrectable ECC errors": a real GH200 with one aggregate DRAM
		// uncorrectable error, its row remapped (Remapped Rows
		// Uncorrectable Error 1, Pending No), read as if it had never had
		// one (nvsmi/testdata/gls_gh200_550.127.05_nvidia-smi-q.txt).
		return v.result(fmt.Sprintf("no uncorrectable ECC errors since the last reset on %d GPUs; uncorrectable errors in the GPU's lifetime (aggregate, before the last reset; not judged: ecc.aggregate_uncorrected_warn is %d): %s",
			judged, t.AggregateUncorrectedWarn, strings.Join(lifetime, ", ")))
	}
	return v.result(fmt.Sprintf("no uncorrectable ECC errors on %d GPUs", judged))
}

// sramThreshold judges nvmlDeviceGetSramEccErrorStatus's bThresholdExceeded,
// "if the error threshold of field diag is exceeded" (nvml.h,
// nvmlEccSramErrorStatus_v1_t). NVIDIA's Xid catalogue, Xid 48
// (third_party/nvidia-xid-catalog/xids.txt): "If the ECC error is reported
// for SRAM ... check for SRAM DBE thresholds and follow RMA flow if
// exceeded - (nvidia-smi <sram_threshold_exceeded> ...). If flag is set,
// run field diag"; its WORKFLOW_XID_48 (xid144-150-decode.txt): "All other
// SRAM: check SRAM Error Threshold flag ... If set RUN_FIELDDIAG". The flag
// is on-chip SRAM, not DRAM rows, so it is gpu.ecc's, not gpu.row_remap's.
// Not read is named: NO_PERMISSION (nvml.h: "Requires root/admin
// permissions") is said as a skip, so a check run as a user does not warn
// on every GPU; another failure warns.
func sramThreshold(v *verdict, g *state.GPU) {
	if s := g.SRAMECC; s != nil {
		if s.ThresholdExceeded {
			v.add(Fail, g, "drain the node and run NVIDIA's field diagnostics (Xid 48 workflow: SRAM error threshold exceeded, follow the RMA flow); contact the hardware vendor if they fail",
				fmt.Sprintf("SRAM error threshold of field diagnostics exceeded (%d uncorrectable SEC-DED, %d uncorrectable parity SRAM errors in the GPU's lifetime)", s.AggregateUncSecDed, s.AggregateUncParity))
		}
	}
}

// sramNotRead names the SRAM flag not read (sramThreshold).
func sramNotRead(n *state.Node, v *verdict, g *state.GPU) {
	const call = "nvmlDeviceGetSramEccErrorStatus"
	if e := g.ErrorFor(call); e != nil && e.Error == "no permission" {
		v.add(Skip, g, "", "the SRAM error-threshold flag not read: "+call+" needs root (no permission)")
		return
	}
	notReadFinding(n, v, g, call, "the SRAM error-threshold flag")
}

func checkRowRemap(n *state.Node, cfg *Config) Result {
	if r, skip := nvmlSkip(n); skip {
		return r
	}
	v := verdict{id: "gpu.row_remap"}
	judged := 0
	for _, g := range usable(n) {
		rr := g.RemappedRows
		if rr == nil {
			missing(n, &v, g, "nvmlDeviceGetRemappedRows", "row remapping")
			continue
		}
		judged++
		switch {
		case rr.Failure:
			// nvml.h: failureOccurred is set "if a row remapping ever
			// failed in the past" — not that the spare rows ran out, and
			// not by itself an RMA: NVIDIA's Xid 64 row (remapping
			// failure) is RESET_GPU then CONTACT_SUPPORT, and NVIDIA's RMA
			// process requires its HW field diagnostics.
			v.add(Fail, g, "drain and reset the GPU (nvidia-smi -r); run NVIDIA's HW field diagnostics (the RMA process requires them) and contact the hardware vendor if they fail or the failure recurs",
				fmt.Sprintf("row remap failure (%d uncorrectable, %d correctable rows remapped)", rr.Uncorrectable, rr.Correctable))
		case rr.Pending:
			v.add(Fail, g, "drain the node and reset the GPU (nvidia-smi -r) to apply the pending remap",
				"row remap pending")
		default:
			v.add(Pass, g, "", "")
		}
	}
	return v.result(fmt.Sprintf("no pending or failed row remaps on %d GPUs", judged))
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

// versionLess compares dotted numeric versions ("535.104.05" < "550.54.15").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}
