package nvml

import (
	"context"
	"encoding/binary"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	sim "github.com/gpuprobe/gpuprobe/sim/nvml"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	"github.com/gpuprobe/gpuprobe/state"
)

// bareH100 is go-nvml's dgxh100 mock with every unset call NOT_SUPPORTED,
// and set(i, dev) applied to each device.
func bareH100(set func(i int, d *server.Device)) *server.Server {
	srv := dgxh100.New()
	for i, d := range srv.Devices {
		dev := d.(*server.Device)
		if set != nil {
			set(i, dev)
		}
		sim.FillNotSupported(&dev.Device)
	}
	sim.FillNotSupported(&srv.Interface)
	return srv
}

func TestSamplerReadsAndConvertsUnits(t *testing.T) {
	srv := bareH100(func(i int, d *server.Device) {
		d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
			var p gonvml.PciInfo
			for k, c := range "00000000:19:00.0" {
				p.BusId[k] = int8(c)
			}
			return p, gonvml.SUCCESS
		}
		d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
			return gonvml.Utilization{Gpu: uint32(10 * i), Memory: 5}, gonvml.SUCCESS
		}
		d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 654321, gonvml.SUCCESS }         // mW
		d.GetEnforcedPowerLimitFunc = func() (uint32, gonvml.Return) { return 700000, gonvml.SUCCESS } // mW
		d.GetPcieThroughputFunc = func(c gonvml.PcieUtilCounter) (uint32, gonvml.Return) {
			if c == gonvml.PCIE_UTIL_TX_BYTES {
				return 111, gonvml.SUCCESS
			}
			return 222, gonvml.SUCCESS
		}
		d.GetFieldValuesFunc = func(v []gonvml.FieldValue) gonvml.Return {
			for k := range v {
				if v[k].ScopeId != 0xffffffff {
					return gonvml.ERROR_INVALID_ARGUMENT // the sum over all links was not asked for
				}
				v[k].ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
				binary.NativeEndian.PutUint64(v[k].Value[:], uint64(3+k)) // KiB
			}
			return gonvml.SUCCESS
		}
		// The driver's sample buffer, µs since the epoch: pid 41 ran 5 s
		// before the window (a process that has ended), pid 42 in it.
		now := uint64(time.Now().UnixMicro())
		buffer := []gonvml.ProcessUtilizationSample{
			{Pid: 41, TimeStamp: now - 5_000_000, SmUtil: 100, MemUtil: 100},
			{Pid: 42, TimeStamp: now + 1_000_000, SmUtil: 80, MemUtil: 30},
			{Pid: 42, TimeStamp: now + 2_000_000, SmUtil: 90, MemUtil: 20},
		}
		d.GetProcessUtilizationFunc = func(since uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
			var out []gonvml.ProcessUtilizationSample // nvml.h: "only samples with timestamp greater than lastSeenTimeStamp"
			for _, b := range buffer {
				if b.TimeStamp > since {
					out = append(out, b)
				}
			}
			if len(out) == 0 {
				return nil, gonvml.ERROR_NOT_FOUND // nothing new: an empty list, no error
			}
			return out, gonvml.SUCCESS
		}
	})
	s, err := NewSampler(context.Background(), srv, Options{CallTimeout: time.Second}, []int{2, 5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gpus := s.GPUs()
	if len(gpus) != 2 || gpus[0].Index != 2 || gpus[1].Index != 5 || !strings.HasPrefix(gpus[0].UUID, "GPU-") || gpus[0].MemoryTotalBytes == 0 || gpus[0].PCIBusID != "0000:19:00.0" {
		t.Fatalf("GPUs %+v", gpus)
	}
	first := s.Sample(context.Background())
	second := s.Sample(context.Background())
	g := first[1]
	if *g.UtilGPUPercent != 50 || *g.UtilMemoryPercent != 5 {
		t.Errorf("GPU 5 utilisation %d/%d, want 50/5", *g.UtilGPUPercent, *g.UtilMemoryPercent)
	}
	if *g.PowerWatts != 654.321 || *g.PowerLimitWatts != 700 {
		t.Errorf("power %v of %v W, want 654.321 of 700 (mW converted)", *g.PowerWatts, *g.PowerLimitWatts)
	}
	if *g.PCIeTxKBps != 111 || *g.PCIeRxKBps != 222 {
		t.Errorf("PCIe tx %d rx %d", *g.PCIeTxKBps, *g.PCIeRxKBps)
	}
	if *g.NVLinkTxBytes != 3*1024 || *g.NVLinkRxBytes != 4*1024 {
		t.Errorf("NVLink tx %d rx %d bytes, want 3 and 4 KiB in bytes", *g.NVLinkTxBytes, *g.NVLinkRxBytes)
	}
	if len(g.Processes) != 1 || g.Processes[0].PID != 42 || g.Processes[0].SMUtilPercent != 90 || g.Processes[0].MemUtilPercent != 30 {
		t.Errorf("processes %+v, want pid 42 at its highest 90%% SM, 30%% memory, and not pid 41's samples from before the window", g.Processes)
	}
	if len(second[1].Processes) != 0 {
		t.Errorf("second tick: %+v, want no samples (NOT_FOUND)", second[1].Processes)
	}
	after := s.GPUs()[1]
	if len(after.Errors) != 0 {
		t.Errorf("errors %+v: NOT_FOUND is not one", after.Errors)
	}
	if after.MemoryTotalBytes == 0 || countOf(after.Unsupported, "nvmlDeviceGetClockInfo") != 1 {
		t.Errorf("unsupported %v: each call once, however many ticks", after.Unsupported)
	}
	if g.SMClockMHz != nil {
		t.Error("an unsupported clock read as a value")
	}
}

func countOf(l []string, s string) int {
	n := 0
	for _, x := range l {
		if x == s {
			n++
		}
	}
	return n
}

func TestSamplerLostAndHungGPUs(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var hungCalls atomic.Int32
	srv := bareH100(func(i int, d *server.Device) {
		switch i {
		case 0:
			d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) { return gonvml.Utilization{}, gonvml.ERROR_GPU_IS_LOST }
		case 1:
			d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
				hungCalls.Add(1)
				<-release
				return gonvml.Utilization{}, gonvml.SUCCESS
			}
		default:
			d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) { return gonvml.Utilization{Gpu: 7}, gonvml.SUCCESS }
		}
	})
	s, err := NewSampler(context.Background(), srv, Options{CallTimeout: time.Second}, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 5; k++ {
		got := s.Sample(context.Background())
		if got[0].UtilGPUPercent != nil || got[1].UtilGPUPercent != nil || got[2].UtilGPUPercent == nil || *got[2].UtilGPUPercent != 7 {
			t.Fatalf("tick %d: %+v", k, got)
		}
	}
	if n := hungCalls.Load(); n != 1 {
		t.Errorf("the hung call was made %d times in 5 ticks, want once (each retry strands a thread)", n)
	}
	gpus := s.GPUs()
	if len(gpus[0].Errors) != 1 || !strings.Contains(gpus[0].Errors[0].Error, "lost") {
		t.Errorf("lost GPU errors %+v: want one, then no more calls", gpus[0].Errors)
	}
	if len(gpus[1].Errors) != 1 || !gpus[1].Errors[0].Timeout {
		t.Errorf("hung GPU errors %+v: want one timeout", gpus[1].Errors)
	}
	s.Close() // must not hang on the wedged GPU
}

func TestSamplerInitFailure(t *testing.T) {
	srv := bareH100(nil)
	srv.InitFunc = func() gonvml.Return { return gonvml.ERROR_DRIVER_NOT_LOADED }
	if _, err := NewSampler(context.Background(), srv, Options{}, nil); err == nil || !strings.Contains(err.Error(), "NVML") {
		t.Errorf("error %v, want NVML's reason", err)
	}
}

// A driver older than nvmlDeviceGetCurrentClocksEventReasons (R535) and
// nvmlDeviceGetMemoryInfo_v2: the sampler asks the calls the library has.
// Calling a symbol the library lacks kills the process in the dynamic
// linker, so the newer calls must not be made at all (before, the sampler
// called the events entry point unconditionally).
func TestSamplerOnOlderDriverUsesOlderEntryPoints(t *testing.T) {
	var newerCalled atomic.Int32
	srv := bareH100(func(i int, d *server.Device) {
		d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) {
			newerCalled.Add(1)
			return 0, gonvml.SUCCESS
		}
		d.GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) {
			newerCalled.Add(1)
			return gonvml.Memory_v2{}, gonvml.SUCCESS
		}
		d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, gonvml.Return) { return gonvml.ClocksThrottleReasonSwPowerCap, gonvml.SUCCESS }
		d.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) {
			return gonvml.Memory{Total: 80 << 30, Used: 20 << 30, Free: 60 << 30}, gonvml.SUCCESS
		}
	})
	srv.LookupSymbolFunc = func(name string) error {
		if name == "nvmlDeviceGetCurrentClocksEventReasons" || name == "nvmlDeviceGetMemoryInfo_v2" {
			return gonvml.ERROR_FUNCTION_NOT_FOUND
		}
		return nil
	}
	s, err := NewSampler(context.Background(), srv, Options{CallTimeout: time.Second}, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := s.Sample(context.Background())[0]
	if n := newerCalled.Load(); n != 0 {
		t.Errorf("%d calls to entry points the library lacks", n)
	}
	if got.ClockEventMask == nil || *got.ClockEventMask != gonvml.ClocksThrottleReasonSwPowerCap {
		t.Errorf("clock events %v, want the throttle-reasons mask", got.ClockEventMask)
	}
	if got.MemoryUsedBytes == nil || *got.MemoryUsedBytes != 20<<30 || s.GPUs()[0].MemoryTotalBytes != 80<<30 {
		t.Errorf("memory used %v of %d, want 20 of 80 GiB from nvmlDeviceGetMemoryInfo", got.MemoryUsedBytes, s.GPUs()[0].MemoryTotalBytes)
	}
}

// Memory used is nvmlDeviceGetMemoryInfo_v2's, which leaves out the
// driver's reservation (v1 counts it as used: 551 MiB on an idle H100).
func TestSamplerMemoryUsedExcludesReserved(t *testing.T) {
	srv := bareH100(func(i int, d *server.Device) {
		d.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) {
			return gonvml.Memory{Total: 81559 << 20, Used: 551 << 20}, gonvml.SUCCESS
		}
		d.GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) {
			return gonvml.Memory_v2{Total: 81559 << 20, Reserved: 551 << 20, Used: 0}, gonvml.SUCCESS
		}
	})
	s, err := NewSampler(context.Background(), srv, Options{CallTimeout: time.Second}, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Sample(context.Background())[0].MemoryUsedBytes; got == nil || *got != 0 {
		t.Errorf("used %v, want 0 (the reservation is not the job's)", got)
	}
}

// A GPU without NVLink answers the throughput fields NOT_SUPPORTED in the
// field's own return code: no value, the field named unsupported once
// however many ticks, and no error. A field that fails otherwise is an
// error, filed once.
func TestSamplerNVLinkFieldsUnsupportedAndFailing(t *testing.T) {
	srv := bareH100(func(i int, d *server.Device) {
		d.GetFieldValuesFunc = func(v []gonvml.FieldValue) gonvml.Return {
			for k := range v {
				v[k].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
				if i == 1 && v[k].FieldId == gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX {
					v[k].NvmlReturn = uint32(gonvml.ERROR_UNKNOWN)
				}
			}
			return gonvml.SUCCESS
		}
	})
	s, err := NewSampler(context.Background(), srv, Options{CallTimeout: time.Second}, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for k := 0; k < 4; k++ {
		for _, g := range s.Sample(context.Background()) {
			if g.NVLinkTxBytes != nil || g.NVLinkRxBytes != nil {
				t.Fatalf("tick %d: NVLink values from a field that failed: %+v", k, g)
			}
		}
	}
	gpus := s.GPUs()
	if countOf(gpus[0].Unsupported, "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX") != 1 || countOf(gpus[0].Unsupported, "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX") != 1 || len(gpus[0].Errors) != 0 {
		t.Errorf("GPU 0: unsupported %v errors %v", gpus[0].Unsupported, gpus[0].Errors)
	}
	if len(gpus[1].Errors) != 1 || gpus[1].Errors[0].Call != "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX" {
		t.Errorf("GPU 1 errors %+v, want the RX field's failure once over 4 ticks", gpus[1].Errors)
	}
}

// A cancelled tick makes no call: Sample's context bounds it, not only
// NewSampler's.
func TestSamplerTickContext(t *testing.T) {
	var calls atomic.Int32
	srv := bareH100(func(i int, d *server.Device) {
		d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
			calls.Add(1)
			return gonvml.Utilization{Gpu: 1}, gonvml.SUCCESS
		}
	})
	s, err := NewSampler(context.Background(), srv, Options{CallTimeout: time.Second}, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := s.Sample(ctx)[0]; got.UtilGPUPercent != nil || calls.Load() != 0 {
		t.Errorf("a cancelled tick read %+v in %d calls", got, calls.Load())
	}
}

// The simulated jobs (simulate.JobScenarios) as the sampler reads them: the
// job's GPUs at the table's utilisation (±2, the simulation's jitter) and
// memory, the rank's PID on each GPU that has one, with per-process samples,
// and NVLink counters that advance with the work at a rate an H100 can
// carry. This is what `gpuprobe job --simulate MODEL:job-…` judges.
func TestSamplerOverSimulatedJobs(t *testing.T) {
	for _, sc := range simulate.JobScenarios {
		t.Run(sc.Fault, func(t *testing.T) {
			sys := simSystem(t, "dgx-h100:"+sc.Fault)
			s, err := NewSampler(context.Background(), sys.Lib, Options{CallTimeout: time.Second}, simulate.SimJob.GPUs)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ticks := [][]state.GPUSample{s.Sample(context.Background()), s.Sample(context.Background()), s.Sample(context.Background())}
			pids := s.ComputePIDs(context.Background())
			gpus := s.GPUs()
			for k := range simulate.SimJob.GPUs {
				if len(gpus[k].Errors) != 0 {
					t.Errorf("GPU %d errors %+v", k, gpus[k].Errors)
				}
				for n, tick := range ticks {
					g := tick[k]
					if g.UtilGPUPercent == nil || absDiff(*g.UtilGPUPercent, sc.GPUUtil[k]) > 2 || *g.UtilMemoryPercent != sc.MemUtil[k] {
						t.Errorf("tick %d GPU %d utilisation %v, want %d±2", n, k, g.UtilGPUPercent, sc.GPUUtil[k])
					}
					if pct := float64(*g.MemoryUsedBytes) / float64(gpus[k].MemoryTotalBytes) * 100; pct > float64(sc.GPUMemPercent[k])+1 || pct < float64(sc.GPUMemPercent[k])-2 {
						t.Errorf("GPU %d memory used %.1f%%, want ~%d%%", k, pct, sc.GPUMemPercent[k])
					}
					if *g.PowerWatts > *g.PowerLimitWatts || *g.SMClockMHz > *g.MaxSMClockMHz {
						t.Errorf("GPU %d power %v of %v W, clock %d of %d MHz", k, *g.PowerWatts, *g.PowerLimitWatts, *g.SMClockMHz, *g.MaxSMClockMHz)
					}
				}
				// NVLink: bytes per tick (1 s apart in gpuprobe job): the
				// simulation's ~4 GiB/s at full load, far below H100's
				// 450 GB/s per direction, and nothing on an idle GPU's
				// counters is asked of it here.
				rate := *ticks[2][k].NVLinkTxBytes - *ticks[1][k].NVLinkTxBytes
				if rate > 10<<30 || (sc.GPUUtil[k] > 50 && rate == 0) {
					t.Errorf("GPU %d NVLink %d bytes per tick at %d%% busy", k, rate, sc.GPUUtil[k])
				}
				rank := uint32(simulate.SimJob.RankPIDs[k])
				procs := ticks[1][k].Processes
				// A rank that exited (ExitedRank, 1-based by GPU) left its GPU
				// with no process, as the driver shows it.
				if sc.RanksOnGPU[k] && sc.ExitedRank != k+1 {
					if len(pids[k]) != 1 || pids[k][0] != rank {
						t.Errorf("GPU %d compute PIDs %v, want the rank %d", k, pids[k], rank)
					}
					if len(procs) != 1 || procs[0].PID != rank || procs[0].SMUtilPercent != sc.GPUUtil[k] {
						t.Errorf("GPU %d process samples %+v, want the rank at %d%%", k, procs, sc.GPUUtil[k])
					}
				} else if len(pids[k]) != 0 || len(procs) != 0 {
					t.Errorf("GPU %d without a rank lists %v / %+v", k, pids[k], procs)
				}
			}
		})
	}
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// nvmlDeviceGetCount answering NOT_SUPPORTED (or failing) is an error from
// NewSampler, not a panic: NOT_SUPPORTED files no call error, and the
// sampler indexed the last one of an empty list.
func TestSamplerDeviceCountFails(t *testing.T) {
	for _, ret := range []gonvml.Return{gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_UNKNOWN} {
		srv := bareH100(nil)
		srv.DeviceGetCountFunc = func() (int, gonvml.Return) { return 0, ret }
		s, err := NewSampler(context.Background(), srv, Options{CallTimeout: time.Second}, nil)
		if s != nil || err == nil || !strings.Contains(err.Error(), "nvmlDeviceGetCount") {
			t.Errorf("%v: sampler %v, error %v", ret, s, err)
		}
	}
}

// Each nvmlDeviceGetPcieThroughput blocks 20 ms in the real driver. The
// GPUs of a tick are read side by side, so 8 GPUs cost one GPU's 40 ms,
// not 320 ms (the sampler read them one after another before), and the
// samples of a tick are taken at nearly the same moment. The test counts
// calls in flight at once rather than timing the tick, so a loaded machine
// cannot fail it: read one after another, never more than one is in flight.
func TestSamplerReadsGPUsSideBySide(t *testing.T) {
	var inflight, most atomic.Int32
	srv := bareH100(func(i int, d *server.Device) {
		d.GetPcieThroughputFunc = func(gonvml.PcieUtilCounter) (uint32, gonvml.Return) {
			n := inflight.Add(1)
			defer inflight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(20 * time.Millisecond) // the driver's counting window
			return 1, gonvml.SUCCESS
		}
	})
	s, err := NewSampler(context.Background(), srv, Options{CallTimeout: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	got := s.Sample(context.Background())
	took := time.Since(start)
	if len(got) != 8 || got[7].PCIeRxKBps == nil {
		t.Fatalf("samples %+v", got)
	}
	t.Logf("one tick of 8 GPUs with 2 × 20 ms PCIe windows each: %v, at most %d windows open at once", took, most.Load())
	if most.Load() < 2 {
		t.Errorf("at most %d PCIe window open at once: the GPUs of a tick were read one after another", most.Load())
	}
}
