package jobperf

import (
	"fmt"
	"slices"
	"sort"

	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state"
)

// ClockTicks is USER_HZ, the unit of /proc/PID/stat utime and stime
// (proc(5): "measured in clock ticks (divide by sysconf(_SC_CLK_TCK))").
// It is 100 on every Linux architecture gpuprobe runs on (x86-64, arm64,
// ppc64le: include/asm-generic/param.h); Go has no sysconf without cgo.
const ClockTicks = 100

// MaxFilesystems bounds the filesystems a summary lists (the ones read most).
const MaxFilesystems = 32

// MaxTopProcesses bounds the busiest processes a summary lists.
const MaxTopProcesses = 5

// Summarize turns the ticks into what state records: counter differences
// between the first and the last tick, state counts over all ticks, and the
// memory figures of the last tick. The strings are what could not be read
// or had to be left out, for state.JobPerf.Errors.
func Summarize(j *Job, ticks []*Sample) (*state.JobCPU, *state.JobMemory, *state.JobIO, []string) {
	var ts []*Sample
	for _, t := range ticks {
		if t != nil {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return nil, nil, nil, []string{"no tick was sampled"}
	}
	errs := dedupe(ts)
	first, last := ts[0], ts[len(ts)-1]
	if len(ts) < 2 {
		errs = append(errs, "one tick only: no CPU time or reads over a window")
	}

	cpu, e := summarizeCPU(j, ts, first, last)
	errs = append(errs, e...)
	mem, e := summarizeMemory(j, first, last)
	errs = append(errs, e...)
	io, e := summarizeIO(ts, first, last)
	errs = append(errs, e...)
	return cpu, mem, io, errs
}

func dedupe(ts []*Sample) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		for _, e := range t.Errors {
			if !seen[e] && len(out) < 32 {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	return out
}

func delta(a, b *uint64) (uint64, bool) {
	if a == nil || b == nil || *b < *a {
		return 0, false
	}
	return *b - *a, true
}

// both lists the tasks present at the first and the last tick: a task that
// started or exited inside the window has no difference to take (its
// counters died with it, or started before we saw it).
func both(first, last *Sample) []int32 {
	var out []int32
	for pid := range last.Tasks {
		if first.Tasks[pid] != nil {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

func summarizeCPU(j *Job, ts []*Sample, first, last *Sample) (*state.JobCPU, []string) {
	var errs []string
	c := &state.JobCPU{}
	// Allocation: the cgroup's cpuset, else the union of the tasks' masks.
	if last.Cgroup.CPUs != "" {
		list, err := cpulist.Parse(last.Cgroup.CPUs)
		if err != nil {
			errs = append(errs, "cpuset: "+err.Error())
		} else {
			c.AllocatedCPUs, c.AllocatedCount = cpulist.Format(list), len(list)
		}
	}
	if c.AllocatedCount == 0 {
		var all []int
		for _, t := range last.Tasks {
			if l, err := cpulist.Parse(t.CPUsAllowed); err == nil {
				all = append(all, l...)
			}
		}
		slices.Sort(all)
		all = slices.Compact(all)
		c.AllocatedCPUs, c.AllocatedCount = cpulist.Format(all), len(all)
	}
	if d, ok := delta(first.Cgroup.CPUUsageNs, last.Cgroup.CPUUsageNs); ok {
		c.UsedSeconds, c.From = float64(d)/1e9, last.Cgroup.CPUFrom
	} else {
		var ticks uint64
		for _, pid := range both(first, last) {
			a, b := first.Tasks[pid], last.Tasks[pid]
			if ua, ub := a.UTime+a.STime, b.UTime+b.STime; ub >= ua {
				ticks += ub - ua
			}
		}
		c.UsedSeconds, c.From = float64(ticks)/ClockTicks, "proc"
		if len(last.Tasks) == 0 {
			return nil, append(errs, "CPU: neither the cgroup's counter nor any task was read")
		}
		if j != nil && j.tasksFrom != "scontrol" {
			errs = append(errs, "CPU: the cgroup's counter was not read; CPU time is the tasks' utime+stime (tasks present at both ends only)")
		}
	}
	if d, ok := delta(first.Cgroup.ThrottledNs, last.Cgroup.ThrottledNs); ok {
		v := float64(d) / 1e9
		c.ThrottledSeconds = &v
	}
	if d, ok := delta(first.Cgroup.CPUPressureUs, last.Cgroup.CPUPressureUs); ok {
		v := float64(d) / 1e6
		c.PressureSomeSeconds = &v
	}
	for _, t := range ts {
		for _, task := range t.Tasks {
			if task.State == 'R' {
				c.RunnableTaskSamples++
			}
		}
	}
	c.TopProcesses = topProcesses(ts)
	return c, errs
}

// topProcesses is the MaxTopProcesses tasks at the window's end that used
// the most CPU time (utime+stime), most first, the lower PID first among
// equals; a task that used none is left out. A task is measured from the
// first tick since which it was seen at every tick with its CPU time never
// going back (a PID reused by a younger process restarts it): a DataLoader
// worker forked mid-window is measured over the part it lived, with
// SeenSeconds saying how long that was (a real H200 run: the worker appeared
// after the first tick and was otherwise missed).
func topProcesses(ts []*Sample) []state.JobProcess {
	if len(ts) < 2 {
		return nil
	}
	last := ts[len(ts)-1]
	var out []state.JobProcess
	for pid, b := range last.Tasks {
		ub := b.UTime + b.STime
		k, u := len(ts)-1, ub
		for k > 0 {
			a, ok := ts[k-1].Tasks[pid]
			if !ok || a.UTime+a.STime > u {
				break
			}
			k, u = k-1, a.UTime+a.STime
		}
		if k == len(ts)-1 || ub <= u {
			continue // seen once, none used, or a PID reused by a younger process
		}
		pr := state.JobProcess{PID: pid, Comm: b.Comm, CPUSeconds: float64(ub-u) / ClockTicks, Threads: b.Threads}
		if k > 0 {
			pr.SeenSeconds = last.At.Sub(ts[k].At).Seconds()
		}
		out = append(out, pr)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].CPUSeconds != out[j].CPUSeconds {
			return out[i].CPUSeconds > out[j].CPUSeconds
		}
		return out[i].PID < out[j].PID
	})
	if len(out) > MaxTopProcesses {
		out = out[:MaxTopProcesses]
	}
	return out
}

// summarizeMemory says in one line why there are no memory figures when
// the job or its cgroup has none; a memory file that failed to read is in
// the ticks' errors already, with its cause.
func summarizeMemory(j *Job, first, last *Sample) (*state.JobMemory, []string) {
	c := last.Cgroup
	if c.MemCurrent == nil {
		switch {
		case c.MemOff != "":
			return nil, []string{"memory: the job's cgroup has no memory counters (" + c.MemOff + ")"}
		case j.tasksFrom == "scontrol":
			return nil, []string{"memory: the job has no cgroup of its own (its tasks come from scontrol listpids), so no memory counters"}
		case j.tasksFrom == "cgroup-v1" && j.v1["memory"] == "":
			return nil, []string{"memory: the job's cgroup is in no v1 memory hierarchy, so no memory counters"}
		}
		return nil, nil
	}
	m := &state.JobMemory{UsedBytes: *c.MemCurrent, PeakBytes: c.MemPeak, LimitBytes: c.MemMax,
		HighBytes: c.MemHigh, SwapBytes: c.Swap}
	if len(c.MemEvents) > 0 {
		m.Events = map[string]uint64{}
		for k, v := range c.MemEvents {
			m.Events[k] = v
		}
	}
	if d, ok := delta(first.Cgroup.MemPressureUs, c.MemPressureUs); ok {
		v := float64(d) / 1e6
		m.PressureSomeSeconds = &v
	}
	return m, nil
}

type fileKey struct {
	pid  int32
	fd   int
	path string
}

func summarizeIO(ts []*Sample, first, last *Sample) (*state.JobIO, []string) {
	var errs []string
	io := &state.JobIO{Ticks: len(ts)}
	for _, t := range ts {
		io.TaskSamples += len(t.Tasks)
		for _, task := range t.Tasks {
			if task.State == 'D' {
				io.DStateTaskSamples++
			}
		}
	}
	unreadable := 0
	for _, pid := range both(first, last) {
		a, b := first.Tasks[pid], last.Tasks[pid]
		if d, ok := delta(a.RChar, b.RChar); ok {
			io.ReadBytes += d
		} else if a.RChar == nil || b.RChar == nil {
			unreadable++
		}
		if d, ok := delta(a.ReadBytes, b.ReadBytes); ok {
			io.StorageReadBytes += d
		}
	}
	if unreadable > 0 {
		errs = append(errs, fmt.Sprintf("/proc/PID/io unreadable for %d tasks (not root?): their reads are not counted", unreadable))
	}
	if in, out := len(first.Tasks), len(last.Tasks); len(ts) > 1 && (len(both(first, last)) < in || len(both(first, last)) < out) {
		errs = append(errs, fmt.Sprintf("tasks came and went in the window (%d at the start, %d at the end): reads count only the %d present at both ends", in, out, len(both(first, last))))
	}
	if d, ok := delta(first.Cgroup.IOPressureUs, last.Cgroup.IOPressureUs); ok {
		v := float64(d) / 1e6
		io.PressureSomeSeconds = &v
	}

	// Filesystems: every file seen open in the window, and the bytes read
	// through read-only fds between consecutive ticks (the same fd on the
	// same path; a pos that went back was a seek or a reopen, not counted).
	type fsKey struct{ typ, point, source string }
	byFS := map[fsKey]*state.JobFilesystem{}
	files := map[fsKey]map[fileKey]bool{}
	var prev map[fileKey]File
	for _, t := range ts {
		cur := map[fileKey]File{}
		for pid, task := range t.Tasks {
			for _, f := range task.Files {
				k := fileKey{pid, f.FD, f.Path}
				cur[k] = f
				fk := fsKey{f.Mount.FSType, f.Mount.Point, f.Mount.Source}
				e := byFS[fk]
				if e == nil {
					e = &state.JobFilesystem{Type: fk.typ, MountPoint: fk.point, Source: fk.source}
					byFS[fk] = e
					files[fk] = map[fileKey]bool{}
				}
				files[fk][k] = true
				if p, ok := prev[k]; ok && f.ReadOnly && f.Pos > p.Pos {
					e.ReadBytes += f.Pos - p.Pos
				}
			}
		}
		prev = cur
	}
	for k, e := range byFS {
		e.OpenFiles = len(files[k])
		io.Filesystems = append(io.Filesystems, *e)
	}
	sort.Slice(io.Filesystems, func(a, b int) bool {
		x, y := io.Filesystems[a], io.Filesystems[b]
		if x.ReadBytes != y.ReadBytes {
			return x.ReadBytes > y.ReadBytes
		}
		if x.OpenFiles != y.OpenFiles {
			return x.OpenFiles > y.OpenFiles
		}
		return x.MountPoint < y.MountPoint
	})
	if n := len(io.Filesystems); n > MaxFilesystems {
		// Users can mount (FUSE, user namespaces): the list is theirs to grow.
		io.Filesystems = io.Filesystems[:MaxFilesystems]
		errs = append(errs, fmt.Sprintf("files open on %d filesystems: only the %d read most from are listed", n, MaxFilesystems))
	}
	return io, errs
}
