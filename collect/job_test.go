package collect_test

import (
	"bytes"
	"context"
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/report"
	jobsim "github.com/gpuprobe/gpuprobe/sim/job"
	simnode "github.com/gpuprobe/gpuprobe/sim/node"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	"github.com/gpuprobe/gpuprobe/state"
)

// hiding is a tree with some files taken out, as a kernel leaves them out.
type hiding struct {
	fs.FS
	gone func(name string) bool
}

func (h hiding) Open(name string) (fs.File, error) {
	if h.gone(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return h.FS.Open(name)
}

func (h hiding) Stat(name string) (fs.FileInfo, error) {
	if h.gone(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fs.Stat(h.FS, name)
}

func (h hiding) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := fs.ReadDir(h.FS, name)
	var kept []fs.DirEntry
	for _, e := range es {
		if !h.gone(path.Join(name, e.Name())) {
			kept = append(kept, e)
		}
	}
	return kept, err
}

func (h hiding) ReadLink(name string) (string, error) { return fs.ReadLink(h.FS, name) }
func (h hiding) Lstat(name string) (fs.FileInfo, error) {
	if h.gone(name) {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
	}
	return fs.Lstat(h.FS, name)
}

// What `gpuprobe job` prints under "not read:" is one line a cause. On a
// real H200 (driver 580.159.04, 2026-11-26) the job's cgroup had no memory
// controller, and the line was a Go-formatted list: "host counters: [open
// .../memory.current: no such file or directory open .../memory.max: ...
// memory: the job has no memory cgroup counters (...)]". The simulated job
// (the real run's loader-starved shape) with its memory files taken out is
// that node.
func TestJobNotReadLines(t *testing.T) {
	cg := strings.TrimPrefix("/sys/fs/cgroup"+jobsim.JobCgroup, "/")
	for _, c := range []struct {
		name string
		gone func(name string) bool
		want []string // the report's "not read:" lines, whole
	}{
		{name: "memory controller off",
			gone: func(n string) bool {
				return strings.HasPrefix(n, cg+"/memory.") && n != cg+"/memory.pressure" // PSI files are the cgroup core's
			},
			want: []string{"  not read: memory: the job's cgroup has no memory counters (memory.current absent: the memory controller is off for job_" + simulate.SimJob.ID + ")"}},
		{name: "everything readable", gone: func(string) bool { return false }},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec, err := simulate.Parse("dgx-h100:job-loader-starved")
			if err != nil {
				t.Fatal(err)
			}
			src, err := simnode.Sources(spec)
			if err != nil {
				t.Fatal(err)
			}
			src.Root = hiding{FS: src.Root, gone: c.gone}
			p, err := collect.Job(context.Background(), collect.JobOptions{
				Options: collect.Options{Sources: src, CallTimeout: time.Second},
				JobID:   simulate.SimJob.ID, Duration: 100 * time.Millisecond, Interval: 50 * time.Millisecond,
				GPUs: simulate.SimJob.GPUs, GPUsFrom: "simulated job"})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			doc := report.New(&state.Node{Host: "sim", CollectedAt: p.Start, JobPerf: p}, nil, false, time.Second)
			if err := doc.WriteText(&b, report.TextOptions{}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range strings.Split(b.String(), "\n") {
				if strings.HasPrefix(l, "  not read: ") {
					got = append(got, l)
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("not read lines:\n%s\nwant:\n%s\nreport:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"), b.String())
			}
			if (p.Memory != nil) != (c.want == nil) {
				t.Errorf("memory %+v", p.Memory)
			}
		})
	}
}
