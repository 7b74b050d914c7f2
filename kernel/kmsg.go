package kernel

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// ParseKmsg parses one /dev/kmsg record ("6,1234,5678901,-;NVRM: Xid ...")
// and dates the event from the record's microseconds since boot.
func ParseKmsg(rec []byte, boot time.Time) (state.XIDEvent, bool) {
	semi := kmsgHeaderEnd(rec)
	if semi < 0 {
		return Parse(rec)
	}
	text := recordText(rec[semi+1:])
	if !bytes.HasPrefix(text, nvrmPrefix) || taskRecord(text) {
		// The driver's record starts with "NVRM: "; one that holds it
		// later quotes text the kernel took from elsewhere (driverText).
		return state.XIDEvent{}, false
	}
	ev, ok := Parse(text)
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

var nvrmPrefix = []byte("NVRM: ")

// driverText is the text of the driver's line in rec after its "NVRM: ",
// one line, and false when rec is not one. A /dev/kmsg record (the live
// log) is the driver's only when its text starts with "NVRM: ": the kernel
// quotes text an unprivileged user controls in its own records (a
// segfault's "... error 4 in <file name>[...]", an executable stack's
// "process '<path>' ..."), and a file named "NVRM: GPU 0000:ff:00.0:
// RmInitAdapter failed! ..." must not read as a GPU failing. A saved log's
// line (dmesg, journalctl, talosctl: the admin's file) has a prefix of its
// own before it and is read from its first "NVRM: ".
func driverText(rec []byte) ([]byte, bool) {
	if len(rec) > maxLine {
		rec = rec[:maxLine]
	}
	if semi := kmsgHeaderEnd(rec); semi >= 0 {
		text := recordText(rec[semi+1:])
		if !bytes.HasPrefix(text, nvrmPrefix) || taskRecord(text) {
			return nil, false
		}
		return text[len(nvrmPrefix):], true
	}
	i := bytes.Index(rec, nvrmPrefix)
	if i < 0 {
		return nil, false
	}
	return recordText(rec[i+len(nvrmPrefix):]), true
}

// taskRecord reports whether a /dev/kmsg record's text starts with a
// task's name and pid, "comm[pid]": the kernel's reports of a task's fault
// (x86 "%s[%d]: segfault at ... in <file>[...]", arm64 "%s[%d]: unhandled
// exception: ... in <file>"). The task chose both its name (prctl
// PR_SET_NAME: at most TASK_COMM_LEN-1 = 15 bytes, so the "[pid]" starts
// within the first 16) and the file's, so such a record may start "NVRM: "
// and quote any driver line after it. No driver record has a "[digits]"
// that early.
func taskRecord(text []byte) bool {
	for k := 0; k < len(text) && k < taskCommLen; k++ {
		if text[k] != '[' {
			continue
		}
		j := k + 1
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if j > k+1 && j < len(text) && text[j] == ']' {
			return true
		}
	}
	return false
}

// taskCommLen is the kernel's TASK_COMM_LEN: a task's name and its NUL.
const taskCommLen = 16

// recordText is a /dev/kmsg record's text: what comes after it, one
// " KEY=value" dictionary line each (SUBSYSTEM=, DEVICE=), is not the message.
// Newlines inside the text are escaped by the kernel as "\x0a".
func recordText(text []byte) []byte {
	if nl := bytes.IndexByte(text, '\n'); nl >= 0 {
		return text[:nl]
	}
	return text
}

// unescapeNewlines turns the "\x0a" that /dev/kmsg writes for a newline
// inside one printk back into a break between words, dropping the "NVRM: "
// the driver starts each of its lines with: the driver's three-line
// fallen-off-the-bus notice reads as one sentence, with its bus ID a word of
// its own.
func unescapeNewlines(s string) string {
	if !strings.Contains(s, `\x0a`) {
		return s
	}
	s = strings.ReplaceAll(s, `\x0aNVRM: `, " ")
	return strings.ReplaceAll(s, `\x0a`, " ")
}

// kmsgHeaderEnd is the index of the ';' that ends a /dev/kmsg record's
// header ("pri,seq,usec,flags[,...];", Documentation/ABI/testing/dev-kmsg:
// three decimal numbers, then the flags), or -1 when rec has no such
// header: a saved dmesg, journalctl or talosctl line whose message holds a
// ';' is read whole, not from after its first ';' (which lost its Xid).
func kmsgHeaderEnd(rec []byte) int {
	semi := bytes.IndexByte(rec, ';')
	if semi < 0 || semi > 64 {
		return -1
	}
	f := bytes.Split(rec[:semi], []byte(","))
	if len(f) < 4 {
		return -1
	}
	for _, n := range f[:3] {
		if len(n) == 0 || len(bytes.Trim(n, "0123456789")) != 0 {
			return -1
		}
	}
	return semi
}
