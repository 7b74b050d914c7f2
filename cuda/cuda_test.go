package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
)

// The tests load a stub libcuda.so.1 that gcc builds from
// testdata/stub/libcuda_stub.c: the real dlopen/dlsym path, every driver
// call package cuda makes, and the stub's own checks of how they are made
// (a current context, pointers inside their allocations, events and
// kernels of the right context, the PTX's entry points and parameters).

var (
	stubDir string
	stubLib string
	stubErr error
)

func TestMain(m *testing.M) {
	// A child run of TestProductionOpenSearchesTheLoaderPath: nothing else.
	if os.Getenv("GPUPROBE_CUDA_OPEN_CHILD") == "1" {
		d, err := Open()
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(0)
		}
		devs, _ := d.Devices(context.Background())
		fmt.Printf("opened: %s %s %d devices\n", d.Describe(), d.Path(), len(devs))
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "gpuprobe-cuda-stub-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stubDir = dir
	stubLib, stubErr = buildStub(dir, "testdata/stub/libcuda_stub.c", "libcuda.so.1")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildStub compiles src into dir/name with soname libcuda.so.1. gcc is
// required (scripts/deps.sh installs it): without it the tests fail, they
// do not skip.
func buildStub(dir, src, name string) (string, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("gcc is needed to build the stub libcuda.so.1 these tests load (scripts/deps.sh installs it): %w", err)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(gcc, "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror",
		"-Wl,-soname,libcuda.so.1", "-o", out, src, "-lpthread")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the stub libcuda.so.1: %v\n%s", err, b)
	}
	return out, nil
}

// stubEnv clears every stub switch and logs the stub's calls to a file of
// the test's own; it returns the log's path.
func stubEnv(t *testing.T) string {
	t.Helper()
	if stubErr != nil {
		t.Fatal(stubErr)
	}
	for _, k := range []string{"STUB_CUDA_DEVICES", "STUB_CUDA_FAIL", "STUB_CUDA_HANG", "STUB_CUDA_STUCK", "STUB_CUDA_NOPEER", "STUB_CUDA_BADFMA"} {
		t.Setenv(k, "")
	}
	log := filepath.Join(t.TempDir(), "calls.log")
	t.Setenv("STUB_CUDA_LOG", log)
	return log
}

func openStub(t *testing.T) (*Driver, string) {
	t.Helper()
	log := stubEnv(t)
	d, err := open(stubLib)
	if err != nil {
		t.Fatalf("open the stub: %v", err)
	}
	return d, log
}

func readLog(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func countLines(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// checkReleased fails unless every allocation, event, module and context
// the log shows taken was given back.
func checkReleased(t *testing.T, lines []string) {
	t.Helper()
	live := map[string]string{}
	pairs := map[string]string{
		"cuMemAlloc_v2":            "cuMemFree_v2",
		"cuMemHostAlloc":           "cuMemFreeHost",
		"cuEventCreate":            "cuEventDestroy_v2",
		"cuModuleLoadDataEx":       "cuModuleUnload",
		"cuDevicePrimaryCtxRetain": "cuDevicePrimaryCtxRelease_v2",
	}
	retained := map[string]int{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 2 || strings.HasPrefix(f[1], "fail=") {
			continue
		}
		switch f[0] {
		case "cuDevicePrimaryCtxRetain":
			retained[f[1]]++
		case "cuDevicePrimaryCtxRelease_v2":
			retained[f[1]]--
		case "cuMemAlloc_v2", "cuMemHostAlloc", "cuEventCreate", "cuModuleLoadDataEx":
			live[f[1]] = f[0]
		case "cuMemFree_v2", "cuMemFreeHost", "cuEventDestroy_v2", "cuModuleUnload":
			if _, ok := live[f[1]]; !ok {
				t.Errorf("%s of %s, which was never taken", f[0], f[1])
			}
			delete(live, f[1])
		}
	}
	for k, call := range live {
		t.Errorf("%s %s never released (%s)", call, k, pairs[call])
	}
	for dev, n := range retained {
		if n != 0 {
			t.Errorf("context %s retained %d more times than released", dev, n)
		}
	}
}

func TestOpenEnumeratesTheStubsDevices(t *testing.T) {
	d, _ := openStub(t)
	defer d.Close()
	if got, want := d.Describe(), "libcuda.so.1 (CUDA 12.4)"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	if d.Path() != stubLib {
		t.Errorf("Path = %q, want the stub's %q", d.Path(), stubLib)
	}
	devs, err := d.Devices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 {
		t.Fatalf("%d devices, want 2: %+v", len(devs), devs)
	}
	for i, bus := range []string{"0000:18:00.0", "0000:2A:00.0"} {
		dv := devs[i]
		if dv.Ordinal != i || dv.Name != fmt.Sprintf("Stub GPU %d", i) || dv.PCIBusID != bus || dv.TotalMemory != 80<<30 {
			t.Errorf("device %d = %+v", i, dv)
		}
	}
	t.Setenv("STUB_CUDA_DEVICES", "3")
	d3, err := open(stubLib)
	if err != nil {
		t.Fatal(err)
	}
	defer d3.Close()
	if devs, _ := d3.Devices(context.Background()); len(devs) != 3 {
		t.Errorf("STUB_CUDA_DEVICES=3: %d devices", len(devs))
	}
}

func TestCopiesUsePinnedMemoryAndReleaseEverything(t *testing.T) {
	d, log := openStub(t)
	ctx := context.Background()
	const size, iters = 1 << 20, 4
	for _, c := range []struct {
		call string
		f    func(context.Context, int, int64, int) (time.Duration, error)
	}{
		{"cuMemcpyHtoD_v2", d.CopyHostToDevice},
		{"cuMemcpyDtoH_v2", d.CopyDeviceToHost},
		{"cuMemcpyDtoD_v2", d.CopyDeviceToDevice},
	} {
		for dev := 0; dev < 2; dev++ {
			took, err := c.f(ctx, dev, size, iters)
			if err != nil {
				t.Fatalf("%s GPU %d: %v", c.call, dev, err)
			}
			if took <= 0 || took > 10*time.Second {
				t.Errorf("%s GPU %d took %s", c.call, dev, took)
			}
		}
		lines := readLog(t, log)
		// iters timed copies and one warm-up, on each of the two devices.
		want := fmt.Sprintf("%s bytes=%d", c.call, size)
		if n := countLines(lines, want); n != 2*(iters+1) {
			t.Errorf("%d %q lines, want %d", n, want, 2*(iters+1))
		}
		if c.call != "cuMemcpyDtoD_v2" {
			if n := countLines(lines, want+" pinned=1"); n != 2*(iters+1) {
				t.Errorf("%d of the %s copies from pinned memory, want all %d", n, c.call, 2*(iters+1))
			}
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLog(t, log)
	if n := countLines(lines, "cuDevicePrimaryCtxRetain"); n != 2 {
		t.Errorf("%d contexts retained, want one per device", n)
	}
	// Two timing events per context, blocking-sync: no CPU spins while a
	// GPU works.
	blocking := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "cuEventCreate ") && strings.HasSuffix(l, " flags=1") {
			blocking++
		}
	}
	if n := countLines(lines, "cuEventCreate "); n != 4 || blocking != 4 {
		t.Errorf("%d events created, %d of them blocking-sync; want 4 and 4", n, blocking)
	}
	checkReleased(t, lines)
	if _, err := d.CopyHostToDevice(ctx, 0, size, 1); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a closed driver copied: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func TestCopyArgumentsAreChecked(t *testing.T) {
	d, _ := openStub(t)
	defer d.Close()
	ctx := context.Background()
	for name, f := range map[string]func() error{
		"no such device": func() error { _, err := d.CopyHostToDevice(ctx, 2, 1024, 1); return err },
		"negative dev":   func() error { _, err := d.CopyDeviceToHost(ctx, -1, 1024, 1); return err },
		"zero bytes":     func() error { _, err := d.CopyDeviceToDevice(ctx, 0, 0, 1); return err },
		"zero iters":     func() error { _, err := d.CopyHostToDevice(ctx, 0, 1024, 0); return err },
		"peer to self":   func() error { _, err := d.CopyPeer(ctx, 1, 1, 1024, 1); return err },
		"peer no device": func() error { _, err := d.CanAccessPeer(ctx, 0, 5); return err },
		"pattern 3 B":    func() error { _, err := d.MemPattern(ctx, 0, 3); return err },
		"compute 0 s":    func() error { _, _, err := d.Compute(ctx, 0, 0); return err },
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestPeerCopyEnablesAccessOnceAndFallsBackWithoutIt(t *testing.T) {
	d, log := openStub(t)
	ctx := context.Background()
	can, err := d.CanAccessPeer(ctx, 0, 1)
	if err != nil || !can {
		t.Fatalf("CanAccessPeer(0, 1) = %v, %v", can, err)
	}
	for i := 0; i < 2; i++ { // the second copy finds access already enabled
		if took, err := d.CopyPeer(ctx, 0, 1, 1<<20, 3); err != nil || took <= 0 {
			t.Fatalf("CopyPeer 0→1: %s, %v", took, err)
		}
	}
	if _, err := d.CopyPeer(ctx, 1, 0, 1<<20, 3); err != nil {
		t.Fatalf("CopyPeer 1→0: %v", err)
	}
	lines := readLog(t, log)
	// Enabled (or found enabled by an earlier driver in this process: it
	// lives with the primary context) once each way, never again.
	if n := countLines(lines, "cuCtxEnablePeerAccess"); n != 2 {
		t.Errorf("peer access asked for %d times, want once each way", n)
	}
	if n := countLines(lines, "cuMemcpyPeer bytes=1048576 from=0 to=1 direct=1"); n != 8 {
		t.Errorf("%d direct 0→1 copies, want 8 (2 × (3 + warm-up))", n)
	}
	if n := countLines(lines, "cuMemcpyPeer bytes=1048576 from=1 to=0 direct=1"); n != 4 {
		t.Errorf("%d direct 1→0 copies, want 4", n)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkReleased(t, readLog(t, log))

	// Without P2P the copy is still measured, staged by the driver, and
	// peer access is not asked for.
	d, log = openStub(t)
	defer d.Close()
	t.Setenv("STUB_CUDA_NOPEER", "1")
	if can, err := d.CanAccessPeer(ctx, 0, 1); err != nil || can {
		t.Fatalf("CanAccessPeer without P2P = %v, %v", can, err)
	}
	if _, err := d.CopyPeer(ctx, 0, 1, 4096, 2); err != nil {
		t.Fatalf("CopyPeer without P2P: %v", err)
	}
	lines = readLog(t, log)
	if n := countLines(lines, "cuCtxEnablePeerAccess"); n != 0 {
		t.Errorf("peer access asked for %d times without P2P", n)
	}
	if n := countLines(lines, "cuMemcpyPeer bytes=4096 from=0 to=1 direct=0"); n != 3 {
		t.Errorf("%d staged copies, want 3", n)
	}
}

func TestADriverErrorIsNamed(t *testing.T) {
	d, log := openStub(t)
	ctx := context.Background()
	t.Setenv("STUB_CUDA_FAIL", "cuMemcpyPeer=217")
	_, err := d.CopyPeer(ctx, 0, 1, 4096, 2)
	want := "cuMemcpyPeer: CUDA_ERROR_PEER_ACCESS_UNSUPPORTED (217): peer access is not supported between these two devices"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if !errors.Is(err, &Error{Code: ErrorPeerAccessUnsupp}) || !errors.Is(err, &Error{Call: "cuMemcpyPeer", Code: 217}) {
		t.Errorf("errors.Is does not match the code: %v", err)
	}
	if errors.Is(err, &Error{Call: "cuMemAlloc_v2", Code: 217}) || errors.Is(err, &Error{Code: ErrorNoDevice}) {
		t.Errorf("errors.Is matches another call or code")
	}
	if c, ok := CodeOf(err); !ok || c != ErrorPeerAccessUnsupp || c.String() != "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED" {
		t.Errorf("CodeOf = %v, %v", c, ok)
	}

	// Codes the stub's cuGetErrorName does not know are named from cuda.h,
	// or by number.
	t.Setenv("STUB_CUDA_FAIL", "cuMemAlloc_v2=2")
	if _, err := d.CopyDeviceToDevice(ctx, 0, 4096, 1); err == nil || err.Error() != "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)" {
		t.Errorf("err = %v", err)
	}
	t.Setenv("STUB_CUDA_FAIL", "cuEventSynchronize=12345")
	if _, err := d.CopyDeviceToDevice(ctx, 0, 4096, 1); err == nil || err.Error() != "cuEventSynchronize: CUresult 12345 (12345)" {
		t.Errorf("err = %v", err)
	}
	// A failed operation still releases what it took, and the driver
	// goes on working.
	t.Setenv("STUB_CUDA_FAIL", "")
	if _, err := d.CopyDeviceToDevice(ctx, 0, 4096, 1); err != nil {
		t.Errorf("after the errors: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkReleased(t, readLog(t, log))
}

func TestInitWithoutDevicesIsNamed(t *testing.T) {
	stubEnv(t)
	t.Setenv("STUB_CUDA_FAIL", "cuInit=100")
	_, err := open(stubLib)
	if err == nil || err.Error() != "cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected" {
		t.Fatalf("err = %v", err)
	}
}

func TestComputeRunsForTheDurationAndChecksItsResult(t *testing.T) {
	d, log := openStub(t)
	ctx := context.Background()
	flops, took, err := d.Compute(ctx, 1, 60*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The stub runs the kernel as C: its device time is real time. The
	// launches go on until the duration is covered, each sized to the
	// duration (at most 100 ms): one launch past it at most.
	if took < 60*time.Millisecond || took > 2*time.Second {
		t.Errorf("took %s for 60ms asked", took)
	}
	if flops <= 0 {
		t.Errorf("flops = %g", flops)
	}
	lines := readLog(t, log)
	// One SM: 8 blocks of 256 threads.
	if n := countLines(lines, "cuLaunchKernel fma_loop grid=8 block=256"); n < 2 {
		t.Errorf("%d fma_loop launches of 8×256, want a calibration and a timed one:\n%s", n, strings.Join(lines, "\n"))
	}
	if n := countLines(lines, "cuModuleLoadDataEx"); n != 1 {
		t.Errorf("module loaded %d times", n)
	}
	if _, _, err := d.Compute(ctx, 1, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if n := countLines(readLog(t, log), "cuModuleLoadDataEx"); n != 1 {
		t.Errorf("module loaded %d times after a second compute: want it kept", n)
	}

	t.Setenv("STUB_CUDA_BADFMA", "1")
	_, _, err = d.Compute(ctx, 1, 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "fma_loop thread 0 computed 1053, want 1052: the GPU computed wrong") {
		t.Errorf("a wrong result: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkReleased(t, readLog(t, log))
}

func TestMemPatternCountsMismatches(t *testing.T) {
	d, log := openStub(t)
	ctx := context.Background()
	const size = 1<<20 + 6 // not a whole number of words: rounded down
	bad, err := d.MemPattern(ctx, 0, size)
	if err != nil || bad != 0 {
		t.Fatalf("healthy memory: %d mismatches, %v", bad, err)
	}
	if n := countLines(readLog(t, log), "cuMemAlloc_v2 ptr="); n != 2 {
		t.Errorf("%d allocations, want the buffer and the counter", n)
	}
	for _, stuck := range []int{1, 7, 1000} {
		t.Setenv("STUB_CUDA_STUCK", fmt.Sprint(stuck))
		bad, err := d.MemPattern(ctx, 1, size)
		if err != nil {
			t.Fatal(err)
		}
		// A stuck bit reads back wrong under exactly one of the pattern
		// and its complement.
		if bad != int64(stuck) {
			t.Errorf("%d stuck words: %d mismatches", stuck, bad)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkReleased(t, readLog(t, log))
}

func TestPTXRejectedLeavesCopiesWorking(t *testing.T) {
	d, log := openStub(t)
	ctx := context.Background()
	t.Setenv("STUB_CUDA_FAIL", "cuModuleLoadDataEx=218")
	_, err := d.MemPattern(ctx, 0, 4096)
	if err == nil || !strings.HasPrefix(err.Error(), "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218)") {
		t.Errorf("err = %v", err)
	}
	if _, err := d.CopyHostToDevice(ctx, 0, 4096, 1); err != nil {
		t.Errorf("a copy after the PTX was refused: %v", err)
	}
	t.Setenv("STUB_CUDA_FAIL", "")
	if _, err := d.MemPattern(ctx, 0, 4096); err != nil {
		t.Errorf("the module loads when asked again: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkReleased(t, readLog(t, log))
}

// The PTX has the three entry points, and declares every register each
// kernel uses (the stub checks the entries' parameter types against what the
// launches pass; ptx_test.go runs the kernels).
func TestPTXDeclaresWhatItUses(t *testing.T) {
	for _, name := range []string{kernelFMA, kernelPatternWrite, kernelPatternCheck} {
		if !strings.Contains(kernelsPTX, ".visible .entry "+name+"(") {
			t.Errorf("the PTX has no entry %s", name)
		}
	}
	if strings.Count(kernelsPTX, ".entry ") != 3 {
		t.Errorf("the PTX has %d entries, want 3", strings.Count(kernelsPTX, ".entry "))
	}
	// Every register a kernel uses is declared in it: %rN below %r<M>.
	decl := regexp.MustCompile(`\.reg \.\w+ %([a-z]+)<(\d+)>;`)
	use := regexp.MustCompile(`%([a-z]+)(\d+)\b`)
	for _, k := range strings.Split(kernelsPTX, ".visible .entry ")[1:] {
		name, _, _ := strings.Cut(k, "(")
		max := map[string]int{}
		for _, m := range decl.FindAllStringSubmatch(k, -1) {
			max[m[1]], _ = strconv.Atoi(m[2])
		}
		if len(max) < 3 {
			t.Errorf("%s declares %d register kinds", name, len(max))
		}
		for _, l := range strings.Split(k, "\n") {
			code, _, _ := strings.Cut(l, "//")
			if strings.Contains(code, ".reg") {
				continue
			}
			for _, m := range use.FindAllStringSubmatch(code, -1) {
				n, _ := strconv.Atoi(m[2])
				if top, ok := max[m[1]]; !ok || n >= top {
					t.Errorf("%s uses %s, beyond its declaration %%%s<%d>", name, m[0], m[1], top)
				}
			}
		}
	}
}

func TestAHungCallPoisonsTheDriver(t *testing.T) {
	d, _ := openStub(t)
	t.Setenv("STUB_CUDA_HANG", "cuEventSynchronize=1500")
	var reg deadline.Registry
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := deadline.DoIn(&reg, ctx, "cuda", 0, func() (time.Duration, error) {
		return d.CopyDeviceToDevice(ctx, 0, 4096, 2)
	})
	if !errors.Is(err, deadline.ErrTimeout) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("the caller waited %s", waited)
	}
	t.Setenv("STUB_CUDA_HANG", "")
	poison := d.Poisoned()
	if poison == nil || !strings.Contains(poison.Error(), "cuEventSynchronize (CopyDeviceToDevice GPU 0)") ||
		!strings.Contains(poison.Error(), "had not returned when its deadline passed") {
		t.Fatalf("Poisoned() = %v", poison)
	}
	// Every later call is refused at once, naming the call that hung,
	// without touching the driver.
	start = time.Now()
	if _, err := d.Devices(context.Background()); err == nil || err.Error() != poison.Error() {
		t.Errorf("Devices: %v", err)
	}
	if _, err := d.CopyHostToDevice(context.Background(), 1, 4096, 1); err == nil || err.Error() != poison.Error() {
		t.Errorf("CopyHostToDevice: %v", err)
	}
	if _, _, err := d.Compute(context.Background(), 1, time.Millisecond); err == nil || err.Error() != poison.Error() {
		t.Errorf("Compute: %v", err)
	}
	if err := d.Close(); err == nil || !strings.Contains(err.Error(), "nothing released") {
		t.Errorf("Close: %v", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("the refusals took %s", took)
	}
	// The abandoned call returns after the stub's sleep; the driver stays
	// refused.
	waitIdle(t, d)
	if err := d.Poisoned(); err == nil {
		t.Error("the driver was forgiven after the hung call returned")
	}
}

// A call that outlives its deadline on one device poisons the whole
// driver: an operation in progress on another device makes no driver call
// after it, and fails naming the call that hung.
func TestAHungCallOnOneDevicePoisonsTheOthers(t *testing.T) {
	d, _ := openStub(t)
	t.Setenv("STUB_CUDA_HANG", "cuEventSynchronize@0=1500,cuMemcpyHtoD_v2@1=400")
	other := make(chan error, 1)
	go func() {
		_, err := d.CopyHostToDevice(context.Background(), 1, 4096, 3)
		other <- err
	}()
	waitCall(t, d, 1, "cuMemcpyHtoD_v2")
	var reg deadline.Registry
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := deadline.DoIn(&reg, ctx, "cuda:0", 0, func() (time.Duration, error) {
		return d.CopyDeviceToDevice(ctx, 0, 4096, 1)
	})
	if !errors.Is(err, deadline.ErrTimeout) {
		t.Fatalf("GPU 0: err = %v, want a timeout", err)
	}
	poison := d.Poisoned()
	if poison == nil || !strings.Contains(poison.Error(), "cuEventSynchronize (CopyDeviceToDevice GPU 0)") {
		t.Fatalf("Poisoned() = %v", poison)
	}
	// GPU 1's copy (four calls of 400 ms) was in its first when GPU 0's
	// deadline passed 200 ms in; it stops at its next call.
	if err := <-other; err == nil || err.Error() != poison.Error() {
		t.Errorf("GPU 1's copy: %v, want %v", err, poison)
	}
	if err := d.Close(); err == nil || !strings.Contains(err.Error(), "cuEventSynchronize (CopyDeviceToDevice GPU 0)") {
		t.Errorf("Close: %v", err)
	}
	waitIdle(t, d)
}

// waitIdle waits until no operation holds any device of the driver.
func waitIdle(t *testing.T, d *Driver) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for i := range d.sems {
		select {
		case d.sems[i] <- struct{}{}:
		case <-timeout:
			t.Fatal("the hung operation never finished")
		}
	}
	for i := range d.sems {
		<-d.sems[i]
	}
}

// A caller that stops waiting without ending the operation's ctx leaves the
// driver unable to tell a hang from a slow call: the next operation on the
// same device waits for it until its own deadline, and says which call on
// which device it waited for; a peer copy that needs that device too gives
// back the other device it took while it waited.
func TestAWaitingCallNamesTheCallInProgress(t *testing.T) {
	d, _ := openStub(t)
	t.Setenv("STUB_CUDA_HANG", "cuMemcpyDtoD_v2@0=700")
	done := make(chan error, 1)
	go func() {
		_, err := d.CopyDeviceToDevice(context.Background(), 0, 4096, 1)
		done <- err
	}()
	waitCall(t, d, 0, "cuMemcpyDtoD_v2")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := d.CopyHostToDevice(ctx, 0, 4096, 1)
	if err == nil || err.Error() != "CopyHostToDevice GPU 0: context deadline exceeded while waiting for cuMemcpyDtoD_v2 (CopyDeviceToDevice GPU 0) on GPU 0 to finish" {
		t.Errorf("err = %v", err)
	}
	_, err = d.CopyPeer(ctx, 1, 0, 4096, 1)
	if err == nil || err.Error() != "CopyPeer GPU 1 → GPU 0: context deadline exceeded while waiting for cuMemcpyDtoD_v2 (CopyDeviceToDevice GPU 0) on GPU 0 to finish" {
		t.Errorf("err = %v", err)
	}
	// The peer copy took GPU 0 first (ascending order) and waited there:
	// GPU 1 is free.
	free, cancelFree := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelFree()
	if _, err := d.CopyHostToDevice(free, 1, 4096, 1); err != nil {
		t.Errorf("GPU 1 after a peer copy gave up waiting for GPU 0: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("the slow copy: %v", err)
	}
	if err := d.Poisoned(); err != nil {
		t.Errorf("a slow call within its deadline poisoned the driver: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Error(err)
	}
}

// waitCall waits until call is in progress on device dev.
func waitCall(t *testing.T, d *Driver, dev int, call string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if callOn(d, dev) == call {
			return
		}
	}
	t.Fatalf("%s never called on GPU %d", call, dev)
}

// callOn is the driver call in progress on device dev, or "".
func callOn(d *Driver, dev int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if h := d.holder[dev]; h != nil {
		return h.call
	}
	return ""
}

// A call in progress on one device holds that device only: another
// device's operations run and end meanwhile. Close releases nothing while
// an operation is in progress, and gives back what it took.
func TestOtherDevicesRunWhileOneIsInACall(t *testing.T) {
	d, log := openStub(t)
	t.Setenv("STUB_CUDA_HANG", "cuEventSynchronize@1=2000")
	done := make(chan error, 1)
	go func() {
		_, err := d.CopyDeviceToDevice(context.Background(), 1, 4096, 1)
		done <- err
	}()
	waitCall(t, d, 1, "cuEventSynchronize")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ops := []func() error{
		func() error { _, err := d.CopyHostToDevice(ctx, 0, 4096, 2); return err },
		func() error { _, err := d.MemPattern(ctx, 0, 4096); return err },
		func() error { _, _, err := d.Compute(ctx, 0, 5*time.Millisecond); return err },
		func() error {
			// Close took GPU 0, found GPU 1 busy and gave GPU 0 back.
			err := d.Close()
			if err == nil || err.Error() != "cuda: nothing released: CopyDeviceToDevice GPU 1 is still in progress on GPU 1" {
				return fmt.Errorf("Close while GPU 1 is busy: %v", err)
			}
			return nil
		},
		func() error { _, err := d.CopyDeviceToHost(ctx, 0, 4096, 1); return err },
	}
	for _, f := range ops {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	// Measured against the same run: GPU 1's call is still in progress.
	select {
	case err := <-done:
		t.Fatalf("GPU 1's copy ended (%v) before GPU 0's operations did: they did not overlap", err)
	default:
	}
	if c := callOn(d, 1); c != "cuEventSynchronize" {
		t.Errorf("GPU 1 is in %q, want cuEventSynchronize still", c)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkReleased(t, readLog(t, log))
}

// interval is one fma_loop launch as the stub ran it.
type interval struct{ start, end float64 }

// fmaLaunches reads the fma_loop launches of the stub's log, by device.
func fmaLaunches(t *testing.T, lines []string) map[int][]interval {
	t.Helper()
	out := map[int][]interval{}
	for _, l := range lines {
		if !strings.HasPrefix(l, "cuLaunchKernel fma_loop ") {
			continue
		}
		var grid, block, dev int
		var iv interval
		if _, err := fmt.Sscanf(l, "cuLaunchKernel fma_loop grid=%d block=%d dev=%d start=%f end=%f", &grid, &block, &dev, &iv.start, &iv.end); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out[dev] = append(out[dev], iv)
	}
	return out
}

// overlaps reports whether a launch of a overlaps one of b in time.
func overlaps(a, b []interval) bool {
	for _, x := range a {
		for _, y := range b {
			if x.start < y.end && y.start < x.end {
				return true
			}
		}
	}
	return false
}

// Operations on one device run one after another; on two devices, at
// once. Two compute loads per device, all four started together: the
// stub's launch log shows each device's launches never overlapping each
// other, and the two devices' launches overlapping.
func TestSameDeviceSerialisesOtherDevicesOverlap(t *testing.T) {
	d, log := openStub(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := d.Compute(ctx, i%2, 150*time.Millisecond)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	launches := fmaLaunches(t, readLog(t, log))
	for dev := 0; dev < 2; dev++ {
		ls := launches[dev]
		if len(ls) < 4 {
			t.Fatalf("GPU %d: %d launches, want at least 2 per compute load", dev, len(ls))
		}
		sort.Slice(ls, func(i, j int) bool { return ls[i].start < ls[j].start })
		for i := 1; i < len(ls); i++ {
			if ls[i].start < ls[i-1].end {
				t.Errorf("GPU %d: a launch at %.6f began before the one at %.6f ended (%.6f): one device's operations overlapped", dev, ls[i].start, ls[i-1].start, ls[i-1].end)
			}
		}
	}
	if !overlaps(launches[0], launches[1]) {
		t.Errorf("no launch on GPU 0 overlapped one on GPU 1: the devices computed one after the other\nGPU 0: %v\nGPU 1: %v", launches[0], launches[1])
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkReleased(t, readLog(t, log))
}

// Every kind of operation, on both devices and both peer directions, from
// 16 goroutines at once: each ends, and releases everything it took.
func TestConcurrentOperationsAllEndAndRelease(t *testing.T) {
	d, log := openStub(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var err error
			switch i % 4 {
			case 0:
				_, err = d.CopyHostToDevice(ctx, i%2, 64<<10, 2)
			case 1:
				_, err = d.CopyPeer(ctx, i%2, 1-i%2, 64<<10, 2)
			case 2:
				_, err = d.MemPattern(ctx, i%2, 64<<10)
			case 3:
				_, _, err = d.Compute(ctx, i%2, 2*time.Millisecond)
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkReleased(t, readLog(t, log))
}

func TestOpenWithoutTheLibrarySaysSo(t *testing.T) {
	_, err := open(filepath.Join(t.TempDir(), "libcuda.so.1"))
	if err == nil || !strings.HasPrefix(err.Error(), "libcuda.so.1 not found: no NVIDIA driver on this machine (") ||
		!strings.Contains(err.Error(), "No such file or directory") {
		t.Fatalf("err = %v", err)
	}
	// A file that is not a library, and a library without the entry points.
	junk := filepath.Join(t.TempDir(), "libcuda.so.1")
	if err := os.WriteFile(junk, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := open(junk); err == nil || !strings.HasPrefix(err.Error(), "libcuda.so.1 could not be loaded: ") {
		t.Errorf("junk: %v", err)
	}
	src := filepath.Join(t.TempDir(), "old.c")
	if err := os.WriteFile(src, []byte("int cuInit(unsigned int f) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := buildStub(t.TempDir(), src, "libcuda.so.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open(old); err == nil || !strings.Contains(err.Error(), "has no cuDriverGetVersion: the NVIDIA driver is older than CUDA 11.0") {
		t.Errorf("a library without the entry points: %v", err)
	}
}

// Open searches for libcuda.so.1 the way the system loader does, and
// nothing else: in a child process, with the stub's directory on
// LD_LIBRARY_PATH (the loader's own search), it finds the stub; without it,
// on this machine with no NVIDIA driver, it says there is none.
func TestProductionOpenSearchesTheLoaderPath(t *testing.T) {
	stubEnv(t)
	run := func(env ...string) string {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), append([]string{"GPUPROBE_CUDA_OPEN_CHILD=1"}, env...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, b)
		}
		return strings.TrimSpace(string(b))
	}
	if got, want := run("LD_LIBRARY_PATH="+stubDir), "opened: libcuda.so.1 (CUDA 12.4) "+stubLib+" 2 devices"; got != want {
		t.Errorf("with the stub on the loader's path: %q, want %q", got, want)
	}
	if b, _ := exec.Command("ldconfig", "-p").Output(); strings.Contains(string(b), "libcuda.so.1") {
		t.Logf("this machine has a libcuda.so.1 of its own: not opening it")
		return
	}
	got := run("LD_LIBRARY_PATH=")
	if !strings.HasPrefix(got, "error: libcuda.so.1 not found: no NVIDIA driver on this machine (libcuda.so.1: cannot open shared object file") {
		t.Errorf("without the stub: %q", got)
	}
}
