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
// rm_init_adapter failed for device bearing minor number 0", naming no GPU).
// Each later open tries again, and a success is not logged.

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/state"
)

// initFailure reads one line: the GPU it names (canonical, "" when it
// names none), the message from "RmInitAdapter"/"rm_init_adapter" on, and
// whether it is RM's own line (RmInitAdapter) rather than the kernel
// interface's that follows it.
func initFailure(rec []byte) (bus, msg string, rm, ok bool) {
	if len(rec) > maxLine {
		rec = rec[:maxLine]
	}
	i := bytes.Index(rec, []byte("NVRM: "))
	if i < 0 {
		return "", "", false, false
	}
	text := string(recordText(rec[i+len("NVRM: "):]))
	j := strings.Index(text, "RmInitAdapter failed")
	rm = j >= 0
	if !rm {
		if j = strings.Index(text, "rm_init_adapter failed"); j < 0 {
			return "", "", false, false
		}
	}
	head := text[:j]
	// "GPU 0000:01:00.0: " before the message; anything else before it is
	// another message that quotes one (not ours).
	if head != "" {
		rest, found := strings.CutPrefix(head, "GPU ")
		if !found {
			return "", "", false, false
		}
		id, err := busid.Parse(strings.TrimSuffix(strings.TrimSpace(rest), ":"))
		if err != nil {
			return "", "", false, false
		}
		bus = id.String()
	}
	return bus, strings.TrimSpace(text[j:]), rm, true
}

// maxInitFailures bounds the distinct (GPU, driver load) events a log
// keeps: addInitFailure scans them for every line it reads.
const maxInitFailures = 64

// addInitFailure folds one line into its GPU's event for the current
// driver load: the RmInitAdapter lines are counted, the rm_init_adapter
// line that follows each is the same failure (it makes an event only where
// the log holds no RmInitAdapter line for the GPU).
func (l *Log) addInitFailure(rec []byte, boot time.Time, bus, msg string, rm bool) {
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
		return
	}
	if len(l.InitFailures) >= maxInitFailures {
		// A node has a few GPUs and driver loads; a log naming more
		// functions than this is not a real one, and the scan above must
		// not grow with it. The events kept already say a GPU failed.
		return
	}
	l.InitFailures = append(l.InitFailures, state.InitFailureEvent{BusID: bus, Message: msg, Lines: 1, DriverLoad: l.DriverLoads, Time: at})
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
