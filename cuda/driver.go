// Package cuda is verify's Driver on a real node: the CUDA driver API,
// loaded at run time from the NVIDIA driver's libcuda.so.1 with dlopen (no
// CUDA toolkit at build time; a machine without the driver gets an error
// saying so), with its kernels as PTX text the driver JIT-compiles. It is
// the only package that touches libcuda, and only cmd/gpuprobe imports it
// (archtest): verify's runner takes a verify.Driver.
//
// # Calls that hang
//
// A driver call cannot be interrupted: a wedged GPU can hold cuInit, a copy
// or a synchronisation for ever. This package does not try. The caller runs
// Open and every method under internal/deadline, with a ctx whose deadline
// is the one deadline.Do enforces, and the Driver makes that safe:
// operations on one device run one at a time (each holds its devices'
// semaphores), and a driver call still in progress after its operation's
// deadline poisons the whole Driver, whichever device it was on. From then
// on every method (Close too) returns at once with an error naming that
// call, its operation and when it was made; nothing touches the driver
// again in this process, so an abandoned call costs one OS thread, once.
//
// # Devices at once
//
// Operations on different devices run concurrently: verify's compute load
// must load every GPU of a node together (power and heat are the node's;
// a GPU that throttles only when its neighbours are hot must show it), and
// a run that loaded them one after another would also spend the quick
// tier's budget eight times over. The CUDA driver API is thread-safe; a
// context is current per OS thread, so each operation runs on a locked
// thread with its device's context made current there.
package cuda

/*
#include <stdlib.h>
#include "libcuda.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/gpuprobe/gpuprobe/verify"
)

// Library is the soname Open loads, through the system loader's search
// (ld.so.cache and its default paths); never a path from the environment.
const Library = "libcuda.so.1"

// cuDeviceGetAttribute's CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT.
const attrMultiprocessorCount = 16

// Threads per block for every launch; blocks per SM for the FMA load (8 ×
// 256 = 2048, the resident-thread limit of every SM since Maxwell).
const (
	blockThreads      = 256
	fmaBlocksPerSM    = 8
	memBlocksPerSM    = 4
	defaultSMs        = 108 // when the driver will not say
	maxLaunchDuration = 100 * time.Millisecond
	maxLaunches       = 10000
)

// Driver is one loaded libcuda.so.1 and the contexts it opened. It
// implements verify.Driver. Its methods may be called from any goroutine:
// operations on different devices run at once, each on its own OS thread
// with its own device's context current (the driver API is thread-safe);
// operations that share a device run one at a time.
type Driver struct {
	api     *api
	version int
	devs    []device

	// sems[i] is held by the operation using device i (a peer copy holds
	// both of its devices'), taken in ascending ordinal order.
	sems []chan struct{}

	mu       sync.Mutex // guards the fields below
	holder   []*opRec   // holder[i]: the operation holding sems[i], or nil
	poisoned error      // set once a call outlived its operation's deadline
	closed   bool
}

var _ verify.Driver = (*Driver)(nil)

// opRec is one operation in progress, as the others see it.
type opRec struct {
	name  string // "CopyPeer GPU 0 → GPU 1"
	ctx   context.Context
	call  string    // the driver call in progress, "" between calls
	since time.Time // when call was made
	done  bool      // the operation has ended
}

// device is one CUDA device and, once used, its primary context.
type device struct {
	info verify.Device
	cu   C.CUdevice
	sms  int

	ctx         C.CUcontext // nil until first used
	start, stop C.CUevent
	mod         C.CUmodule // nil until a kernel is first needed
	fma         C.CUfunction
	write       C.CUfunction
	check       C.CUfunction
	peers       map[int]bool // peer access enabled from this context to device N's
}

// Open loads libcuda.so.1 as the system loader finds it, initialises the
// driver and enumerates the devices this process may use (after
// CUDA_VISIBLE_DEVICES). Contexts are created when a device is first used.
// cuInit can hang on a wedged GPU: run Open under internal/deadline.
func Open() (*Driver, error) { return open(Library) }

// open loads lib: Library, or (tests only) the path of a stub.
func open(lib string) (*Driver, error) {
	a, err := load(lib)
	if err != nil {
		return nil, err
	}
	d := &Driver{api: a}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := C.gp_cuInit(a.p, 0); r != 0 {
		return nil, d.cuError("cuInit", r)
	}
	var v C.int
	if r := C.gp_cuDriverGetVersion(a.p, &v); r != 0 {
		return nil, d.cuError("cuDriverGetVersion", r)
	}
	d.version = int(v)
	var n C.int
	if r := C.gp_cuDeviceGetCount(a.p, &n); r != 0 {
		return nil, d.cuError("cuDeviceGetCount", r)
	}
	buf := (*C.char)(C.malloc(256))
	defer C.free(unsafe.Pointer(buf))
	for i := 0; i < int(n); i++ {
		dv := device{info: verify.Device{Ordinal: i}}
		if r := C.gp_cuDeviceGet(a.p, &dv.cu, C.int(i)); r != 0 {
			return nil, fmt.Errorf("device %d: %w", i, d.cuError("cuDeviceGet", r))
		}
		if r := C.gp_cuDeviceGetName(a.p, buf, 256, dv.cu); r != 0 {
			return nil, fmt.Errorf("device %d: %w", i, d.cuError("cuDeviceGetName", r))
		}
		dv.info.Name = C.GoString(buf)
		if r := C.gp_cuDeviceGetPCIBusId(a.p, buf, 64, dv.cu); r != 0 {
			return nil, fmt.Errorf("device %d: %w", i, d.cuError("cuDeviceGetPCIBusId", r))
		}
		dv.info.PCIBusID = C.GoString(buf)
		var total C.size_t
		if r := C.gp_cuDeviceTotalMem(a.p, &total, dv.cu); r != 0 {
			return nil, fmt.Errorf("device %d: %w", i, d.cuError("cuDeviceTotalMem_v2", r))
		}
		dv.info.TotalMemory = uint64(total)
		var sms C.int
		if r := C.gp_cuDeviceGetAttribute(a.p, &sms, attrMultiprocessorCount, dv.cu); r != 0 {
			return nil, fmt.Errorf("device %d: %w", i, d.cuError("cuDeviceGetAttribute", r))
		}
		dv.sms = int(sms)
		d.devs = append(d.devs, dv)
		d.sems = append(d.sems, make(chan struct{}, 1))
	}
	d.holder = make([]*opRec, len(d.devs))
	return d, nil
}

// Describe says which driver answered: "libcuda.so.1 (CUDA 12.4)".
func (d *Driver) Describe() string {
	return fmt.Sprintf("%s (CUDA %d.%d)", Library, d.version/1000, d.version%1000/10)
}

// Path is the file the loader opened for libcuda.so.1, as its link map
// names it ("" when it cannot say).
func (d *Driver) Path() string { return d.api.path }

// Version is cuDriverGetVersion's answer: 12040 for CUDA 12.4.
func (d *Driver) Version() int { return d.version }

// Devices lists the devices Open enumerated.
func (d *Driver) Devices(ctx context.Context) ([]verify.Device, error) {
	if err := d.refusal(); err != nil {
		return nil, err
	}
	out := make([]verify.Device, len(d.devs))
	for i := range d.devs {
		out[i] = d.devs[i].info
	}
	return out, nil
}

// Poisoned returns the error every method returns once a driver call
// outlived its deadline, or nil.
func (d *Driver) Poisoned() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.checkOverrunLocked()
	return d.poisoned
}

// refusal is why no operation may start now: the driver is poisoned or
// closed.
func (d *Driver) refusal() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.checkOverrunLocked()
	if d.poisoned != nil {
		return d.poisoned
	}
	if d.closed {
		return errors.New("cuda: the driver is closed")
	}
	return nil
}

// checkOverrunLocked poisons the driver when a call is in progress in any
// operation whose deadline has passed: it was abandoned by a caller that
// stopped waiting, and may never return.
func (d *Driver) checkOverrunLocked() {
	for _, r := range d.holder {
		if d.poisoned != nil {
			return
		}
		if r != nil && r.call != "" && r.ctx.Err() != nil {
			d.poisonLocked(r)
		}
	}
}

func (d *Driver) poisonLocked(r *opRec) {
	d.poisoned = fmt.Errorf("cuda: refused: %s (%s), called at %s, had not returned when its deadline passed %s later; the driver is not called again in this process",
		r.call, r.name, r.since.UTC().Format(time.RFC3339Nano), time.Since(r.since).Round(time.Millisecond))
}

// deadlinePassed runs when operation r's ctx ends: a driver call of r still
// in progress then poisons the driver.
func (d *Driver) deadlinePassed(r *opRec) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.poisoned == nil && !r.done && r.call != "" {
		d.poisonLocked(r)
	}
}

// checkDevices says why devs (the devices an operation names: one, or a
// peer pair) cannot be used.
func (d *Driver) checkDevices(devs []int) error {
	n := len(d.devs)
	for _, i := range devs {
		if i < 0 || i >= n {
			if len(devs) == 2 {
				return fmt.Errorf("cuda: no device pair %d → %d (%d visible)", devs[0], devs[1], n)
			}
			return fmt.Errorf("cuda: no device %d (%d visible)", i, n)
		}
	}
	if len(devs) == 2 && devs[0] == devs[1] {
		return fmt.Errorf("cuda: a peer copy needs two devices, not %d twice", devs[0])
	}
	return nil
}

// acquire takes the semaphores of devs in ascending ordinal order (two
// operations that share devices then never wait for each other in a
// cycle) and records r as their holder. When ctx ends first it gives back
// what it took and says which operation, on which device, it waited for.
func (d *Driver) acquire(ctx context.Context, r *opRec, devs []int) (release func(), err error) {
	order := slices.Compact(slices.Sorted(slices.Values(devs)))
	var held []int
	release = func() {
		d.mu.Lock()
		for _, i := range held {
			d.holder[i] = nil
		}
		d.mu.Unlock()
		for _, i := range held {
			<-d.sems[i]
		}
	}
	for _, i := range order {
		select {
		case d.sems[i] <- struct{}{}:
			d.mu.Lock()
			d.holder[i] = r
			d.mu.Unlock()
			held = append(held, i)
		case <-ctx.Done():
			d.mu.Lock()
			d.checkOverrunLocked()
			busy := "the operation before it"
			if h := d.holder[i]; h != nil {
				busy = h.name
				if h.call != "" {
					busy = h.call + " (" + h.name + ")"
				}
			}
			d.mu.Unlock()
			release()
			return nil, fmt.Errorf("%s: %w while waiting for %s on GPU %d to finish", r.name, ctx.Err(), busy, i)
		}
	}
	return release, nil
}

// op is one operation in progress.
type op struct {
	d    *Driver
	ctx  context.Context
	rec  *opRec
	devs []int // the devices whose semaphores it holds
}

// run runs f as operation name on devs: after every other operation on
// any of devs, alongside operations on other devices, on a locked OS
// thread (a context is current per thread), with ctx's end watched.
func (d *Driver) run(ctx context.Context, name string, devs []int, f func(o *op) error) error {
	if err := d.refusal(); err != nil {
		return err
	}
	if err := d.checkDevices(devs); err != nil {
		return err
	}
	rec := &opRec{name: name, ctx: ctx}
	release, err := d.acquire(ctx, rec, devs)
	if err != nil {
		return err
	}
	defer release()
	defer func() {
		d.mu.Lock()
		rec.done = true
		d.mu.Unlock()
	}()
	if err := d.refusal(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	stop := context.AfterFunc(ctx, func() { d.deadlinePassed(rec) })
	defer stop()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	o := &op{d: d, ctx: ctx, rec: rec, devs: devs}
	defer o.release()
	return f(o)
}

// holds reports whether o holds device i's semaphore.
func (o *op) holds(i int) bool {
	return slices.Contains(o.devs, i)
}

// cu makes one driver call, unless the operation's deadline has passed.
func (o *op) cu(call string, f func() C.CUresult) error {
	if err := o.ctx.Err(); err != nil {
		return fmt.Errorf("%s: not called: %w", call, err)
	}
	return o.cleanup(call, f)
}

// cleanup makes one driver call even after the deadline (frees and
// releases); a call that then hangs still poisons the driver.
func (o *op) cleanup(call string, f func() C.CUresult) error {
	d, r := o.d, o.rec
	d.mu.Lock()
	if d.poisoned != nil {
		d.mu.Unlock()
		return d.poisoned
	}
	r.call, r.since = call, time.Now()
	d.mu.Unlock()
	res := f()
	d.mu.Lock()
	r.call = ""
	d.mu.Unlock()
	if res != 0 {
		return d.cuError(call, res)
	}
	return nil
}

// cuError names a CUresult as the driver names it, or as cuda.h does.
func (d *Driver) cuError(call string, r C.CUresult) *Error {
	e := &Error{Call: call, Code: Result(r)}
	if name, desc, ok := d.api.errorText(r); ok {
		e.Name, e.Desc = name, desc
	} else {
		e.Name = e.Code.String()
	}
	return e
}

// release leaves no context current on this thread before it is unlocked.
func (o *op) release() {
	_ = o.cleanup("cuCtxSetCurrent", func() C.CUresult { return C.gp_cuCtxSetCurrent(o.d.api.p, nil) })
}

// use makes device i's context current, retaining it (and creating its two
// timing events) on first use.
func (o *op) use(i int) (*device, error) {
	if i < 0 || i >= len(o.d.devs) {
		return nil, fmt.Errorf("cuda: no device %d (%d visible)", i, len(o.d.devs))
	}
	if !o.holds(i) {
		return nil, fmt.Errorf("cuda: %s does not hold device %d", o.rec.name, i) // a bug of this package
	}
	a := o.d.api.p
	dv := &o.d.devs[i]
	if dv.ctx == nil {
		var c C.CUcontext
		if err := o.cu("cuDevicePrimaryCtxRetain", func() C.CUresult { return C.gp_cuDevicePrimaryCtxRetain(a, &c, dv.cu) }); err != nil {
			return nil, err
		}
		dv.ctx = c
		dv.peers = map[int]bool{}
	}
	if err := o.cu("cuCtxSetCurrent", func() C.CUresult { return C.gp_cuCtxSetCurrent(a, dv.ctx) }); err != nil {
		return nil, err
	}
	for _, ev := range []*C.CUevent{&dv.start, &dv.stop} {
		if *ev == nil {
			var e C.CUevent
			if err := o.cu("cuEventCreate", func() C.CUresult { return C.gp_cuEventCreate(a, &e) }); err != nil {
				return nil, err
			}
			*ev = e
		}
	}
	return dv, nil
}

// kernels JIT-compiles the PTX into dv's context (current) on first need.
func (o *op) kernels(dv *device) error {
	if dv.mod != nil {
		return nil
	}
	a := o.d.api.p
	const logSize = 8192
	logBuf := (*C.char)(C.calloc(1, logSize))
	defer C.free(unsafe.Pointer(logBuf))
	src := C.CString(kernelsPTX)
	defer C.free(unsafe.Pointer(src))
	var m C.CUmodule
	err := o.cu("cuModuleLoadDataEx", func() C.CUresult { return C.gp_module_load(a, &m, src, logBuf, logSize) })
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Log = C.GoString(logBuf)
		}
		return err
	}
	dv.mod = m
	for _, k := range []struct {
		name string
		fn   *C.CUfunction
	}{{kernelFMA, &dv.fma}, {kernelPatternWrite, &dv.write}, {kernelPatternCheck, &dv.check}} {
		name := C.CString(k.name)
		var f C.CUfunction
		err := o.cu("cuModuleGetFunction", func() C.CUresult { return C.gp_cuModuleGetFunction(a, &f, m, name) })
		C.free(unsafe.Pointer(name))
		if err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
		*k.fn = f
	}
	return nil
}

// devAlloc allocates n bytes on dv (current); free releases them with dv
// current again.
func (o *op) devAlloc(dv *device, n int64) (p C.CUdeviceptr, free func(), err error) {
	a := o.d.api.p
	if err := o.cu("cuMemAlloc_v2", func() C.CUresult { return C.gp_cuMemAlloc(a, &p, C.size_t(n)) }); err != nil {
		return 0, func() {}, err
	}
	return p, func() {
		_ = o.cleanup("cuCtxSetCurrent", func() C.CUresult { return C.gp_cuCtxSetCurrent(a, dv.ctx) })
		_ = o.cleanup("cuMemFree_v2", func() C.CUresult { return C.gp_cuMemFree(a, p) })
	}, nil
}

// hostAlloc allocates n bytes of pinned host memory (cuMemHostAlloc).
func (o *op) hostAlloc(dv *device, n int64) (p unsafe.Pointer, free func(), err error) {
	a := o.d.api.p
	if err := o.cu("cuMemHostAlloc", func() C.CUresult { return C.gp_cuMemHostAlloc(a, &p, C.size_t(n)) }); err != nil {
		return nil, func() {}, err
	}
	return p, func() {
		_ = o.cleanup("cuCtxSetCurrent", func() C.CUresult { return C.gp_cuCtxSetCurrent(a, dv.ctx) })
		_ = o.cleanup("cuMemFreeHost", func() C.CUresult { return C.gp_cuMemFreeHost(a, p) })
	}, nil
}

// timed runs body between two events on dv's default stream and returns
// the device time between them.
func (o *op) timed(dv *device, body func() error) (time.Duration, error) {
	a := o.d.api.p
	if err := o.cu("cuEventRecord", func() C.CUresult { return C.gp_cuEventRecord(a, dv.start) }); err != nil {
		return 0, err
	}
	if err := body(); err != nil {
		return 0, err
	}
	if err := o.cu("cuEventRecord", func() C.CUresult { return C.gp_cuEventRecord(a, dv.stop) }); err != nil {
		return 0, err
	}
	if err := o.cu("cuEventSynchronize", func() C.CUresult { return C.gp_cuEventSynchronize(a, dv.stop) }); err != nil {
		return 0, err
	}
	var ms C.float
	if err := o.cu("cuEventElapsedTime", func() C.CUresult { return C.gp_cuEventElapsedTime(a, &ms, dv.start, dv.stop) }); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

func checkSize(bytes int64, iters int) error {
	if bytes <= 0 || uint64(bytes) > math.MaxUint64/2 {
		return fmt.Errorf("cuda: copy size %d bytes out of range", bytes)
	}
	if iters <= 0 {
		return fmt.Errorf("cuda: %d iterations: at least 1", iters)
	}
	return nil
}

// CopyHostToDevice times iters copies of bytes from pinned host memory to
// dev (after one untimed copy that warms the path).
func (d *Driver) CopyHostToDevice(ctx context.Context, dev int, bytes int64, iters int) (time.Duration, error) {
	return d.copyHost(ctx, fmt.Sprintf("CopyHostToDevice GPU %d", dev), dev, bytes, iters, true)
}

// CopyDeviceToHost times iters copies of bytes from dev to pinned host
// memory.
func (d *Driver) CopyDeviceToHost(ctx context.Context, dev int, bytes int64, iters int) (time.Duration, error) {
	return d.copyHost(ctx, fmt.Sprintf("CopyDeviceToHost GPU %d", dev), dev, bytes, iters, false)
}

func (d *Driver) copyHost(ctx context.Context, name string, dev int, bytes int64, iters int, toDevice bool) (time.Duration, error) {
	if err := checkSize(bytes, iters); err != nil {
		return 0, err
	}
	var took time.Duration
	err := d.run(ctx, name, []int{dev}, func(o *op) error {
		dv, err := o.use(dev)
		if err != nil {
			return err
		}
		host, freeHost, err := o.hostAlloc(dv, bytes)
		defer freeHost()
		if err != nil {
			return err
		}
		buf, freeBuf, err := o.devAlloc(dv, bytes)
		defer freeBuf()
		if err != nil {
			return err
		}
		a, n := d.api.p, C.size_t(bytes)
		one := func() error {
			if toDevice {
				return o.cu("cuMemcpyHtoD_v2", func() C.CUresult { return C.gp_cuMemcpyHtoD(a, buf, host, n) })
			}
			return o.cu("cuMemcpyDtoH_v2", func() C.CUresult { return C.gp_cuMemcpyDtoH(a, host, buf, n) })
		}
		if err := one(); err != nil {
			return err
		}
		took, err = o.timed(dv, repeat(iters, one))
		return err
	})
	return took, err
}

func repeat(n int, f func() error) func() error {
	return func() error {
		for i := 0; i < n; i++ {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	}
}

// CopyDeviceToDevice times iters copies of bytes between two buffers on
// dev. Each copy reads and writes bytes: the memory moves twice that.
func (d *Driver) CopyDeviceToDevice(ctx context.Context, dev int, bytes int64, iters int) (time.Duration, error) {
	if err := checkSize(bytes, iters); err != nil {
		return 0, err
	}
	var took time.Duration
	err := d.run(ctx, fmt.Sprintf("CopyDeviceToDevice GPU %d", dev), []int{dev}, func(o *op) error {
		dv, err := o.use(dev)
		if err != nil {
			return err
		}
		src, freeSrc, err := o.devAlloc(dv, bytes)
		defer freeSrc()
		if err != nil {
			return err
		}
		dst, freeDst, err := o.devAlloc(dv, bytes)
		defer freeDst()
		if err != nil {
			return err
		}
		a, n := d.api.p, C.size_t(bytes)
		one := func() error {
			return o.cu("cuMemcpyDtoD_v2", func() C.CUresult { return C.gp_cuMemcpyDtoD(a, dst, src, n) })
		}
		if err := one(); err != nil {
			return err
		}
		took, err = o.timed(dv, repeat(iters, one))
		return err
	})
	return took, err
}

// CanAccessPeer asks cuDeviceCanAccessPeer whether src can reach dst's
// memory directly.
func (d *Driver) CanAccessPeer(ctx context.Context, src, dst int) (bool, error) {
	var can C.int
	err := d.run(ctx, fmt.Sprintf("CanAccessPeer GPU %d → GPU %d", src, dst), []int{src, dst}, func(o *op) error {
		a := d.api.p
		return o.cu("cuDeviceCanAccessPeer", func() C.CUresult {
			return C.gp_cuDeviceCanAccessPeer(a, &can, d.devs[src].cu, d.devs[dst].cu)
		})
	})
	return can != 0, err
}

// enablePeer lets from's context (current) reach to's memory, once.
func (o *op) enablePeer(from *device, to int) error {
	if from.peers[to] {
		return nil
	}
	a := o.d.api.p
	peer := o.d.devs[to].ctx
	err := o.cu("cuCtxEnablePeerAccess", func() C.CUresult { return C.gp_cuCtxEnablePeerAccess(a, peer) })
	if c, ok := CodeOf(err); ok && c == ErrorPeerAccessEnabled {
		err = nil
	}
	if err == nil {
		from.peers[to] = true
	}
	return err
}

// CopyPeer times iters cuMemcpyPeer copies of bytes from src's memory to
// dst's. Where cuDeviceCanAccessPeer allows it, peer access is enabled first
// (each way it allows, once per pair), so the copy goes directly (NVLink or
// PCIe P2P); where it does not, the driver stages the copy through host
// memory. The events are recorded on src's context, the one current for the
// copies.
func (d *Driver) CopyPeer(ctx context.Context, src, dst int, bytes int64, iters int) (time.Duration, error) {
	if err := checkSize(bytes, iters); err != nil {
		return 0, err
	}
	var took time.Duration
	err := d.run(ctx, fmt.Sprintf("CopyPeer GPU %d → GPU %d", src, dst), []int{src, dst}, func(o *op) error {
		a := d.api.p
		// Each direction of access is asked for and enabled on its own.
		var can, back C.int
		if err := o.cu("cuDeviceCanAccessPeer", func() C.CUresult {
			return C.gp_cuDeviceCanAccessPeer(a, &can, d.devs[src].cu, d.devs[dst].cu)
		}); err != nil {
			return err
		}
		if err := o.cu("cuDeviceCanAccessPeer", func() C.CUresult {
			return C.gp_cuDeviceCanAccessPeer(a, &back, d.devs[dst].cu, d.devs[src].cu)
		}); err != nil {
			return err
		}
		if _, err := o.use(src); err != nil {
			return err
		}
		ddv, err := o.use(dst)
		if err != nil {
			return err
		}
		to, freeTo, err := o.devAlloc(ddv, bytes)
		defer freeTo()
		if err != nil {
			return err
		}
		if back != 0 {
			if err := o.enablePeer(ddv, src); err != nil {
				return err
			}
		}
		sdv, err := o.use(src)
		if err != nil {
			return err
		}
		from, freeFrom, err := o.devAlloc(sdv, bytes)
		defer freeFrom()
		if err != nil {
			return err
		}
		if can != 0 {
			if err := o.enablePeer(sdv, dst); err != nil {
				return err
			}
		}
		n := C.size_t(bytes)
		one := func() error {
			return o.cu("cuMemcpyPeer", func() C.CUresult { return C.gp_cuMemcpyPeer(a, to, ddv.ctx, from, sdv.ctx, n) })
		}
		if err := one(); err != nil {
			return err
		}
		took, err = o.timed(sdv, repeat(iters, one))
		return err
	})
	return took, err
}

// Compute runs fma_loop on every SM of dev for about want of device time:
// a calibration launch (whose result is checked: 28 + 16·iters in every
// thread), launches doubling until one takes 1 ms, then launches of about
// 100 ms each (so no display watchdog kills one), each waited for and the
// next re-sized by it, until want is covered. It returns the flops of the
// timed launches (32 per thread per iteration) and their device time. want
// is cut to fit ctx's deadline.
func (d *Driver) Compute(ctx context.Context, dev int, want time.Duration) (float64, time.Duration, error) {
	if want <= 0 {
		return 0, 0, fmt.Errorf("cuda: compute for %s: a positive duration is needed", want)
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) * 7 / 10; left < want {
			want = left
		}
	}
	var flops float64
	var took time.Duration
	err := d.run(ctx, fmt.Sprintf("Compute GPU %d", dev), []int{dev}, func(o *op) error {
		dv, err := o.use(dev)
		if err != nil {
			return err
		}
		if err := o.kernels(dv); err != nil {
			return err
		}
		sms := dv.sms
		if sms <= 0 {
			sms = defaultSMs
		}
		blocks := sms * fmaBlocksPerSM
		threads := int64(blocks) * blockThreads
		out, freeOut, err := o.devAlloc(dv, threads*4)
		defer freeOut()
		if err != nil {
			return err
		}
		a := d.api.p
		launch := func(iters uint32) func() error {
			return func() error {
				return o.cu("cuLaunchKernel", func() C.CUresult {
					return C.gp_launch_fma(a, dv.fma, C.uint(blocks), blockThreads, out, C.uint(iters), 1, 1)
				})
			}
		}
		iters := uint32(64)
		t, err := o.timed(dv, launch(iters))
		if err != nil {
			return err
		}
		if err := o.checkFMA(out, threads, iters); err != nil {
			return err
		}
		for t < time.Millisecond && iters < 1<<24 {
			iters *= 2
			if t, err = o.timed(dv, launch(iters)); err != nil {
				return err
			}
		}
		// Timed launches of about per each, until want is covered: after
		// each one the stop event is waited for and the iterations are
		// re-sized by what it took, so clocks that ramp up or sag after
		// the calibration move neither the total nor a launch's length
		// far. The GPU idles only while the host wakes between launches.
		per := min(want, maxLaunchDuration)
		rescale := func(iters uint32, t time.Duration) uint32 {
			t = max(t, time.Microsecond)
			return uint32(math.Min(math.Max(float64(iters)*float64(per)/float64(t), 1), 1<<30))
		}
		iters = rescale(iters, t)
		if err := o.cu("cuEventRecord", func() C.CUresult { return C.gp_cuEventRecord(a, dv.start) }); err != nil {
			return err
		}
		var done float64 // thread-iterations run
		for launches := 0; took < want && launches < maxLaunches; launches++ {
			if err := launch(iters)(); err != nil {
				return err
			}
			done += float64(threads) * float64(iters)
			if err := o.cu("cuEventRecord", func() C.CUresult { return C.gp_cuEventRecord(a, dv.stop) }); err != nil {
				return err
			}
			if err := o.cu("cuEventSynchronize", func() C.CUresult { return C.gp_cuEventSynchronize(a, dv.stop) }); err != nil {
				return err
			}
			var ms C.float
			if err := o.cu("cuEventElapsedTime", func() C.CUresult { return C.gp_cuEventElapsedTime(a, &ms, dv.start, dv.stop) }); err != nil {
				return err
			}
			total := time.Duration(float64(ms) * float64(time.Millisecond))
			iters = rescale(iters, total-took)
			took = total
		}
		flops = done * 32
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return flops, took, nil
}

// checkFMA reads back the first and last thread's result of a launch with
// a = b = 1 and compares it with fmaExpect.
func (o *op) checkFMA(out C.CUdeviceptr, threads int64, iters uint32) error {
	a := o.d.api.p
	v := (*C.float)(C.malloc(4))
	defer C.free(unsafe.Pointer(v))
	want := fmaExpect(iters)
	for _, t := range []int64{0, threads - 1} {
		src := out + C.CUdeviceptr(t*4)
		if err := o.cu("cuMemcpyDtoH_v2", func() C.CUresult { return C.gp_cuMemcpyDtoH(a, unsafe.Pointer(v), src, 4) }); err != nil {
			return err
		}
		if got := float32(*v); got != want {
			return fmt.Errorf("cuda: fma_loop thread %d computed %g, want %g: the GPU computed wrong", t, got, want)
		}
	}
	return nil
}

// Pattern seeds: one, then its complement, so each bit of each word is
// written and read back both 0 and 1.
const patternSeed = 0x5A5A5A5A

// MemPattern writes pattern_write's pattern over bytes of dev's memory
// (rounded down to whole 32-bit words), reads it back with pattern_check,
// and does it again with the complement; it returns the words that read
// back wrong in both passes together.
func (d *Driver) MemPattern(ctx context.Context, dev int, bytes int64) (int64, error) {
	nwords := bytes / 4
	if nwords <= 0 {
		return 0, fmt.Errorf("cuda: a pattern over %d bytes: at least 4 are needed", bytes)
	}
	var mismatches int64
	err := d.run(ctx, fmt.Sprintf("MemPattern GPU %d", dev), []int{dev}, func(o *op) error {
		dv, err := o.use(dev)
		if err != nil {
			return err
		}
		if err := o.kernels(dv); err != nil {
			return err
		}
		buf, freeBuf, err := o.devAlloc(dv, nwords*4)
		defer freeBuf()
		if err != nil {
			return err
		}
		count, freeCount, err := o.devAlloc(dv, 8)
		defer freeCount()
		if err != nil {
			return err
		}
		sms := dv.sms
		if sms <= 0 {
			sms = defaultSMs
		}
		blocks := C.uint(sms * memBlocksPerSM)
		a := d.api.p
		host := (*C.ulonglong)(C.malloc(8))
		defer C.free(unsafe.Pointer(host))
		for _, seed := range []uint32{patternSeed, ^uint32(patternSeed)} {
			s, n := C.uint(seed), C.ulonglong(nwords)
			if err := o.cu("cuMemsetD32_v2", func() C.CUresult { return C.gp_cuMemsetD32(a, count, 0, 2) }); err != nil {
				return err
			}
			if err := o.cu("cuLaunchKernel", func() C.CUresult {
				return C.gp_launch_pattern_write(a, dv.write, blocks, blockThreads, buf, n, s)
			}); err != nil {
				return fmt.Errorf("%s: %w", kernelPatternWrite, err)
			}
			if err := o.cu("cuLaunchKernel", func() C.CUresult {
				return C.gp_launch_pattern_check(a, dv.check, blocks, blockThreads, buf, n, s, count)
			}); err != nil {
				return fmt.Errorf("%s: %w", kernelPatternCheck, err)
			}
			if err := o.cu("cuCtxSynchronize", func() C.CUresult { return C.gp_cuCtxSynchronize(a) }); err != nil {
				return err
			}
			if err := o.cu("cuMemcpyDtoH_v2", func() C.CUresult { return C.gp_cuMemcpyDtoH(a, unsafe.Pointer(host), count, 8) }); err != nil {
				return err
			}
			mismatches += int64(*host)
		}
		return nil
	})
	return mismatches, err
}

// Close releases every module, event and context. After a call hung it
// touches nothing (the driver may never answer again) and says so; the
// process's exit releases them.
func (d *Driver) Close() error {
	d.mu.Lock()
	d.checkOverrunLocked()
	poisoned, closed := d.poisoned, d.closed
	d.mu.Unlock()
	if closed {
		return nil
	}
	if poisoned != nil {
		return fmt.Errorf("cuda: nothing released: %w", poisoned)
	}
	// Every device, in ascending order as an operation takes them; one in
	// use leaves everything as it is.
	rec := &opRec{name: "Close", ctx: context.Background()}
	all := make([]int, len(d.devs))
	for i := range all {
		all[i] = i
	}
	var held []int
	release := func() {
		d.mu.Lock()
		for _, i := range held {
			d.holder[i] = nil
		}
		rec.done = true
		d.mu.Unlock()
		for _, i := range held {
			<-d.sems[i]
		}
	}
	for _, i := range all {
		select {
		case d.sems[i] <- struct{}{}:
			d.mu.Lock()
			d.holder[i] = rec
			d.mu.Unlock()
			held = append(held, i)
		default:
			d.mu.Lock()
			busy := "an operation"
			if h := d.holder[i]; h != nil {
				busy = h.name
			}
			d.mu.Unlock()
			release()
			return fmt.Errorf("cuda: nothing released: %s is still in progress on GPU %d", busy, i)
		}
	}
	defer release()
	if err := d.refusal(); err != nil { // closed or poisoned meanwhile
		if d.Poisoned() != nil {
			return fmt.Errorf("cuda: nothing released: %w", err)
		}
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	o := &op{d: d, ctx: context.Background(), rec: rec, devs: all}
	a := d.api.p
	var errs []error
	for i := range d.devs {
		dv := &d.devs[i]
		if dv.ctx == nil {
			continue
		}
		if err := o.cleanup("cuCtxSetCurrent", func() C.CUresult { return C.gp_cuCtxSetCurrent(a, dv.ctx) }); err != nil {
			errs = append(errs, fmt.Errorf("device %d: %w", i, err))
			continue
		}
		for _, ev := range []C.CUevent{dv.start, dv.stop} {
			if ev != nil {
				if err := o.cleanup("cuEventDestroy_v2", func() C.CUresult { return C.gp_cuEventDestroy(a, ev) }); err != nil {
					errs = append(errs, fmt.Errorf("device %d: %w", i, err))
				}
			}
		}
		if dv.mod != nil {
			if err := o.cleanup("cuModuleUnload", func() C.CUresult { return C.gp_cuModuleUnload(a, dv.mod) }); err != nil {
				errs = append(errs, fmt.Errorf("device %d: %w", i, err))
			}
		}
		o.release()
		if err := o.cleanup("cuDevicePrimaryCtxRelease_v2", func() C.CUresult { return C.gp_cuDevicePrimaryCtxRelease(a, dv.cu) }); err != nil {
			errs = append(errs, fmt.Errorf("device %d: %w", i, err))
		}
		*dv = device{info: dv.info, cu: dv.cu, sms: dv.sms}
	}
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return errors.Join(errs...)
}
