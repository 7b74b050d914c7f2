package nccl

import "bytes"

// Record is one NCCL record found in a line, for callers that want the
// parse rather than a verdict (and for the parser's fuzz target).
type Record struct {
	Host     string `json:"host"`
	PID      int64  `json:"pid"`
	TID      int64  `json:"tid"`
	Dev      int64  `json:"dev"`
	Prefixed bool   `json:"prefixed"` // the host:pid:tid [dev] envelope was there
	Level    string `json:"level"`    // INFO, WARN or VERSION (a bare "NCCL version" line)
	Source   string `json:"source,omitempty"`
	Message  string `json:"message"`
	Kind     Kind   `json:"kind"`
}

// ParseLine returns the NCCL records in one physical line: none for a
// foreign line, several for a folded paste or a torn write.
func ParseLine(line []byte) []Record {
	var (
		sc  lineScanner
		r   rawRecord
		ev  event
		out []Record
	)
	sc.reset(line)
	for sc.scan(&r) {
		sc.finish(&r)
		rec := Record{Host: string(r.host), Prefixed: r.prefixed, Message: string(r.msg), Source: string(r.tag), Dev: -1}
		switch r.level {
		case levelWarn:
			rec.Level, rec.Kind = "WARN", KindWarn
		case levelVersion:
			rec.Level, rec.Kind = "VERSION", classify(r.msg, &ev)
		default:
			rec.Level, rec.Kind = "INFO", classify(r.msg, &ev)
		}
		if r.prefixed {
			// ":pid:tid [dev]" starts one byte before the pid (both slices
			// point into the line).
			off := cap(r.prefix) - cap(r.pid) - 1
			rec.PID, rec.TID, rec.Dev = envelopeNumbers(r.prefix[max(off, 0):])
		}
		out = append(out, rec)
	}
	return out
}

// envelopeNumbers reads ":pid:tid [dev]".
func envelopeNumbers(b []byte) (pid, tid, dev int64) {
	b = bytes.TrimPrefix(b, []byte(":"))
	pid, n := leadingInt(b)
	b = bytes.TrimPrefix(b[n:], []byte(":"))
	tid, n = leadingInt(b)
	b = bytes.TrimPrefix(b[n:], []byte(" ["))
	neg := bytes.HasPrefix(b, []byte("-"))
	dev, _ = leadingInt(bytes.TrimPrefix(b, []byte("-")))
	if neg {
		dev = -dev
	}
	return pid, tid, dev
}
