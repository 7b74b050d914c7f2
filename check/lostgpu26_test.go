package check

import (
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// Issue 26: a lost GPU without an Xid line was missed (gpu.xid passed):
// the driver's NV_ERR_GPU_IS_LOST assertion, and a fatal PCIe error whose
// AER recovery failed (kernel/aer_test.go reads the lines).
func TestLostGPUWithoutXid(t *testing.T) {
	at := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	with := func(xids []state.XIDEvent, aer ...state.PCIeFatalEvent) *state.Node {
		return healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.Kernel = kernelState(86400, xids)
			n.Kernel.PCIeFatal = aer
		})
	}
	lost := state.XIDEvent{Message: "nvAssertOkFailedNoLog: Assertion failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST] (0x0000000F) returned from pRmApi->Control(...) @ rs_server.c:1411"}
	runCases(t, checkXID, []checkCase{
		{name: "NV_ERR_GPU_IS_LOST without an Xid fails", node: with([]state.XIDEvent{lost, lost}), status: Fail,
			summary: "a GPU the line does not name: GPU lost from the bus (the driver's NV_ERR_GPU_IS_LOST, no Xid line) (2 times)"},
		{name: "AER recovery failed on the GPU's own function fails naming it", node: with(nil,
			state.PCIeFatalEvent{Device: "0000:11:00.0", Driver: "nvidia", Message: "can't recover (no error_detected callback)"},
			state.PCIeFatalEvent{Device: "0000:11:00.0", Port: "0000:10:01.0", Driver: "pcieport", Message: "device recovery failed"}),
			status: Fail, summary: "GPU 1 (0000:11:00.0): uncorrectable PCIe error and the kernel's AER recovery failed (2 lines)", devices: []int{1}},
		{name: "the nvidia driver's own line on a GPU NVML no longer lists fails", node: with(nil,
			state.PCIeFatalEvent{Device: "0000:99:00.0", Driver: "nvidia", Message: "can't recover (no error_detected callback)"}),
			status: Fail, summary: "PCI 0000:99:00.0 (nvidia): uncorrectable PCIe error"},
		{name: "a port that names no device warns, naming the port", node: with(nil,
			state.PCIeFatalEvent{Port: "0000:80:01.0", Driver: "pcieport", Message: "device recovery failed"}),
			status: Warn, summary: "port 0000:80:01.0: uncorrectable PCIe error and the kernel's AER recovery failed; the log does not name the device"},
		{name: "a saved log: a port's device that cannot be told a GPU warns", node: func() *state.Node {
			n := with(nil, state.PCIeFatalEvent{Device: "0000:5d:00.0", Port: "0000:5c:00.0", Driver: "pcieport", Message: "device recovery failed"})
			n.NVML = nil
			return n
		}(), status: Warn, summary: "PCI 0000:5d:00.0 behind port 0000:5c:00.0: uncorrectable PCIe error"},
		// A NIC's fatal error is not a GPU's: NVML lists the GPUs.
		{name: "another device's failed recovery is not a GPU finding", node: with(nil,
			state.PCIeFatalEvent{Device: "0000:5d:00.0", Port: "0000:5c:00.0", Driver: "pcieport", Message: "device recovery failed"}),
			status: Pass},
		// hw3: a saved log's device line names its driver. Another
		// driver's device (a USB controller, the GPU board's HDMI audio)
		// and a port whose device line before it was another driver's are
		// no GPU finding; they failed as "(nvidia)".
		{name: "a saved log: another driver's device is no GPU finding", node: func() *state.Node {
			n := with(nil,
				state.PCIeFatalEvent{Device: "0000:97:00.0", Driver: "xhci_hcd", Message: "can't recover (no error_detected callback)"},
				state.PCIeFatalEvent{Device: "0000:97:00.0", Port: "0000:80:1b.4", Driver: "pcieport", DeviceDriver: "xhci_hcd", Message: "device recovery failed"})
			n.NVML = nil
			return n
		}(), status: Skip},
		{name: "a saved log: the GPU and its audio function, one finding on the GPU", node: func() *state.Node {
			n := with(nil,
				state.PCIeFatalEvent{Device: "0000:03:00.0", Driver: "nvidia", Message: "can't recover (no error_detected callback)"},
				state.PCIeFatalEvent{Device: "0000:03:00.1", Driver: "snd_hda_intel", Message: "can't recover (no error_detected callback)"},
				state.PCIeFatalEvent{Device: "0000:03:00.0", Port: "0000:00:03.0", Driver: "pcieport", DeviceDriver: "nvidia", Message: "device recovery failed"})
			n.NVML = nil
			return n
		}(), status: Fail, summary: "PCI 0000:03:00.0 (nvidia): uncorrectable PCIe error and the kernel's AER recovery failed (2 lines)"},
	})
}
