//go:build linux

package jobperf

import (
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// This machine's real /proc: the test process is the "job" (ListPIDs gives
// its own PID, as `scontrol listpids` would on a node without job cgroups).
// Burning CPU and reading a file between two ticks must show up as CPU time,
// rchar and a pos advance on the file's filesystem.
func TestRealProcOfThisProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	me := int32(os.Getpid())
	j, err := Find(ctx, Options{JobID: "999999999", CallTimeout: 5 * time.Second,
		ListPIDs: func(context.Context, string) ([]int32, error) { return []int32{me}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if j.tasksFrom != "scontrol" {
		t.Fatalf("tasks from %q: this machine has a cgroup for job 999999999?", j.tasksFrom)
	}

	// A file to read through one fd, opened before the first tick.
	const size = 4 << 20
	p := filepath.Join(t.TempDir(), "data.bin")
	w, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(w, rand.Reader, size); err != nil {
		t.Fatal(err)
	}
	w.Close()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	s1, err := j.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Burn 300 ms of CPU, as the kernel counts it (the machine may be
	// shared: wall time says nothing).
	before := cpuTime(t)
	x := 0
	for deadline := time.Now().Add(20 * time.Second); cpuTime(t)-before < 300*time.Millisecond && time.Now().Before(deadline); {
		for i := 0; i < 1e5; i++ {
			x += i * i
		}
	}
	if _, err := io.Copy(io.Discard, f); err != nil {
		t.Fatal(err)
	}
	s2, err := j.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cpu, _, iost, errs := Summarize(j, []*Sample{s1, s2})
	t.Logf("cpu %+v io %+v errors %v (x=%d)", cpu, iost, errs, x)
	burnt := (cpuTime(t) - before).Seconds()
	// /proc counts in 10 ms ticks and the sampler's own reads add a little.
	if cpu == nil || cpu.From != "proc" || cpu.UsedSeconds < 0.28 || cpu.UsedSeconds > burnt+0.5 {
		t.Errorf("CPU used %+v: want the %.2f s getrusage counted (at least 0.28 s)", cpu, burnt)
	}
	if cpu != nil && cpu.AllocatedCount < 1 {
		t.Errorf("allocated CPUs %q: Cpus_allowed_list not read", cpu.AllocatedCPUs)
	}
	if iost == nil || iost.ReadBytes < size {
		t.Fatalf("rchar advance %+v: want at least %d", iost, size)
	}
	var found bool
	for _, fs := range iost.Filesystems {
		if fs.ReadBytes >= size {
			found = true
			if fs.Type == "" || fs.MountPoint == "" || fs.OpenFiles < 1 {
				t.Errorf("filesystem %+v", fs)
			}
		}
	}
	if !found {
		t.Errorf("no filesystem with the %d bytes read through the file's fd: %+v", size, iost.Filesystems)
	}
}

// cpuTime is this process's user+system time (getrusage(2)), the same
// counter /proc/PID/stat utime+stime shows.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
