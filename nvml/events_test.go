package nvml

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// An XID delivered through go-nvml's mock event set reaches the callback
// with the GPU's identity, and the watch ends with its context.
func TestWatchXIDsDeliversEvents(t *testing.T) {
	sys := simSystem(t, "dgx-h100")
	srv := sys.Server
	var once sync.Once
	target := sys.Devices[3]
	set := &mock.EventSet{
		WaitFunc: func(uint32) (gonvml.EventData, gonvml.Return) {
			var d gonvml.EventData
			ret := gonvml.ERROR_TIMEOUT
			once.Do(func() {
				d = gonvml.EventData{Device: target, EventType: gonvml.EventTypeXidCriticalError, EventData: 79}
				ret = gonvml.SUCCESS
			})
			if ret == gonvml.ERROR_TIMEOUT {
				time.Sleep(5 * time.Millisecond)
			}
			return d, ret
		},
		FreeFunc: func() gonvml.Return { return gonvml.SUCCESS },
	}
	srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return set, gonvml.SUCCESS }
	var registered int
	for _, d := range sys.Devices {
		d.GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) {
			return gonvml.EventTypeXidCriticalError | gonvml.EventTypeSingleBitEccError, gonvml.SUCCESS
		}
		d.RegisterEventsFunc = func(types uint64, _ gonvml.EventSet) gonvml.Return {
			if types&gonvml.EventTypeSingleBitEccError != 0 {
				t.Errorf("registered for single-bit ECC events (noise): %x", types)
			}
			registered++
			return gonvml.SUCCESS
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan XIDEvent, 1)
	done := make(chan error, 1)
	go func() { done <- WatchXIDs(ctx, srv, func(e XIDEvent) { got <- e }) }()
	select {
	case e := <-got:
		if e.Code != 79 || e.Index != 3 || e.PCIBusID != "0000:5d:00.0" || e.UUID != target.UUID {
			t.Errorf("event = %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event delivered")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("watch ended with %v", err)
	}
	if registered != 8 {
		t.Errorf("registered %d GPUs", registered)
	}
	if len(srv.ShutdownCalls()) != 1 {
		t.Errorf("Shutdown called %d times", len(srv.ShutdownCalls()))
	}
}

func TestWatchXIDsUnsupported(t *testing.T) {
	sys := simSystem(t, "dgx-h100") // the dressed mock answers NOT_SUPPORTED for event sets
	err := WatchXIDs(context.Background(), sys.Lib, func(XIDEvent) { t.Error("event from nowhere") })
	if !errors.Is(err, ErrEventsUnsupported) {
		t.Fatalf("err = %v", err)
	}
	var _ *server.Device = sys.Devices[0]
}

// watchWith runs WatchXIDs on the simulated DGX H100 with go-nvml's mock
// event set answering wait(call number), and records the back-off pauses
// instead of taking them; the watch is cancelled after calls answers.
func watchWith(t *testing.T, calls int, wait func(n int) (gonvml.EventData, gonvml.Return)) (pauses []time.Duration, n int, err error) {
	t.Helper()
	sys := simSystem(t, "dgx-h100")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	set := &mock.EventSet{
		WaitFunc: func(uint32) (gonvml.EventData, gonvml.Return) {
			n++
			if n >= calls {
				cancel()
			}
			return wait(n)
		},
		FreeFunc: func() gonvml.Return { return gonvml.SUCCESS },
	}
	sys.Server.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return set, gonvml.SUCCESS }
	for _, d := range sys.Devices {
		d.GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) { return gonvml.EventTypeXidCriticalError, gonvml.SUCCESS }
		d.RegisterEventsFunc = func(uint64, gonvml.EventSet) gonvml.Return { return gonvml.SUCCESS }
	}
	oldSleep, oldBase, oldCap := sleep, backoffBase, backoffCap
	defer func() { sleep, backoffBase, backoffCap = oldSleep, oldBase, oldCap }()
	backoffBase, backoffCap = 100*time.Millisecond, 800*time.Millisecond
	sleep = func(ctx context.Context, d time.Duration) bool {
		pauses = append(pauses, d)
		return ctx.Err() == nil
	}
	err = WatchXIDs(ctx, sys.Server, func(XIDEvent) {})
	return pauses, n, err
}

// The bug: nvmlEventSetWait answering GPU_IS_LOST at once made the loop
// call it again at once, forever: a spinning CPU for as long as the GPU
// stayed lost. Now every such answer is followed by a pause that doubles up
// to a cap, and a normal answer resets it.
func TestWatchXIDsBacksOffWhileAGPUIsLost(t *testing.T) {
	ms := time.Millisecond
	pauses, _, err := watchWith(t, 12, func(n int) (gonvml.EventData, gonvml.Return) {
		if n == 7 { // one normal answer between two runs of GPU_IS_LOST
			return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
		}
		return gonvml.EventData{}, gonvml.ERROR_GPU_IS_LOST
	})
	if err != nil {
		t.Fatalf("watch ended with %v; a lost GPU must not end it", err)
	}
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 800 * ms, 800 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 800 * ms}
	if len(pauses) != len(want) {
		t.Fatalf("pauses = %v, want %v", pauses, want)
	}
	for i := range want {
		if pauses[i] != want[i] {
			t.Fatalf("pauses = %v, want %v", pauses, want)
		}
	}
}

// Errors other than GPU_IS_LOST back off the same way and, when they
// persist, end the watch with the error (the daemon then counts XIDs from
// the kernel log) instead of retrying forever.
func TestWatchXIDsGivesUpAfterPersistentErrors(t *testing.T) {
	pauses, n, err := watchWith(t, 1000, func(int) (gonvml.EventData, gonvml.Return) {
		return gonvml.EventData{}, gonvml.ERROR_UNKNOWN
	})
	if err == nil || !strings.Contains(err.Error(), "nvmlEventSetWait") || !strings.Contains(err.Error(), "10 times in a row") {
		t.Fatalf("err = %v", err)
	}
	if n != maxWaitErrors || len(pauses) != maxWaitErrors-1 {
		t.Errorf("%d waits, %d pauses; want %d and %d", n, len(pauses), maxWaitErrors, maxWaitErrors-1)
	}
}

// One double-bit error delivered as both the DBE event and the XID 48
// event is counted once; a second error a while later is counted again.
func TestWatchXIDsCountsADoubleBitErrorOnce(t *testing.T) {
	sys := simSystem(t, "dgx-h100")
	srv := sys.Server
	target := sys.Devices[2]
	seq := []gonvml.EventData{
		{Device: target, EventType: gonvml.EventTypeDoubleBitEccError},
		{Device: target, EventType: gonvml.EventTypeXidCriticalError, EventData: 48},
		{Device: target, EventType: gonvml.EventTypeXidCriticalError, EventData: 79},
	}
	var mu sync.Mutex
	i := 0
	set := &mock.EventSet{
		WaitFunc: func(uint32) (gonvml.EventData, gonvml.Return) {
			mu.Lock()
			defer mu.Unlock()
			if i < len(seq) {
				i++
				return seq[i-1], gonvml.SUCCESS
			}
			time.Sleep(5 * time.Millisecond)
			return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
		},
		FreeFunc: func() gonvml.Return { return gonvml.SUCCESS },
	}
	srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return set, gonvml.SUCCESS }
	for _, d := range sys.Devices {
		d.GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) {
			return gonvml.EventTypeXidCriticalError | gonvml.EventTypeDoubleBitEccError, gonvml.SUCCESS
		}
		d.RegisterEventsFunc = func(uint64, gonvml.EventSet) gonvml.Return { return gonvml.SUCCESS }
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan XIDEvent, 10)
	done := make(chan error, 1)
	go func() { done <- WatchXIDs(ctx, srv, func(e XIDEvent) { got <- e }) }()
	var codes []int
	for len(codes) < 2 {
		select {
		case e := <-got:
			codes = append(codes, e.Code)
		case <-time.After(5 * time.Second):
			t.Fatalf("events %v", codes)
		}
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-done
	close(got)
	for e := range got {
		codes = append(codes, e.Code)
	}
	if len(codes) != 2 || codes[0] != 48 || codes[1] != 79 {
		t.Errorf("codes %v, want [48 79]: the DBE and its XID 48 are one error", codes)
	}
}
