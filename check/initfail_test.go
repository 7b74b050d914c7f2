package check

import (
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// gpu.xid on the driver's failed GPU initialisations (docs/checks.md): the
// log says the driver failed to initialise a GPU; NVML says whether it is
// up now. A success is never logged (kernel-open/nvidia/nv.c).
func TestXIDInitFailures(t *testing.T) {
	at := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	fail := func(bus string, lines int) state.InitFailureEvent {
		return state.InitFailureEvent{BusID: bus, Message: "RmInitAdapter failed! (0x22:0x56:894)", Lines: lines, Time: at.Add(-time.Hour)}
	}
	live := func(mut func(n *state.Node), evs ...state.InitFailureEvent) *state.Node {
		return healthy(func(n *state.Node) {
			n.CollectedAt = at
			n.Kernel = kernelState(86400, nil)
			n.Kernel.XIDs = []state.XIDEvent{}
			n.Kernel.InitFailures = evs
			if mut != nil {
				mut(n)
			}
		})
	}
	runCases(t, checkXID, []checkCase{
		{name: "came up later: NVML reaches it", node: live(nil, fail("0000:11:00.0", 2)), status: Warn,
			summary: `GPU 1 (0000:11:00.0): the driver failed to initialise the GPU ("RmInitAdapter failed! (0x22:0x56:894)", 2 line(s)); NVML reaches it now`, devices: []int{1}},
		{name: "listed but unreachable", node: live(func(n *state.Node) { n.NVML.GPUs[1].Unreachable = true }, fail("0000:11:00.0", 1)), status: Fail,
			summary: "and NVML cannot use it", devices: []int{1}},
		{name: "not listed by NVML", node: live(nil, fail("0000:12:00.0", 6)), status: Fail,
			summary: `PCI 0000:12:00.0: the driver failed to initialise the GPU ("RmInitAdapter failed! (0x22:0x56:894)", 6 line(s)), and NVML does not list it`, remedy: "drain"},
		{name: "counted across driver loads", node: live(nil, fail("0000:12:00.0", 2), func() state.InitFailureEvent { e := fail("0000:12:00.0", 3); e.DriverLoad = 1; return e }()),
			status: Fail, summary: "5 line(s)"},
		{name: "outside the window", node: live(nil, fail("0000:12:00.0", 6)), cfg: func(c *Config) { c.XID.Window = 30 * time.Minute }, status: Pass},
		{name: "line names no GPU", node: live(nil, state.InitFailureEvent{Message: "RmInitAdapter failed! (0x23:0x56:451)", Lines: 1}), status: Warn,
			summary: "a GPU the line does not name: the driver failed to initialise the GPU"},
		// An older driver names the GPU by its device minor number only:
		// NVML's minor numbers (nvmlDeviceGetMinorNumber) map it, where the
		// log is this node's and of the driver loaded now.
		{name: "by minor number: NVML reaches it", node: live(minors(nil), unnamed(0, 1)), status: Warn,
			summary: `GPU 1 (0000:11:00.0): the driver failed to initialise the GPU ("RmInitAdapter failed! (0x23:0x56:451)", 2 line(s); device minor number 1, NVML's minor number for this GPU); NVML reaches it now`, devices: []int{1}},
		{name: "by minor number: NVML cannot use it", node: live(minors(func(n *state.Node) { n.NVML.GPUs[1].Lost = true }), unnamed(0, 1)), status: Fail,
			summary: "NVML's minor number for this GPU), and NVML cannot use it", devices: []int{1}},
		{name: "by minor number: none of NVML's", node: live(minors(nil), unnamed(0, 9)), status: Warn,
			summary: `a GPU the line names by device minor number only (9), matched to no one GPU NVML lists now (one it does not list, several GPUs' lines, or a driver load ago): the driver failed`},
		{name: "by minor number: a driver load ago", node: live(minors(func(n *state.Node) { n.Kernel.DriverLoads = 1 }), unnamed(0, 1)), status: Warn,
			summary: "a GPU the line names by device minor number only (1), matched to no one GPU"},
		{name: "by minor number: several GPUs' lines", node: live(minors(nil), unnamed(0, 1, 2)), status: Warn,
			summary: "a GPU the line names by device minor number only (1,2), matched to no one GPU"},
		{name: "by minor number: a saved log on this node", node: live(minors(func(n *state.Node) { n.Kernel.XIDSource = "file:ticket.log" }), unnamed(0, 1)), status: Warn,
			summary: "a GPU the line names by device minor number only (1): the driver failed"},
		// Inside a job NVML refuses the other jobs' GPUs, which then have no
		// bus ID: the failure may be one of theirs.
		{name: "scoped run, a GPU closed to it", node: live(func(n *state.Node) {
			n.Scope = "SLURM_JOB_GPUS=0"
			n.NVML.GPUs[1] = state.GPU{Index: 1, Denied: true}
		}, fail("0000:11:00.0", 1)), status: Pass},
		{name: "unscoped, a GPU without a bus ID", node: live(func(n *state.Node) {
			n.NVML.GPUs[1] = state.GPU{Index: 1, Unreachable: true}
		}, fail("0000:11:00.0", 1)), status: Warn, summary: "whether it is one of them is not known here"},
		// A job's device cgroup (here an ssh session pam_slurm_adopt put in
		// it) makes NVML list only the job's GPUs: the failed one may be
		// another job's, up and busy now.
		{name: "not listed, in a job's cgroup", node: live(func(n *state.Node) {
			n.Slurm = &slurmstate.State{Task: &slurmstate.Task{CgroupJobID: "77"}}
		}, fail("0000:12:00.0", 6)), status: Warn, summary: "NVML does not list it, but Slurm job 77's cgroup (this process runs in it) may hide it from NVML"},
		{name: "now bound to vfio-pci", node: live(func(n *state.Node) {
			n.Topology = &topostate.Topology{PCIGPUs: []topostate.PCIFunction{{BusID: "0000:12:00.0", Driver: "vfio-pci"}}}
		}, fail("0000:12:00.0", 1)), status: Pass},
		// An admin excluded the failing GPU (NVreg_ExcludedGpus; NVML
		// lists it as excluded): out of service, no drain.
		{name: "now excluded by the driver", node: live(func(n *state.Node) {
			n.NVML.Excluded, n.NVML.ExcludedKnown = []string{"0000:12:00.0"}, true
		}, fail("0000:12:00.0", 6)), status: Warn,
			summary: "PCI 0000:12:00.0: the driver failed to initialise the GPU (\"RmInitAdapter failed! (0x22:0x56:894)\", 6 line(s)); the driver excludes it now (NVreg_ExcludedGpus): an admin took it out of service"},
		{name: "another GPU excluded: still fails", node: live(func(n *state.Node) {
			n.NVML.Excluded, n.NVML.ExcludedKnown = []string{"0000:13:00.0"}, true
		}, fail("0000:12:00.0", 6)), status: Fail, summary: "and NVML does not list it"},
		// A saved log: read, its outcome unknown.
		{name: "saved log", node: &state.Node{Kernel: &state.Kernel{XIDs: []state.XIDEvent{}, InitFailures: []state.InitFailureEvent{fail("0000:01:00.0", 6)}}},
			status: Warn, summary: "PCI 0000:01:00.0: the driver failed to initialise the GPU (\"RmInitAdapter failed! (0x22:0x56:894)\", 6 line(s)); whether a later try brought it up the log cannot say"},
	})
}

// unnamed is an older driver's failure on the GPUs of these device minor
// numbers, in driver load load.
func unnamed(load int, minor ...int) state.InitFailureEvent {
	return state.InitFailureEvent{Message: "RmInitAdapter failed! (0x23:0x56:451)", Lines: 2, Minors: minor, DriverLoad: load,
		Time: time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)}
}

// minors gives NVML's GPUs their device minor numbers (GPU i: minor i),
// then runs mut.
func minors(mut func(n *state.Node)) func(n *state.Node) {
	return func(n *state.Node) {
		for i := range n.NVML.GPUs {
			m := i
			n.NVML.GPUs[i].Minor = &m
		}
		if mut != nil {
			mut(n)
		}
	}
}
