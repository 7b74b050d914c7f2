package jobperf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/internal/rootfs"
	"github.com/gpuprobe/gpuprobe/state"
)

// Bounds on what one tick reads. A job past them is sampled in part, and
// Summarize says so.
const (
	// MaxTasks bounds the job's processes sampled per tick.
	MaxTasks = 4096
	// MaxFDsPerTask bounds the open files looked at per task, and
	// MaxFDsPerTick all of them in one tick (a fdinfo read each).
	MaxFDsPerTask = 4096
	MaxFDsPerTick = 65536
	// maxCgroupDirs bounds the directories walked under a job's cgroup
	// (steps, user/slurm, task_N), maxCgroupDepth their depth.
	maxCgroupDirs  = 1024
	maxCgroupDepth = 8
	// defaultCallTimeout bounds one read when Options leaves it zero.
	defaultCallTimeout = 5 * time.Second
)

// Options say where to look and for which job.
type Options struct {
	// Root is collect.Sources.Root: the machine's filesystem rooted at "/"
	// (read through package rootfs); nil is this machine.
	Root fs.FS
	// SysfsRoot and ProcfsRoot default to "/sys" and "/proc".
	SysfsRoot, ProcfsRoot string
	// JobID is the job to sample; "" is the job holding SelfPID's cgroup.
	JobID string
	// SelfPID is the process whose cgroup names the job when JobID is "";
	// 0 is "self".
	SelfPID int
	// ListPIDs is the fallback when no job cgroup exists (the command
	// passes `scontrol listpids` here); nil is no fallback.
	ListPIDs func(ctx context.Context, jobID string) ([]int32, error)
	// CallTimeout bounds each read (deadline.Do: a file that hung is not
	// read again while its first read is stuck).
	CallTimeout time.Duration
	// Hang also reads, per task and tick, what `gpuprobe job --hang`
	// needs: wchan, each thread's state (and wchan when in D) and, once
	// per task, SLURM_PROCID from its environment.
	Hang bool
}

// Job is one running job found on this node: where its tasks and counters
// are.
type Job struct {
	id        string
	uid       string
	tasksFrom string // "cgroup-v2", "cgroup-v1", "scontrol"
	// cgroupPath is the job's directory relative to the cgroup root
	// ("/system.slice/slurmstepd.scope/job_4242").
	cgroupPath string
	// v2 is the job's directory in the cgroup2 mount; v1 maps a v1
	// controller ("cpuacct", "memory", "cpuset", "freezer", "cpu") to the
	// job's directory in that controller's mount.
	v2 string
	v1 map[string]string
	// listPIDs is Options.ListPIDs when the tasks come from scontrol.
	listPIDs func(ctx context.Context, jobID string) ([]int32, error)

	r    reader
	proc string

	hang bool

	mu   sync.Mutex
	seen map[int32]bool
	// procIDs caches each task's SLURM_PROCID ("" none or unreadable):
	// the environment a process was exec'd with does not change.
	procIDs map[int32]hangEnv
}

// reader reads through rootfs with every call under deadline.Do, keyed by
// path, so a hung file costs one goroutine once.
type reader struct {
	fs rootfs.FS
	d  time.Duration
}

func (r reader) read(ctx context.Context, p string) ([]byte, error) {
	return deadline.Do(ctx, "jobperf:"+p, r.d, func() ([]byte, error) { return r.fs.ReadFile(p) })
}

// mapsNCCL scans /proc/PID/maps at p for a libnccl mapping under the
// same deadline, reading at most MaxMapsBytes (scanMapsNCCL): "" when it
// cannot be read (another user's process without root, a deadline).
func (r reader) mapsNCCL(ctx context.Context, p string) string {
	v, err := deadline.Do(ctx, "jobperf:"+p, r.d, func() (string, error) {
		f, err := r.fs.Open(p)
		if err != nil {
			return "", err
		}
		defer f.Close()
		return scanMapsNCCL(f, MaxMapsBytes), nil
	})
	if err != nil {
		return ""
	}
	return v
}

func (r reader) readDir(ctx context.Context, p string) ([]fs.DirEntry, error) {
	return deadline.Do(ctx, "jobperf:"+p, r.d, func() ([]fs.DirEntry, error) { return r.fs.ReadDir(p) })
}

// readDirN lists at most n entries (a process may hold a million fds: the
// listing itself must be bounded, not only what is done with it).
func (r reader) readDirN(ctx context.Context, p string, n int) ([]fs.DirEntry, error) {
	return deadline.Do(ctx, "jobperf:"+p, r.d, func() ([]fs.DirEntry, error) {
		f, err := r.fs.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		d, ok := f.(interface {
			ReadDir(int) ([]fs.DirEntry, error)
		})
		if !ok {
			return nil, fmt.Errorf("%s: not a directory", p)
		}
		es, err := d.ReadDir(n)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return es, err
	})
}

func (r reader) readlink(ctx context.Context, p string) (string, error) {
	return deadline.Do(ctx, "jobperf:"+p, r.d, func() (string, error) { return r.fs.Readlink(p) })
}

func (r reader) isDir(ctx context.Context, p string) bool {
	fi, err := deadline.Do(ctx, "jobperf:"+p, r.d, func() (fs.FileInfo, error) { return r.fs.Stat(p) })
	return err == nil && fi.IsDir()
}

var jobIDRe = regexp.MustCompile(`^[0-9]{1,10}$`)

// Find locates the job: its cgroup (v2, then v1) as slurmd's cgroup plugins
// lay it out, else its PIDs from ListPIDs. The error says everything that
// was tried.
func Find(ctx context.Context, o Options) (*Job, error) {
	if o.ProcfsRoot == "" {
		o.ProcfsRoot = "/proc"
	}
	if o.SysfsRoot == "" {
		o.SysfsRoot = "/sys"
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = defaultCallTimeout
	}
	r := reader{fs: rootfs.FS{Tree: o.Root}, d: o.CallTimeout}
	self := "self"
	if o.SelfPID > 0 {
		self = strconv.Itoa(o.SelfPID)
	}
	j := &Job{r: r, proc: o.ProcfsRoot, seen: map[int32]bool{}, id: o.JobID, hang: o.Hang, procIDs: map[int32]hangEnv{}}
	if j.id != "" && !jobIDRe.MatchString(j.id) {
		return nil, fmt.Errorf("job ID %q: want the number Slurm gives (squeue -h -o %%A)", clip(j.id))
	}

	mi := path.Join(o.ProcfsRoot, self, "mountinfo")
	var tried []string
	cg, mountErr := cgroupMounts(ctx, r, mi, o.SysfsRoot)
	if mountErr != nil {
		tried = append(tried, mountErr.Error())
	}

	if j.id == "" {
		p := path.Join(o.ProcfsRoot, self, "cgroup")
		data, err := r.read(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("no --job given and %s unreadable: %w", p, err)
		}
		lines, err := parseProcCgroup(p, data)
		if err != nil {
			return nil, fmt.Errorf("no --job given: %w", err)
		}
		if !j.fromSelf(ctx, lines, cg) {
			return nil, fmt.Errorf("no --job given and %s names no Slurm job_<id> cgroup: run inside the job (srun --overlap --jobid=ID gpuprobe job) or pass --job ID", p)
		}
		if j.v2 != "" || len(j.v1) > 0 {
			j.uidFromPath()
			return j, nil
		}
		tried = append(tried, fmt.Sprintf("%s names job %s, but that directory is under no cgroup mount of %s", p, j.id, cg.source))
	}
	// The layouts slurmd's plugins make, by job ID.
	t, ok := j.search(ctx, cg, o.ProcfsRoot)
	tried = append(tried, t...)
	if ok {
		j.uidFromPath()
		return j, nil
	}

	if o.ListPIDs == nil {
		return nil, fmt.Errorf("job %s: %s; no scontrol fallback", j.id, strings.Join(tried, "; "))
	}
	pids, err := o.ListPIDs(ctx, j.id)
	if err == nil && len(pids) == 0 {
		err = errors.New("it listed no processes on this node")
	}
	if err != nil {
		return nil, fmt.Errorf("job %s: %s; and scontrol listpids failed: %w", j.id, strings.Join(tried, "; "), err)
	}
	j.tasksFrom, j.listPIDs = "scontrol", o.ListPIDs
	return j, nil
}

// cgroupMounts are the cgroup filesystems of the mount namespace, from
// mountinfo; when that cannot be read, the usual places under sysfs.
type cgMounts struct {
	v2     *mount            // the cgroup2 mount (Point rewritten under sysfs)
	v1     map[string]*mount // controller -> its v1 mount
	source string
}

func cgroupMounts(ctx context.Context, r reader, mi, sysfs string) (cgMounts, error) {
	out := cgMounts{v1: map[string]*mount{}, source: mi}
	data, err := r.read(ctx, mi)
	var ms []mount
	if err == nil {
		ms, err = parseMountinfo(mi, data)
	}
	if err != nil {
		// No mountinfo: the layout systemd and every distribution use.
		out.source = "the default " + path.Join(sysfs, "fs/cgroup")
		base := path.Join(sysfs, "fs/cgroup")
		if _, e := r.read(ctx, path.Join(base, "cgroup.controllers")); e == nil {
			out.v2 = &mount{Root: "/", Point: base, FSType: "cgroup2"}
		}
		for _, c := range []string{"cpuacct", "cpu", "memory", "cpuset", "freezer"} {
			if r.isDir(ctx, path.Join(base, c)) {
				out.v1[c] = &mount{Root: "/", Point: path.Join(base, c), FSType: "cgroup"}
			}
		}
		return out, fmt.Errorf("%s unreadable (%v): tried %s", mi, err, out.source)
	}
	for i := range ms {
		m := ms[i]
		// Mount points are absolute on the machine; with --path.sysfs
		// they live under another root.
		if rest, ok := strings.CutPrefix(m.Point, "/sys/"); ok && sysfs != "/sys" {
			m.Point = path.Join(sysfs, rest)
		}
		switch m.FSType {
		case "cgroup2":
			out.v2 = &m
		case "cgroup":
			for _, o := range m.SuperOpts {
				switch o {
				case "cpu", "cpuacct", "cpuset", "memory", "freezer":
					out.v1[o] = &m
				}
			}
		}
	}
	return out, nil
}

// under joins a cgroup path (as /proc/PID/cgroup writes it) to a mount.
func (m *mount) under(p string) string {
	rel := p
	if m.Root != "/" {
		rel = strings.TrimPrefix(p, m.Root)
	}
	return path.Join(m.Point, rel)
}

// fromSelf takes the job from the process's own cgroup lines: its ID and
// the job directory in whichever hierarchy names it. slurmd's v1 plugin uses
// the same relative path in every controller it manages, so a job found
// through one v1 line (devices, say) is looked up in every v1 controller
// gpuprobe reads.
func (j *Job) fromSelf(ctx context.Context, lines []procCgroup, cg cgMounts) bool {
	var v2dir, v1dir string
	for _, l := range lines {
		id, dir, ok := jobInPath(l.Path)
		if !ok {
			continue
		}
		j.id = id
		if len(l.Controllers) == 0 {
			v2dir = dir
		} else if v1dir == "" {
			v1dir = dir
		}
	}
	if j.id == "" {
		return false
	}
	if v2dir != "" && cg.v2 != nil && j.r.isDir(ctx, cg.v2.under(v2dir)) {
		j.v2, j.cgroupPath, j.tasksFrom = cg.v2.under(v2dir), v2dir, "cgroup-v2"
		return true
	}
	if v1dir != "" {
		for c, m := range cg.v1 {
			if d := m.under(v1dir); j.r.isDir(ctx, d) {
				if j.v1 == nil {
					j.v1 = map[string]string{}
				}
				j.v1[c] = d
				j.cgroupPath, j.tasksFrom = v1dir, "cgroup-v1"
			}
		}
	}
	return true
}

// search looks for job_<id> where slurmd's cgroup plugins put it.
//
// cgroup/v2 (src/plugins/cgroup/v2/cgroup_v2.c, _set_int_cg_ns and
// cgroup_p_step_create): <mount><init prefix>/system.slice/slurmstepd.scope/job_<id>
// (<nodename>_slurmstepd.scope with MULTIPLE_SLURMD), the init prefix being
// the dirname of /proc/1/cgroup's path ("" outside containers).
//
// cgroup/v1 (src/plugins/cgroup/v1/xcgroup.c, xcgroup_create_slurm_cg and
// xcgroup_create_hierarchy): <mount>/<CgroupPrepend, default "/slurm", or
// "/slurm_<nodename>">/uid_<uid>/job_<id>, one tree per controller.
func (j *Job) search(ctx context.Context, cg cgMounts, proc string) ([]string, bool) {
	var tried []string
	leaf := "job_" + j.id
	if m := cg.v2; m != nil {
		prefixes := []string{""}
		if data, err := j.r.read(ctx, path.Join(proc, "1/cgroup")); err == nil {
			if lines, err := parseProcCgroup("/proc/1/cgroup", data); err == nil {
				for _, l := range lines {
					if len(l.Controllers) == 0 {
						if d := path.Dir(l.Path); d != "/" && d != "." {
							prefixes = append(prefixes, d)
						}
					}
				}
			}
		}
		for _, pre := range prefixes {
			slice := path.Join(m.under("/"), pre, "system.slice")
			scopes := []string{"slurmstepd.scope"}
			if es, err := j.r.readDir(ctx, slice); err == nil {
				for _, e := range es {
					if strings.HasSuffix(e.Name(), "_slurmstepd.scope") {
						scopes = append(scopes, e.Name())
					}
				}
			}
			for _, sc := range scopes {
				d := path.Join(slice, sc, leaf)
				if j.r.isDir(ctx, d) {
					j.v2, j.tasksFrom = d, "cgroup-v2"
					j.cgroupPath = path.Join("/", pre, "system.slice", sc, leaf)
					if m.Root != "/" {
						j.cgroupPath = path.Join(m.Root, j.cgroupPath)
					}
					return tried, true
				}
			}
			tried = append(tried, fmt.Sprintf("no cgroup %s under %s/{,*_}slurmstepd.scope", leaf, slice))
		}
	} else {
		tried = append(tried, "no cgroup2 mount in "+cg.source)
	}

	ctls := slices.Sorted(func(yield func(string) bool) {
		for c := range cg.v1 {
			if !yield(c) {
				return
			}
		}
	})
	for _, c := range ctls {
		m := cg.v1[c]
		top := m.under("/")
		es, err := j.r.readDir(ctx, top)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s unreadable: %v", top, err))
			continue
		}
		found := false
		for _, e := range es {
			if n := e.Name(); n != "slurm" && !strings.HasPrefix(n, "slurm_") {
				continue
			}
			uids, err := j.r.readDir(ctx, path.Join(top, e.Name()))
			if err != nil {
				continue
			}
			for _, u := range uids {
				if !strings.HasPrefix(u.Name(), "uid_") {
					continue
				}
				d := path.Join(top, e.Name(), u.Name(), leaf)
				if j.r.isDir(ctx, d) {
					if j.v1 == nil {
						j.v1 = map[string]string{}
					}
					j.v1[c] = d
					j.cgroupPath = path.Join("/", e.Name(), u.Name(), leaf)
					j.tasksFrom = "cgroup-v1"
					found = true
				}
			}
		}
		if !found {
			tried = append(tried, fmt.Sprintf("no cgroup %s under %s/slurm{,_*}/uid_*", leaf, top))
		}
	}
	if len(cg.v1) == 0 && cg.v2 == nil {
		tried = append(tried, "no cgroup v1 controller mounted")
	}
	return tried, len(j.v1) > 0
}

func (j *Job) uidFromPath() {
	if m := uidComponent.FindStringSubmatch(j.cgroupPath); m != nil {
		j.uid = m[1]
	}
}

// ID is the job's ID.
func (j *Job) ID() string { return j.id }

// UID is the job owner's numeric user ID: from cgroup v1's uid_<uid>
// directory, else the real UID of the first task read; "" if unknown.
// Mapping it to a name is the caller's (the process table's) job.
func (j *Job) UID() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.uid
}

// Describe fills what the job is: its ID, owner (the numeric UID; the
// command maps it to a name), where its tasks came from, its cgroup and the
// PIDs seen so far (sorted, at most MaxTasks).
func (j *Job) Describe(p *state.JobPerf) {
	j.mu.Lock()
	defer j.mu.Unlock()
	p.JobID = j.id
	p.User = j.uid
	p.TasksFrom = j.tasksFrom
	p.CgroupPath = j.cgroupPath
	p.PIDs = p.PIDs[:0]
	for pid := range j.seen {
		p.PIDs = append(p.PIDs, pid)
	}
	slices.Sort(p.PIDs)
	if len(p.PIDs) > MaxTasks {
		p.PIDs = p.PIDs[:MaxTasks]
	}
	if len(p.PIDs) == 0 {
		p.PIDs = nil
	}
}

// tasks lists the job's processes now: the union of cgroup.procs under the
// job's directory (every step, recursively), or ListPIDs.
func (j *Job) tasks(ctx context.Context) ([]int32, []string) {
	if j.tasksFrom == "scontrol" {
		pids, err := j.listPIDs(ctx, j.id)
		if err != nil {
			return nil, []string{"scontrol listpids: " + err.Error()}
		}
		return boundPIDs(pids)
	}
	var roots []string
	if j.v2 != "" {
		roots = append(roots, j.v2)
	}
	for _, c := range []string{"freezer", "cpuacct", "memory", "cpuset", "cpu"} {
		if d := j.v1[c]; d != "" && !slices.Contains(roots, d) {
			roots = append(roots, d)
		}
	}
	set := map[int32]bool{}
	var errs []string
	dirs := 0
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		if dirs >= maxCgroupDirs || depth > maxCgroupDepth {
			return
		}
		dirs++
		p := path.Join(d, "cgroup.procs")
		if data, err := j.r.read(ctx, p); err == nil {
			pids, err := parsePIDs(p, data)
			if err != nil {
				errs = append(errs, err.Error())
			}
			for _, pid := range pids {
				set[pid] = true
			}
		} else if depth == 0 {
			errs = append(errs, err.Error())
		}
		es, err := j.r.readDir(ctx, d)
		if err != nil {
			return
		}
		for _, e := range es {
			// cgroup/v2 parks slurmstepd in step_<x>/slurm (cgroup_v2.c,
			// cgroup_p_step_create): Slurm's own process, not the job's work.
			if e.IsDir() && !(j.v2 != "" && depth == 1 && e.Name() == "slurm") {
				walk(path.Join(d, e.Name()), depth+1)
			}
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	if dirs >= maxCgroupDirs {
		errs = append(errs, fmt.Sprintf("more than %d cgroup directories under the job: the rest not listed", maxCgroupDirs))
	}
	pids := make([]int32, 0, len(set))
	for p := range set {
		pids = append(pids, p)
	}
	out, e := boundPIDs(pids)
	return out, append(errs, e...)
}

func boundPIDs(pids []int32) ([]int32, []string) {
	slices.Sort(pids)
	pids = slices.Compact(pids)
	if len(pids) > MaxTasks {
		return pids[:MaxTasks], []string{fmt.Sprintf("%d tasks: only the first %d (by PID) sampled", len(pids), MaxTasks)}
	}
	return pids, nil
}
