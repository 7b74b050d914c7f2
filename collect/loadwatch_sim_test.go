package collect_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/collect"
	simnode "github.com/gpuprobe/gpuprobe/sim/node"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// LoadWatch reads the GPUs through the guarded sampler until stopped (a
// simulated node: go-nvml's mock behind the same Sources a real run uses).
func TestVerifyLoadWatchSimulated(t *testing.T) {
	s, err := simulate.Parse("dgx-h100:hw-slowdown=1")
	if err != nil {
		t.Fatal(err)
	}
	src, err := simnode.Sources(s)
	if err != nil {
		t.Fatal(err)
	}
	stop := collect.LoadWatch(context.Background(), collect.Options{Sources: src, CallTimeout: time.Second}, []int{0, 1}, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	got := stop()
	if len(got) != 2 || got[0].Samples == 0 || got[0].MaxClockMHz != 1980 {
		t.Fatalf("%+v", got)
	}
	if got[1].ThrottleReasons&0x8 == 0 || got[0].ThrottleReasons&0x8 != 0 {
		t.Errorf("HW slowdown on GPU 1 only: %#x %#x", got[0].ThrottleReasons, got[1].ThrottleReasons)
	}
}
