package nvml

import (
	"context"
	"errors"
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
