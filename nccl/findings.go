package nccl

import "sort"

// Severity of a finding.
const (
	SevError   = "error"
	SevWarning = "warning"
	SevNote    = "note"
)

const (
	maxFindings        = 256 // distinct findings; more are counted in Stats.FindingsDropped
	maxFindingLines    = 5   // line numbers kept per finding
	maxFindingTextSize = 400
)

// Location is where a line came from.
type Location struct {
	Source string `json:"source,omitempty"`
	Line   int64  `json:"line"`
}

// Finding is one kind of warning, error or note, with the lines it came
// from. Repeats of the same finding (the same WARN from 512 ranks) are
// counted, not listed.
type Finding struct {
	Severity string     `json:"severity"`
	Code     string     `json:"code"`
	Message  string     `json:"message"`
	Hint     string     `json:"hint,omitempty"`
	Where    string     `json:"where,omitempty"` // host:pid of the first occurrence
	Count    int64      `json:"count"`
	Lines    []Location `json:"lines"`
	order    int
	at       []loc
}

type findings struct {
	byKey   map[string]*Finding
	dropped int64
}

func (f *findings) add(sev, code, key, msg, hint, where string, at loc) *Finding {
	if f.byKey == nil {
		f.byKey = make(map[string]*Finding)
	}
	k := sev + "\x00" + code + "\x00" + key
	if x := f.byKey[k]; x != nil {
		x.Count++
		if len(x.at) < maxFindingLines {
			x.at = append(x.at, at)
		}
		return x
	}
	if len(f.byKey) >= maxFindings {
		f.dropped++
		return nil
	}
	x := &Finding{
		Severity: sev, Code: code, Message: clip(msg, maxFindingTextSize), Hint: hint,
		Where: where, Count: 1, order: len(f.byKey), at: []loc{at},
	}
	f.byKey[k] = x
	return x
}

// list returns the findings of one severity in the order they first
// appeared, with their locations resolved against the input names.
func (f *findings) list(sev string, sources []string) []Finding {
	out := []Finding{}
	for _, x := range f.byKey {
		if x.Severity != sev {
			continue
		}
		y := *x
		y.Lines = make([]Location, len(x.at))
		for i, l := range x.at {
			y.Lines[i] = location(l, sources)
		}
		out = append(out, y)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

func location(l loc, sources []string) Location {
	var src string
	if len(sources) > 1 && int(l.src) < len(sources) {
		src = sources[l.src]
	}
	return Location{Source: src, Line: l.line}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
