package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

// Issue 26, item 3: "not read" is a status of its own in every check's
// evidence. A value a rule needs and could not get is named; a failed
// call warns ("could not read X"), NOT_SUPPORTED (a GeForce's ECC, an old
// board's replay counter) is said beside the pass, and neither is counted
// as judged. Every row here passed, silently, before: the old summary
// counted the GPU as judged or said nothing of the value.
func TestIssue26NotRead(t *testing.T) {
	callErr := func(call string) []state.CallError {
		return []state.CallError{{Call: call, Error: "Unknown Error"}}
	}
	for _, tc := range []struct {
		name    string
		run     func(*state.Node, *Config) Result
		node    *state.Node
		status  Status
		summary []string // substrings of the summary
	}{
		{"ecc: corrected counter call failed", checkECC, healthy(func(n *state.Node) {
			n.NVML.GPUs[1].ECC.Volatile.Corrected = nil
			n.NVML.GPUs[1].Errors = callErr("nvmlDeviceGetTotalEccErrors")
		}), Warn, []string{"could not read the volatile corrected ECC counter: nvmlDeviceGetTotalEccErrors: Unknown Error"}},
		{"ecc: one GPU without ECC (GeForce)", checkECC, healthy(func(n *state.Node) {
			n.NVML.GPUs[1].ECC = nil
			n.NVML.GPUs[1].Unsupported = []string{"nvmlDeviceGetEccMode"}
		}), Pass, []string{"no uncorrectable ECC errors on 1 GPUs", "not judged: GPU 1 (0000:11:00.0): ECC not supported"}},
		{"pcie: replay counter call failed", checkPCIeLink, healthy(func(n *state.Node) {
			n.NVML.GPUs[0].PCIe.ReplayCounter = nil
			n.NVML.GPUs[0].Errors = callErr("nvmlDeviceGetPcieReplayCounter")
		}), Warn, []string{"could not read the PCIe replay counter"}},
		{"pcie: replay counter not supported", checkPCIeLink, healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].PCIe.ReplayCounter = nil
				n.NVML.GPUs[i].Unsupported = []string{"nvmlDeviceGetPcieReplayCounter"}
			}
			n.Kernel = &state.Kernel{UptimeSeconds: 3600}
		}), Pass, []string{"PCIe links at full width on 2 GPUs", "not judged: GPUs 0,1: the PCIe replay counter not supported"}},
		{"pcie: uptime unknown, counter read", checkPCIeLink, healthy(func(n *state.Node) {
			*n.NVML.GPUs[0].PCIe.ReplayCounter = 50000
		}), Pass, []string{"replay rate not judged on 2 GPU(s): the counter counts since boot and the kernel's uptime is not known"}},
		{"pcie: link state partly failed", checkPCIeLink, healthy(func(n *state.Node) {
			n.NVML.GPUs[1].PCIe = nil
			n.NVML.GPUs[1].Errors = callErr("nvmlDeviceGetMaxPcieLinkGeneration")
		}), Error, []string{"could not read PCIe link state: nvmlDeviceGetMaxPcieLinkGeneration: Unknown Error"}},
		{"power: limit call failed", checkPower, healthy(func(n *state.Node) {
			n.NVML.GPUs[0].Power.LimitWatts = nil
			n.NVML.GPUs[0].Errors = callErr("nvmlDeviceGetEnforcedPowerLimit")
		}), Warn, []string{"could not read the enforced power limit"}},
		{"power: limit not supported", checkPower, healthy(func(n *state.Node) {
			n.NVML.GPUs[0].Power.LimitWatts = nil
			n.NVML.GPUs[0].Unsupported = []string{"nvmlDeviceGetEnforcedPowerLimit"}
		}), Pass, []string{"not judged: GPU 0 (0000:10:00.0): the enforced power limit not supported"}},
		{"temperature: threshold call failed, no config", checkTemperature, healthy(func(n *state.Node) {
			n.NVML.GPUs[1].Thermal.SlowdownC = nil
			n.NVML.GPUs[1].Errors = callErr("nvmlDeviceGetTemperatureThreshold")
		}), Warn, []string{"could not read the slowdown threshold (30 °C judged against nothing)"}},
		{"temperature: threshold not supported, no config", checkTemperature, healthy(func(n *state.Node) {
			n.NVML.GPUs[1].Thermal.SlowdownC = nil
			n.NVML.GPUs[1].Unsupported = []string{"nvmlDeviceGetTemperatureThreshold"}
		}), Pass, []string{"not judged: GPU 1 (0000:11:00.0): the slowdown threshold (30 °C judged against nothing) not supported"}},
		{"processes: memory call failed", checkProcesses, healthy(func(n *state.Node) {
			n.NVML.GPUs[0].Memory = nil
			n.NVML.GPUs[0].Errors = callErr("nvmlDeviceGetMemoryInfo_v2")
		}), Warn, []string{"could not read memory in use: nvmlDeviceGetMemoryInfo_v2: Unknown Error"}},
		{"driver: version not read, no min_driver: NVML loads", checkDriver, healthy(func(n *state.Node) { n.NVML.DriverVersion = "" }),
			Pass, []string{"driver n/a"}},
		{"processes: memory not supported", checkProcesses, healthy(func(n *state.Node) {
			n.NVML.GPUs[0].Memory = nil
			n.NVML.GPUs[0].Unsupported = []string{"nvmlDeviceGetMemoryInfo"}
		}), Pass, []string{"1 GPUs idle, 1 with no compute process (memory in use not read)", "memory in use not supported"}},
		{"fabric: call failed on one GPU", checkFabric, healthy(func(n *state.Node) {
			n.NVML.GPUs[1].Fabric = nil
			n.NVML.GPUs[1].Errors = callErr("nvmlDeviceGetGpuFabricInfo_v4")
		}), Error, []string{"could not read fabric registration: nvmlDeviceGetGpuFabricInfo_v4: Unknown Error"}},
		{"fabric: not supported on a PCIe board stays no fabric", checkFabric, healthy(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].Fabric = nil
				n.NVML.GPUs[i].Unsupported = []string{"nvmlDeviceGetGpuFabricInfo_v4"}
			}
		}), Skip, []string{"no NVSwitch fabric on this node"}},
		{"persistence: NOT_SUPPORTED before a later call hung stays not supported", checkPersistence, healthy(func(n *state.Node) {
			n.NVML.GPUs[1].PersistenceMode = nil
			n.NVML.GPUs[1].Unsupported = []string{"nvmlDeviceGetPersistenceMode"}
			n.NVML.GPUs[1].Errors = []state.CallError{{Call: "nvmlDeviceGetTemperature", Error: "no answer within 10s", Timeout: true}}
		}), Pass, []string{"not judged: GPU 1 (0000:11:00.0): persistence mode not supported"}},
		{"persistence: one GPU not supported", checkPersistence, healthy(func(n *state.Node) {
			n.NVML.GPUs[0].PersistenceMode = nil
			n.NVML.GPUs[0].Unsupported = []string{"nvmlDeviceGetPersistenceMode"}
		}), Pass, []string{"persistence mode on for 1 GPUs", "not judged: GPU 0 (0000:10:00.0): persistence mode not supported"}},
		{"throttle: reasons of one GPU not read, no reason recorded", checkThrottle, healthy(func(n *state.Node) {
			n.NVML.GPUs[1].ClockEvents = nil
		}), Pass, []string{"no hardware or thermal slowdown on 1 GPUs", "clock event reasons not read: no value and no reason recorded"}},
		{"persistence: GPU hung before the call", checkPersistence, healthy(func(n *state.Node) {
			n.NVML.GPUs[1].PersistenceMode = nil
			n.NVML.GPUs[1].Errors = []state.CallError{{Call: "nvmlDeviceGetMemoryInfo_v2", Error: "no answer within 10s", Timeout: true}}
		}), Error, []string{"could not read persistence mode: NVML refused the GPU's later calls after nvmlDeviceGetMemoryInfo_v2 timed out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run(tc.node, DefaultConfig())
			if r.Status != tc.status {
				t.Errorf("status %s, want %s: %s", r.Status, tc.status, r.Summary)
			}
			for _, s := range tc.summary {
				if !strings.Contains(r.Summary, s) {
					t.Errorf("summary %q lacks %q", r.Summary, s)
				}
			}
			if r.Status == Warn && r.Remedy == "" {
				t.Errorf("a warning without a remedy: %+v", r)
			}
		})
	}
}

// gpu.driver: a version not read leaves min_driver unjudged (it passed),
// and a capture that does not print it (a fragment) says nothing of the
// driver (it passed "driver n/a").
func TestIssue26DriverNotRead(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MinDriver = "550.54.15"
	if r := checkDriver(healthy(func(n *state.Node) { n.NVML.DriverVersion = "" }), cfg); r.Status != Warn || !strings.Contains(r.Summary, "min_driver 550.54.15 not judged") {
		t.Errorf("live, version not read: %+v", r)
	}
	frag := healthy(func(n *state.Node) { n.NVML.DriverVersion = ""; n.Capture = &state.Capture{Format: "nvidia-smi -q"} })
	if r := checkDriver(frag, DefaultConfig()); r.Status != Skip || !strings.Contains(r.Summary, "not in the capture") {
		t.Errorf("capture without a version: %+v", r)
	}
}
