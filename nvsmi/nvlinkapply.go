package nvsmi

import (
	"fmt"
	"slices"

	"github.com/gpuprobe/gpuprobe/state"
)

// The NVML entry points the nvlink capture stands for, as the NVML
// collector records them in GPU.Unsupported and the capture's unknowns.
const (
	callNVLinkState   = "nvmlDeviceGetNvLinkState"
	callNVLinkCounter = "nvmlDeviceGetNvLinkErrorCounter"
)

// Parts of the NVLink state a capture may still lack once an nvlink
// capture is added (state.Capture.NotCollected): nvlink.state skips on the
// first, nvlink.errors on the second.
const (
	NotCollectedNVLinkState  = "nvlink_state"
	NotCollectedNVLinkErrors = "nvlink_errors"
)

// ApplyNVLink adds a saved `nvidia-smi nvlink -s` and/or `-e` (ParseNVLink)
// to a node read from the same node's `nvidia-smi -q` (Parse), so the
// nvlink.* checks judge it. file names the nvlink capture in errors.
//
// A GPU of the nvlink capture is the -q capture's GPU with its UUID; one
// whose header prints none (or a redacted one) is the GPU of its index,
// which holds only where the -q capture shows every GPU in NVML's order
// (not for -q -i N or an excerpt). A GPU the -q capture does not hold is
// an error: the two are not one node's.
//
// What the capture cannot decide stays unknown, never inactive and never
// zero: a GPU the nvlink capture does not show, or shows cut ("..."), or
// for which nvidia-smi printed a message in place of its links, has its
// NVLink state unknown (recorded as the capture's unknown, with what it
// printed and where); nvidia-smi's single "CRC Errors" count, which does
// not say whether it counts flit or data CRC errors (NVML keeps them
// apart: NVML_NVLINK_ERROR_DL_CRC_FLIT, NVML_NVLINK_ERROR_DL_CRC_DATA), is
// not read into either. With -s alone the error counters are not in the
// capture; with -e alone the link state is not.
func ApplyNVLink(n *state.Node, file string, c *NVLinkCapture) error {
	if n == nil || n.Capture == nil || n.NVML == nil {
		return &NVLinkError{File: file, Msg: "an nvlink capture joins an nvidia-smi -q capture of the same node; there is none"}
	}
	bad := func(line int, format string, a ...any) error {
		return &NVLinkError{File: file, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	hasState, hasCounters := false, false
	for _, g := range c.GPUs {
		for _, l := range g.Links {
			hasState = hasState || l.State != ""
			hasCounters = hasCounters || l.Replay != nil || l.Recovery != nil || l.CRC != nil
		}
	}
	target := make([]int, len(c.GPUs)) // capture GPU -> n.NVML.GPUs position
	shown := map[int]bool{}
	for i, g := range c.GPUs {
		at := -1
		for j := range n.NVML.GPUs {
			ng := &n.NVML.GPUs[j]
			if g.UUID != "" && ng.UUID == g.UUID || g.UUID == "" && ng.Index == g.Index {
				at = j
				break
			}
		}
		switch {
		case g.UUID == "" && (n.Capture.Partial != "" || at < 0):
			return bad(g.Line, "GPU %d prints no UUID, and the nvidia-smi -q capture (%s) does not show every GPU by its index: cannot tell which GPU it is", g.Index, n.Capture.File)
		case at < 0:
			return bad(g.Line, "GPU %d (%s) is not in the nvidia-smi -q capture %s: not the same node's", g.Index, g.UUID, n.Capture.File)
		case shown[at]:
			return bad(g.Line, "GPU %d is the -q capture's GPU %d, which another GPU of this capture already is", g.Index, n.NVML.GPUs[at].Index)
		}
		shown[at] = true
		target[i] = at
	}
	var unknown []state.CaptureUnknown
	mark := func(ng *state.GPU, call, printed string, line int) {
		if slices.Contains(ng.Unsupported, call) {
			return
		}
		ng.Unsupported = append(ng.Unsupported, call)
		unknown = append(unknown, state.CaptureUnknown{GPU: ng.Index, Call: call, Printed: printed, Line: line})
	}
	for i, g := range c.GPUs {
		ng := &n.NVML.GPUs[target[i]]
		cut := c.CutAt > g.Line && (i == len(c.GPUs)-1 || c.GPUs[i+1].Line > c.CutAt)
		switch {
		case g.Printed != "":
			mark(ng, callNVLinkState, g.Printed, g.PrintedLine)
			mark(ng, callNVLinkCounter, g.Printed, g.PrintedLine)
			continue
		case cut:
			// The post cut this GPU's block: the links after the cut are
			// not in it, and the ones shown are not all there are.
			mark(ng, callNVLinkState, "a cut (\"...\") in its links", c.CutAt)
			mark(ng, callNVLinkCounter, "a cut (\"...\") in its links", c.CutAt)
			continue
		}
		links := make([]state.NVLink, 0, len(g.Links))
		crc := false
		for _, l := range g.Links {
			links = append(links, state.NVLink{Link: l.Link, Up: l.State == "active", ReplayErrors: l.Replay, RecoveryErrors: l.Recovery})
			crc = crc || l.CRC != nil
		}
		ng.NVLinks = links
		if crc {
			mark(ng, callNVLinkCounter, "CRC Errors (nvidia-smi's one CRC count: flit or data, it does not say)", g.Line)
		}
	}
	// The GPUs the nvlink capture does not show.
	for j := range n.NVML.GPUs {
		ng := &n.NVML.GPUs[j]
		if shown[j] || ng.Unreachable {
			continue
		}
		mark(ng, callNVLinkState, "", 0)
		mark(ng, callNVLinkCounter, "", 0)
	}
	n.Capture.Unknown = append(n.Capture.Unknown, unknown...)
	var nc []string
	for _, p := range n.Capture.NotCollected {
		if p != "nvlinks" {
			nc = append(nc, p)
		}
	}
	if !hasState {
		nc = append(nc, NotCollectedNVLinkState)
	}
	if !hasCounters {
		nc = append(nc, NotCollectedNVLinkErrors)
	}
	n.Capture.NotCollected = nc
	n.Capture.NVLinkFile = file
	return nil
}
