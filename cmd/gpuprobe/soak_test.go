package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/exporter"
)

// threads is the OS thread count of this process: a read blocked in open(2)
// or read(2) holds one.
func threads() int {
	data, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}

// TestSoakHungProcAndSysfsFiles: the daemon's real collectors over a procfs
// whose driver/nvidia/version and a sysfs whose PCI attributes are FIFOs
// nobody writes (a hung pseudo-file). The bug: every cycle re-read them and
// left the blocked read behind, +3 threads per cycle for /proc and +1 for
// sysfs, until "fatal error: thread exhaustion" after ~14 hours. Now each
// hung file costs one thread, once: goroutines and threads stay flat over
// 1,000 cycles, and every cycle says which source is hung.
func TestSoakHungProcAndSysfsFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: 1,000 daemon cycles (run without -short)")
	}
	dir := t.TempDir()
	proc, sys := filepath.Join(dir, "proc"), filepath.Join(dir, "sys")
	dev := filepath.Join(sys, "bus", "pci", "devices", "0000:19:00.0")
	for _, d := range []string{filepath.Join(proc, "driver", "nvidia"), dev} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(proc, "uptime"), []byte("1000.0 900.0\n"), 0o644)
	var fifos []string
	for _, p := range []string{filepath.Join(proc, "driver", "nvidia", "version"), filepath.Join(dev, "vendor"), filepath.Join(dev, "class"), filepath.Join(dev, "device")} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		fifos = append(fifos, p)
	}
	t.Cleanup(func() { // release the reads still blocked in open(2)
		for _, p := range fifos {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
	})
	c := testCLI()
	f := &serveFlags{interval: time.Hour, metricsPath: "/metrics"}
	f.collect = collectFlags{timeout: 50 * time.Millisecond, callTimeout: 50 * time.Millisecond, sysfs: sys, procfs: proc, virt: "none"}
	d, _, err := c.newDaemon(f)
	if err != nil {
		t.Fatal(err)
	}
	cycle := func(limit time.Duration) *exporter.Snapshot {
		done := make(chan *exporter.Snapshot, 1)
		go func() { done <- d.Cycle(context.Background()) }()
		select {
		case s := <-done:
			return s
		case <-time.After(limit):
			t.Fatalf("a daemon cycle did not return within %s: a hung file froze collection", limit)
			return nil
		}
	}
	const warm, cycles = 10, 1000
	g0, th0 := runtime.NumGoroutine(), threads()
	for i := 0; i < warm; i++ {
		cycle(10 * time.Second)
	}
	// A cycle that ran out of its 50 ms (a loaded machine) returns with
	// its readers still finishing their regular files in goroutines of
	// their own: counted at once they look like growth. So both counts are
	// taken once the stragglers are gone: the baseline when the count has
	// not changed for a second, the end when it is back within 5 of it; a
	// read left blocked on a FIFO never goes, and a leak of one per cycle
	// stays 1,000 over. Both waits are bounded.
	gWarm, thWarm := settledGoroutines(10*time.Second, -1), threads()
	start := time.Now()
	for i := 0; i < cycles; i++ {
		cycle(10 * time.Second)
	}
	el := time.Since(start)
	gEnd, thEnd := settledGoroutines(10*time.Second, gWarm+5), threads()
	t.Logf("goroutines %d before, %d after %d cycles, %d after %d more; threads %d, %d, %d; %s per cycle; RSS %.1f MiB",
		g0, gWarm, warm, gEnd, cycles, th0, thWarm, thEnd, el/cycles, rssMiB())
	// Threads are a high-water mark the runtime never lowers: under load it
	// starts a few more for short syscalls that overlapped. A blocked read
	// left behind every cycle (the bug: +4 a cycle) is thousands, and more
	// than one every tenth cycle is over this bound.
	if gEnd > gWarm+5 || thEnd > thWarm+cycles/10 {
		t.Errorf("goroutines %d -> %d, threads %d -> %d over %d cycles with hung files: a wedged source costs more than one thread", gWarm, gEnd, thWarm, thEnd, cycles)
	}
	// Each cycle says which source is hung when it has the time to: a cycle
	// that runs out of its 50 ms on a loaded machine reports the deadline
	// instead. So the cycle checked gets 30 s: the hung sources are refused
	// at once (deadline.Do), which it must say; re-reading one would instead
	// wait for that read's own timeout and report that.
	d.Timeout = 30 * time.Second
	var s *exporter.Snapshot
	for end := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		// Refused at once (no node) while a 50 ms cycle's collection still
		// runs aside.
		if s = cycle(time.Minute); s.Node != nil || time.Now().After(end) {
			break
		}
	}
	if s.Node == nil {
		// Seen once beside four CPU hogs: a collection of the first cycles
		// never returned. Say which collector holds it.
		buf := make([]byte, 8<<20)
		var stuck []string
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "gpuprobe/gpuprobe/collect.") || strings.Contains(g, "gpuprobe/gpuprobe/topo.") {
				stuck = append(stuck, g)
			}
		}
		t.Fatalf("no cycle collected within a minute: %s; the collectors' goroutines:\n%s", s.Failing, strings.Join(stuck, "\n\n"))
	}
	var srcs []string
	for _, src := range s.Node.Sources {
		srcs = append(srcs, src.Name+"="+src.Error)
	}
	joined := strings.Join(srcs, " | ")
	t.Logf("sources: %s", joined)
	if !strings.Contains(joined, "has not returned") {
		t.Errorf("the last cycle does not say a source is hung: %s", joined)
	}
}

// settledGoroutines polls the goroutine count until it is at most want, or
// (want < 0) has not changed for a second, or until limit passes; it
// returns the lowest count seen.
func settledGoroutines(limit time.Duration, want int) int {
	low, last, since := runtime.NumGoroutine(), -1, time.Now()
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		n := runtime.NumGoroutine()
		low = min(low, n)
		if want >= 0 && n <= want {
			return n
		}
		if n != last {
			last, since = n, time.Now()
		} else if want < 0 && time.Since(since) >= time.Second {
			return low
		}
	}
	return low
}

// The bug: with a hung simulated GPU (--simulate dgx-h100:nvml-hang=3) every
// serve cycle opened a new go-nvml mock, keyed deadline.Do by that
// collection alone, and called the hung nvmlDeviceGetTemperature again:
// +1 goroutine per cycle for good. The simulated GPU is the same device
// every cycle, so the daemon keys it the same way, and from the second
// cycle on the call is refused while the first one is still stuck.
func TestServeHungSimulatedGPUGoroutinesFlat(t *testing.T) {
	c := testCLI()
	f := &serveFlags{interval: time.Hour, metricsPath: "/metrics"}
	// The call timeout is what the hung GPU costs once (its first cycle);
	// it must also be long enough that a healthy mock call never reaches
	// it on a loaded machine under -race (20 ms did: GPU 2 timed out).
	f.collect = collectFlags{simulate: "dgx-h100:nvml-hang=3", timeout: 5 * time.Second, callTimeout: time.Second}
	d, _, err := c.newDaemon(f)
	if err != nil {
		t.Fatal(err)
	}
	cycle := func() {
		done := make(chan struct{})
		go func() { d.Cycle(context.Background()); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a daemon cycle did not return within 10 s")
		}
	}
	count := func() int {
		// Let goroutines of the finished cycle exit before counting.
		time.Sleep(20 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	const warm, cycles = 3, 40
	for range warm {
		cycle()
	}
	gWarm := count()
	for range cycles {
		cycle()
	}
	gEnd := count()
	t.Logf("goroutines %d after %d cycles, %d after %d more", gWarm, warm, gEnd, cycles)
	if gEnd > gWarm+5 {
		t.Errorf("goroutines %d -> %d over %d cycles with one hung simulated GPU: the hung call is made again every cycle", gWarm, gEnd, cycles)
	}
	// The GPU is still reported wedged, as the real driver's would be from
	// its second cycle on; the other GPUs are read as usual.
	n := d.Exporter.Latest().Node
	var gpu3 string
	for _, e := range n.NVML.GPUs[3].Errors {
		gpu3 += e.Call + ": " + e.Error + "; "
	}
	if !strings.Contains(gpu3, "an earlier call on this device has not returned") {
		t.Errorf("GPU 3's errors in the last cycle: %q", gpu3)
	}
	if g := n.NVML.GPUs[2]; len(g.Errors) > 0 || g.Unreachable {
		t.Errorf("GPU 2 in the last cycle: %+v", g.Errors)
	}
}
