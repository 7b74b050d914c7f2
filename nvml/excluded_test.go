package nvml

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpuprobe/gpuprobe/state"
)

// systemError is the system-level error naming call, nil when none.
func systemError(st *state.NVML, call string) *state.CallError {
	for i := range st.Errors {
		if st.Errors[i].Call == call {
			return &st.Errors[i]
		}
	}
	return nil
}

// NVML's excluded GPUs (nvmlGetExcludedDeviceCount,
// nvmlGetExcludedDeviceInfoByIndex): the list is recorded by canonical bus
// ID and ExcludedKnown is set only when all of it was read. A missing entry
// point, NOT_SUPPORTED, an error or a hang leave it "not read", never
// "none excluded".
func TestCollectExcludedGPUs(t *testing.T) {
	entry := func(bus string) gonvml.ExcludedDeviceInfo {
		var p gonvml.PciInfo
		for i := range len(bus) {
			p.BusId[i] = int8(bus[i])
		}
		return gonvml.ExcludedDeviceInfo{PciInfo: p}
	}
	list := func(entries ...gonvml.ExcludedDeviceInfo) func(*server.Server, *atomic.Int32) {
		return func(srv *server.Server, calls *atomic.Int32) {
			srv.GetExcludedDeviceCountFunc = func() (int, gonvml.Return) { calls.Add(1); return len(entries), gonvml.SUCCESS }
			srv.GetExcludedDeviceInfoByIndexFunc = func(i int) (gonvml.ExcludedDeviceInfo, gonvml.Return) {
				if i < 0 || i >= len(entries) {
					return gonvml.ExcludedDeviceInfo{}, gonvml.ERROR_INVALID_ARGUMENT
				}
				return entries[i], gonvml.SUCCESS
			}
		}
	}
	count := func(n int, ret gonvml.Return) func(*server.Server, *atomic.Int32) {
		return func(srv *server.Server, calls *atomic.Int32) {
			srv.GetExcludedDeviceCountFunc = func() (int, gonvml.Return) { calls.Add(1); return n, ret }
		}
	}
	for _, tc := range []struct {
		name     string
		spec     string
		mut      func(srv *server.Server, calls *atomic.Int32)
		known    bool
		excluded []string
		err      string // a system error naming this call, "" none
		calls    int32  // calls of nvmlGetExcludedDeviceCount, where mut counts them
	}{
		{name: "simulated node: none excluded, read", spec: "dgx-h100", known: true},
		{name: "simulated gpu-excluded fault", spec: "dgx-h100:gpu-excluded=7", known: true, excluded: []string{"0000:db:00.0"}},
		{name: "simulated gpu-missing fault: none excluded", spec: "dgx-h100:gpu-missing=7", known: true},
		{name: "two excluded, NVML's 8-digit domain made canonical", spec: "dgx-h100",
			mut:   list(entry("00000000:DB:00.0"), entry("0000:cb:00.0")),
			known: true, excluded: []string{"0000:db:00.0", "0000:cb:00.0"}, calls: 1},
		{name: "NOT_SUPPORTED is not read", spec: "dgx-h100", mut: count(0, gonvml.ERROR_NOT_SUPPORTED), calls: 1},
		{name: "an error is not read", spec: "dgx-h100", mut: count(0, gonvml.ERROR_UNKNOWN), err: "unknown NVML error", calls: 1},
		{name: "an implausible count is not read", spec: "dgx-h100", mut: count(1<<30, gonvml.SUCCESS), err: "outside 0..1024", calls: 1},
		{name: "an entry that fails: the rest kept, not known", spec: "dgx-h100",
			mut: func(srv *server.Server, calls *atomic.Int32) {
				list(entry("0000:db:00.0"))(srv, calls)
				srv.GetExcludedDeviceCountFunc = func() (int, gonvml.Return) { calls.Add(1); return 2, gonvml.SUCCESS }
			}, excluded: []string{"0000:db:00.0"}, err: "invalid argument", calls: 1},
		{name: "an entry without a bus ID: not known", spec: "dgx-h100", mut: list(gonvml.ExcludedDeviceInfo{}),
			err: "no PCI bus ID", calls: 1},
		{name: "entry point missing: not called, not read", spec: "dgx-h100",
			mut: func(srv *server.Server, calls *atomic.Int32) {
				count(0, gonvml.SUCCESS)(srv, calls)
				srv.LookupSymbolFunc = func(name string) error {
					if name == excludedCountCall {
						return gonvml.ERROR_FUNCTION_NOT_FOUND
					}
					return nil
				}
			}, calls: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := simSystem(t, tc.spec)
			var calls atomic.Int32
			if tc.mut != nil {
				tc.mut(sys.Server, &calls)
			}
			st := Collect(context.Background(), sys.Lib, Options{CallTimeout: 2 * time.Second})
			if st.ExcludedKnown != tc.known || !slices.Equal(st.Excluded, tc.excluded) {
				t.Errorf("excluded %q known %v, want %q known %v", st.Excluded, st.ExcludedKnown, tc.excluded, tc.known)
			}
			var errs []string
			for _, e := range st.Errors {
				if strings.HasPrefix(e.Call, "nvmlGetExcluded") {
					errs = append(errs, e.Call+": "+e.Error)
				}
			}
			switch {
			case tc.err == "" && len(errs) > 0:
				t.Errorf("errors %q, want none", errs)
			case tc.err != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.err)):
				t.Errorf("errors %q, want one with %q", errs, tc.err)
			}
			if tc.mut != nil && calls.Load() != tc.calls {
				t.Errorf("%s called %d times, want %d", excludedCountCall, calls.Load(), tc.calls)
			}
			if len(st.GPUs) == 0 || st.GPUs[0].PCIBusID == "" {
				t.Errorf("the GPUs were not read: %+v", st.GPUs)
			}
		})
	}
}

// A hung excluded-GPU query: the list is not read (a timeout in the
// errors), the GPUs are read all the same, nvmlShutdown is not called into
// the wedged library, and later collections of the same library do not
// call the query again while it is stuck.
func TestExcludedQueryHangs(t *testing.T) {
	sys := simSystem(t, "dgx-h100")
	var calls atomic.Int32
	release := make(chan struct{})
	defer close(release)
	sys.Server.GetExcludedDeviceCountFunc = func() (int, gonvml.Return) {
		calls.Add(1)
		<-release
		return 0, gonvml.SUCCESS
	}
	var shutdowns atomic.Int32
	sys.Server.ShutdownFunc = func() gonvml.Return { shutdowns.Add(1); return gonvml.SUCCESS }
	collect := func() *state.NVML {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return Collect(ctx, sys.Lib, Options{CallTimeout: 300 * time.Millisecond, Library: t.Name()})
	}
	first := collect()
	if first.ExcludedKnown {
		t.Fatalf("a hung query read as known: %+v", first.Excluded)
	}
	e := systemError(first, excludedCountCall)
	if e == nil || !e.Timeout {
		t.Fatalf("errors %+v, want a timeout on %s", first.Errors, excludedCountCall)
	}
	if len(first.GPUs) != 8 || first.GPUs[7].Thermal == nil {
		t.Fatalf("the GPUs were not read beside the hung query: %+v", first.GPUs)
	}
	if n := shutdowns.Load(); n != 0 {
		t.Errorf("nvmlShutdown called %d times with a query hung", n)
	}
	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		st := collect()
		if st.ExcludedKnown {
			t.Fatalf("collection %d: read as known", i)
		}
		if e := systemError(st, excludedCountCall); e == nil || !strings.Contains(e.Error, "has not returned") {
			t.Fatalf("collection %d: errors %+v, want the query refused as still hung", i, st.Errors)
		}
		if st.GPUs[7].Thermal == nil {
			t.Fatalf("collection %d: GPU 7 affected: %+v", i, st.GPUs[7].Errors)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the hung query was issued %d times, want 1", n)
	}
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Errorf("goroutines grew from %d to %d over 20 collections", before, after)
	}
}
