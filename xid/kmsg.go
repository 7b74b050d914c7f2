package xid

import (
	"bytes"
	"strconv"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// ParseKmsg parses one /dev/kmsg record ("6,1234,5678901,-;NVRM: Xid ...")
// and dates the event from the record's microseconds since boot.
func ParseKmsg(rec []byte, boot time.Time) (state.XIDEvent, bool) {
	semi := bytes.IndexByte(rec, ';')
	if semi < 0 {
		return Parse(rec)
	}
	ev, ok := Parse(rec[semi+1:])
	if !ok {
		return ev, false
	}
	hdr := bytes.Split(rec[:semi], []byte(","))
	if len(hdr) >= 3 {
		if seq, err := strconv.ParseUint(string(hdr[1]), 10, 64); err == nil {
			ev.Seq = seq
		}
		if us, err := strconv.ParseInt(string(hdr[2]), 10, 64); err == nil && !boot.IsZero() {
			ev.Time = boot.Add(time.Duration(us) * time.Microsecond).UTC()
		}
	}
	return ev, true
}
