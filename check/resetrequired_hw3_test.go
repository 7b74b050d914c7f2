package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

// hw3: the driver's "Assertion failed: Reset required [NV_ERR_RESET_REQUIRED]"
// line, logged with no Xid (a GB200's and an 8-GPU node's bad GPU, CUDA
// "busy or unavailable"), was not read and gpu.xid passed. nvml.h:
// NVML_ERROR_RESET_REQUIRED, "The GPU requires a reset before it can be used
// again". It fails on its own; it joins an Xid that already asked for the
// reset (a 154, a RESET_GPU-class code, a lost GPU); a later driver load,
// which resets every GPU, answers it.
func TestResetRequiredWithoutXid(t *testing.T) {
	assert := state.XIDEvent{Message: "nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ kernel_channel.c:2827"}
	with := func(k *state.Kernel) *state.Node {
		return healthy(func(n *state.Node) { n.Kernel = k })
	}
	x62 := state.XIDEvent{Code: 62, BusID: "0000:11:00", Message: "3243ec3b 0000c3d8"}
	x154 := state.XIDEvent{Code: 154, BusID: "0000:11:00", Message: "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"}
	runCases(t, checkXID, []checkCase{
		{name: "alone it fails, naming no GPU", node: with(kernelState(86400, []state.XIDEvent{assert, assert})), status: Fail,
			summary: "a GPU the line does not name: the driver says the GPU requires a reset before it can be used again (NV_ERR_RESET_REQUIRED, no Xid line) (2 times)",
			remedy:  "drain and reset the GPU"},
		{name: "after an Xid 62 it is that reset", node: with(kernelState(86400, []state.XIDEvent{x62, assert})), status: Fail,
			summary: "Xid 62", devices: []int{1}},
		{name: "after an Xid 154 asking for a reset it is that reset", node: with(kernelState(86400, []state.XIDEvent{x154, assert})), status: Fail,
			summary: "Xid 154: the driver now requires a GPU reset", devices: []int{1}},
		{name: "a later driver load answers it", node: with(reloadedLog([]state.XIDEvent{assert}, nil)), status: Pass},
	})
	// The joined line adds no finding of its own.
	r := checkXID(with(kernelState(86400, []state.XIDEvent{x62, assert})), DefaultConfig())
	for _, d := range r.Details {
		if strings.Contains(d, "NV_ERR_RESET_REQUIRED") {
			t.Errorf("the reset-required line after Xid 62 is a finding of its own: %q", d)
		}
	}
}

// hw3: an error-containment Xid's own flags. The driver prints "RST: Yes"
// and "D-RST: Yes" from the flags it marks the GPU with (open-gpu-kernel-
// modules kern_gpu_ga100.c, _gpuGenerateErrorLog_GA100): a contained Xid
// 94 so marked needs the reset, whatever RESTART_APP says for the usual
// "RST: No, D-RST: No" (NVIDIA's own example lines, the same file).
func TestContainmentResetFlags(t *testing.T) {
	line := func(code int, msg string) state.XIDEvent {
		return state.XIDEvent{Code: code, BusID: "0000:11:00", PID: 7062, Message: msg}
	}
	with := func(evs ...state.XIDEvent) *state.Node {
		return healthy(func(n *state.Node) { n.Kernel = kernelState(86400, evs) })
	}
	runCases(t, checkXID, []checkCase{
		{name: "NVIDIA's example 94, RST: No: the application's", node: with(line(94, "Contained: CE User Channel (0x9). RST: No, D-RST: No")),
			status: Warn, summary: "Xid 94", devices: []int{1}},
		{name: "a 94 the driver marked for reset fails", node: with(line(94, "Contained: CE User Channel (0x9). RST: Yes, D-RST: No")),
			status: Fail, summary: "the driver marked the GPU for reset (RST: Yes)", remedy: "nvidia-smi -r", devices: []int{1}},
		{name: "a 94 marked for drain and reset fails", node: with(line(94, "Contained: SM (0x1). RST: No, D-RST: Yes")),
			status: Fail, summary: "drain and reset (D-RST: Yes)", remedy: "drain the GPU", devices: []int{1}},
		{name: "NVIDIA's example 95 keeps its own remedy", node: with(line(95, "Uncontained: LTC TAG (0x2,0x1). RST: Yes, D-RST: No")),
			status: Fail, summary: "RST: Yes", remedy: "RMA", devices: []int{1}},
	})
}
