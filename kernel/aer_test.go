package kernel

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

// Issue 26: a GPU lost without an Xid line. The AER lines are in the forms
// Linux prints them (drivers/pci/pcie/aer.c, err.c: pr_fmt "AER: ",
// "can't recover (no error_detected callback)", "device recovery failed");
// the assertion is the driver's NV_ERR_GPU_IS_LOST line.
func TestLostGPUWithoutXid(t *testing.T) {
	l := readString(t, strings.Join([]string{
		"[ 8812.100001] pcieport 0000:3a:00.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0",
		"[ 8812.100002] nvidia 0000:3b:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)",
		"[ 8812.100003] nvidia 0000:3b:00.0: AER: can't recover (no error_detected callback)",
		"[ 8812.100004] pcieport 0000:3a:00.0: AER: device recovery failed",
		"[ 8812.100005] pcieport 0000:5c:00.0: AER: Uncorrectable (Fatal) error message received from 0000:5d:00.0",
		"[ 8812.100006] pcieport 0000:5c:00.0: AER: device recovery failed",
		"[ 8812.100007] pcieport 0000:80:01.0: AER: device recovery failed",
		// Recovered: no event.
		"[ 8812.100008] pcieport 0000:90:01.0: AER: Corrected error received: 0000:91:00.0",
		"[ 8812.100009] pcieport 0000:90:01.0: AER: device recovery successful",
		"[ 8812.200000] NVRM: nvAssertOkFailedNoLog: Assertion failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST] (0x0000000F) returned from pRmApi->Control(pRmApi, hClient, hObject, cmd, pParams, paramsSize) @ rs_server.c:1411",
	}, "\n")+"\n")
	want := []state.PCIeFatalEvent{
		{Device: "0000:3b:00.0", Driver: "nvidia", Message: "can't recover (no error_detected callback)"},
		{Device: "0000:3b:00.0", Port: "0000:3a:00.0", Driver: "pcieport", DeviceDriver: "nvidia", Message: "device recovery failed"},
		{Device: "0000:5d:00.0", Port: "0000:5c:00.0", Driver: "pcieport", Message: "device recovery failed"},
		{Port: "0000:80:01.0", Driver: "pcieport", Message: "device recovery failed"},
	}
	if !reflect.DeepEqual(l.PCIeFatal, want) {
		t.Errorf("PCIe fatal events\n got %+v\nwant %+v", l.PCIeFatal, want)
	}
	if len(l.XIDs) != 1 || l.XIDs[0].Code != 0 || !strings.Contains(l.XIDs[0].Message, "NV_ERR_GPU_IS_LOST") {
		t.Errorf("XIDs %+v, want the NV_ERR_GPU_IS_LOST line as a lost-GPU event", l.XIDs)
	}
}

// hw3: the port's verdict names the device whose own "can't recover" line
// came just before it (err.c reports each device under the port, then the
// port), with that device's driver: the nvidia one among several, else
// the first. Lines from a real post (MS-02-Ultra issue 10, no GPU: a USB
// controller and a Thunderbolt bridge) and a real GPU's (returnn 1500).
func TestPortNamesTheDevicesBeforeIt(t *testing.T) {
	l := readString(t, strings.Join([]string{
		"Sep 22 09:59:09 pve kernel: xhci_hcd 0000:97:00.0: AER: can't recover (no error_detected callback)",
		"Sep 22 09:59:09 pve kernel: pcieport 0000:80:1b.4: AER: device recovery failed",
		"Sep 22 09:59:09 pve kernel: thunderbolt 0000:84:00.0: AER: can't recover (no error_detected callback)",
		"Sep 22 09:59:09 pve kernel: xhci_hcd 0000:97:00.0: AER: can't recover (no error_detected callback)",
		"Sep 22 09:59:09 pve kernel: pcieport 0000:80:1b.4: AER: device recovery failed",
		"[  +0.000844] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)",
		"[  +0.000001] snd_hda_intel 0000:03:00.1: AER: can't recover (no error_detected callback)",
		"[  +0.000008] pcieport 0000:00:03.0: AER: device recovery failed",
	}, "\n")+"\n")
	var ports []string
	for _, ev := range l.PCIeFatal {
		if ev.Driver == "pcieport" {
			ports = append(ports, ev.Device+" "+ev.DeviceDriver)
		}
	}
	if want := []string{"0000:97:00.0 xhci_hcd", "0000:84:00.0 thunderbolt", "0000:03:00.0 nvidia"}; !reflect.DeepEqual(ports, want) {
		t.Errorf("ports' devices %q, want %q", ports, want)
	}
}
