package nccl

import (
	"sort"

	"github.com/gpuprobe/gpuprobe/state"
)

const (
	maxFindings        = 256 // distinct findings; more are counted in FindingsDropped
	maxFindingLines    = 5   // line numbers kept per finding
	maxFindingTextSize = 400
)

// finding is one kind of WARN, error trace or foreign line, with the lines
// it came from. Repeats (the same WARN from 512 ranks) are counted, not
// listed. What it means (severity, remedy) is check/ncclverdict's call.
type finding struct {
	code, key, msg, where string
	count                 int64
	order                 int
	at                    []loc
}

type findings struct {
	byKey   map[string]*finding
	dropped int64
}

func (f *findings) add(code, key, msg, where string, at loc) {
	if f.byKey == nil {
		f.byKey = make(map[string]*finding)
	}
	// The map key is built in a stack buffer for the look: a repeat (most
	// calls) allocates nothing; only a new finding keeps its own copy.
	var buf [128]byte
	kb := append(append(append(buf[:0], code...), 0), key...)
	if x := f.byKey[string(kb)]; x != nil {
		x.count++
		if len(x.at) < maxFindingLines {
			x.at = append(x.at, at)
		}
		return
	}
	if len(f.byKey) >= maxFindings {
		f.dropped++
		return
	}
	f.byKey[string(kb)] = &finding{code: code, key: key, msg: clip(msg, maxFindingTextSize), where: where, count: 1, order: len(f.byKey), at: []loc{at}}
}

// list returns the findings in the order they first appeared.
func (f *findings) list() []state.NCCLFinding {
	xs := make([]*finding, 0, len(f.byKey))
	for _, x := range f.byKey {
		xs = append(xs, x)
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].order < xs[j].order })
	out := make([]state.NCCLFinding, 0, len(xs))
	for _, x := range xs {
		lines := make([]state.NCCLLoc, len(x.at))
		for i, l := range x.at {
			lines[i] = l.state()
		}
		out = append(out, state.NCCLFinding{Code: x.code, Key: x.key, Message: x.msg, Where: x.where, Count: x.count, Lines: lines})
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
