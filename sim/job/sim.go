// Package sim lays a simulated running Slurm job over a simulated node's
// tree, for `gpuprobe job --simulate MODEL:job-...`: the job's cgroup v2
// directory as slurmd's cgroup/v2 plugin makes it
// (/sys/fs/cgroup/system.slice/slurmstepd.scope/job_<id>/step_0/user/task_N)
// and /proc entries for its ranks and data-loader workers (stat, status, io,
// fd links, fdinfo, mountinfo), all from simulate.SimJob and the scenario
// the spec names. The real jobperf collector reads it.
//
// The counters advance with the clock (now() minus the instant FS was
// called, plus an hour the job has already run), so two ticks a second apart
// differ as a running job's do. The rates are the scenario's: CPU busy
// percent of the allocated CPUs, reads at ReadMiBps on a file under a mount
// of ReadFSType, DStateTasks tasks in state D, memory at MemPercentOfLimit
// of LimitMiB with SwapMiB swapped and OOMKills oom_kill events. Nothing here
// is a reference for healthy: the thresholds that judge these figures are in
// docs/job.md.
package job

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// AlreadyRan is how long the simulated job has run when FS is called, so
// the first tick's counters are not zero.
const AlreadyRan = time.Hour

// JobCgroup is the job's cgroup directory relative to the cgroup2 mount.
var JobCgroup = "/system.slice/slurmstepd.scope/job_" + simulate.SimJob.ID

const cgroupMount = "sys/fs/cgroup"

// FS returns base with the spec's simulated job laid over it, or base itself
// when the spec names no job scenario. now is the clock (nil: time.Now).
func FS(base fs.FS, spec *simulate.Spec, now func() time.Time) (fs.FS, error) {
	sc, err := spec.Job()
	if err != nil || sc == nil {
		return base, err
	}
	if now == nil {
		now = time.Now
	}
	if base == nil {
		base = emptyFS{}
	}
	o := &overlay{base: base, now: now, start: now(), files: map[string]gen{}, links: map[string]string{}, dirs: map[string]map[string]bool{"": {}}}
	if err := build(o, sc); err != nil {
		return nil, err
	}
	return o, nil
}

// gen writes a file's contents for a job that has run el seconds.
type gen func(el float64) string

// task is one simulated process.
type task struct {
	pid     int32
	rank    bool
	index   int // rank number, or worker number
	taskDir int // which task_N cgroup holds it
	cpu     float64
	read    float64 // bytes/s through its data file
	state   byte
	ppid    int32
	procID  int // SLURM_PROCID: its rank's
}

// SlurmstepdPID is the simulated step's slurmstepd, the ranks' parent (in
// the step's slurm cgroup, not among the job's tasks).
const SlurmstepdPID = 70050

// wchanOf is the kernel function a simulated thread in state st sleeps in.
func wchanOf(st byte) string {
	switch st {
	case 'D':
		return "rpc_wait_bit_killable" // an NFS RPC (net/sunrpc/sched.c)
	case 'S':
		return "futex_wait_queue"
	}
	return "0"
}

// stackOf is /proc/PID/stack of a simulated thread in state st, in the
// kernel's format ("[<0>] function+off/size [module]", as in the stacks
// quoted in microsoft/pai#2117 and nfs-ganesha/nfs-ganesha#1327): for D,
// an NFS read waiting on its RPC (a composite of net/sunrpc and fs/nfs
// functions, not one captured stack); for S, a futex wait.
func stackOf(st byte) string {
	switch st {
	case 'D':
		return "[<0>] rpc_wait_bit_killable+0x24/0xa0 [sunrpc]\n[<0>] __rpc_wait_for_completion_task+0x2d/0x30 [sunrpc]\n[<0>] nfs4_do_call_sync+0x1e9/0x2d0 [nfsv4]\n[<0>] nfs4_proc_getattr+0x95/0xf0 [nfsv4]\n[<0>] __nfs_revalidate_inode+0xd1/0x340 [nfs]\n[<0>] nfs_file_read+0x46/0x90 [nfs]\n[<0>] vfs_read+0x1e5/0x320\n[<0>] ksys_read+0x6f/0xf0\n[<0>] do_syscall_64+0x5b/0x170\n[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e\n"
	case 'S':
		return "[<0>] futex_wait_queue+0x60/0x90\n[<0>] __futex_wait+0x14f/0x1b0\n[<0>] futex_wait+0x7a/0x120\n[<0>] do_futex+0x105/0x1c0\n[<0>] __x64_sys_futex+0x127/0x1f0\n[<0>] do_syscall_64+0x5b/0x170\n[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e\n"
	}
	return ""
}

func build(o *overlay, sc *simulate.JobScenario) error {
	j := simulate.SimJob
	if len(sc.RanksOnGPU) == 0 || len(j.RankPIDs) < len(sc.RanksOnGPU) {
		return fmt.Errorf("simulated job %s: %d ranks in the scenario, %d rank PIDs", sc.Fault, len(sc.RanksOnGPU), len(j.RankPIDs))
	}
	// The job's processes: a rank per GPU it uses, and the data loader's
	// workers, split over the ranks' task cgroups.
	var tasks []*task
	var ranks []int
	for i, on := range sc.RanksOnGPU {
		if on {
			ranks = append(ranks, i)
		}
	}
	if len(ranks) == 0 {
		return fmt.Errorf("simulated job %s: no rank runs on a GPU", sc.Fault)
	}
	for n, i := range ranks {
		st := byte('S')
		if i < len(sc.GPUUtil) && sc.GPUUtil[i] >= 50 {
			st = 'R' // a rank feeding a busy GPU spins in the CUDA runtime
		}
		if i < len(sc.PowerPercent) && sc.PowerPercent[i] < 40 {
			st = 'S' // a hung rank blocks in a CUDA sync while NCCL's kernel spins
		}
		if sc.DStateRank == i+1 {
			st = 'D'
		}
		tasks = append(tasks, &task{pid: j.RankPIDs[i], rank: true, index: i, taskDir: n, state: st, ppid: SlurmstepdPID, procID: i})
	}
	for w, pid := range j.WorkerPIDs {
		st := byte('S')
		if sc.CPUBusyPercent >= 50 {
			st = 'R'
		}
		// A DataLoader worker is forked by its rank: its parent, and the
		// rank's environment (SLURM_PROCID included).
		r := ranks[w%len(ranks)]
		tasks = append(tasks, &task{pid: pid, index: w, taskDir: w % len(ranks), state: st, ppid: j.RankPIDs[r], procID: r})
	}
	// D state: the workers first (they do the reading), then the ranks.
	d := sc.DStateTasks
	for i := len(ranks); i < len(tasks) && d > 0; i, d = i+1, d-1 {
		tasks[i].state = 'D'
	}
	for i := 0; i < len(ranks) && d > 0; i, d = i+1, d-1 {
		tasks[i].state = 'D'
	}
	// CPU seconds per second: busy percent of the allocated CPUs, a
	// quarter to the ranks and the rest to the workers.
	// A hot worker (HotWorkerCPUs) takes its share first; the other
	// workers split the rest of theirs.
	cpuRate := float64(sc.CPUBusyPercent) / 100 * float64(j.CPUCount)
	workers := len(tasks) - len(ranks)
	readRate := float64(sc.ReadMiBps) * (1 << 20)
	if sc.HotWorkerCPUs > cpuRate*0.75 || sc.HotWorkerCPUs > 0 && workers < 2 {
		return fmt.Errorf("simulated job %s: a hot worker at %.1f CPUs does not fit the workers' %.1f CPUs over %d workers", sc.Fault, sc.HotWorkerCPUs, cpuRate*0.75, workers)
	}
	for _, t := range tasks {
		switch {
		case t.rank:
			t.cpu = cpuRate * 0.25 / float64(len(ranks))
		case sc.HotWorkerCPUs > 0 && t.index == 0:
			t.cpu = sc.HotWorkerCPUs
		case sc.HotWorkerCPUs > 0:
			t.cpu = (cpuRate*0.75 - sc.HotWorkerCPUs) / float64(workers-1)
		default:
			t.cpu = cpuRate * 0.75 / float64(workers)
		}
		if !t.rank {
			t.read = readRate / float64(workers)
		}
	}

	mnt, network := dataMount(sc.ReadFSType)
	mountinfo := strings.Join([]string{
		"22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/vg-root rw,errors=remount-ro",
		"23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw",
		"24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw",
		"25 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot",
		"26 22 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,size=1056749148k,mode=755",
		"27 26 0:25 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw",
		mnt,
	}, "\n")

	// The cgroup tree.
	cg := cgroupMount + JobCgroup
	o.attr(cgroupMount+"/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc")
	o.attr(cgroupMount+"/system.slice/slurmstepd.scope/system/cgroup.procs", "")
	o.attr(cg+"/cgroup.procs", "")
	o.attr(cg+"/cpuset.cpus", j.CPUs)
	o.attr(cg+"/cpuset.cpus.effective", j.CPUs)
	o.attr(cg+"/cpuset.mems.effective", "0")
	o.file(cg+"/cpu.stat", func(el float64) string {
		use := el * cpuRate * 1e6
		return fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec %d\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n",
			uint64(use), uint64(use*0.8), uint64(use*0.2))
	})
	cpuSome, ioSome, memSome := 0.01, 0.005, 0.0
	if sc.CPUBusyPercent >= 90 {
		cpuSome = 0.25 // runnable workers queue for the saturated cpuset
	}
	if sc.DStateTasks > 0 {
		ioSome = 0.6
	}
	if sc.MemPercentOfLimit >= 95 {
		memSome = 0.3
	}
	o.file(cg+"/cpu.pressure", psi(cpuSome))
	o.file(cg+"/io.pressure", psi(ioSome))
	o.file(cg+"/memory.pressure", psi(memSome))
	limit := j.LimitMiB << 20
	used := limit / 100 * uint64(sc.MemPercentOfLimit)
	o.attr(cg+"/memory.current", fmt.Sprint(used))
	o.attr(cg+"/memory.peak", fmt.Sprint(max(used, limit/100*uint64(min(sc.MemPercentOfLimit+5, 100)))))
	o.attr(cg+"/memory.max", fmt.Sprint(limit))
	o.attr(cg+"/memory.high", "max")
	o.attr(cg+"/memory.swap.current", fmt.Sprint(sc.SwapMiB<<20))
	o.attr(cg+"/memory.swap.max", "max")
	maxEvents := uint64(0)
	if sc.MemPercentOfLimit >= 95 {
		maxEvents = 4096 // reclaim at memory.max, as a job at its limit does
	}
	o.attr(cg+"/memory.events", fmt.Sprintf("low 0\nhigh 0\nmax %d\noom %d\noom_kill %d\noom_group_kill 0", maxEvents, sc.OOMKills, sc.OOMKills))
	if sc.ExitedRank > 0 && sc.ExitedRank <= len(j.RankPIDs) {
		o.exiting = j.RankPIDs[sc.ExitedRank-1]
	}
	for n := range ranks {
		var mine []*task
		for _, t := range tasks {
			if t.taskDir == n {
				mine = append(mine, t)
			}
		}
		slices.SortFunc(mine, func(a, b *task) int { return int(a.pid - b.pid) })
		o.file(fmt.Sprintf("%s/step_0/user/task_%d/cgroup.procs", cg, n), func(float64) string {
			var pids []string
			for _, t := range mine {
				if !o.isGone(t.pid) {
					pids = append(pids, fmt.Sprint(t.pid))
				}
			}
			return strings.Join(pids, "\n") + "\n"
		})
	}
	o.attr(cg+"/step_0/slurm/cgroup.procs", "")

	// gpuprobe itself runs inside the step (srun --overlap), so /proc/self
	// names the job; PID 1 is systemd in /init.scope.
	o.attr("proc/self/cgroup", "0::"+JobCgroup+"/step_0/user/task_0")
	o.attr("proc/self/mountinfo", mountinfo)
	o.attr("proc/1/cgroup", "0::/init.scope")

	for _, t := range tasks {
		t := t
		dir := fmt.Sprintf("proc/%d", t.pid)
		o.attr(dir+"/cgroup", fmt.Sprintf("0::%s/step_0/user/task_%d", JobCgroup, t.taskDir))
		o.attr(dir+"/mountinfo", mountinfo)
		o.link(dir+"/ns/mnt", "mnt:[4026531841]")
		// A rank is python with the CUDA runtime's threads; a DataLoader
		// worker names itself pt_data_worker (prctl PR_SET_NAME) and runs
		// with torch's intra-op threads set to one.
		comm, threads := "python", 8
		if !t.rank {
			comm, threads = "pt_data_worker", 3
		}
		o.file(dir+"/stat", func(el float64) string {
			ticks := t.cpu * el * 100 // USER_HZ
			return fmt.Sprintf("%d (%s) %c %d %d %d 0 -1 4194560 120000 0 12 0 %d %d 0 0 20 0 %d 0 4200 34359738368 2097152 18446744073709551615 0 0 0 0 0 0 0 16781312 1266 0 0 0 17 3 0 0 0 0 0",
				t.pid, comm, t.state, t.ppid, t.pid, t.pid, uint64(ticks*0.8), uint64(ticks*0.2), threads)
		})
		o.attr(dir+"/wchan", wchanOf(t.state))
		o.attr(dir+"/stack", stackOf(t.state))
		o.file(dir+"/environ", func(float64) string {
			return fmt.Sprintf("SLURM_JOB_ID=%s\x00SLURM_PROCID=%d\x00SLURM_LOCALID=%d\x00CUDA_VISIBLE_DEVICES=%d\x00", j.ID, t.procID, t.procID, t.procID)
		})
		// Its threads: the main one in the process's state; a rank in D
		// has one more thread waiting on the same RPC, the others sleep.
		for k := 0; k < threads; k++ {
			tid, st := t.pid, t.state
			if k > 0 {
				tid, st = 100000+(t.pid-70000)*16+int32(k), 'S'
				if t.state == 'D' && k == 1 {
					st = 'D'
				}
			}
			tdir := fmt.Sprintf("%s/task/%d", dir, tid)
			o.file(tdir+"/stat", func(el float64) string {
				return fmt.Sprintf("%d (%s) %c %d %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 %d 0", tid, comm, st, t.ppid, t.pid, t.pid, threads)
			})
			o.attr(tdir+"/wchan", wchanOf(st))
			o.attr(tdir+"/stack", stackOf(st))
		}
		o.attr(dir+"/status", fmt.Sprintf("Name:\t%s\nState:\t%c\nTgid:\t%d\nPid:\t%d\nPPid:\t1\nUid:\t%s\t%s\t%s\t%s\nGid:\t%s\t%s\t%s\t%s\nThreads:\t%d\nCpus_allowed_list:\t%s\nMems_allowed_list:\t0",
			comm, t.state, t.pid, t.pid, j.UID, j.UID, j.UID, j.UID, j.UID, j.UID, j.UID, j.UID, threads, j.CPUs))
		o.file(dir+"/io", func(el float64) string {
			r := uint64(t.read*el) + 1<<20 // a MiB of imports and config at start
			rb := uint64(0)
			if !network {
				rb = uint64(t.read * el) // local: page-cache misses reach the disk
			}
			return fmt.Sprintf("rchar: %d\nwchar: 4096\nsyscr: %d\nsyscw: 4\nread_bytes: %d\nwrite_bytes: 0\ncancelled_write_bytes: 0", r, r/(128<<10)+10, rb)
		})
		o.link(dir+"/fd/0", "/dev/null")
		o.attr(dir+"/fdinfo/0", "pos:\t0\nflags:\t0100000\nmnt_id:\t26\nino:\t5")
		o.link(dir+"/fd/1", fmt.Sprintf("pipe:[%d]", 900000+t.pid))
		o.attr(dir+"/fdinfo/1", "pos:\t0\nflags:\t01\nmnt_id:\t14\nino:\t90001")
		o.link(dir+"/fd/2", fmt.Sprintf("pipe:[%d]", 900000+t.pid))
		o.attr(dir+"/fdinfo/2", "pos:\t0\nflags:\t01\nmnt_id:\t14\nino:\t90001")
		if t.rank {
			// A rank holds its GPU's device node and NCCL's sockets: not
			// files it reads data from.
			o.link(dir+"/fd/3", fmt.Sprintf("/dev/nvidia%d", t.index))
			o.attr(dir+"/fdinfo/3", "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t700")
			o.link(dir+"/fd/4", fmt.Sprintf("socket:[%d]", 800000+t.pid))
			o.attr(dir+"/fdinfo/4", "pos:\t0\nflags:\t02000002\nmnt_id:\t9\nino:\t800000")
			if t.state == 'D' {
				// The read it is stuck in: a checkpoint on the data mount.
				o.link(dir+"/fd/5", dataDir(sc.ReadFSType)+"/ckpt/latest.pt")
				o.attr(dir+"/fdinfo/5", "pos:\t1048576\nflags:\t0100000\nmnt_id:\t40\nino:\t1300")
			}
			continue
		}
		// A worker streams one shard of the data set.
		o.link(dir+"/fd/3", fmt.Sprintf("%s/train/shard-%05d.tar", dataDir(sc.ReadFSType), t.index))
		o.file(dir+"/fdinfo/3", func(el float64) string {
			return fmt.Sprintf("pos:\t%d\nflags:\t0100000\nmnt_id:\t40\nino:\t%d", uint64(t.read*el), 1200+t.index)
		})
	}
	return nil
}

// dataMount is the mountinfo line of the filesystem the job reads from and
// whether it is a network filesystem (whose reads never reach a local block
// device: /proc/PID/io read_bytes stays 0).
func dataMount(fstype string) (string, bool) {
	switch fstype {
	case "nfs", "nfs4":
		return "40 22 0:52 / /data rw,relatime shared:100 - " + fstype + " storage:/export/data rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.11,local_lock=none,addr=10.0.0.2", true
	case "lustre":
		return "40 22 0:52 / /data rw,flock,lazystatfs shared:100 - lustre 10.0.0.2@o2ib:/data rw,flock,lazystatfs", true
	case "gpfs":
		return "40 22 0:52 / /data rw,relatime shared:100 - gpfs data rw", true
	}
	if fstype == "" {
		fstype = "ext4"
	}
	return "40 22 259:5 / /scratch rw,relatime shared:100 - " + fstype + " /dev/nvme1n1 rw", false
}

func dataDir(fstype string) string {
	if _, network := dataMount(fstype); network {
		return "/data"
	}
	return "/scratch"
}

// psi is a PSI file whose "some" total grows at frac of wall time.
func psi(frac float64) gen {
	return func(el float64) string {
		avg := frac * 100
		return fmt.Sprintf("some avg10=%.2f avg60=%.2f avg300=%.2f total=%d\nfull avg10=%.2f avg60=%.2f avg300=%.2f total=%d",
			avg, avg, avg, uint64(frac*el*1e6), avg/2, avg/2, avg/2, uint64(frac/2*el*1e6))
	}
}

// overlay is base with the job's files, directories and links over it.
type overlay struct {
	base  fs.FS
	now   func() time.Time
	start time.Time
	files map[string]gen
	links map[string]string
	dirs  map[string]map[string]bool // dir -> children names

	// exiting is the rank that exits after the first tick: its
	// /proc/PID/stat reads once, and from the second read on the process
	// and its cgroup.procs line are gone.
	exiting  int32
	mu       sync.Mutex
	statRead int
	gone     bool
}

func (o *overlay) isGone(pid int32) bool {
	if o.exiting == 0 || pid != o.exiting {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.gone
}

// vanished says whether name is under the exited process's /proc entry,
// counting the reads of its stat.
func (o *overlay) vanished(name string) bool {
	if o.exiting == 0 {
		return false
	}
	dir := fmt.Sprintf("proc/%d", o.exiting)
	if name != dir && !strings.HasPrefix(name, dir+"/") {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if name == dir+"/stat" {
		o.statRead++
		if o.statRead > 1 {
			o.gone = true
		}
	}
	return o.gone
}

func notExist(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

func (o *overlay) addParents(p string) {
	for {
		dir, name := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		if o.dirs[dir] == nil {
			o.dirs[dir] = map[string]bool{}
		}
		o.dirs[dir][name] = true
		if dir == "" {
			return
		}
		p = dir
	}
}

func (o *overlay) file(p string, g gen) { o.files[p] = g; o.addParents(p) }
func (o *overlay) attr(p, v string)     { o.file(p, func(float64) string { return v + "\n" }) }
func (o *overlay) link(p, target string) {
	o.links[p] = target
	o.addParents(p)
}

func (o *overlay) elapsed() float64 {
	return (o.now().Sub(o.start) + AlreadyRan).Seconds()
}

func (o *overlay) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if o.vanished(name) {
		return nil, notExist("open", name)
	}
	if g, ok := o.files[name]; ok {
		return &memFile{Reader: bytes.NewReader([]byte(g(o.elapsed()))), info: info{name: path.Base(name), mode: 0o444}}, nil
	}
	if t, ok := o.links[name]; ok {
		// fd links point at files of the simulated machine that are
		// not in the tree (data sets, devices): following one fails as a
		// dangling link does.
		return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (a link to %s)", fs.ErrNotExist, t)}
	}
	if name == "." {
		name = ""
	}
	if _, ok := o.dirs[name]; ok {
		es, err := o.ReadDir(nameOrDot(name))
		if err != nil {
			return nil, err
		}
		return &dirFile{info: info{name: path.Base(nameOrDot(name)), mode: fs.ModeDir | 0o555}, entries: es}, nil
	}
	return o.base.Open(name)
}

func nameOrDot(n string) string {
	if n == "" {
		return "."
	}
	return n
}

func (o *overlay) ReadDir(name string) ([]fs.DirEntry, error) {
	if o.vanished(name) {
		return nil, notExist("readdir", name)
	}
	key := name
	if key == "." {
		key = ""
	}
	kids, mine := o.dirs[key]
	base, err := fs.ReadDir(o.base, name)
	if !mine {
		return base, err
	}
	seen := map[string]bool{}
	var out []fs.DirEntry
	for n := range kids {
		seen[n] = true
		full := path.Join(key, n)
		mode := fs.FileMode(0o444)
		switch {
		case o.links[full] != "":
			mode = fs.ModeSymlink | 0o777
		case o.dirs[full] != nil:
			mode = fs.ModeDir | 0o555
		}
		out = append(out, fs.FileInfoToDirEntry(info{name: n, mode: mode}))
	}
	for _, e := range base {
		if !seen[e.Name()] {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

func (o *overlay) Stat(name string) (fs.FileInfo, error) {
	if t, ok := o.links[name]; ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fmt.Errorf("%w (a link to %s)", fs.ErrNotExist, t)}
	}
	return o.Lstat(name)
}

func (o *overlay) Lstat(name string) (fs.FileInfo, error) {
	if o.vanished(name) {
		return nil, notExist("lstat", name)
	}
	if _, ok := o.files[name]; ok {
		return info{name: path.Base(name), mode: 0o444}, nil
	}
	if _, ok := o.links[name]; ok {
		return info{name: path.Base(name), mode: fs.ModeSymlink | 0o777}, nil
	}
	key := name
	if key == "." {
		key = ""
	}
	if _, ok := o.dirs[key]; ok {
		return info{name: path.Base(name), mode: fs.ModeDir | 0o555}, nil
	}
	return fs.Lstat(o.base, name)
}

func (o *overlay) ReadLink(name string) (string, error) {
	if o.vanished(name) {
		return "", notExist("readlink", name)
	}
	if t, ok := o.links[name]; ok {
		return t, nil
	}
	if _, ok := o.files[name]; ok {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: errors.New("not a symlink")}
	}
	return fs.ReadLink(o.base, name)
}

func (o *overlay) ReadFile(name string) ([]byte, error) {
	if o.vanished(name) {
		return nil, notExist("open", name)
	}
	if g, ok := o.files[name]; ok {
		return []byte(g(o.elapsed())), nil
	}
	f, err := o.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

var (
	_ fs.ReadLinkFS = (*overlay)(nil)
	_ fs.ReadDirFS  = (*overlay)(nil)
	_ fs.StatFS     = (*overlay)(nil)
	_ fs.ReadFileFS = (*overlay)(nil)
)

type info struct {
	name string
	mode fs.FileMode
}

func (i info) Name() string       { return i.name }
func (i info) Size() int64        { return 0 } // as procfs and cgroupfs report
func (i info) Mode() fs.FileMode  { return i.mode }
func (i info) ModTime() time.Time { return time.Time{} }
func (i info) IsDir() bool        { return i.mode.IsDir() }
func (i info) Sys() any           { return nil }

type memFile struct {
	*bytes.Reader
	info info
}

func (m *memFile) Stat() (fs.FileInfo, error) { return m.info, nil }
func (m *memFile) Close() error               { return nil }

type dirFile struct {
	info    info
	entries []fs.DirEntry
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Close() error               { return nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}
func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}

type emptyFS struct{}

func (emptyFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}
