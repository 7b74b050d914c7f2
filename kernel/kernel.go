// Package kernel collects what the kernel knows about the NVIDIA driver: XID
// reports from the kernel ring buffer, the loaded module's version, and the
// uptime that turns counters into rates.
package kernel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/rootfs"
	"github.com/gpuprobe/gpuprobe/state"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
)

// Options locate the sources, so tests and captured trees can be read.
type Options struct {
	Kmsg   string // default /dev/kmsg
	Procfs string // default /proc
	// Log, when set, is the kernel log to read instead of Kmsg: kmsg
	// records or dmesg lines, one per line (a saved log, a simulated node).
	// LogName names it in the state.
	Log     func() (io.ReadCloser, error)
	LogName string
	// LogUndated: Log is another boot's (a saved file), so its records'
	// microseconds since boot are not dated from this machine's uptime.
	LogUndated bool
	// FS is the tree Procfs is read from (see rootfs); nil is this machine's.
	FS fs.FS
}

// Collect reads everything, each read bounded by ctx.
func Collect(ctx context.Context, o Options) *state.Kernel {
	if o.Kmsg == "" {
		o.Kmsg = "/dev/kmsg"
	}
	if o.Procfs == "" {
		o.Procfs = "/proc"
	}
	files := rootfs.FS{Tree: o.FS}
	st := &state.Kernel{XIDSource: o.Kmsg, XIDs: []state.XIDEvent{}}
	up, err := withDeadline(ctx, filepath.Join(o.Procfs, "uptime"), func() (float64, error) { return Uptime(files, o.Procfs) })
	if err == nil {
		st.UptimeSeconds = up
	}
	boot := time.Now().Add(-time.Duration(up * float64(time.Second)))
	read := func() (Log, error) { return ReadKmsg(o.Kmsg, boot) }
	if o.Log != nil {
		st.XIDSource = o.LogName
		logBoot := boot
		if o.LogUndated {
			logBoot = time.Time{}
		}
		read = func() (Log, error) { return readLog(o.Log, logBoot) }
	}
	evs, err := withDeadline(ctx, st.XIDSource, read)
	if err != nil {
		st.XIDError = err.Error()
		if errors.Is(err, fs.ErrPermission) {
			uid := os.Geteuid()
			st.XIDDenied, st.ReaderUID = true, &uid
		}
	} else {
		st.XIDs, st.SXIDs, st.DriverLoads, st.PCIeFatal = evs.XIDs, evs.SXIDs, evs.DriverLoads, evs.PCIeFatal
		st.InitFailures = evs.InitFailures
		st.GSPTimeouts = evs.GSPTimeouts
	}
	v, err := withDeadline(ctx, filepath.Join(o.Procfs, "driver", "nvidia", "version"), func() (string, error) { return ModuleVersion(files, o.Procfs) })
	if err != nil {
		st.ModuleError = err.Error()
	} else {
		st.ModuleVersion = v
	}
	return st
}

// withDeadline runs a read of a pseudo-file under deadline.Do, named by its
// path: a read of a driver's proc file can block, the run must end on time
// regardless, and a file whose earlier read is still hung is not read again
// (a daemon would otherwise leave one more thread behind every cycle).
func withDeadline[T any](ctx context.Context, name string, f func() (T, error)) (T, error) {
	return deadline.Do(ctx, name, 0, f)
}

// maxRecords bounds one read of the ring buffer (it holds a few thousand).
const maxRecords = 1 << 16

// ReadKmsg reads the whole kernel ring buffer once, from its oldest record,
// without blocking, and returns the XID reports in it. It uses raw syscalls:
// an *os.File would hand the non-blocking fd to Go's poller, which waits on
// EAGAIN instead of returning it.
func ReadKmsg(path string, boot time.Time) (Log, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			return Log{}, fmt.Errorf("cannot read %s: %w (needs root or CAP_SYSLOG when kernel.dmesg_restrict=1)", path, err)
		}
		return Log{}, fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer syscall.Close(fd)
	evs := Log{XIDs: []state.XIDEvent{}}
	buf := make([]byte, 8192) // kmsg hands out one record per read, at most ~1 KiB of text
	for n := 0; n < maxRecords; n++ {
		k, err := syscall.Read(fd, buf)
		switch {
		case errors.Is(err, syscall.EAGAIN), err == nil && k == 0:
			return evs, nil
		case errors.Is(err, syscall.EPIPE):
			continue // the record was overwritten while we read; the next one is fine
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return evs, fmt.Errorf("reading %s: %w", path, err)
		}
		if !isKmsgRecord(buf[:k]) {
			// A regular file (a captured log, a test fixture): read the rest
			// from this descriptor, never by opening the path again (it may
			// be a FIFO by then, which a plain open would wait on).
			return readRest(fd, path, buf[:k], boot)
		}
		evs.add(buf[:k], boot)
	}
	return evs, nil
}

// isKmsgRecord tells a /dev/kmsg record ("pri,seq,usec,flags;text\n", one per
// read) from the first block of a regular file, which holds many lines.
func isKmsgRecord(b []byte) bool {
	semi := bytes.IndexByte(b, ';')
	nl := bytes.IndexByte(b, '\n')
	return semi > 0 && (nl < 0 || nl >= len(b)-1 || bytes.IndexByte(b[nl+1:], ';') < 0 && b[nl+1] == ' ')
}

// readRest reads the rest of a log from the non-blocking fd whose first
// block is first, at most maxLog bytes: to its end, or until a read would
// wait (EAGAIN: a FIFO with nothing more in it ends the log there).
func readRest(fd int, path string, first []byte, boot time.Time) (Log, error) {
	data := append([]byte(nil), first...)
	chunk := make([]byte, 64<<10)
	for len(data) <= maxLog {
		k, err := syscall.Read(fd, chunk)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN), err == nil && k == 0:
			return parseLog(data, boot), nil
		case err != nil:
			return Log{}, fmt.Errorf("reading %s: %w", path, err)
		}
		data = append(data, chunk[:k]...)
	}
	return Log{}, fmt.Errorf("kernel log larger than %d MiB", maxLog>>20)
}

// readLog reads kmsg records or dmesg lines, one per line, at most 64 MiB.
// maxLog bounds a kernel log given as a file or a simulated one.
const maxLog = 64 << 20

func readLog(open func() (io.ReadCloser, error), boot time.Time) (Log, error) {
	f, err := open()
	if err != nil {
		return Log{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLog+1))
	if err != nil {
		return Log{}, err
	}
	if len(data) > maxLog {
		// Cutting it would drop the newest XIDs, the ones that matter.
		return Log{}, fmt.Errorf("kernel log larger than %d MiB", maxLog>>20)
	}
	return parseLog(data, boot), nil
}

// parseLog reads the XID reports of a saved log's records.
func parseLog(data []byte, boot time.Time) Log {
	evs := Log{XIDs: []state.XIDEvent{}}
	for _, rec := range records(data) {
		evs.add(rec, boot)
	}
	return evs
}

// maxRecord bounds a record joined from continuation lines; Parse looks at
// the first 4 KiB of one anyway.
const maxRecord = 8 << 10

// records splits a saved log into its records. A printk with newlines in it
// is one record that dmesg and journalctl print as several lines, each
// later one indented to the column where the message began (the driver's
// "The NVIDIA GPU 0000:b3:00.0 / (PCI ID ...) installed in this system has /
// fallen off the bus ..." notice, NVSentinel #155): such a line is joined to
// the record it continues, without its own "NVRM: ". A line is a
// continuation only when the record's first line has a header (a time, a
// host, "kernel:") exactly that wide, so a paste whose lines are all
// indented alike stays one record a line.
func records(data []byte) [][]byte {
	var out [][]byte
	var first []byte // the current record's first line
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if n := len(out); n > 0 && (continues(first, line) || noticeGoesOn(out[n-1], line)) {
			if len(out[n-1]) < maxRecord {
				text := bytes.TrimPrefix(bytes.TrimLeft(line, " "), []byte("NVRM: "))
				joined := make([]byte, 0, len(out[n-1])+1+len(text))
				joined = append(append(append(joined, out[n-1]...), ' '), text...)
				out[n-1] = joined
			}
			continue
		}
		out = append(out, line)
		first = line
	}
	return out
}

// noticeGoesOn: line is the next line of the driver's three-line "The
// NVIDIA GPU <bus> / (PCI ID: ...) installed in this system has / fallen off
// the bus and is not responding to commands." notice, printed where each line
// is a record of its own (dmesg -t: every line starts "NVRM: ", issue 26;
// or each line with a header of its own), so the notice keeps its GPU. Only
// the notice's own next words join it.
func noticeGoesOn(rec, line []byte) bool {
	_, msg, ok := bytes.Cut(rec, []byte("NVRM: The NVIDIA GPU "))
	if !ok || bytes.Contains(msg, []byte("responding to commands")) {
		return false
	}
	j := bytes.Index(line, []byte("NVRM: "))
	if j < 0 {
		return false
	}
	next := line[j+len("NVRM: "):]
	for _, p := range []string{"(PCI ID:", "installed in this system", "fallen off the bus"} {
		if bytes.HasPrefix(next, []byte(p)) {
			return true
		}
	}
	return false
}

// continues: line is indented by spaces to the column where first's message
// begins, after a header of other text.
func continues(first, line []byte) bool {
	c := 0
	for c < len(line) && line[c] == ' ' {
		c++
	}
	if c == 0 || c == len(line) || c >= len(first) || first[c-1] != ' ' || first[c] == ' ' {
		return false
	}
	return len(bytes.TrimSpace(first[:c])) > 0
}

// Log is what a kernel log holds for gpuprobe: the GPUs' XIDs and the
// NVSwitches' SXids, in log order, and how many driver loads it shows.
type Log struct {
	XIDs        []state.XIDEvent
	SXIDs       []state.SXIDEvent
	DriverLoads int
	// driver is the version the last driver load announced.
	driver string
	// PCIeFatal are the AER recovery failures; fatalFrom is, per port, the
	// function it last reported a fatal error from.
	PCIeFatal []state.PCIeFatalEvent
	fatalFrom map[string]string
	// InitFailures are the driver's failed GPU initialisations, one per
	// GPU and driver load; rmLine says whether an event has counted an
	// RmInitAdapter line (else only its rm_init_adapter line).
	InitFailures []state.InitFailureEvent
	rmLine       []bool
	// GSPTimeouts are the driver's "GSP Timeout" banners, one per GPU and
	// driver load (gsptimeout.go).
	GSPTimeouts []state.GSPTimeoutEvent
	// unrecovered are the functions whose "can't recover" lines came
	// since the last port's verdict, with their drivers: Linux's
	// pcie_do_recovery (drivers/pci/pcie/err.c) reports each device below
	// the port, then the port's "device recovery failed".
	unrecovered [][2]string
}

// add reads one record or line. Each event records how many driver loads
// came before it; a driver load is counted.
// A saved log (boot unknown) dates a line from the wall-clock time it
// starts with, where it has one (lineTime).
func (l *Log) add(rec []byte, boot time.Time) {
	if ev, ok := ParseKmsg(rec, boot); ok {
		if boot.IsZero() && ev.Time.IsZero() {
			ev.Time = lineTime(rec)
		}
		ev.DriverLoad = l.DriverLoads
		ev.DriverVersion = l.driver
		l.XIDs = append(l.XIDs, ev)
	} else if ev, ok := ParseSXidKmsg(rec, boot); ok {
		if l.sxidDetailOfHead(ev) {
			return
		}
		if boot.IsZero() && ev.Time.IsZero() {
			ev.Time = lineTime(rec)
		}
		ev.DriverLoad = l.DriverLoads
		l.SXIDs = append(l.SXIDs, ev)
	} else if bus, msg, minor, rm, ok := initFailure(rec); ok {
		l.addInitFailure(rec, boot, bus, msg, minor, rm)
	} else if gpu, ok := gspTimeoutBanner(rec); ok {
		l.addGSPTimeout(rec, boot, gpu)
	} else if IsDriverLoad(rec) {
		l.DriverLoads++
		l.driver = DriverVersion(rec)
	} else if drv, dev, msg, ok := aerLine(rec); ok {
		if from := aerFatalReceived(msg); from != "" {
			if l.fatalFrom == nil {
				l.fatalFrom = map[string]string{}
			}
			l.fatalFrom[dev] = from
		}
		if !aerRecoveryFailed(msg) {
			return
		}
		ev := state.PCIeFatalEvent{Device: dev, Driver: drv, Message: msg, DriverLoad: l.DriverLoads}
		if drv == "pcieport" {
			ev.Port, ev.Device = dev, l.fatalFrom[dev]
			// The devices the port failed on are the ones whose own
			// lines came just before: the nvidia one if any, else the
			// first, with its driver when it is the function named.
			pick := -1
			for i, u := range l.unrecovered {
				if u[1] == "nvidia" {
					pick = i
					break
				}
			}
			if pick < 0 && len(l.unrecovered) > 0 && (ev.Device == "" || ev.Device == l.unrecovered[0][0]) {
				pick = 0
			}
			if pick >= 0 {
				ev.Device, ev.DeviceDriver = l.unrecovered[pick][0], l.unrecovered[pick][1]
			}
			l.unrecovered = l.unrecovered[:0]
		} else {
			l.unrecovered = append(l.unrecovered, [2]string{dev, drv})
		}
		if boot.IsZero() {
			ev.Time = lineTime(rec)
		}
		l.PCIeFatal = append(l.PCIeFatal, ev)
	}
}

// lineTime is the wall-clock time a saved log's line starts with:
//
//	[Fri Aug 30 11:43:09 2024] NVRM: ...                              dmesg -T / --ctime (the printing machine's local time, read as UTC)
//	2026-06-01T15:55:06.218036+03:00 host kernel: NVRM: ...           journalctl -o short-iso
//	kern  :err   : 2025-01-25T10:34:54,859532+00:00 NVRM: ...         dmesg --decode --time-format iso
//	node: kern: warning: [2026-04-22T21:30:51.870495804Z]: NVRM: ...  talosctl dmesg (RFC 3339 in UTC; the node is left out for one machine)
//
// and the zero time for the forms that cannot be placed: journalctl's
// default "Jun 01 17:12:22" has no year, dmesg's "[ 1843.308145]" counts
// from a boot the file does not date. Only the header is looked at (the
// words before the first "NVRM"/"nvidia", at most lineTimeFields of them
// within lineTimeHeader bytes), and a time is a whole word of at most
// maxStamp bytes that parses as one; anything else (a bracket left open,
// an hour 25, a fraction of 30 digits) is no time, and the line is still
// read.
func lineTime(line []byte) time.Time {
	if len(line) > lineTimeHeader {
		line = line[:lineTimeHeader]
	}
	s := string(line)
	if strings.HasPrefix(s, "[") {
		if end := strings.IndexByte(s, ']'); end > 0 && end <= maxStamp+2 {
			if t, err := time.Parse("Mon Jan _2 15:04:05 2006", strings.TrimSpace(s[1:end])); err == nil {
				return t.UTC()
			}
		}
		// "[ 1843.308145]": since an undated boot. A bracketed RFC 3339
		// time (talosctl dmesg without a node) is read below.
	}
	fields := strings.Fields(s)
	for i, f := range fields {
		if i >= lineTimeFields || strings.HasPrefix(f, "NVRM") || strings.HasPrefix(f, "nvidia") {
			break
		}
		// talosctl dmesg: "[2026-04-22T21:30:51.870495804Z]:", the whole
		// word in one pair of brackets.
		if inner, ok := strings.CutPrefix(f, "["); ok {
			inner, ok = strings.CutSuffix(strings.TrimSuffix(inner, ":"), "]")
			if !ok {
				continue
			}
			f = inner
		}
		if len(f) < 19 || len(f) > maxStamp || f[4] != '-' || f[10] != 'T' {
			continue
		}
		for _, layout := range []string{"2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05Z0700"} {
			if t, err := time.Parse(layout, f); err == nil {
				return t.UTC()
			}
		}
	}
	return time.Time{}
}

// lineTimeHeader, lineTimeFields and maxStamp bound what lineTime reads of
// a line: the header of the longest form (a talosctl node name of a
// cluster's FQDN, facility, priority, stamp) fits in lineTimeHeader bytes
// and lineTimeFields words; the longest stamp is RFC 3339 with nanoseconds
// and an offset ("2006-01-02T15:04:05.999999999+07:00", 35 bytes).
const (
	lineTimeHeader = 160
	lineTimeFields = 5
	maxStamp       = 40
)

// sxidDetailOfHead: ev is a detail record of the last SXid its switch
// logged. The switches of a node log side by side, so that head need not be
// the record just before: a real log (hw3) has four switches' heads, then
// their "Severity" records, then their "Data" records, interleaved; read
// against the previous record only, twelve details became SXids of their
// own ("the line has no severity word"). The look-back is bounded.
func (l *Log) sxidDetailOfHead(ev state.SXIDEvent) bool {
	for i, n := len(l.SXIDs)-1, 0; i >= 0 && n < 64; i, n = i-1, n+1 {
		head := l.SXIDs[i]
		if head.Device == ev.Device && head.BusID == ev.BusID {
			return sxidDetail(head, ev)
		}
	}
	return false
}

// sxidDetail: ev is one of the records the nvswitch driver logs after an
// SXid's head for the same switch and code, "Severity N Engine instance ..."
// and "Data {...}" (nvtrust #124; NVIDIA's Fabric Manager guide shows the
// three together): part of that SXid, not another one.
func sxidDetail(head, ev state.SXIDEvent) bool {
	if ev.Severity != "" || head.Device != ev.Device || head.BusID != ev.BusID || head.Code != ev.Code {
		return false
	}
	return strings.HasPrefix(ev.Message, "Severity ") || strings.HasPrefix(ev.Message, "Data {")
}

// ModuleVersion reads the loaded nvidia.ko version:
//
//	NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024
//	NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build  (dvs-builder@U16-I3-B03-4-3)  ...
func ModuleVersion(files rootfs.FS, procfs string) (string, error) {
	p := filepath.Join(procfs, "driver", "nvidia", "version")
	data, err := files.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("nvidia kernel module not loaded? %w", err)
	}
	v := ParseModuleVersion(string(data))
	if v == "" {
		return "", fmt.Errorf("%s: no version in %q", p, firstLine(string(data)))
	}
	return v, nil
}

// ParseModuleVersion finds the version in the first NVRM line.
func ParseModuleVersion(text string) string {
	line := firstLine(text)
	if !strings.HasPrefix(line, "NVRM version:") {
		return ""
	}
	for _, w := range strings.Fields(line) {
		if strings.Count(w, ".") >= 1 && w[0] >= '0' && w[0] <= '9' && strings.Trim(w, "0123456789.") == "" {
			return w
		}
	}
	return ""
}

// Uptime reads /proc/uptime in seconds.
func Uptime(files rootfs.FS, procfs string) (float64, error) {
	p := filepath.Join(procfs, "uptime")
	data, err := files.ReadFile(p)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, fmt.Errorf("%s: empty", p)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return v, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}
