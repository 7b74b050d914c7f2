package nvml

import (
	"context"
	"fmt"
	"github.com/gpuprobe/gpuprobe/state"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	sim "github.com/gpuprobe/gpuprobe/sim/nvml"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

func simSystem(t *testing.T, spec string) *sim.System {
	t.Helper()
	s, err := simulate.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	sys, err := sim.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

// A bare dgxh100 mock with only a few overrides: everything the mock leaves
// unset answers NOT_SUPPORTED and must be recorded as such, not as an error.
func TestCollectBareDGXH100RecordsNotSupported(t *testing.T) {
	srv := dgxh100.New()
	for _, d := range srv.Devices {
		dev := d.(*server.Device)
		dev.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return 41, gonvml.SUCCESS }
		sim.FillNotSupported(&dev.Device)
	}
	sim.FillNotSupported(&srv.Interface)
	st := Collect(context.Background(), srv, Options{CallTimeout: time.Second})
	if !st.Available || st.DriverVersion != "550.54.15" || st.CUDADriverVersion != "12.4" {
		t.Fatalf("system = %+v", st)
	}
	if len(st.GPUs) != 8 {
		t.Fatalf("got %d GPUs", len(st.GPUs))
	}
	g := st.GPUs[3]
	if g.Index != 3 || !strings.HasPrefix(g.UUID, "GPU-") || g.Name != "NVIDIA H100 80GB HBM3" || g.Architecture != "hopper" || g.ComputeCapability != "9.0" {
		t.Errorf("identity = %+v", g)
	}
	if g.Thermal == nil || g.Thermal.TemperatureC != 41 || g.Thermal.SlowdownC != nil {
		t.Errorf("thermal = %+v", g.Thermal)
	}
	if len(g.Errors) != 0 {
		t.Errorf("errors = %+v, want none (unset mock calls are NOT_SUPPORTED)", g.Errors)
	}
	for _, want := range []string{"nvmlDeviceGetSerial", "nvmlDeviceGetRemappedRows", "nvmlDeviceGetNvLinkState", "nvmlDeviceGetPowerUsage"} {
		if !slices.Contains(g.Unsupported, want) {
			t.Errorf("Unsupported = %v, missing %s", g.Unsupported, want)
		}
	}
	if g.RemappedRows != nil || g.NVLinks != nil || g.Fabric != nil {
		t.Errorf("unsupported values were filled: %+v %+v %+v", g.RemappedRows, g.NVLinks, g.Fabric)
	}
}

func TestCollectSimulatedDGXH100(t *testing.T) {
	sys := simSystem(t, "dgx-h100")
	st := Collect(context.Background(), sys.Lib, Options{})
	if len(st.GPUs) != 8 {
		t.Fatalf("got %d GPUs", len(st.GPUs))
	}
	g := st.GPUs[4]
	if g.PCIBusID != "0000:9b:00.0" || g.Serial == "" || *g.NUMANode != 1 || g.CPUAffinity != "56-111,168-223" {
		t.Errorf("gpu 4 = bus %s serial %q numa %v cpus %q", g.PCIBusID, g.Serial, g.NUMANode, g.CPUAffinity)
	}
	if len(g.NVLinks) != 18 || !g.NVLinks[17].Up || g.NVLinks[0].RemoteType != "switch" || g.NVLinks[0].Version != 4 {
		t.Errorf("nvlinks = %d %+v", len(g.NVLinks), g.NVLinks)
	}
	if g.Fabric == nil || g.Fabric.State != "completed" || g.Fabric.Status != "success" || g.Fabric.API != "nvmlDeviceGetGpuFabricInfo_v4" {
		t.Errorf("fabric = %+v", g.Fabric)
	}
	if g.Memory == nil || g.Memory.ReservedBytes != 551<<20 || g.Memory.TotalBytes != 81559<<20 { // a real H100 80GB (nvidia-smi -q)
		t.Errorf("memory = %+v", g.Memory)
	}
	if g.RemappedRows == nil || g.RemappedRows.Pending || g.ECC == nil || *g.ECC.Volatile.Uncorrected != 0 {
		t.Errorf("rows %+v ecc %+v", g.RemappedRows, g.ECC)
	}
	if g.ClockEvents == nil || len(g.ClockEvents.Reasons) != 1 || g.ClockEvents.Reasons[0] != "gpu_idle" {
		t.Errorf("clock events = %+v", g.ClockEvents)
	}
	if len(g.Errors) != 0 {
		t.Errorf("errors = %+v", g.Errors)
	}
}

// One call that never returns: the collection ends on time, the hung call is
// named, and the other GPUs are untouched.
func TestCollectHungCallEndsByDeadline(t *testing.T) {
	sys := simSystem(t, "dgx-h100:nvml-hang=2")
	// A call timeout no healthy mock call reaches on a loaded machine under
	// -race (the other GPUs must be untouched), well inside the run's.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := Collect(ctx, sys.Lib, Options{CallTimeout: time.Second})
	if ctx.Err() != nil {
		t.Fatalf("collection overran the run deadline")
	}
	g := st.GPUs[2]
	e := g.ErrorFor("nvmlDeviceGetTemperature")
	if e == nil || !e.Timeout {
		t.Fatalf("GPU 2 errors = %+v, want a timeout on nvmlDeviceGetTemperature", g.Errors)
	}
	if g.Power != nil || g.NVLinks != nil {
		t.Errorf("calls after the hang ran: power %+v nvlinks %d", g.Power, len(g.NVLinks))
	}
	if len(st.GPUs[1].Errors) != 0 || st.GPUs[1].Thermal == nil {
		t.Errorf("GPU 1 affected: %+v", st.GPUs[1].Errors)
	}
}

// The daemon collects from the same library every cycle. A device whose
// call is still hung is not called again: 50 more collections cost no
// goroutine (before, each left one more call behind, an OS thread with cgo).
func TestHungDeviceIsNotCalledAgainInLaterCollections(t *testing.T) {
	sys := simSystem(t, "dgx-h100")
	var calls atomic.Int32
	release := make(chan struct{})
	defer close(release)
	sys.Devices[4].GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) {
		calls.Add(1)
		<-release
		return 30, gonvml.SUCCESS
	}
	collect := func() *state.NVML {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return Collect(ctx, sys.Lib, Options{CallTimeout: time.Second, Library: t.Name()})
	}
	first := collect()
	if e := first.GPUs[4].ErrorFor("nvmlDeviceGetTemperature"); e == nil || !e.Timeout {
		t.Fatalf("first collection: %+v", first.GPUs[4].Errors)
	}
	before := runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		st := collect()
		if len(st.GPUs[4].Errors) == 0 || st.GPUs[4].Thermal != nil {
			t.Fatalf("collection %d judged the wedged GPU 4 as answering: %+v", i, st.GPUs[4])
		}
		if st.GPUs[3].Thermal == nil {
			t.Fatalf("collection %d: GPU 3 affected: %+v", i, st.GPUs[3].Errors)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the hung call was issued %d times, want 1", n)
	}
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Errorf("goroutines grew from %d to %d over 50 collections", before, after)
	}
}

func TestCollectGPULostMidCollection(t *testing.T) {
	sys := simSystem(t, "dgx-h100:gpu-lost=5")
	st := Collect(context.Background(), sys.Lib, Options{})
	g := st.GPUs[5]
	if !g.Lost || g.UUID == "" || g.Memory != nil || g.Thermal != nil {
		t.Fatalf("GPU 5: lost=%v uuid=%q memory=%+v thermal=%+v", g.Lost, g.UUID, g.Memory, g.Thermal)
	}
	if e := g.ErrorFor("nvmlDeviceGetMemoryInfo_v2"); e == nil || !strings.Contains(e.Error, "lost") {
		t.Errorf("errors = %+v", g.Errors)
	}
	if st.GPUs[6].Lost || st.GPUs[6].Memory == nil {
		t.Errorf("GPU 6 affected")
	}
}

// After a failed Init nothing else may be called, not even Shutdown: with no
// libnvidia-ml that would kill the process in the dynamic linker.
func TestCollectNoCallsAfterFailedInit(t *testing.T) {
	srv := dgxh100.New()
	srv.InitFunc = func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }
	srv.ShutdownFunc = nil // a call would panic
	srv.SystemGetDriverVersionFunc = nil
	srv.DeviceGetCountFunc = nil
	st := Collect(context.Background(), srv, Options{})
	if st.Available || !strings.Contains(st.Error, "libnvidia-ml") {
		t.Fatalf("state = %+v", st)
	}
	if n := len(srv.InitCalls()); n != 1 {
		t.Errorf("Init called %d times", n)
	}
	if len(srv.ShutdownCalls())+len(srv.DeviceGetCountCalls())+len(srv.SystemGetDriverVersionCalls()) != 0 {
		t.Errorf("NVML called after a failed Init")
	}
	if len(st.Errors) != 1 || st.Errors[0].Call != "nvmlInit" {
		t.Errorf("errors = %+v", st.Errors)
	}
}

func TestNormBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:18:00.0": "0000:18:00.0",
		"0000:3B:00.0":     "0000:3b:00.0",
		"00000001:C1:00.0": "0001:c1:00.0",
		"":                 "",
	} {
		if got := normBusID(in); got != want {
			t.Errorf("normBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCPUList(t *testing.T) {
	if got := cpuList([]uint{0b1011, 1 << 63}); got != "0,1,3,127" {
		t.Errorf("cpuList = %q", got)
	}
}

// A GPU in MIG mode lists its instances (what CUDA_VISIBLE_DEVICES calls
// MIG-<uuid>); empty slots are skipped without an error.
func TestCollectMIGDevices(t *testing.T) {
	sys := simSystem(t, "dgx-h100")
	d := sys.Devices[2]
	d.GetMigModeFunc = func() (int, int, gonvml.Return) {
		return gonvml.DEVICE_MIG_ENABLE, gonvml.DEVICE_MIG_ENABLE, gonvml.SUCCESS
	}
	d.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return 7, gonvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i > 1 {
			return nil, gonvml.ERROR_NOT_FOUND
		}
		m := &mock.Device{
			GetUUIDFunc: func() (string, gonvml.Return) {
				return fmt.Sprintf("MIG-0000000%d-aaaa-bbbb-cccc-dddddddddddd", i), gonvml.SUCCESS
			},
			GetGpuInstanceIdFunc:     func() (int, gonvml.Return) { return 7 + i, gonvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, gonvml.Return) { return 0, gonvml.SUCCESS },
			GetMemoryInfoFunc:        func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{Total: 10 << 30}, gonvml.SUCCESS },
		}
		return m, gonvml.SUCCESS
	}
	st := Collect(context.Background(), sys.Lib, Options{})
	g := st.GPUs[2]
	if len(g.MIGDevices) != 2 || g.MIGDevices[1].UUID != "MIG-00000001-aaaa-bbbb-cccc-dddddddddddd" || g.MIGDevices[1].GPUInstanceID != 8 || g.MIGDevices[0].MemoryTotalBytes != 10<<30 {
		t.Errorf("MIG devices = %+v", g.MIGDevices)
	}
	if len(g.Errors) != 0 || len(st.GPUs[1].MIGDevices) != 0 {
		t.Errorf("errors %+v; GPU 1 MIG devices %+v", g.Errors, st.GPUs[1].MIGDevices)
	}
}

// The node collection records nvmlDeviceGetUtilizationRates (serve exports
// it): a simulated job's busy GPU and an idle one read as such, and a GPU
// that does not support the call has no value and names it unsupported.
func TestCollectUtilization(t *testing.T) {
	st := Collect(context.Background(), simSystem(t, "dgx-h100:job-one-gpu").Lib, Options{})
	busy, idle := st.GPUs[0].Utilization, st.GPUs[1].Utilization
	if busy == nil || busy.GPUPercent < 94 || busy.GPUPercent > 98 || busy.MemoryPercent != 50 {
		t.Errorf("GPU 0 utilisation %+v, want the scenario's 96±2 %% and 50 %% memory", busy)
	}
	if idle == nil || idle.GPUPercent != 0 || idle.MemoryPercent != 0 {
		t.Errorf("GPU 1 utilisation %+v, want 0/0", idle)
	}
	srv := dgxh100.New()
	for _, d := range srv.Devices {
		sim.FillNotSupported(&d.(*server.Device).Device)
	}
	sim.FillNotSupported(&srv.Interface)
	g := Collect(context.Background(), srv, Options{CallTimeout: time.Second}).GPUs[0]
	if g.Utilization != nil || !slices.Contains(g.Unsupported, "nvmlDeviceGetUtilizationRates") {
		t.Errorf("unsupported utilisation: %+v, unsupported %v", g.Utilization, g.Unsupported)
	}
}

// NVML under a job's device cgroup lists every GPU but refuses handles to
// the others with NO_PERMISSION: recorded as closed to this process, not as
// an unreachable (broken) GPU.
func TestHandleRefusedByPermissionIsNotUnreachable(t *testing.T) {
	srv := bareH100(nil)
	inner := srv.DeviceGetHandleByIndexFunc
	srv.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i == 3 {
			return nil, gonvml.ERROR_NO_PERMISSION
		}
		return inner(i)
	}
	st := Collect(context.Background(), srv, Options{CallTimeout: time.Second})
	g := st.GPUs[3]
	if !g.Denied || g.Unreachable || g.Lost {
		t.Errorf("GPU 3 %+v: want denied, not unreachable", g)
	}
	if st.GPUs[2].Denied || st.GPUs[2].Unreachable {
		t.Errorf("GPU 2 %+v", st.GPUs[2])
	}
}

// A link that is not active is recorded as down and asked nothing more: a
// PCIe card answers all 18 links disabled, and each was asked for its
// version, peer and four error counters every cycle.
func TestDisabledNVLinksAreNotAskedMore(t *testing.T) {
	sys := simSystem(t, "dgx-h100")
	d := sys.Devices[0]
	var asked atomic.Int32
	d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
		if l >= 18 {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
	}
	d.GetNvLinkVersionFunc = func(int) (uint32, gonvml.Return) { asked.Add(1); return 4, gonvml.SUCCESS }
	d.GetNvLinkErrorCounterFunc = func(int, gonvml.NvLinkErrorCounter) (uint64, gonvml.Return) { asked.Add(1); return 0, gonvml.SUCCESS }
	d.GetNvLinkRemoteDeviceTypeFunc = func(int) (gonvml.IntNvLinkDeviceType, gonvml.Return) { asked.Add(1); return 0, gonvml.SUCCESS }
	st := Collect(context.Background(), sys.Lib, Options{})
	g := st.GPUs[0]
	if len(g.NVLinks) != 18 || g.NVLinks[5].Up || g.NVLinks[5].Version != 0 || g.NVLinks[5].CRCFlitErrors != nil {
		t.Fatalf("links = %d, link 5 = %+v", len(g.NVLinks), g.NVLinks[5])
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("disabled links were asked %d more calls", n)
	}
	if up := st.GPUs[1].NVLinks; len(up) != 18 || !up[0].Up || up[0].Version == 0 || up[0].CRCFlitErrors == nil {
		t.Errorf("an active link lost its details: %+v", up[0])
	}
}

// nvml.h's HW slowdown field values (270, 271) are recorded as violation
// counters with NVML's timestamp; a driver that does not know a field
// answers in that value's nvmlReturn and the field is named unsupported.
func TestHWSlowdownCounters(t *testing.T) {
	sys := simSystem(t, "dgx-h100")
	d := sys.Devices[0]
	d.GetFieldValuesFunc = func(vals []gonvml.FieldValue) gonvml.Return {
		for i := range vals {
			switch vals[i].FieldId {
			case gonvml.FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN:
				vals[i].ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
				vals[i].Value = [8]byte{0x00, 0xca, 0x9a, 0x3b} // 1e9 ns, little-endian
				vals[i].Timestamp = 1_700_000_000_000_000
			default:
				vals[i].NvmlReturn = uint32(gonvml.ERROR_INVALID_ARGUMENT)
			}
		}
		return gonvml.SUCCESS
	}
	g := Collect(context.Background(), sys.Lib, Options{}).GPUs[0]
	var got *state.Violation
	for i := range g.Violations {
		if g.Violations[i].Policy == "hw_thermal_slowdown" {
			got = &g.Violations[i]
		}
		if g.Violations[i].Policy == "hw_power_brake_slowdown" {
			t.Errorf("an unknown field was recorded: %+v", g.Violations[i])
		}
	}
	if got == nil || got.ViolationNs != 1e9 || got.ReferenceTimeUs != 1_700_000_000_000_000 {
		t.Fatalf("hw_thermal_slowdown = %+v (violations %+v)", got, g.Violations)
	}
	if !slices.Contains(g.Unsupported, "NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN") {
		t.Errorf("unsupported = %v", g.Unsupported)
	}
}

// Where nvmlDeviceGetTemperatureThreshold no longer answers (nvml.h: not the
// preferred interface on Ada and later), the thresholds come from the
// T.Limit margin and fields. The values are a real H200's (driver
// 580.159.04): 33 C, margin 54, shutdown/slowdown T.Limit fields -8/-2 as
// signed ints, and the threshold call said 95/89 on that GPU.
func TestThresholdsFromTLimitFields(t *testing.T) {
	le := func(v int32) [8]byte {
		var b [8]byte
		u := uint32(v)
		b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		return b
	}
	for _, tc := range []struct {
		name       string
		fieldsRet  gonvml.Return
		slow, shut int // 0: nil
	}{
		{"real H200 values", gonvml.SUCCESS, 89, 95},
		{"fields unknown to the driver", gonvml.ERROR_NOT_SUPPORTED, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := simSystem(t, "dgx-h100")
			d := sys.Devices[0]
			d.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return 33, gonvml.SUCCESS }
			d.GetTemperatureThresholdFunc = func(gonvml.TemperatureThresholds) (uint32, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
			d.GetMarginTemperatureFunc = func() (gonvml.MarginTemperature, gonvml.Return) {
				return gonvml.MarginTemperature{MarginTemperature: 54}, gonvml.SUCCESS
			}
			inner := d.GetFieldValuesFunc
			d.GetFieldValuesFunc = func(vals []gonvml.FieldValue) gonvml.Return {
				for i := range vals {
					switch vals[i].FieldId {
					case gonvml.FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT, gonvml.FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT:
						if tc.fieldsRet != gonvml.SUCCESS {
							vals[i].NvmlReturn = uint32(tc.fieldsRet)
							continue
						}
						vals[i].ValueType = uint32(gonvml.VALUE_TYPE_SIGNED_INT)
						vals[i].Value = le(-2)
						if vals[i].FieldId == gonvml.FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT {
							vals[i].Value = le(-8)
						}
					default:
						if inner != nil {
							return inner(vals)
						}
					}
				}
				return gonvml.SUCCESS
			}
			g := Collect(context.Background(), sys.Lib, Options{}).GPUs[0]
			ptr := func(p *int) int {
				if p == nil {
					return 0
				}
				return *p
			}
			if g.Thermal == nil || ptr(g.Thermal.SlowdownC) != tc.slow || ptr(g.Thermal.ShutdownC) != tc.shut {
				t.Fatalf("thermal = %+v, want slowdown %d shutdown %d", g.Thermal, tc.slow, tc.shut)
			}
			if len(g.Errors) != 0 {
				t.Errorf("errors = %+v", g.Errors)
			}
		})
	}
}

// nvmlDeviceGetGpuFabricInfoV used to be asked only of the real library
// (a d.real branch), so no simulation ever ran it. The library now offers
// it (FabricInfoV) and the simulation does too: with _v4 missing from the
// driver, the same fabric code reads the same facts through V.
func TestFabricInfoThroughEachEntryPoint(t *testing.T) {
	for _, tc := range []struct {
		spec, api, state, status string
	}{
		{"dgx-h100", "nvmlDeviceGetGpuFabricInfo_v4", "completed", "success"},
		{"dgx-h100:fabric-info-v", "nvmlDeviceGetGpuFabricInfoV", "completed", "success"},
		{"dgx-h100:fabric-info-v,fabric-incomplete", "nvmlDeviceGetGpuFabricInfoV", "in_progress", ""},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			sys := simSystem(t, tc.spec)
			g := Collect(context.Background(), sys.Lib, Options{}).GPUs[0]
			f := g.Fabric
			if f == nil || f.API != tc.api || f.State != tc.state || f.CliqueID != 32766 || f.HealthSummary != 1 || f.HealthMask == 0 {
				t.Fatalf("fabric = %+v, want %s %s via %s", f, tc.state, tc.status, tc.api)
			}
			if tc.status != "" && f.Status != tc.status {
				t.Errorf("status %q, want %q", f.Status, tc.status)
			}
		})
	}
}

// A library without nvmlDeviceGetRemappedRows (drivers before R450) has no
// row remapping to report: the collector records it as NOT_SUPPORTED, so
// gpu.row_remap says "not supported" and not "not read, no reason
// recorded" (issue 26).
func TestRemappedRowsSymbolMissingIsUnsupported(t *testing.T) {
	srv := bareH100(nil)
	srv.LookupSymbolFunc = func(name string) error {
		if name == "nvmlDeviceGetRemappedRows" {
			return gonvml.ERROR_FUNCTION_NOT_FOUND
		}
		return nil
	}
	g := Collect(context.Background(), srv, Options{CallTimeout: time.Second}).GPUs[0]
	n := 0
	for _, c := range g.Unsupported {
		if c == "nvmlDeviceGetRemappedRows" {
			n++
		}
	}
	if n != 1 || g.RemappedRows != nil {
		t.Errorf("Unsupported %v (nvmlDeviceGetRemappedRows %d times), rows %+v; want it listed once", g.Unsupported, n, g.RemappedRows)
	}
}

// The memory (HBM) temperature and its limit, and the SRAM error status
// (issue 26: neither was read). The simulated H100 answers as the real one
// printed (memory 1 °C below the core; every SRAM counter 0 and the flag
// clear) and NOT_SUPPORTED for the memory max threshold, which no real H100
// capture here gives.
func TestCollectMemoryTemperatureAndSRAM(t *testing.T) {
	field := func(ret gonvml.Return, v uint32) func([]gonvml.FieldValue) gonvml.Return {
		return func(vals []gonvml.FieldValue) gonvml.Return {
			for i := range vals {
				vals[i].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
				if vals[i].FieldId == gonvml.FI_DEV_MEMORY_TEMP {
					vals[i].NvmlReturn = uint32(ret)
					vals[i].ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_INT)
					vals[i].Value = [8]byte{byte(v)}
				}
			}
			return gonvml.SUCCESS
		}
	}
	errorFor := func(g state.GPU, call string) string {
		if e := g.ErrorFor(call); e != nil {
			return e.Error
		}
		return ""
	}
	for _, tc := range []struct {
		name  string
		mut   func(d *server.Device, srv *server.Server)
		check func(t *testing.T, g state.GPU)
	}{
		{"simulated H100", nil, func(t *testing.T, g state.GPU) {
			if g.Thermal.MemoryTemperatureC == nil || *g.Thermal.MemoryTemperatureC != g.Thermal.TemperatureC-1 || g.Thermal.MemoryMaxC != nil {
				t.Errorf("thermal = %+v", g.Thermal)
			}
			if !slices.Contains(g.Unsupported, state.MemoryMaxThresholdCall) {
				t.Errorf("unsupported = %v", g.Unsupported)
			}
			if g.SRAMECC == nil || g.SRAMECC.ThresholdExceeded {
				t.Errorf("sram = %+v", g.SRAMECC)
			}
		}},
		{"memory max answered", func(d *server.Device, _ *server.Server) {
			inner := d.GetTemperatureThresholdFunc
			d.GetTemperatureThresholdFunc = func(k gonvml.TemperatureThresholds) (uint32, gonvml.Return) {
				if k == gonvml.TEMPERATURE_THRESHOLD_MEM_MAX {
					return 95, gonvml.SUCCESS
				}
				return inner(k)
			}
			d.GetFieldValuesFunc = field(gonvml.SUCCESS, 41)
		}, func(t *testing.T, g state.GPU) {
			if g.Thermal.MemoryTemperatureC == nil || *g.Thermal.MemoryTemperatureC != 41 || g.Thermal.MemoryMaxC == nil || *g.Thermal.MemoryMaxC != 95 {
				t.Errorf("thermal = %+v", g.Thermal)
			}
		}},
		{"memory temperature failed", func(d *server.Device, _ *server.Server) {
			d.GetFieldValuesFunc = field(gonvml.ERROR_UNKNOWN, 0)
		}, func(t *testing.T, g state.GPU) {
			if g.Thermal.MemoryTemperatureC != nil || errorFor(g, "NVML_FI_DEV_MEMORY_TEMP") == "" {
				t.Errorf("thermal = %+v, errors %+v", g.Thermal, g.Errors)
			}
			if slices.Contains(g.Unsupported, state.MemoryMaxThresholdCall) {
				t.Errorf("the threshold was asked without a reading: %v", g.Unsupported)
			}
		}},
		// A vGPU guest's 0 °C is no reading and no fault.
		{"memory temperature 0", func(d *server.Device, _ *server.Server) {
			d.GetFieldValuesFunc = field(gonvml.SUCCESS, 0)
		}, func(t *testing.T, g state.GPU) {
			if g.Thermal.MemoryTemperatureC != nil || !slices.Contains(g.Unsupported, "NVML_FI_DEV_MEMORY_TEMP") || len(g.Errors) != 0 {
				t.Errorf("thermal = %+v, unsupported %v, errors %+v", g.Thermal, g.Unsupported, g.Errors)
			}
		}},
		{"SRAM flag set", func(d *server.Device, _ *server.Server) {
			d.GetSramEccErrorStatusFunc = func() (gonvml.EccSramErrorStatus, gonvml.Return) {
				return gonvml.EccSramErrorStatus{AggregateUncSecDed: 3, BThresholdExceeded: 1}, gonvml.SUCCESS
			}
		}, func(t *testing.T, g state.GPU) {
			if g.SRAMECC == nil || !g.SRAMECC.ThresholdExceeded || g.SRAMECC.AggregateUncSecDed != 3 {
				t.Errorf("sram = %+v", g.SRAMECC)
			}
		}},
		// nvml.h: "Requires root/admin permissions".
		{"SRAM status not root", func(d *server.Device, _ *server.Server) {
			d.GetSramEccErrorStatusFunc = func() (gonvml.EccSramErrorStatus, gonvml.Return) {
				return gonvml.EccSramErrorStatus{}, gonvml.ERROR_NO_PERMISSION
			}
		}, func(t *testing.T, g state.GPU) {
			if g.SRAMECC != nil || errorFor(g, "nvmlDeviceGetSramEccErrorStatus") != "no permission" {
				t.Errorf("sram = %+v, errors %+v", g.SRAMECC, g.Errors)
			}
		}},
		{"SRAM entry point missing", func(_ *server.Device, srv *server.Server) {
			srv.LookupSymbolFunc = func(name string) error {
				if name == "nvmlDeviceGetSramEccErrorStatus" {
					return gonvml.ERROR_FUNCTION_NOT_FOUND
				}
				return nil
			}
		}, func(t *testing.T, g state.GPU) {
			if g.SRAMECC != nil || !slices.Contains(g.Unsupported, "nvmlDeviceGetSramEccErrorStatus") {
				t.Errorf("sram = %+v, unsupported %v", g.SRAMECC, g.Unsupported)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := simSystem(t, "dgx-h100")
			if tc.mut != nil {
				tc.mut(sys.Devices[0], sys.Server)
			}
			g := Collect(context.Background(), sys.Lib, Options{}).GPUs[0]
			if g.Thermal == nil {
				t.Fatalf("no thermal: %+v", g.Errors)
			}
			tc.check(t, g)
		})
	}
}

// hw3: a GPU whose calls answer NVML_ERROR_RESET_REQUIRED ("The GPU requires
// a reset before it can be used again", nvml.h) is recorded as such, so
// gpu.count can fail it with the reset it needs; before, each call was an
// error and the GPU counted as reachable.
func TestCollectResetRequired(t *testing.T) {
	srv := bareH100(func(i int, d *server.Device) {
		if i == 2 {
			d.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return 0, gonvml.ERROR_RESET_REQUIRED }
		}
	})
	st := Collect(context.Background(), srv, Options{})
	if !st.GPUs[2].ResetRequired || st.GPUs[1].ResetRequired {
		t.Fatalf("reset required: GPU 2 %v, GPU 1 %v", st.GPUs[2].ResetRequired, st.GPUs[1].ResetRequired)
	}
	if e := st.GPUs[2].ErrorFor("nvmlDeviceGetTemperature"); e == nil || !strings.Contains(e.Error, "reset") {
		t.Errorf("errors = %+v", st.GPUs[2].Errors)
	}
}

// hw3: NVML_FI_DEV_GET_GPU_RECOVERY_ACTION is read (nvml.h
// nvmlDeviceGpuRecoveryAction_t); a driver that does not know the field
// leaves it unread and says so.
func TestCollectRecoveryAction(t *testing.T) {
	srv := bareH100(func(i int, d *server.Device) {
		d.GetFieldValuesFunc = func(vals []gonvml.FieldValue) gonvml.Return {
			for k := range vals {
				vals[k].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
				if vals[k].FieldId == gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION && i != 7 {
					vals[k].ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_INT)
					if i == 3 {
						vals[k].Value[0] = 1 // GPU_RECOVERY_ACTION_GPU_RESET
					}
					vals[k].NvmlReturn = uint32(gonvml.SUCCESS)
				}
			}
			return gonvml.SUCCESS
		}
	})
	st := Collect(context.Background(), srv, Options{})
	if a := st.GPUs[3].RecoveryAction; a == nil || *a != 1 {
		t.Errorf("GPU 3 recovery action %v, want 1 (GPU reset)", a)
	}
	if a := st.GPUs[0].RecoveryAction; a == nil || *a != 0 {
		t.Errorf("GPU 0 recovery action %v, want 0 (none)", a)
	}
	if g := st.GPUs[7]; g.RecoveryAction != nil || !slices.Contains(g.Unsupported, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION") {
		t.Errorf("GPU 7: recovery action %v, unsupported %v; want unread and said", g.RecoveryAction, g.Unsupported)
	}
}
