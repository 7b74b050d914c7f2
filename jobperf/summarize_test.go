package jobperf

import (
	"context"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

func u(v uint64) *uint64 { return &v }

// The arithmetic of a window, on hand-made ticks: what counts as read, what
// does not, and what the errors say.
func TestSummarizeWindowRules(t *testing.T) {
	data := &mount{Point: "/data", FSType: "nfs4", Source: "storage:/export"}
	scratch := &mount{Point: "/scratch", FSType: "ext4", Source: "/dev/nvme1n1"}
	tick := func(cpuNs uint64, tasks map[int32]*Task) *Sample {
		return &Sample{Cgroup: Counters{CPUFrom: "cpu.stat", CPUUsageNs: u(cpuNs), CPUs: "0-3"}, Tasks: tasks}
	}
	cases := []struct {
		name      string
		ticks     []*Sample
		rchar     uint64
		fsRead    map[string]uint64
		cpu       float64
		cpuFrom   string
		errSubstr string
	}{
		{name: "a task that starts mid-window is not counted",
			ticks: []*Sample{
				tick(1e9, map[int32]*Task{1: {State: 'R', RChar: u(100)}}),
				tick(3e9, map[int32]*Task{1: {State: 'R', RChar: u(600)}, 2: {State: 'D', RChar: u(1 << 30)}}),
			},
			rchar: 500, cpu: 2, cpuFrom: "cpu.stat", errSubstr: "present at both ends"},
		{name: "pos that goes back is a seek or a reopen, not a read",
			ticks: []*Sample{
				tick(0, map[int32]*Task{1: {Files: []File{{FD: 3, Path: "/data/a", Pos: 1000, ReadOnly: true, Mount: data}}}}),
				tick(0, map[int32]*Task{1: {Files: []File{{FD: 3, Path: "/data/a", Pos: 5000, ReadOnly: true, Mount: data}}}}),
				tick(0, map[int32]*Task{1: {Files: []File{{FD: 3, Path: "/data/a", Pos: 10, ReadOnly: true, Mount: data}}}}),
				tick(0, map[int32]*Task{1: {Files: []File{{FD: 3, Path: "/data/a", Pos: 110, ReadOnly: true, Mount: data}}}}),
			},
			fsRead: map[string]uint64{"/data": 4100}, cpuFrom: "cpu.stat"},
		{name: "a write or read-write fd's advance is not a read; an fd reused for another file is a new file",
			ticks: []*Sample{
				tick(0, map[int32]*Task{1: {Files: []File{{FD: 4, Path: "/scratch/ckpt", Pos: 0, Mount: scratch}, {FD: 5, Path: "/data/x", Pos: 100, ReadOnly: true, Mount: data}}}}),
				tick(0, map[int32]*Task{1: {Files: []File{{FD: 4, Path: "/scratch/ckpt", Pos: 1 << 30, Mount: scratch}, {FD: 5, Path: "/data/y", Pos: 900, ReadOnly: true, Mount: data}}}}),
			},
			fsRead: map[string]uint64{"/data": 0, "/scratch": 0}, cpuFrom: "cpu.stat"},
		{name: "no cgroup counter: utime+stime in clock ticks",
			ticks: []*Sample{
				{Tasks: map[int32]*Task{1: {UTime: 100, STime: 50}, 2: {UTime: 7}}},
				{Tasks: map[int32]*Task{1: {UTime: 300, STime: 100}, 3: {UTime: 900}}},
			},
			cpu: 2.5, cpuFrom: "proc", errSubstr: "utime+stime"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cpu, _, io, errs := Summarize(&Job{tasksFrom: "cgroup-v2"}, c.ticks)
			if io.ReadBytes != c.rchar {
				t.Errorf("rchar %d, want %d", io.ReadBytes, c.rchar)
			}
			got := map[string]uint64{}
			for _, f := range io.Filesystems {
				got[f.MountPoint] = f.ReadBytes
			}
			for mp, want := range c.fsRead {
				if v, ok := got[mp]; !ok || v != want {
					t.Errorf("%s read %d (listed %v), want %d", mp, v, ok, want)
				}
			}
			if cpu == nil || cpu.UsedSeconds != c.cpu || cpu.From != c.cpuFrom {
				t.Errorf("cpu %+v, want %v s from %s", cpu, c.cpu, c.cpuFrom)
			}
			if j := strings.Join(errs, "\n"); c.errSubstr != "" && !strings.Contains(j, c.errSubstr) {
				t.Errorf("errors %q lack %q", j, c.errSubstr)
			}
		})
	}
	if _, _, _, errs := Summarize(nil, nil); len(errs) == 0 {
		t.Error("no ticks and no error")
	}
}

// A task with more open files than MaxFDsPerTask is read up to the bound.
func TestOpenFilesAreBoundedPerTask(t *testing.T) {
	m := fstest.MapFS{
		"proc/self/mountinfo": {Data: readTestdata(t, "mountinfo-v2.txt")},
		"proc/500/stat":       {Data: []byte("500 (cat) S 1 1 1 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 0 0 0")},
		"proc/500/mountinfo":  {Data: []byte("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n2 1 0:40 / /data rw - nfs4 srv:/d rw\n")},
	}
	for i := 0; i < MaxFDsPerTask+904; i++ {
		fd := strconv.Itoa(i)
		m["proc/500/fd/"+fd] = &fstest.MapFile{Data: []byte("/data/f" + fd), Mode: fs.ModeSymlink | 0o777}
		m["proc/500/fdinfo/"+fd] = &fstest.MapFile{Data: []byte("pos:\t0\nflags:\t0100000\n")}
	}
	j, err := Find(context.Background(), Options{Root: m, JobID: "5", ListPIDs: func(context.Context, string) ([]int32, error) { return []int32{500}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := j.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Tasks[500].Files); n != MaxFDsPerTask {
		t.Errorf("%d files read, want the bound %d", n, MaxFDsPerTask)
	}
	if f := s.Tasks[500].Files[0]; f.Mount.FSType != "nfs4" || !f.ReadOnly {
		t.Errorf("file %+v", f)
	}
}

// The busiest processes over the window, read through the collector from
// /proc as the real cpustarve run left it (a PyTorch job whose one
// DataLoader worker, pt_data_worker, burnt a CPU while the main python3
// process waited): names from stat field 2, thread counts from status, CPU
// time from the utime+stime advance, bounded to MaxTopProcesses.
func TestTopProcessesFromProc(t *testing.T) {
	m := fstest.MapFS{"proc/self/mountinfo": {Data: readTestdata(t, "mountinfo-v2.txt")}}
	type proc struct {
		pid           int32
		comm          string
		threads       int
		utime0, util1 uint64 // utime at the two ticks
	}
	procs := []proc{
		{675, "python3", 41, 9000, 9010},
		{697, "pt_data_worker", 3, 2000, 2497},
		{700, "pt_main_thread", 1, 50, 51},
		{701, "a", 1, 50, 53},
		{702, "b", 1, 50, 52},
		{703, "c", 1, 50, 52}, // ties with 702: the lower PID is kept
		{704, "sleeper", 1, 80, 80},
		{705, "\x1b[2Jevil) R (", 1, 0, 300}, // hostile name: kept as read, escaped when printed
	}
	set := func(tick int) {
		for _, p := range procs {
			ut := p.utime0
			if tick == 1 {
				ut = p.util1
			}
			d := "proc/" + strconv.Itoa(int(p.pid)) + "/"
			m[d+"stat"] = &fstest.MapFile{Data: []byte(strconv.Itoa(int(p.pid)) + " (" + p.comm + ") R 1 1 1 0 -1 0 0 0 0 0 " + strconv.FormatUint(ut, 10) + " 0 0 0 20 0 1 0 0 0 0")}
			m[d+"status"] = &fstest.MapFile{Data: []byte("Name:\tx\nUid:\t1000\t1000\t1000\t1000\nThreads:\t" + strconv.Itoa(p.threads) + "\nCpus_allowed_list:\t0-15\n")}
		}
	}
	pids := make([]int32, len(procs))
	for i, p := range procs {
		pids[i] = p.pid
	}
	j, err := Find(context.Background(), Options{Root: m, JobID: "2", ListPIDs: func(context.Context, string) ([]int32, error) { return pids, nil }})
	if err != nil {
		t.Fatal(err)
	}
	var ts []*Sample
	for tick := 0; tick < 2; tick++ {
		set(tick)
		s, err := j.Sample(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, s)
	}
	cpu, _, _, _ := Summarize(j, ts)
	if cpu == nil {
		t.Fatal("no CPU summary")
	}
	want := []state.JobProcess{
		{PID: 697, Comm: "pt_data_worker", CPUSeconds: 4.97, Threads: 3},
		{PID: 705, Comm: "\x1b[2Jevil) R (", CPUSeconds: 3, Threads: 1},
		{PID: 675, Comm: "python3", CPUSeconds: 0.1, Threads: 41},
		{PID: 701, Comm: "a", CPUSeconds: 0.03, Threads: 1},
		{PID: 702, Comm: "b", CPUSeconds: 0.02, Threads: 1},
	}
	if len(cpu.TopProcesses) != len(want) {
		t.Fatalf("top processes %+v, want %+v", cpu.TopProcesses, want)
	}
	for i, w := range want {
		g := cpu.TopProcesses[i]
		if g.PID != w.PID || g.Comm != w.Comm || g.Threads != w.Threads || math.Abs(g.CPUSeconds-w.CPUSeconds) > 1e-9 {
			t.Errorf("top[%d] = %+v, want %+v", i, g, w)
		}
	}
	// CPU time that went backwards (a PID reused) or did not move is no use.
	ts[1].Tasks[697].UTime = 1
	ts[1].Tasks[705].UTime = 0
	cpu, _, _, _ = Summarize(j, ts)
	for _, p := range cpu.TopProcesses {
		if p.PID == 697 || p.PID == 705 || p.PID == 704 {
			t.Errorf("%+v listed: it used no CPU time in the window", p)
		}
	}
}

// A DataLoader worker forked after the first tick (the real H200 run: "1
// task at the start, 2 at the end") is measured over the ticks it lived,
// not dropped; a PID whose CPU time went back was reused, and is measured
// only from the reuse on.
func TestTopProcessesForkedMidWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 19, 47, 39, 0, time.UTC)
	tick := func(i int, tasks map[int32]*Task) *Sample {
		return &Sample{At: t0.Add(time.Duration(i) * time.Second), Tasks: tasks}
	}
	task := func(comm string, ticks uint64) *Task { return &Task{UTime: ticks, Threads: 3, Comm: comm} }
	var ts []*Sample
	for i := 0; i <= 6; i++ {
		tasks := map[int32]*Task{512: task("python3", 1000+uint64(i)*12)}
		if i >= 2 { // the worker appears at the third tick and burns a CPU
			tasks[641] = task("pt_data_worker", uint64(i-2)*100)
		}
		if i >= 1 { // PID 900 reused at tick 4: its CPU time starts again
			u := uint64(5000 + i*100)
			if i >= 4 {
				u = uint64((i - 4) * 50)
			}
			tasks[900] = task("reused", u)
		}
		ts = append(ts, tick(i, tasks))
	}
	got := map[int32]state.JobProcess{}
	for _, p := range topProcesses(ts) {
		got[p.PID] = p
	}
	w := got[641]
	if math.Abs(w.CPUSeconds-4) > 1e-9 || w.SeenSeconds != 4 {
		t.Errorf("worker = %+v, want 4 CPU-seconds over the 4 s it was seen", w)
	}
	if c, seen := w.CPUs(6); math.Abs(c-1) > 1e-9 || seen != 4 {
		t.Errorf("worker CPUs = %.2f over %.0f s, want 1 over 4", c, seen)
	}
	if m := got[512]; math.Abs(m.CPUSeconds-0.72) > 1e-9 || m.SeenSeconds != 0 {
		t.Errorf("main = %+v, want 0.72 CPU-seconds over the whole window", m)
	}
	if r := got[900]; math.Abs(r.CPUSeconds-1) > 1e-9 || r.SeenSeconds != 2 {
		t.Errorf("reused pid = %+v, want 1 CPU-second since the reuse 2 s before the end", r)
	}
}

// Memory that cannot be read is one line with its cause. On a real H200
// (driver 580.159.04, 2026-11-26) the job's cgroup had no memory controller
// and `gpuprobe job` printed an ENOENT for each of memory.current, .max,
// .high and .events, then a guess at the cause; the kernel gives a cgroup
// none of its memory.* files while the controller is off for it, so one
// absent memory.current says it all.
func TestMemoryNotReadOneLinePerCause(t *testing.T) {
	noMemory := func(t *testing.T) fstest.MapFS {
		m := v2Node(t)
		for p := range m {
			if strings.HasPrefix(p, "sys/fs/cgroup/system.slice/slurmstepd.scope/job_4/memory.") {
				delete(m, p)
			}
		}
		return m
	}
	noMemoryHierarchy := func(t *testing.T) fstest.MapFS {
		m := fstest.MapFS{}
		loadTTAR(t, m, "testdata/cgroup_exporter.ttar", map[string]string{
			"fixtures/cpuacct": "sys/fs/cgroup/cpuacct",
			"fixtures/cpuset":  "sys/fs/cgroup/cpuset",
		})
		m["proc/self/mountinfo"] = &fstest.MapFile{Data: readTestdata(t, "mountinfo-hybrid-v1.txt")}
		return m
	}
	scontrol := func(t *testing.T) fstest.MapFS {
		m := procfsTree(t)
		m["proc/self/mountinfo"] = &fstest.MapFile{Data: readTestdata(t, "mountinfo-v2.txt")}
		return m
	}
	for _, c := range []struct {
		name  string
		tree  func(*testing.T) fstest.MapFS
		job   string
		want  []string // every error line that mentions memory
		known bool     // memory figures expected
	}{
		{name: "v2, memory controller off", tree: noMemory, job: "4",
			want: []string{"memory: the job's cgroup has no memory counters (memory.current absent: the memory controller is off for job_4)"}},
		{name: "v2 with memory", tree: v2Node, job: "4", known: true},
		{name: "v1 with memory", tree: v1Node, job: "10", known: true},
		{name: "v1 without a memory hierarchy", tree: noMemoryHierarchy, job: "10",
			want: []string{"memory: the job's cgroup is in no v1 memory hierarchy, so no memory counters"}},
		{name: "no cgroup: scontrol listpids", tree: scontrol, job: "77",
			want: []string{"memory: the job has no cgroup of its own (its tasks come from scontrol listpids), so no memory counters"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			j, err := Find(ctx, Options{Root: c.tree(t), JobID: c.job, CallTimeout: time.Second,
				ListPIDs: func(context.Context, string) ([]int32, error) { return []int32{26231}, nil }})
			if err != nil {
				t.Fatal(err)
			}
			var ticks []*Sample
			for range 2 {
				s, err := j.Sample(ctx)
				if err != nil {
					t.Fatal(err)
				}
				ticks = append(ticks, s)
			}
			_, mem, _, errs := Summarize(j, ticks)
			var got []string
			for _, e := range errs {
				if strings.Contains(e, "memory") {
					got = append(got, e)
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("memory errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if (mem != nil) != c.known {
				t.Errorf("memory %+v, want known %v", mem, c.known)
			}
		})
	}
}
