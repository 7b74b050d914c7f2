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

	"github.com/gpuprobe/gpuprobe/nvml/sim"
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
		d.GetProcessUtilizationFunc = func(since uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
			if since > 0 {
				return nil, gonvml.ERROR_NOT_FOUND // nothing new: an empty list, no error
			}
			return []gonvml.ProcessUtilizationSample{{Pid: 42, TimeStamp: 7, SmUtil: 80, MemUtil: 30}, {Pid: 42, TimeStamp: 9, SmUtil: 90, MemUtil: 20}}, gonvml.SUCCESS
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
		t.Errorf("processes %+v, want pid 42 at its highest 90%% SM, 30%% memory", g.Processes)
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
	s, err := NewSampler(context.Background(), srv, Options{CallTimeout: 100 * time.Millisecond}, []int{0, 1, 2})
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
