package kernel

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// ParseSXid reads an NVSwitch error line as the nvswitch driver prints it
// (its SXid macro: "nvidia-%s: SXid (PCI:%04x:%02x:%02x.%x): %05d, " then
// the message, which starts with the driver's own severity):
//
//	nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)
//	nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 11001, Fatal, ingress invalid command
//
// with any prefix (kmsg header, dmesg time, syslog). A line whose code is not
// a number is not an SXid.
func ParseSXid(line []byte) (state.SXIDEvent, bool) {
	if len(line) > maxLine {
		line = line[:maxLine]
	}
	i := bytes.Index(line, []byte(": SXid (PCI:"))
	if i < 0 {
		return state.SXIDEvent{}, false
	}
	dev := string(line[:i])
	if j := strings.LastIndexAny(dev, " ;]"); j >= 0 {
		dev = dev[j+1:]
	}
	dev = strings.TrimPrefix(dev, "nvidia-")
	rest := string(line[i+len(": SXid (PCI:"):])
	end := strings.Index(rest, "):")
	if end < 0 {
		return state.SXIDEvent{}, false
	}
	ev := state.SXIDEvent{Device: dev, BusID: strings.ToLower(strings.TrimSpace(rest[:end]))}
	body := strings.TrimSpace(rest[end+2:])
	num, after, _ := strings.Cut(body, ",")
	code, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || code <= 0 || code > 1000000 {
		return state.SXIDEvent{}, false
	}
	ev.Code = code
	after = strings.TrimSpace(after)
	sev, msg, _ := strings.Cut(after, ",")
	switch strings.ToLower(strings.TrimSpace(sev)) {
	case "fatal":
		ev.Severity, ev.Message = "fatal", strings.TrimSpace(msg)
	case "non-fatal":
		ev.Severity, ev.Message = "non-fatal", strings.TrimSpace(msg)
	default:
		ev.Message = after // older drivers: no severity word
	}
	return ev, true
}

// ParseSXidKmsg parses a /dev/kmsg record holding an SXid and dates it.
func ParseSXidKmsg(rec []byte, boot time.Time) (state.SXIDEvent, bool) {
	line := rec
	if semi := kmsgHeaderEnd(rec); semi > 0 {
		text := recordText(rec[semi+1:])
		// The switch driver's record starts with its device
		// ("nvidia-nvswitch3: SXid (PCI:..."): text before it is another
		// record quoting one (driverText).
		if i := bytes.Index(text, []byte(": SXid (PCI:")); i < 0 || bytes.IndexByte(text[:i], ' ') >= 0 || taskRecord(text) {
			return state.SXIDEvent{}, false
		}
		line = rec[:semi+1+len(text)]
	}
	ev, ok := ParseSXid(line)
	if !ok {
		return ev, false
	}
	if semi := kmsgHeaderEnd(rec); semi > 0 {
		hdr := bytes.Split(rec[:semi], []byte(","))
		if len(hdr) >= 3 {
			if seq, err := strconv.ParseUint(string(hdr[1]), 10, 64); err == nil {
				ev.Seq = seq
			}
			if us, err := strconv.ParseInt(string(hdr[2]), 10, 64); err == nil && !boot.IsZero() {
				ev.Time = boot.Add(time.Duration(us) * time.Microsecond).UTC()
			}
		}
	}
	return ev, true
}
