package jobrecord

import (
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

var t0 = time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)

// cycle is one daemon collection: GPU i runs the processes procs[i] (job
// ID → PIDs) at utilisation util[i].
func cycle(at time.Time, util []uint32, procs []map[string][]uint32) *state.Node {
	n := &state.Node{CollectedAt: at, NVML: &state.NVML{Available: true}}
	for i, u := range util {
		lim := 700.0
		g := state.GPU{Index: i, UUID: "GPU-" + string(rune('a'+i)), PCIBusID: "0000:1" + string(rune('0'+i)) + ":00.0",
			Memory:      &state.Memory{TotalBytes: 80 << 30, UsedBytes: uint64(10+i) << 30},
			Utilization: &state.Utilization{GPUPercent: u, MemoryPercent: u / 2},
			Power:       &state.Power{DrawWatts: 123.4, LimitWatts: &lim}, ClockEvents: &state.ClockEvents{Mask: 0x4}}
		for job, pids := range procs[i] {
			for _, p := range pids {
				g.Processes = append(g.Processes, state.Process{PID: p, User: "alice", JobID: job})
			}
		}
		g.Processes = append(g.Processes, state.Process{PID: 99, User: "root"}) // not a job's
		n.NVML.GPUs = append(n.NVML.GPUs, g)
	}
	return n
}

func TestBookRecordsEachJobsGPUs(t *testing.T) {
	b := New(0, 0, 0)
	procs := []map[string][]uint32{{"42": {100}}, {"42": {101}, "43": {200}}, {}}
	for k, u := range []uint32{0, 50, 97} {
		b.Observe(cycle(t0.Add(time.Duration(k)*15*time.Second), []uint32{u, 10, 99}, procs))
	}
	j, ok := b.Job("42")
	if !ok {
		t.Fatal("job 42 not recorded")
	}
	if len(j.GPUs) != 2 || j.GPUs[0].Index != 0 || j.GPUs[1].Index != 1 {
		t.Fatalf("job 42 GPUs %+v, want GPUs 0 and 1", j.GPUs)
	}
	if j.User != "alice" || j.WindowSeconds != 30 || len(j.PIDs) != 2 {
		t.Errorf("job 42: user %q window %v pids %v", j.User, j.WindowSeconds, j.PIDs)
	}
	g := j.GPUs[0]
	if len(g.Samples) != 3 || g.Samples[0].UtilGPUPercent == nil || *g.Samples[0].UtilGPUPercent != 0 || *g.Samples[2].UtilGPUPercent != 97 {
		t.Errorf("GPU 0 readings %+v: want 0, 50, 97 (a 0%% reading kept as a reading)", g.Samples)
	}
	if *g.Samples[1].MemoryUsedBytes != 10<<30 || *g.Samples[1].PowerWatts != 123.4 || *g.Samples[1].PowerLimitWatts != 700 || *g.Samples[1].ClockEventMask != 0x4 {
		t.Errorf("GPU 0 reading 1 not round-tripped: %+v", g.Samples[1])
	}
	if !g.Samples[2].At.Equal(t0.Add(30 * time.Second)) {
		t.Errorf("reading time %v", g.Samples[2].At)
	}
	if len(g.JobPIDs) != 1 || g.JobPIDs[0] != 100 {
		t.Errorf("GPU 0 job PIDs %v, want [100] (root's 99 is no job's)", g.JobPIDs)
	}
	if j43, _ := b.Job("43"); j43 == nil || len(j43.GPUs) != 1 || j43.GPUs[0].Index != 1 {
		t.Errorf("job 43: %+v, want GPU 1 only", j43)
	}
	if b.Len() != 2 {
		t.Errorf("%d jobs, want 2 (GPU 2 runs no job)", b.Len())
	}
	// The copy is the caller's: changing it does not change the book.
	*j.GPUs[0].Samples[0].UtilGPUPercent = 77
	if again, _ := b.Job("42"); *again.GPUs[0].Samples[0].UtilGPUPercent != 0 {
		t.Error("Job returned the book's own storage")
	}
}

func TestBookBounds(t *testing.T) {
	b := New(2, 3, time.Hour)
	for k := 0; k < 5; k++ {
		b.Observe(cycle(t0.Add(time.Duration(k)*time.Minute), []uint32{uint32(k)}, []map[string][]uint32{{"7": {1}}}))
	}
	j, _ := b.Job("7")
	if n := len(j.GPUs[0].Samples); n != 3 || *j.GPUs[0].Samples[0].UtilGPUPercent != 2 {
		t.Fatalf("%d readings starting at %d, want the newest 3 (2, 3, 4)", n, *j.GPUs[0].Samples[0].UtilGPUPercent)
	}
	b.Observe(cycle(t0.Add(6*time.Minute), []uint32{1}, []map[string][]uint32{{"8": {2}}}))
	b.Observe(cycle(t0.Add(7*time.Minute), []uint32{1}, []map[string][]uint32{{"9": {3}}}))
	if _, ok := b.Job("7"); ok || b.Len() != 2 {
		t.Errorf("with room for 2 jobs the least recently seen (7) stays: len %d", b.Len())
	}
	b.Observe(cycle(t0.Add(3*time.Hour), []uint32{1}, []map[string][]uint32{{"10": {4}}}))
	if _, ok := b.Job("9"); ok || b.Len() != 1 {
		t.Errorf("a job not seen for longer than keep stays: len %d", b.Len())
	}
}
