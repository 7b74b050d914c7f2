package check

import "fmt"

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

// XIDAction is the "Resolution Bucket (Immediate Action)" of NVIDIA's Xid
// catalogue (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html),
// the source of every row below.
type XIDAction string

// Actions, as NVIDIA names them.
const (
	ActionIgnore      XIDAction = "IGNORE"
	ActionRestartApp  XIDAction = "RESTART_APP"
	ActionResetGPU    XIDAction = "RESET_GPU"
	ActionRestartBM   XIDAction = "RESTART_BM"
	ActionContactSupp XIDAction = "CONTACT_SUPPORT"
)

// verdictFor is the one rule from NVIDIA's action to gpuprobe's verdict: an
// action on the GPU or the machine (reset, reboot, support) drains the node;
// restarting the application is the job's business and warns; IGNORE is
// no finding at all (gpu.row_remap and gpu.ecc judge those conditions from
// NVML's own counters).
func verdictFor(a XIDAction) XIDSeverity {
	switch a {
	case ActionResetGPU, ActionRestartBM, ActionContactSupp:
		return XIDCritical
	case ActionIgnore:
		return XIDIgnored
	}
	return XIDWarning
}

type xidRow struct {
	action  XIDAction
	meaning string
	remedy  string
}

// xidCatalogue holds the codes gpuprobe names, with NVIDIA's immediate
// action. Codes not listed are reported with their own text as warnings.
var xidCatalogue = map[int]xidRow{
	13:  {ActionRestartApp, "graphics engine exception (usually an application bug or illegal memory access)", "check the job that ran on the GPU"},
	31:  {ActionRestartApp, "GPU memory page fault (usually an application bug)", "check the job that ran on the GPU"},
	43:  {ActionRestartApp, "GPU stopped processing (the application was stopped)", "check the job that ran on the GPU"},
	45:  {ActionRestartApp, "preemptive cleanup after an earlier error or a killed application", "check the job that ran on the GPU"},
	46:  {ActionResetGPU, "GPU stopped processing", "drain and reset the GPU (nvidia-smi -r); contact support if it recurs"},
	48:  {ActionResetGPU, "double-bit (uncorrectable) ECC error", "drain and reset the GPU (nvidia-smi -r); RMA if it recurs"},
	61:  {ActionRestartApp, "internal micro-controller breakpoint/warning", "restart the application; watch for Xid 62"},
	62:  {ActionResetGPU, "internal micro-controller halt", "drain and reset the GPU or reboot; RMA if it recurs"},
	63:  {ActionIgnore, "ECC page retirement or row remap recorded", "nothing for the XID itself; gpu.row_remap says when a reset is due"},
	64:  {ActionResetGPU, "ECC page retirement or row remap recording failed", "drain and reset the GPU; replace it if it recurs"},
	69:  {ActionRestartApp, "graphics engine class error", "check the job that ran on the GPU"},
	74:  {ActionResetGPU, "NVLink error", "check nvlink.errors and the NVSwitch/fabric manager; reset the GPU; reseat or RMA if it recurs"},
	79:  {ActionRestartBM, "GPU has fallen off the bus", "drain and reboot the node; check PCIe power and seating; RMA if it recurs"},
	92:  {ActionIgnore, "high single-bit ECC error rate", "nothing for the XID itself; gpu.ecc and gpu.row_remap judge the counters"},
	94:  {ActionRestartApp, "contained ECC error (the affected application was stopped)", "restart the application; gpu.row_remap says when a reset is due"},
	95:  {ActionResetGPU, "uncontained ECC error (every application on the GPU is affected)", "drain and reset the GPU now; RMA if it recurs"},
	109: {ActionResetGPU, "context switch timeout", "drain and reset the GPU; update the driver if it recurs"},
	110: {ActionResetGPU, "reset-class fault (NVIDIA's catalogue: RESET_GPU)", "drain and reset the GPU"},
	119: {ActionResetGPU, "GSP RPC timeout", "drain and reset the GPU or reboot; update the driver if it recurs"},
	120: {ActionResetGPU, "GSP firmware error", "drain and reset the GPU or reboot; update the driver if it recurs"},
	136: {ActionResetGPU, "reset-class fault (NVIDIA's catalogue: RESET_GPU)", "drain and reset the GPU"},
	137: {ActionRestartApp, "NVLink FLA privilege error", "check the job that ran on the GPU"},
	140: {ActionResetGPU, "unrecovered ECC error", "drain and reset the GPU; RMA if it recurs"},
	143: {ActionResetGPU, "reset-class fault (NVIDIA's catalogue: RESET_GPU)", "drain and reset the GPU"},
	144: {ActionResetGPU, "NVLink 5 error", "drain and reset the GPU; check the NVLink fabric"},
	145: {ActionResetGPU, "NVLink 5 error", "drain and reset the GPU; check the NVLink fabric"},
	146: {ActionResetGPU, "NVLink 5 error", "drain and reset the GPU; check the NVLink fabric"},
	147: {ActionResetGPU, "NVLink 5 error", "drain and reset the GPU; check the NVLink fabric"},
	148: {ActionResetGPU, "NVLink 5 error", "drain and reset the GPU; check the NVLink fabric"},
	149: {ActionResetGPU, "NVLink 5 error", "drain and reset the GPU; check the NVLink fabric"},
	150: {ActionResetGPU, "NVLink 5 error", "drain and reset the GPU; check the NVLink fabric"},
	154: {ActionResetGPU, "GPU recovery action changed (reset or reboot required)", "drain and perform the recovery action the driver logged (GPU reset or node reboot)"},
	155: {ActionResetGPU, "reset-class fault (NVIDIA's catalogue: RESET_GPU)", "drain and reset the GPU"},
	156: {ActionResetGPU, "reset-class fault (NVIDIA's catalogue: RESET_GPU)", "drain and reset the GPU"},
	158: {ActionResetGPU, "reset-class fault (NVIDIA's catalogue: RESET_GPU)", "drain and reset the GPU"},
}

// DefaultCriticalXIDs is the critical set as a list, for config defaults and docs.
func DefaultCriticalXIDs() []int {
	var out []int
	for c, r := range xidCatalogue {
		if verdictFor(r.action) == XIDCritical {
			out = append(out, c)
		}
	}
	sortXIDs(out)
	return out
}

// XIDLookup classifies code: by NVIDIA's action (verdictFor), or, when the
// configuration gives a critical set, critical exactly for the codes in it
// (the rest keep NVIDIA's ignore or warn).
func XIDLookup(code int, criticalSet []int) XIDInfo {
	row, known := xidCatalogue[code]
	info := XIDInfo{Code: code, Action: row.action, Meaning: row.meaning, Remedy: row.remedy, Severity: XIDWarning}
	if known {
		info.Severity = verdictFor(row.action)
	} else {
		info.Meaning = "not in gpuprobe's table; see NVIDIA's Xid catalogue"
		info.Remedy = fmt.Sprintf("look up Xid %d in NVIDIA's Xid catalogue (analyzing-xid-catalog); check the job that ran on the GPU", code)
	}
	if criticalSet != nil {
		isCritical := false
		for _, c := range criticalSet {
			isCritical = isCritical || c == code
		}
		switch {
		case isCritical:
			info.Severity = XIDCritical
		case info.Severity == XIDCritical:
			info.Severity = XIDWarning
		}
	}
	return info
}

func sortXIDs(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
