// Package check is the catalogue of checks: pure functions from node state
// and expectations to results. No check does I/O; the runner gives them one
// deadline and runs them side by side.
package check

import (
	"sort"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

// Status is a check's verdict.
type Status string

// The statuses, in increasing order of severity for the overall verdict
// (skip counts as pass; error is "could not judge", worse than warn).
const (
	Pass  Status = "pass"
	Skip  Status = "skip"
	Warn  Status = "warn"
	Error Status = "error"
	Fail  Status = "fail"
)

func (s Status) rank() int {
	switch s {
	case Pass:
		return 0
	case Skip:
		return 0
	case Warn:
		return 2
	case Error:
		return 3
	case Fail:
		return 4
	}
	return 3
}

// Worse reports whether s is more severe than t.
func (s Status) Worse(t Status) bool { return s.rank() > t.rank() }

// Device names a GPU the way every result does.
type Device struct {
	Index    int    `json:"index"`
	UUID     string `json:"uuid,omitempty"`
	PCIBusID string `json:"pci_bus_id,omitempty"`
}

// Result is one check's verdict. Devices are the GPUs the verdict is about
// (on warn/fail: the ones at fault). Details carry one line of evidence per
// finding; Remedy is one line on what to do, set on warn and fail.
type Result struct {
	ID      string   `json:"id"`
	Status  Status   `json:"status"`
	Summary string   `json:"summary"`
	Devices []Device `json:"devices"`
	Remedy  string   `json:"remedy,omitempty"`
	Details []string `json:"details,omitempty"`
}

// DeviceOf names a GPU of the node state.
func DeviceOf(g *state.GPU) Device {
	return Device{Index: g.Index, UUID: g.UUID, PCIBusID: g.PCIBusID}
}

// finding is one observation of a check about one GPU (or the node, gpu nil).
type finding struct {
	status Status
	gpu    *state.GPU
	msg    string
	remedy string
}

// verdict folds findings into a Result: the worst status wins, the summary
// names what is worst, and every finding becomes a detail line.
type verdict struct {
	id       string
	findings []finding
}

func (v *verdict) add(s Status, g *state.GPU, remedy, msg string) {
	v.findings = append(v.findings, finding{status: s, gpu: g, msg: msg, remedy: remedy})
}

// result builds the Result; passSummary is used when nothing is worse than pass.
func (v *verdict) result(passSummary string) Result {
	r := Result{ID: v.id, Status: Pass, Devices: []Device{}}
	for _, f := range v.findings {
		if f.status.Worse(r.Status) {
			r.Status = f.status
		}
	}
	if len(v.findings) > 0 && allSkip(v.findings) {
		r.Status = Skip
	}
	var worst []finding
	var remedies []string
	seen := map[int]bool{}
	for _, f := range v.findings {
		if f.status != Pass && f.status != Skip || r.Status == Skip {
			r.Details = append(r.Details, label(f)+f.msg)
		}
		if f.status != r.Status || r.Status == Pass {
			continue
		}
		worst = append(worst, f)
		if f.remedy != "" && !containsStr(remedies, f.remedy) {
			remedies = append(remedies, f.remedy)
		}
		if f.gpu != nil && !seen[f.gpu.Index] && r.Status != Skip {
			seen[f.gpu.Index] = true
			r.Devices = append(r.Devices, DeviceOf(f.gpu))
		}
	}
	sort.Slice(r.Devices, func(i, j int) bool { return r.Devices[i].Index < r.Devices[j].Index })
	switch {
	case r.Status == Pass:
		r.Summary = passSummary
		r.Details = nil
		// "Not read" is a status of its own (issue 26): a GPU the check
		// could not judge (a value not supported, not in a capture, not
		// read) is named beside the pass, never folded into it.
		var skipped []finding
		for _, f := range v.findings {
			if f.status == Skip {
				skipped = append(skipped, f)
				r.Details = append(r.Details, label(f)+f.msg)
			}
		}
		if len(skipped) > 0 {
			r.Summary += "; not judged: " + summarize(skipped)
		}
	case r.Status == Skip:
		r.Summary = v.findings[0].msg
		r.Details = nil
	default:
		r.Summary = summarize(worst)
	}
	if r.Status == Warn || r.Status == Fail {
		r.Remedy = strings.Join(remedies, "; ")
	}
	return r
}

func allSkip(fs []finding) bool {
	for _, f := range fs {
		if f.status != Skip {
			return false
		}
	}
	return true
}

func label(f finding) string {
	if f.gpu == nil {
		return ""
	}
	return f.gpu.Label() + ": "
}

// summarize keeps a summary to one readable line: findings that say the same
// about several GPUs are merged ("GPUs 0,1,2: ..."), then the first two and a
// count of the rest are kept (all of them are in Details).
func summarize(fs []finding) string {
	var lines []string
	byMsg := map[string][]int{}
	var order []string
	for _, f := range fs {
		if f.gpu == nil {
			lines = append(lines, f.msg)
			continue
		}
		if _, seen := byMsg[f.msg]; !seen {
			order = append(order, f.msg)
		}
		byMsg[f.msg] = append(byMsg[f.msg], f.gpu.Index)
	}
	for _, msg := range order {
		gpus := byMsg[msg]
		if len(gpus) == 1 {
			for _, f := range fs {
				if f.gpu != nil && f.msg == msg {
					lines = append(lines, label(f)+msg)
					break
				}
			}
			continue
		}
		ids := make([]string, len(gpus))
		for i, g := range gpus {
			ids[i] = itoa(g)
		}
		lines = append(lines, "GPUs "+strings.Join(ids, ",")+": "+msg)
	}
	if len(lines) <= 2 {
		return strings.Join(lines, "; ")
	}
	return strings.Join(lines[:2], "; ") + "; and " + itoa(len(lines)-2) + " more"
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
