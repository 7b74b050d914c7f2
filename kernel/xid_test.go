package kernel

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// Real lines, from several driver generations (NVIDIA's XID docs, gpud's
// dmesg fixtures and public issue threads).
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		line string
		want state.XIDEvent
		ok   bool
	}{
		{"[  312.437911] NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
			state.XIDEvent{Code: 79, BusID: "0000:1b:00", PID: 1234, Process: "python", Message: "GPU has fallen off the bus."}, true},
		{"NVRM: Xid (0000:03:00): 13, 0001 00000000 0000a1c0 00000210 00000000 00000000",
			state.XIDEvent{Code: 13, BusID: "0000:03:00", Message: "0001 00000000 0000a1c0 00000210 00000000 00000000"}, true},
		{"kernel: NVRM: Xid (PCI:0000:86:00): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No",
			state.XIDEvent{Code: 94, BusID: "0000:86:00", Message: "Contained: SM (0x1). RST: No, D-RST: No"}, true},
		{"NVRM: Xid (PCI:0000:b7:00): 48, pid=2716, name=train.py, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0.",
			state.XIDEvent{Code: 48, BusID: "0000:b7:00", PID: 2716, Process: "train.py", Message: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0."}, true},
		{"NVRM: Xid (PCI:0000:3b:00): 63, pid=1999, Row Remapper: New row marked for remapping, reset gpu to activate.",
			state.XIDEvent{Code: 63, BusID: "0000:3b:00", PID: 1999, Message: "Row Remapper: New row marked for remapping, reset gpu to activate."}, true},
		{"NVRM: Xid (PCI:0001:C1:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
			state.XIDEvent{Code: 154, BusID: "0001:c1:00", Message: "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"}, true},
		{"NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
			state.XIDEvent{BusID: "0000:3b:00", Message: "GPU 0000:3b:00.0: GPU has fallen off the bus."}, true},
		{"NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:20b0) installed in this system has fallen off the bus and is not responding to commands.",
			state.XIDEvent{BusID: "0000:3b:00", Message: "The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:20b0) installed in this system has fallen off the bus and is not responding to commands."}, true},
		// NVLink 5 (B200/GB200): the registers in the parentheses are
		// facts (IntrInfo, Error Status, errorDebugData); check decodes
		// them with NVIDIA's XID 144-150 Decode sheet (issue 26's line).
		{"NVRM: Xid (PCI:0000:03:00): 145, pid=1843, name=python3, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
			state.XIDEvent{Code: 145, BusID: "0000:03:00", PID: 1843, Process: "python3",
				Message:   "RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
				Registers: []uint32{0x0409a0c2, 0x8, 0, 0, 0, 0, 0}}, true},
		{"NVRM: Xid (PCI:0000:03:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 02 (0x00004266 0x00000001 0x0 0x0 0x0 0x0 0x0)",
			state.XIDEvent{Code: 149, BusID: "0000:03:00", Message: "NETIR_BER_EVENT Nonfatal XC0 i0 Link 02 (0x00004266 0x00000001 0x0 0x0 0x0 0x0 0x0)",
				Registers: []uint32{0x4266, 1, 0, 0, 0, 0, 0}}, true},
		// Issue 26: the message opened with " (" right after the code, and
		// a fallen-off notice that names the GPU without its PCI domain.
		{"NVRM: Xid (PCI:0000:9b:00): 154 (GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required))",
			state.XIDEvent{Code: 154, BusID: "0000:9b:00", Message: "(GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required))"}, true},
		{"NVRM: GPU 18:00.0: GPU has fallen off the bus.",
			state.XIDEvent{BusID: "0000:18:00", Message: "GPU 18:00.0: GPU has fallen off the bus."}, true},
		// MIG: the driver puts the GPU and compute instance it attributes
		// the Xid to after the address, inside the parentheses
		// (open-gpu-kernel-modules src/nvidia/src/kernel/gpu/rc/kernel_rc.c,
		// XID_PRINT_WITH_ATTR("PCI:%04x:%02x:%02x GPU-I:%02u GPU-CI:%02u",
		// ...) and "... GPU-I:%02u"); lines written in that format.
		{"NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:00): 13, pid=42, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Illegal Instruction Encoding",
			state.XIDEvent{Code: 13, BusID: "0000:3b:00", Instance: "GPU-I:01 GPU-CI:00", PID: 42, Process: "python3", Message: "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Illegal Instruction Encoding"}, true},
		{"NVRM: Xid (PCI:0000:3B:00 GPU-I:02): 43, pid=7, name=train, Ch 00000010",
			state.XIDEvent{Code: 43, BusID: "0000:3b:00", Instance: "GPU-I:02", PID: 7, Process: "train", Message: "Ch 00000010"}, true},
		{"NVRM: Xid (PCI:0000:1b:00): 79x, torn", state.XIDEvent{}, false},
		{"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15", state.XIDEvent{}, false},
		{"NVRM: Xid (PCI:0000:1b:00): abc, nonsense", state.XIDEvent{}, false},
		{"NVRM: Xid (PCI:0000:1b:00 79 torn", state.XIDEvent{}, false},
		{"usb 1-1: new high-speed USB device", state.XIDEvent{}, false},
	} {
		got, ok := Parse([]byte(tc.line))
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q)\n got %+v %v\nwant %+v %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseKmsg(t *testing.T) {
	boot := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	ev, ok := ParseKmsg([]byte("3,8812,5000000,-;NVRM: Xid (PCI:0000:5d:00): 74, pid=99, name=nccl, NVLink: fatal error detected on link 3"), boot)
	if !ok || ev.Code != 74 || ev.Seq != 8812 || !ev.Time.Equal(boot.Add(5*time.Second)) {
		t.Errorf("ParseKmsg = %+v %v", ev, ok)
	}
	if !ev.MatchGPU("0000:5D:00.0") || ev.MatchGPU("0000:5e:00.0") {
		t.Error("MatchGPU")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
		"6,1,2,-;NVRM: Xid (0000:03:00): 13, x",
		"NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
		"NVRM: Xid (", "NVRM: Xid ():", "NVRM: Xid (PCI:):, pid=, name=,",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, ok := Parse(b)
		if ok && ev.Code == 0 && !strings.Contains(ev.Message, "fallen off the bus") {
			t.Fatalf("event with neither code nor bus loss: %+v", ev)
		}
		ParseKmsg(b, time.Time{})
	})
}

func TestIsDriverLoad(t *testing.T) {
	for line, want := range map[string]bool{
		// Real banners from posted logs: proprietary (a 2012 journal) and open.
		"Sep 29 08:23:09 LinPC kernel: [   10.375681] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  295.40  Thu Apr  5 21:37:00 PDT 2012": true,
		"Aug 12 16:16:34 hxs-4 kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.173.02  Release Build":                  true,
		"6,900,1200000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.105.08":                                                        true,
		"nvidia-modeset: Loading NVIDIA UNIX Open Kernel Mode Setting Driver for x86_64  595.58.03":                                         false,
		"NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.":                                                                       false,
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08":                                                                        false,
	} {
		if got := IsDriverLoad([]byte(line)); got != want {
			t.Errorf("IsDriverLoad(%q) = %v, want %v", line, got, want)
		}
	}
}

func FuzzParseSXid(f *testing.F) {
	for _, s := range []string{
		"nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
		"6,1,2,-;nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 11001, Fatal, ingress invalid command",
		"nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): garbled, Fatal", ": SXid (PCI:", ": SXid (PCI:):",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, ok := ParseSXid(b)
		if ok && (ev.Code <= 0 || ev.Severity != "" && ev.Severity != "fatal" && ev.Severity != "non-fatal") {
			t.Fatalf("accepted %+v", ev)
		}
		ParseSXidKmsg(b, time.Time{})
	})
}

func TestParseSXidRejectsGarbledCode(t *testing.T) {
	if ev, ok := ParseSXid([]byte("nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): garbled, Fatal")); ok {
		t.Errorf("garbled code accepted: %+v", ev)
	}
}

// /dev/kmsg escapes the newlines inside one printk as "\x0a" (the driver's
// fallen-off-the-bus notice is three lines in one record, NVSentinel #155);
// the escape is a line break, not part of a word: the bus ID before it is
// read, and the dictionary lines after the record's text are not the message.
func TestParseKmsgEscapedNewline(t *testing.T) {
	rec := `3,1311,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0\x0aNVRM: (PCI ID: 10de:26b5) installed in this system has\x0aNVRM: fallen off the bus and is not responding to commands.` + "\n SUBSYSTEM=pci\n DEVICE=+pci:0000:b3:00.0\n"
	ev, ok := ParseKmsg([]byte(rec), time.Time{})
	want := state.XIDEvent{BusID: "0000:b3:00", Seq: 1311,
		Message: "The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen off the bus and is not responding to commands."}
	if !ok || !reflect.DeepEqual(ev, want) {
		t.Errorf("ParseKmsg\n got %+v %v\nwant %+v", ev, ok, want)
	}
	sx, ok := ParseSXidKmsg([]byte("4,77,25948274,-;nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Non-fatal, Link 00 Minion Link DLREQ interrupt\n SUBSYSTEM=pci\n"), time.Time{})
	if !ok || sx.Message != "Link 00 Minion Link DLREQ interrupt" || sx.Seq != 77 {
		t.Errorf("ParseSXidKmsg = %+v %v", sx, ok)
	}
}
