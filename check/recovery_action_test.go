package check

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// TestRecoveryActionsMatchNVML holds the hand-written recoveryActions to
// nvml.h's nvmlDeviceGpuRecoveryAction_t as the pinned go-nvml generates
// it from its copy of the header: every action but None has words and a
// remedy under its own code, and no code is there that NVML lacks.
func TestRecoveryActionsMatchNVML(t *testing.T) {
	want := map[gonvml.DeviceGpuRecoveryAction]string{
		gonvml.GPU_RECOVERY_ACTION_GPU_RESET:           "a GPU reset",
		gonvml.GPU_RECOVERY_ACTION_NODE_REBOOT:         "a node reboot",
		gonvml.GPU_RECOVERY_ACTION_DRAIN_P2P:           "peer-to-peer traffic drained",
		gonvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET:     "P2P drained and a GPU reset",
		gonvml.GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN: "the IMEX domain recovered",
		gonvml.GPU_RECOVERY_ACTION_BUS_RESET:           "a reset of the GPU's PCIe bus",
		gonvml.GPU_RECOVERY_ACTION_SYSTEM_REBOOT:       "a system reboot",
	}
	if len(recoveryActions) != len(want) {
		t.Errorf("recoveryActions has %d codes, nvml.h %d besides None", len(recoveryActions), len(want))
	}
	for code, words := range want {
		got, ok := recoveryActions[uint64(code)]
		if !ok || got[0] != words || got[1] == "" {
			t.Errorf("code %d: %q, want %q with a remedy", code, got, words)
		}
	}
	if _, ok := recoveryActions[uint64(gonvml.GPU_RECOVERY_ACTION_NONE)]; ok {
		t.Error("None (no action needed) is listed as an action")
	}
}
