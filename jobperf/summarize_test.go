package jobperf

import (
	"context"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
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
