package nccl

import (
	"sort"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
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
	var buf [128]byte
	kb := append(append(append(buf[:0], code...), 0), key...)
	if f.count(kb, at) {
		return
	}
	f.byKey[string(kb)] = &finding{code: code, key: key, msg: safetext.Clip(msg, maxFindingTextSize), where: where, count: 1, order: len(f.byKey), at: []loc{at}}
}

// repeat is add for a caller whose finding text costs an allocation to
// build: it counts the line and reports true when the finding exists (or
// the table is full), and false when the caller must build the text and
// add it. Most calls are repeats (the same WARN or error trace from every
// rank), and building the text for each was a third of the analyzer's
// garbage on the bench's real shape (docs/nccl.md).
func (f *findings) repeat(code string, key []byte, at loc) bool {
	var buf [128]byte
	return f.count(append(append(append(buf[:0], code...), 0), key...), at)
}

// count counts a line of the finding whose map key is kb (code, 0, key)
// and reports whether add has nothing more to do: the finding exists, or
// the table is full and the line is counted as dropped. The key is built
// in a stack buffer for the look: a repeat allocates nothing.
func (f *findings) count(kb []byte, at loc) bool {
	if f.byKey == nil {
		f.byKey = make(map[string]*finding)
	}
	if x := f.byKey[string(kb)]; x != nil {
		x.count++
		if len(x.at) < maxFindingLines {
			x.at = append(x.at, at)
		}
		return true
	}
	if len(f.byKey) >= maxFindings {
		f.dropped++
		return true
	}
	return false
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
