package nvml

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuprobe/gpuprobe/state"
)

// Sampler reads a job's GPUs at each tick of `gpuprobe job`: the library is
// initialised once for the window and every call runs under the same
// guards as Collect's, so a GPU whose call hung is not called again.
type Sampler struct {
	lib     gonvml.Interface
	sys     *guard
	sysErrs []state.CallError
	devs    []*sampled
}

// Sample and ComputePIDs must not run concurrently with each other: each
// GPU's guard (and its lastSeen timestamp) is used by one tick at a time.

// sampled is one GPU of the sampler: its handle, identity and the state
// the guard files its failures in.
type sampled struct {
	g    *guard
	dev  gonvml.Device
	gpu  state.GPU // Errors, Unsupported, Lost land here
	info state.JobGPU
	// lastSeen is nvmlDeviceGetProcessUtilization's lastSeenTimeStamp:
	// "the CPU timestamp in microseconds at which utilization samples were
	// last read" (nvml.h), wall-clock µs since the epoch as real samples
	// show (1653167163586231 on a V100, Fizzbb/KubernetesNotes
	// gpu/nvml-python/README.md). It starts at the window's start: 0 would
	// return every sample the driver still holds, seconds older than the
	// window and of processes that may have ended.
	lastSeen uint64
	sym      symbols
}

// NewSampler initialises lib and takes handles for the GPUs at these NVML
// indexes (nil: every GPU). A GPU without a handle is still listed, with
// the error.
func NewSampler(ctx context.Context, lib gonvml.Interface, opts Options, indices []int) (*Sampler, error) {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	libName := opts.Library
	if libName == "" {
		libName = fmt.Sprintf("nvml#%d", collections.Add(1))
	}
	s := &Sampler{lib: lib}
	s.sys = &guard{ctx: ctx, timeout: opts.CallTimeout, errs: &s.sysErrs, lib: libName}
	// Entry points newer than the oldest driver we support are called only
	// where the library has them: go-nvml binds symbols lazily, and calling
	// a missing one kills the process in the dynamic linker.
	sym := lookupSymbols(lib)
	start := time.Now()
	ret, o := call(s.sys, "nvmlInit", func() (gonvml.Return, gonvml.Return) {
		r := lib.Init()
		return r, r
	})
	if o != ok {
		return nil, fmt.Errorf("NVML: %s", initError(ret, s.sysErrs))
	}
	if indices == nil {
		count, o := call(s.sys, "nvmlDeviceGetCount", lib.DeviceGetCount)
		if o != ok {
			// NOT_SUPPORTED files no error (only failures do): say so
			// rather than index an empty list.
			why := "not supported"
			if n := len(s.sysErrs); n > 0 {
				why = s.sysErrs[n-1].Error
			}
			s.Close()
			return nil, fmt.Errorf("NVML: nvmlDeviceGetCount: %s", why)
		}
		for i := 0; i < count; i++ {
			indices = append(indices, i)
		}
	}
	for _, i := range indices {
		d := &sampled{gpu: state.GPU{Index: i}, info: state.JobGPU{Index: i}, sym: sym, lastSeen: uint64(start.UnixMicro())}
		d.g = &guard{ctx: ctx, timeout: opts.CallTimeout, gpu: &d.gpu, errs: &d.gpu.Errors, unsupp: &d.gpu.Unsupported, lib: libName}
		s.devs = append(s.devs, d)
		dev, o := call(d.g, "nvmlDeviceGetHandleByIndex", func() (gonvml.Device, gonvml.Return) { return lib.DeviceGetHandleByIndex(i) })
		if o != ok {
			continue
		}
		d.dev = dev
		if v, o := call(d.g, "nvmlDeviceGetUUID", dev.GetUUID); o == ok {
			d.info.UUID = v
		}
		if v, o := call(d.g, "nvmlDeviceGetName", dev.GetName); o == ok {
			d.info.Name = v
		}
		if v, o := call(d.g, "nvmlDeviceGetPciInfo", dev.GetPciInfo); o == ok {
			d.info.PCIBusID = pciBusID(v)
		}
		if _, total, known := d.memory(); known {
			d.info.MemoryTotalBytes = total
		}
	}
	return s, nil
}

// GPUs are the sampled GPUs' identities and what failed so far; Samples is
// empty (the caller collects Sample's results).
func (s *Sampler) GPUs() []state.JobGPU {
	out := make([]state.JobGPU, len(s.devs))
	for i, d := range s.devs {
		g := d.info
		g.Unsupported = dedupe(d.gpu.Unsupported)
		g.Errors = append([]state.CallError(nil), d.gpu.Errors...)
		out[i] = g
	}
	return out
}

// nvlinkAllLinks is the scopeId that sums a field over every link (nvml.h:
// "A scopeId of UINT_MAX returns aggregate value summed up across all links").
const nvlinkAllLinks = math.MaxUint32

// Sample reads one tick of every GPU, in GPUs() order. The GPUs are read
// side by side, as Collect reads them: one GPU's two 20 ms PCIe windows (or
// a hung call's timeout) do not delay the next GPU's reading, so a tick's
// samples are taken at nearly the same time. ctx bounds this tick's calls.
func (s *Sampler) Sample(ctx context.Context) []state.GPUSample {
	out := make([]state.GPUSample, len(s.devs))
	var wg sync.WaitGroup
	for i, d := range s.devs {
		out[i] = state.GPUSample{At: time.Now().UTC()}
		if d.dev == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.use(ctx)
			d.sample(&out[i])
			// NOT_SUPPORTED is filed at every tick; keep each name once so
			// a long window does not grow the list.
			d.gpu.Unsupported = dedupe(d.gpu.Unsupported)
			d.gpu.Errors = dedupeErrors(d.gpu.Errors)
		}()
	}
	wg.Wait()
	return out
}

// use makes ctx bound the GPU's next calls (nil keeps NewSampler's).
func (d *sampled) use(ctx context.Context) {
	if ctx != nil {
		d.g.ctx = ctx
	}
}

// memory reads used and total framebuffer: nvmlDeviceGetMemoryInfo_v2 where
// the library has it (its "used" leaves out the driver's reservation, as
// the node collection's state.Memory does), else nvmlDeviceGetMemoryInfo.
func (d *sampled) memory() (used, total uint64, known bool) {
	if d.sym["nvmlDeviceGetMemoryInfo_v2"] {
		m, o := call(d.g, "nvmlDeviceGetMemoryInfo_v2", d.dev.GetMemoryInfo_v2)
		if o == ok {
			return m.Used, m.Total, true
		}
		if o != unsupported {
			return 0, 0, false
		}
		d.gpu.Unsupported = d.gpu.Unsupported[:len(d.gpu.Unsupported)-1] // fall back quietly
	}
	m, o := call(d.g, "nvmlDeviceGetMemoryInfo", d.dev.GetMemoryInfo)
	return m.Used, m.Total, o == ok
}

func (d *sampled) sample(smp *state.GPUSample) {
	dev := d.dev
	if u, o := call(d.g, "nvmlDeviceGetUtilizationRates", dev.GetUtilizationRates); o == ok {
		gpu, mem := u.Gpu, u.Memory
		smp.UtilGPUPercent, smp.UtilMemoryPercent = &gpu, &mem
	}
	if used, _, known := d.memory(); known {
		smp.MemoryUsedBytes = &used
	}
	// Each PCIe throughput call blocks for the driver's 20 ms counting
	// window (nvml.h, nvmlDeviceGetPcieThroughput: "querying a byte counter
	// over a 20ms interval and thus is the PCIe throughput over that
	// interval"): 40 ms per GPU per tick, which is why GPUs are read side by
	// side.
	if v, o := call(d.g, "nvmlDeviceGetPcieThroughput", func() (uint32, gonvml.Return) { return dev.GetPcieThroughput(gonvml.PCIE_UTIL_TX_BYTES) }); o == ok {
		smp.PCIeTxKBps = &v
	}
	if v, o := call(d.g, "nvmlDeviceGetPcieThroughput", func() (uint32, gonvml.Return) { return dev.GetPcieThroughput(gonvml.PCIE_UTIL_RX_BYTES) }); o == ok {
		smp.PCIeRxKBps = &v
	}
	d.nvlink(smp)
	if mw, o := call(d.g, "nvmlDeviceGetPowerUsage", dev.GetPowerUsage); o == ok {
		w := float64(mw) / 1000
		smp.PowerWatts = &w
	}
	if mw, o := call(d.g, "nvmlDeviceGetEnforcedPowerLimit", dev.GetEnforcedPowerLimit); o == ok {
		w := float64(mw) / 1000
		smp.PowerLimitWatts = &w
	}
	if v, o := call(d.g, "nvmlDeviceGetTemperature", func() (uint32, gonvml.Return) { return dev.GetTemperature(gonvml.TEMPERATURE_GPU) }); o == ok {
		smp.TempC = &v
	}
	if v, o := call(d.g, "nvmlDeviceGetClockInfo", func() (uint32, gonvml.Return) { return dev.GetClockInfo(gonvml.CLOCK_SM) }); o == ok {
		smp.SMClockMHz = &v
	}
	if v, o := call(d.g, "nvmlDeviceGetMaxClockInfo", func() (uint32, gonvml.Return) { return dev.GetMaxClockInfo(gonvml.CLOCK_SM) }); o == ok {
		smp.MaxSMClockMHz = &v
	}
	// The clocks-event call replaced the throttle-reasons one (same mask);
	// an older driver has only the latter.
	name, f := "nvmlDeviceGetCurrentClocksThrottleReasons", dev.GetCurrentClocksThrottleReasons
	if d.sym["nvmlDeviceGetCurrentClocksEventReasons"] {
		name, f = "nvmlDeviceGetCurrentClocksEventReasons", dev.GetCurrentClocksEventReasons
	}
	if v, o := call(d.g, name, f); o == ok {
		smp.ClockEventMask = &v
	}
	d.processUtil(smp)
}

// nvlink reads the NVLink data counters summed over links: nvml.h (go-nvml
// v0.13.4-0, pkg/nvml/nvml.h) defines NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX
// 138 and _RX 139, "NVLink TX/RX Data throughput in KiB", and "a scopeId of
// UINT_MAX returns aggregate value summed up across all links". They are
// counters since the driver loaded, turned into bytes here; a field the GPU
// lacks (no NVLink, or a driver older than the field) answers in its own
// nvmlReturn and is filed as unsupported under the field's name.
func (d *sampled) nvlink(smp *state.GPUSample) {
	vals := []gonvml.FieldValue{
		{FieldId: gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: nvlinkAllLinks},
		{FieldId: gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ScopeId: nvlinkAllLinks},
	}
	names := []string{"NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX", "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX"}
	if _, o := call(d.g, "nvmlDeviceGetFieldValues", func() (struct{}, gonvml.Return) { return struct{}{}, d.dev.GetFieldValues(vals) }); o != ok {
		return
	}
	var got [2]*uint64
	for i, v := range vals {
		switch ret := gonvml.Return(v.NvmlReturn); ret {
		case gonvml.SUCCESS:
		case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_INVALID_ARGUMENT:
			// INVALID_ARGUMENT: a driver that does not know the field ID.
			d.gpu.Unsupported = append(d.gpu.Unsupported, names[i])
			continue
		default:
			d.g.fail(names[i], returnString(ret), false)
			continue
		}
		kib, known := fieldUint(v)
		if !known {
			continue
		}
		b := kib * 1024
		got[i] = &b
	}
	smp.NVLinkTxBytes, smp.NVLinkRxBytes = got[0], got[1]
}

// fieldUint reads an unsigned field value of whatever width NVML says.
// fieldInt is a field value of a signed or small unsigned type as an int64.
func fieldInt(v gonvml.FieldValue) (int64, bool) {
	switch gonvml.ValueType(v.ValueType) {
	case gonvml.VALUE_TYPE_SIGNED_INT:
		return int64(int32(binary.NativeEndian.Uint32(v.Value[:4]))), true
	case gonvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return int64(binary.NativeEndian.Uint64(v.Value[:])), true
	case gonvml.VALUE_TYPE_UNSIGNED_INT, gonvml.VALUE_TYPE_UNSIGNED_SHORT:
		u, ok := fieldUint(v)
		return int64(u), ok
	}
	return 0, false
}

func fieldUint(v gonvml.FieldValue) (uint64, bool) {
	switch gonvml.ValueType(v.ValueType) {
	case gonvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.NativeEndian.Uint32(v.Value[:4])), true
	case gonvml.VALUE_TYPE_UNSIGNED_LONG, gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return binary.NativeEndian.Uint64(v.Value[:]), true
	case gonvml.VALUE_TYPE_UNSIGNED_SHORT:
		return uint64(binary.NativeEndian.Uint16(v.Value[:2])), true
	}
	return 0, false
}

// processUtil reads per-process SM and memory utilisation for the driver's
// samples since the last tick. NOT_FOUND is "no sample since then" (nvml.h),
// an empty list rather than an error.
func (d *sampled) processUtil(smp *state.GPUSample) {
	if d.g.stopped != "" {
		return
	}
	since := d.lastSeen
	type res struct {
		s   []gonvml.ProcessUtilizationSample
		ret gonvml.Return
	}
	r, o := call(d.g, "nvmlDeviceGetProcessUtilization", func() (res, gonvml.Return) {
		s, ret := d.dev.GetProcessUtilization(since)
		if ret == gonvml.ERROR_NOT_FOUND {
			return res{ret: ret}, gonvml.SUCCESS
		}
		return res{s: s, ret: ret}, ret
	})
	if o != ok {
		return
	}
	byPID := map[uint32]state.ProcessUtil{}
	for _, p := range r.s {
		if p.TimeStamp > d.lastSeen {
			d.lastSeen = p.TimeStamp
		}
		cur := byPID[p.Pid]
		cur.PID = p.Pid
		cur.SMUtilPercent = max(cur.SMUtilPercent, p.SmUtil)
		cur.MemUtilPercent = max(cur.MemUtilPercent, p.MemUtil)
		byPID[p.Pid] = cur
	}
	for _, p := range byPID {
		smp.Processes = append(smp.Processes, p)
	}
	sort.Slice(smp.Processes, func(i, j int) bool { return smp.Processes[i].PID < smp.Processes[j].PID })
}

// ComputePIDs lists, per GPU, the running compute processes.
func (s *Sampler) ComputePIDs(ctx context.Context) [][]uint32 {
	out := make([][]uint32, len(s.devs))
	for i, d := range s.devs {
		if d.dev == nil {
			continue
		}
		d.use(ctx)
		if ps, o := call(d.g, "nvmlDeviceGetComputeRunningProcesses", d.dev.GetComputeRunningProcesses); o == ok {
			for _, p := range ps {
				out[i] = append(out[i], p.Pid)
			}
		}
	}
	return out
}

// Close shuts the library down, unless a call hung (Shutdown would too).
func (s *Sampler) Close() {
	if s.sys.stopped != "" {
		return
	}
	for _, d := range s.devs {
		if d.g.stopped != "" && !d.gpu.Lost && len(d.gpu.Errors) > 0 && d.gpu.Errors[len(d.gpu.Errors)-1].Timeout {
			return
		}
	}
	call(s.sys, "nvmlShutdown", func() (gonvml.Return, gonvml.Return) {
		r := s.lib.Shutdown()
		return r, r
	})
}

func dedupe(l []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range l {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// dedupeErrors keeps the first of each (call, error): a call that fails the
// same way at every tick is one finding, not one per tick.
func dedupeErrors(l []state.CallError) []state.CallError {
	out := l[:0]
	seen := map[state.CallError]bool{}
	for _, e := range l {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// MIGEnabled initialises lib, lists the GPUs whose current MIG mode is
// enabled (nvmlDeviceGetMigMode), and shuts it down. `gpuprobe job` asks
// before it takes Slurm's GPU numbers: on a node with MIG on, Slurm numbers
// GRES records, one per MIG instance, not GPUs. A GPU that answers
// NOT_SUPPORTED (before Ampere) has no MIG. An error says which call
// failed; what was listed before it is returned with it. initialised is
// false when nvmlInit failed: the library must not be called again.
func MIGEnabled(ctx context.Context, lib gonvml.Interface, opts Options) (enabled []int, initialised bool, err error) {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	libName := opts.Library
	if libName == "" {
		libName = fmt.Sprintf("nvml#%d", collections.Add(1))
	}
	var errs []state.CallError
	sys := &guard{ctx: ctx, timeout: opts.CallTimeout, errs: &errs, lib: libName}
	ret, o := call(sys, "nvmlInit", func() (gonvml.Return, gonvml.Return) {
		r := lib.Init()
		return r, r
	})
	if o != ok {
		return nil, false, fmt.Errorf("NVML: %s", initError(ret, errs))
	}
	count, o := call(sys, "nvmlDeviceGetCount", lib.DeviceGetCount)
	for i := 0; o == ok && i < count; i++ {
		gpu := state.GPU{Index: i}
		g := &guard{ctx: ctx, timeout: opts.CallTimeout, gpu: &gpu, errs: &errs, unsupp: &gpu.Unsupported, lib: libName}
		dev, o := call(g, "nvmlDeviceGetHandleByIndex", func() (gonvml.Device, gonvml.Return) { return lib.DeviceGetHandleByIndex(i) })
		if o != ok {
			continue
		}
		if v, o := call(g, "nvmlDeviceGetMigMode", two(dev.GetMigMode)); o == ok && v.a == gonvml.DEVICE_MIG_ENABLE {
			enabled = append(enabled, i)
		}
	}
	hung := false
	for _, e := range errs {
		hung = hung || e.Timeout
	}
	if !hung { // after a hung call Shutdown would hang too
		call(sys, "nvmlShutdown", func() (gonvml.Return, gonvml.Return) {
			r := lib.Shutdown()
			return r, r
		})
	}
	if len(errs) > 0 {
		return enabled, true, fmt.Errorf("NVML: %s: %s", errs[0].Call, errs[0].Error)
	}
	return enabled, true, nil
}
