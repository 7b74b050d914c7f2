package verify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/state"
)

// Tiers.
const (
	TierQuick   = "quick"
	TierDefault = "default"
)

// MiB and GiB are byte counts.
const (
	MiB = int64(1) << 20
	GiB = int64(1) << 30
)

// Plan is what one tier measures: sizes, iterations and time. The figures
// are chosen so that an 8-GPU node fits the tier's budget on real hardware
// with room to spare (docs/verify.md, "Tiers", does the arithmetic).
type Plan struct {
	// Budget bounds the whole run (--duration replaces it).
	Budget time.Duration
	// CopyBytes × CopyIters per direction per GPU (pinned host ↔ device).
	CopyBytes int64
	CopyIters int
	// D2DBytes × D2DIters per GPU (two buffers of D2DBytes each).
	D2DBytes int64
	D2DIters int
	// PeerBytes × PeerIters per pair; AllOrdered measures both directions
	// of every pair, else each unordered pair once (lower ordinal first).
	PeerBytes  int64
	PeerIters  int
	AllOrdered bool
	// Compute is the FMA load's device time, all GPUs at once.
	Compute time.Duration
	// MemTestBytes per GPU, capped by the memory fraction.
	MemTestBytes int64
}

// PlanFor returns the plan of a tier ("" is the default tier).
//
// quick (≤ 30 s on 8 GPUs, for a Prolog): 256 MiB × 8 per copy direction is
// 2 GiB, 40 ms at Gen5's ~53 GB/s; 28 unordered pairs × 2 GiB at NVLink4's
// ~380 GB/s is 0.15 s (8 s over PCIe Gen4 at ~26 GB/s); a 3 s compute load
// on all GPUs at once; 1 GiB pattern test per GPU. Context creation (about
// 0.5 s per GPU on a real node) and pinned allocations dominate: ~10–15 s.
//
// default (≤ 2 min): 1 GiB × 10 per direction, every ordered pair (56 on 8
// GPUs), a 20 s compute load (long enough for clocks and temperature to
// settle: a GPU that throttles only when hot shows it), 8 GiB pattern test.
func PlanFor(tier string) (Plan, error) {
	switch tier {
	case TierQuick:
		return Plan{Budget: 30 * time.Second, CopyBytes: 256 * MiB, CopyIters: 8, D2DBytes: 512 * MiB, D2DIters: 10,
			PeerBytes: 256 * MiB, PeerIters: 8, Compute: 3 * time.Second, MemTestBytes: 1 * GiB}, nil
	case TierDefault, "":
		return Plan{Budget: 2 * time.Minute, CopyBytes: 1 * GiB, CopyIters: 10, D2DBytes: 2 * GiB, D2DIters: 20,
			PeerBytes: 1 * GiB, PeerIters: 10, AllOrdered: true, Compute: 20 * time.Second, MemTestBytes: 8 * GiB}, nil
	}
	return Plan{}, fmt.Errorf("unknown verify tier %q (quick or default)", tier)
}

// LoadWatcher samples NVML for the GPUs at these NVML indexes while the
// compute load runs: it starts at once and stop, called when the load
// ends, returns what each GPU showed (clocks, power, temperature, clock
// event reasons, ECC growth, XIDs, lost). A nil LoadWatcher records no load
// watch, and the compute verdict says the load was not watched.
type LoadWatcher func(ctx context.Context, indexes []int) (stop func() map[int]state.LoadWatch)

// Options bound a run.
type Options struct {
	// Tier is TierQuick or TierDefault.
	Tier string
	// Duration bounds the whole run (0: the tier's budget). The compute load
	// shrinks to a quarter of it when the tier's would not fit.
	Duration time.Duration
	// MaxMemoryFraction is the share of each GPU's memory verify may hold
	// at once (0: DefaultMaxMemoryFraction); buffers shrink to fit it.
	MaxMemoryFraction float64
	// CallTimeout bounds each driver call beyond the device time it is
	// asked for (0: DefaultCallTimeout). A call that overruns is an error
	// naming the call, and the driver is not called again in this run.
	CallTimeout time.Duration
	// GPUs are the NVML indexes to measure; nil measures every GPU.
	GPUs []int
	// Refuse names NVML indexes verify must not touch, with why (another
	// user's processes on the GPU); they are listed in Verify.Refused.
	Refuse map[int]string
	// NVMLIndex maps a canonical PCI bus id (internal/busid) to the NVML
	// index of the same GPU: CUDA ordinals follow CUDA_VISIBLE_DEVICES and
	// CUDA_DEVICE_ORDER, NVML indexes do not.
	NVMLIndex map[string]int
	// Watch samples NVML during the compute load (nil: not watched).
	Watch LoadWatcher
	// Registry keeps the hung calls (nil: deadline.Default).
	Registry *deadline.Registry
}

// Defaults.
const (
	DefaultMaxMemoryFraction = 0.5
	DefaultCallTimeout       = 30 * time.Second
)

// errHung marks a call that did not return: the run stops and the driver is
// not called again (not even Close: it would queue behind the stuck call).
var errHung = errors.New("hung")

// run is one verify run's shared state.
type run struct {
	drv   Driver
	opts  Options
	plan  Plan
	reg   *deadline.Registry
	v     *state.Verify
	mu    sync.Mutex
	hung  bool
	devs  []target
	start time.Time
}

// target is a GPU the run measures.
type target struct {
	dev   Device
	index int // NVML index, -1 unknown
}

func (t target) label() string {
	if t.index >= 0 {
		return fmt.Sprintf("GPU %d (%s)", t.index, t.dev.PCIBusID)
	}
	return fmt.Sprintf("CUDA device %d (%s)", t.dev.Ordinal, t.dev.PCIBusID)
}

// Run measures the node through drv and returns the facts. It owns drv:
// Run closes it when done, except after a call hung (Close would wait behind
// it). ctx bounds the run together with opts.Duration.
func Run(ctx context.Context, drv Driver, opts Options) *state.Verify {
	plan, err := PlanFor(opts.Tier)
	v := &state.Verify{Source: "measured", Tier: opts.Tier, Started: time.Now().UTC()}
	if v.Tier == "" {
		v.Tier = TierDefault
	}
	if err != nil {
		v.Error = err.Error()
		return v
	}
	if drv == nil {
		v.Error = "no CUDA driver"
		return v
	}
	v.Driver = drv.Describe()
	if opts.Duration > 0 {
		plan.Budget = opts.Duration
		if plan.Compute > opts.Duration/4 {
			plan.Compute = opts.Duration / 4
		}
	}
	if opts.MaxMemoryFraction <= 0 || opts.MaxMemoryFraction > 1 {
		opts.MaxMemoryFraction = DefaultMaxMemoryFraction
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	r := &run{drv: drv, opts: opts, plan: plan, reg: opts.Registry, v: v, start: time.Now()}
	if r.reg == nil {
		r.reg = &deadline.Default
	}
	ctx, cancel := context.WithTimeout(ctx, plan.Budget)
	defer cancel()
	r.measure(ctx)
	v.Took = time.Since(r.start)
	if !r.hung {
		if _, err := deadline.DoIn(r.reg, context.Background(), "cuda", opts.CallTimeout, func() (struct{}, error) { return struct{}{}, drv.Close() }); err != nil {
			v.Notes = append(v.Notes, "closing the CUDA driver: "+err.Error())
		}
	}
	return v
}

func (r *run) measure(ctx context.Context) {
	devs, err := call(r, ctx, "cuda", "cuDeviceGet (Devices)", 0, func(ctx context.Context) ([]Device, error) { return r.drv.Devices(ctx) })
	if err != nil {
		r.v.Error = err.Error()
		return
	}
	if len(devs) == 0 {
		r.v.Error = "the CUDA driver sees no GPU (CUDA_VISIBLE_DEVICES, or no device file open to this process)"
		return
	}
	want := map[int]bool{}
	for _, i := range r.opts.GPUs {
		want[i] = true
	}
	for _, d := range devs {
		idx := -1
		if i, ok := r.opts.NVMLIndex[busid.Canonical(d.PCIBusID)]; ok {
			idx = i
		}
		r.v.Devices = append(r.v.Devices, state.VerifyDevice{Ordinal: d.Ordinal, Index: idx, Name: d.Name, PCIBusID: d.PCIBusID, TotalMemory: d.TotalMemory})
		if why, refused := r.opts.Refuse[idx]; refused && idx >= 0 {
			r.v.Refused = append(r.v.Refused, fmt.Sprintf("GPU %d (%s): %s", idx, d.PCIBusID, why))
			continue
		}
		if r.opts.GPUs != nil && !want[idx] {
			continue // not asked for (a GPU NVML does not know is never asked for by index)
		}
		r.devs = append(r.devs, target{dev: d, index: idx})
	}
	if len(r.devs) == 0 {
		r.v.Error = "no GPU left to measure (every GPU refused or not selected)"
		return
	}
	steps := []struct {
		name string
		f    func(context.Context)
	}{
		{"host-device copies", r.hostCopies},
		{"device copies", r.deviceCopies},
		{"peer copies", r.peerCopies},
		{"compute load", r.compute},
		{"memory pattern test", r.memTest},
	}
	for _, s := range steps {
		if r.stopped() {
			return
		}
		if ctx.Err() != nil {
			r.v.Error = fmt.Sprintf("the run's %s were spent before the %s: not measured", r.plan.Budget, s.name)
			return
		}
		s.f(ctx)
	}
}

func (r *run) stopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hung
}

// call runs one driver call under the deadline: the time asked of the
// device plus CallTimeout. A call that does not answer marks the run hung:
// its error names the call and the GPU, and nothing is called after it.
func call[T any](r *run, ctx context.Context, source, what string, device time.Duration, f func(context.Context) (T, error)) (T, error) {
	var zero T
	if r.stopped() {
		return zero, fmt.Errorf("%s: not called: an earlier call hung", what)
	}
	// The driver gets the call's own deadline, the same as deadline.DoIn's
	// bound: a driver that tracks its calls (package cuda) then knows the
	// moment one overstays, and refuses every call after it.
	timeout := device + r.opts.CallTimeout
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := deadline.DoIn(r.reg, ctx, source, timeout, func() (T, error) { return f(cctx) })
	if err != nil {
		if errors.Is(err, deadline.ErrTimeout) || errors.Is(err, deadline.ErrBusy) {
			r.mu.Lock()
			first := !r.hung
			r.hung = true
			r.mu.Unlock()
			err = fmt.Errorf("%s: %w: %w", what, errHung, err)
			if p, ok := r.drv.(interface{ Poisoned() error }); ok {
				if perr := p.Poisoned(); perr != nil {
					err = fmt.Errorf("%w (the driver: %v)", err, perr)
				}
			}
			if first {
				r.mu.Lock()
				r.v.Error = err.Error() + "; the driver was not called again"
				r.mu.Unlock()
			}
			return zero, err
		}
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// fit shrinks a buffer so that n of them take at most the memory fraction
// of the GPU (whole MiB; at least 1 MiB).
func (r *run) fit(d Device, bytes int64, n int) int64 {
	if d.TotalMemory == 0 {
		return bytes
	}
	limit := int64(float64(d.TotalMemory)*r.opts.MaxMemoryFraction) / int64(n)
	if bytes > limit {
		bytes = limit / MiB * MiB
	}
	return max(bytes, MiB)
}

func gbps(bytes int64, iters int, took time.Duration) float64 {
	if took <= 0 {
		return 0
	}
	return float64(bytes) * float64(iters) / took.Seconds() / 1e9
}

func (r *run) add(m state.Measurement) {
	r.mu.Lock()
	r.v.Measurements = append(r.v.Measurements, m)
	r.mu.Unlock()
}

type copyFunc func(ctx context.Context, dev int, bytes int64, iters int) (time.Duration, error)

// copyOnce measures one copy kind on one GPU: an untimed single iteration
// first (the driver's first copy of a buffer pays for mapping it), then the
// timed ones.
func (r *run) copyOnce(ctx context.Context, t target, kind, api string, f copyFunc, bytes int64, iters int) {
	if r.stopped() {
		return // nothing is called after a hung call; verify.run names it
	}
	m := state.Measurement{Kind: kind, GPU: t.index, Peer: -1, Bytes: bytes, Iterations: iters, Unit: "GB/s"}
	what := api + " on " + t.label()
	src := "cuda:" + t.dev.PCIBusID
	if _, err := call(r, ctx, src, what, 0, func(ctx context.Context) (time.Duration, error) { return f(ctx, t.dev.Ordinal, bytes, 1) }); err != nil {
		m.Error = err.Error()
		r.add(m)
		return
	}
	took, err := call(r, ctx, src, what, 0, func(ctx context.Context) (time.Duration, error) { return f(ctx, t.dev.Ordinal, bytes, iters) })
	if err != nil {
		m.Error = err.Error()
	} else {
		m.Value = gbps(bytes, iters, took)
	}
	r.add(m)
}

// hostCopies measures each GPU's host link alone, one GPU at a time, as
// nvbandwidth's host_to_device_memcpy_ce does: GPUs under one PCIe switch
// or root port would share it if measured together.
func (r *run) hostCopies(ctx context.Context) {
	for _, t := range r.devs {
		b := r.fit(t.dev, r.plan.CopyBytes, 1)
		r.copyOnce(ctx, t, state.MeasureH2D, "cuMemcpyHtoD", r.drv.CopyHostToDevice, b, r.plan.CopyIters)
		r.copyOnce(ctx, t, state.MeasureD2H, "cuMemcpyDtoH", r.drv.CopyDeviceToHost, b, r.plan.CopyIters)
	}
}

func (r *run) deviceCopies(ctx context.Context) {
	for _, t := range r.devs {
		b := r.fit(t.dev, r.plan.D2DBytes, 2)
		r.copyOnce(ctx, t, state.MeasureD2D, "cuMemcpyDtoD", r.drv.CopyDeviceToDevice, b, r.plan.D2DIters)
	}
}

// peerCopies measures GPU pairs: every ordered pair in the default tier,
// each unordered pair once (lower NVML index → higher) in the quick tier,
// where a link slow in one direction only is the rarer fault and the pairs
// double the time.
func (r *run) peerCopies(ctx context.Context) {
	ts := append([]target(nil), r.devs...)
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].index < ts[j].index })
	for i, a := range ts {
		for j, b := range ts {
			if i == j || !r.plan.AllOrdered && j < i {
				continue
			}
			if r.stopped() || ctx.Err() != nil {
				return
			}
			r.peer(ctx, a, b)
		}
	}
}

func (r *run) peer(ctx context.Context, a, b target) {
	bytes := min(r.fit(a.dev, r.plan.PeerBytes, 1), r.fit(b.dev, r.plan.PeerBytes, 1))
	m := state.Measurement{Kind: state.MeasurePeer, GPU: a.index, Peer: b.index, Bytes: bytes, Iterations: r.plan.PeerIters, Unit: "GB/s"}
	pair := fmt.Sprintf("%s → %s", a.label(), b.label())
	src := "cuda:" + a.dev.PCIBusID
	can, err := call(r, ctx, src, "cuDeviceCanAccessPeer on "+pair, 0, func(ctx context.Context) (bool, error) { return r.drv.CanAccessPeer(ctx, a.dev.Ordinal, b.dev.Ordinal) })
	if err != nil {
		m.Error = err.Error()
		r.add(m)
		return
	}
	m.Path = "p2p"
	if !can {
		m.Path = "p2p-unsupported"
	}
	what := "cuMemcpyPeer on " + pair
	f := func(iters int) func(context.Context) (time.Duration, error) {
		return func(ctx context.Context) (time.Duration, error) {
			return r.drv.CopyPeer(ctx, a.dev.Ordinal, b.dev.Ordinal, bytes, iters)
		}
	}
	if _, err := call(r, ctx, src, what, 0, f(1)); err != nil {
		m.Error = err.Error()
		r.add(m)
		return
	}
	took, err := call(r, ctx, src, what, 0, f(r.plan.PeerIters))
	if err != nil {
		m.Error = err.Error()
	} else {
		m.Value = gbps(bytes, r.plan.PeerIters, took)
	}
	r.add(m)
}

// compute loads every GPU at once, as a job does: power and heat are the
// node's, and a GPU that throttles only when its neighbours are hot shows it.
func (r *run) compute(ctx context.Context) {
	d := r.plan.Compute
	if left := time.Until(deadlineOf(ctx)) - time.Second; left < d*2 {
		d = max(left/2, 100*time.Millisecond) // leave room for the memory test
	}
	var stop func() map[int]state.LoadWatch
	var indexes []int
	for _, t := range r.devs {
		if t.index >= 0 {
			indexes = append(indexes, t.index)
		}
	}
	if r.opts.Watch != nil {
		stop = r.opts.Watch(ctx, indexes)
	}
	ms := make([]state.Measurement, len(r.devs))
	var wg sync.WaitGroup
	for i, t := range r.devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := state.Measurement{Kind: state.MeasureCompute, GPU: t.index, Peer: -1, Unit: "TFLOP/s"}
			type res struct {
				flops float64
				took  time.Duration
			}
			out, err := call(r, ctx, "cuda:"+t.dev.PCIBusID, "cuLaunchKernel (FMA load) on "+t.label(), d, func(ctx context.Context) (res, error) {
				f, took, err := r.drv.Compute(ctx, t.dev.Ordinal, d)
				return res{f, took}, err
			})
			if err != nil {
				m.Error = err.Error()
			} else if out.took > 0 {
				m.Value = out.flops / out.took.Seconds() / 1e12
			}
			ms[i] = m
		}()
	}
	wg.Wait()
	var watched map[int]state.LoadWatch
	if stop != nil {
		watched = stop()
	}
	for _, m := range ms {
		if w, ok := watched[m.GPU]; ok && m.GPU >= 0 {
			m.Load = &w
		}
		r.add(m)
	}
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Hour)
}

// memTest runs the pattern test on every GPU at once (each on its own
// memory: nothing is shared).
func (r *run) memTest(ctx context.Context) {
	ms := make([]state.Measurement, len(r.devs))
	var wg sync.WaitGroup
	for i, t := range r.devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := r.fit(t.dev, r.plan.MemTestBytes, 1)
			m := state.Measurement{Kind: state.MeasureMemTest, GPU: t.index, Peer: -1, Bytes: b, Iterations: 1, Unit: "mismatches"}
			n, err := call(r, ctx, "cuda:"+t.dev.PCIBusID, "memory pattern test (cuLaunchKernel) on "+t.label(), 0, func(ctx context.Context) (int64, error) {
				return r.drv.MemPattern(ctx, t.dev.Ordinal, b)
			})
			if err != nil {
				m.Error = err.Error()
			} else {
				m.Mismatches = n
				m.Value = float64(n)
			}
			ms[i] = m
		}()
	}
	wg.Wait()
	for _, m := range ms {
		r.add(m)
	}
}
