package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

func u32p(v uint32) *uint32   { return &v }
func u64p(v uint64) *uint64   { return &v }
func f64p(v float64) *float64 { return &v }

func sampledJob() *state.Node {
	t0 := time.Unix(1700000000, 0)
	g := state.JobGPU{Index: 2, PCIBusID: "0000:4c:00.0", MemoryTotalBytes: 80 << 30, JobPIDs: []uint32{70102}}
	for i, u := range []uint32{90, 96, 99} {
		g.Samples = append(g.Samples, state.GPUSample{At: t0.Add(time.Duration(i) * time.Second), UtilGPUPercent: u32p(u), UtilMemoryPercent: u32p(50),
			MemoryUsedBytes: u64p(40 << 30), PCIeRxKBps: u32p(2000000), PCIeTxKBps: u32p(1000000),
			NVLinkRxBytes: u64p(uint64(i) * 10e9), NVLinkTxBytes: u64p(uint64(i) * 5e9),
			PowerWatts: f64p(650), PowerLimitWatts: f64p(700), SMClockMHz: u32p(1980), MaxSMClockMHz: u32p(1980), ClockEventMask: u64p(0x4)})
	}
	lim := uint64(256 << 30)
	return &state.Node{Host: "gpu01", CollectedAt: t0, JobPerf: &state.JobPerf{JobID: "4242", User: "alice", TasksFrom: "cgroup-v2",
		PIDs: []int32{70102, 70110}, WindowSeconds: 2, IntervalSeconds: 1, GPUsFrom: "scontrol show job -d", GPUs: []state.JobGPU{g},
		CPU: &state.JobCPU{AllocatedCPUs: "0-7", AllocatedCount: 8, UsedSeconds: 8, From: "cpu.stat",
			TopProcesses: []state.JobProcess{{PID: 70110, Comm: "pt_data_worker", CPUSeconds: 1.99}, {PID: 70102, Comm: "evil\x1b]0;x\a", CPUSeconds: 1}}},
		Memory: &state.JobMemory{UsedBytes: 64 << 30, LimitBytes: &lim, Events: map[string]uint64{"oom_kill": 0, "high": 2}},
		IO: &state.JobIO{Ticks: 3, DStateTaskSamples: 3, ReadBytes: 200 << 20, StorageReadBytes: 0,
			Filesystems: []state.JobFilesystem{{Type: "nfs4", MountPoint: "/data\x1b[2J\u202e", OpenFiles: 4, ReadBytes: 200 << 20}}}}}
}

func TestJobFigures(t *testing.T) {
	n := sampledJob()
	doc := New(n, []check.Result{{ID: "perf.bottleneck", Status: check.Pass, Summary: "GPU-bound"}}, false, time.Second)
	var b bytes.Buffer
	if err := doc.WriteText(&b, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"gpuprobe job 4242 on gpu01 — 1 GPUs, 2s sampled every 1s",
		"job: 2 processes (cgroup-v2, user alice), GPUs from scontrol show job -d",
		"GPU 2 (0000:4c:00.0):  95% busy (90-99), memory controller 50%, 40.0/80.0 GiB, PCIe rx 2.00 GB/s tx 1.00 GB/s, NVLink rx 10.00 GB/s tx 5.00 GB/s, 650/700 W, SM 1980/1980 MHz, sw_power_cap×3, 1 job process(es)",
		"CPU: 4.0 of 8 allocated CPUs busy (50%, cpu.stat; CPUs 0-7); busiest (CPUs): pid 70110 pt_data_worker 1.0, pid 70102 evil\\x1b]0;x\\x07 0.5",
		"memory: 64.0 GiB of 256.0 GiB limit, events: high 2",
		"I/O: reads 100.0 MiB/s (0.0 MiB/s from block devices), 1.0 task(s) in I/O wait; nfs4 /data",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\u202e\a") {
		t.Errorf("a mount point's or a process name's control or bidi characters reach the terminal raw:\n%q", out)
	}
	b.Reset()
	if err := doc.WriteJobSummary(&b); err != nil {
		t.Fatal(err)
	}
	want := "gpuprobe: job 4242 GPU 2: 95% busy, memory 40.0/80.0 GiB, 1 process(es) of the job, 2 s sampled\ngpuprobe: job 4242: PASS: no inefficiency found\n"
	if b.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", b.String(), want)
	}
}

// `gpuprobe job` says which container runtime holds the job's GPU
// processes; the marker is printed cleaned (it can quote a cgroup path).
func TestJobFiguresContainers(t *testing.T) {
	n := sampledJob()
	n.JobPerf.Containers = []state.ProcessContainer{{PID: 70102, Runtime: "enroot", From: "environ SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image"}, {PID: 70103, Runtime: "podman", From: "cgroup /x\x1b[31m"}}
	doc := New(n, nil, false, time.Second)
	var b bytes.Buffer
	if err := doc.WriteText(&b, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "  containers: pid 70102 enroot (environ SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image), pid 70103 podman (cgroup /x\\x1b[31m)"
	if !strings.Contains(b.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, b.String())
	}
}
