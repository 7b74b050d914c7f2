package jobperf

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/state"
)

// v2Node is cgroup_exporter's captured Slurm node with cgroup/v2 (job_4 in
// system.slice/slurmstepd.scope) and its /proc, mounted as a unified host
// mounts it (testdata/mountinfo-v2.txt).
func v2Node(t *testing.T) fstest.MapFS {
	m := fstest.MapFS{}
	loadTTAR(t, m, "testdata/cgroup_exporter.ttar", map[string]string{
		"fixtures/system.slice": "sys/fs/cgroup/system.slice",
		"fixtures/proc":         "proc",
	})
	m["proc/self/mountinfo"] = &fstest.MapFile{Data: readTestdata(t, "mountinfo-v2.txt")}
	m["proc/49276/mountinfo"] = m["proc/self/mountinfo"]
	return m
}

// v1Node is the same repository's cgroup v1 Slurm node (jobs 10 and 11 of
// uid 20821 in cpuacct, memory and cpuset), mounted as this build machine's
// hybrid hierarchy mounts them (testdata/mountinfo-hybrid-v1.txt).
func v1Node(t *testing.T) fstest.MapFS {
	m := fstest.MapFS{}
	loadTTAR(t, m, "testdata/cgroup_exporter.ttar", map[string]string{
		"fixtures/cpuacct": "sys/fs/cgroup/cpuacct",
		"fixtures/memory":  "sys/fs/cgroup/memory",
		"fixtures/cpuset":  "sys/fs/cgroup/cpuset",
	})
	m["proc/self/mountinfo"] = &fstest.MapFile{Data: readTestdata(t, "mountinfo-hybrid-v1.txt")}
	return m
}

func TestFindOnCapturedSlurmNodes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		tree      func(*testing.T) fstest.MapFS
		o         Options
		from, cg  string
		uid       string
		pids      []int32
		cpuNs     uint64
		cpus      string
		mem, lim  uint64
		noLimit   bool
		swap      uint64
		eventKey  string
		noOOMKill bool
	}{
		{name: "v2 by job ID", tree: v2Node, o: Options{JobID: "4"},
			from: "cgroup-v2", cg: "/system.slice/slurmstepd.scope/job_4",
			// step_0/user/task_0 (49276 49334) and step_extern/user/task_0
			// (49253); the slurmstepds in step_*/slurm are left out.
			pids: []int32{49253, 49276, 49334}, uid: "20821",
			cpuNs: 126686 * 1000, cpus: "0", mem: 5660672, lim: 1835008000, eventKey: "oom_kill"},
		{name: "v2 from the task's own cgroup", tree: v2Node, o: Options{SelfPID: 49276},
			from: "cgroup-v2", cg: "/system.slice/slurmstepd.scope/job_4",
			pids: []int32{49253, 49276, 49334}, uid: "20821", cpuNs: 126686 * 1000, cpus: "0",
			mem: 5660672, lim: 1835008000, eventKey: "oom_kill"},
		{name: "v1 by job ID", tree: v1Node, o: Options{JobID: "11"},
			from: "cgroup-v1", cg: "/slurm/uid_20821/job_11", uid: "20821",
			cpuNs: 33146523011972, cpus: "0-39", mem: 6126714880, lim: 191092490240,
			eventKey: "failcnt", noOOMKill: true},
		{name: "v1 small job", tree: v1Node, o: Options{JobID: "10"},
			from: "cgroup-v1", cg: "/slurm/uid_20821/job_10", uid: "20821",
			pids: []int32{95516, 95521, 95525}, cpuNs: 7710215, cpus: "0-1", mem: 356352, lim: 2147483648,
			eventKey: "failcnt", noOOMKill: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Root = c.tree(t)
			j, err := Find(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			s, err := j.Sample(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var p state.JobPerf
			j.Describe(&p)
			if p.TasksFrom != c.from || p.CgroupPath != c.cg || p.User != c.uid {
				t.Errorf("describe = from %q cgroup %q user %q; want %q %q %q", p.TasksFrom, p.CgroupPath, p.User, c.from, c.cg, c.uid)
			}
			if got := listed(t, j); c.pids != nil && !equal(got, c.pids) {
				t.Errorf("tasks %v, want %v", got, c.pids)
			}
			cg := s.Cgroup
			if cg.CPUUsageNs == nil || *cg.CPUUsageNs != c.cpuNs {
				t.Errorf("cpu usage %v, want %d ns", val(cg.CPUUsageNs), c.cpuNs)
			}
			if cg.CPUs != c.cpus || val(cg.MemCurrent) != c.mem || val(cg.MemMax) != c.lim {
				t.Errorf("cpus %q mem %d limit %d; want %q %d %d", cg.CPUs, val(cg.MemCurrent), val(cg.MemMax), c.cpus, c.mem, c.lim)
			}
			if _, ok := cg.MemEvents[c.eventKey]; !ok {
				t.Errorf("memory events %v lack %q", cg.MemEvents, c.eventKey)
			}
			if _, ok := cg.MemEvents["oom_kill"]; ok == c.noOOMKill {
				// v1 memory.oom_control gained oom_kill in 4.13; this capture predates it.
				t.Errorf("memory events %v: oom_kill present = %v", cg.MemEvents, ok)
			}
			if val(cg.Swap) != c.swap {
				t.Errorf("swap %d, want %d", val(cg.Swap), c.swap)
			}
		})
	}
}

func listed(t *testing.T, j *Job) []int32 {
	pids, errs := j.tasks(context.Background())
	if len(errs) > 0 {
		t.Errorf("listing tasks: %v", errs)
	}
	return pids
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func val(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// Real /proc/PID/cgroup lines of Slurm tasks (testdata/SOURCE: NordicHPC/sonar).
func TestFindFromRealSelfCgroupLines(t *testing.T) {
	cases := []struct {
		name, cgroup, mountinfo, dir, id, from, cg string
	}{
		{"v2, a Fox compute node", "0::/system.slice/slurmstepd.scope/job_1392969/step_0/user/task_0\n", "mountinfo-v2.txt",
			"sys/fs/cgroup/system.slice/slurmstepd.scope/job_1392969", "1392969", "cgroup-v2", "/system.slice/slurmstepd.scope/job_1392969"},
		{"v1, devices line", "10:devices:/slurm/uid_2101171/job_280678/step_interactive/task_0\n", "mountinfo-hybrid-v1.txt",
			"sys/fs/cgroup/memory/slurm/uid_2101171/job_280678", "280678", "cgroup-v1", "/slurm/uid_2101171/job_280678"},
		// The batch step's path from rstudio/rstudio#13690, on the memory
		// controller's line (the hierarchy number is this machine's).
		{"v1, batch step", "4:memory:/slurm/uid_2687/job_13759490/step_batch/task_0\n", "mountinfo-hybrid-v1.txt",
			"sys/fs/cgroup/memory/slurm/uid_2687/job_13759490", "13759490", "cgroup-v1", "/slurm/uid_2687/job_13759490"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := fstest.MapFS{
				"proc/self/cgroup":      {Data: []byte(c.cgroup)},
				"proc/self/mountinfo":   {Data: readTestdata(t, c.mountinfo)},
				c.dir + "/cgroup.procs": {Data: []byte("")},
			}
			j, err := Find(context.Background(), Options{Root: m})
			if err != nil {
				t.Fatal(err)
			}
			var p state.JobPerf
			j.Describe(&p)
			if p.JobID != c.id || p.TasksFrom != c.from || p.CgroupPath != c.cg {
				t.Errorf("got job %q from %q at %q; want %q %q %q", p.JobID, p.TasksFrom, p.CgroupPath, c.id, c.from, c.cg)
			}
		})
	}
}

func TestFindErrorsSayWhatWasTried(t *testing.T) {
	ctx := context.Background()
	_, err := Find(ctx, Options{Root: v2Node(t), JobID: "99"})
	if err == nil || !strings.Contains(err.Error(), "no cgroup job_99 under /sys/fs/cgroup/system.slice/{,*_}slurmstepd.scope") ||
		!strings.Contains(err.Error(), "no scontrol fallback") {
		t.Errorf("error = %v", err)
	}
	_, err = Find(ctx, Options{Root: v1Node(t), JobID: "99", ListPIDs: func(context.Context, string) ([]int32, error) {
		return nil, errors.New("exit status 1: Job 99 not on this node")
	}})
	if err == nil || !strings.Contains(err.Error(), "no cgroup job_99 under /sys/fs/cgroup/memory/slurm{,_*}/uid_*") ||
		!strings.Contains(err.Error(), "scontrol listpids failed: exit status 1") {
		t.Errorf("error = %v", err)
	}
	if _, err := Find(ctx, Options{Root: v2Node(t), JobID: "../../etc"}); err == nil {
		t.Error("a job ID with a path in it was accepted")
	}
	_, err = Find(ctx, Options{Root: v2Node(t), SelfPID: 67998})
	if err == nil || !strings.Contains(err.Error(), "names no Slurm job_<id>") {
		t.Errorf("a login session's process (user.slice) was taken for a job: %v", err)
	}
}

// Without a job cgroup (proctrack/linuxproc), the tasks come from ListPIDs
// and CPU time from their utime+stime.
func TestScontrolFallbackOnCapturedProc(t *testing.T) {
	m := procfsTree(t)
	m["proc/self/mountinfo"] = &fstest.MapFile{Data: readTestdata(t, "mountinfo-v2.txt")}
	j, err := Find(context.Background(), Options{Root: m, JobID: "77", CallTimeout: time.Second,
		ListPIDs: func(_ context.Context, id string) ([]int32, error) {
			if id != "77" {
				t.Errorf("ListPIDs(%q)", id)
			}
			return []int32{26231}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	s1, err := j.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	task := s1.Tasks[26231]
	if task == nil || task.State != 'R' || val(task.RChar) != 750339 || task.UID != "1000" {
		t.Fatalf("task = %+v", task)
	}
	// The capture's fd links are relative (../../symlinktargets/...): not
	// files on a filesystem, so none is listed.
	if len(task.Files) != 0 {
		t.Errorf("files %+v", task.Files)
	}
	cpu, mem, io, errs := Summarize(j, []*Sample{s1, s1})
	if cpu == nil || cpu.From != "proc" || cpu.UsedSeconds != 0 || cpu.AllocatedCPUs != "0-7" || cpu.AllocatedCount != 8 || cpu.RunnableTaskSamples != 2 {
		t.Errorf("cpu = %+v", cpu)
	}
	if mem != nil {
		t.Errorf("memory %+v without a memory cgroup", mem)
	}
	if io == nil || io.Ticks != 2 || io.TaskSamples != 2 || io.ReadBytes != 0 {
		t.Errorf("io = %+v", io)
	}
	if !strings.Contains(strings.Join(errs, "\n"), "memory: the job has no cgroup of its own") {
		t.Errorf("errors %v do not say memory is unknown", errs)
	}
	var p state.JobPerf
	j.Describe(&p)
	if p.TasksFrom != "scontrol" || p.User != "1000" || len(p.PIDs) != 1 || p.CgroupPath != "" {
		t.Errorf("describe = %+v", p)
	}
}

// The other places slurmd's cgroup/v2 plugin puts the scope: a node of a
// multiple-slurmd build (<nodename>_slurmstepd.scope), and slurmd in a
// container whose init is not at the cgroup root (the dirname of
// /proc/1/cgroup's path prefixes system.slice); and a node read through
// --path.sysfs.
func TestFindOtherV2Layouts(t *testing.T) {
	cases := []struct {
		name, scope, init, sysfs, want string
	}{
		// The scope name of a real multiple-slurmd node (NVIDIA/enroot#169).
		{"multiple slurmd", "sys/fs/cgroup/system.slice/slurm-worker-1_slurmstepd.scope", "", "",
			"/system.slice/slurm-worker-1_slurmstepd.scope/job_4"},
		{"in a container", "sys/fs/cgroup/docker.slice/docker-1f2e.scope/system.slice/slurmstepd.scope",
			"0::/docker.slice/docker-1f2e.scope/init.scope\n", "", "/docker.slice/docker-1f2e.scope/system.slice/slurmstepd.scope/job_4"},
		{"--path.sysfs", "host/sys/fs/cgroup/system.slice/slurmstepd.scope", "", "/host/sys",
			"/system.slice/slurmstepd.scope/job_4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := fstest.MapFS{}
			loadTTAR(t, m, "testdata/cgroup_exporter.ttar", map[string]string{"fixtures/system.slice/slurmstepd.scope": c.scope})
			m["proc/self/mountinfo"] = &fstest.MapFile{Data: readTestdata(t, "mountinfo-v2.txt")}
			if c.init != "" {
				m["proc/1/cgroup"] = &fstest.MapFile{Data: []byte(c.init)}
			}
			j, err := Find(context.Background(), Options{Root: m, JobID: "4", SysfsRoot: c.sysfs})
			if err != nil {
				t.Fatal(err)
			}
			s, err := j.Sample(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if j.cgroupPath != c.want || val(s.Cgroup.MemCurrent) != 5660672 {
				t.Errorf("cgroup %q (memory %d), want %q", j.cgroupPath, val(s.Cgroup.MemCurrent), c.want)
			}
		})
	}
}

// hangFS blocks every read of one file until released, as a file of a hung
// filesystem or a wedged pseudo-file does.
type hangFS struct {
	fstest.MapFS
	path    string
	release chan struct{}
}

func (h hangFS) Open(name string) (fs.File, error) {
	if name == h.path {
		<-h.release
	}
	return h.MapFS.Open(name)
}

// A read that hangs costs one call timeout, once: the tick goes on without
// it, and the next tick does not read it again while it is stuck.
func TestHungFileCostsOneTimeoutOnce(t *testing.T) {
	m := v2Node(t)
	h := hangFS{MapFS: m, path: "sys/fs/cgroup/system.slice/slurmstepd.scope/job_4/memory.current", release: make(chan struct{})}
	defer close(h.release)
	const timeout = 2 * time.Second
	j, err := Find(context.Background(), Options{Root: h, JobID: "4", CallTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s1, err := j.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	start = time.Now()
	s2, err := j.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	second := time.Since(start)
	if s1.Cgroup.MemCurrent != nil || s1.Cgroup.CPUUsageNs == nil {
		t.Errorf("tick 1: memory %v cpu %v; want memory unread, cpu read", s1.Cgroup.MemCurrent, s1.Cgroup.CPUUsageNs)
	}
	// Measured against the timeout, not a fixed figure: tick 1 waits it out
	// once; tick 2 must not wait again (a loaded machine slows both ticks'
	// work, never by a whole timeout).
	if first < timeout || second >= timeout/2 {
		t.Errorf("tick 1 took %v (want at least the %v timeout), tick 2 %v (want no wait: the hung read is not retried)", first, timeout, second)
	}
	joined := strings.Join(s2.Errors, "\n")
	if !strings.Contains(joined, "memory.current") || !errors.Is(errorsOf(t, j), deadline.ErrBusy) {
		t.Errorf("tick 2 errors %v: want memory.current refused as busy", s2.Errors)
	}
}

func errorsOf(t *testing.T, j *Job) error {
	_, err := j.r.read(context.Background(), "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_4/memory.current")
	return err
}
