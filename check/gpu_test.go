package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

func u64(v uint64) *uint64 { return &v }

// node builds a healthy two-GPU node; each test case mutates it.
func node(mut func(n *state.Node)) *state.Node {
	n := &state.Node{SchemaVersion: state.SchemaVersion, NVML: &state.NVML{Available: true, DriverVersion: "550.54.15", CUDADriverVersion: "12.4"}}
	for i := 0; i < 2; i++ {
		n.NVML.GPUs = append(n.NVML.GPUs, state.GPU{
			Index: i, UUID: "GPU-" + string(rune('a'+i)), PCIBusID: "0000:1" + string(rune('0'+i)) + ":00.0",
			ECC: &state.ECC{EnabledCurrent: true, EnabledPending: true,
				Volatile:  state.ECCCounts{Corrected: u64(0), Uncorrected: u64(0)},
				Aggregate: state.ECCCounts{Corrected: u64(0), Uncorrected: u64(0)}},
			RemappedRows: &state.RemappedRows{},
		})
	}
	n.NVML.DeviceCount = 2
	if mut != nil {
		mut(n)
	}
	return n
}

type checkCase struct {
	name    string
	node    *state.Node
	cfg     func(*Config)
	status  Status
	summary string // substring
	remedy  string // substring; "" = not checked
	devices []int
}

func runCases(t *testing.T, run func(*state.Node, *Config) Result, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(cfg)
			}
			r := run(tc.node, cfg)
			if r.Status != tc.status {
				t.Fatalf("status = %s (%s), want %s", r.Status, r.Summary, tc.status)
			}
			if !strings.Contains(r.Summary, tc.summary) {
				t.Errorf("summary = %q, want it to contain %q", r.Summary, tc.summary)
			}
			var got []int
			for _, d := range r.Devices {
				got = append(got, d.Index)
			}
			if len(got) != len(tc.devices) {
				t.Fatalf("devices = %v, want %v", got, tc.devices)
			}
			for i := range got {
				if got[i] != tc.devices[i] {
					t.Errorf("devices = %v, want %v", got, tc.devices)
				}
			}
			if tc.remedy != "" && !strings.Contains(r.Remedy, tc.remedy) {
				t.Errorf("remedy = %q, want it to contain %q", r.Remedy, tc.remedy)
			}
			if (r.Status == Warn || r.Status == Fail) && r.Remedy == "" {
				t.Errorf("%s without a remedy", r.Status)
			}
		})
	}
}

func TestDriver(t *testing.T) {
	runCases(t, checkDriver, []checkCase{
		{name: "ok", node: node(nil), status: Pass, summary: "driver 550.54.15, CUDA 12.4"},
		{name: "no library", node: node(func(n *state.Node) {
			n.NVML = &state.NVML{Error: "cannot load libnvidia-ml.so.1: libnvidia-ml.so.1: cannot open shared object file"}
		}), status: Fail, summary: "libnvidia-ml.so.1: cannot open shared object file"},
		{name: "below minimum", node: node(nil), cfg: func(c *Config) { c.MinDriver = "550.90.07" }, status: Fail, summary: "older than the required 550.90.07"},
		{name: "at minimum", node: node(nil), cfg: func(c *Config) { c.MinDriver = "550.54.15" }, status: Pass},
		{name: "not collected", node: &state.Node{}, status: Skip},
	})
}

func TestCount(t *testing.T) {
	runCases(t, checkCount, []checkCase{
		{name: "ok", node: node(nil), status: Pass, summary: "2 GPUs reachable"},
		{name: "expected matches", node: node(nil), cfg: func(c *Config) { c.ExpectGPUs = 2 }, status: Pass, summary: "(expected 2)"},
		{name: "missing GPU", node: node(nil), cfg: func(c *Config) { c.ExpectGPUs = 8 }, status: Fail, summary: "NVML sees 2 GPUs, expected 8"},
		{name: "lost GPU", node: node(func(n *state.Node) { n.NVML.GPUs[1].Lost = true }), status: Fail, summary: "GPU 1 (0000:11:00.0): GPU is lost", devices: []int{1}},
		{name: "unreachable GPU", node: node(func(n *state.Node) {
			n.NVML.GPUs[0] = state.GPU{Index: 0, Unreachable: true, Errors: []state.CallError{{Call: "nvmlDeviceGetHandleByIndex", Error: "unknown NVML error"}}}
		}), status: Fail, summary: "nvmlDeviceGetHandleByIndex: unknown NVML error", devices: []int{0}},
		// Inside a job with ConstrainDevices NVML lists every GPU but refuses
		// a handle to the others (NO_PERMISSION): present, not broken.
		{name: "GPU closed by a device cgroup", node: node(func(n *state.Node) {
			n.NVML.GPUs[1] = state.GPU{Index: 1, Denied: true, Errors: []state.CallError{{Call: "nvmlDeviceGetHandleByIndex", Error: "no permission"}}}
		}), cfg: func(c *Config) { c.ExpectGPUs = 2 }, status: Pass, summary: "1 GPUs reachable, 1 more closed to this process"},
		{name: "no NVML", node: node(func(n *state.Node) { n.NVML = &state.NVML{} }), status: Skip, summary: "NVML unavailable"},
		// The platform's count where it is certain: a DGX by its DMI name.
		{name: "DGX H100 with 2 GPUs visible", node: dgxNode(nil), status: Fail,
			summary: `NVML sees 2 GPUs, expected 8 (platform dgx-h100: DMI "NVIDIA" "DGX H100" with NVIDIA H100 80GB HBM3)`},
		{name: "DGX H100 with its 8", node: dgxNode(func(n *state.Node) {
			for i := 2; i < 8; i++ {
				n.NVML.GPUs = append(n.NVML.GPUs, state.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3"})
			}
		}), status: Pass, summary: "8 GPUs reachable (expected 8, platform dgx-h100)"},
		{name: "expect_gpus wins over the platform", node: dgxNode(nil), cfg: func(c *Config) { c.ExpectGPUs = 2 }, status: Pass, summary: "(expected 2)"},
		// A job's Prolog judges its own GPUs, not the node's count.
		{name: "scoped run judges no count", node: dgxNode(func(n *state.Node) { n.Scope = "SLURM_JOB_GPUS=0,1" }), status: Pass, summary: "2 GPUs reachable"},
		// srun gpuprobe check in a ConstrainDevices step: NVML enumerates
		// only the step's GPUs (nvidia-smi -L renumbers them from 0 there:
		// NVIDIA/deepops#1102, guilbaults/slurm-job-exporter#63), so fewer
		// than the node's is what it is meant to see. The health check,
		// outside any job, judges the count.
		{name: "DGX in a job step: the node's count not judged", node: dgxNode(func(n *state.Node) {
			n.Slurm = &slurmstate.State{Env: &slurmstate.Env{JobID: "4242"}}
		}), status: Pass, summary: "2 GPUs reachable (the node's 8 not judged: the Slurm job step's device cgroup may hide the other GPUs from NVML)"},
		{name: "expect_gpus in a job's cgroup: not judged", node: node(func(n *state.Node) {
			n.Slurm = &slurmstate.State{Task: &slurmstate.Task{CgroupJobID: "77"}}
		}), cfg: func(c *Config) { c.ExpectGPUs = 8 }, status: Pass, summary: "the node's 8 not judged: Slurm job 77's cgroup"},
		// slurmd's Prolog has the job's ID but runs in slurmd's context,
		// where NVML sees every GPU: the count is judged.
		{name: "DGX in slurmd's Prolog: judged", node: dgxNode(func(n *state.Node) {
			n.Slurm = &slurmstate.State{Env: &slurmstate.Env{JobID: "4242", ScriptContext: "prolog_slurmd"}}
		}), status: Fail, summary: "NVML sees 2 GPUs, expected 8"},
		// More GPUs than expected is no view's doing.
		{name: "more than expected in a job step still fails", node: dgxNode(func(n *state.Node) {
			n.Slurm = &slurmstate.State{Env: &slurmstate.Env{JobID: "4242"}}
		}), cfg: func(c *Config) { c.ExpectGPUs = 1 }, status: Fail, summary: "NVML sees 2 GPUs, expected 1"},
		// An SXM model on a board the DMI does not name (HGX boards hold 4
		// or 8): no count expected.
		{name: "HGX board not identified", node: dgxNode(func(n *state.Node) { n.Topology.DMI.SysVendor = "Supermicro" }), status: Pass, summary: "2 GPUs reachable"},
		{name: "config names the board", node: dgxNode(func(n *state.Node) { n.Topology.DMI.SysVendor = "Supermicro" }),
			cfg: func(c *Config) { c.Platform.Profile = "hgx-h100-4" }, status: Fail, summary: "NVML sees 2 GPUs, expected 4 (platform hgx-h100-4: platform.profile hgx-h100-4 in the config)"},
	})
}

// dgxNode is node() named as a DGX H100's GPUs, with the DGX's DMI.
func dgxNode(mut func(n *state.Node)) *state.Node {
	return node(func(n *state.Node) {
		for i := range n.NVML.GPUs {
			n.NVML.GPUs[i].Name = "NVIDIA H100 80GB HBM3"
		}
		n.Topology = &topostate.Topology{DMI: &topostate.DMI{SysVendor: "NVIDIA", ProductName: "DGX H100"}}
		if mut != nil {
			mut(n)
		}
	})
}

func TestECC(t *testing.T) {
	runCases(t, checkECC, []checkCase{
		{name: "clean", node: node(nil), status: Pass, summary: "no uncorrectable ECC errors on 2 GPUs"},
		// A capture's "[Unknown Error]" is no "not supported": the skip
		// quotes what nvidia-smi printed and where (nvsmi/testdata/synthetic_unknowns.txt).
		{name: "capture printed an error", node: node(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].ECC.Volatile.Uncorrected = nil
				n.NVML.GPUs[i].Unsupported = []string{"nvmlDeviceGetTotalEccErrors"}
			}
			n.Capture = &state.Capture{Unknown: []state.CaptureUnknown{
				{GPU: 0, Call: "nvmlDeviceGetTotalEccErrors", Printed: "[Unknown Error]", Line: 50},
				{GPU: 1, Call: "nvmlDeviceGetTotalEccErrors"}}}
		}), status: Skip, summary: `ECC counters unknown: the capture prints "[Unknown Error]" (line 50)`},
		{name: "volatile uncorrectable", node: node(func(n *state.Node) { n.NVML.GPUs[1].ECC.Volatile.Uncorrected = u64(3) }),
			status: Fail, summary: "GPU 1 (0000:11:00.0): 3 uncorrectable ECC errors since the last reset", devices: []int{1}},
		{name: "threshold raised", node: node(func(n *state.Node) { n.NVML.GPUs[1].ECC.Volatile.Uncorrected = u64(3) }),
			cfg: func(c *Config) { c.ECC.VolatileUncorrectedFail = 5 }, status: Pass},
		// The lifetime count never resets: by default it is no finding (it
		// warned forever, and drained for good under --strict).
		// ... and is said, not hidden behind "no uncorrectable ECC errors"
		// (a real GH200 with one lifetime DRAM error, its row remapped:
		// nvsmi/testdata/gls_gh200_550.127.05_nvidia-smi-q.txt).
		{name: "lifetime history alone passes", node: node(func(n *state.Node) { n.NVML.GPUs[0].ECC.Aggregate.Uncorrected = u64(1) }),
			status: Pass, summary: "no uncorrectable ECC errors since the last reset on 2 GPUs; uncorrectable errors in the GPU's lifetime (aggregate, before the last reset; not judged: ecc.aggregate_uncorrected_warn is 0): GPU 0: 1"},
		{name: "lifetime history warns when asked", node: node(func(n *state.Node) { n.NVML.GPUs[0].ECC.Aggregate.Uncorrected = u64(1) }),
			cfg: func(c *Config) { c.ECC.AggregateUncorrectedWarn = 1 }, status: Warn, summary: "1 uncorrectable ECC errors in the GPU's lifetime", devices: []int{0}},
		{name: "corrected storm warns", node: node(func(n *state.Node) { n.NVML.GPUs[0].ECC.Volatile.Corrected = u64(20000) }),
			status: Warn, summary: "20000 corrected", devices: []int{0}},
		{name: "ecc disabled", node: node(func(n *state.Node) { n.NVML.GPUs[0].ECC.EnabledCurrent = false }),
			status: Warn, summary: "ECC is disabled", devices: []int{0}},
		{name: "unsupported everywhere", node: node(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].ECC = nil
				n.NVML.GPUs[i].Unsupported = []string{"nvmlDeviceGetEccMode"}
			}
		}), status: Skip, summary: "ECC not supported"},
		{name: "counter call timed out", node: node(func(n *state.Node) {
			n.NVML.GPUs[0].ECC = nil
			n.NVML.GPUs[0].Errors = []state.CallError{{Call: "nvmlDeviceGetEccMode", Error: "no answer within 10s", Timeout: true}}
		}), status: Error, summary: "nvmlDeviceGetEccMode: no answer within 10s", devices: []int{0}},
		{name: "lost GPU left to gpu.count", node: node(func(n *state.Node) { n.NVML.GPUs[1].Lost = true; n.NVML.GPUs[1].ECC = nil }),
			status: Pass, summary: "on 1 GPUs"},
	})
}

// The SRAM flag, nvmlEccSramErrorStatus_t.bThresholdExceeded ("if the
// error threshold of field diag is exceeded", nvml.h), which NVIDIA's Xid
// 48 workflow checks before the RMA flow. It was not read: the exceeded
// rows passed.
func TestECCSRAMThreshold(t *testing.T) {
	sram := func(gpu int, s *state.SRAMECC, mut func(g *state.GPU)) *state.Node {
		return node(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].SRAMECC = &state.SRAMECC{}
			}
			n.NVML.GPUs[gpu].SRAMECC = s
			if mut != nil {
				mut(&n.NVML.GPUs[gpu])
			}
		})
	}
	runCases(t, checkECC, []checkCase{
		// The real H100: every sram_* counter 0, <sram_threshold_exceeded>No
		// (nvsmi/testdata/realgpu_h100_580.159.04_nvidia-smi-q-x.xml).
		{name: "flag clear", node: sram(0, &state.SRAMECC{}, nil), status: Pass, summary: "no uncorrectable ECC errors on 2 GPUs"},
		// Uncorrectable SRAM errors below the threshold are the Xid 48
		// workflow's "check the flag", not an RMA: the volatile counter
		// and gpu.xid judge the reset.
		{name: "SRAM errors, flag clear", node: sram(1, &state.SRAMECC{AggregateUncSecDed: 2}, nil), status: Pass},
		{name: "flag set", node: sram(1, &state.SRAMECC{AggregateUncSecDed: 3, ThresholdExceeded: true}, nil), status: Fail,
			summary: "SRAM error threshold of field diagnostics exceeded (3 uncorrectable SEC-DED", remedy: "field diagnostics", devices: []int{1}},
		// A lifetime flag: judged with ECC off too.
		{name: "flag set, ECC disabled", node: sram(0, &state.SRAMECC{ThresholdExceeded: true}, func(g *state.GPU) { g.ECC.EnabledCurrent = false }),
			status: Fail, devices: []int{0}},
		{name: "not supported", node: sram(0, nil, func(g *state.GPU) { g.Unsupported = []string{"nvmlDeviceGetSramEccErrorStatus"} }), status: Pass},
		// nvml.h: "Requires root/admin permissions": a user's run says so
		// and does not warn on every GPU.
		{name: "not root", node: sram(0, nil, func(g *state.GPU) {
			g.Errors = []state.CallError{{Call: "nvmlDeviceGetSramEccErrorStatus", Error: "no permission"}}
		}), status: Pass},
		{name: "call failed", node: sram(1, nil, func(g *state.GPU) {
			g.Errors = []state.CallError{{Call: "nvmlDeviceGetSramEccErrorStatus", Error: "unknown error"}}
		}), status: Warn, summary: "could not read the SRAM error-threshold flag: nvmlDeviceGetSramEccErrorStatus: unknown error", devices: []int{1}},
	})
}

func TestRowRemap(t *testing.T) {
	runCases(t, checkRowRemap, []checkCase{
		{name: "clean", node: node(nil), status: Pass, summary: "no pending or failed row remaps on 2 GPUs"},
		{name: "pending", node: node(func(n *state.Node) { n.NVML.GPUs[1].RemappedRows.Pending = true }),
			status: Fail, summary: "GPU 1 (0000:11:00.0): row remap pending", devices: []int{1}},
		{name: "failure", node: node(func(n *state.Node) { n.NVML.GPUs[0].RemappedRows.Failure = true }),
			status: Fail, summary: "row remap failure", devices: []int{0}},
		{name: "remapped but healthy", node: node(func(n *state.Node) { n.NVML.GPUs[0].RemappedRows.Uncorrectable = 3 }), status: Pass},
		{name: "pre-Ampere", node: node(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].RemappedRows = nil
				n.NVML.GPUs[i].Unsupported = append(n.NVML.GPUs[i].Unsupported, "nvmlDeviceGetRemappedRows")
			}
		}), status: Skip, summary: "row remapping not supported"},
		// Issue 26, "not read" is its own status: absent with no reason
		// recorded is not "not supported" (it was, before).
		{name: "absent, no reason recorded", node: node(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].RemappedRows = nil
			}
		}), status: Skip, summary: "row remapping not read: no value and no reason recorded"},
		// A call that timed out earlier on the GPU: NVML refuses its later
		// calls without an error of their own. That is "could not read",
		// an error, not a "not supported" skip (it was, before).
		{name: "GPU hung earlier in the run", node: node(func(n *state.Node) {
			n.NVML.GPUs[1].RemappedRows = nil
			n.NVML.GPUs[1].Errors = []state.CallError{{Call: "nvmlDeviceGetEccMode", Error: "no answer in 10s", Timeout: true}}
		}), status: Error, summary: "could not read row remapping: NVML refused the GPU's later calls after nvmlDeviceGetEccMode timed out", devices: []int{1}},
		// MIG on: the GPU-level counters are not readable; say unknown and
		// why, not "not supported" as if the GPU had none (it was silent).
		{name: "MIG enabled", node: node(func(n *state.Node) {
			for i := range n.NVML.GPUs {
				n.NVML.GPUs[i].RemappedRows = nil
				n.NVML.GPUs[i].MIG = &state.MIG{Current: true}
			}
		}), status: Skip, summary: "row remapping unknown: not readable while MIG is enabled"},
	})
}

func TestRowRemapRemedies(t *testing.T) {
	pending := checkRowRemap(node(func(n *state.Node) { n.NVML.GPUs[1].RemappedRows.Pending = true }), DefaultConfig())
	if !strings.Contains(pending.Remedy, "reset the GPU") {
		t.Errorf("pending remedy = %q", pending.Remedy)
	}
	failed := checkRowRemap(node(func(n *state.Node) { n.NVML.GPUs[1].RemappedRows.Failure = true }), DefaultConfig())
	// Issue 26: not "replace the GPU" as fact; field diagnostics decide.
	if !strings.Contains(failed.Remedy, "reset the GPU") || !strings.Contains(failed.Remedy, "field diagnostics") {
		t.Errorf("failure remedy = %q", failed.Remedy)
	}
}

func TestVersionLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"535.104.05", "550.54.15", true}, {"550.54.15", "550.54.15", false}, {"550.100", "550.54.15", false}, {"470", "470.1", true}} {
		if got := versionLess(tc.a, tc.b); got != tc.want {
			t.Errorf("versionLess(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

func TestDriverModuleMismatch(t *testing.T) {
	runCases(t, checkDriver, []checkCase{
		{name: "match", node: healthy(func(n *state.Node) { n.Kernel = &state.Kernel{ModuleVersion: "550.54.15"} }), status: Pass},
		{name: "mismatch", node: healthy(func(n *state.Node) { n.Kernel = &state.Kernel{ModuleVersion: "535.161.08"} }),
			status: Fail, summary: "kernel module 535.161.08 but NVML library 550.54.15"},
	})
}
