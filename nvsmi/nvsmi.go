// Package nvsmi reads a saved `nvidia-smi -q` (text) or `nvidia-smi -q -x`
// (XML) into the node state, so a capture from any node, a bug report or a
// vendor's documentation is judged by the same checks as a live collection.
//
// It fills the state types the NVML collector fills, with the same meaning:
// nvidia-smi prints what NVML returns. A value nvidia-smi could not read
// ("N/A", "Not Supported", "[Unknown Error]", "Requested functionality has
// been deprecated", anything in square brackets) stays unknown: the field is
// nil and the NVML entry point behind it is listed in GPU.Unsupported, so the
// checks skip it; it never becomes zero. What the format does not hold at
// all (the kernel log, sysfs topology, Slurm, NVLinks) is named in
// state.Capture.NotCollected and left nil.
package nvsmi

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/state"
)

// Formats, as state.Capture.Format records them.
const (
	FormatText = "nvidia-smi -q"
	FormatXML  = "nvidia-smi -q -x"
)

// NotCollected is what neither format holds: the checks that need it skip.
// "process_jobs" is which Slurm job each GPU process belongs to (its
// cgroup): the capture lists processes, not their cgroups.
var NotCollected = []string{"kernel", "topology", "slurm", "nccl", "nvlinks", "numa_affinity", "violations", "process_jobs"}

// Parse reads data, the output of nvidia-smi -q or -q -x (told apart by the
// first character that is not blank or part of a '#' header line), into a
// node state. file names the input in errors and in state.Capture; now is
// the collection time when the capture has no readable time stamp. Every
// error is a *ParseError naming the file and, where it helps, the line.
func Parse(file string, data []byte, now time.Time) (*state.Node, error) {
	var (
		root   *item
		err    error
		format string
	)
	switch first(data) {
	case 0:
		return nil, &ParseError{File: file, Msg: "empty: no nvidia-smi -q output"}
	case '<':
		format = FormatXML
		root, err = parseXML(file, blankHeader(data))
		if err == nil {
			if log := root.child("nvidia_smi_log"); log != nil || root.child("gpu") == nil {
				root = log
			} // else a fragment: <gpu> elements without the log around them
			if root == nil {
				return nil, &ParseError{File: file, Line: 1, Msg: "XML without <nvidia_smi_log>: not nvidia-smi -q -x output"}
			}
		}
	default:
		format = FormatText
		root, err = parseText(file, data)
	}
	if err != nil {
		return nil, err
	}
	r := &reader{file: file, xml: format == FormatXML}
	return r.node(root, format, now, elided(data))
}

// first is the first byte that is not blank and not in a '#' line.
func first(data []byte) byte {
	for _, line := range bytes.Split(data, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		return t[0]
	}
	return 0
}

// blankHeader empties the '#' lines before the XML starts (a corpus
// file's "# source:" header), keeping the line count so errors still name
// the file's own lines.
func blankHeader(data []byte) []byte {
	out := bytes.Clone(data)
	for off := 0; off < len(out); {
		end := bytes.IndexByte(out[off:], '\n')
		if end < 0 {
			end = len(out) - off
		}
		line := out[off : off+end]
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' {
			break
		}
		for i := range line {
			line[i] = ' '
		}
		off += end + 1
	}
	return out
}

// elided reports a capture that says it left things out: a line "[...]"
// (or "..."), as excerpts in documentation and bug reports mark cuts.
func elided(data []byte) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		switch string(bytes.TrimSpace(line)) {
		case "[...]", "...", "[…]", "…":
			return true
		}
	}
	return false
}

type reader struct {
	file    string
	xml     bool
	err     error
	gpu     *state.GPU
	unknown []state.CaptureUnknown
}

// fail keeps the first error.
func (r *reader) fail(it *item, format string, a ...any) {
	if r.err == nil {
		line := 0
		if it != nil {
			line = it.line
		}
		r.err = &ParseError{File: r.file, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
}

// get finds a value by its text path or its XML path; either may list
// alternatives separated by "|" (older drivers' names), first match wins.
func (r *reader) get(base *item, text, xml string) *item {
	paths := text
	if r.xml {
		paths = xml
	}
	for _, p := range strings.Split(paths, "|") {
		if it := base.at(p); it != nil {
			return it
		}
	}
	return nil
}

// unknown: nvidia-smi could not read the value. It prints NVML's "not
// supported" as N/A or "Not Supported", its errors in square brackets
// ("[Unknown Error]", "[GPU requires reset]"), and a deprecated query as
// "Requested functionality has been deprecated".
func unknown(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" || strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		return true
	}
	switch strings.ToLower(v) {
	case "n/a", "not supported", "unknown error", "unknown", "not available",
		"requested functionality has been deprecated", "insufficient permissions":
		return true
	}
	// hw4: nvidia-smi prints a failed query's NVML error string in place of
	// the value, brackets or not ("Power Draw : Unknown Error", "Fan Speed
	// : System is not in ready state" beside "Reset Required : Yes" on a
	// faulted RTX 3090). A number field holding one was "not a number" and
	// the whole capture was refused. The strings are nvmlErrorString's:
	// NVIDIA's table in DCGM (sdk/nvidia/nvml/nvml_error_strings.h), and
	// NVML_ERROR_NOT_READY's "System is not in ready state" (nvml.h: "The
	// system is not ready for the request"; the string as gpud's
	// IsNotReadyError quotes it). The field stays unknown, never zero.
	if nvmlErrorStrings[strings.ToLower(v)] {
		return true
	}
	// Windows: "Used GPU Memory : Not available in WDDM driver model".
	return strings.HasPrefix(strings.ToLower(v), "not available in ")
}

// nvmlErrorStrings are NVML's error strings that may stand in a value,
// lower-cased (unknown).
var nvmlErrorStrings = map[string]bool{
	"uninitialized": true, "invalid argument": true, "not found": true, "insufficient size": true,
	"insufficient external power": true, "driver not loaded": true, "timeout": true,
	"interrupt request issue": true, "function not found": true, "corrupted inforom": true,
	"gpu is lost": true, "gpu requires reset": true, "gpu access blocked by the operating system": true,
	"driver/library version mismatch": true, "in use by another client": true, "insufficient memory": true,
	"insufficient resources": true, "system is not in ready state": true,
}

// number reads "81559 MiB", "29 C", "67.74 W", "16x", "0 %", "5": the
// number before the unit. ok is false when the value is unknown (or the
// item absent); a value that is neither is an error.
func (r *reader) number(it *item, units ...string) (v float64, ok bool) {
	if it == nil || unknown(it.val) {
		return 0, false
	}
	s := it.val
	for _, u := range units {
		if t, found := strings.CutSuffix(s, u); found {
			s = t
			break
		}
	}
	s = strings.TrimSpace(s)
	f, err := strconv.ParseFloat(s, 64)
	if !decimal.MatchString(s) || err != nil || f < 0 && !strings.HasSuffix(it.val, "C") || f > 1<<40 {
		r.fail(it, "%s: %q is not a number%s", it.key, it.val, unitHint(units))
		return 0, false
	}
	return f, true
}

// decimal is how nvidia-smi prints numbers: no exponent, no hex, no Inf.
var decimal = regexp.MustCompile(`^-?[0-9]{1,15}(\.[0-9]{1,6})?$`)

func unitHint(units []string) string {
	if len(units) == 0 {
		return ""
	}
	return " (in " + strings.TrimSpace(units[0]) + ")"
}

// count reads a non-negative integer counter.
func (r *reader) count(it *item) (uint64, bool) {
	if it == nil || unknown(it.val) {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(it.val), 10, 64)
	if err != nil {
		r.fail(it, "%s: %q is not a count", it.key, it.val)
		return 0, false
	}
	return v, true
}

// flag reads Enabled/Disabled, Yes/No, Active/Not Active.
func (r *reader) flag(it *item) (on, ok bool) {
	if it == nil || unknown(it.val) {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(it.val)) {
	case "enabled", "yes", "active", "true", "on":
		return true, true
	case "disabled", "no", "not active", "false", "off":
		return false, true
	}
	r.fail(it, "%s: %q is neither enabled/yes/active nor disabled/no/not active", it.key, it.val)
	return false, false
}

// str is a printed string, "" when unknown.
func str(it *item) string {
	if it == nil || unknown(it.val) {
		return ""
	}
	return it.val
}

// unsupported marks the value behind call unknown: listed in the GPU's
// Unsupported, as an NVML NOT_SUPPORTED answer is, and recorded with what
// the capture printed in its place (the first of items that is printed and
// unknown; nothing when none is printed).
func (r *reader) unsupported(call string, items ...*item) {
	if slices.Contains(r.gpu.Unsupported, call) {
		return
	}
	r.gpu.Unsupported = append(r.gpu.Unsupported, call)
	u := state.CaptureUnknown{GPU: r.gpu.Index, Call: call}
	for _, it := range items {
		if it != nil && unknown(it.val) && (it.val != "" || len(it.kids) == 0) {
			u.Printed, u.Line = it.val, it.line
			if u.Printed == "" {
				u.Printed = "(nothing)"
			}
			break
		}
	}
	r.unknown = append(r.unknown, u)
}

// unsupportedPrinted marks the value behind call unknown although what the
// capture printed there looks like a value ("0 C" on a vGPU guest): it is
// recorded as printed, with its line.
func (r *reader) unsupportedPrinted(call string, it *item) {
	if slices.Contains(r.gpu.Unsupported, call) {
		return
	}
	r.gpu.Unsupported = append(r.gpu.Unsupported, call)
	r.unknown = append(r.unknown, state.CaptureUnknown{GPU: r.gpu.Index, Call: call, Printed: it.val, Line: it.line})
}

func (r *reader) node(root *item, format string, now time.Time, partial bool) (*state.Node, error) {
	stamp := str(r.get(root, "Timestamp", "timestamp"))
	collected := now.UTC()
	if t, err := time.Parse("Mon Jan _2 15:04:05 2006", strings.Join(strings.Fields(stamp), " ")); err == nil {
		collected = t.UTC()
	} else if t, err := time.Parse("Mon Jan 2 15:04:05 2006", strings.Join(strings.Fields(stamp), " ")); err == nil {
		collected = t.UTC()
	}
	host := path.Base(r.file)
	if r.file == "-" || r.file == "" {
		host = "stdin"
	}
	host = strings.TrimSuffix(strings.TrimSuffix(host, ".txt"), ".xml")
	n := &state.Node{
		SchemaVersion: state.SchemaVersion,
		Host:          host,
		CollectedAt:   collected,
		Capture:       &state.Capture{Format: format, File: r.file, Timestamp: stamp, NotCollected: NotCollected},
	}
	nv := &state.NVML{Available: true, GPUs: []state.GPU{}}
	nv.DriverVersion = str(r.get(root, "Driver Version", "driver_version"))
	nv.CUDADriverVersion = str(r.get(root, "CUDA Version", "cuda_version"))
	var blocks []*item
	for _, c := range root.kids {
		if r.xml && c.key == "gpu" || !r.xml && strings.HasPrefix(c.key, "GPU ") && c.val == "" {
			blocks = append(blocks, c)
		} else if !r.xml && handleFailure().MatchString(c.key) {
			blocks = append(blocks, c)
		}
	}
	attached := r.get(root, "Attached GPUs", "attached_gpus")
	if attached == nil && len(blocks) == 0 {
		return nil, &ParseError{File: r.file, Msg: "no \"Attached GPUs\" line and no GPU block: not " + format + " output"}
	}
	if len(blocks) > state.MaxGPUs {
		return nil, &ParseError{File: r.file, Line: blocks[state.MaxGPUs].line, Msg: fmt.Sprintf("more than %d GPU blocks", state.MaxGPUs)}
	}
	if attached != nil {
		c, ok := r.count(attached)
		if r.err != nil {
			return nil, r.err
		}
		if !ok {
			return nil, &ParseError{File: r.file, Line: attached.line, Msg: fmt.Sprintf("%s is %q: no GPU could be listed", attached.key, attached.val)}
		}
		switch {
		case c < uint64(len(blocks)):
			return nil, &ParseError{File: r.file, Line: attached.line, Msg: fmt.Sprintf(
				"%s is %d but the capture holds %d GPU blocks: not one nvidia-smi -q run", attached.key, c, len(blocks))}
		case c > uint64(len(blocks)) && c <= state.MaxGPUs:
			// nvidia-smi -q -i N, an excerpt or a cut file: the GPUs shown
			// are judged; the others are "not in the capture", never
			// missing, lost or passed (issue 26).
			how := "nvidia-smi -q -i, a cut or a truncated file"
			if partial {
				how = "an excerpt: the capture marks cuts with [...]"
			}
			end := "the output has no GPU block"
			if len(blocks) > 0 {
				last := blocks[len(blocks)-1]
				end = fmt.Sprintf("the last, %s at line %d, ends at line %d", blockName(last), last.line, lastLine(last))
			}
			n.Capture.Partial = fmt.Sprintf("%d of %d attached GPUs shown (%s; %s): the other %d are not in the capture and are not judged; "+
				"GPU numbers are the blocks' order in the capture, not NVML's index: the PCI bus ID names each GPU",
				len(blocks), c, how, end, c-uint64(len(blocks)))
			n.Capture.AttachedGPUs = int(c)
		case c > state.MaxGPUs:
			return nil, &ParseError{File: r.file, Line: attached.line, Msg: fmt.Sprintf("%s is %d: more than %d GPUs", attached.key, c, state.MaxGPUs)}
		}
	} else {
		// A fragment: GPU blocks without the log's header (a support
		// ticket's paste). The GPUs shown are judged; how many the node
		// has is not in the capture.
		n.Capture.Partial = fmt.Sprintf("a fragment: %d GPU block(s) without the capture's header (no Attached GPUs, driver version or time stamp): "+
			"how many GPUs the node has is not in the capture; GPU numbers are the blocks' order, not NVML's index: the PCI bus ID names each GPU", len(blocks))
	}
	seen := map[string]int{}
	for i, b := range blocks {
		g := state.GPU{Index: i}
		r.gpu = &g
		if m := handleFailure().FindStringSubmatch(b.key); m != nil && !r.xml {
			r.unreachable(b, m[1], m[2])
		} else {
			r.fillGPU(b)
		}
		if r.err != nil {
			return nil, r.err
		}
		if g.PCIBusID != "" {
			if j, dup := seen[g.PCIBusID]; dup {
				return nil, &ParseError{File: r.file, Line: b.line, Msg: fmt.Sprintf("GPU %s is listed twice (GPU blocks %d and %d)", g.PCIBusID, j, i)}
			}
			seen[g.PCIBusID] = i
		}
		if !hasAny(&g) && !g.Unreachable && !g.Denied {
			return nil, &ParseError{File: r.file, Line: b.line, Msg: fmt.Sprintf("GPU block %s holds nothing gpuprobe reads (no name, UUID, memory, ECC, PCIe or temperature): truncated?", blockName(b))}
		}
		nv.GPUs = append(nv.GPUs, g)
	}
	nv.DeviceCount = len(nv.GPUs)
	n.Capture.Unknown = r.unknown
	n.NVML = nv
	n.Sources = []state.Source{{Name: "nvidia-smi", OK: true}}
	if err := n.Validate(); err != nil {
		return nil, &ParseError{File: r.file, Msg: "the state read from it is not valid: " + err.Error()}
	}
	return n, nil
}

// handleFailure is the line nvidia-smi prints in place of a GPU whose
// handle NVML would not give (nvmlDeviceGetHandleByIndex failed): "Unable
// to determine the device handle for GPU 0000:09:00.0: Unknown Error"
// (older drivers, with or without the space after "GPU"), "... for
// GPU1: 0000:34:00.0: Unknown Error" (newer ones name the index), "...:
// GPU is lost. Reboot the system to recover this GPU". The bus ID is
// group 1, NVML's error string group 2. Compiled on first use: most
// processes never read a capture.
var handleFailure = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^Unable to determine the device handle for GPU\s*(?:\d+:\s*)?([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-7]):\s*(.*)$`)
})

// unreachable records the GPU a handleFailure line names as NVML's
// collector records a GPU whose handle it could not get (nvml/collect.go):
// Unreachable, with the call's error; Lost too when the error is NVML's
// GPU_IS_LOST ("GPU is lost": nvml.h NVML_ERROR_GPU_IS_LOST, "The GPU has
// fallen off the bus or has otherwise become inaccessible"); Denied, and
// nothing else, for NO_PERMISSION ("Insufficient Permissions": a device
// cgroup, which says nothing about the GPU). Nothing else about the GPU is
// in the capture.
func (r *reader) unreachable(b *item, bus, msg string) {
	g := r.gpu
	id, err := busid.Parse(bus)
	if err != nil {
		r.fail(b, "%v", err)
		return
	}
	g.PCIBusID = id.String()
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "insufficient permissions") || strings.Contains(low, "no permission"):
		g.Denied = true
		return
	case strings.HasPrefix(low, "gpu is lost"):
		g.Lost = true
	}
	g.Unreachable = true
	g.Errors = append(g.Errors, state.CallError{Call: "nvmlDeviceGetHandleByIndex", Error: msg})
}

func blockName(b *item) string {
	if b.val != "" {
		return "GPU " + b.val
	}
	return b.key
}

func lastLine(it *item) int {
	l := it.line
	for _, c := range it.kids {
		l = max(l, lastLine(c))
	}
	return l
}

// hasAny: the block holds at least one value gpuprobe reads. nvidia-smi's
// own -d option ("Display only selected information", nvidia-smi(1):
// PAGE_RETIREMENT, ROW_REMAPPER, PERFORMANCE, POWER, PIDS, ...) prints
// GPU blocks with one section each; such a block is judged on that section
// and the rest is not in the capture. Before, a real -q -d PAGE_RETIREMENT
// and a -q -d PERFORMANCE were refused as "holding nothing"
// (testdata/azurehpc_8gpu_535.86.10_nvidia-smi-q-d-page-retirement.txt,
// testdata/mangohud_geforce_495.44_nvidia-smi-q-d-performance.txt).
func hasAny(g *state.GPU) bool {
	return g.Name != "" || g.UUID != "" || g.Memory != nil || g.ECC != nil || g.PCIe != nil || g.Thermal != nil ||
		g.RetiredPages != nil || g.RemappedRows != nil || g.ClockEvents != nil || g.Power != nil || g.PersistenceMode != nil ||
		g.Utilization != nil || g.ProcessesKnown
}

// fillGPU maps one GPU block, field by field, onto what the NVML collector
// records (nvml/device.go), with the entry point each value stands for.
func (r *reader) fillGPU(b *item) {
	g := r.gpu
	g.Name = str(r.get(b, "Product Name", "product_name"))
	g.UUID = str(r.get(b, "GPU UUID", "uuid"))
	g.Serial = str(r.get(b, "Serial Number", "serial"))
	g.Architecture = archName(str(r.get(b, "Product Architecture", "product_architecture")))
	if v, ok := r.count(r.get(b, "Minor Number", "minor_number")); ok && v < 1<<20 {
		m := int(v)
		g.Minor = &m
	}
	bus := str(r.get(b, "PCI/Bus Id", "pci/pci_bus_id"))
	if bus == "" && !r.xml {
		bus = strings.TrimPrefix(b.key, "GPU ")
	} else if bus == "" {
		bus = b.val
	}
	if bus != "" {
		id, err := busid.Parse(bus)
		if err != nil {
			r.fail(b, "GPU block: %v", err)
			return
		}
		g.PCIBusID = id.String()
	}
	r.memory(b)
	r.modes(b)
	r.ecc(b)
	r.pages(b)
	r.clockEvents(b)
	r.pcie(b)
	r.thermal(b)
	r.power(b)
	r.utilization(b)
	r.performanceState(b)
	r.processes(b)
	r.fabric(b)
	r.recoveryAction(b)
	g.ResetRequired = printsResetRequired(b)
}

// recoveryActions are nvidia-smi's words for nvml.h's
// nvmlDeviceGpuRecoveryAction_t, as NVIDIA's memory error management guide
// names them ("Recovery action flag": None, Reset, Reboot, Drain P2P, Drain
// and Reset) and as the enum does (GPU_RESET, NODE_REBOOT, ...), lower-case
// with spaces, '_' and '-' dropped.
var recoveryActions = map[string]int{
	"none": 0, "reset": 1, "gpureset": 1, "reboot": 2, "nodereboot": 2, "drainp2p": 3,
	"drainandreset": 4, "drainp2pandreset": 4, "recoverimexdomain": 5, "busreset": 6, "pciebusreset": 6, "systemreboot": 7,
}

// recoveryAction reads "GPU Recovery Action" (R570 and later; XML
// <gpu_recovery_action>) or, before it, "GPU Reset Status" (R535–R565:
// "Reset Required" and "Drain and Reset Recommended", the deprecated
// NVML_FI_DEV_RESET_STATUS and _DRAIN_AND_RESET_STATUS fields that nvml.h
// says NVML_FI_DEV_GET_GPU_RECOVERY_ACTION replaces): Yes is a GPU reset
// (1) or a drain and reset (4). Not printed, "Requested functionality has
// been deprecated" or a word not known here: not read.
func (r *reader) recoveryAction(b *item) {
	const call = "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION"
	if it := r.get(b, "GPU Recovery Action", "gpu_recovery_action"); it != nil {
		w := strings.NewReplacer(" ", "", "_", "", "-", "").Replace(strings.ToLower(it.val))
		if a, ok := recoveryActions[w]; ok {
			r.gpu.RecoveryAction = &a
			return
		}
	}
	st := r.get(b, "GPU Reset Status", "gpu_reset_status")
	reset, ok1 := r.flag(r.get(st, "Reset Required", "reset_required"))
	drain, ok2 := r.flag(r.get(st, "Drain and Reset Recommended", "drain_and_reset_recommended"))
	if ok1 || ok2 {
		a := 0
		switch {
		case drain:
			a = 4
		case reset:
			a = 1
		}
		r.gpu.RecoveryAction = &a
		return
	}
	if !slices.Contains(r.gpu.Unsupported, call) {
		r.gpu.Unsupported = append(r.gpu.Unsupported, call)
	}
}

// printsResetRequired: nvidia-smi printed "[GPU requires reset]" for one
// of the block's values, its text for NVML_ERROR_RESET_REQUIRED (nvml.h:
// "The GPU requires a reset before it can be used again"). Each such value
// stays unknown; the GPU's state is a fact of its own (hw3: gpuprobe read
// a GPU answering nothing but that as all skipped, a pass).
func printsResetRequired(it *item) bool {
	for _, c := range it.kids {
		v := strings.ToLower(strings.Trim(c.val, "[] "))
		if v == "gpu requires reset" || v == "gpu requires a reset" || printsResetRequired(c) {
			return true
		}
	}
	return false
}

const mib = 1 << 20

func (r *reader) memory(b *item) {
	fb := r.get(b, "FB Memory Usage", "fb_memory_usage")
	totalIt, usedIt := r.get(fb, "Total", "total"), r.get(fb, "Used", "used")
	total, ok1 := r.number(totalIt, " MiB")
	used, ok2 := r.number(usedIt, " MiB")
	free, _ := r.number(r.get(fb, "Free", "free"), " MiB")
	reserved, _ := r.number(r.get(fb, "Reserved", "reserved"), " MiB")
	if !ok1 || !ok2 {
		r.unsupported("nvmlDeviceGetMemoryInfo", fb, totalIt, usedIt)
		return
	}
	r.gpu.Memory = &state.Memory{TotalBytes: uint64(total) * mib, UsedBytes: uint64(used) * mib, FreeBytes: uint64(free) * mib, ReservedBytes: uint64(reserved) * mib}
}

func (r *reader) modes(b *item) {
	pm := r.get(b, "Persistence Mode", "persistence_mode")
	if on, ok := r.flag(pm); ok {
		r.gpu.PersistenceMode = &on
	} else {
		r.unsupported("nvmlDeviceGetPersistenceMode", pm)
	}
	mig := r.get(b, "MIG Mode", "mig_mode")
	curIt, pendIt := r.get(mig, "Current", "current_mig"), r.get(mig, "Pending", "pending_mig")
	cur, ok1 := r.flag(curIt)
	pend, ok2 := r.flag(pendIt)
	if ok1 && ok2 {
		r.gpu.MIG = &state.MIG{Current: cur, Pending: pend}
	} else {
		r.unsupported("nvmlDeviceGetMigMode", mig, curIt, pendIt)
	}
}

// ecc: NVML's total ECC counts (nvmlDeviceGetTotalEccErrors) cover every
// memory location; nvidia-smi splits them into SRAM and DRAM (Ampere and
// later: "SRAM Uncorrectable" or its "Parity" and "SEC-DED" halves) or lists
// "Single Bit"/"Double Bit" with a "Total" (older GPUs). Counters are read
// only with ECC enabled, as the collector reads them.
func (r *reader) ecc(b *item) {
	mode := r.get(b, "ECC Mode", "ecc_mode")
	curIt, pendIt := r.get(mode, "Current", "current_ecc"), r.get(mode, "Pending", "pending_ecc")
	cur, ok1 := r.flag(curIt)
	pend, ok2 := r.flag(pendIt)
	if !ok1 || !ok2 {
		r.unsupported("nvmlDeviceGetEccMode", mode, curIt, pendIt)
		return
	}
	e := &state.ECC{EnabledCurrent: cur, EnabledPending: pend}
	r.gpu.ECC = e
	if !cur {
		return
	}
	errs := r.get(b, "ECC Errors", "ecc_errors")
	vol := r.get(errs, "Volatile", "volatile")
	e.Volatile = r.eccCounts(vol)
	e.Aggregate = r.eccCounts(r.get(errs, "Aggregate", "aggregate"))
	r.sramStatus(r.get(errs, "Aggregate", "aggregate"))
	if e.Volatile.Uncorrected == nil {
		var printed []*item
		if vol != nil {
			printed = append(printed, vol.kids...)
			for _, k := range vol.kids {
				printed = append(printed, k.kids...)
			}
		}
		r.unsupported("nvmlDeviceGetTotalEccErrors", append([]*item{errs, vol}, printed...)...)
	}
}

// sramStatus reads nvidia-smi's "SRAM Threshold Exceeded" /
// <sram_threshold_exceeded> (nvmlDeviceGetSramEccErrorStatus's
// bThresholdExceeded) with the aggregate SRAM counters beside it, where the
// capture prints them (Ampere and later, driver 535+). A capture without
// the line records nothing: gpu.ecc names the flag as not in the capture.
func (r *reader) sramStatus(agg *item) {
	it := r.get(agg, "SRAM Threshold Exceeded", "sram_threshold_exceeded")
	if it == nil {
		return
	}
	on, ok := r.flag(it)
	if !ok {
		r.unsupportedPrinted("nvmlDeviceGetSramEccErrorStatus", it)
		return
	}
	s := &state.SRAMECC{ThresholdExceeded: on}
	for _, c := range []struct {
		text, xml string
		v         *uint64
	}{
		{"SRAM Uncorrectable SEC-DED", "sram_uncorrectable_secded", &s.AggregateUncSecDed},
		{"SRAM Uncorrectable Parity", "sram_uncorrectable_parity", &s.AggregateUncParity},
		{"SRAM Correctable", "sram_correctable", &s.AggregateCor},
	} {
		if v, ok := r.count(r.get(agg, c.text, c.xml)); ok {
			*c.v = v
		}
	}
	r.gpu.SRAMECC = s
}

func (r *reader) eccCounts(sec *item) state.ECCCounts {
	// sum adds the counters present; nil when none is known, or when one
	// that is printed is unknown (a partial sum would understate).
	sum := func(alts ...[]string) *uint64 {
		for _, names := range alts {
			var total uint64
			found, bad := 0, false
			for _, name := range names {
				it := r.get(sec, name, name)
				if it == nil {
					continue
				}
				found++
				v, ok := r.count(it)
				if !ok {
					bad = true
					continue
				}
				total += v
			}
			if found > 0 {
				if bad {
					return nil
				}
				return &total
			}
		}
		return nil
	}
	if r.xml {
		return state.ECCCounts{
			Corrected: sum([]string{"sram_correctable", "dram_correctable"}, []string{"single_bit/total"}),
			Uncorrected: sum([]string{"sram_uncorrectable", "sram_uncorrectable_parity", "sram_uncorrectable_secded", "dram_uncorrectable"},
				[]string{"double_bit/total"}),
		}
	}
	return state.ECCCounts{
		Corrected: sum([]string{"SRAM Correctable", "DRAM Correctable"}, []string{"Single Bit/Total"}),
		Uncorrected: sum([]string{"SRAM Uncorrectable", "SRAM Uncorrectable Parity", "SRAM Uncorrectable SEC-DED", "DRAM Uncorrectable"},
			[]string{"Double Bit/Total"}),
	}
}

// pages: row remapping (Ampere and later) replaces page retirement; as in
// the collector, retired pages are read only where remapping is unknown.
func (r *reader) pages(b *item) {
	rr := r.get(b, "Remapped Rows", "remapped_rows")
	rrItems := []*item{rr, r.get(rr, "Correctable Error", "remapped_row_corr"), r.get(rr, "Uncorrectable Error", "remapped_row_unc"),
		r.get(rr, "Pending", "remapped_row_pending"), r.get(rr, "Remapping Failure Occurred", "remapped_row_failure")}
	corr, ok1 := r.count(rrItems[1])
	unc, ok2 := r.count(rrItems[2])
	pend, ok3 := r.flag(rrItems[3])
	fail, ok4 := r.flag(rrItems[4])
	if ok1 && ok2 && ok3 && ok4 && corr < 1<<31 && unc < 1<<31 {
		r.gpu.RemappedRows = &state.RemappedRows{Correctable: int(corr), Uncorrectable: int(unc), Pending: pend, Failure: fail}
		return
	}
	r.unsupported("nvmlDeviceGetRemappedRows", rrItems...)
	rp := r.get(b, "Retired Pages", "retired_pages")
	rpItems := []*item{rp, r.get(rp, "Single Bit ECC", "multiple_single_bit_retirement/retired_count"), r.get(rp, "Double Bit ECC", "double_bit_retirement/retired_count"),
		r.get(rp, "Pending Page Blacklist|Pending Page Retirement|Pending", "pending_retirement|pending_blacklist")}
	sbe, o1 := r.count(rpItems[1])
	dbe, o2 := r.count(rpItems[2])
	pending, o3 := r.flag(rpItems[3])
	if o1 && o2 && o3 && sbe < 1<<31 && dbe < 1<<31 {
		r.gpu.RetiredPages = &state.RetiredPages{SingleBitECC: int(sbe), DoubleBitECC: int(dbe), Pending: pending}
		return
	}
	r.unsupported("nvmlDeviceGetRetiredPages", rpItems...)
}

// clockEventReasons are nvml.h's nvmlClocksEventReason* bits with the
// names nvml/names.go gives them and the labels nvidia-smi prints (text,
// then the XML element without its clocks_event_reason_ or
// clocks_throttle_reason_ prefix). needed marks the ones the checks judge:
// without them the reasons are unknown, not "none active".
var clockEventReasons = []struct {
	bit        uint64
	name, text string
	xml        string
	needed     bool
}{
	{0x1, "gpu_idle", "Idle", "gpu_idle", true},
	{0x2, "applications_clocks_setting", "Applications Clocks Setting", "applications_clocks_setting", false},
	{0x4, "sw_power_cap", "SW Power Cap", "sw_power_cap", false},
	{0x8, "hw_slowdown", "HW Slowdown", "hw_slowdown", true},
	{0x10, "sync_boost", "Sync Boost", "sync_boost", false},
	{0x20, "sw_thermal_slowdown", "SW Thermal Slowdown", "sw_thermal_slowdown", true},
	{0x40, "hw_thermal_slowdown", "HW Thermal Slowdown", "hw_thermal_slowdown", true},
	{0x80, "hw_power_brake_slowdown", "HW Power Brake Slowdown", "hw_power_brake_slowdown", true},
	{0x100, "display_clock_setting", "Display Clock Setting", "display_clocks_setting", false},
}

func (r *reader) clockEvents(b *item) {
	sec := r.get(b, "Clocks Event Reasons|Clocks Throttle Reasons", "clocks_event_reasons|clocks_throttle_reasons")
	const call = "nvmlDeviceGetCurrentClocksEventReasons"
	if sec == nil {
		r.unsupported(call, sec)
		return
	}
	ce := &state.ClockEvents{Reasons: []string{}}
	for _, c := range clockEventReasons {
		var it *item
		if r.xml {
			it = sec.find("clocks_event_reason_" + c.xml)
			if it == nil {
				it = sec.find("clocks_throttle_reason_" + c.xml)
			}
		} else {
			it = sec.find(c.text)
		}
		on, ok := r.flag(it)
		if !ok {
			if c.needed {
				// The section itself may be what is unknown: a Kepler
				// GTX 680 on R470 prints "Clocks Throttle Reasons : N/A"
				// (testdata/gls_gtx680_470.256.02_nvidia-smi-q.txt), which
				// was reported as "not in the capture".
				r.unsupported(call, it, sec)
				return
			}
			continue
		}
		if on {
			ce.Mask |= c.bit
			ce.Reasons = append(ce.Reasons, c.name)
		}
	}
	r.gpu.ClockEvents = ce
}

func (r *reader) pcie(b *item) {
	link := r.get(b, "PCI/GPU Link Info", "pci/pci_gpu_link_info")
	its := []*item{link, r.get(link, "PCIe Generation/Max", "pcie_gen/max_link_gen"), r.get(link, "PCIe Generation/Current", "pcie_gen/current_link_gen"),
		r.get(link, "Link Width/Max", "link_widths/max_link_width"), r.get(link, "Link Width/Current", "link_widths/current_link_width")}
	mg, o1 := r.number(its[1])
	cg, o2 := r.number(its[2])
	mw, o3 := r.number(its[3], "x")
	cw, o4 := r.number(its[4], "x")
	if !o1 || !o2 || !o3 || !o4 || mg > 64 || cg > 64 || mw > 64 || cw > 64 {
		r.unsupported("nvmlDeviceGetCurrPcieLinkWidth", its...)
		return
	}
	p := &state.PCIe{CurrentGen: int(cg), MaxGen: int(mg), CurrentWidth: int(cw), MaxWidth: int(mw)}
	rc := r.get(b, "PCI/Replays Since Reset", "pci/replay_counter")
	if v, ok := r.count(rc); ok {
		p.ReplayCounter = &v
	} else {
		r.unsupported("nvmlDeviceGetPcieReplayCounter", rc)
	}
	r.gpu.PCIe = p
}

// thermal: the absolute thresholds ("GPU Slowdown Temp"), else derived
// from the "T.Limit" forms R570+ drivers print instead on Hopper and later.
// Those are margins, not temperatures: "GPU T.Limit Temp : 52 C" is how far
// the GPU is below its T.Limit now, "GPU Slowdown T.Limit Temp : -2 C" the
// margin at which HW slowdown begins (nvml.h: NVML_FI_DEV_TEMPERATURE_
// SLOWDOWN_TLIMIT, "T.Limit temperature after which GPU may begin HW
// slowdown"). So slowdown = current + margin - slowdown margin. On a real
// H100 (driver 580.159.04, nvsmi/testdata/realgpu_*) that gives 35+52+2 =
// 89 and 35+52+8 = 95 °C, what nvmlDeviceGetTemperatureThreshold answered
// on the same GPU in the same second.
func (r *reader) thermal(b *item) {
	t := r.get(b, "Temperature", "temperature")
	curIt := r.get(t, "GPU Current Temp", "gpu_temp")
	cur, ok := r.number(curIt, " C")
	if !ok || cur < -100 || cur > 1000 {
		r.unsupported("nvmlDeviceGetTemperature", t, curIt)
		return
	}
	if cur == 0 {
		// No GPU runs at 0 °C: a vGPU guest, which has no sensor access,
		// prints "0 C" where it has no reading (issue 26). Unknown, kept
		// as printed.
		r.unsupportedPrinted("nvmlDeviceGetTemperature", curIt)
		return
	}
	th := &state.Thermal{TemperatureC: int(cur)}
	if v, ok := r.number(r.get(t, "GPU Slowdown Temp", "gpu_temp_slow_threshold"), " C"); ok && v > 0 && v < 1000 {
		i := int(v)
		th.SlowdownC = &i
	}
	if v, ok := r.number(r.get(t, "GPU Shutdown Temp", "gpu_temp_max_threshold"), " C"); ok && v > 0 && v < 1000 {
		i := int(v)
		th.ShutdownC = &i
	}
	if th.SlowdownC == nil && th.ShutdownC == nil {
		th.SlowdownC, th.ShutdownC = r.tlimitThresholds(t, int(cur))
	}
	if th.SlowdownC == nil && th.ShutdownC == nil {
		// Neither threshold read: what the capture printed there ("GPU
		// Slowdown Temp : N/A" on a GTX 680, R470) is said, not "not in
		// the capture" (testdata/gls_gtx680_470.256.02_nvidia-smi-q.txt).
		r.unsupported("nvmlDeviceGetTemperatureThreshold", r.get(t, "GPU Slowdown Temp", "gpu_temp_slow_threshold"),
			r.get(t, "GPU Shutdown Temp", "gpu_temp_max_threshold"), r.get(t, "GPU Slowdown T.Limit Temp", "gpu_temp_slow_tlimit_threshold"))
	}
	r.memoryThermal(t, th)
	r.gpu.Thermal = th
}

// memoryThermal reads the memory (HBM) temperature and its limit, the
// values gpu.temperature judges (NVML_FI_DEV_MEMORY_TEMP,
// NVML_TEMPERATURE_THRESHOLD_MEM_MAX): "Memory Current Temp" / <memory_temp>
// and "Memory Max Operating Temp" / <gpu_temp_max_mem_threshold>. N/A or 0
// (a vGPU guest's "no reading") is unknown, kept as printed; a capture that
// prints no memory temperature at all records nothing, as a driver that
// predates the field would.
func (r *reader) memoryThermal(t *item, th *state.Thermal) {
	memIt := r.get(t, "Memory Current Temp", "memory_temp")
	if memIt == nil {
		return
	}
	mt, ok := r.number(memIt, " C")
	if !ok || mt <= 0 || mt >= 1000 {
		r.unsupportedPrinted("NVML_FI_DEV_MEMORY_TEMP", memIt)
		return
	}
	m := int(mt)
	th.MemoryTemperatureC = &m
	maxIt := r.get(t, "Memory Max Operating Temp", "gpu_temp_max_mem_threshold")
	if v, ok := r.number(maxIt, " C"); ok && v > 0 && v < 1000 {
		i := int(v)
		th.MemoryMaxC = &i
	} else if maxIt != nil {
		r.unsupportedPrinted(state.MemoryMaxThresholdCall, maxIt)
	} else {
		r.unsupported(state.MemoryMaxThresholdCall)
	}
}

// tlimitThresholds are the absolute thresholds from the T.Limit margins, nil
// where a margin is missing or the result is not a plausible temperature.
func (r *reader) tlimitThresholds(t *item, cur int) (slow, shut *int) {
	margin := func(text, xml string) *int {
		v, ok := r.number(r.get(t, text, xml), " C")
		if !ok || v < -1000 || v > 1000 {
			return nil
		}
		i := int(v)
		return &i
	}
	return state.TLimitThresholds(cur, margin("GPU T.Limit Temp", "gpu_temp_tlimit"),
		margin("GPU Slowdown T.Limit Temp", "gpu_temp_slow_tlimit_threshold"),
		margin("GPU Shutdown T.Limit Temp", "gpu_temp_max_tlimit_threshold"))
}

// power: "Power Draw" is nvmlDeviceGetPowerUsage; drivers from R550 print
// "Average Power Draw" and "Instantaneous Power Draw" instead, and the
// average is taken. The limit is the enforced one ("Current Power Limit";
// "Enforced Power Limit" in the older "Power Readings" section).
func (r *reader) power(b *item) {
	sec := r.get(b, "GPU Power Readings|Power Readings", "gpu_power_readings|power_readings")
	drawIt := r.get(sec, "Power Draw|Average Power Draw|Instantaneous Power Draw", "power_draw|average_power_draw|instant_power_draw")
	draw, ok := r.number(drawIt, " W")
	if !ok {
		r.unsupported("nvmlDeviceGetPowerUsage", sec, drawIt)
		return
	}
	p := &state.Power{DrawWatts: draw}
	limIt := r.get(sec, "Current Power Limit|Enforced Power Limit|Power Limit", "current_power_limit|enforced_power_limit|power_limit")
	if lim, ok := r.number(limIt, " W"); ok {
		p.LimitWatts = &lim
	} else {
		r.unsupported("nvmlDeviceGetEnforcedPowerLimit", limIt)
	}
	r.gpu.Power = p
}

func (r *reader) utilization(b *item) {
	u := r.get(b, "Utilization", "utilization")
	gpuIt, memIt := r.get(u, "Gpu", "gpu_util"), r.get(u, "Memory", "memory_util")
	gpu, ok1 := r.number(gpuIt, " %")
	mem, ok2 := r.number(memIt, " %")
	if !ok1 || !ok2 || gpu > 100 || mem > 100 {
		r.unsupported("nvmlDeviceGetUtilizationRates", u, gpuIt, memIt)
		return
	}
	r.gpu.Utilization = &state.Utilization{GPUPercent: uint32(gpu), MemoryPercent: uint32(mem)}
}

// performanceState reads "Performance State : P8" (XML performance_state).
func (r *reader) performanceState(b *item) {
	it := r.get(b, "Performance State", "performance_state")
	if it == nil {
		return
	}
	v := strings.TrimSpace(it.val)
	n, err := strconv.Atoi(strings.TrimPrefix(v, "P"))
	if !strings.HasPrefix(v, "P") || err != nil || n < 0 || n > 15 {
		r.unsupported("nvmlDeviceGetPerformanceState", it)
		return
	}
	r.gpu.PerformanceState = &n
}

// processes: nvmlDeviceGetComputeRunningProcesses lists compute processes
// (nvidia-smi's type C, and C+G for one that is both); graphics-only ones
// (G) are not in it. "Processes : None" is a known empty list.
func (r *reader) processes(b *item) {
	sec := r.get(b, "Processes", "processes")
	if sec == nil || len(sec.kids) == 0 && unknown(sec.val) && sec.val != "" {
		r.unsupported("nvmlDeviceGetComputeRunningProcesses", sec)
		return
	}
	r.gpu.ProcessesKnown = true
	var procs []*item
	if r.xml {
		for _, c := range sec.kids {
			if c.key == "process_info" {
				procs = append(procs, c)
			}
		}
	} else {
		for _, c := range sec.kids {
			if strings.EqualFold(c.key, "Process ID") {
				procs = append(procs, c)
			}
		}
	}
	for _, p := range procs {
		var pidItem, typ, name, mem *item
		if r.xml {
			pidItem, typ, name, mem = p.child("pid"), p.child("type"), p.child("process_name"), p.child("used_memory")
		} else {
			pidItem, typ, name, mem = p, p.child("Type"), p.child("Name"), p.child("Used GPU Memory")
		}
		pid, ok := r.count(pidItem)
		if !ok || pid > 1<<32-1 {
			if r.err == nil {
				r.fail(p, "process without a valid PID")
			}
			return
		}
		used, known := r.number(mem, " MiB")
		proc := state.Process{PID: uint32(pid), UsedMemoryBytes: uint64(used) * mib, UsedMemoryUnknown: !known}
		proc.Command = exeName(str(name))
		if t := strings.ToUpper(str(typ)); t != "" && !strings.Contains(t, "C") {
			// Graphics only (type G): not a compute process, kept apart so
			// that the memory a desktop's clients hold is not taken for a
			// leftover compute context (testdata/telegraf_rtx3080-wddm_536.40_nvidia-smi-q-x.xml).
			r.gpu.GraphicsProcesses = append(r.gpu.GraphicsProcesses, proc)
			continue
		}
		r.gpu.Processes = append(r.gpu.Processes, proc)
	}
}

// exeName is the executable's name in a process name nvidia-smi printed:
// the base of a Windows path, spaces kept ("C:\Program Files\My App\my
// app.exe" is "my app.exe"); elsewhere the base of the first word, as
// before (a Linux name is a path, with no spaces in practice).
func exeName(s string) string {
	if i := strings.LastIndexByte(s, '\\'); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	if exe := strings.Fields(s); len(exe) > 0 {
		return path.Base(exe[0])
	}
	return ""
}

// fabric: State and Status as NVML names them (nvml/names.go); printed
// only on GPUs with NVSwitch fabric (N/A elsewhere, which leaves it nil as
// a NOT_SUPPORTED answer does). The health mask is rebuilt from the
// printed health rows and the summary kept, where the driver prints them.
func (r *reader) fabric(b *item) {
	f := r.get(b, "Fabric", "fabric")
	st := str(r.get(f, "State", "state"))
	if st == "" {
		return
	}
	fs := &state.Fabric{API: "nvidia-smi", State: strings.ReplaceAll(strings.ToLower(st), " ", "_")}
	switch fs.State {
	case "completed", "in_progress", "not_started", "not_supported":
	default:
		r.fail(r.get(f, "State", "state"), "Fabric State: %q is not Completed, In Progress, Not Started or Not Supported", st)
		return
	}
	if s := str(r.get(f, "Status", "status")); s != "" {
		fs.Status = strings.ToLower(s)
	}
	if v, ok := r.count(r.get(f, "CliqueId", "cliqueId|clique_id")); ok && v < 1<<32 {
		fs.CliqueID = uint32(v)
	}
	fs.ClusterUUID = str(r.get(f, "ClusterUUID", "clusterUuid|cluster_uuid"))
	fs.HealthMask = r.fabricMask(r.get(f, "Health", "health"))
	switch strings.ToLower(str(r.get(f, "Health/Summary", "health/summary"))) {
	case "healthy":
		fs.HealthSummary = 1
	case "unhealthy":
		fs.HealthSummary = 2
	case "limited capacity", "limited_capacity":
		fs.HealthSummary = 3
	}
	r.gpu.Fabric = fs
}

// fabricMask encodes the printed fabric health rows (driver R570 and
// later) as nvml.h's NVML_GPU_FABRIC_HEALTH_MASK_* fields, for fabric.state
// to decode as it decodes NVML's: each two-bit flag is TRUE (1) or FALSE
// (2), the incorrect-configuration code NONE (1); a row that is absent,
// unknown or worded otherwise leaves its field 0, "not reported".
func (r *reader) fabricMask(h *item) uint32 {
	if h == nil {
		return 0
	}
	var mask uint32
	flag := func(text, xml string, shift uint32, trueWord, falseWord string) {
		it := r.get(h, text, xml)
		if it == nil || unknown(it.val) {
			return
		}
		switch v := strings.ToLower(it.val); {
		case v == trueWord || v == "true" || v == "yes":
			mask |= 1 << shift
		case v == falseWord || v == "false" || v == "no":
			mask |= 2 << shift
		}
	}
	flag("Bandwidth", "bandwidth", 0, "degraded", "full")
	flag("Route Recovery in progress", "route_recovery_in_progress", 2, "true", "false")
	flag("Route Unhealthy", "route_unhealthy", 4, "true", "false")
	flag("Access Timeout Recovery", "access_timeout_recovery", 6, "true", "false")
	if strings.EqualFold(str(r.get(h, "Incorrect Configuration", "incorrect_configuration")), "none") {
		mask |= 1 << 8
	}
	return mask
}

// archName is "Product Architecture" as nvml/names.go names architectures.
func archName(s string) string {
	if s == "" {
		return ""
	}
	a := strings.ToLower(strings.Fields(s)[0])
	return a // "hopper", "ampere", "ada" (Ada Lovelace), "volta", ...
}
