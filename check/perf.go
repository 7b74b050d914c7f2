package check

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state"
)

// The perf checks judge a running job that `gpuprobe job` sampled: what
// holds it back, whether it uses the GPUs it holds, whether it would fit on
// fewer, whether its host memory is too small, and whether the hardware slows
// its GPUs. They only ever run on a sample (PerfScope: never in `check`,
// `serve` or a drain), and they say "unknown" where the counters do not
// decide. Thresholds and their reasons: docs/job.md.
func init() {
	for _, c := range []Check{
		{ID: "perf.bottleneck", Title: "what holds the job back: its GPUs, its CPUs (input pipeline) or its reads", Run: checkBottleneck},
		{ID: "perf.gpus_used", Title: "the job uses every GPU it was given", Run: checkGPUsUsed},
		{ID: "perf.gpu_fit", Title: "the job's work needs the GPUs it holds (it would not fit on fewer)", Run: checkGPUFit},
		{ID: "perf.memory", Title: "the job's host memory is not at its limit with swapping, reclaim stalls or OOM kills", Run: checkPerfMemory},
		{ID: "perf.gpu_throttle", Title: "the hardware does not slow the job's busy GPUs", Run: checkPerfThrottle},
	} {
		c.Scope = PerfScope
		register(c)
	}
}

// gpuLoad is one job GPU over the window.
type gpuLoad struct {
	gpu      *state.GPU // the JobGPU's identity, for labels and devices
	samples  int        // ticks with a utilisation reading
	util     float64    // mean nvmlDeviceGetUtilizationRates.gpu, percent
	memUtil  float64
	memUsed  uint64 // highest used framebuffer seen, bytes
	memTotal uint64
	jobProcs int // the job's processes NVML listed on the GPU
}

func (l gpuLoad) memPercent() (float64, bool) {
	if l.memTotal == 0 {
		return 0, false
	}
	return 100 * float64(l.memUsed) / float64(l.memTotal), true
}

func perfSkip(n *state.Node) (Result, bool) {
	if n.JobPerf == nil {
		return Result{Status: Skip, Summary: "no running job sampled (these checks run in 'gpuprobe job')"}, true
	}
	return Result{}, false
}

// loads summarises each job GPU that has at least min utilisation readings;
// short is the GPUs with fewer.
func loads(p *state.JobPerf, min int) (out []gpuLoad, short []string) {
	for i := range p.GPUs {
		g := &p.GPUs[i]
		l := gpuLoad{gpu: &state.GPU{Index: g.Index, UUID: g.UUID, PCIBusID: g.PCIBusID}, memTotal: g.MemoryTotalBytes, jobProcs: len(g.JobPIDs)}
		var sum, msum float64
		for _, s := range g.Samples {
			if s.UtilGPUPercent != nil {
				l.samples++
				sum += float64(*s.UtilGPUPercent)
				if s.UtilMemoryPercent != nil {
					msum += float64(*s.UtilMemoryPercent)
				}
			}
			if s.MemoryUsedBytes != nil && *s.MemoryUsedBytes > l.memUsed {
				l.memUsed = *s.MemoryUsedBytes
			}
		}
		if l.samples < min {
			short = append(short, fmt.Sprintf("GPU %d: %d utilisation readings", g.Index, l.samples))
			continue
		}
		l.util, l.memUtil = sum/float64(l.samples), msum/float64(l.samples)
		out = append(out, l)
	}
	return out, short
}

// idleGPU: below cfg.UnusedPercent and, with no process of the job on it,
// holding no more memory than a CUDA context.
func (l gpuLoad) idle(cfg PerfConfig) bool { return l.util < cfg.UnusedPercent }

func (l gpuLoad) unused(cfg PerfConfig) bool {
	return l.idle(cfg) && l.jobProcs == 0 && l.memUsed <= cfg.UnusedMemoryMiB<<20
}

// loadsOrSkip is the precondition shared by the GPU-side perf checks.
func loadsOrSkip(n *state.Node, cfg *Config) ([]gpuLoad, Result, bool) {
	if r, skip := perfSkip(n); skip {
		return nil, r, true
	}
	p := n.JobPerf
	if len(p.GPUs) == 0 {
		return nil, Result{Status: Skip, Summary: "the job has no GPU on this node"}, true
	}
	ls, short := loads(p, cfg.Perf.MinSamples)
	if len(ls) == 0 {
		return nil, Result{Status: Skip, Summary: fmt.Sprintf("unknown: too few GPU readings to judge (%s; want %d)", strings.Join(short, ", "), cfg.Perf.MinSamples)}, true
	}
	return ls, Result{}, false
}

// cpuPercent is the job's CPU time over the window as a share of its
// allocated CPUs.
func cpuPercent(p *state.JobPerf) (float64, bool) {
	c := p.CPU
	if c == nil || c.AllocatedCount == 0 || p.WindowSeconds <= 0 {
		return 0, false
	}
	return 100 * c.UsedSeconds / (float64(c.AllocatedCount) * p.WindowSeconds), true
}

// ioWait is the job's tasks in state D averaged over the ticks, and the
// io.pressure "some" share of the window where cgroup v2 gives it.
func ioWait(p *state.JobPerf) (dTasks float64, pressure float64, hasPressure, ok bool) {
	io := p.IO
	if io == nil || io.Ticks == 0 {
		return 0, 0, false, false
	}
	dTasks = float64(io.DStateTaskSamples) / float64(io.Ticks)
	if io.PressureSomeSeconds != nil && p.WindowSeconds > 0 {
		pressure, hasPressure = 100*(*io.PressureSomeSeconds)/p.WindowSeconds, true
	}
	return dTasks, pressure, hasPressure, true
}

// networkFS are filesystem types (as /proc/PID/mountinfo names them) whose
// reads cross the network: NFS, Lustre, IBM Spectrum Scale (GPFS), SMB,
// CephFS, BeeGFS, WekaFS, GlusterFS, 9p, AFS, and FUSE mounts of remote
// stores (sshfs, s3fs, gcsfuse, blobfuse...). A fuse.* type is counted as
// network: on a GPU node FUSE is almost always a remote store.
func networkFS(t string) bool {
	switch t {
	case "nfs", "nfs4", "lustre", "gpfs", "cifs", "smb3", "ceph", "beegfs", "wekafs", "glusterfs", "9p", "afs", "pvfs2", "orangefs", "panfs", "davfs":
		return true
	}
	return strings.HasPrefix(t, "fuse.") || t == "fuse"
}

// topReadFS is the filesystem the job read most from over the window.
func topReadFS(p *state.JobPerf) *state.JobFilesystem {
	if p.IO == nil {
		return nil
	}
	var best *state.JobFilesystem
	for i := range p.IO.Filesystems {
		f := &p.IO.Filesystems[i]
		if f.ReadBytes > 0 && (best == nil || f.ReadBytes > best.ReadBytes) {
			best = f
		}
	}
	return best
}

func mibps(bytes uint64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(bytes) / (1 << 20) / seconds
}

func meanUtil(ls []gpuLoad) float64 {
	var s float64
	for _, l := range ls {
		s += l.util
	}
	return s / float64(len(ls))
}

func gpuIndexes(ls []gpuLoad) string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = itoa(l.gpu.Index)
	}
	return strings.Join(ids, ",")
}

// loadLine is one GPU's figures, for details.
func loadLine(l gpuLoad) string {
	s := fmt.Sprintf("%.0f%% busy, memory controller %.0f%%", l.util, l.memUtil)
	if pct, ok := l.memPercent(); ok {
		s += fmt.Sprintf(", %.1f of %.1f GiB (%.0f%%)", gib(l.memUsed), gib(l.memTotal), pct)
	}
	return s + fmt.Sprintf(", %d process(es) of the job", l.jobProcs)
}

func gib(b uint64) float64 { return float64(b) / (1 << 30) }

const (
	fixCPUBound = "ask for more CPUs (--cpus-per-task) and give the data loader as many workers (PyTorch DataLoader num_workers); move decoding and augmentation to the GPU (e.g. NVIDIA DALI)"
	fixNetRead  = "stage the dataset to node-local storage at the start of the job (copy to $TMPDIR or the node's scratch) or pack it into large shards read sequentially; more loader workers with prefetching hide the rest"
	fixLocalIO  = "the local disk is the limit: more loader workers with prefetching, the dataset in memory (/dev/shm) or on faster local storage"
	// A process that keeps one CPU busy while the job's other CPUs idle is
	// a serial bottleneck. Not on a GPU, it is a data loader worker (or a
	// helper process): samples are made one at a time. On a GPU, it is the
	// training process itself: its Python loop (one thread, under the GIL)
	// does per-step host work the GPU waits for.
	fixHotWorker = "one loader process cannot keep up: raise the DataLoader's num_workers towards the allocated CPUs so samples are prepared in parallel; make per-sample transforms lighter (pre-process the dataset once, decode smaller images) or move decoding and augmentation to the GPU (NVIDIA DALI)"
	fixHotMain   = "the training process's main loop is the limit (Python runs one thread at a time under the GIL): move per-sample and per-batch CPU work into DataLoader workers (num_workers > 0, pin_memory=True), cut Python work per step (larger batches, torch.compile or CUDA graphs), and profile the main thread (py-spy dump/top, PyTorch profiler) to see where it spends its time"
	fixUnknown   = "profile a few training steps (PyTorch profiler, Nsight Systems) to see what the GPU waits for: synchronisation, communication, small batches or host-side work"
)

func checkBottleneck(n *state.Node, cfg *Config) Result {
	ls, r, skip := loadsOrSkip(n, cfg)
	if skip {
		return r
	}
	pc := cfg.Perf
	p := n.JobPerf
	var used []gpuLoad
	for _, l := range ls {
		if !l.unused(pc) {
			used = append(used, l)
		}
	}
	if len(used) == 0 {
		// Nothing runs on the GPUs: judge them all as idle, so a job that
		// burns its CPUs while its GPUs wait is still called input-bound
		// (perf.gpus_used says no GPU works at all).
		used = ls
	}
	v := verdict{id: "perf.bottleneck"}
	for _, l := range used {
		v.add(Pass, l.gpu, "", loadLine(l))
	}
	mean := meanUtil(used)
	cpu, cpuOK := cpuPercent(p)
	dTasks, pressure, hasPressure, ioOK := ioWait(p)
	host := hostLine(p, cpu, cpuOK, dTasks, pressure, hasPressure, ioOK)
	busy := true
	for _, l := range used {
		if l.util < pc.BusyPercent {
			busy = false
		}
	}
	gpus := fmt.Sprintf("GPU %s %.0f%% busy", gpuIndexes(used), mean)
	if len(used) > 1 {
		gpus = fmt.Sprintf("GPUs %s %.0f%% busy on average", gpuIndexes(used), mean)
	}
	if busy {
		return v.result(fmt.Sprintf("GPU-bound: %s; nothing to fix here (%s)", gpus, host))
	}
	if mean >= pc.IdlePercent {
		return v.result(fmt.Sprintf("no bottleneck found: %s, between idle (<%.0f%%) and busy (>=%.0f%%) (%s)", gpus, pc.IdlePercent, pc.BusyPercent, host))
	}
	cpuBound := cpuOK && cpu >= pc.CPUSaturatedPercent
	ioBound := ioOK && (dTasks >= pc.IOWaitTasks || hasPressure && pressure >= pc.IOPressurePercent)
	if cpuBound {
		v.add(Warn, nil, fixCPUBound, fmt.Sprintf("input pipeline CPU-bound: %s while the job's %d CPUs are %.0f%% used", gpus, p.CPU.AllocatedCount, cpu))
	}
	if ioBound {
		wait := fmt.Sprintf("%.1f task(s) waiting for reads (state D)", dTasks)
		if hasPressure {
			wait += fmt.Sprintf(", stalled on I/O %.0f%% of the time (io.pressure)", pressure)
		}
		from, fix := "; where the reads come from is unknown (no open data file seen)", fixLocalIO
		if fs := topReadFS(p); fs != nil {
			from = fmt.Sprintf(", reading %.0f MiB/s from %s %s", mibps(fs.ReadBytes, p.WindowSeconds), fs.Type, fs.MountPoint)
			if networkFS(fs.Type) {
				from += " (a network filesystem)"
				fix = fixNetRead
			}
		} else {
			fix = fixNetRead + "; " + fixLocalIO
		}
		v.add(Warn, nil, fix, fmt.Sprintf("I/O-bound: %s while %s%s", gpus, wait, from))
	}
	hotBound := false
	if !cpuBound && cpuOK {
		if hot := hotProcesses(p, pc); len(hot) > 0 {
			hotBound = true
			v.add(Warn, nil, hotFix(p, hot), hotLine(p, hot, gpus))
		}
	}
	if !cpuBound && !ioBound && !hotBound {
		why := "the cause is unknown: " + host
		if !cpuOK && !ioOK {
			why = "the cause is unknown: the job's CPU and I/O counters could not be read"
		}
		v.add(Warn, nil, fixUnknown, fmt.Sprintf("%s, mostly idle; %s", gpus, why))
	}
	return v.result("")
}

// hotProcesses are the job's processes that each kept one CPU at least
// ProcessCPUPercent busy over the window, and used less than two CPUs: a
// process that used more runs in parallel, so one CPU is not what holds it
// back. Only the busiest few processes are in the state (TopProcesses); a
// job with one CPU is judged by the job-wide share alone.
func hotProcesses(p *state.JobPerf, pc PerfConfig) []state.JobProcess {
	c := p.CPU
	if c == nil || c.AllocatedCount < 2 || p.WindowSeconds <= 0 {
		return nil
	}
	var out []state.JobProcess
	for _, pr := range c.TopProcesses {
		// A process that lived under half the window (forked late) says
		// too little about the window to name it the bottleneck.
		cpus, seen := pr.CPUs(p.WindowSeconds)
		share := 100 * cpus
		if seen >= p.WindowSeconds/2 && share >= pc.ProcessCPUPercent && share < 200 {
			out = append(out, pr)
		}
	}
	return out
}

// onGPU reports whether NVML lists pid as one of the job's processes on one
// of its GPUs: the training process, not a loader worker.
func onGPU(p *state.JobPerf, pid int32) bool {
	for _, g := range p.GPUs {
		for _, q := range g.JobPIDs {
			if int64(q) == int64(pid) {
				return true
			}
		}
	}
	return false
}

func hotFix(p *state.JobPerf, hot []state.JobProcess) string {
	main, other := false, false
	for _, h := range hot {
		if onGPU(p, h.PID) {
			main = true
		} else {
			other = true
		}
	}
	switch {
	case main && other:
		return fixHotMain + "; " + fixHotWorker
	case main:
		return fixHotMain
	}
	return fixHotWorker
}

// hotLine names the busy processes (their comm escaped: users choose it)
// and what the rest of the job's CPUs did meanwhile.
func hotLine(p *state.JobPerf, hot []state.JobProcess, gpus string) string {
	c := p.CPU
	w := p.WindowSeconds
	var names []string
	var hotSec float64
	for _, h := range hot {
		cpus, seen := h.CPUs(w)
		share := 100 * cpus
		s := fmt.Sprintf("pid %d (%s)", h.PID, safetext.Clean(h.Comm))
		// CPU time and the window are read at slightly different moments,
		// so a process pinned at one CPU reads up to a few percent over 100
		// (the real H200 run: 1.0x CPUs); only clearly more is "CPUs".
		if share < 110 {
			s += fmt.Sprintf(" kept one CPU %.0f%% busy", min(share, 100))
		} else {
			s += fmt.Sprintf(" used %.1f CPUs", cpus)
		}
		if seen < w {
			s += fmt.Sprintf(" over the last %.0f s of the window (it started then)", seen)
		}
		var what []string
		if onGPU(p, h.PID) {
			what = append(what, "the process on the GPU")
		}
		if h.Threads == 1 {
			what = append(what, "1 thread")
		} else if h.Threads > 1 {
			what = append(what, fmt.Sprintf("%d threads", h.Threads))
		}
		if len(what) > 0 {
			s += " [" + strings.Join(what, ", ") + "]"
		}
		names = append(names, s)
		hotSec += h.CPUSeconds
	}
	who := "one process is CPU-bound: "
	if len(hot) > 1 {
		who = fmt.Sprintf("%d processes are CPU-bound, one CPU each: ", len(hot))
	}
	// The rest of the job's CPU time (cgroup counter, or the tasks' sum)
	// spread over its other CPUs.
	others, rest := c.AllocatedCount-len(hot), ""
	if others > 0 {
		rest = fmt.Sprintf(" while the job's other %d allocated CPUs were %.0f%% busy", others, 100*math.Max(0, c.UsedSeconds-hotSec)/(float64(others)*w))
	}
	return fmt.Sprintf("%s%s%s (%s, mostly idle)", who, strings.Join(names, ", "), rest, gpus)
}

// hostLine is the host side's figures in one phrase.
func hostLine(p *state.JobPerf, cpu float64, cpuOK bool, dTasks, pressure float64, hasPressure, ioOK bool) string {
	var parts []string
	if cpuOK {
		parts = append(parts, fmt.Sprintf("CPUs %.0f%% of %d allocated", cpu, p.CPU.AllocatedCount))
	} else {
		parts = append(parts, "CPU use unknown")
	}
	if ioOK {
		s := fmt.Sprintf("%.1f task(s) in I/O wait", dTasks)
		if hasPressure {
			s += fmt.Sprintf(", io.pressure %.0f%%", pressure)
		}
		parts = append(parts, s)
	} else {
		parts = append(parts, "I/O wait unknown")
	}
	return strings.Join(parts, ", ")
}

const fixGPUsUsed = "start one process per GPU (torchrun --nproc_per_node=$SLURM_GPUS_ON_NODE, or srun --ntasks-per-node=N --gpus-per-task=1) with DistributedDataParallel (DataParallel and a single process mostly drive one GPU), or ask Slurm for fewer GPUs"

func checkGPUsUsed(n *state.Node, cfg *Config) Result {
	ls, r, skip := loadsOrSkip(n, cfg)
	if skip {
		return r
	}
	pc := cfg.Perf
	v := verdict{id: "perf.gpus_used"}
	var idle, working []gpuLoad
	for _, l := range ls {
		if l.idle(pc) {
			idle = append(idle, l)
		} else {
			working = append(working, l)
		}
	}
	if len(working) == 0 {
		for _, l := range idle {
			v.add(Warn, l.gpu, "check that the job runs on the GPU at all (torch.cuda.is_available(), the device it moves the model to); a job that needs no GPU should not ask for one",
				fmt.Sprintf("did no work in the window (%.0f%% busy, below %.0f%%)", l.util, pc.UnusedPercent))
		}
		return v.result("")
	}
	for _, l := range idle {
		why := "no process of the job on it"
		if !l.unused(pc) {
			why = fmt.Sprintf("%d process(es) of the job hold %.1f GiB on it but run no work", l.jobProcs, gib(l.memUsed))
		}
		v.add(Warn, l.gpu, fixGPUsUsed, fmt.Sprintf("idle (%.0f%% busy): %s", l.util, why))
	}
	if len(idle) > 0 {
		r := v.result("")
		r.Summary = fmt.Sprintf("the job uses %d of its %d GPUs (GPU %s busy; GPU %s idle)", len(working), len(ls), gpuIndexes(working), gpuIndexes(idle))
		return r
	}
	return v.result(fmt.Sprintf("the job uses all %d of its GPUs (%s)", len(ls), gpuIndexes(ls)))
}

func checkGPUFit(n *state.Node, cfg *Config) Result {
	ls, r, skip := loadsOrSkip(n, cfg)
	if skip {
		return r
	}
	pc := cfg.Perf
	var used []gpuLoad
	for _, l := range ls {
		if !l.unused(pc) {
			used = append(used, l)
		}
	}
	if len(used) < 2 {
		return Result{ID: "perf.gpu_fit", Status: Pass, Summary: fmt.Sprintf("the job works on %d GPU: nothing to consolidate", len(used))}
	}
	var memSum, perGPU uint64
	var utilSum, maxMem float64
	for _, l := range used {
		pct, ok := l.memPercent()
		if !ok {
			return Result{ID: "perf.gpu_fit", Status: Skip, Summary: fmt.Sprintf("unknown: GPU %d's memory total was not read", l.gpu.Index)}
		}
		maxMem = math.Max(maxMem, pct)
		memSum += l.memUsed
		perGPU = max(perGPU, l.memTotal)
		utilSum += l.util
	}
	mean := utilSum / float64(len(used))
	if maxMem >= pc.FitMemoryPercent || mean >= pc.IdlePercent {
		return Result{ID: "perf.gpu_fit", Status: Pass, Summary: fmt.Sprintf("the %d GPUs are needed: up to %.0f%% of their memory used, %.0f%% busy on average", len(used), maxMem, mean)}
	}
	// The fewest GPUs that hold the memory, each filled to 80% (room for
	// fragmentation and peaks), and do the work, each at busy_percent.
	byMem := int(math.Ceil(float64(memSum) / (0.8 * float64(perGPU))))
	byWork := int(math.Ceil(utilSum / pc.BusyPercent))
	k := max(1, byMem, byWork)
	if k >= len(used) {
		return Result{ID: "perf.gpu_fit", Status: Pass, Summary: fmt.Sprintf("the %d GPUs are lightly used but the work would not fit on fewer", len(used))}
	}
	v := verdict{id: "perf.gpu_fit"}
	for _, l := range used {
		v.add(Warn, l.gpu, fmt.Sprintf("ask for %d GPU(s) (--gpus=%d) and run the same work there; profile GPU use on a few GPUs before scaling out", k, k), loadLine(l))
	}
	r = v.result("")
	r.Summary = fmt.Sprintf("the job's work would fit on %d of its %d GPUs: together they hold %.1f GiB (at most %.0f%% of one GPU's memory each) and are %.0f%% busy on average",
		k, len(used), gib(memSum), maxMem, mean)
	return r
}

const fixMemory = "ask Slurm for more memory (--mem, --mem-per-cpu or --mem-per-gpu), or lower the data loader's prefetch and worker count"

func checkPerfMemory(n *state.Node, cfg *Config) Result {
	if r, skip := perfSkip(n); skip {
		return r
	}
	p := n.JobPerf
	m := p.Memory
	if m == nil {
		return Result{ID: "perf.memory", Status: Skip, Summary: "unknown: the job's memory cgroup was not read"}
	}
	v := verdict{id: "perf.memory"}
	if k := m.Events["oom_kill"]; k > 0 {
		v.add(Fail, nil, fixMemory, fmt.Sprintf("the kernel killed %d of the job's processes for memory (cgroup oom_kill)", k))
	}
	used := fmt.Sprintf("%.1f GiB", gib(m.UsedBytes))
	var evidence []string
	if m.SwapBytes != nil && *m.SwapBytes > 0 {
		evidence = append(evidence, fmt.Sprintf("%.1f GiB swapped out", gib(*m.SwapBytes)))
	}
	if c := m.Events["max"]; c > 0 {
		evidence = append(evidence, fmt.Sprintf("%d times at memory.max", c))
	}
	if c := m.Events["failcnt"]; c > 0 {
		evidence = append(evidence, fmt.Sprintf("%d allocations failed at the limit (memory.failcnt)", c))
	}
	stall := 0.0
	if m.PressureSomeSeconds != nil && p.WindowSeconds > 0 {
		stall = 100 * *m.PressureSomeSeconds / p.WindowSeconds
	}
	if stall >= 10 {
		v.add(Warn, nil, fixMemory, fmt.Sprintf("tasks stalled on memory reclaim %.0f%% of the window (memory.pressure)", stall))
	}
	if m.LimitBytes == nil {
		return v.result("no memory limit on the job's cgroup; " + used + " in use")
	}
	pct := 100 * float64(m.UsedBytes) / float64(*m.LimitBytes)
	if pct >= cfg.Perf.MemoryLimitPercent && len(evidence) > 0 {
		v.add(Warn, nil, fixMemory, fmt.Sprintf("memory at %.0f%% of the job's %.1f GiB limit, %s", pct, gib(*m.LimitBytes), strings.Join(evidence, ", ")))
	}
	// memory.current counts page cache, which the kernel reclaims before it
	// swaps: a job reading a large dataset sits at its limit and is fine.
	return v.result(fmt.Sprintf("%s of the %.1f GiB limit (%.0f%%, page cache included)%s", used, gib(*m.LimitBytes), pct, noneOr(evidence)))
}

func noneOr(e []string) string {
	if len(e) == 0 {
		return "; no swapping, no reclaim at the limit"
	}
	return "; " + strings.Join(e, ", ")
}

// Clock-event reason bits (nvml.h, nvmlClocksEventReason*): the ones that
// mean the hardware or the driver's thermal control slowed a GPU. SW power
// cap (0x4) is not here: it is how a GPU at full load holds its power limit.
const (
	clockHWSlowdown   = 0x8
	clockSWThermal    = 0x20
	clockHWThermal    = 0x40
	clockHWPowerBrake = 0x80
	clockSWPowerCap   = 0x4
)

var slowdownBits = []struct {
	bit  uint64
	name string
}{{clockHWSlowdown, "hw_slowdown"}, {clockSWThermal, "sw_thermal_slowdown"}, {clockHWThermal, "hw_thermal_slowdown"}, {clockHWPowerBrake, "hw_power_brake_slowdown"}}

func checkPerfThrottle(n *state.Node, cfg *Config) Result {
	if r, skip := perfSkip(n); skip {
		return r
	}
	p := n.JobPerf
	pc := cfg.Perf
	v := verdict{id: "perf.gpu_throttle"}
	read, busyTotal, capped := 0, 0, 0
	for i := range p.GPUs {
		g := &p.GPUs[i]
		dev := &state.GPU{Index: g.Index, UUID: g.UUID, PCIBusID: g.PCIBusID}
		busy, slowed := 0, 0
		seen := map[string]bool{}
		var clk, maxClk uint32
		for _, s := range g.Samples {
			if s.ClockEventMask == nil || s.UtilGPUPercent == nil {
				continue
			}
			read++
			if float64(*s.UtilGPUPercent) < pc.IdlePercent {
				continue
			}
			busy++
			mask := *s.ClockEventMask
			if mask&clockSWPowerCap != 0 {
				capped++
			}
			hit := false
			for _, b := range slowdownBits {
				if mask&b.bit != 0 {
					seen[b.name], hit = true, true
				}
			}
			if hit {
				slowed++
				if s.SMClockMHz != nil {
					clk = *s.SMClockMHz
				}
				if s.MaxSMClockMHz != nil {
					maxClk = *s.MaxSMClockMHz
				}
			}
		}
		busyTotal += busy
		if busy == 0 || 100*float64(slowed)/float64(busy) < pc.ThrottledPercent {
			continue
		}
		names := make([]string, 0, len(seen))
		for k := range seen {
			names = append(names, k)
		}
		sort.Strings(names)
		msg := fmt.Sprintf("slowed by %s in %d of %d busy ticks", strings.Join(names, ", "), slowed, busy)
		if clk > 0 && maxClk > 0 {
			msg += fmt.Sprintf(" (SM clock %d of %d MHz)", clk, maxClk)
		}
		v.add(Warn, dev, "the GPU's cooling or power supply holds it back, not the job: tell the cluster's admins ('gpuprobe check' shows the node's view)", msg)
	}
	if read == 0 {
		return Result{ID: "perf.gpu_throttle", Status: Skip, Summary: "unknown: clock event reasons were not read"}
	}
	if busyTotal == 0 {
		return Result{ID: "perf.gpu_throttle", Status: Pass, Summary: "no busy GPU to judge: clocks idle with the work"}
	}
	pass := "no hardware slowdown on the busy GPUs"
	if capped > 0 {
		pass += fmt.Sprintf("; at the power limit in %d of %d busy ticks (sw_power_cap: normal at full load)", capped, busyTotal)
	}
	return v.result(pass)
}
