package check

import (
	"fmt"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state"
)

// perf.hang judges `gpuprobe job --hang`: for each rank process of the job
// on this node, whether it computes, waits in NCCL for a peer, or is the
// one that stopped (exited, stopped, stuck in uninterruptible sleep, or with
// no GPU work seen); a kernel spinning in a process with no NCCL mapped is
// said apart. Thresholds and their sources: docs/job.md,
// "My job hangs".
func init() {
	register(Check{ID: "perf.hang", Title: "no rank process of the job on this node is stuck, stopped or gone (gpuprobe job --hang)",
		Run: checkHang, Scope: PerfScope})
}

// The --hang thresholds (docs/job.md, "My job hangs").
const (
	// HangBusyUtilPercent: NVML's utilisation is the share of the sample
	// period in which one or more kernels ran; an NCCL kernel spinning on
	// a peer keeps it at or near 100.
	HangBusyUtilPercent = 90.0
	// HangComputeUtilPercent: at or above this with high power the GPU
	// computes.
	HangComputeUtilPercent = 50.0
	// HangIdleUtilPercent: below this no kernel runs (the process stopped
	// launching work).
	HangIdleUtilPercent = 5.0
	// HangLowPowerPercent: a busy GPU drawing less than this share of its
	// power limit runs a kernel that does little work (a spin-wait);
	// HangHighPowerPercent: at or above this share it computes.
	HangLowPowerPercent  = 40.0
	HangHighPowerPercent = 60.0
	// HangCPUStill: less CPU time than this per second of the window is a
	// process whose CPU time barely moves.
	HangCPUStill = 0.05
	// HangCPUBusy: without a GPU reading, a rank using at least this many
	// CPU-seconds a second, or whose CPU time moves and that was running
	// (R) at half the ticks or more (a busy machine shares the CPU), runs:
	// a compute loop or a spin-wait, the process side alone cannot tell
	// which.
	HangCPUBusy = 0.5
)

// What a rank does, from worst to best.
const (
	hangExited  = "exited"
	hangStopped = "stopped"
	hangDState  = "dstate"
	hangIdle    = "idle"
	hangAsleep  = "asleep"
	hangCPUBusy = "cpu-busy"
	hangUnknown = "unknown"
	hangWaiting = "waiting"
	// hangSpinning: a kernel spins at low power in a process with no NCCL
	// library mapped. Not NCCL waiting for a peer, not known to be stuck:
	// neither a waiter nor a culprit.
	hangSpinning  = "spinning"
	hangComputing = "computing"
)

// hangGPU is one job GPU over the window.
type hangGPU struct {
	index             int
	util, power, mem  float64 // means; power in percent of the limit
	hasUtil, hasPower bool
	sm                float64
}

func hangGPUs(p *state.JobPerf) map[int]hangGPU {
	out := map[int]hangGPU{}
	for _, g := range p.GPUs {
		h := hangGPU{index: g.Index}
		var nu, np, ns int
		for _, s := range g.Samples {
			if s.UtilGPUPercent != nil {
				nu++
				h.util += float64(*s.UtilGPUPercent)
				if s.UtilMemoryPercent != nil {
					h.mem += float64(*s.UtilMemoryPercent)
				}
			}
			if s.PowerWatts != nil && s.PowerLimitWatts != nil && *s.PowerLimitWatts > 0 {
				np++
				h.power += 100 * *s.PowerWatts / *s.PowerLimitWatts
			}
			if s.SMClockMHz != nil {
				ns++
				h.sm += float64(*s.SMClockMHz)
			}
		}
		if nu > 0 {
			h.util, h.mem, h.hasUtil = h.util/float64(nu), h.mem/float64(nu), true
		}
		if np > 0 {
			h.power, h.hasPower = h.power/float64(np), true
		}
		if ns > 0 {
			h.sm /= float64(ns)
		}
		out[g.Index] = h
	}
	return out
}

// hangRank is one rank's judgement.
type hangRank struct {
	r     state.HangRank
	gpu   *hangGPU
	kind  string
	why   string
	facts string
}

func (h hangRank) label() string {
	var b strings.Builder
	if h.r.Rank != "" {
		fmt.Fprintf(&b, "rank %s (pid %d", h.r.Rank, h.r.PID)
	} else {
		fmt.Fprintf(&b, "pid %d (rank unknown", h.r.PID)
	}
	if h.gpu != nil {
		fmt.Fprintf(&b, ", GPU %d", h.gpu.index)
	}
	b.WriteString(")")
	return b.String()
}

// judgeRank says what one rank does: the first rule that holds, worst
// first.
func judgeRank(r state.HangRank, g *hangGPU) (kind, why string) {
	read := len(r.States)
	cpu := 0.0
	if r.SeenSeconds > 0 {
		cpu = r.CPUSeconds / r.SeenSeconds
	}
	still := r.SeenSeconds > 0 && cpu < HangCPUStill
	idle := g == nil || g.hasUtil && g.util < HangIdleUtilPercent
	switch {
	case r.Exited:
		return hangExited, "rank exited (its process is gone)"
	case read > 0 && strings.Trim(r.States, "Tt") == "":
		return hangStopped, "stopped (state T at every tick: SIGSTOP or a debugger)"
	case read > 0 && r.DTicks == read && idle:
		if what, frame := stuckOn(r); what != "" {
			return hangDState, what + ": uninterruptible sleep in " + safetext.Clean(frame) + " (" + dWhere(r) + ")"
		}
		return hangDState, "stuck in uninterruptible sleep (" + dWhere(r) + ")"
	}
	if g == nil || !g.hasUtil {
		// The process side alone (no GPU, or NVML did not run it): a
		// rank asleep with its CPU time still, beside local ranks that
		// run, is the odd one out; alone it cannot be told from a rank
		// blocked in a CUDA sync.
		switch {
		case read > 0 && strings.Trim(r.States, "SDI") == "" && still:
			return hangAsleep, "asleep" + wchanNote(r) + " at every tick, its CPU time still (no GPU reading: judged from the process side alone)"
		case r.SeenSeconds > 0 && !still && (cpu >= HangCPUBusy || 2*strings.Count(r.States, "R") >= read):
			return hangCPUBusy, fmt.Sprintf("running on the CPU (%.2f CPU-s/s; no GPU reading: work and a spin-wait look alike)", cpu)
		}
		return hangUnknown, "no GPU reading for it: cannot tell"
	}
	host := "CPU time barely moves"
	if !still {
		host = fmt.Sprintf("the host spins at %.2f CPU-s/s, e.g. in a CUDA sync", cpu)
	}
	switch {
	case g.util >= HangBusyUtilPercent && g.hasPower && g.power < HangLowPowerPercent && r.NCCLLibrary == state.NCCLNotLoaded:
		// No libnccl mapped (/proc/PID/maps): whatever spins, it is not
		// NCCL. Mapped or not known keeps the NCCL reading: a PyTorch
		// process maps libnccl.so.2 at import, so mapped says little.
		return hangSpinning, "a kernel spins at low power in a process that has no NCCL library mapped: a kernel polling a flag (NVSHMEM, a custom all-reduce, a spin-wait) or one that does not finish; whether it waits on a peer is not known (" + host + ")"
	case g.util >= HangBusyUtilPercent && g.hasPower && g.power < HangLowPowerPercent:
		return hangWaiting, "waiting in NCCL for a peer (a kernel spins at low power; " + host + ")"
	case g.util >= HangComputeUtilPercent && g.hasPower && g.power >= HangHighPowerPercent:
		return hangComputing, "computing (slow, not hung)"
	// NVML's utilisation is the share of time a kernel ran, so a job that
	// launches only tiny kernels (run7-h100: ~100 tiny all-reduces a
	// second) reads 0% as one that launches none: say what was seen, not
	// that the process stopped.
	case g.util < HangIdleUtilPercent && still:
		return hangIdle, fmt.Sprintf("no GPU work seen: the GPU is idle (%.0f%% busy) and the process sleeps", g.util) + wchanNote(r)
	case g.util < HangIdleUtilPercent:
		return hangIdle, fmt.Sprintf("no GPU work seen: the GPU is idle (%.0f%% busy) while the process uses %.2f CPU-s/s (CPU side: a Python loop, data loading, a checkpoint)", g.util, cpu)
	}
	if !g.hasPower {
		return hangUnknown, "power not read: cannot tell a spinning kernel from work"
	}
	return hangUnknown, "between the thresholds: cannot tell"
}

func wchanNote(r state.HangRank) string {
	if r.Wchan == "" {
		return ""
	}
	return " in " + safetext.Clean(r.Wchan)
}

// dWhere says what a rank in D waits on: the wait functions and the
// network filesystems it holds files on.
func dWhere(r state.HangRank) string {
	var w []string
	for _, s := range append([]string{r.Wchan}, r.DWchans...) {
		if s = safetext.Clean(s); s != "" && !containsStr(w, s) {
			w = append(w, s)
		}
	}
	out := "wchan unreadable"
	if len(w) > 0 {
		out = "wchan " + strings.Join(w, ", ")
	}
	for _, m := range r.Mounts {
		if networkFS(m.Type) {
			out += fmt.Sprintf("; files open on %s %s", safetext.Clean(m.Type), safetext.Clean(m.Point))
		}
	}
	return out
}

func hangFacts(r state.HangRank, g *hangGPU) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: states %s", safetext.Clean(r.Comm), safetext.Clean(r.States))
	if r.Wchan != "" {
		fmt.Fprintf(&b, ", wchan %s", safetext.Clean(r.Wchan))
	}
	if r.Threads > 0 {
		fmt.Fprintf(&b, ", %d of %d threads in D", r.DThreads, r.Threads)
	}
	if r.SeenSeconds > 0 {
		fmt.Fprintf(&b, ", %.2f CPU-s over %.1f s", r.CPUSeconds, r.SeenSeconds)
	}
	if len(r.KernelStack) > 0 {
		fmt.Fprintf(&b, ", kernel stack %s", stackNote(r.KernelStack, 4))
	}
	for i, st := range r.DStacks {
		if i == 2 {
			fmt.Fprintf(&b, " (%d more)", len(r.DStacks)-2)
			break
		}
		fmt.Fprintf(&b, ", a thread in D: %s", stackNote(st, 4))
	}
	if py := r.Python; py != nil {
		if py.Error != "" {
			fmt.Fprintf(&b, "; Python stack not read: %s", safetext.Clean(py.Error))
		} else {
			fmt.Fprintf(&b, "; Python (py-spy, thread %s, %s): %s", safetext.Clean(py.Thread), safetext.Clean(py.Status), stackNote(py.Frames, 4))
		}
	}
	if g != nil && g.hasUtil {
		fmt.Fprintf(&b, "; GPU %d %.0f%% busy, memory %.0f%%", g.index, g.util, g.mem)
		if g.hasPower {
			fmt.Fprintf(&b, ", %.0f%% of its power limit", g.power)
		}
		if g.sm > 0 {
			fmt.Fprintf(&b, ", SM %.0f MHz", g.sm)
		}
	}
	return b.String()
}

func checkHang(n *state.Node, _ *Config) Result {
	if r, skip := perfSkip(n); skip {
		r.ID = "perf.hang"
		return r
	}
	p := n.JobPerf
	res := Result{ID: "perf.hang", Devices: []Device{}}
	if p.Hang == nil {
		res.Status, res.Summary = Skip, "not asked: run gpuprobe job --hang"
		return res
	}
	if len(p.Hang.Ranks) == 0 {
		res.Status, res.Summary = Skip, "unknown: no rank process of the job found on this node (none on a GPU, none with SLURM_PROCID readable)"
		return res
	}
	gpus := hangGPUs(p)
	// GPUs no live rank runs on: where an exited rank ran.
	live := map[int]bool{}
	for _, r := range p.Hang.Ranks {
		for _, i := range r.GPUs {
			live[i] = true
		}
	}
	var orphan []int
	for _, g := range p.GPUs {
		if !live[g.Index] {
			orphan = append(orphan, g.Index)
		}
	}
	var ranks []hangRank
	by := map[string][]hangRank{}
	for _, r := range p.Hang.Ranks {
		var g *hangGPU
		if len(r.GPUs) > 0 {
			if x, ok := gpus[r.GPUs[0]]; ok {
				g = &x
			}
		} else if r.Exited && len(orphan) == 1 {
			x := gpus[orphan[0]]
			g = &x
		}
		h := hangRank{r: r, gpu: g}
		h.kind, h.why = judgeRank(r, g)
		h.facts = hangFacts(r, g)
		ranks = append(ranks, h)
		by[h.kind] = append(by[h.kind], h)
		res.Details = append(res.Details, h.label()+": "+h.why+" — "+h.facts)
	}
	waiting := len(by[hangWaiting])
	waitNote := ""
	if waiting > 0 {
		verb := "wait"
		if waiting == 1 {
			verb = "waits"
		}
		waitNote = fmt.Sprintf("; %d local rank%s %s in NCCL", waiting, plural(waiting), verb)
	}
	var culprits []hangRank
	for _, k := range []string{hangExited, hangStopped, hangDState, hangIdle} {
		culprits = append(culprits, by[k]...)
	}
	if len(by[hangCPUBusy]) > 0 {
		// Asleep while other local ranks run: the process side's outlier.
		culprits = append(culprits, by[hangAsleep]...)
	}
	if p.Hang.PySpyError != "" {
		res.Details = append(res.Details, "Python stacks: "+safetext.Clean(p.Hang.PySpyError))
	}
	ras, slow := rasFindings(p.Hang.RAS, p.Hang.RASStart)
	if p.Hang.RAS != nil {
		res.Details = append(res.Details, "NCCL RAS: "+rasStatus(p.Hang.RAS, ras, slow))
	}
	switch {
	case len(culprits) > 0:
		res.Status = Fail
		var parts []string
		for _, c := range culprits {
			parts = append(parts, c.label()+" "+c.why)
			if c.gpu != nil {
				res.Devices = appendDevice(res.Devices, p, c.gpu.index)
			}
		}
		res.Summary = strings.Join(parts, "; ") + waitNote + rasNote(ras, "; RAS says: ")
		res.Remedy = "this node holds the rank the job waits on: capture its stack (py-spy dump --pid, /proc/PID/stack as root) before cancelling; a rank in D on a network filesystem points at the mount, not the GPU"
		if len(by[hangIdle]) > 0 {
			res.Remedy += "; a GPU that reads idle may still run tiny kernels (NVML counts the time a kernel ran): rerun --hang with a longer --duration (a hang holds; a job of tiny collectives, as on a real H100, reads 0% busy while it progresses)"
		}
	case len(by[hangSpinning]) == len(ranks):
		res.Status = Warn
		var parts []string
		for _, c := range by[hangSpinning] {
			parts = append(parts, c.label()+" "+c.why)
			if c.gpu != nil {
				res.Devices = appendDevice(res.Devices, p, c.gpu.index)
			}
		}
		res.Summary = strings.Join(parts, "; ")
		res.Remedy = "find the kernel that spins: py-spy dump --native --pid PID shows where it was launched; one that polls a peer (NVSHMEM, a custom all-reduce) waits on another rank: run gpuprobe job --hang on every node and compare (gpuprobe summarize); one that never finishes is the job's own"
	case waiting > 0 && waiting == len(ranks):
		res.Status = Warn
		res.Summary = fmt.Sprintf("all %d local rank%s wait in NCCL for a peer: %s", waiting, plural(waiting), rasElsewhere(p.Hang.RAS, ras, slow))
		res.Remedy = "run gpuprobe job --hang --format json on every node of the job (srun --overlap --jobid=ID -N N --ntasks-per-node=1) and pipe it to gpuprobe summarize: the node whose ranks do not wait holds the culprit"
	case len(by[hangComputing]) == len(ranks):
		res.Status = Pass
		res.Summary = fmt.Sprintf("all %d local ranks are computing (slow, not hung)", len(ranks))
		res.Details = nil
	default:
		res.Status = Warn
		var parts []string
		for _, k := range []string{hangWaiting, hangSpinning, hangComputing, hangAsleep, hangCPUBusy, hangUnknown} {
			if n := len(by[k]); n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, k))
			}
		}
		res.Summary = "ranks disagree: " + strings.Join(parts, ", ") + " (a rank that computes while others wait may be the slow one)" + rasNote(ras, "; RAS says: ")
		res.Remedy = "compare with the other nodes (gpuprobe summarize) and rerun --hang: a hang holds, a slow step moves on"
	}
	return res
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func appendDevice(ds []Device, p *state.JobPerf, index int) []Device {
	for _, d := range ds {
		if d.Index == index {
			return ds
		}
	}
	for _, g := range p.GPUs {
		if g.Index == index {
			return append(ds, Device{Index: g.Index, UUID: g.UUID, PCIBusID: g.PCIBusID})
		}
	}
	return append(ds, Device{Index: index})
}
