// Package sim builds go-nvml mock servers that look like real DGX/HGX nodes:
// go-nvml's own dgx* servers, with the values they leave unset filled in from
// real captures (nvidia-smi -q of HGX H100 nodes) and named faults injected.
package nvml

import (
	"fmt"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// mocks are go-nvml's own mock servers, one per model of simulate's table.
var mocks = map[string]func() *server.Server{
	"dgx-h100": dgxh100.New, "dgx-h200": dgxh200.New, "dgx-b200": dgxb200.New, "dgx-a100": dgxa100.New,
}

// model is simulate's table entry: what the mocks leave at zero.
type model struct{ simulate.Model }

// System is a simulated node's NVML: the interface the collector reads and
// the devices behind it, for tests that want to change them further.
type System struct {
	Spec    *simulate.Spec
	Lib     gonvml.Interface
	Server  *server.Server
	Devices []*server.Device
	// Owners is the simulated process table for the PIDs faults put on GPUs.
	Owners map[uint32]Owner
}

// Owner is a simulated process's user and command line.
type Owner struct{ User, Command string }

// New builds a fresh simulated NVML for spec. Each call starts from a clean
// mock: go-nvml's mocks record every call, so a long-lived one grows.
func New(spec *simulate.Spec) (*System, error) {
	tm, ok := simulate.Lookup(spec.Model)
	newMock, ok2 := mocks[spec.Model]
	if !ok || !ok2 {
		return nil, fmt.Errorf("simulate: no NVML model for %q", spec.Model)
	}
	m := model{tm}
	srv := newMock()
	sys := &System{Spec: spec, Lib: library{srv}, Server: srv, Owners: map[uint32]Owner{}}
	for i, d := range srv.Devices {
		dev := d.(*server.Device)
		m.dress(dev, i)
		idle(dev, spec.Model)
		FillNotSupported(&dev.Device)
		sys.Devices = append(sys.Devices, dev)
	}
	srv.SystemGetCudaDriverVersion_v2Func = srv.SystemGetCudaDriverVersionFunc
	healthyExcluded(srv)
	FillNotSupported(&srv.Interface)
	FillNotSupported(&srv.ExtendedInterface)
	sc, err := spec.Job()
	if err != nil {
		return nil, err
	}
	if sc != nil {
		job(sys, sc, maxSMClock(spec.Model))
	}
	for _, f := range spec.Faults {
		apply, ok := faults[f.Name]
		if !ok {
			continue // a fault of another collector (kernel log, sysfs)
		}
		if err := apply(sys, f); err != nil {
			return nil, err
		}
	}
	if err := unlist(sys); err != nil {
		return nil, err
	}
	if err := constrain(sys); err != nil {
		return nil, err
	}
	return sys, nil
}

// dress fills in what a real GPU of this model reports.
func (m model) dress(d *server.Device, i int) {
	d.UUID = fmt.Sprintf("GPU-%08x-%04x-4%03x-8%03x-%012x", 0x5e1a0000+i, 0x1000+i*0x11, i, i, 0x00005e1a0000+i)
	d.PciBusID = m.BusIDs[i]
	// go-nvml's DGX A100 mock names its GPU "Mock NVIDIA A100-SXM4-40GB";
	// a real one says "NVIDIA A100-SXM4-40GB" (the mock's own table spells
	// the 80GB part so), and the platform profile reads the model from it.
	d.Config.Name = strings.TrimPrefix(d.Config.Name, "Mock ")
	total := d.MemoryInfo.Total
	if m.TotalMiB > 0 {
		total = m.TotalMiB << 20
	}
	reserved := m.ReservedMiB << 20
	d.MemoryInfo = gonvml.Memory{Total: total, Used: reserved, Free: total - reserved}
	serial := fmt.Sprintf("16523230%05d", 1000+i)
	bus := m.BusIDs[i]
	pciDev := d.Config.PciDeviceId
	d.GetSerialFunc = func() (string, gonvml.Return) { return serial, gonvml.SUCCESS }
	d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		p := gonvml.PciInfo{PciDeviceId: pciDev}
		copy8(p.BusId[:], "0000"+bus)
		return p, gonvml.SUCCESS
	}
	d.GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) {
		mi := d.MemoryInfo
		return gonvml.Memory_v2{Total: mi.Total, Reserved: reserved, Used: mi.Used - min(mi.Used, reserved), Free: mi.Free}, gonvml.SUCCESS
	}
	d.GetPersistenceModeFunc = func() (gonvml.EnableState, gonvml.Return) { return gonvml.FEATURE_ENABLED, gonvml.SUCCESS }
	d.GetEccModeFunc = func() (gonvml.EnableState, gonvml.EnableState, gonvml.Return) {
		return gonvml.FEATURE_ENABLED, gonvml.FEATURE_ENABLED, gonvml.SUCCESS
	}
	d.GetTotalEccErrorsFunc = func(gonvml.MemoryErrorType, gonvml.EccCounterType) (uint64, gonvml.Return) {
		return 0, gonvml.SUCCESS
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) { return 0, 0, false, false, gonvml.SUCCESS }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) { return gonvml.ClocksEventReasonGpuIdle, gonvml.SUCCESS }
	// An idle H100 or H200 with persistence on reports P0 at 0 %
	// (nvsmi/testdata/realgpu_h100_580.159.04_nvidia-smi-q.txt and the
	// H200 one); consumer boards rest at P8.
	d.GetPerformanceStateFunc = func() (gonvml.Pstates, gonvml.Return) { return gonvml.PSTATE_0, gonvml.SUCCESS }
	gen := m.PCIeGen
	d.GetCurrPcieLinkGenerationFunc = func() (int, gonvml.Return) { return gen, gonvml.SUCCESS }
	d.GetMaxPcieLinkGenerationFunc = func() (int, gonvml.Return) { return gen, gonvml.SUCCESS }
	d.GetCurrPcieLinkWidthFunc = func() (int, gonvml.Return) { return 16, gonvml.SUCCESS }
	d.GetMaxPcieLinkWidthFunc = func() (int, gonvml.Return) { return 16, gonvml.SUCCESS }
	// Healthy HGX H100s have replayed a few dozen TLPs since the last
	// reset: 120 111 58 60 63 93 69 78 on GPUs 0-7 of a real capture
	// (nvsmi/testdata/gpud_h100x8_535.183.01_nvidia-smi-q.txt), 43-82 on
	// another. Zero is a value no real node shows.
	replays := healthyReplays[i%len(healthyReplays)]
	d.GetPcieReplayCounterFunc = func() (int, gonvml.Return) { return replays, gonvml.SUCCESS }
	temp := uint32(29 + i%4)
	d.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return temp, gonvml.SUCCESS }
	slow, shut := m.SlowdownC, m.ShutdownC
	d.GetTemperatureThresholdFunc = func(k gonvml.TemperatureThresholds) (uint32, gonvml.Return) {
		switch k {
		case gonvml.TEMPERATURE_THRESHOLD_SLOWDOWN:
			return slow, gonvml.SUCCESS
		case gonvml.TEMPERATURE_THRESHOLD_SHUTDOWN:
			return shut, gonvml.SUCCESS
		}
		// NVML_TEMPERATURE_THRESHOLD_MEM_MAX among them: no real H100
		// reading of it is known to us (the real H100 captures in
		// nvsmi/testdata print only "Memory Max Operating T.Limit Temp"),
		// so the mock does not invent one.
		return 0, gonvml.ERROR_NOT_SUPPORTED
	}
	// The memory (HBM) temperature reads a degree or so below the core's
	// at idle: 34 °C beside 35 °C on the real H100
	// (nvsmi/testdata/realgpu_h100_580.159.04_nvidia-smi-q.txt). The
	// mock answers that field and no other (each value NOT_SUPPORTED).
	memTemp := temp - 1
	d.GetFieldValuesFunc = func(vals []gonvml.FieldValue) gonvml.Return {
		for i := range vals {
			if vals[i].FieldId == gonvml.FI_DEV_MEMORY_TEMP {
				vals[i].ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_INT)
				putU32(vals[i].Value[:], memTemp)
				vals[i].NvmlReturn = uint32(gonvml.SUCCESS)
				continue
			}
			// No recovery action: the real H100 and H200 print "GPU
			// Recovery Action : None" (nvsmi/testdata/realgpu_*_580.159.04).
			if vals[i].FieldId == gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION {
				vals[i].ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_INT)
				putU32(vals[i].Value[:], 0)
				vals[i].NvmlReturn = uint32(gonvml.SUCCESS)
				continue
			}
			vals[i].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
		}
		return gonvml.SUCCESS
	}
	// No SRAM errors and the field-diag threshold not exceeded, as the
	// real H100 reports (realgpu_h100_580.159.04_nvidia-smi-q-x.xml:
	// every sram_* counter 0, <sram_threshold_exceeded>No).
	d.GetSramEccErrorStatusFunc = func() (gonvml.EccSramErrorStatus, gonvml.Return) {
		return gonvml.EccSramErrorStatus{Version: 1}, gonvml.SUCCESS
	}
	idle, limit := m.IdleMW+uint32(i)*310, m.PowerLimitMW
	d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return idle, gonvml.SUCCESS }
	d.GetEnforcedPowerLimitFunc = func() (uint32, gonvml.Return) { return limit, gonvml.SUCCESS }
	d.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) { return nil, gonvml.SUCCESS }
	// No MPS: the driver answers the MPS list, and it is empty (the
	// "mps" fault puts an MPS server and its clients on a GPU).
	d.GetMPSComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) { return nil, gonvml.SUCCESS }
	socket := 0
	if i >= 4 {
		socket = 1
	}
	d.GetNumaNodeIdFunc = func() (int, gonvml.Return) { return socket, gonvml.SUCCESS }
	mask := cpuMask(m.CPUs[socket])
	d.GetCpuAffinityFunc = func(n int) ([]uint, gonvml.Return) {
		out := make([]uint, n)
		copy(out, mask)
		return out, gonvml.SUCCESS
	}
	links, ver := m.NVLinks, m.NVLinkVersion
	d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
		if l >= links {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
	}
	d.GetNvLinkVersionFunc = func(int) (uint32, gonvml.Return) { return ver, gonvml.SUCCESS }
	d.GetNvLinkRemoteDeviceTypeFunc = func(int) (gonvml.IntNvLinkDeviceType, gonvml.Return) {
		return gonvml.NVLINK_DEVICE_TYPE_SWITCH, gonvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(l int) (gonvml.PciInfo, gonvml.Return) {
		var p gonvml.PciInfo
		// Four NVSwitches; links spread across them as on HGX baseboards.
		copy8(p.BusId[:], fmt.Sprintf("00000000:%02x:00.0", 0x05+l%4))
		return p, gonvml.SUCCESS
	}
	d.GetNvLinkErrorCounterFunc = func(int, gonvml.NvLinkErrorCounter) (uint64, gonvml.Return) { return 0, gonvml.SUCCESS }
	if m.Fabric {
		d.GetGpuFabricInfo_v4Func = func() (gonvml.GpuFabricInfo_v4, gonvml.Return) {
			f := gonvml.GpuFabricInfo_v4{State: gonvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(gonvml.SUCCESS), NumCliques: 1}
			f.Cliques[0].Id = 32766
			f.HealthMask = gonvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_FALSE |
				gonvml.GPU_FABRIC_HEALTH_MASK_ROUTE_RECOVERY_FALSE<<gonvml.GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_RECOVERY |
				gonvml.GPU_FABRIC_HEALTH_MASK_ROUTE_UNHEALTHY_FALSE<<gonvml.GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY |
				gonvml.GPU_FABRIC_HEALTH_MASK_ACCESS_TIMEOUT_RECOVERY_FALSE<<gonvml.GPU_FABRIC_HEALTH_MASK_SHIFT_ACCESS_TIMEOUT_RECOVERY |
				gonvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_NONE<<gonvml.GPU_FABRIC_HEALTH_MASK_SHIFT_INCORRECT_CONFIGURATION
			f.HealthSummary = gonvml.GPU_FABRIC_HEALTH_SUMMARY_HEALTHY
			return f, gonvml.SUCCESS
		}
	} else {
		d.GetGpuFabricInfo_v4Func = func() (gonvml.GpuFabricInfo_v4, gonvml.Return) {
			return gonvml.GpuFabricInfo_v4{State: gonvml.GPU_FABRIC_STATE_NOT_SUPPORTED}, gonvml.ERROR_NOT_SUPPORTED
		}
	}
}

func cpuMask(ranges [2][2]int) []uint {
	out := make([]uint, 1024/64)
	for _, r := range ranges {
		for c := r[0]; c <= r[1]; c++ {
			out[c/64] |= 1 << (uint(c) % 64)
		}
	}
	return out
}

func copy8[T ~int8 | ~uint8](dst []T, s string) {
	for i := 0; i < len(s) && i < len(dst)-1; i++ {
		dst[i] = T(s[i])
	}
}

// healthyReplays are "Replays Since Reset" of the eight GPUs of a real
// HGX H100 (driver 535.183.01).
var healthyReplays = []int{120, 111, 58, 60, 63, 93, 69, 78}

// idleClock is what an idle GPU of the model reports per clock domain, and
// maxClock its maximum, as nvidia-smi -q prints them ("Clocks", "Max
// Clocks"). H100 SXM: 345/345/2619/765 MHz idle, 1980/1980/2619/1545 max
// (nvsmi/testdata/gpud_h100x8_535.183.01_nvidia-smi-q.txt); A100 SXM4:
// 1410/1410/1593/1290 max (nvsmi/testdata/telegraf_a100-mig_535.54.03_nvidia-smi-q-x_excerpt.xml),
// its idle graphics clock taken from the H100 for want of an idle capture;
// H200 and B200 are given the H100's figures (no capture at hand).
func idleClock(model string, c gonvml.ClockType) uint32 {
	switch c {
	case gonvml.CLOCK_MEM:
		return maxClock(model, c) // HBM stays at its clock when idle
	case gonvml.CLOCK_VIDEO:
		return 765
	}
	return 345
}

func maxClock(model string, c gonvml.ClockType) uint32 {
	a100 := model == "dgx-a100"
	switch c {
	case gonvml.CLOCK_MEM:
		if a100 {
			return 1593
		}
		return 2619
	case gonvml.CLOCK_VIDEO:
		if a100 {
			return 1290
		}
		return 1545
	}
	return maxSMClock(model)
}

// maxSMClock is the model's maximum SM clock as nvidia-smi -q prints it
// ("Max Clocks: SM"): 1980 MHz on H100/H200 SXM, 1410 on A100 SXM; B200
// is given the H100's figure (no capture of one at hand).
func maxSMClock(model string) uint32 {
	if model == "dgx-a100" {
		return 1410
	}
	return 1980
}

// library is the simulated NVML as the collector sees it: go-nvml's mock
// server, plus the entry point go-nvml's Interface leaves out,
// nvmlDeviceGetGpuFabricInfoV (nvml.FabricInfoV), answered from the same
// device data as nvmlDeviceGetGpuFabricInfo_v4, so the collector's fabric
// code is the one it runs on the driver.
type library struct{ *server.Server }

func (library) DeviceGetGpuFabricInfoV3(dev gonvml.Device) (gonvml.GpuFabricInfo_v3, gonvml.Return) {
	v, r := dev.GetGpuFabricInfo_v4()
	out := gonvml.GpuFabricInfo_v3{Version: 3, ClusterUuid: v.ClusterUuid, Status: v.Status, State: v.State,
		HealthMask: v.HealthMask, HealthSummary: v.HealthSummary}
	if v.NumCliques > 0 {
		out.CliqueId = v.Cliques[0].Id
	}
	return out, r
}
