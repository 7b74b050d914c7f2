package kernel

import (
	"testing"
	"time"
)

// TestKmsgQuotedDriverText: a /dev/kmsg record is the driver's only when
// its text starts with "NVRM: ". The kernel quotes a file name an
// unprivileged user chooses in its own records (show_signal_msg's
// "segfault ... in <file>[...]"), so a file named like a driver line must
// not read as a GPU failing to initialise, a GSP timeout or an Xid (each of
// which can fail gpu.xid and drain the node).
func TestKmsgQuotedDriverText(t *testing.T) {
	boot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	forged := []string{
		"6,100,5000,-;python[1234]: segfault at 0 ip 0000000000401000 sp 00007ffc00000000 error 4 in NVRM: GPU 0000:ff:00.0: RmInitAdapter failed! (0x22:0x56:894)[401000+1000] likely on CPU 3 (core 3, socket 0)\n",
		"6,101,5001,-;a[1]: segfault at 0 ip 0 sp 0 error 4 in NVRM: GPU6 _kgspLogRpcTimeout: *** GSP Timeout ***[401000+1000]\n",
		"6,102,5002,-;a[1]: segfault at 0 ip 0 sp 0 error 4 in NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=x, GPU has fallen off the bus.[401000+1000]\n",
		"4,103,5003,-;process '/home/u/NVRM: GPU 0000:fe:00.0: RmInitAdapter failed! (0x22:0x56:894)/x' started with executable stack\n",
	}
	forged = append(forged, "6,104,5004,-;a[1]: segfault at 0 ip 0 sp 0 error 4 in NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Thu[401000+1000]\n")
	var l Log
	for _, r := range forged {
		l.add([]byte(r), boot)
	}
	if len(l.InitFailures) != 0 || len(l.GSPTimeouts) != 0 || len(l.XIDs) != 0 || l.DriverLoads != 0 {
		t.Fatalf("quoted user text read as the driver's: init %+v, gsp %+v, xid %+v, loads %d", l.InitFailures, l.GSPTimeouts, l.XIDs, l.DriverLoads)
	}
	// The driver's own records still count.
	for _, r := range []string{
		"3,200,6000,-;NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:894)\n",
		"3,201,6001,-;NVRM: GPU6 _kgspLogRpcTimeout: ********** GSP Timeout **********\n",
		"3,202,6002,-;NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n",
		"5,203,6003,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Thu Feb 22 01:44:30 UTC 2024\n",
	} {
		l.add([]byte(r), boot)
	}
	if len(l.InitFailures) != 1 || l.InitFailures[0].BusID != "0000:01:00.0" || len(l.GSPTimeouts) != 1 || l.GSPTimeouts[0].GPU != "GPU6" || len(l.XIDs) != 1 || l.XIDs[0].Code != 79 || l.DriverLoads != 1 {
		t.Fatalf("driver records lost: init %+v, gsp %+v, xid %+v", l.InitFailures, l.GSPTimeouts, l.XIDs)
	}
}

// TestKmsgQuotedSXidAER: the same for the switch driver's SXid records and
// the AER driver's, which start with their device.
func TestKmsgQuotedSXidAER(t *testing.T) {
	var l Log
	for _, r := range []string{
		"6,100,5000,-;a[1]: segfault at 0 ip 0 sp 0 error 4 in nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 11004, Fatal, Link 00 x[401000+1000]\n",
		"6,101,5001,-;a[1]: segfault at 0 ip 0 sp 0 error 4 in nvidia 0000:01:00.0: AER: can't recover (no error_detected callback)[401000+1000]\n",
	} {
		l.add([]byte(r), time.Time{})
	}
	if len(l.SXIDs) != 0 || len(l.PCIeFatal) != 0 {
		t.Fatalf("quoted user text read as the driver's: sxid %+v, aer %+v", l.SXIDs, l.PCIeFatal)
	}
	if _, ok := ParseSXidKmsg([]byte("3,77,5678901,-;nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 11004, Fatal, Link 00 x"), time.Time{}); !ok {
		t.Fatal("the switch driver's record lost")
	}
	if _, _, _, ok := aerLine([]byte("3,78,5678902,-;nvidia 0000:01:00.0: AER: can't recover (no error_detected callback)")); !ok {
		t.Fatal("the AER driver's record lost")
	}
}

// TestKmsgTaskRecords: the kernel's signal reports start with the task's
// name, which the task sets itself (prctl PR_SET_NAME, 15 bytes), then
// "[pid]", and end with a file name it chose: "NVRM: x[1234]: segfault
// ... in <file>[...]" starts with "NVRM: " and is no driver record.
func TestKmsgTaskRecords(t *testing.T) {
	var l Log
	for _, r := range []string{
		"6,100,5000,-;NVRM: x[1234]: segfault at 0 ip 0 sp 0 error 4 in GPU 0000:1b:00.0 has fallen off the bus.[401000+1000]\n",
		"6,101,5001,-;NVRM: Xid (PCI:[1234]: segfault at 0 ip 0 sp 0 error 4 in 0000:1b:00): 79, pid=1, name=x, GPU has fallen off the bus.[401000+1000]\n",
		"6,102,5002,-;x: SXid (PCI:[1234]: segfault at 0 ip 0 sp 0 error 4 in 0000:05:00.0): 11004, Fatal, Link 00 x[401000+1000]\n",
		"6,103,5003,-;x 1:0.0: AER: [1234]: segfault at 0 ip 0 sp 0 error 4 in x device recovery failed[401000+1000]\n",
		"6,104,5004,-;NVRM: [1]: x[1234]: unhandled exception: in GPU 0000:1b:00.0 has fallen off the bus.[401000+1000]\n",
	} {
		l.add([]byte(r), time.Time{})
	}
	if len(l.XIDs) != 0 || len(l.SXIDs) != 0 || len(l.PCIeFatal) != 0 || len(l.InitFailures) != 0 || len(l.GSPTimeouts) != 0 {
		t.Fatalf("a task's record read as a driver's: xid %+v, sxid %+v, aer %+v", l.XIDs, l.SXIDs, l.PCIeFatal)
	}
}
