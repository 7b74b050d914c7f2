package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

// Not read is not "no errors" (issue 26): NVLink error counters the driver
// did not give (NOT_SUPPORTED on Blackwell's legacy per-link counters, per
// nvml.h) or a failed call are named, and the check does not pass on them.
// Each case passed with "no NVLink errors ... on N links" before.
func TestNVLinkErrorsNotRead(t *testing.T) {
	const call = "nvmlDeviceGetNvLinkErrorCounter"
	links := func(n int, read bool) []state.NVLink {
		out := make([]state.NVLink, n)
		for i := range out {
			out[i] = state.NVLink{Link: i, Up: true}
			if read {
				out[i].CRCFlitErrors, out[i].CRCDataErrors, out[i].ReplayErrors, out[i].RecoveryErrors = u64(0), u64(0), u64(0), u64(0)
			}
		}
		return out
	}
	t.Run("NOT_SUPPORTED everywhere: skip", func(t *testing.T) {
		n := healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].NVLinks = links(18, false)
				n.NVML.GPUs[i].Unsupported = append(n.NVML.GPUs[i].Unsupported, call)
			}
		})
		r := checkNVLinkErrors(n, DefaultConfig())
		if r.Status != Skip || strings.Contains(r.Summary, "no NVLink errors") || !strings.Contains(r.Summary, "NOT_SUPPORTED") || !strings.Contains(r.Summary, "links 0-17") {
			t.Errorf("%+v", r)
		}
	})
	t.Run("call failed: warn", func(t *testing.T) {
		n := healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].NVLinks = links(4, i != 1)
			}
			n.NVML.GPUs[1].Errors = append(n.NVML.GPUs[1].Errors, state.CallError{Call: call, Error: "Unknown Error"})
		})
		r := checkNVLinkErrors(n, DefaultConfig())
		if r.Status != Warn || !strings.Contains(r.Summary, "could not read") || !strings.Contains(r.Summary, "Unknown Error") {
			t.Errorf("%+v", r)
		}
	})
	t.Run("some counters not read: named beside the pass", func(t *testing.T) {
		n := healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].NVLinks = links(2, true)
			}
			n.NVML.GPUs[0].NVLinks[1].CRCDataErrors = nil
			n.NVML.GPUs[0].Unsupported = append(n.NVML.GPUs[0].Unsupported, call)
		})
		r := checkNVLinkErrors(n, DefaultConfig())
		if r.Status != Pass || !strings.Contains(r.Summary, "GPU 0: CRC data on link 1") {
			t.Errorf("%+v", r)
		}
	})
}
