package jobperf

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sample is one tick: the job's cgroup counters and each task's state, CPU
// time, reads and open files. Nil pointers are counters not read (absent on
// this kernel or cgroup version, or failed: Errors says which).
type Sample struct {
	At     time.Time
	Cgroup Counters
	Tasks  map[int32]*Task
	Errors []string
}

// Counters are the job cgroup's, as the kernel keeps them (since the job
// started; Summarize takes the differences).
type Counters struct {
	// CPUFrom names the CPU counter ("cpu.stat" v2, "cpuacct.usage" v1).
	CPUFrom     string
	CPUUsageNs  *uint64 // v2 cpu.stat usage_usec ×1000; v1 cpuacct.usage
	ThrottledNs *uint64 // v2 cpu.stat throttled_usec ×1000; v1 cpu.stat throttled_time
	// PSI "some" totals, microseconds (cpu.pressure, memory.pressure,
	// io.pressure; v2 only).
	CPUPressureUs, MemPressureUs, IOPressureUs *uint64

	MemCurrent *uint64 // memory.current / memory.usage_in_bytes
	MemPeak    *uint64 // memory.peak / memory.max_usage_in_bytes
	MemMax     *uint64 // memory.max / memory.limit_in_bytes; nil = no limit
	MemHigh    *uint64 // memory.high; nil = none
	Swap       *uint64 // memory.swap.current / memsw.usage - usage
	// MemOff is set when the cgroup itself says it has no memory counters
	// (v2: no memory.current, so the memory controller is off for it) and
	// names that file and the cgroup, for the one line a person reads
	// instead of an ENOENT for each memory file.
	MemOff string
	// MemEvents: v2 memory.events; v1 memory.oom_control's oom_kill and
	// memory.failcnt (as "failcnt").
	MemEvents map[string]uint64
	// CPUs is the job's cpuset (cpuset.cpus.effective, else cpuset.cpus).
	CPUs string
}

// Task is one process at one tick.
type Task struct {
	// Comm is /proc/PID/stat field 2, the process's name (untrusted: the
	// user's choice; escaped when printed).
	Comm         string
	State        byte   // /proc/PID/stat field 3: R, S, D, ...
	UTime, STime uint64 // clock ticks (USER_HZ, 100 a second on Linux)
	// RChar and ReadBytes are /proc/PID/io's (nil: unreadable, e.g. not
	// root and not the owner).
	RChar, ReadBytes *uint64
	CPUsAllowed      string
	UID              string // real UID (/proc/PID/status)
	Threads          int    // /proc/PID/status Threads: (0: not read)
	Files            []File
	PPID             int32 // /proc/PID/stat field 4

	// Read with Options.Hang only. Wchan is /proc/PID/wchan ("" running or
	// unreadable); ProcID SLURM_PROCID from /proc/PID/environ ("" absent or
	// unreadable). ThreadsRead is how many of /proc/PID/task/* were read,
	// DThreads how many were in state D and DWchans (distinct, at most
	// MaxDWchans) what those wait in.
	Wchan  string
	ProcID string
	// NCCLRASAddr and NCCLRASEnable are NCCL_RAS_ADDR and NCCL_RAS_ENABLE
	// from the same environment, at most 64 bytes each ("" absent).
	NCCLRASAddr   string
	NCCLRASEnable string
	// NCCLLibrary is whether a libnccl shared object is mapped
	// (state.NCCLLoaded, state.NCCLNotLoaded, "" not known), from
	// /proc/PID/maps read once per process.
	NCCLLibrary string
	ThreadsRead int
	DThreads    int
	DWchans     []string
	// KStack is the top frames of /proc/PID/stack (the main thread's kernel
	// stack; nil: unreadable, as without root, or empty: running in user
	// space); DStacks those of its other threads in D (distinct, at most
	// MaxStacksPerTask).
	KStack  []string
	DStacks [][]string
}

// Bounds on the threads --hang reads: per task, per tick, and the distinct
// wait functions kept per task.
const (
	MaxThreadsPerTask = 1024
	MaxThreadsPerTick = 16384
	MaxDWchans        = 8
)

// File is one open regular file of a task.
type File struct {
	FD       int
	Path     string // as the fd link reads; untrusted (user-chosen names)
	Pos      uint64
	ReadOnly bool // opened O_RDONLY: a pos advance is bytes read
	Mount    *mount
}

// Filesystems whose files are not data a job reads (pseudo and kernel
// filesystems); their fds are not "open files".
var pseudoFS = map[string]bool{
	"proc": true, "sysfs": true, "devtmpfs": true, "devpts": true, "cgroup": true,
	"cgroup2": true, "mqueue": true, "bpf": true, "tracefs": true, "debugfs": true,
	"securityfs": true, "pstore": true, "configfs": true, "fusectl": true,
	"anon_inodefs": true, "pipefs": true, "sockfs": true, "nsfs": true,
	"efivarfs": true, "binfmt_misc": true, "autofs": true,
}

// Sample reads one tick. A counter or task that cannot be read is left out
// and named in Errors; only a job with nothing readable is an error.
func (j *Job) Sample(ctx context.Context) (*Sample, error) {
	s := &Sample{At: time.Now(), Tasks: map[int32]*Task{}}
	j.cgroupCounters(ctx, s)
	pids, errs := j.tasks(ctx)
	s.Errors = append(s.Errors, errs...)
	mounts := map[string][]mount{} // by mount namespace
	fdBudget := MaxFDsPerTick
	threadBudget := MaxThreadsPerTick
	var taskErrs int
	var firstTaskErr string
	for _, pid := range pids {
		if ctx.Err() != nil {
			s.Errors = append(s.Errors, "the tick's deadline passed: some tasks not read")
			break
		}
		t, err := j.task(ctx, pid, mounts, &fdBudget)
		if err != nil {
			// A task that exited between listing and reading is normal.
			taskErrs++
			if firstTaskErr == "" {
				firstTaskErr = err.Error()
			}
			continue
		}
		if j.hang {
			j.hangFacts(ctx, pid, t, &threadBudget)
		}
		s.Tasks[pid] = t
	}
	if j.hang && threadBudget <= 0 {
		s.Errors = append(s.Errors, fmt.Sprintf("more than %d threads in one tick: the rest not read", MaxThreadsPerTick))
	}
	if taskErrs > 0 {
		s.Errors = append(s.Errors, fmt.Sprintf("%d of %d tasks unreadable (exited?), e.g. %s", taskErrs, len(pids), firstTaskErr))
	}
	if fdBudget <= 0 {
		s.Errors = append(s.Errors, fmt.Sprintf("more than %d open files in one tick: the rest not read", MaxFDsPerTick))
	}
	j.mu.Lock()
	for pid := range s.Tasks {
		if len(j.seen) < MaxTasks {
			j.seen[pid] = true
		}
	}
	if j.uid == "" || j.uid == "0" {
		// The owner is a task not run by root (a job's tasks run as its
		// user; a root one is Slurm's, or the job is root's). A few
		// status reads at most.
		for i, pid := range pids {
			if i >= 16 || (j.uid != "" && j.uid != "0") {
				break
			}
			if t := s.Tasks[pid]; t != nil && t.UID != "" {
				j.uid = t.UID
			} else if st, err := j.status(ctx, pid); err == nil {
				j.uid = st.UID
			}
		}
	}
	j.mu.Unlock()
	if len(s.Tasks) == 0 && s.Cgroup.CPUUsageNs == nil && s.Cgroup.MemCurrent == nil {
		return s, fmt.Errorf("job %s: neither its cgroup counters nor any task could be read: %s", j.id, strings.Join(s.Errors, "; "))
	}
	return s, nil
}

func (j *Job) status(ctx context.Context, pid int32) (procStatus, error) {
	p := path.Join(j.proc, strconv.Itoa(int(pid)), "status")
	data, err := j.r.read(ctx, p)
	if err != nil {
		return procStatus{}, err
	}
	return parseProcStatus(p, data)
}

// cgroupCounters reads the job cgroup's counters into s.Cgroup.
func (j *Job) cgroupCounters(ctx context.Context, s *Sample) {
	c := &s.Cgroup
	errf := func(err error) { s.Errors = append(s.Errors, err.Error()) }
	one := func(p string) *uint64 {
		data, err := j.r.read(ctx, p)
		if err != nil {
			errf(err)
			return nil
		}
		v, err := parseUint(p, data)
		if err != nil {
			errf(err)
		}
		return v
	}
	keyed := func(p string, optional bool) map[string]uint64 {
		data, err := j.r.read(ctx, p)
		if err != nil {
			if !optional {
				errf(err)
			}
			return nil
		}
		m, err := parseKeyed(p, data)
		if err != nil {
			errf(err)
		}
		return m
	}
	pressure := func(p string) *uint64 {
		data, err := j.r.read(ctx, p)
		if err != nil {
			return nil // PSI off (psi=0) or a kernel before 4.20: absent, not an error
		}
		v, err := parsePressure(p, data)
		if err != nil {
			errf(err)
			return nil
		}
		return &v
	}
	cpus := func(dir string) {
		for _, f := range []string{"cpuset.cpus.effective", "cpuset.cpus"} {
			if data, err := j.r.read(ctx, path.Join(dir, f)); err == nil && strings.TrimSpace(string(data)) != "" {
				c.CPUs = strings.TrimSpace(string(data))
				return
			}
		}
	}
	if d := j.v2; d != "" {
		// Documentation/admin-guide/cgroup-v2.rst: "cpu.stat", "memory.*",
		// "PSI - Pressure Stall Information".
		if st := keyed(path.Join(d, "cpu.stat"), false); st != nil {
			c.CPUFrom = "cpu.stat"
			if v, ok := st["usage_usec"]; ok {
				v *= 1000
				c.CPUUsageNs = &v
			}
			if v, ok := st["throttled_usec"]; ok {
				v *= 1000
				c.ThrottledNs = &v
			}
		}
		c.CPUPressureUs = pressure(path.Join(d, "cpu.pressure"))
		c.MemPressureUs = pressure(path.Join(d, "memory.pressure"))
		c.IOPressureUs = pressure(path.Join(d, "io.pressure"))
		// The kernel gives a cgroup its memory.* files only while the
		// memory controller is enabled for it (listed in the parent's
		// cgroup.subtree_control; cgroup-v2.rst, "Enabling and Disabling").
		// Without memory.current the others are missing too: one cause,
		// said once, not an ENOENT for each file.
		cur := path.Join(d, "memory.current")
		switch data, err := j.r.read(ctx, cur); {
		case errors.Is(err, fs.ErrNotExist):
			c.MemOff = "memory.current absent: the memory controller is off for " + path.Base(d)
		case err != nil:
			errf(err)
		default:
			if c.MemCurrent, err = parseUint(cur, data); err != nil {
				errf(err)
			}
			if data, err := j.r.read(ctx, path.Join(d, "memory.peak")); err == nil { // 5.19+
				c.MemPeak, _ = parseUint(path.Join(d, "memory.peak"), data)
			}
			c.MemMax = one(path.Join(d, "memory.max"))
			c.MemHigh = one(path.Join(d, "memory.high"))
			if data, err := j.r.read(ctx, path.Join(d, "memory.swap.current")); err == nil { // no swap accounting: absent
				c.Swap, _ = parseUint(path.Join(d, "memory.swap.current"), data)
			}
			c.MemEvents = keyed(path.Join(d, "memory.events"), false)
		}
		cpus(d)
		return
	}
	if len(j.v1) == 0 {
		return
	}
	// Documentation/admin-guide/cgroup-v1/cpuacct.rst, memory.rst, cpusets.rst.
	if d := j.v1["cpuacct"]; d != "" {
		c.CPUFrom = "cpuacct.usage"
		c.CPUUsageNs = one(path.Join(d, "cpuacct.usage"))
	}
	cpuDir := j.v1["cpu"]
	if cpuDir == "" {
		cpuDir = j.v1["cpuacct"] // usually co-mounted as cpu,cpuacct
	}
	if cpuDir != "" {
		if st := keyed(path.Join(cpuDir, "cpu.stat"), true); st != nil {
			if v, ok := st["throttled_time"]; ok {
				c.ThrottledNs = &v
			}
		}
	}
	if d := j.v1["memory"]; d != "" {
		c.MemCurrent = one(path.Join(d, "memory.usage_in_bytes"))
		c.MemPeak = one(path.Join(d, "memory.max_usage_in_bytes"))
		if v := one(path.Join(d, "memory.limit_in_bytes")); v != nil && *v < v1Unlimited {
			c.MemMax = v
		}
		if data, err := j.r.read(ctx, path.Join(d, "memory.memsw.usage_in_bytes")); err == nil && c.MemCurrent != nil {
			if ms, err := parseUint("memory.memsw.usage_in_bytes", data); err == nil && ms != nil && *ms >= *c.MemCurrent {
				sw := *ms - *c.MemCurrent
				c.Swap = &sw
			}
		}
		ev := map[string]uint64{}
		if oc := keyed(path.Join(d, "memory.oom_control"), false); oc != nil {
			if v, ok := oc["oom_kill"]; ok { // 4.13+
				ev["oom_kill"] = v
			}
		}
		if v := one(path.Join(d, "memory.failcnt")); v != nil {
			ev["failcnt"] = *v
		}
		if len(ev) > 0 {
			c.MemEvents = ev
		}
	}
	if d := j.v1["cpuset"]; d != "" {
		cpus(d)
	}
}

// task reads one process: stat, status, io, and its open files.
func (j *Job) task(ctx context.Context, pid int32, mounts map[string][]mount, fdBudget *int) (*Task, error) {
	dir := path.Join(j.proc, strconv.Itoa(int(pid)))
	p := path.Join(dir, "stat")
	data, err := j.r.read(ctx, p)
	if err != nil {
		return nil, err
	}
	st, err := parseProcStat(p, data)
	if err != nil {
		return nil, err
	}
	t := &Task{Comm: st.Comm, State: st.State, UTime: st.UTime, STime: st.STime, PPID: st.PPID}
	if s, err := j.status(ctx, pid); err == nil {
		t.CPUsAllowed, t.UID, t.Threads = s.CPUsAllowed, s.UID, s.Threads
	}
	if data, err := j.r.read(ctx, path.Join(dir, "io")); err == nil {
		if m, err := parseKeyed(path.Join(dir, "io"), data); err == nil {
			if v, ok := m["rchar"]; ok {
				t.RChar = &v
			}
			if v, ok := m["read_bytes"]; ok {
				t.ReadBytes = &v
			}
		}
	}
	j.files(ctx, dir, t, mounts, fdBudget)
	return t, nil
}

// files lists the task's open regular files: fd links naming an absolute
// path on a filesystem that holds data (not /proc, sysfs, devices, pipes,
// sockets), not directories. The file itself is never opened or stat'ed: a
// hung NFS server must not hang the sampler, and the link, the mount table
// and fdinfo are all in /proc.
func (j *Job) files(ctx context.Context, dir string, t *Task, mounts map[string][]mount, budget *int) {
	es, err := j.r.readDirN(ctx, path.Join(dir, "fd"), MaxFDsPerTask)
	if err != nil {
		return
	}
	var ms []mount
	haveMounts := false
	n := 0
	for _, e := range es {
		if n >= MaxFDsPerTask || *budget <= 0 {
			break
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 0 {
			continue
		}
		n++
		*budget--
		target, err := j.r.readlink(ctx, path.Join(dir, "fd", e.Name()))
		if err != nil || !strings.HasPrefix(target, "/") {
			continue // pipe:[...], socket:[...], anon_inode:...
		}
		target = strings.TrimSuffix(target, " (deleted)")
		if !haveMounts {
			ms = j.taskMounts(ctx, dir, mounts)
			haveMounts = true
		}
		m := mountOf(ms, target)
		if m == nil || pseudoFS[m.FSType] {
			continue
		}
		p := path.Join(dir, "fdinfo", e.Name())
		data, err := j.r.read(ctx, p)
		if err != nil {
			continue
		}
		fi, err := parseFdinfo(p, data)
		if err != nil || fi.Flags&oDirectory != 0 {
			continue
		}
		t.Files = append(t.Files, File{FD: fd, Path: target, Pos: fi.Pos, ReadOnly: fi.Flags&oAccMode == oRDONLY, Mount: m})
	}
}

// taskMounts reads the task's mount table once per mount namespace per tick.
func (j *Job) taskMounts(ctx context.Context, dir string, cache map[string][]mount) []mount {
	ns, err := j.r.readlink(ctx, path.Join(dir, "ns/mnt"))
	if err == nil {
		if ms, ok := cache[ns]; ok {
			return ms
		}
	}
	p := path.Join(dir, "mountinfo")
	data, err2 := j.r.read(ctx, p)
	if err2 != nil {
		return nil
	}
	ms, err2 := parseMountinfo(p, data)
	if err2 != nil {
		return nil
	}
	if err == nil {
		cache[ns] = ms
	}
	return ms
}

// mountOf is the mount a path lives on: the longest mount point that is a
// prefix of it, the later of equal ones (a mount over another hides it).
func mountOf(ms []mount, p string) *mount {
	var best *mount
	for i := range ms {
		mp := ms[i].Point
		if !(mp == "/" || p == mp || strings.HasPrefix(p, mp+"/")) {
			continue
		}
		if best == nil || len(mp) >= len(best.Point) {
			best = &ms[i]
		}
	}
	return best
}

// hangFacts reads what --hang needs of one task: its wchan, its threads'
// states (and, for those in D, their wchan) and, once, its SLURM_PROCID
// and whether it maps a libnccl shared object.
// Unreadable files (another user's process without root, a kernel that
// hides wchan) leave the fields empty: they are facts not known.
func (j *Job) hangFacts(ctx context.Context, pid int32, t *Task, budget *int) {
	dir := path.Join(j.proc, strconv.Itoa(int(pid)))
	if data, err := j.r.read(ctx, path.Join(dir, "wchan")); err == nil {
		t.Wchan, _ = parseWchan(path.Join(dir, "wchan"), data)
	}
	j.mu.Lock()
	env, known := j.procIDs[pid]
	j.mu.Unlock()
	if !known {
		p := path.Join(dir, "environ")
		if data, err := j.r.read(ctx, p); err == nil {
			env = parseHangEnv(p, data)
		}
		// The libraries a process maps change only by dlopen; NCCL's is
		// mapped at start-up (a PyTorch import) or at the first
		// communicator, before a hang: read once, with the environment.
		env.ncclLib = j.r.mapsNCCL(ctx, path.Join(dir, "maps"))
		j.mu.Lock()
		if len(j.procIDs) < MaxTasks {
			j.procIDs[pid] = env
		}
		j.mu.Unlock()
	}
	t.ProcID, t.NCCLRASAddr, t.NCCLRASEnable, t.NCCLLibrary = env.procID, env.rasAddr, env.rasEnable, env.ncclLib
	t.KStack = j.readStack(ctx, dir)
	if *budget <= 0 {
		return
	}
	es, err := j.r.readDirN(ctx, path.Join(dir, "task"), min(MaxThreadsPerTask, *budget))
	if err != nil {
		return
	}
	stackReads := 0 // the D threads' stacks read this tick
	for _, e := range es {
		if *budget <= 0 || ctx.Err() != nil {
			return
		}
		if _, err := strconv.ParseUint(e.Name(), 10, 31); err != nil {
			continue
		}
		*budget--
		tdir := path.Join(dir, "task", e.Name())
		data, err := j.r.read(ctx, path.Join(tdir, "stat"))
		if err != nil {
			continue // the thread ended between listing and reading
		}
		st, err := parseProcStat(path.Join(tdir, "stat"), data)
		if err != nil {
			continue
		}
		t.ThreadsRead++
		if st.State != 'D' {
			continue
		}
		t.DThreads++
		if data, err := j.r.read(ctx, path.Join(tdir, "wchan")); err == nil {
			if w, _ := parseWchan(path.Join(tdir, "wchan"), data); w != "" && len(t.DWchans) < MaxDWchans && !slices.Contains(t.DWchans, w) {
				t.DWchans = append(t.DWchans, w)
			}
		}
		if e.Name() != strconv.Itoa(int(pid)) && stackReads < MaxStacksPerTask {
			stackReads++
			if st := j.readStack(ctx, tdir); len(st) > 0 && !slices.ContainsFunc(t.DStacks, func(x []string) bool { return slices.Equal(x, st) }) {
				t.DStacks = append(t.DStacks, st)
			}
		}
	}
}
