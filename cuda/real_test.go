package cuda

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
)

// TestRealDriver runs every measurement on this machine's own NVIDIA driver
// and GPUs: the check that the driver's JIT accepts the PTX and that the
// figures are sane. It runs only when asked (a machine with a GPU):
//
//	GPUPROBE_REAL_CUDA=1 go test -count=1 -run TestRealDriver -v ./cuda
func TestRealDriver(t *testing.T) {
	if os.Getenv("GPUPROBE_REAL_CUDA") != "1" {
		t.Skip("GPUPROBE_REAL_CUDA=1 runs this on a machine with an NVIDIA GPU")
	}
	var reg deadline.Registry
	do := func(name string, timeout time.Duration, f func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if _, err := deadline.DoIn(&reg, ctx, "cuda", 0, func() (struct{}, error) { return struct{}{}, f(ctx) }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var d *Driver
	do("Open", 60*time.Second, func(context.Context) (err error) { d, err = Open(); return err })
	if d.Path() == stubLib {
		t.Fatal("the stub libcuda.so.1 is loaded in this process: run this test alone (-run TestRealDriver)")
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}()
	t.Logf("%s at %s", d.Describe(), d.Path())
	devs, err := d.Devices(context.Background())
	if err != nil || len(devs) == 0 {
		t.Fatalf("devices: %v, %v", devs, err)
	}
	gbs := func(bytes int64, iters int, took time.Duration) float64 {
		return float64(bytes) * float64(iters) / took.Seconds() / 1e9
	}
	const size, iters = 256 << 20, 10
	for _, dv := range devs {
		t.Logf("GPU %d: %s %s %d MiB", dv.Ordinal, dv.Name, dv.PCIBusID, dv.TotalMemory>>20)
		for _, c := range []struct {
			name string
			f    func(context.Context, int, int64, int) (time.Duration, error)
		}{{"h2d", d.CopyHostToDevice}, {"d2h", d.CopyDeviceToHost}, {"d2d", d.CopyDeviceToDevice}} {
			do(c.name, 30*time.Second, func(ctx context.Context) error {
				took, err := c.f(ctx, dv.Ordinal, size, iters)
				if err == nil {
					t.Logf("GPU %d %s: %.1f GB/s (%d × %d MiB in %s)", dv.Ordinal, c.name, gbs(size, iters, took), iters, size>>20, took)
				}
				return err
			})
		}
		do("compute", 30*time.Second, func(ctx context.Context) error {
			flops, took, err := d.Compute(ctx, dv.Ordinal, 2*time.Second)
			if err == nil {
				t.Logf("GPU %d compute: %.1f TFLOP/s FP32 FMA (%s)", dv.Ordinal, flops/took.Seconds()/1e12, took)
			}
			return err
		})
		do("mempattern", 60*time.Second, func(ctx context.Context) error {
			bad, err := d.MemPattern(ctx, dv.Ordinal, 1<<30)
			if err == nil && bad != 0 {
				t.Errorf("GPU %d: %d words read back wrong over 1 GiB", dv.Ordinal, bad)
			}
			return err
		})
	}
	for _, s := range devs {
		for _, p := range devs {
			if s.Ordinal == p.Ordinal {
				continue
			}
			do("peer", 30*time.Second, func(ctx context.Context) error {
				can, err := d.CanAccessPeer(ctx, s.Ordinal, p.Ordinal)
				if err != nil {
					return err
				}
				took, err := d.CopyPeer(ctx, s.Ordinal, p.Ordinal, size, iters)
				if err == nil {
					t.Logf("GPU %d → GPU %d (p2p %v): %.1f GB/s", s.Ordinal, p.Ordinal, can, gbs(size, iters, took))
				}
				return err
			})
		}
	}
}
