package kernel

// This file parses NVIDIA XID lines from the kernel log into facts: the
// code, the GPU, the process and the text as logged. What an XID means
// (fallen off the bus, answered by a later driver load, its severity) is
// check's to say (check/xid.go).

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/state"
)

// maxLine caps what is looked at of one kernel line: kmsg records are at most
// 1 KiB of text, and nothing past that is ours.
const maxLine = 4096

// Parse finds an XID or fallen-off-the-bus report in one kernel log line, in
// any of the forms drivers have printed:
//
//	NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
//	NVRM: Xid (0000:03:00): 13, Graphics Exception: ...            (older drivers)
//	NVRM: Xid (PCI:0000:86:00): 94, pid='<unknown>', name=<unknown>, Contained: SM ...
//	NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:00): 13, pid=42, name=python3, ...  (MIG)
//	NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.
//	NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:20b0) installed in this system has fallen off the bus ...
//
// with any prefix before "NVRM:" (kmsg headers, dmesg timestamps, syslog).
func Parse(line []byte) (state.XIDEvent, bool) {
	if len(line) > maxLine {
		line = line[:maxLine]
	}
	i := bytes.Index(line, []byte("NVRM: "))
	if i < 0 {
		return state.XIDEvent{}, false
	}
	msg := strings.TrimSpace(unescapeNewlines(string(line[i+len("NVRM: "):])))
	if rest, ok := strings.CutPrefix(msg, "Xid ("); ok {
		return parseXid(rest)
	}
	if strings.Contains(msg, "fallen off the bus") {
		return state.XIDEvent{BusID: firstBusID(msg), Message: msg}, true
	}
	// "NVRM: nvAssertOkFailedNoLog: Assertion failed: GPU lost from the bus
	// [NV_ERR_GPU_IS_LOST] (0x0000000F) returned from ..." (issue 26): the
	// driver found the GPU gone without an Xid line. Most such lines name
	// no GPU.
	if strings.Contains(msg, "GPU lost from the bus") || strings.Contains(msg, "NV_ERR_GPU_IS_LOST") {
		return state.XIDEvent{BusID: firstBusID(msg), Message: msg}, true
	}
	// "NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required
	// [NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @
	// kernel_channel.c:2827" (hw3: a GB200's and an 8-GPU node's bad GPU,
	// which CUDA then called "busy or unavailable"): the driver refusing
	// work on a GPU until it is reset, often with no Xid line. Like the
	// lost-GPU assertion it names no GPU.
	if strings.Contains(msg, "NV_ERR_RESET_REQUIRED") {
		return state.XIDEvent{BusID: firstBusID(msg), Message: msg}, true
	}
	return state.XIDEvent{}, false
}

func parseXid(rest string) (state.XIDEvent, bool) {
	end := strings.Index(rest, "):")
	if end < 0 {
		return state.XIDEvent{}, false
	}
	bus := strings.TrimPrefix(rest[:end], "PCI:")
	// On a MIG GPU the driver names the instance after the address, inside
	// the parentheses: "PCI:%04x:%02x:%02x GPU-I:%02u GPU-CI:%02u"
	// (open-gpu-kernel-modules, src/nvidia/src/kernel/gpu/rc/kernel_rc.c,
	// XID_PRINT_WITH_ATTR).
	bus, instance, _ := strings.Cut(strings.TrimSpace(bus), " ")
	body := strings.TrimSpace(rest[end+2:])
	// The code is followed by ", pid=..., message", by nothing, or (some
	// driver builds, issue 26) by " (message": "154 (GPU recovery ...".
	digits := len(body) - len(strings.TrimLeft(body, "0123456789"))
	num, after := body[:digits], body[digits:]
	switch {
	case after == "":
	case after[0] == ',':
		after = after[1:]
	case strings.HasPrefix(after, " ("):
	default:
		return state.XIDEvent{}, false
	}
	code, err := strconv.Atoi(num)
	if err != nil || code <= 0 || code > 100000 { // check.MaxXIDCode
		return state.XIDEvent{}, false
	}
	ev := state.XIDEvent{Code: code, BusID: normBus(bus), Instance: strings.Join(strings.Fields(instance), " ")}
	fields := strings.TrimSpace(after)
	// pid= and name= come first on drivers since ~R450; older ones go straight to the message.
	for {
		var f string
		f, rest, found := strings.Cut(fields, ",")
		f = strings.TrimSpace(f)
		switch {
		case strings.HasPrefix(f, "pid="):
			ev.PID, _ = strconv.Atoi(strings.Trim(f[4:], "'"))
		case strings.HasPrefix(f, "name="):
			ev.Process = strings.Trim(f[5:], "'")
			if ev.Process == "<unknown>" {
				ev.Process = ""
			}
		default:
			ev.Message = fields
			ev.Registers = registers(fields)
			return ev, true
		}
		if !found {
			ev.Message = ""
			return ev, true
		}
		fields = strings.TrimSpace(rest)
	}
}

// registers are the hex words in the last parentheses of an Xid message
// ("... Link 13 (0x0409a0c2 0x00000008 0x0 0x0 0x0 0x0 0x0)"), at most
// eight; nil when that group holds anything but 0x words or is not at the
// end of the message (a line cut before its ")" keeps the words it has).
func registers(msg string) []uint32 {
	i := strings.LastIndexByte(msg, '(')
	if i < 0 {
		return nil
	}
	group, tail, _ := strings.Cut(msg[i+1:], ")")
	if strings.TrimSpace(tail) != "" {
		return nil
	}
	words := strings.Fields(group)
	if len(words) == 0 || len(words) > 8 {
		return nil
	}
	out := make([]uint32, 0, len(words))
	for _, w := range words {
		h, ok := strings.CutPrefix(strings.ToLower(strings.TrimSuffix(w, ",")), "0x")
		if !ok {
			return nil
		}
		v, err := strconv.ParseUint(h, 16, 32)
		if err != nil {
			return nil
		}
		out = append(out, uint32(v))
	}
	return out
}

// DriverVersion is the version a driver-load line announces
// ("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Thu ...":
// "550.54.15"): the first word after "Module" made of digits and dots.
func DriverVersion(line []byte) string {
	_, after, ok := bytes.Cut(line, []byte(" Module "))
	if !ok {
		return ""
	}
	for _, w := range strings.Fields(string(after)) {
		if strings.Trim(w, "0123456789.") == "" && strings.Contains(w, ".") {
			return w
		}
	}
	return ""
}

// normBus turns any spelling of the GPU's address into the slot form the
// kernel prints ("0000:1b:00"); text that is not an address is kept as read.
func normBus(s string) string {
	id, err := busid.Parse(s)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(s))
	}
	return id.Slot()
}

// firstBusID finds a "dddd:bb:dd.f" address in free text.
func firstBusID(s string) string {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '(' || r == ')' || r == ',' }) {
		w = strings.TrimSuffix(strings.TrimPrefix(w, "PCI:"), ":")
		if strings.Count(w, ":") == 2 && len(w) >= 10 && isHexBus(w) {
			return normBus(w)
		}
		// "NVRM: GPU 18:00.0: GPU has fallen off the bus." (issue 26):
		// bus:device.function without the domain, which is then 0000.
		if len(w) == 7 && w[2] == ':' && w[5] == '.' && isHexBus(w) {
			return normBus("0000:" + w)
		}
	}
	return ""
}

func isHexBus(w string) bool {
	for _, c := range w {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '.') {
			return false
		}
	}
	return true
}

// driverLoad is how every driver generation announces that nvidia.ko was
// loaded: "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15 ..."
// (proprietary) and "NVRM: loading NVIDIA UNIX Open Kernel Module for
// x86_64  560.35.03 ..." (open), as dmesg captures in bug reports show.
var driverLoad = []byte("NVRM: loading NVIDIA UNIX ")

// IsDriverLoad reports whether a kernel log line says the driver was loaded.
func IsDriverLoad(line []byte) bool {
	if len(line) > maxLine {
		line = line[:maxLine]
	}
	if semi := kmsgHeaderEnd(line); semi >= 0 {
		// A /dev/kmsg record is the driver's only from its start: a load
		// line quoted in another (driverText) would make the Xids before
		// it read as cleared by a driver load.
		text := recordText(line[semi+1:])
		return bytes.HasPrefix(text, driverLoad) && !taskRecord(text)
	}
	return bytes.Contains(line, driverLoad)
}
