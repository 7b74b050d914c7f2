package cuda

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/verify"
)

// verify's runner over the stub: the real loader path, end to end, as
// `gpuprobe verify` drives it (every GPU's compute load and pattern test at
// once, each call under internal/deadline).

// stubNVML maps the stub's bus ids to NVML indexes 0 and 1, so each
// measurement names its GPU.
func stubNVML() map[string]int {
	return map[string]int{busid.Canonical("0000:18:00.0"): 0, busid.Canonical("0000:2A:00.0"): 1}
}

// stubOptions is the quick tier, its buffers shrunk to 8 MiB (the stub's
// device memory is malloc'd; 80 GiB × 1/10240) and its compute load to
// Duration/4 = 2 s.
func stubOptions() verify.Options {
	return verify.Options{
		Tier:              verify.TierQuick,
		Duration:          8 * time.Second,
		MaxMemoryFraction: 1.0 / 10240,
		NVMLIndex:         stubNVML(),
		Registry:          &deadline.Registry{},
	}
}

func TestVerifyRunOverTheStubLoadsBothGPUsAtOnce(t *testing.T) {
	d, log := openStub(t)
	v := verify.Run(context.Background(), d, stubOptions())
	if v.Error != "" {
		t.Fatalf("run: %s", v.Error)
	}
	if v.Driver != "libcuda.so.1 (CUDA 12.4)" || len(v.Devices) != 2 {
		t.Errorf("driver %q, %d devices", v.Driver, len(v.Devices))
	}
	seen := map[string]map[int]bool{}
	for _, m := range v.Measurements {
		if m.Error != "" {
			t.Errorf("%s on GPU %d: %s", m.Kind, m.GPU, m.Error)
		}
		if seen[m.Kind] == nil {
			seen[m.Kind] = map[int]bool{}
		}
		seen[m.Kind][m.GPU] = true
		switch m.Kind {
		case state.MeasureMemTest:
			if m.Mismatches != 0 {
				t.Errorf("pattern test on GPU %d: %d mismatches", m.GPU, m.Mismatches)
			}
		default:
			if m.Value <= 0 {
				t.Errorf("%s on GPU %d: %g %s", m.Kind, m.GPU, m.Value, m.Unit)
			}
		}
	}
	for _, k := range []string{state.MeasureH2D, state.MeasureD2H, state.MeasureD2D, state.MeasureCompute, state.MeasureMemTest} {
		if !seen[k][0] || !seen[k][1] {
			t.Errorf("%s measured on GPUs %v, want 0 and 1", k, seen[k])
		}
	}
	if !seen[state.MeasurePeer][0] {
		t.Errorf("no peer figure for the pair 0 → 1: %v", seen[state.MeasurePeer])
	}
	// Run closed the driver: everything taken was given back.
	if _, err := d.Devices(context.Background()); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("after Run: Devices = %v, want the driver closed", err)
	}
	lines := readLog(t, log)
	checkReleased(t, lines)
	// The two compute loads ran at once: some launch on GPU 0 overlapped
	// one on GPU 1, and the span from the first launch to the last is
	// shorter than the two devices' launch time added up (measured by the
	// same clock, in this run).
	launches := fmaLaunches(t, lines)
	if len(launches[0]) == 0 || len(launches[1]) == 0 {
		t.Fatalf("fma_loop launches: GPU 0 %d, GPU 1 %d", len(launches[0]), len(launches[1]))
	}
	if !overlaps(launches[0], launches[1]) {
		t.Errorf("no launch on GPU 0 overlapped one on GPU 1: the compute loads ran one after the other")
	}
	first, last, busy := launches[0][0].start, launches[0][0].end, 0.0
	for _, ls := range launches {
		for _, l := range ls {
			first, last = min(first, l.start), max(last, l.end)
			busy += l.end - l.start
		}
	}
	if span := last - first; span >= busy {
		t.Errorf("the compute phase spanned %.3f s, the launches took %.3f s together: they did not overlap", span, busy)
	}
}

// A call that hangs on GPU 1 during the compute load ends the run with an
// error naming it; GPU 0's figures, its compute load included (it ran
// alongside), are kept; the driver is left unclosed and refuses every
// later call, naming the driver call that hung.
func TestVerifyRunOverTheStubWithAHungGPU(t *testing.T) {
	d, _ := openStub(t)
	// Compute gets 2 s + CallTimeout: GPU 1's first launch outlives it.
	t.Setenv("STUB_CUDA_HANG", "cuLaunchKernel@1=5000")
	opts := stubOptions()
	opts.CallTimeout = time.Second
	v := verify.Run(context.Background(), d, opts)
	// Run returned while the hung call was still in progress: it did not
	// wait for it.
	if c := callOn(d, 1); c != "cuLaunchKernel" {
		t.Errorf("when Run returned, GPU 1 was in %q, want still in cuLaunchKernel", c)
	}
	if !strings.Contains(v.Error, "cuLaunchKernel (FMA load) on GPU 1 (0000:2A:00.0): hung") ||
		!strings.Contains(v.Error, "the driver was not called again") {
		t.Errorf("run error = %q", v.Error)
	}
	kept := map[string]bool{}
	for _, m := range v.Measurements {
		switch {
		case m.Kind == state.MeasureCompute && m.GPU == 1:
			if m.Error == "" {
				t.Errorf("GPU 1's compute has no error: %+v", m)
			}
		case m.Kind == state.MeasureMemTest:
			t.Errorf("a pattern test ran after the hang: %+v", m)
		case m.Error != "" || m.Value <= 0:
			t.Errorf("%s on GPU %d: %g, %s", m.Kind, m.GPU, m.Value, m.Error)
		case m.GPU == 0:
			kept[m.Kind] = true
		}
	}
	for _, k := range []string{state.MeasureH2D, state.MeasureD2H, state.MeasureD2D, state.MeasurePeer, state.MeasureCompute} {
		if !kept[k] {
			t.Errorf("GPU 0's %s figure was not kept", k)
		}
	}
	// The run's end cancelled the call's operation: the driver is
	// poisoned, naming the stub call that hung, and even Close refuses.
	poison := d.Poisoned()
	if poison == nil || !strings.Contains(poison.Error(), "cuLaunchKernel (Compute GPU 1)") {
		t.Fatalf("Poisoned() = %v", poison)
	}
	if _, err := d.CopyHostToDevice(context.Background(), 0, 4096, 1); err == nil || err.Error() != poison.Error() {
		t.Errorf("GPU 0 after the hang: %v", err)
	}
	if err := d.Close(); err == nil || !strings.Contains(err.Error(), "nothing released") {
		t.Errorf("Close: %v", err)
	}
	waitIdle(t, d) // the stub's sleep ends before the test's environment is restored
}
