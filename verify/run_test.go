package verify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/internal/deadline"
	simcuda "github.com/gpuprobe/gpuprobe/sim/cuda"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/verify"
)

func simDriver(t *testing.T, spec string) *simcuda.Driver {
	t.Helper()
	s, err := simulate.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	d, err := simcuda.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// indexes maps the simulated bus ids to NVML indexes in reverse, so a test
// sees that GPUs are named by bus id, not by CUDA ordinal.
func reversed(t *testing.T) map[string]int {
	m, _ := simulate.Lookup("dgx-h100")
	out := map[string]int{}
	for i, b := range m.BusIDs {
		out[busid.Canonical(b)] = 7 - i
	}
	return out
}

func count(v *state.Verify, kind string) int {
	n := 0
	for _, m := range v.Measurements {
		if m.Kind == kind {
			n++
		}
	}
	return n
}

// The quick tier measures each unordered pair once, the default every
// ordered pair; GPUs are named by NVML index through the bus id.
func TestVerifyRunTiersAndMapping(t *testing.T) {
	for _, tc := range []struct {
		tier  string
		pairs int
	}{{verify.TierQuick, 28}, {verify.TierDefault, 56}} {
		d := simDriver(t, "dgx-h100:h2d-slow=0")
		v := verify.Run(context.Background(), d, verify.Options{Tier: tc.tier, NVMLIndex: reversed(t), Watch: d.Watch, Registry: &deadline.Registry{}})
		if v.Error != "" {
			t.Fatalf("%s: %s", tc.tier, v.Error)
		}
		if got := count(v, state.MeasurePeer); got != tc.pairs {
			t.Errorf("%s: %d peer figures, want %d", tc.tier, got, tc.pairs)
		}
		for _, k := range []string{state.MeasureH2D, state.MeasureD2H, state.MeasureD2D, state.MeasureCompute, state.MeasureMemTest} {
			if got := count(v, k); got != 8 {
				t.Errorf("%s: %d %s figures, want 8", tc.tier, got, k)
			}
		}
		for _, m := range v.Measurements {
			// CUDA ordinal 0 is the slow one; its NVML index is 7.
			if m.Kind == state.MeasureH2D && (m.GPU == 7) != (m.Value < 20) {
				t.Errorf("%s: h2d on NVML GPU %d = %.1f GB/s: the slow link is not NVML GPU 7", tc.tier, m.GPU, m.Value)
			}
			if m.Kind == state.MeasureCompute && m.Load == nil {
				t.Errorf("compute on GPU %d not watched", m.GPU)
			}
		}
	}
}

// The memory fraction caps every buffer.
func TestVerifyRunMemoryFraction(t *testing.T) {
	d := simDriver(t, "dgx-h100")
	v := verify.Run(context.Background(), d, verify.Options{Tier: verify.TierDefault, MaxMemoryFraction: 0.01, Registry: &deadline.Registry{}})
	limit := int64(81559<<20) / 100
	for _, m := range v.Measurements {
		if m.Bytes > limit {
			t.Errorf("%s took %d bytes, over 1%% of the GPU (%d)", m.Kind, m.Bytes, limit)
		}
	}
}

// A driver call that never returns is an error naming the call and the
// GPU, the run ends on time, and the driver is not called again.
func TestVerifyRunHungCallStopsTheRun(t *testing.T) {
	d := simDriver(t, "dgx-h100")
	d.Hang = map[int]bool{2: true}
	start := time.Now()
	v := verify.Run(context.Background(), d, verify.Options{Tier: verify.TierQuick, CallTimeout: 100 * time.Millisecond, Registry: &deadline.Registry{}})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the run took %s behind a hung call", took)
	}
	if !strings.Contains(v.Error, "cuMemcpyHtoD on CUDA device 2") || !strings.Contains(v.Error, "not called again") {
		t.Errorf("error %q does not name the hung call and GPU", v.Error)
	}
	// Nothing after the hung call: GPUs 3..7 have no host-copy figure.
	if n := count(v, state.MeasureH2D); n != 3 {
		t.Errorf("%d h2d figures, want 3 (GPUs 0, 1 and the hung 2)", n)
	}
	if count(v, state.MeasurePeer) != 0 {
		t.Error("peer copies ran after a hung call")
	}
}

// --duration bounds the compute load to a quarter of it.
func TestVerifyRunDurationBoundsCompute(t *testing.T) {
	d := simDriver(t, "dgx-h100")
	v := verify.Run(context.Background(), d, verify.Options{Tier: verify.TierDefault, Duration: 4 * time.Second, Registry: &deadline.Registry{}})
	if v.Error != "" {
		t.Fatal(v.Error)
	}
	if n := count(v, state.MeasureCompute); n != 8 {
		t.Fatalf("%d compute figures", n)
	}
}

// Refused GPUs are listed and not touched.
func TestVerifyRunRefuses(t *testing.T) {
	d := simDriver(t, "dgx-h100")
	idx := map[string]int{}
	m, _ := simulate.Lookup("dgx-h100")
	for i, b := range m.BusIDs {
		idx[busid.Canonical(b)] = i
	}
	v := verify.Run(context.Background(), d, verify.Options{Tier: verify.TierQuick, NVMLIndex: idx, Refuse: map[int]string{4: "busy"}, Registry: &deadline.Registry{}})
	if len(v.Refused) != 1 || !strings.HasPrefix(v.Refused[0], "GPU 4 ") {
		t.Fatalf("refused %v", v.Refused)
	}
	for _, m := range v.Measurements {
		if m.GPU == 4 || m.Peer == 4 {
			t.Fatalf("refused GPU measured: %+v", m)
		}
	}
}
