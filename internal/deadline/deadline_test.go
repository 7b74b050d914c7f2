package deadline

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunAnswers(t *testing.T) {
	v, err := Run(context.Background(), time.Second, func() (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Fatalf("Run = %d, %v", v, err)
	}
	_, err = Run(context.Background(), time.Second, func() (int, error) { panic("boom") })
	if err == nil || errors.Is(err, ErrTimeout) {
		t.Fatalf("panic should be an error, not a timeout: %v", err)
	}
}

func TestRunTimesOut(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	_, err := Run(context.Background(), 20*time.Millisecond, func() (int, error) { <-release; return 1, nil })
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, 0, func() (int, error) { return 1, nil }); !errors.Is(err, ErrTimeout) {
		t.Fatalf("ended ctx: err = %v", err)
	}
}

// A hung source is called once; later calls are refused without starting a
// goroutine, until the hung call returns.
func TestDoDoesNotCallAHungSourceAgain(t *testing.T) {
	var r Registry
	release := make(chan struct{})
	var calls atomic.Int32
	hang := func() (int, error) { calls.Add(1); <-release; return 1, nil }
	if _, err := DoIn(&r, context.Background(), "/proc/hung", 10*time.Millisecond, hang); !errors.Is(err, ErrTimeout) {
		t.Fatalf("first call: %v", err)
	}
	before := runtime.NumGoroutine()
	for i := 0; i < 100; i++ {
		if _, err := DoIn(&r, context.Background(), "/proc/hung", 10*time.Millisecond, hang); !errors.Is(err, ErrBusy) {
			t.Fatalf("call %d: %v, want ErrBusy", i, err)
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines grew from %d to %d while the source was refused", before, after)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the hung source was called %d times, want 1", n)
	}
	if _, busy := r.Busy("/proc/hung"); !busy {
		t.Fatal("source not marked busy")
	}
	close(release)
	deadline := time.Now().Add(2 * time.Second)
	for {
		if _, busy := r.Busy("/proc/hung"); !busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("source still busy after its call returned")
		}
		time.Sleep(time.Millisecond)
	}
	v, err := DoIn(&r, context.Background(), "/proc/hung", time.Second, func() (int, error) { return 2, nil })
	if v != 2 || err != nil {
		t.Fatalf("after recovery: %d, %v", v, err)
	}
	if len(r.Hung()) != 0 {
		t.Errorf("registry keeps %v", r.Hung())
	}
}
