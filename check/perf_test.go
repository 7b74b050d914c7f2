package check

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// gpuTicks is one job GPU: utilisation per tick, memory used (GiB) of an
// 80 GiB GPU, and how many of the job's processes it runs.
type gpuTicks struct {
	util    []uint32
	memGiB  float64
	procs   int
	masks   []uint64 // clock event mask per tick (nil: not read)
	noUtil  bool
	noTotal bool
}

func perfNode(window float64, gpus []gpuTicks, cpu *state.JobCPU, mem *state.JobMemory, io *state.JobIO) *state.Node {
	p := &state.JobPerf{JobID: "4242", WindowSeconds: window, IntervalSeconds: 1, CPU: cpu, Memory: mem, IO: io}
	for i, g := range gpus {
		jg := state.JobGPU{Index: i, UUID: "GPU-" + itoa(i), PCIBusID: "0000:0" + itoa(i) + ":00.0", MemoryTotalBytes: 80 << 30}
		if g.noTotal {
			jg.MemoryTotalBytes = 0
		}
		for k := 0; k < g.procs; k++ {
			jg.JobPIDs = append(jg.JobPIDs, uint32(7000+10*i+k))
		}
		for t, u := range g.util {
			u, m := u, uint64(g.memGiB*(1<<30))
			s := state.GPUSample{At: time.Unix(int64(t), 0), MemoryUsedBytes: &m}
			if !g.noUtil {
				s.UtilGPUPercent = &u
				mu := u / 2
				s.UtilMemoryPercent = &mu
			}
			if t < len(g.masks) {
				mask := g.masks[t]
				s.ClockEventMask = &mask
				clk, maxClk := uint32(1200), uint32(1980)
				s.SMClockMHz, s.MaxSMClockMHz = &clk, &maxClk
			}
			jg.Samples = append(jg.Samples, s)
		}
		p.GPUs = append(p.GPUs, jg)
	}
	return &state.Node{JobPerf: p}
}

func ticks(u uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = u
	}
	return out
}

func four(u uint32, memGiB float64) []gpuTicks {
	return []gpuTicks{{util: ticks(u, 10), memGiB: memGiB, procs: 1}, {util: ticks(u, 10), memGiB: memGiB, procs: 1},
		{util: ticks(u, 10), memGiB: memGiB, procs: 1}, {util: ticks(u, 10), memGiB: memGiB, procs: 1}}
}

// cpuUse is a job with 32 CPUs that used pct of them over a 10 s window.
func cpuUse(pct float64) *state.JobCPU {
	return &state.JobCPU{AllocatedCPUs: "0-15,112-127", AllocatedCount: 32, UsedSeconds: 32 * 10 * pct / 100, From: "cpu.stat"}
}

func ioUse(dPerTick int, pressureSec *float64, fs ...state.JobFilesystem) *state.JobIO {
	return &state.JobIO{Ticks: 10, TaskSamples: 120, DStateTaskSamples: 10 * dPerTick, PressureSomeSeconds: pressureSec, Filesystems: fs}
}

func f64(v float64) *float64 { return &v }

var nfsData = state.JobFilesystem{Type: "nfs4", MountPoint: "/data", Source: "storage:/export/data", OpenFiles: 8, ReadBytes: 900 << 20}
var ext4Data = state.JobFilesystem{Type: "ext4", MountPoint: "/local", OpenFiles: 8, ReadBytes: 900 << 20}

func TestPerfBottleneck(t *testing.T) {
	runCases(t, checkBottleneck, []checkCase{
		{name: "not sampled", node: &state.Node{}, status: Skip, summary: "no running job sampled"},
		{name: "no GPU", node: perfNode(10, nil, cpuUse(50), nil, nil), status: Skip, summary: "no GPU on this node"},
		{name: "too few readings", node: perfNode(2, []gpuTicks{{util: ticks(5, 2), memGiB: 10, procs: 1}}, cpuUse(99), nil, nil), status: Skip, summary: "too few GPU readings"},
		{name: "utilisation unsupported", node: perfNode(10, []gpuTicks{{util: ticks(5, 10), noUtil: true, procs: 1}}, cpuUse(99), nil, nil), status: Skip, summary: "0 utilisation readings"},
		{name: "GPU-bound", node: perfNode(10, four(97, 60), cpuUse(35), nil, ioUse(0, nil)), status: Pass, summary: "GPU-bound: GPUs 0,1,2,3 97% busy on average; nothing to fix here (CPUs 35% of 32 allocated, 0.0 task(s) in I/O wait)"},
		{name: "one GPU busy, one at 79 is not GPU-bound", node: perfNode(10, []gpuTicks{{util: ticks(97, 10), memGiB: 60, procs: 1}, {util: ticks(79, 10), memGiB: 60, procs: 1}}, cpuUse(30), nil, nil), status: Pass, summary: "no bottleneck found"},
		{name: "CPU-bound input pipeline", node: perfNode(10, four(12, 48), cpuUse(98), nil, ioUse(0, nil)), status: Warn,
			summary: "input pipeline CPU-bound: GPUs 0,1,2,3 12% busy on average while the job's 32 CPUs are 98% used", remedy: "--cpus-per-task"},
		{name: "CPUs at 89% are not saturated", node: perfNode(10, four(12, 48), cpuUse(89), nil, ioUse(0, nil)), status: Warn, summary: "the cause is unknown: CPUs 89% of 32 allocated", remedy: "profile"},
		{name: "I/O-bound on NFS", node: perfNode(10, four(8, 48), cpuUse(15), nil, ioUse(8, nil, ext4Data, state.JobFilesystem{Type: "nfs4", MountPoint: "/data", ReadBytes: 2000 << 20})), status: Warn,
			summary: "I/O-bound: GPUs 0,1,2,3 8% busy on average while 8.0 task(s) waiting for reads (state D), reading 200 MiB/s from nfs4 /data (a network filesystem)", remedy: "node-local storage"},
		{name: "I/O-bound on a local disk", node: perfNode(10, four(8, 48), cpuUse(15), nil, ioUse(3, nil, ext4Data)), status: Warn, summary: "from ext4 /local", remedy: "the local disk is the limit"},
		{name: "I/O pressure alone decides", node: perfNode(10, four(8, 48), cpuUse(15), nil, ioUse(0, f64(4), nfsData)), status: Warn, summary: "stalled on I/O 40% of the time"},
		{name: "I/O pressure below the threshold", node: perfNode(10, four(8, 48), cpuUse(15), nil, ioUse(0, f64(2), nfsData)), status: Warn, summary: "the cause is unknown"},
		{name: "lustre is a network filesystem", node: perfNode(10, four(8, 48), cpuUse(15), nil, ioUse(2, nil, state.JobFilesystem{Type: "lustre", MountPoint: "/lustre", ReadBytes: 10 << 20})), status: Warn, summary: "lustre /lustre (a network filesystem)"},
		{name: "I/O wait with no data file seen", node: perfNode(10, four(8, 48), cpuUse(15), nil, ioUse(2, nil)), status: Warn, summary: "where the reads come from is unknown"},
		{name: "both CPU and I/O", node: perfNode(10, four(8, 48), cpuUse(95), nil, ioUse(4, nil, nfsData)), status: Warn, summary: "input pipeline CPU-bound"},
		{name: "idle, host not read", node: perfNode(10, four(8, 48), nil, nil, nil), status: Warn, summary: "CPU and I/O counters could not be read"},
		{name: "unused GPUs are left out of the mean", node: perfNode(10, []gpuTicks{{util: ticks(96, 10), memGiB: 60, procs: 1}, {util: ticks(0, 10), memGiB: 0.5}}, cpuUse(10), nil, ioUse(0, nil)), status: Pass, summary: "GPU-bound: GPU 0 96% busy"},
		{name: "none in use, CPUs saturated", node: perfNode(10, []gpuTicks{{util: ticks(0, 10), memGiB: 0.5}}, cpuUse(99), nil, nil), status: Warn, summary: "input pipeline CPU-bound: GPU 0 0% busy while the job's 32 CPUs are 99% used"},
		{name: "none in use, CPUs quiet", node: perfNode(10, []gpuTicks{{util: ticks(0, 10), memGiB: 0.5}}, cpuUse(20), nil, ioUse(0, nil)), status: Warn, summary: "GPU 0 0% busy, mostly idle; the cause is unknown"},
		{name: "idle threshold from config", node: perfNode(10, four(25, 48), cpuUse(98), nil, ioUse(0, nil)), cfg: func(c *Config) { c.Perf.IdlePercent = 20 }, status: Pass, summary: "no bottleneck found"},
	})
}

// realJob is the shape of the real runs on one H100 (driver 580, PyTorch,
// 16 CPUs, 2026-11-26; /work/realgpu): one GPU whose job process is pid 675,
// a window of window seconds, the cgroup's CPU time used over it and the
// busiest processes. The cgroup figures are gpuprobe's own (job_perf.cpu);
// the per-process split of the cpustarve run is ps's (pt_data_worker 99.6%,
// the run predates top_processes): 5.11 s of cgroup time in a 5.0 s window
// is 4.98 s for the worker and the rest for python3.
func realJob(window float64, util uint32, used float64, top ...state.JobProcess) *state.Node {
	n := perfNode(window, []gpuTicks{{util: ticks(util, 6), memGiB: 1.3, procs: 1}},
		&state.JobCPU{AllocatedCPUs: "0-15", AllocatedCount: 16, UsedSeconds: used, From: "cpu.stat", TopProcesses: top}, nil, ioUse(0, f64(0)))
	n.JobPerf.GPUs[0].JobPIDs = []uint32{675}
	return n
}

// cpuHot is cpuUse(pct) with the given busiest processes.
func cpuHot(pct float64, top ...state.JobProcess) *state.JobCPU {
	c := cpuUse(pct)
	c.TopProcesses = top
	return c
}

func proc(pid int32, comm string, cpuSeconds float64, threads int) state.JobProcess {
	return state.JobProcess{PID: pid, Comm: comm, CPUSeconds: cpuSeconds, Threads: threads}
}

// One process at one CPU while the job's other CPUs idle: today's verdict
// was "the cause is unknown" (it judged the job's 16 CPUs as a whole).
func TestPerfBottleneckOneHotProcess(t *testing.T) {
	worker := proc(697, "pt_data_worker", 4.98, 0)
	main := proc(675, "python3", 0.12, 0)
	runCases(t, checkBottleneck, []checkCase{
		{name: "real cpustarve: one loader worker at one CPU", node: realJob(5.000109899, 0, 5.108904, worker, main), status: Warn,
			summary: "one process is CPU-bound: pid 697 (pt_data_worker) kept one CPU 100% busy while the job's other 15 allocated CPUs were 0% busy (GPU 0 0% busy, mostly idle)",
			remedy:  "num_workers"},
		{name: "real cpustarve: the worker fix names DALI, not the GIL", node: realJob(5.000109899, 0, 5.108904, worker, main), status: Warn, summary: "pt_data_worker", remedy: "NVIDIA DALI"},
		{name: "real healthy: the main process at one CPU drives a busy GPU", node: realJob(10, 100, 13, proc(675, "python3", 9.9, 41), proc(700, "pt_data_worker", 0.9, 3)), status: Pass,
			summary: "GPU-bound: GPU 0 100% busy; nothing to fix here (CPUs 8% of 16 allocated"},
		{name: "real sleep-starve: no process busy, the cause stays unknown", node: realJob(10.001, 0, 0.02, proc(675, "python3", 0.02, 41)), status: Warn,
			summary: "GPU 0 0% busy, mostly idle; the cause is unknown: CPUs 0% of 16 allocated", remedy: "profile"},
		{name: "no process read: unknown as before", node: realJob(10, 0, 0.5), status: Warn, summary: "the cause is unknown"},
		{name: "the training process itself under the GIL", node: realJob(10, 6, 14.5, proc(675, "python3", 13.1, 41), proc(700, "pt_data_worker", 0.8, 3)), status: Warn,
			summary: "one process is CPU-bound: pid 675 (python3) used 1.3 CPUs [the process on the GPU, 41 threads] while the job's other 15 allocated CPUs were 1% busy", remedy: "GIL"},
		{name: "real H200 cpustarve: 1.04 CPUs read over a jittered window is one CPU", node: realJob(10.001, 0, 10.5, proc(641, "pt_data_worker", 10.4, 3), proc(614, "python3", 0.1, 41)), status: Warn,
			summary: "one process is CPU-bound: pid 641 (pt_data_worker) kept one CPU 100% busy [3 threads]"},
		{name: "real H200 final run: the worker forked 4 s into a 6 s window, one CPU since", node: realJob(6.001, 0, 6.1, state.JobProcess{PID: 641, Comm: "pt_data_worker", CPUSeconds: 4, SeenSeconds: 4, Threads: 3}, proc(512, "python3", 4.2, 41)), status: Warn,
			summary: "one process is CPU-bound: pid 641 (pt_data_worker) kept one CPU 100% busy over the last 4 s of the window (it started then) [3 threads]"},
		{name: "a process seen under half the window is not named", node: realJob(10, 0, 3, state.JobProcess{PID: 641, Comm: "pt_data_worker", CPUSeconds: 2, SeenSeconds: 2, Threads: 3}), status: Warn,
			summary: "the cause is unknown"},
		{name: "process below the threshold", node: realJob(10, 0, 9.5, proc(697, "pt_data_worker", 8.9, 3)), status: Warn, summary: "the cause is unknown"},
		{name: "process threshold from config", node: realJob(10, 0, 9.5, proc(697, "pt_data_worker", 8.5, 3)), cfg: func(c *Config) { c.Perf.ProcessCPUPercent = 80 },
			status: Warn, summary: "pid 697 (pt_data_worker) kept one CPU 85% busy [3 threads]"},
		{name: "a process on several CPUs runs in parallel: not one-CPU-bound", node: perfNode(10, four(8, 48), cpuHot(20, proc(900, "python3", 35, 64)), nil, ioUse(0, nil)), status: Warn, summary: "the cause is unknown"},
		{name: "two workers at one CPU each", node: perfNode(10, four(8, 48), cpuHot(7, proc(901, "pt_data_worker", 9.9, 2), proc(902, "pt_data_worker", 9.7, 2), proc(900, "python3", 1.5, 40)), nil, ioUse(0, nil)), status: Warn,
			summary: "2 processes are CPU-bound, one CPU each: pid 901 (pt_data_worker) kept one CPU 99% busy [2 threads], pid 902 (pt_data_worker) kept one CPU 97% busy [2 threads] while the job's other 30 allocated CPUs were 1% busy", remedy: "num_workers"},
		{name: "a saturated allocation stays job-wide CPU-bound", node: perfNode(10, four(8, 48), cpuHot(98, proc(901, "pt_data_worker", 10, 1)), nil, ioUse(0, nil)), status: Warn,
			summary: "input pipeline CPU-bound: GPUs 0,1,2,3 8% busy on average while the job's 32 CPUs are 98% used", remedy: "--cpus-per-task"},
		{name: "one allocated CPU is judged job-wide", node: perfNode(10, four(8, 48), &state.JobCPU{AllocatedCPUs: "3", AllocatedCount: 1, UsedSeconds: 8.5, From: "cpu.stat", TopProcesses: []state.JobProcess{proc(901, "x", 9.5, 1)}}, nil, ioUse(0, nil)), status: Warn, summary: "the cause is unknown"},
		{name: "I/O-bound and a hot process: both said", node: perfNode(10, four(8, 48), cpuHot(5, proc(901, "pt_data_worker", 9.5, 1)), nil, ioUse(4, nil, nfsData)), status: Warn,
			summary: "I/O-bound", remedy: "num_workers"},
		{name: "a hostile name is escaped", node: perfNode(10, four(8, 48), cpuHot(4, proc(901, "\x1b[2J\u202eevil", 9.5, 1)), nil, ioUse(0, nil)), status: Warn,
			summary: `pid 901 (\x1b[2J\u202eevil) kept one CPU 95% busy`},
	})
}

func TestPerfGPUsUsed(t *testing.T) {
	oneOfFour := []gpuTicks{{util: ticks(96, 10), memGiB: 56, procs: 1}, {util: ticks(0, 10), memGiB: 0.5}, {util: ticks(0, 10), memGiB: 0.5}, {util: ticks(0, 10), memGiB: 0.5}}
	dp := []gpuTicks{{util: ticks(96, 10), memGiB: 56, procs: 1}, {util: ticks(2, 10), memGiB: 20, procs: 1}}
	runCases(t, checkGPUsUsed, []checkCase{
		{name: "not sampled", node: &state.Node{}, status: Skip, summary: "no running job sampled"},
		{name: "all four used", node: perfNode(10, four(60, 40), nil, nil, nil), status: Pass, summary: "the job uses all 4 of its GPUs (0,1,2,3)"},
		{name: "one of four", node: perfNode(10, oneOfFour, nil, nil, nil), status: Warn, summary: "the job uses 1 of its 4 GPUs (GPU 0 busy; GPU 1,2,3 idle)", remedy: "torchrun", devices: []int{1, 2, 3}},
		{name: "a process that holds memory but runs nothing", node: perfNode(10, dp, nil, nil, nil), status: Warn, summary: "GPU 1 idle", devices: []int{1}},
		{name: "a GPU at 5% is working", node: perfNode(10, []gpuTicks{{util: ticks(96, 10), memGiB: 56, procs: 1}, {util: ticks(5, 10), memGiB: 20, procs: 1}}, nil, nil, nil), status: Pass, summary: "all 2"},
		{name: "nothing works", node: perfNode(10, []gpuTicks{{util: ticks(0, 10), memGiB: 0.5}, {util: ticks(1, 10), memGiB: 0.5}}, nil, nil, nil), status: Warn, summary: "did no work in the window", devices: []int{0, 1}},
	})
}

func TestPerfGPUFit(t *testing.T) {
	runCases(t, checkGPUFit, []checkCase{
		{name: "busy and full", node: perfNode(10, four(97, 60), nil, nil, nil), status: Pass, summary: "the 4 GPUs are needed"},
		{name: "oversized", node: perfNode(10, four(16, 7), nil, nil, nil), status: Warn,
			summary: "the job's work would fit on 1 of its 4 GPUs: together they hold 28.0 GiB (at most 9% of one GPU's memory each) and are 16% busy on average", remedy: "--gpus=1", devices: []int{0, 1, 2, 3}},
		{name: "oversized by memory but compute needs two", node: perfNode(10, four(29, 7), nil, nil, nil), status: Warn, summary: "would fit on 2 of its 4 GPUs", devices: []int{0, 1, 2, 3}},
		{name: "memory at the threshold keeps the GPUs", node: perfNode(10, four(16, 20), nil, nil, nil), status: Pass, summary: "up to 25% of their memory"},
		{name: "idle by utilisation but not light", node: perfNode(10, four(40, 7), nil, nil, nil), status: Pass, summary: "40% busy on average"},
		{name: "one GPU", node: perfNode(10, []gpuTicks{{util: ticks(10, 10), memGiB: 2, procs: 1}}, nil, nil, nil), status: Pass, summary: "works on 1 GPU"},
		{name: "memory total unknown", node: perfNode(10, []gpuTicks{{util: ticks(10, 10), memGiB: 2, procs: 1, noTotal: true}, {util: ticks(10, 10), memGiB: 2, procs: 1}}, nil, nil, nil), status: Skip, summary: "memory total was not read"},
	})
}

func TestPerfMemory(t *testing.T) {
	limit := uint64(256 << 30)
	mem := func(usedGiB float64, swapGiB uint64, events map[string]uint64, pressure *float64) *state.JobMemory {
		return &state.JobMemory{UsedBytes: uint64(usedGiB * (1 << 30)), LimitBytes: &limit, SwapBytes: u64(swapGiB << 30), Events: events, PressureSomeSeconds: pressure}
	}
	runCases(t, checkPerfMemory, []checkCase{
		{name: "not read", node: perfNode(10, nil, nil, nil, nil), status: Skip, summary: "memory cgroup was not read"},
		{name: "comfortable", node: perfNode(10, nil, nil, mem(100, 0, nil, nil), nil), status: Pass, summary: "100.0 GiB of the 256.0 GiB limit (39%, page cache included); no swapping"},
		{name: "at the limit with page cache only", node: perfNode(10, nil, nil, mem(254, 0, nil, f64(0)), nil), status: Pass, summary: "(99%, page cache included)"},
		{name: "at the limit and swapping", node: perfNode(10, nil, nil, mem(254, 6, map[string]uint64{"max": 40}, nil), nil), status: Warn,
			summary: "memory at 99% of the job's 256.0 GiB limit, 6.0 GiB swapped out, 40 times at memory.max", remedy: "--mem"},
		{name: "swap below the limit passes", node: perfNode(10, nil, nil, mem(100, 6, nil, nil), nil), status: Pass, summary: "6.0 GiB swapped out"},
		{name: "v1 failcnt at the limit", node: perfNode(10, nil, nil, mem(250, 0, map[string]uint64{"failcnt": 3}, nil), nil), status: Warn, summary: "3 allocations failed"},
		{name: "OOM kill", node: perfNode(10, nil, nil, mem(254, 6, map[string]uint64{"oom_kill": 1}, nil), nil), status: Fail, summary: "the kernel killed 1 of the job's processes"},
		{name: "reclaim stalls", node: perfNode(10, nil, nil, mem(120, 0, nil, f64(2)), nil), status: Warn, summary: "stalled on memory reclaim 20% of the window"},
		{name: "no limit", node: perfNode(10, nil, nil, &state.JobMemory{UsedBytes: 8 << 30}, nil), status: Pass, summary: "no memory limit"},
	})
}

func TestPerfThrottle(t *testing.T) {
	thermal := []uint64{0x40 | 0x8, 0x40 | 0x8, 0x40, 0x40, 0x40, 0, 0, 0x40, 0x40, 0x40}
	runCases(t, checkPerfThrottle, []checkCase{
		{name: "masks not read", node: perfNode(10, four(97, 60), nil, nil, nil), status: Skip, summary: "clock event reasons were not read"},
		{name: "power cap at full load", node: perfNode(10, []gpuTicks{{util: ticks(97, 10), memGiB: 60, procs: 1, masks: ticks64(0x4, 10)}}, nil, nil, nil), status: Pass, summary: "at the power limit in 10 of 10 busy ticks"},
		{name: "thermal slowdown", node: perfNode(10, []gpuTicks{{util: ticks(97, 10), memGiB: 60, procs: 1, masks: ticks64(0, 10)}, {util: ticks(97, 10), memGiB: 60, procs: 1, masks: thermal}}, nil, nil, nil), status: Warn,
			summary: "GPU 1 (0000:01:00.0): slowed by hw_slowdown, hw_thermal_slowdown in 8 of 10 busy ticks (SM clock 1200 of 1980 MHz)", devices: []int{1}},
		{name: "slowdown in few ticks", node: perfNode(10, []gpuTicks{{util: ticks(97, 10), memGiB: 60, procs: 1, masks: []uint64{0x40, 0x40, 0, 0, 0, 0, 0, 0, 0, 0}}}, nil, nil, nil), status: Pass, summary: "no hardware slowdown"},
		{name: "idle GPU slowed is not judged", node: perfNode(10, []gpuTicks{{util: ticks(3, 10), memGiB: 1, procs: 1, masks: ticks64(0x40, 10)}}, nil, nil, nil), status: Pass, summary: "no busy GPU"},
	})
}

func ticks64(m uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = m
	}
	return out
}

func TestPerfChecksStayOutOfCheckAndDrain(t *testing.T) {
	all, err := Select(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.Scope == PerfScope {
			t.Errorf("Select returned perf check %s: 'check' and 'serve' would run it", c.ID)
		}
	}
	perf, err := PerfChecks(nil, nil)
	if err != nil || len(perf) != 6 {
		t.Fatalf("PerfChecks: %d checks, %v; want 6", len(perf), err)
	}
	if _, err := Select([]string{"perf"}, nil); err == nil {
		t.Error("Select(perf) should be an error: no node or job check is named perf.*")
	}
	res := []Result{{ID: "perf.memory", Status: Fail, Summary: "oom"}}
	if d := DrainFailures(res, DefaultConfig()); len(d) != 0 {
		t.Errorf("a perf failure drains the node: %v", d)
	}
}

func TestPerfConfigValidate(t *testing.T) {
	for _, c := range []struct {
		yaml, err string
	}{
		{"perf:\n  idle_percent: 40\n", ""},
		{"perf:\n  idle_percent: 140\n", "perf.idle_percent: 140 is not a percentage"},
		{"perf:\n  idle_percent: 90\n", "above perf.busy_percent"},
		{"perf:\n  min_samples: 0\n", "perf.min_samples"},
		{"perf:\n  process_cpu_percent: 75\n", ""},
		{"perf:\n  process_cpu_percent: 140\n", "perf.process_cpu_percent: 140 is not a percentage"},
		{"perf:\n  idel_percent: 40\n", "idel_percent"},
	} {
		cfg := DefaultConfig()
		err := ParseConfig([]byte(c.yaml), cfg)
		if (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.err)
		}
	}
}
