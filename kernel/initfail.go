package kernel

// This file reads the driver's reports that it could not initialise a GPU
// it had probed, as facts: which GPU, what the line said. What they mean
// against NVML's list is check's to say (check/xid.go).
//
// The driver binds a GPU at probe (kernel-open/nvidia/nv-pci.c
// nv_pci_probe) and initialises it (RM's RmInitAdapter) when it is first
// opened, or at probe with NVreg_GpuInitOnProbe (kernel-open/nvidia/nv.c
// nv_start_device). When that fails, RM logs
//
//	NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:894)
//
// and nv_start_device
//
//	NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0
//
// (older drivers: "NVRM: RmInitAdapter failed! (0x23:0x56:451)" and "NVRM:
// rm_init_adapter failed for device bearing minor number 0", naming no GPU
// but its device minor number, which a live NVML maps to a GPU: check's).
// Each later open tries again, and a success is not logged. With
// NVreg_GpuInitOnProbe the probe starts the GPU, and a failure is also
//
//	NVRM: Device start failed for 0000:01:00.0 (ret=-5)
//
// (kernel-open/nvidia/nv-pci.c nv_pci_probe, 595.45.04 @
// df1c9a3de2be4b130f4fc7680f7198193d8ac6ad: nv_printf "NVRM: Device start
// failed for %04x:%02x:%02x.%x (ret=%d)" when nv_start_device fails; the
// probe then fails and the GPU is left with no driver). It follows
// nv_start_device's own line, as rm_init_adapter's does RmInitAdapter's.

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/state"
)

// initFailure reads one line: the GPU it names (canonical, "" when it
// names none), the message from "RmInitAdapter"/"rm_init_adapter"/"Device
// start failed" on, the device minor number an older driver's line names
// instead of the GPU (-1 when none), and whether it is RM's own line
// (RmInitAdapter) rather than the kernel interface's that follows it.
func initFailure(rec []byte) (bus, msg string, minor int, rm, ok bool) {
	t, found := driverText(rec)
	if !found {
		return "", "", -1, false, false
	}
	text := string(t)
	if rest, found := strings.CutPrefix(text, probeFailed); found {
		// nv_pci_probe's line names the function right after it.
		f := strings.Fields(rest)
		if len(f) == 0 {
			return "", "", -1, false, false
		}
		id, err := busid.Parse(f[0])
		if err != nil {
			return "", "", -1, false, false
		}
		return id.String(), strings.TrimSpace(text), -1, false, true
	}
	j := strings.Index(text, "RmInitAdapter failed")
	rm = j >= 0
	if !rm {
		if j = strings.Index(text, "rm_init_adapter failed"); j < 0 {
			return "", "", -1, false, false
		}
	}
	head := text[:j]
	// "GPU 0000:01:00.0: " before the message; anything else before it is
	// another message that quotes one (not ours).
	if head != "" {
		rest, found := strings.CutPrefix(head, "GPU ")
		if !found {
			return "", "", -1, false, false
		}
		id, err := busid.Parse(strings.TrimSuffix(strings.TrimSpace(rest), ":"))
		if err != nil {
			return "", "", -1, false, false
		}
		bus = id.String()
	}
	msg, minor = strings.TrimSpace(text[j:]), -1
	if bus == "" {
		if n, found := strings.CutPrefix(msg, "rm_init_adapter failed for device bearing minor number "); found {
			if v, err := strconv.Atoi(n); err == nil && v >= 0 && v <= maxMinor {
				minor = v
			}
		}
	}
	return bus, msg, minor, rm, true
}

// probeFailed starts nv_pci_probe's line when NVreg_GpuInitOnProbe's start
// of the GPU fails.
const probeFailed = "Device start failed for "

// maxMinor is the highest GPU device minor number (/dev/nvidia0 to
// /dev/nvidia254; 255 is /dev/nvidiactl), and maxMinors how many distinct
// ones an event keeps.
const (
	maxMinor  = 254
	maxMinors = 32
)

// maxInitFailures bounds the distinct (GPU, driver load) events a log
// keeps: addInitFailure scans them for every line it reads.
const maxInitFailures = 64

// addInitFailure folds one line into its GPU's event for the current
// driver load: the RmInitAdapter lines are counted, the rm_init_adapter
// line that follows each is the same failure (it makes an event only where
// the log holds no RmInitAdapter line for the GPU).
func (l *Log) addInitFailure(rec []byte, boot time.Time, bus, msg string, minor int, rm bool) {
	at := recordTime(rec, boot)
	for i := range l.InitFailures {
		ev := &l.InitFailures[i]
		if ev.BusID != bus || ev.DriverLoad != l.DriverLoads {
			continue
		}
		switch {
		case rm && !l.rmLine[i]:
			ev.Message, ev.Lines, l.rmLine[i] = msg, 1, true
		case rm:
			ev.Lines++
		}
		if !at.IsZero() {
			ev.Time = at
		}
		addMinor(ev, minor)
		return
	}
	if len(l.InitFailures) >= maxInitFailures {
		// A node has a few GPUs and driver loads; a log naming more
		// functions than this is not a real one, and the scan above must
		// not grow with it. The events kept already say a GPU failed.
		return
	}
	ev := state.InitFailureEvent{BusID: bus, Message: msg, Lines: 1, DriverLoad: l.DriverLoads, Time: at}
	addMinor(&ev, minor)
	l.InitFailures = append(l.InitFailures, ev)
	l.rmLine = append(l.rmLine, rm)
}

// recordTime dates a record of the events read beside the Xids: a
// /dev/kmsg record from its header, a saved log's line (boot unknown) from
// the wall-clock time it starts with (lineTime); zero when neither.
func recordTime(rec []byte, boot time.Time) time.Time {
	if at := kmsgTime(rec, boot); !at.IsZero() || !boot.IsZero() {
		return at
	}
	return lineTime(rec)
}

// addMinor records a device minor number a line names (-1: none) in its
// event, once, in order, at most maxMinors of them.
func addMinor(ev *state.InitFailureEvent, minor int) {
	if minor < 0 || len(ev.Minors) >= maxMinors {
		return
	}
	i, found := slices.BinarySearch(ev.Minors, minor)
	if !found {
		ev.Minors = slices.Insert(ev.Minors, i, minor)
	}
}

// kmsgTime dates a /dev/kmsg record from its microseconds since boot; the
// zero time for a line without a kmsg header or with boot unknown.
func kmsgTime(rec []byte, boot time.Time) time.Time {
	semi := kmsgHeaderEnd(rec)
	if semi < 0 || boot.IsZero() {
		return time.Time{}
	}
	hdr := bytes.Split(rec[:semi], []byte(","))
	us, err := strconv.ParseInt(string(hdr[2]), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return boot.Add(time.Duration(us) * time.Microsecond).UTC()
}
