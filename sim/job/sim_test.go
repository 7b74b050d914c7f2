package job

import (
	"context"
	"io/fs"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/jobperf"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	toposim "github.com/gpuprobe/gpuprobe/sim/topo"
	"github.com/gpuprobe/gpuprobe/state"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

// The real collector over each simulated job yields the figures the
// scenario table asks for, over a 10 s window.
func TestEveryScenarioThroughTheRealCollector(t *testing.T) {
	for _, sc := range simulate.JobScenarios {
		t.Run(sc.Fault, func(t *testing.T) {
			spec, err := simulate.Parse("dgx-h100:" + sc.Fault)
			if err != nil {
				t.Fatal(err)
			}
			base, err := toposim.FS(spec)
			if err != nil {
				t.Fatal(err)
			}
			clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			root, err := FS(base, spec, clk.now)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			j, err := jobperf.Find(ctx, jobperf.Options{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			var ticks []*jobperf.Sample
			for i := 0; i <= 10; i++ {
				s, err := j.Sample(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(s.Errors) > 0 && sc.ExitedRank == 0 {
					t.Errorf("tick %d errors: %v", i, s.Errors)
				}
				ticks = append(ticks, s)
				clk.add(time.Second)
			}
			cpu, mem, io, errs := jobperf.Summarize(j, ticks)
			if len(errs) > 0 && sc.ExitedRank == 0 {
				t.Errorf("summary errors: %v", errs)
			}
			var p state.JobPerf
			j.Describe(&p)
			job := simulate.SimJob
			if p.JobID != job.ID || p.User != job.UID || p.TasksFrom != "cgroup-v2" || p.CgroupPath != JobCgroup {
				t.Errorf("describe = %+v", p)
			}
			ranks := 0
			for _, on := range sc.RanksOnGPU {
				if on {
					ranks++
				}
			}
			if len(p.PIDs) != ranks+len(job.WorkerPIDs) {
				t.Errorf("%d PIDs, want %d ranks + %d workers", len(p.PIDs), ranks, len(job.WorkerPIDs))
			}

			if cpu.AllocatedCount != job.CPUCount || cpu.AllocatedCPUs != job.CPUs || cpu.From != "cpu.stat" {
				t.Errorf("cpu = %+v", cpu)
			}
			if sc.HotWorkerCPUs > 0 {
				if len(cpu.TopProcesses) == 0 || cpu.TopProcesses[0].PID != job.WorkerPIDs[0] || cpu.TopProcesses[0].Comm != "pt_data_worker" ||
					cpu.TopProcesses[0].Threads != 3 || !near(cpu.TopProcesses[0].CPUSeconds, 10*sc.HotWorkerCPUs, 0.02) {
					t.Errorf("top processes %+v, want worker %d (pt_data_worker, 3 threads) first at %.1f CPU s", cpu.TopProcesses, job.WorkerPIDs[0], 10*sc.HotWorkerCPUs)
				}
			} else if len(cpu.TopProcesses) == 0 && sc.CPUBusyPercent > 0 || len(cpu.TopProcesses) > jobperf.MaxTopProcesses {
				t.Errorf("top processes %+v", cpu.TopProcesses)
			}
			busy := cpu.UsedSeconds / (10 * float64(cpu.AllocatedCount)) * 100
			t.Logf("busy %.1f%% of %d CPUs, D %d/%d task samples, read %.1f MiB/s (%s %s), mem %d MiB, swap %v, events %v",
				busy, cpu.AllocatedCount, io.DStateTaskSamples, io.TaskSamples, float64(io.ReadBytes)/10/(1<<20),
				io.Filesystems[0].Type, io.Filesystems[0].MountPoint, mem.UsedBytes>>20, mem.SwapBytes != nil && *mem.SwapBytes > 0, mem.Events)
			if !near(busy, float64(sc.CPUBusyPercent), 0.10) {
				t.Errorf("CPU busy %.1f%%, the scenario says %d%%", busy, sc.CPUBusyPercent)
			}
			dTasks, dFiles := sc.DStateTasks, 0
			if sc.DStateRank > 0 {
				dTasks, dFiles = dTasks+1, 1 // the rank in D holds a checkpoint open on the mount
			}
			if io.DStateTaskSamples != 11*dTasks {
				t.Errorf("D-state samples %d, want %d tasks x 11 ticks", io.DStateTaskSamples, sc.DStateTasks)
			}
			wantRead := float64(sc.ReadMiBps) * 10 * (1 << 20)
			if !near(float64(io.ReadBytes), wantRead, 0.10) {
				t.Errorf("rchar over 10 s = %d, want ~%.0f", io.ReadBytes, wantRead)
			}
			if len(io.Filesystems) == 0 || io.Filesystems[0].Type != sc.ReadFSType ||
				!near(float64(io.Filesystems[0].ReadBytes), wantRead, 0.10) || io.Filesystems[0].OpenFiles != len(job.WorkerPIDs)+dFiles {
				t.Errorf("filesystems = %+v, want %s first with ~%.0f bytes", io.Filesystems, sc.ReadFSType, wantRead)
			}
			for _, f := range io.Filesystems[1:] {
				if f.ReadBytes != 0 || f.Type == "devtmpfs" {
					t.Errorf("reads attributed to %+v", f)
				}
			}
			limit := job.LimitMiB << 20
			if mem.LimitBytes == nil || *mem.LimitBytes != limit ||
				!near(float64(mem.UsedBytes), float64(limit)*float64(sc.MemPercentOfLimit)/100, 0.01) {
				t.Errorf("memory = %+v", mem)
			}
			if mem.SwapBytes == nil || *mem.SwapBytes != sc.SwapMiB<<20 || mem.Events["oom_kill"] != sc.OOMKills {
				t.Errorf("swap %v, events %v; want %d MiB, %d oom_kill", mem.SwapBytes, mem.Events, sc.SwapMiB, sc.OOMKills)
			}
			if sc.DStateTasks > 0 && (io.PressureSomeSeconds == nil || *io.PressureSomeSeconds < 1) {
				t.Errorf("io pressure %v with tasks in D", io.PressureSomeSeconds)
			}
		})
	}
}

func TestNoJobScenarioLeavesTheTreeAlone(t *testing.T) {
	spec, err := simulate.Parse("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	base, err := toposim.FS(spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := FS(base, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.(*overlay); ok {
		t.Fatal("an overlay without a job scenario")
	}
	if _, err := fs.Stat(got, "sys/fs/cgroup/system.slice"); err == nil {
		t.Error("a job cgroup without a job scenario")
	}
}

// The overlay keeps the node's own tree readable and merges directories.
func TestOverlayMergesWithTheNodeTree(t *testing.T) {
	spec, _ := simulate.Parse("dgx-h100:job-io-bound")
	base, err := toposim.FS(spec)
	if err != nil {
		t.Fatal(err)
	}
	root, err := FS(base, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := fs.ReadFile(root, "proc/uptime"); err != nil || len(b) == 0 {
		t.Errorf("the node's /proc/uptime: %q %v", b, err)
	}
	es, err := fs.ReadDir(root, "proc")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range es {
		names[e.Name()] = true
	}
	if !names["cpuinfo"] || !names[strconv.Itoa(int(simulate.SimJob.WorkerPIDs[0]))] {
		t.Errorf("proc lists %v: want the node's and the job's entries", names)
	}
	target, err := fs.ReadLink(root, "proc/70110/fd/3")
	if err != nil || target != "/data/train/shard-00000.tar" {
		t.Errorf("fd link = %q, %v", target, err)
	}
	if err := fstestWalk(root); err != nil {
		t.Error(err)
	}
}

// fstestWalk walks the whole tree: every directory lists, every file opens.
func fstestWalk(root fs.FS) error {
	return fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			_, err = fs.ReadFile(root, p)
		}
		return err
	})
}

// --hang's facts through the real collector: job-hang-dstate's rank 3 is
// in D with two threads on an NFS RPC and a file open on the NFS mount;
// job-hang-dead's rank 3 is read once and then gone.
func TestHangShapesThroughTheRealCollector(t *testing.T) {
	for _, shape := range []string{"job-hang-dstate", "job-hang-dead"} {
		t.Run(shape, func(t *testing.T) {
			spec, err := simulate.Parse("dgx-h100:" + shape)
			if err != nil {
				t.Fatal(err)
			}
			base, err := toposim.FS(spec)
			if err != nil {
				t.Fatal(err)
			}
			clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			root, err := FS(base, spec, clk.now)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			j, err := jobperf.Find(ctx, jobperf.Options{Root: root, Hang: true})
			if err != nil {
				t.Fatal(err)
			}
			var ticks []*jobperf.Sample
			for i := 0; i < 3; i++ {
				s, err := j.Sample(ctx)
				if err != nil {
					t.Fatal(err)
				}
				ticks = append(ticks, s)
				clk.add(time.Second)
			}
			h := jobperf.SummarizeHang(ticks, nil)
			if len(h.Ranks) != 4 {
				t.Fatalf("%d ranks, want 4 (the workers are not ranks): %+v", len(h.Ranks), h.Ranks)
			}
			r := h.Ranks[3]
			switch shape {
			case "job-hang-dstate":
				if r.States != "DDD" || r.DThreads != 2 || r.Threads != 8 || r.Wchan != "rpc_wait_bit_killable" ||
					len(r.DWchans) != 1 || r.Rank != "3" || len(r.Mounts) == 0 || r.Mounts[0].Type != "nfs4" {
					t.Errorf("rank 3: %+v", r)
				}
			case "job-hang-dead":
				if !r.Exited || r.States != "S" || r.Rank != "3" {
					t.Errorf("rank 3: %+v", r)
				}
			}
			for _, o := range h.Ranks[:3] {
				if o.Exited || o.States != "SSS" || o.Wchan != "futex_wait_queue" {
					t.Errorf("waiting rank: %+v", o)
				}
			}
		})
	}
}
