package check

import "fmt"

// XIDSeverity of an XID for node health.
type XIDSeverity string

// Severities: critical XIDs fail gpu.xid and drain a node; the rest warn.
const (
	XIDCritical XIDSeverity = "critical"
	XIDWarning  XIDSeverity = "warning"
)

// XIDInfo is what an XID means and what to do about it.
type XIDInfo struct {
	Code     int         `json:"code"`
	Severity XIDSeverity `json:"severity"`
	Meaning  string      `json:"meaning"`
	Remedy   string      `json:"remedy"`
}

// critical is the default critical set, from NVIDIA's XID catalogue
// (docs.nvidia.com/deploy/xid-errors): the codes whose documented action is a
// GPU reset, a node reboot or an RMA. Application faults (13, 31, 43, 45, ...)
// are not here: the job is at fault, not the node.
var xidCritical = map[int]XIDInfo{
	48:  {Meaning: "double-bit (uncorrectable) ECC error", Remedy: "drain, reset the GPU (nvidia-smi -r); RMA if it recurs"},
	62:  {Meaning: "internal micro-controller halt", Remedy: "drain and reset the GPU or reboot; RMA if it recurs"},
	63:  {Meaning: "ECC page retirement or row remap recorded", Remedy: "drain and reset the GPU to apply the remap (see gpu.row_remap)"},
	64:  {Meaning: "ECC page retirement or row remap recording failed", Remedy: "drain, reset the GPU; replace it if it recurs"},
	74:  {Meaning: "NVLink error", Remedy: "check nvlink.errors and the NVSwitch/fabric manager; reset the GPU; reseat or RMA if it recurs"},
	79:  {Meaning: "GPU has fallen off the bus", Remedy: "drain and reboot the node; check PCIe power and seating; RMA if it recurs"},
	92:  {Meaning: "high single-bit ECC error rate", Remedy: "drain and reset the GPU at the next opportunity; watch for row remaps"},
	94:  {Meaning: "contained ECC error (the affected application was stopped)", Remedy: "reset the GPU when it is idle; RMA if it recurs"},
	95:  {Meaning: "uncontained ECC error (every application on the GPU is affected)", Remedy: "drain and reset the GPU now; RMA if it recurs"},
	109: {Meaning: "context switch timeout", Remedy: "drain and reset the GPU; update the driver if it recurs"},
	119: {Meaning: "GSP RPC timeout", Remedy: "drain and reset the GPU or reboot; update the driver if it recurs"},
	120: {Meaning: "GSP firmware error", Remedy: "drain and reset the GPU or reboot; update the driver if it recurs"},
	140: {Meaning: "unrecovered ECC error", Remedy: "drain and reset the GPU; RMA if it recurs"},
	154: {Meaning: "GPU recovery action changed (reset or reboot required)", Remedy: "drain and perform the recovery action the driver logged (GPU reset or node reboot)"},
}

// warnings are XIDs worth naming that are usually the application's doing.
var xidWarnings = map[int]string{
	13:  "graphics engine exception (usually an application bug or illegal memory access)",
	31:  "GPU memory page fault (usually an application bug)",
	43:  "GPU stopped processing (the application was killed)",
	45:  "preemptive cleanup after an earlier error or a killed application",
	61:  "internal micro-controller breakpoint/warning",
	69:  "graphics engine class error",
	137: "NVLink FLA privilege error",
}

// DefaultCriticalXIDs is the critical set as a list, for config defaults and docs.
func DefaultCriticalXIDs() []int {
	out := make([]int, 0, len(xidCritical))
	for c := range xidCritical {
		out = append(out, c)
	}
	sortXIDs(out)
	return out
}

// XIDLookup classifies code against a critical set (nil = the default set).
func XIDLookup(code int, criticalSet []int) XIDInfo {
	isCritical := false
	if criticalSet == nil {
		_, isCritical = xidCritical[code]
	} else {
		for _, c := range criticalSet {
			isCritical = isCritical || c == code
		}
	}
	info, known := xidCritical[code]
	if !known {
		info.Meaning = xidWarnings[code]
		if info.Meaning == "" {
			info.Meaning = "see NVIDIA's XID catalogue"
		}
		info.Remedy = fmt.Sprintf("look up Xid %d in NVIDIA's XID catalogue; check the job that ran on the GPU", code)
	}
	info.Code = code
	info.Severity = XIDWarning
	if isCritical {
		info.Severity = XIDCritical
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
