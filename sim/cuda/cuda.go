// Package cuda is a simulated CUDA driver for `gpuprobe verify --simulate`:
// a verify.Driver whose figures are a healthy node of the model's, bent by
// the spec's faults, and an NVML load watch to go with it. It answers with
// device time at once, so a simulated verify takes milliseconds.
package cuda

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/verify"
)

// The faults, with the names issue #28 fixed so scripts can rely on them.
const (
	FaultH2DSlow       = "h2d-slow"
	FaultPeerSlow      = "peer-slow"
	FaultLoadThrottle  = "load-throttle"
	FaultMemMiscompare = "mem-miscompare"
)

func init() {
	simulate.Register(simulate.FaultDoc{Name: FaultH2DSlow, Arg: "GPU",
		Effect: "verify: the GPU's host link delivers a quarter of its bandwidth both ways (a link that trains down under load, a riser)"})
	simulate.Register(simulate.FaultDoc{Name: FaultPeerSlow, Arg: "GPU-GPU",
		Effect: "verify: copies between the two GPUs run at a quarter of NVLink speed, both ways"})
	simulate.Register(simulate.FaultDoc{Name: FaultLoadThrottle, Arg: "GPU",
		Effect: "verify: under the compute load the GPU shows HW slowdown and thermal clock events and its SM clock sags to 60%"})
	simulate.Register(simulate.FaultDoc{Name: FaultMemMiscompare, Arg: "GPU",
		Effect: "verify: the memory pattern test reads back 3 wrong words on the GPU"})
}

// Figures are a model's healthy measurements: what a healthy node of the
// kind gives, within the expectations of check/verifyexpect.go.
type Figures struct {
	Name     string
	TotalMiB uint64
	H2D, D2H float64 // GB/s, pinned, per direction
	D2D      float64 // GB/s counted once
	Peer     float64 // GB/s unidirectional, GPU to GPU
	TFLOPS   float64 // FP32 FMA
	// Clocks and power under load, as NVML shows them on a healthy GPU.
	MaxClockMHz, LoadClockMHz uint32
	LoadPowerW                float64
	LoadTempC                 uint32
}

// figures: H100/H200 SXM figures are the published measurements check's
// table cites (Gen5 x16 host copies ~55 GB/s, NVLink4 ~378 GB/s one way);
// d2d and FP32 sit between the table's expectation and the datasheet
// ceiling. The names are NVML's for the same mock (sim/nvml).
var figures = map[string]Figures{
	"dgx-h100": {Name: "NVIDIA H100 80GB HBM3", TotalMiB: 81559, H2D: 54.6, D2H: 55.2, D2D: 1452, Peer: 378, TFLOPS: 59.2,
		MaxClockMHz: 1980, LoadClockMHz: 1755, LoadPowerW: 612, LoadTempC: 67},
	"dgx-h200": {Name: "NVIDIA H200 141GB HBM3e", TotalMiB: 143771, H2D: 54.4, D2H: 55.1, D2D: 2080, Peer: 377, TFLOPS: 59.0,
		MaxClockMHz: 1980, LoadClockMHz: 1755, LoadPowerW: 618, LoadTempC: 66},
	"dgx-b200": {Name: "NVIDIA B200 180GB HBM3e", TotalMiB: 183359, H2D: 54.1, D2H: 55.0, D2D: 3400, Peer: 740, TFLOPS: 70.0,
		MaxClockMHz: 1980, LoadClockMHz: 1800, LoadPowerW: 820, LoadTempC: 64},
	"dgx-a100": {Name: "NVIDIA A100-SXM4-40GB", TotalMiB: 40536, H2D: 25.1, D2H: 26.2, D2D: 690, Peer: 262, TFLOPS: 18.6,
		MaxClockMHz: 1410, LoadClockMHz: 1380, LoadPowerW: 352, LoadTempC: 63},
}

// FiguresOf returns a model's healthy figures.
func FiguresOf(model string) (Figures, bool) {
	f, ok := figures[model]
	return f, ok
}

// Driver is the simulated driver.
type Driver struct {
	fig    Figures
	busIDs [8]string
	// slow host links, slow pairs (both orders), throttled and
	// miscomparing GPUs, by CUDA ordinal (= NVML index here: identical
	// GPUs enumerate in PCI bus order under both).
	h2dSlow   map[int]bool
	peerSlow  map[[2]int]bool
	throttled map[int]bool
	miscomp   map[int]bool

	mu     sync.Mutex
	closed bool
	// Hang, when set, makes every call on that ordinal block until ctx
	// ends: tests of the runner's deadlines use it.
	Hang map[int]bool
}

// New builds the simulated driver of a parsed spec.
func New(s *simulate.Spec) (*Driver, error) {
	fig, ok := figures[s.Model]
	if !ok {
		return nil, fmt.Errorf("simulated CUDA: no figures for model %q", s.Model)
	}
	m, _ := simulate.Lookup(s.Model)
	d := &Driver{fig: fig, busIDs: m.BusIDs, h2dSlow: map[int]bool{}, peerSlow: map[[2]int]bool{},
		throttled: map[int]bool{}, miscomp: map[int]bool{}}
	n := len(m.BusIDs)
	for _, f := range s.Faults {
		var set map[int]bool
		switch f.Name {
		case FaultH2DSlow:
			set = d.h2dSlow
		case FaultLoadThrottle:
			set = d.throttled
		case FaultMemMiscompare:
			set = d.miscomp
		case FaultPeerSlow:
			a, b, err := pair(f.Value, n)
			if err != nil {
				return nil, err
			}
			d.peerSlow[[2]int{a, b}], d.peerSlow[[2]int{b, a}] = true, true
			continue
		default:
			continue // another simulator's fault
		}
		i, err := f.GPU(n)
		if err != nil {
			return nil, err
		}
		set[i] = true
	}
	return d, nil
}

// pair reads "N-M", two different GPU indexes.
func pair(v string, n int) (int, int, error) {
	as, bs, ok := strings.Cut(v, "-")
	a, errA := strconv.Atoi(as)
	b, errB := strconv.Atoi(bs)
	if !ok || errA != nil || errB != nil || a < 0 || b < 0 || a >= n || b >= n || a == b {
		return 0, 0, fmt.Errorf("fault %s=%s: want two different GPU indexes N-M in 0..%d", FaultPeerSlow, v, n-1)
	}
	return a, b, nil
}

var _ verify.Driver = (*Driver)(nil)

// Describe says it is simulated.
func (d *Driver) Describe() string { return "simulated (sim/cuda)" }

func (d *Driver) check(_ context.Context, devs ...int) error {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return fmt.Errorf("simulated CUDA: called after Close")
	}
	for _, i := range devs {
		if i < 0 || i >= len(d.busIDs) {
			return fmt.Errorf("CUDA_ERROR_INVALID_DEVICE: no device %d", i)
		}
		if d.Hang[i] {
			select {} // a wedged driver call never returns, whatever its caller does
		}
	}
	return nil
}

// Devices lists the model's eight GPUs.
func (d *Driver) Devices(ctx context.Context) ([]verify.Device, error) {
	if err := d.check(ctx); err != nil {
		return nil, err
	}
	out := make([]verify.Device, len(d.busIDs))
	for i, b := range d.busIDs {
		out[i] = verify.Device{Ordinal: i, Name: d.fig.Name, PCIBusID: b, TotalMemory: d.fig.TotalMiB << 20}
	}
	return out, nil
}

// jitter keeps the GPUs from being identical (±0.8%, fixed per GPU and
// kind), as real ones are not.
func jitter(dev, kind int) float64 {
	return 1 + float64((dev*7+kind*3)%5-2)*0.004
}

func took(bytes int64, iters int, gbps float64) time.Duration {
	return time.Duration(float64(bytes) * float64(iters) / (gbps * 1e9) * float64(time.Second))
}

// CopyHostToDevice: the host link's figure, a quarter of it under h2d-slow.
func (d *Driver) CopyHostToDevice(ctx context.Context, dev int, bytes int64, iters int) (time.Duration, error) {
	if err := d.check(ctx, dev); err != nil {
		return 0, err
	}
	r := d.fig.H2D * jitter(dev, 1)
	if d.h2dSlow[dev] {
		r /= 4
	}
	return took(bytes, iters, r), nil
}

// CopyDeviceToHost is the other direction.
func (d *Driver) CopyDeviceToHost(ctx context.Context, dev int, bytes int64, iters int) (time.Duration, error) {
	if err := d.check(ctx, dev); err != nil {
		return 0, err
	}
	r := d.fig.D2H * jitter(dev, 2)
	if d.h2dSlow[dev] {
		r /= 4
	}
	return took(bytes, iters, r), nil
}

// CopyDeviceToDevice is HBM.
func (d *Driver) CopyDeviceToDevice(ctx context.Context, dev int, bytes int64, iters int) (time.Duration, error) {
	if err := d.check(ctx, dev); err != nil {
		return 0, err
	}
	return took(bytes, iters, d.fig.D2D*jitter(dev, 3)), nil
}

// CanAccessPeer: every pair is on the NVSwitch fabric.
func (d *Driver) CanAccessPeer(ctx context.Context, src, dst int) (bool, error) {
	if err := d.check(ctx, src, dst); err != nil {
		return false, err
	}
	return src != dst, nil
}

// CopyPeer is NVLink, a quarter of it for a peer-slow pair.
func (d *Driver) CopyPeer(ctx context.Context, src, dst int, bytes int64, iters int) (time.Duration, error) {
	if err := d.check(ctx, src, dst); err != nil {
		return 0, err
	}
	r := d.fig.Peer * jitter(src*8+dst, 4)
	if d.peerSlow[[2]int{src, dst}] {
		r /= 4
	}
	return took(bytes, iters, r), nil
}

// Compute does the model's FP32 rate, 60% of it on a throttled GPU (its
// clock sags to 60%: the FMA loop's rate follows the SM clock).
func (d *Driver) Compute(ctx context.Context, dev int, dur time.Duration) (float64, time.Duration, error) {
	if err := d.check(ctx, dev); err != nil {
		return 0, 0, err
	}
	r := d.fig.TFLOPS * jitter(dev, 5)
	if d.throttled[dev] {
		r *= 0.6
	}
	return r * 1e12 * dur.Seconds(), dur, nil
}

// MemPattern reads back 3 wrong words under mem-miscompare.
func (d *Driver) MemPattern(ctx context.Context, dev int, bytes int64) (int64, error) {
	if err := d.check(ctx, dev); err != nil {
		return 0, err
	}
	if d.miscomp[dev] {
		return 3, nil
	}
	return 0, nil
}

// Close marks the driver closed: a call after it is an error.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return nil
}

// NVML clock event bits (nvml.h nvmlClocksEventReason*).
const (
	reasonSwPowerCap   = 0x4
	reasonHwSlowdown   = 0x8
	reasonSwThermal    = 0x20
	reasonHwThermal    = 0x40
	samplesPerSecond   = 4
	minSimulatedSample = 1
)

// Watch is the simulated NVML load watch: what a healthy GPU of the model
// shows under an FMA load (the software power cap is normal at full load),
// and for load-throttle GPUs the HW slowdown and thermal bits with the SM
// clock down to 60% of its maximum and the temperature at the slowdown
// threshold.
func (d *Driver) Watch(_ context.Context, indexes []int) func() map[int]state.LoadWatch {
	start := time.Now()
	return func() map[int]state.LoadWatch {
		n := max(int(time.Since(start).Seconds()*samplesPerSecond), minSimulatedSample)
		out := map[int]state.LoadWatch{}
		for _, i := range indexes {
			w := state.LoadWatch{Samples: n, MinSMClockMHz: d.fig.LoadClockMHz, MaxSMClockMHz: d.fig.MaxClockMHz,
				MaxClockMHz: d.fig.MaxClockMHz, MaxPowerW: d.fig.LoadPowerW, MaxTempC: d.fig.LoadTempC,
				ThrottleReasons: reasonSwPowerCap}
			if d.throttled[i] {
				w.MinSMClockMHz = d.fig.MaxClockMHz * 6 / 10
				w.ThrottleReasons |= reasonHwSlowdown | reasonSwThermal | reasonHwThermal
				w.MaxTempC = 90
			}
			out[i] = w
		}
		return out
	}
}
