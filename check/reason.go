package check

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
)

// The drain reason grammar (docs/slurm.md, "Drain reasons"): one line that
// a script, an alert route or NVSentinel's drain monitor can parse.
//
//	reason  = "gpuprobe: " check SP class [SP gpus] SP summary [SP more]
//	check   = 1*( a-z / 0-9 / "_" / "." / "-" )      ; a check ID
//	class   = "node" / "config" / "transient"
//	gpus    = "gpu=" index *( "," index ) [ "+" ]  ; index = "0" / %x31-39 0*3DIGIT; "+": more GPUs
//	summary = 1*( any UTF-8 but control, format characters, quotes '"' "'" "`" )
//	          ; single blanks, no leading or trailing blank; may end in "..."
//	more    = "(+" 1*DIGIT " more)"                ; other failing checks
//
// The whole reason is at most MaxReasonLen bytes. A summary whose first word
// would read as a gpus field when no GPU is named is written after "- ".
//
// Reasons gpuprobe wrote before this grammar ("gpuprobe: <check>: <summary>")
// parse too, with Legacy set and no class: a later run still owns, updates
// and lifts them.

// Class says who must act on a drain.
type Class string

// Classes.
const (
	// ClassNode is hardware or the driver: the node stays drained until the
	// fault is fixed and the check passes.
	ClassNode Class = "node"
	// ClassConfig is configuration (gres.conf, slurm.conf, a kernel or
	// driver setting): an admin must change it.
	ClassConfig Class = "config"
	// ClassTransient clears by itself (fabric still training at boot, a
	// leftover process): lifted by the next run that passes.
	ClassTransient Class = "transient"
)

// Valid reports whether c is one of the three classes.
func (c Class) Valid() bool { return c == ClassNode || c == ClassConfig || c == ClassTransient }

// classes is the class of every check in the catalogue (a test keeps it
// complete; docs/slurm.md lists it). Job and perf checks never drain; they
// have a class so that every check has one.
var classes = map[string]Class{
	"gpu.driver":            ClassNode,
	"gpu.count":             ClassNode,
	"gpu.ecc":               ClassNode,
	"gpu.row_remap":         ClassNode,
	"gpu.retired_pages":     ClassNode,
	"gpu.xid":               ClassNode,
	"gpu.pcie_link":         ClassNode,
	"gpu.temperature":       ClassNode,
	"gpu.throttle":          ClassNode,
	"gpu.persistence":       ClassConfig,
	"gpu.power":             ClassConfig,
	"gpu.mig":               ClassConfig,
	"gpu.processes":         ClassTransient,
	"fabric.state":          ClassTransient,
	"fabric.sxid":           ClassNode,
	"nvlink.state":          ClassNode,
	"nvlink.errors":         ClassNode,
	"ib.ports":              ClassNode,
	"gdr.peermem":           ClassConfig,
	"iommu.mode":            ClassConfig,
	"pcie.acs":              ClassConfig,
	"nccl.transport":        ClassConfig,
	"topo.numa":             ClassConfig,
	"topo.gpu_nic_affinity": ClassConfig,
	"slurm.gres":            ClassConfig,
	"slurm.topology":        ClassConfig,
	// Job checks judge a job step's launch: its configuration.
	"job.visible_devices": ClassConfig,
	// The container checks judge the step's container set-up (the user's
	// or the site's runtime configuration); they never drain.
	"container.shm":             ClassConfig,
	"container.memlock":         ClassConfig,
	"container.rdma_devices":    ClassConfig,
	"container.visible_devices": ClassConfig,
	"container.driver_libs":     ClassConfig,
	"container.cuda_compat":     ClassConfig,
	"container.net_plugin":      ClassConfig,
	"job.gpu_memory":            ClassConfig,
	"job.gpu_sharing":           ClassConfig,
	"job.exclusive":             ClassConfig,
	"job.cpus_per_gpu":          ClassConfig,
	"job.numa_affinity":         ClassConfig,
	"job.master_addr":           ClassConfig,
	"job.nccl_env":              ClassConfig,
	"job.cuda_compat":           ClassConfig,
	// Perf checks judge a running job: gone when it ends.
	"perf.bottleneck":   ClassTransient,
	"perf.gpu_fit":      ClassTransient,
	"perf.gpu_throttle": ClassTransient,
	"perf.gpus_used":    ClassTransient,
	"perf.memory":       ClassTransient,
	"perf.hang":         ClassTransient,
	// Verify checks measure the hardware under load: a slow link, a
	// throttling or erring GPU is the node's until an admin fixes it and
	// verify passes again. Their drains carry VerifyReasonPrefix, so only
	// verify lifts them (check/drain.go).
	"verify.run":     ClassNode,
	"verify.h2d":     ClassNode,
	"verify.d2h":     ClassNode,
	"verify.d2d":     ClassNode,
	"verify.peer":    ClassNode,
	"verify.compute": ClassNode,
	"verify.memtest": ClassNode,
	// verify --from: a saved run's wrong results or failed GPU are the
	// hardware's (check/verifyfrom.go).
	"verify.nccl_tests": ClassNode,
	"verify.dcgmi_diag": ClassNode,
}

// ClassOf is the class of a check ID; a check missing from the table is
// ClassNode, the class that is never lifted by itself.
func ClassOf(id string) Class {
	if c, ok := classes[id]; ok {
		return c
	}
	return ClassNode
}

// Classes returns the class table, for the docs test.
func Classes() map[string]Class {
	out := make(map[string]Class, len(classes))
	for k, v := range classes {
		out[k] = v
	}
	return out
}

// Reason is a parsed drain reason.
type Reason struct {
	Check string `json:"check"`
	Class Class  `json:"class,omitempty"`
	// GPUs are the GPU indexes named; MoreGPUs says the list was cut.
	GPUs     []int  `json:"gpus,omitempty"`
	MoreGPUs bool   `json:"more_gpus,omitempty"`
	Summary  string `json:"summary"`
	// More counts the other failing checks.
	More int `json:"more,omitempty"`
	// Legacy: the reason is in the format before this grammar
	// ("gpuprobe: <check>: <summary>"); it has no class or GPUs.
	Legacy bool `json:"legacy,omitempty"`
	// Prefix is the owner's prefix: ReasonPrefix ("" reads as it) for the
	// health checks' drains, VerifyReasonPrefix for verify's.
	Prefix string `json:"prefix,omitempty"`
}

// maxReasonGPUs is how many GPU indexes a reason names before "+".
const maxReasonGPUs = 8

var (
	checkIDRe  = regexp.MustCompile(`^[a-z0-9_.-]+$`)
	gpusRe     = regexp.MustCompile(`^gpu=(0|[1-9][0-9]{0,3})(,(0|[1-9][0-9]{0,3}))*\+?$`)
	moreRe     = regexp.MustCompile(` \(\+([1-9][0-9]{0,5}) more\)$`)
	errNotOurs = errors.New("not a gpuprobe reason (no \"gpuprobe: \" prefix)")
)

// ParseReason parses a drain reason in the grammar above (or the legacy
// format), with either owner's prefix (ReasonPrefix, VerifyReasonPrefix).
// A reason that starts with neither is an error: it is someone else's.
func ParseReason(s string) (Reason, error) {
	var r Reason
	if len(s) > MaxReasonLen {
		return r, fmt.Errorf("reason is %d bytes, more than %d", len(s), MaxReasonLen)
	}
	rest, ok := strings.CutPrefix(s, ReasonPrefix+" ")
	if !ok {
		if rest, ok = strings.CutPrefix(s, VerifyReasonPrefix+" "); !ok {
			return r, errNotOurs
		}
		r.Prefix = VerifyReasonPrefix
	}
	if !reasonText(rest) {
		return r, fmt.Errorf("reason %q holds a quote, a control character or a double blank", s)
	}
	if m := moreRe.FindStringSubmatchIndex(rest); m != nil {
		r.More, _ = strconv.Atoi(rest[m[2]:m[3]])
		rest = rest[:m[0]]
	}
	id, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return r, fmt.Errorf("reason %q: want a check, a class and a summary", s)
	}
	if legacy, found := strings.CutSuffix(id, ":"); found && checkIDRe.MatchString(legacy) {
		r.Check, r.Summary, r.Legacy = legacy, rest, true
		return r, nil
	}
	if !checkIDRe.MatchString(id) {
		return r, fmt.Errorf("reason %q: %q is not a check ID", s, id)
	}
	r.Check = id
	class, rest, ok := strings.Cut(rest, " ")
	if !ok || !Class(class).Valid() {
		return r, fmt.Errorf("reason %q: want a class (node, config or transient) and a summary after the check", s)
	}
	r.Class = Class(class)
	if first, after, ok := strings.Cut(rest, " "); ok && gpusRe.MatchString(first) {
		list := strings.TrimPrefix(first, "gpu=")
		list, r.MoreGPUs = strings.CutSuffix(list, "+")
		for _, f := range strings.Split(list, ",") {
			i, _ := strconv.Atoi(f)
			r.GPUs = append(r.GPUs, i)
		}
		rest = after
	}
	if rest == "" || gpusRe.MatchString(rest) {
		return r, fmt.Errorf("reason %q: empty summary", s)
	}
	r.Summary = rest
	return r, nil
}

// reasonText: no quotes, no control or format characters, single blanks,
// no leading or trailing blank, valid UTF-8.
func reasonText(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' || strings.Contains(s, "  ") || safetext.Clean(s) != s {
		return false
	}
	for _, r := range s {
		if r == '"' || r == '\'' || r == '`' || r == unicode.ReplacementChar || r != ' ' && unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// String writes the reason in the grammar (the legacy format for a Legacy
// reason), cutting the summary so that the whole is at most MaxReasonLen
// bytes.
func (r Reason) String() string {
	prefix := ReasonPrefix
	if r.Prefix != "" {
		prefix = r.Prefix
	}
	head := prefix + " " + r.Check
	if r.Legacy {
		head += ":"
	} else {
		head += " " + string(r.Class)
		if len(r.GPUs) > 0 {
			idx := make([]string, len(r.GPUs))
			for i, g := range r.GPUs {
				idx[i] = strconv.Itoa(g)
			}
			head += " gpu=" + strings.Join(idx, ",")
			if r.MoreGPUs {
				head += "+"
			}
		}
	}
	more := ""
	if r.More > 0 {
		more = fmt.Sprintf(" (+%d more)", r.More)
	}
	summary := r.Summary
	if summary == "" {
		summary = "-"
	}
	s := head + " " + summary
	if len(s)+len(more) > MaxReasonLen {
		cut := MaxReasonLen - len(more) - len("...")
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = strings.TrimRight(s[:cut], " ") + "..."
	}
	return s + more
}

// reasonFor builds the Reason for a failure.
func reasonFor(f DrainFailure, more int) Reason {
	r := Reason{Check: cleanReason(f.ID), Class: ClassOf(f.ID), Summary: cleanReason(safetext.Clean(f.Summary)), More: more}
	if !checkIDRe.MatchString(r.Check) {
		// Not a catalogue ID (never written by the catalogue): keep the
		// grammar by naming it "unknown" and the ID in the summary.
		r.Summary = cleanReason(r.Check + ": " + r.Summary)
		r.Check = "unknown"
	}
	gpus := append([]int(nil), f.GPUs...)
	sort.Ints(gpus)
	gpus = dedupInts(gpus)
	for _, g := range gpus {
		if g < 0 || g > 9999 {
			gpus = nil // not an index the grammar can name
			break
		}
	}
	if len(gpus) > maxReasonGPUs {
		gpus, r.MoreGPUs = gpus[:maxReasonGPUs], true
	}
	r.GPUs = gpus
	if r.Summary == "" {
		r.Summary = "-"
	}
	if first, _, _ := strings.Cut(r.Summary, " "); len(r.GPUs) == 0 && gpusRe.MatchString(first) {
		r.Summary = "- " + r.Summary
	}
	return r
}

func dedupInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
