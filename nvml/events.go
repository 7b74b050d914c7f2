package nvml

import (
	"context"
	"errors"
	"fmt"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// XIDEvent is one event from NVML's event set.
type XIDEvent struct {
	Index    int
	UUID     string
	PCIBusID string
	// Code is the XID; double-bit ECC events are reported as XID 48, the
	// code the driver logs for them.
	Code int
	At   time.Time
}

// ErrEventsUnsupported means the driver or GPUs offer no event set; the
// caller should follow the kernel log instead.
var ErrEventsUnsupported = errors.New("NVML events not supported")

// sameErrorWindow pairs a DBE event with the XID 48 event of the same error.
const sameErrorWindow = time.Second

// waitSlice is how long one nvmlEventSetWait blocks, so ctx is noticed promptly.
const waitSlice = 500 * time.Millisecond

// Back-off after nvmlEventSetWait answers GPU_IS_LOST or an error: such an
// answer comes back at once, so without a pause the loop spins a CPU (and
// the driver) for as long as the GPU stays lost. The pause doubles from
// backoffBase to backoffCap and resets with the first normal answer
// (an event or a timeout).
var (
	backoffBase = 100 * time.Millisecond
	backoffCap  = 30 * time.Second
	// sleep waits d or until ctx ends, reporting whether ctx is still live;
	// a variable so tests record the pauses instead of taking them.
	sleep = func(ctx context.Context, d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
)

// maxWaitErrors ends the watch after this many errors in a row other than
// GPU_IS_LOST (51 s of back-off in all: 0.1 s doubling, nine pauses): the caller then counts
// XIDs from the kernel log instead. A lost GPU does not end it: the other
// GPUs' events still come, and the lost one's Xid 79 reaches the kernel log,
// which gpu.xid reads.
const maxWaitErrors = 10

// WatchXIDs delivers XID critical errors (and double-bit ECC events) from
// NVML until ctx ends. It keeps its own NVML initialisation for the life of
// the watch. It returns ErrEventsUnsupported (wrapped) when no GPU can
// register for the events, after which nothing more is called.
func WatchXIDs(ctx context.Context, lib gonvml.Interface, onEvent func(XIDEvent)) error {
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		return fmt.Errorf("nvmlInit: %s", returnString(ret))
	}
	defer lib.Shutdown()
	set, ret := lib.EventSetCreate()
	if ret != gonvml.SUCCESS {
		return fmt.Errorf("%w: nvmlEventSetCreate: %s", ErrEventsUnsupported, returnString(ret))
	}
	defer set.Free()
	count, ret := lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return fmt.Errorf("nvmlDeviceGetCount: %s", returnString(ret))
	}
	type ident struct {
		index         int
		uuid, busID   string
		dev           gonvml.Device
		registeredFor uint64
	}
	var devs []ident
	for i := 0; i < count; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			continue
		}
		supported, ret := dev.GetSupportedEventTypes()
		if ret != gonvml.SUCCESS {
			continue
		}
		want := supported & (gonvml.EventTypeXidCriticalError | gonvml.EventTypeDoubleBitEccError)
		if want == 0 || dev.RegisterEvents(want, set) != gonvml.SUCCESS {
			continue
		}
		id := ident{index: i, dev: dev, registeredFor: want}
		id.uuid, _ = dev.GetUUID()
		if pci, ret := dev.GetPciInfo(); ret == gonvml.SUCCESS {
			id.busID = normBusID(cString(pci.BusId[:]))
		}
		devs = append(devs, id)
	}
	if len(devs) == 0 {
		return fmt.Errorf("%w: no GPU accepted XID event registration", ErrEventsUnsupported)
	}
	pause := time.Duration(0)
	errorsInARow := 0
	type seen48 struct {
		typ uint64
		at  time.Time
	}
	last48 := map[int]seen48{}
	for ctx.Err() == nil {
		data, ret := set.Wait(uint32(waitSlice / time.Millisecond))
		switch ret {
		case gonvml.SUCCESS, gonvml.ERROR_TIMEOUT:
			pause, errorsInARow = 0, 0
		default:
			if ret != gonvml.ERROR_GPU_IS_LOST {
				errorsInARow++
				if errorsInARow >= maxWaitErrors {
					return fmt.Errorf("nvmlEventSetWait: %s (%d times in a row)", returnString(ret), errorsInARow)
				}
			}
			pause = min(max(2*pause, backoffBase), backoffCap)
			if !sleep(ctx, pause) {
				return nil
			}
			continue
		}
		if ret == gonvml.ERROR_TIMEOUT {
			continue
		}
		ev := XIDEvent{Index: -1, At: time.Now().UTC()}
		for _, d := range devs {
			if d.dev == data.Device {
				ev.Index, ev.UUID, ev.PCIBusID = d.index, d.uuid, d.busID
			}
		}
		switch data.EventType {
		case gonvml.EventTypeXidCriticalError:
			ev.Code = int(data.EventData)
		case gonvml.EventTypeDoubleBitEccError:
			ev.Code = 48
		default:
			continue
		}
		// One double-bit error can arrive twice: as the DBE event and as
		// the XID 48 the driver raises for it. The second of the pair (the
		// other type, same GPU, within a second) is the same error.
		if ev.Code == 48 {
			if prev, ok := last48[ev.Index]; ok && prev.typ != data.EventType && ev.At.Sub(prev.at) < sameErrorWindow {
				delete(last48, ev.Index)
				continue
			}
			last48[ev.Index] = seen48{typ: data.EventType, at: ev.At}
		}
		onEvent(ev)
	}
	return nil
}
