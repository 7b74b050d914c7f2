package kernel

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseModuleVersion(t *testing.T) {
	for in, want := range map[string]string{
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0\n":                   "550.54.15",
		"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri Aug 16 21:42:42 UTC 2024": "560.35.03",
		"garbage": "",
		"":        "",
	} {
		if got := ParseModuleVersion(in); got != want {
			t.Errorf("ParseModuleVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// A captured kernel log in a regular file is read line by line, the way
// /dev/kmsg is read record by record.
func TestCollectFromFiles(t *testing.T) {
	dir := t.TempDir()
	kmsg := filepath.Join(dir, "kmsg")
	os.WriteFile(kmsg, []byte("6,1,100,-;usb 1-1: new device\n3,2,5000000,-;NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "proc", "driver", "nvidia"), 0o755)
	os.WriteFile(filepath.Join(dir, "proc", "driver", "nvidia", "version"), []byte("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Sat Feb 10 2024\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "proc", "uptime"), []byte("3600.50 7000.00\n"), 0o644)
	st := Collect(context.Background(), Options{Kmsg: kmsg, Procfs: filepath.Join(dir, "proc")})
	if st.XIDError != "" || len(st.XIDs) != 1 || st.XIDs[0].Code != 79 {
		t.Fatalf("xids = %+v, err %q", st.XIDs, st.XIDError)
	}
	if st.ModuleVersion != "535.161.08" || st.UptimeSeconds != 3600.5 {
		t.Errorf("module %q uptime %v", st.ModuleVersion, st.UptimeSeconds)
	}
}

func TestCollectMissingSourcesAreReported(t *testing.T) {
	dir := t.TempDir()
	st := Collect(context.Background(), Options{Kmsg: filepath.Join(dir, "nokmsg"), Procfs: dir})
	if !strings.Contains(st.XIDError, "nokmsg") || st.ModuleError == "" {
		t.Errorf("state = %+v", st)
	}
}

// The real /dev/kmsg of this machine: readable as root, and reading it must
// end (non-blocking) rather than wait for new records.
func TestReadRealKmsg(t *testing.T) {
	if _, err := os.Stat("/dev/kmsg"); err != nil {
		if os.Getenv("GPUPROBE_SKIP_REAL_KMSG") == "1" {
			t.Skip("no /dev/kmsg here and GPUPROBE_SKIP_REAL_KMSG=1")
		}
		t.Fatalf("/dev/kmsg: %v (set GPUPROBE_SKIP_REAL_KMSG=1 to skip on machines without it)", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadKmsg("/dev/kmsg", time.Now()); done <- err }()
	select {
	case err := <-done:
		if err != nil && os.Geteuid() == 0 {
			t.Fatalf("root cannot read /dev/kmsg: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading /dev/kmsg blocked")
	}
}

func FuzzParseModuleVersion(f *testing.F) {
	f.Add("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n")
	f.Add("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build")
	f.Add("NVRM version:")
	f.Fuzz(func(t *testing.T, text string) {
		v := ParseModuleVersion(text)
		if v != "" && (v[0] < '0' || v[0] > '9') {
			t.Fatalf("version %q does not start with a digit", v)
		}
	})
}

// A refused log is recorded as refused, with who asked, so the check can
// tell an ordinary user's in-job run from a root run on a broken node.
func TestRefusedLogIsRecordedAsDenied(t *testing.T) {
	denied := func() (io.ReadCloser, error) {
		return nil, &fs.PathError{Op: "open", Path: "/dev/kmsg", Err: syscall.EACCES}
	}
	st := Collect(context.Background(), Options{Procfs: t.TempDir(), Log: denied, LogName: "/dev/kmsg"})
	if !st.XIDDenied || st.ReaderUID == nil || *st.ReaderUID != os.Geteuid() || st.XIDError == "" {
		t.Fatalf("state = %+v", st)
	}
}

// Lines from real logs (bug reports quoted in public issues): an XID, then
// the driver loaded again (the open module's banner, 580.173.02), then
// another XID. The log's order is recorded: the first came before the load,
// the second after it (check says what that means).
func TestDriverLoadOrderRecorded(t *testing.T) {
	log := "Jun 01 17:12:22 host kernel: NVRM: Xid (PCI:0000:01:00): 48, pid=1, name=x, An uncorrectable double bit error\n" +
		"Aug 12 16:16:34 hxs-4 kernel: nvidia-modeset: Loading NVIDIA UNIX Open Kernel Mode Setting Driver for x86_64  580.173.02\n" +
		"Aug 12 16:16:34 hxs-4 kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.173.02  Release Build  (dvs-builder@U22-I3-AK02-24-4)  Tue Jun 23 08:17:01 UTC 2026\n" +
		"Aug 12 17:00:00 hxs-4 kernel: NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Warp Exception\n"
	l, err := readLog(func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(log)), nil }, time.Time{})
	evs := l.XIDs
	if err != nil || len(evs) != 2 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	if l.DriverLoads != 1 || evs[0].DriverLoad != 0 || evs[1].DriverLoad != 1 {
		t.Errorf("driver loads %d, events after %d and %d loads; want 1, 0, 1", l.DriverLoads, evs[0].DriverLoad, evs[1].DriverLoad)
	}
	// The version the load announced is recorded on the lines after it
	// (NVIDIA's 144-150 decode depends on it: before or from R575).
	if evs[0].DriverVersion != "" || evs[1].DriverVersion != "580.173.02" {
		t.Errorf("driver versions %q, %q; want \"\", 580.173.02", evs[0].DriverVersion, evs[1].DriverVersion)
	}
	if v := DriverVersion([]byte("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:17 UTC 2024")); v != "550.54.15" {
		t.Errorf("proprietary banner: %q", v)
	}
}

// SXids from NVSwitch lines (the shapes NVIDIA's NVSentinel and gpud tests
// carry from real logs) land beside the XIDs, with the driver's severity.
func TestSXidsRead(t *testing.T) {
	log := "6,100,5000000,-;nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)\n" +
		"kernel: [123.456789] nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 20009, Non-fatal, Link 28 RX Short Error Rate\n" +
		"Jul 15 04:18:55 node kernel: nvidia-nvswitch0: SXid (PCI:0000:59:00.0): 23001, Fatal, Link 12 Always Fatal\n" +
		"NVRM: Xid (PCI:0000:1b:00): 74, pid=1, name=x, NVLink: fatal error detected on link 3\n"
	l, err := readLog(func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(log)), nil }, time.Unix(0, 0))
	if err != nil || len(l.XIDs) != 1 || len(l.SXIDs) != 3 {
		t.Fatalf("%d XIDs, %d SXids, %v", len(l.XIDs), len(l.SXIDs), err)
	}
	s := l.SXIDs[0]
	if s.Code != 12028 || s.Device != "nvswitch3" || s.BusID != "0000:05:00.0" || s.Severity != "non-fatal" || s.Seq != 100 || !s.Time.Equal(time.Unix(5, 0).UTC()) ||
		s.Message != "Link 32 egress non-posted PRIV error (First)" {
		t.Errorf("first SXid %+v", s)
	}
	if l.SXIDs[1].Device != "nvswitch0" || l.SXIDs[2].Severity != "fatal" || l.SXIDs[2].Code != 23001 {
		t.Errorf("SXids %+v", l.SXIDs)
	}
}

func readString(t *testing.T, s string) Log {
	t.Helper()
	l, err := readLog(func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// dmesg and journalctl print one record with embedded newlines as several
// lines, the later ones indented to the column where the message began
// (NVSentinel #155: the bus ID is on the first line, "fallen off the bus" on
// the third). They are one record: the event has its GPU.
func TestIndentedContinuationIsOneRecord(t *testing.T) {
	for name, log := range map[string]string{
		"dmesg": "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n" +
			"               NVRM: (PCI ID: 10de:26b5) installed in this system has\n" +
			"               NVRM: fallen off the bus and is not responding to commands.\n" +
			"[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).\n",
		// Issue 26: dmesg -t prints no header, so nothing is indented;
		// each line of the notice starts "NVRM: ".
		"dmesg -t": "NVRM: The NVIDIA GPU 0000:b3:00.0\n" +
			"NVRM: (PCI ID: 10de:26b5) installed in this system has\n" +
			"NVRM: fallen off the bus and is not responding to commands.\n" +
			"NVRM: The NVIDIA probe routine failed for 1 device(s).\n",
		"dmesg, a time on each line": "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n" +
			"[ 1843.308149] NVRM: (PCI ID: 10de:26b5) installed in this system has\n" +
			"[ 1843.308151] NVRM: fallen off the bus and is not responding to commands.\n",
		"journalctl": "May 11 19:25:29 homecomp kernel: NVRM: The NVIDIA GPU 0000:b3:00.0\n" +
			"                                 NVRM: (PCI ID: 10de:26b5) installed in this system has\n" +
			"                                 NVRM: fallen off the bus and is not responding to commands.\n",
	} {
		l := readString(t, log)
		if len(l.XIDs) != 1 || l.XIDs[0].BusID != "0000:b3:00" || !strings.Contains(l.XIDs[0].Message, "fallen off the bus") {
			t.Errorf("%s: %+v, want one fallen-off-the-bus event on 0000:b3:00", name, l.XIDs)
		}
	}
	// Lines that are all indented alike, with no header (a pasted grep), are
	// separate records: the Xid is not swallowed by the line before it.
	l := readString(t, "        NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.163.01\n"+
		"        NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
	if len(l.XIDs) != 1 || l.XIDs[0].Code != 79 || l.XIDs[0].DriverLoad != 1 || l.DriverLoads != 1 {
		t.Errorf("indented paste: %+v", l.XIDs)
	}
}

// The nvswitch driver logs one SXid as three records: the head with its
// severity, then "Severity N Engine instance ..." and "Data {...}" for the
// same switch and code (nvtrust #124). They are one event, not three, and the
// two details are not SXids "without a severity word".
func TestSXidDetailRecordsBelongToTheirHead(t *testing.T) {
	l := readString(t, "[   25.948274] nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Non-fatal, Link 00 Minion Link DLREQ interrupt\n"+
		"[   25.950244] nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Severity 0 Engine instance 00 Sub-engine instance 00\n"+
		"[   25.952303] nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Data {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}\n"+
		"[   25.955391] nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Non-fatal, Link 01 Minion Link DLREQ interrupt\n")
	if len(l.SXIDs) != 2 || l.SXIDs[0].Severity != "non-fatal" || l.SXIDs[1].Message != "Link 01 Minion Link DLREQ interrupt" {
		t.Errorf("SXIDs = %+v, want the two heads", l.SXIDs)
	}
	// A detail record with no head before it (a grep that matched only it)
	// is still an SXid.
	l = readString(t, "kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data {0x000001c0, 0x00bd5c8a}\n")
	if len(l.SXIDs) != 1 || l.SXIDs[0].Code != 12028 {
		t.Errorf("lone detail: %+v", l.SXIDs)
	}
}

// A saved log's lines carry wall-clock times in dmesg -T, dmesg --time-format
// iso and journalctl -o short-iso; those date the events (recurrence counts
// separate incidents by them). journalctl's default "Jun 01 17:12:22" has no
// year and dmesg's "[ 1843.308145]" is since an unknown boot: undated.
func TestSavedLogLinesAreDatedFromTheirTimes(t *testing.T) {
	for line, want := range map[string]time.Time{
		"[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception":              time.Date(2024, 8, 30, 11, 43, 9, 0, time.UTC),
		"[Wed Mar  1 17:44:24 2023] NVRM: Xid (PCI:0000:07:00): 13, Graphics Exception":                                               time.Date(2023, 3, 1, 17, 44, 24, 0, time.UTC),
		"2026-06-01T15:55:06.218036+03:00 isaac-Predator-PO5-650 kernel: NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.": time.Date(2026, 6, 1, 12, 55, 6, 218036000, time.UTC),
		"2026-06-01T15:55:06+0300 host kernel: NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.":                           time.Date(2026, 6, 1, 12, 55, 6, 0, time.UTC),
		"kern  :err   : 2025-01-25T10:34:54,859532+00:00 NVRM: Xid (PCI:0000:84:00): 13, x":                                           time.Date(2025, 1, 25, 10, 34, 54, 859532000, time.UTC),
		"Jun 01 17:12:22 isaac-Predator-PO5-650 kernel: NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.":                  {},
		"[ 1843.308145] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.":                                                  {},
	} {
		l := readString(t, line+"\n")
		if len(l.XIDs) != 1 || !l.XIDs[0].Time.Equal(want) {
			t.Errorf("%q: %+v, want time %v", line, l.XIDs, want)
		}
	}
	l := readString(t, "[Wed Mar  1 17:44:24 2023] nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Non-fatal, Link 00 x\n")
	if len(l.SXIDs) != 1 || !l.SXIDs[0].Time.Equal(time.Date(2023, 3, 1, 17, 44, 24, 0, time.UTC)) {
		t.Errorf("SXid: %+v", l.SXIDs)
	}
}

// A log that is not /dev/kmsg is read on from the descriptor ReadKmsg
// opened, never by opening its path again: a FIFO whose writer stays (the
// path swapped for one, or given as one) ends the log at what was written,
// where a second, blocking open and read waited for ever. A long regular
// file is read past its first block.
func TestReadKmsgReadsOnFromItsDescriptor(t *testing.T) {
	dir := t.TempDir()
	line := "[ 1.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n"
	long := strings.Repeat("[ 0.5] some other kernel line of no interest at all to gpuprobe\n", 400) + line
	file := filepath.Join(dir, "dmesg.txt")
	if err := os.WriteFile(file, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := ReadKmsg(file, time.Time{})
	if err != nil || len(l.XIDs) != 1 || l.XIDs[0].Code != 79 {
		t.Fatalf("a %d-byte file: %+v, %v", len(long), l.XIDs, err)
	}

	fifo := filepath.Join(dir, "kmsg")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The writer opens first (read-write, so its open does not wait), writes
	// one block of dmesg lines and keeps the FIFO open.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString(line); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		l, err := ReadKmsg(fifo, time.Time{})
		if err == nil && len(l.XIDs) != 1 {
			err = fmt.Errorf("XIDs %+v", l.XIDs)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadKmsg waited on a FIFO whose writer stays open")
	}
}

// talosctl dmesg prints each kernel record as "NODE: FACILITY: PRIORITY:
// [RFC 3339 time]: message" (the priority right-aligned in 7 columns, the
// node left out when talosctl talks to one machine): the bracketed time
// dates the event, in UTC as Talos prints it, with as many fraction digits
// as it printed (trailing zeros dropped). Lines from the ogkm446 fixture
// (open-gpu-kernel-modules #446/#1118), from open-gpu-kernel-modules #1118
// and, with no node, from Talos' own logging guide's "kern:    info:" form.
// A bracket that does not hold a whole, valid time dates nothing and hides
// no line: the event is still read, undated.
func TestTalosDmesgLinesAreDated(t *testing.T) {
	for line, want := range map[string]time.Time{
		"192.168.11.119: kern: warning: [2026-04-22T21:30:51.870495804Z]: NVRM: Xid (PCI:0000:0b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)":                                                                                              time.Date(2026, 4, 22, 21, 30, 51, 870495804, time.UTC),
		"192.168.11.119: kern: warning: [2026-04-22T21:30:51.494604223Z]: NVRM: Xid (PCI:0000:0b:00): 119, pid=11431, name=gpu-feature-dis, Timeout after 45s of waiting for RPC response from GPU3 GSP! Expected function 76 (GSP_RM_CONTROL) sequence 4129 (0x20803039 0xb0).": time.Date(2026, 4, 22, 21, 30, 51, 494604223, time.UTC),
		"192.168.11.119: kern: warning: [2026-04-22T21:37:31.52Z]: NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] (0x00000062) returned from pRmApi":                                                                                      time.Date(2026, 4, 22, 21, 37, 31, 520000000, time.UTC),
		"kern:    info: [2021-11-10T10:09:37.662764956Z]: NVRM: Xid (PCI:0000:0b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.":                                                                                                                          time.Date(2021, 11, 10, 10, 9, 37, 662764956, time.UTC),
		"talos-gpu-worker-07.cluster.example.internal: kern:   err: [2026-04-22T21:30:51Z]: NVRM: Xid (PCI:0000:0b:00): 79, GPU has fallen off the bus.":                                                                                                                         time.Date(2026, 4, 22, 21, 30, 51, 0, time.UTC),
		// Malformed: no date, the line still read.
		"192.168.11.119: kern: warning: [2026-04-22T25:30:51.870495804Z]: NVRM: Xid (PCI:0000:0b:00): 79, GPU has fallen off the bus.":                    {},
		"192.168.11.119: kern: warning: [2026-04-22T21:30:51.870495804Z: NVRM: Xid (PCI:0000:0b:00): 79, GPU has fallen off the bus.":                     {},
		"192.168.11.119: kern: warning: [2026-04-22T21:30:51.8704958040000000000000000000Z]: NVRM: Xid (PCI:0000:0b:00): 79, GPU has fallen off the bus.": {},
		"192.168.11.119: kern: warning: [[2026-04-22T21:30:51Z]]: NVRM: Xid (PCI:0000:0b:00): 79, GPU has fallen off the bus.":                            {},
		"192.168.11.119: kern: warning: []: NVRM: Xid (PCI:0000:0b:00): 79, GPU has fallen off the bus.":                                                  {},
		// A time inside the message is not the line's.
		"192.168.11.119: kern: warning: NVRM: Xid (PCI:0000:0b:00): 79, [2026-04-22T21:30:51Z]: GPU has fallen off the bus.": {},
	} {
		l := readString(t, line+"\n")
		if len(l.XIDs) != 1 || !l.XIDs[0].Time.Equal(want) {
			t.Errorf("%q: %+v, want time %v", line, l.XIDs, want)
		}
	}
	// The vLLM #40652 Talos node's NVSwitch lines: the SXid is dated too.
	l := readString(t, "192.168.11.119: kern: err: [2026-04-22T21:25:20.466440686Z]: nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Severity 1 Engine instance 12 Sub-engine instance 00\n")
	if len(l.SXIDs) != 1 || !l.SXIDs[0].Time.Equal(time.Date(2026, 4, 22, 21, 25, 20, 466440686, time.UTC)) {
		t.Errorf("SXid: %+v", l.SXIDs)
	}
}

// The other dated prefixes, each with a real posted line, were already read
// (nvl checked; no miss found): journalctl -o short-iso-precise (a public
// crash write-up's journal of an RTX 5090 host, library file 55070660121:
// "2026-06-01T15:55:06.218036+03:00 isaac-Predator-PO5-650 kernel: ...")
// and dmesg --decode --time-format iso with the "syslog" facility (gpud
// PR #870's description, the output of its kmsg fault injector). No real
// `dmesg --time-format iso` line without --decode was found in the
// library (only tests' made-up ones), so none is claimed here.
func TestRealISOPrefixesAreDated(t *testing.T) {
	for line, want := range map[string]time.Time{
		"2026-06-01T15:55:06.218036+03:00 isaac-Predator-PO5-650 kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=30393, name=Media, GPU has fallen off the bus.": time.Date(2026, 6, 1, 12, 55, 6, 218036000, time.UTC),
		"syslog:err   : 2025-05-27T04:18:56,089671+00:00 NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen off the bus":                                         time.Date(2025, 5, 27, 4, 18, 56, 89671000, time.UTC),
	} {
		l := readString(t, line+"\n")
		if len(l.XIDs) != 1 || !l.XIDs[0].Time.Equal(want) {
			t.Errorf("%q: %+v, want time %v", line, l.XIDs, want)
		}
	}
}

// A saved line whose message holds a ';' is read whole: only a /dev/kmsg
// header ("6,1234,5678901,-;", three numbers and the flags) ends at a ';'.
// Before nvl the reader took any line with a ';' for a kmsg record and read
// its message from after the ';', losing the Xid.
func TestSemicolonInASavedLineKeepsTheXid(t *testing.T) {
	for _, line := range []string{
		"192.168.11.119: kern: warning: [2026-04-22T21:30:51Z]: NVRM: Xid (PCI:0000:0b:00): 31, pid=1, name=x, fault; retried",
		"[ 1843.308145] NVRM: Xid (PCI:0000:0b:00): 31, pid=1, name=x, fault; retried",
		"Jun 01 17:12:22 host kernel: NVRM: Xid (PCI:0000:0b:00): 31, pid=1, name=x, fault; retried",
	} {
		l := readString(t, line+"\n")
		if len(l.XIDs) != 1 || l.XIDs[0].Code != 31 {
			t.Errorf("%q: %+v", line, l.XIDs)
		}
	}
	ev, ok := ParseKmsg([]byte("4,1234,5678901,-;NVRM: Xid (PCI:0000:0b:00): 31, pid=1, name=x, fault; retried"), time.Time{})
	if !ok || ev.Code != 31 || ev.Seq != 1234 {
		t.Errorf("kmsg record: %+v %v", ev, ok)
	}
	sx, ok := ParseSXidKmsg([]byte("3,77,5678901,-;nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Non-fatal, Link 00 x; y"), time.Time{})
	if !ok || sx.Code != 24007 || sx.Seq != 77 {
		t.Errorf("kmsg SXid record: %+v %v", sx, ok)
	}
}
