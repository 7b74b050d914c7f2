package nvml

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	sim "github.com/gpuprobe/gpuprobe/sim/nvml"
	"github.com/gpuprobe/gpuprobe/state"
)

// Violation counters are recorded raw per policy; a policy the GPU does not
// support is left out, and the entry point is "unsupported" only when no
// policy answered.
func TestCollectViolationStatus(t *testing.T) {
	srv := dgxh100.New()
	for i, d := range srv.Devices {
		dev := d.(*server.Device)
		switch i {
		case 0: // thermal and board limit answer; the rest is not supported
			dev.GetViolationStatusFunc = func(p gonvml.PerfPolicyType) (gonvml.ViolationTime, gonvml.Return) {
				switch p {
				case gonvml.PERF_POLICY_THERMAL:
					return gonvml.ViolationTime{ReferenceTime: 1_700_000_000_000_000, ViolationTime: 42_000_000_000}, gonvml.SUCCESS
				case gonvml.PERF_POLICY_BOARD_LIMIT:
					return gonvml.ViolationTime{ReferenceTime: 1_700_000_000_000_001, ViolationTime: 7}, gonvml.SUCCESS
				}
				return gonvml.ViolationTime{}, gonvml.ERROR_NOT_SUPPORTED
			}
		case 1: // a failure is recorded once, not once per policy
			dev.GetViolationStatusFunc = func(gonvml.PerfPolicyType) (gonvml.ViolationTime, gonvml.Return) {
				return gonvml.ViolationTime{}, gonvml.ERROR_NO_PERMISSION
			}
		}
		sim.FillNotSupported(&dev.Device)
	}
	sim.FillNotSupported(&srv.Interface)
	st := Collect(context.Background(), srv, Options{CallTimeout: time.Second})
	if len(st.GPUs) != 8 {
		t.Fatalf("got %d GPUs", len(st.GPUs))
	}
	want := []state.Violation{
		{Policy: "thermal", ReferenceTimeUs: 1_700_000_000_000_000, ViolationNs: 42_000_000_000},
		{Policy: "board_limit", ReferenceTimeUs: 1_700_000_000_000_001, ViolationNs: 7},
	}
	g0 := st.GPUs[0]
	if !reflect.DeepEqual(g0.Violations, want) {
		t.Errorf("GPU 0 violations = %+v, want %+v", g0.Violations, want)
	}
	if slices.Contains(g0.Unsupported, "nvmlDeviceGetViolationStatus") {
		t.Errorf("GPU 0 answered two policies but is marked unsupported: %v", g0.Unsupported)
	}
	g1 := st.GPUs[1]
	if g1.Violations != nil || len(g1.Errors) != 1 || g1.Errors[0].Call != "nvmlDeviceGetViolationStatus" || slices.Contains(g1.Unsupported, "nvmlDeviceGetViolationStatus") {
		t.Errorf("GPU 1: violations %+v errors %+v unsupported %v, want one error and no values", g1.Violations, g1.Errors, g1.Unsupported)
	}
	g2 := st.GPUs[2]
	n := 0
	for _, u := range g2.Unsupported {
		if u == "nvmlDeviceGetViolationStatus" {
			n++
		}
	}
	if g2.Violations != nil || n != 1 {
		t.Errorf("GPU 2: violations %+v, %d unsupported entries, want none and 1", g2.Violations, n)
	}
}
