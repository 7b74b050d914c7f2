package cuda

import (
	"context"
	"testing"
	"time"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

func newDriver(t *testing.T, spec string) (*Driver, error) {
	t.Helper()
	s, err := simulate.Parse(spec)
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	return New(s)
}

// The fault values are checked: a pair is two different GPUs of the model.
func TestVerifySimFaultValues(t *testing.T) {
	for _, bad := range []string{"peer-slow=1", "peer-slow=1-1", "peer-slow=1-8", "peer-slow=a-b", "h2d-slow=9", "mem-miscompare=x"} {
		if _, err := newDriver(t, "dgx-h100:"+bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	d, err := newDriver(t, "dgx-h100:peer-slow=2-6,h2d-slow=1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fast, _ := d.CopyPeer(ctx, 0, 1, 1<<30, 1)
	for _, p := range [][2]int{{2, 6}, {6, 2}} {
		slow, _ := d.CopyPeer(ctx, p[0], p[1], 1<<30, 1)
		if slow < 3*fast {
			t.Errorf("pair %v took %s, not slower than %s", p, slow, fast)
		}
	}
	h, _ := d.CopyHostToDevice(ctx, 1, 1<<30, 1)
	if gbps := float64(1<<30) / h.Seconds() / 1e9; gbps > 20 {
		t.Errorf("h2d-slow GPU 1: %.1f GB/s", gbps)
	}
}

// Every model the simulation knows has healthy figures, and the driver
// refuses calls after Close.
func TestVerifySimEveryModelAndClose(t *testing.T) {
	for _, m := range simulate.Models {
		if _, ok := FiguresOf(m); !ok {
			t.Errorf("%s has no figures", m)
		}
	}
	d, err := newDriver(t, "dgx-a100")
	if err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	if _, err := d.CopyHostToDevice(context.Background(), 0, 1, 1); err == nil {
		t.Error("a call after Close answered")
	}
	if _, _, err := d.Compute(context.Background(), 0, time.Second); err == nil {
		t.Error("compute after Close answered")
	}
}
