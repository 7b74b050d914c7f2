package check

import (
	"fmt"
	"slices"
)

// XIDSeverity of an XID for node health.
type XIDSeverity string

// Severities: critical XIDs fail gpu.xid and drain a node; the rest warn.
const (
	XIDCritical XIDSeverity = "critical"
	// XIDIgnored codes are NVIDIA's IGNORE: no finding of their own.
	XIDIgnored XIDSeverity = "ignored"
	XIDWarning XIDSeverity = "warning"
)

// XIDInfo is what an XID means and what to do about it.
type XIDInfo struct {
	Code     int         `json:"code"`
	Severity XIDSeverity `json:"severity"`
	Action   XIDAction   `json:"nvidia_action,omitempty"`
	Meaning  string      `json:"meaning"`
	Remedy   string      `json:"remedy"`
}

//go:generate go run ../tools/xidgen

// XIDAction is NVIDIA's resolution for an XID: the "Resolution Bucket
// (Immediate Action)" of NVIDIA's Xid Catalog
// (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), generated
// into xidnvidia.go by tools/xidgen from the pinned page text in
// third_party/nvidia-xid-catalog/xids.txt, under the catalogue's names.
type XIDAction string

// Actions, as NVIDIA names them.
const (
	ActionIgnore     XIDAction = "IGNORE"
	ActionRestartApp XIDAction = "RESTART_APP"
	ActionResetGPU   XIDAction = "RESET_GPU"
	ActionRestartBM  XIDAction = "RESTART_BM"
	ActionRestartVM  XIDAction = "RESTART_VM"
	// ActionReportIssue is the catalogue's CONTACT_SUPPORT (NVSentinel's
	// copy calls it UNEXPECTED_ERR_REPORT_ISSUE).
	ActionReportIssue      XIDAction = "CONTACT_SUPPORT"
	ActionCheckMechanicals XIDAction = "CHECK_MECHANICALS"
	ActionUpdateSWFW       XIDAction = "UPDATE_SWFW"
	ActionCheckUVM         XIDAction = "CHECK_UVM"
	// The workflows are NVIDIA's multi-step procedures for these codes.
	ActionWorkflow45      XIDAction = "WORKFLOW_XID_45"
	ActionWorkflow48      XIDAction = "WORKFLOW_XID_48"
	ActionNVLinkWorkflow  XIDAction = "WORKFLOW_NVLINK_ERR"
	ActionNVLink5Workflow XIDAction = "WORKFLOW_NVLINK5_ERR"
	// ActionFollowLinked is Xid 154's: "follow guidance as it applies to
	// another Xid"; the line itself names the recovery action the driver
	// now requires (checkXID reads it).
	ActionFollowLinked XIDAction = "XID_154"
)

// verdictFor is the one rule from NVIDIA's action to gpuprobe's verdict: an
// action on the GPU, the fabric or the machine (reset, reboot, a workflow,
// support, mechanicals, software update) drains the node; what concerns the
// application (restart it, Xid 45's cleanup after it was killed, its unified
// memory use) is the job's business and warns; IGNORE is no finding at all
// (gpu.row_remap and gpu.ecc judge those conditions from NVML's counters).
// Xid 154 is critical unless its line says the recovery is done.
func verdictFor(a XIDAction) XIDSeverity {
	switch a {
	case ActionIgnore:
		return XIDIgnored
	case ActionRestartApp, ActionWorkflow45, ActionCheckUVM:
		return XIDWarning
	}
	return XIDCritical
}

// resetClass: actions a driver load answers, because it resets every GPU
// (clearedByDriverLoad). A reboot, a support case, mechanicals or a
// software update are not answered by it.
func resetClass(a XIDAction) bool {
	switch a {
	case ActionResetGPU, ActionRestartApp, ActionWorkflow45, ActionCheckUVM,
		ActionWorkflow48, ActionNVLinkWorkflow, ActionNVLink5Workflow:
		return true
	}
	return false
}

// nvidiaXID is one row of NVIDIA's catalogue (xidnvidia.go, generated).
type nvidiaXID struct {
	mnemonic    string
	description string
	action      XIDAction // Resolution Bucket (Immediate Action); "" where the page gives none
	investigate string    // Resolution Bucket (Investigatory Action)
}

// xidGap is gpuprobe's verdict for a catalogue row that has no Resolution
// Bucket on NVIDIA's page (162-172 in the pinned copy): taken from the
// row's own words on the page, each with the reason (docs/checks.md lists
// them). NVIDIA gives no action for these rows, so XIDInfo.Action stays
// empty.
type xidGap struct {
	severity XIDSeverity
	remedy   string
	basis    string
}

var xidGaps = map[int]xidGap{
	162: {XIDIgnored, "nothing to do: power smoothing is working again",
		"PSHC_REENGAGED: the power smoothing circuitry came back; the page lists no action"},
	163: {XIDWarning, "no GPU reset required; to keep power smoothing, resolve the thermal events; if it was disabled by a timeout, reload the driver or reset the GPU when convenient",
		"PSHC_DISENGAGED: NVIDIA's row says \"No GPU reset required\""},
	164: {XIDWarning, "monitor power swings; expect to replace the GPU if power smoothing is needed (it will be disabled soon)",
		"PSHC_LOW_LIFETIME: NVIDIA's row asks to monitor and plan a replacement, not to stop the GPU"},
	165: {XIDWarning, "power smoothing is disabled: replace the GPU if power swings are not acceptable; check the data centre can absorb them",
		"PSHC_ZERO_LIFETIME: NVIDIA's row: power swings will occur; the GPU keeps working"},
	166: {XIDWarning, "confidential-computing mode: check the NVLink encryption setup",
		"NVLINK_SECURE_CRYPTO_ERR: \"Applicable to CC (confidential computing) mode only\""},
	167: {XIDCritical, "drain and reset the GPU (nvidia-smi -r) or reboot; check the PCIe link (AER lines in the kernel log); contact support if it recurs",
		"PCIE_FATAL_TIMEOUT: no bucket on the page; a fatal timeout, judged as Xid 158 GPU_FATAL_TIMEOUT (RESET_GPU)"},
	168: {XIDWarning, "GPU memory capacity is reduced: enable ECC (for row remapping) or reboot so the write-protected region moves",
		"REDUCED_GPU_MEMORY_CAPACITY: NVIDIA's row: enable ECC or re-attempt the boot; seen only with ECC disabled"},
	169: {XIDCritical, "drain and reset the GPU (nvidia-smi -r) or reboot; contact support if it recurs",
		"SEC2_HALT_ERROR: no bucket on the page; \"Internal micro-controller halt\", judged as Xid 62 PMU_HALT_ERROR (RESET_GPU)"},
	170: {XIDWarning, "confidential-computing mode: check the NVLink encryption setup",
		"NVLINK_SECURE_OTHER: \"Applicable to CC (confidential computing) mode only\""},
	171: {XIDCritical, "follow Xid 48 (double-bit ECC, DRAM): drain and reset the GPU; gpu.row_remap says whether the row was remapped; RMA if it recurs",
		"UNCORRECTABLE_DRAM_ERROR: \"Additional to Xid 48\": judged as Xid 48 (WORKFLOW_XID_48)"},
	172: {XIDCritical, "follow Xid 48 (double-bit ECC, SRAM): drain and reset the GPU; check the SRAM threshold-exceeded flag and run field diagnostics if set (NVIDIA's Xid 48 workflow)",
		"UNCORRECTABLE_SRAM_ERROR: \"Additional to Xid 48\": judged as Xid 48 (WORKFLOW_XID_48)"},
}

// xidWords are gpuprobe's words for the codes operators meet most: what
// the code means and what to do. The action is always NVIDIA's, and the fix
// must not contradict the catalogue's trigger text: Xid 32's action is
// RESTART_APP, but NVIDIA says of it "a fault is reported by the DMA
// controller which manages the communication stream between the NVIDIA
// driver and the GPU over the PCI-E bus. These failures primarily involve
// quality issues on PCI, and are generally not caused by user application
// actions" (third_party/nvidia-xid-catalog/xids.txt, row 32); its fix said
// "check the job that ran on the GPU and restart it" (kernel log corpus:
// bumblebee677, dxvk1027).
var xidWords = map[int]struct{ meaning, remedy string }{
	8:   {"GPU stopped processing (the channel idled out)", "check the job that ran on the GPU"},
	13:  {"graphics engine exception (usually an application bug or illegal memory access)", "check the job that ran on the GPU"},
	31:  {"GPU memory page fault (usually an application bug)", "check the job that ran on the GPU"},
	32:  {"DMA controller (PBDMA) fault on the driver's command stream over PCIe", "restart the application (NVIDIA: RESTART_APP); NVIDIA: these faults primarily involve PCIe quality and are generally not caused by the application: check the GPU's PCIe link (gpu.pcie_link, AER lines in the kernel log); contact support if it recurs"},
	43:  {"GPU stopped processing (the application was stopped)", "nothing to do for the XID itself"},
	45:  {"preemptive cleanup after an earlier error or a killed application", "if it is the only Xid on the GPU, restart Fabric Manager (NVIDIA: Solo: RESTART_FM); with other Xids, follow those (Not Solo: IGNORE); an aborted job (Ctrl-C, kill, a GPU reset) also logs it"},
	46:  {"GPU stopped processing", "drain and reset the GPU (nvidia-smi -r); contact support if it recurs"},
	48:  {"double-bit (uncorrectable) ECC error", "drain and reset the GPU (nvidia-smi -r); gpu.row_remap says whether the row was remapped; RMA if it recurs"},
	54:  {"clocks reduced for power (silent running)", "drain; check the board's power delivery and cooling"},
	61:  {"internal micro-controller breakpoint", "drain; collect nvidia-bug-report.sh and contact NVIDIA support; watch for Xid 62"},
	62:  {"internal micro-controller halt", "drain and reset the GPU or reboot; RMA if it recurs"},
	63:  {"ECC page retirement or row remap recorded", "nothing for the XID itself; gpu.row_remap says when a reset is due"},
	64:  {"ECC page retirement or row remap recording failed", "drain and reset the GPU; replace it if it recurs"},
	69:  {"graphics engine class error", "check the job that ran on the GPU"},
	74:  {"NVLink error", "check nvlink.errors and the NVSwitch/fabric manager; reset the GPU; reseat or RMA if it recurs"},
	79:  {"GPU has fallen off the bus", "drain and reboot the node; check PCIe power and seating; RMA if it recurs"},
	92:  {"high single-bit ECC error rate", "nothing for the XID itself; gpu.ecc and gpu.row_remap judge the counters"},
	94:  {"contained ECC error (the affected application was stopped)", "restart the application; gpu.row_remap says when a reset is due"},
	95:  {"uncontained ECC error (every application on the GPU is affected)", "drain and reset the GPU now; RMA if it recurs"},
	109: {"context switch timeout", "drain and reset the GPU; update the driver if it recurs"},
	110: {"security fault (SEC_FAULT_ERROR)", "drain; revert any recent hardware changes and cold-reset the system (NVIDIA); contact the hardware vendor if it persists"},
	119: {"GSP RPC timeout", "drain and reset the GPU or reboot; update the driver if it recurs"},
	120: {"GSP firmware error", "drain and reset the GPU or reboot; update the driver if it recurs"},
	136: {"NVLink link training failed (ALI_TRAINING_FAIL)", "drain and reset the GPU; check the NVLink fabric if it recurs"},
	137: {"NVLink FLA privilege error", "nothing to do for the XID itself"},
	140: {"unrecovered ECC error", "drain and reset the GPU; RMA if it recurs"},
	143: {"GPU initialisation error (GPU_INIT_ERROR)", "drain and reset the GPU"},
	154: {"GPU recovery action changed", "drain and perform the recovery action the driver logged (GPU reset or node reboot)"},
	155: {"NVLink software-defined error (NVLINK_SW_DEFINED_ERROR)", "drain and reset the GPU"},
	156: {"resource retirement event (RESOURCE_RETIREMENT_EVENT)", "drain and reset the GPU"},
	158: {"GPU fatal timeout (GPU_FATAL_TIMEOUT)", "drain and reset the GPU"},
}

// actionRemedy is the fix for a code gpuprobe has no words of its own for.
var actionRemedy = map[XIDAction]string{
	ActionIgnore:           "nothing to do for the XID itself",
	ActionRestartApp:       "check the job that ran on the GPU and restart it",
	ActionWorkflow45:       "if it is the only Xid on the GPU, restart Fabric Manager (NVIDIA: Solo: RESTART_FM); with other Xids, follow those (Not Solo: IGNORE)",
	ActionCheckUVM:         "check the job's unified memory use and the nvidia-uvm module",
	ActionResetGPU:         "drain and reset the GPU (nvidia-smi -r)",
	ActionWorkflow48:       "drain and reset the GPU (nvidia-smi -r); RMA if it recurs",
	ActionNVLinkWorkflow:   "drain; check nvlink.errors and the fabric manager; reset the GPU; reseat or RMA if it recurs",
	ActionNVLink5Workflow:  "drain; check the NVLink fabric (nvlink.errors, fabric.state); reset the GPU; reseat or RMA if it recurs",
	ActionRestartBM:        "drain and reboot the node",
	ActionRestartVM:        "drain and restart the VM",
	ActionReportIssue:      "drain; collect nvidia-bug-report.sh and contact NVIDIA support",
	ActionCheckMechanicals: "drain; check the board's power delivery and cooling",
	ActionUpdateSWFW:       "drain; update the driver and the GPU firmware",
	ActionFollowLinked:     "drain and perform the recovery action the driver logged",
}

// DefaultCriticalXIDs is the critical set as a list, for config defaults and docs.
func DefaultCriticalXIDs() []int {
	var out []int
	for c := range nvidiaXIDs {
		if XIDLookup(c, nil).Severity == XIDCritical {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// XIDSeverityFor is what gpu.xid makes of an XID code under the xid
// configuration: ignored when xid.ignore lists it or NVIDIA's table says
// IGNORE, else as XIDLookup classifies it with xid.critical. The exporter's
// severity label asks here, so a metric and the report never disagree. (A
// line that says the GPU fell off the bus is a failure whatever its code;
// gpu.xid reads that from the line, not from the code.)
func XIDSeverityFor(code int, cfg XIDConfig) XIDSeverity {
	if slices.Contains(cfg.Ignore, code) {
		return XIDIgnored
	}
	return XIDLookup(code, cfg.Critical).Severity
}

// XIDLookup classifies code: by NVIDIA's action (verdictFor), or, when the
// configuration gives a critical set, critical exactly for the codes in it
// (the rest keep NVIDIA's ignore or warn).
func XIDLookup(code int, criticalSet []int) XIDInfo {
	row, known := nvidiaXIDs[code]
	info := XIDInfo{Code: code, Action: row.action, Severity: XIDWarning}
	gap, isGap := xidGaps[code]
	switch {
	case known && row.action == "" && isGap:
		info.Severity, info.Meaning, info.Remedy = gap.severity, row.mnemonic+": "+row.description, gap.remedy
	case known && row.action == "":
		// A row without a bucket that gpuprobe has no rule for: warn.
		info.Meaning = row.mnemonic + ": " + row.description
		info.Remedy = fmt.Sprintf("NVIDIA's Xid catalogue lists no action for Xid %d; check the job that ran on the GPU", code)
	case known:
		info.Severity = verdictFor(row.action)
		info.Meaning, info.Remedy = row.mnemonic, actionRemedy[row.action]
		if w, ok := xidWords[code]; ok {
			info.Meaning, info.Remedy = w.meaning, w.remedy
		}
	default:
		// A code newer than NVIDIA's table here: reported with its own
		// text (the kernel line), judged a warning, never silently passed.
		info.Meaning = "not in NVIDIA's table as gpuprobe has it"
		info.Remedy = fmt.Sprintf("look up Xid %d in NVIDIA's Xid catalogue (analyzing-xid-catalog); check the job that ran on the GPU", code)
	}
	if criticalSet != nil {
		isCritical := slices.Contains(criticalSet, code)
		switch {
		case isCritical:
			info.Severity = XIDCritical
		case info.Severity == XIDCritical:
			info.Severity = XIDWarning
		}
	}
	return info
}
