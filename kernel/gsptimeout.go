package kernel

// This file reads the driver's "GSP Timeout" banner as a fact: which GPU
// (as the driver numbers it), how often. What it means beside the log's
// Xids is check's to say (check/gsptimeout.go).
//
// When an RPC to the GPU System Processor times out, the driver
// (open-gpu-kernel-modules src/nvidia/src/kernel/gpu/gsp/kernel_gsp.c,
// _kgspLogRpcTimeout; _kgspLogXid119 before it) prints
//
//	NVRM: GPU6 _kgspLogRpcTimeout: ********************************* GSP Timeout **********************************
//	NVRM: GPU6 _kgspLogRpcTimeout: Note: Please also check logs above.
//
// and then logs the timeout as an Xid: 119 (GSP_RPC_TIMEOUT), or on 595
// drivers 175 (MEMORY_SUBSYSTEM_ERROR) when it found a memory subsystem
// error (_kgspClassifyGspTimeout). A log cut after the banner (a ticket's
// excerpt) holds the timeout without its Xid line.

import (
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// gspTimeoutBanner reads one line: whether it is the banner, and the GPU
// it names ("GPU6"; "" when the driver printed no GPU prefix).
func gspTimeoutBanner(rec []byte) (gpu string, ok bool) {
	t, found := driverText(rec)
	if !found {
		return "", false
	}
	text := string(t)
	j := strings.Index(text, "* GSP Timeout *")
	if j < 0 {
		return "", false
	}
	// Before the stars: "GPU6 _kgspLogRpcTimeout: " or "_kgspLogXid119: ",
	// nothing else (a line quoting the banner is not the driver's).
	head := strings.TrimRight(text[:j], "*")
	fn, found := strings.CutSuffix(strings.TrimSpace(head), ":")
	if !found && head != "" {
		return "", false
	}
	if g, rest, two := strings.Cut(fn, " "); two {
		if !isGPUInstance(g) || strings.Contains(rest, " ") {
			return "", false
		}
		gpu = g
	} else if isGPUInstance(fn) {
		gpu = fn
	}
	return gpu, true
}

// isGPUInstance: "GPU" and digits, the driver's NV_PRINTF prefix.
func isGPUInstance(s string) bool {
	d, ok := strings.CutPrefix(s, "GPU")
	if !ok || d == "" || len(d) > 4 {
		return false
	}
	return strings.Trim(d, "0123456789") == ""
}

// maxGSPTimeouts bounds the distinct (GPU, driver load) events a log keeps.
const maxGSPTimeouts = 64

// addGSPTimeout folds one banner into its GPU's event for the current
// driver load.
func (l *Log) addGSPTimeout(rec []byte, boot time.Time, gpu string) {
	at := recordTime(rec, boot)
	for i := range l.GSPTimeouts {
		ev := &l.GSPTimeouts[i]
		if ev.GPU != gpu || ev.DriverLoad != l.DriverLoads {
			continue
		}
		ev.Lines++
		if !at.IsZero() {
			ev.Time = at
		}
		return
	}
	if len(l.GSPTimeouts) >= maxGSPTimeouts {
		return
	}
	l.GSPTimeouts = append(l.GSPTimeouts, state.GSPTimeoutEvent{GPU: gpu, Lines: 1, DriverLoad: l.DriverLoads, Time: at})
}
