package nvml

import (
	"context"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// countingServer is go-nvml's DGX H100 mock with Init and Shutdown counted;
// initRet decides each Init's answer by its number (1-based).
func countingServer(initRet func(n int) gonvml.Return) (*server.Server, *int, *int) {
	srv := dgxh100.New()
	inits, shutdowns := new(int), new(int)
	srv.InitFunc = func() gonvml.Return {
		*inits++
		return initRet(*inits)
	}
	srv.ShutdownFunc = func() gonvml.Return {
		*shutdowns++
		return gonvml.SUCCESS
	}
	return srv, inits, shutdowns
}

// cycle is one daemon collection through the session.
func cycle(t *testing.T, s *Session) *cycleResult {
	t.Helper()
	lib, held, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := Collect(context.Background(), lib, Options{CallTimeout: time.Second, Held: held, Library: "nvml-session-test"})
	s.Observe(st)
	return &cycleResult{held: held, available: st.Available, gpus: len(st.GPUs), err: st.Error}
}

type cycleResult struct {
	held, available bool
	gpus            int
	err             string
}

func TestSessionInitialisesOnceForItsLife(t *testing.T) {
	srv, inits, shutdowns := countingServer(func(int) gonvml.Return { return gonvml.SUCCESS })
	s := NewSession(func() (gonvml.Interface, error) { return srv, nil }, time.Second)
	for i := 0; i < 20; i++ {
		c := cycle(t, s)
		if !c.held || !c.available || c.gpus != 8 {
			t.Fatalf("cycle %d: %+v", i, c)
		}
	}
	if *inits != 1 || *shutdowns != 0 {
		t.Fatalf("20 cycles: %d Init, %d Shutdown; want 1 and 0", *inits, *shutdowns)
	}
	s.Close()
	if *shutdowns != 1 {
		t.Fatalf("Close: %d Shutdown, want 1", *shutdowns)
	}
}

// A daemon started before the driver was loaded tries again every cycle,
// reports why each failed cycle failed, and holds NVML once it answers.
func TestSessionRetriesUntilTheDriverIsLoaded(t *testing.T) {
	srv, inits, _ := countingServer(func(n int) gonvml.Return {
		if n <= 2 {
			return gonvml.ERROR_DRIVER_NOT_LOADED
		}
		return gonvml.SUCCESS
	})
	s := NewSession(func() (gonvml.Interface, error) { return srv, nil }, time.Second)
	first := cycle(t, s)
	if first.held || first.available || first.err != "nvmlInit failed: NVIDIA kernel driver not loaded" {
		t.Fatalf("before the driver: %+v", first)
	}
	for i := 0; i < 3; i++ {
		if c := cycle(t, s); !c.held || !c.available || c.gpus != 8 {
			t.Fatalf("after the driver, cycle %d: %+v", i, c)
		}
	}
	// Session's Init and the collection's own in the first cycle, the
	// session's successful one in the second, none after.
	if *inits != 3 {
		t.Fatalf("%d Init calls, want 3", *inits)
	}
}

// "Not initialised" from a held library drops the hold; the next cycle
// initialises again.
func TestSessionReinitialisesWhenTheLibrarySaysSo(t *testing.T) {
	srv, inits, shutdowns := countingServer(func(int) gonvml.Return { return gonvml.SUCCESS })
	count := srv.DeviceGetCountFunc
	lose := true
	srv.DeviceGetCountFunc = func() (int, gonvml.Return) {
		if *inits == 1 && lose {
			lose = false
			return 0, gonvml.ERROR_UNINITIALIZED
		}
		return count()
	}
	s := NewSession(func() (gonvml.Interface, error) { return srv, nil }, time.Second)
	if c := cycle(t, s); c.gpus != 0 {
		t.Fatalf("first cycle: %+v", c)
	}
	if *shutdowns != 1 {
		t.Fatalf("hold not dropped after NVML_ERROR_UNINITIALIZED: %d Shutdown", *shutdowns)
	}
	if c := cycle(t, s); !c.held || c.gpus != 8 || *inits != 2 {
		t.Fatalf("second cycle: %+v, %d Init", c, *inits)
	}
}
