package nvml

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"slices"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuprobe/gpuprobe/state"
)

// maxCPUs sizes the affinity mask NVML fills; 1024 covers every server we know.
const maxCPUs = 1024

type device struct {
	g   *guard
	dev gonvml.Device
	gpu *state.GPU
	sym symbols
	// fabricV is the library's nvmlDeviceGetGpuFabricInfoV, where it offers one.
	fabricV FabricInfoV
}

type pair[A, B any] struct {
	a A
	b B
}

func two[A, B any](f func() (A, B, gonvml.Return)) func() (pair[A, B], gonvml.Return) {
	return func() (pair[A, B], gonvml.Return) {
		a, b, r := f()
		return pair[A, B]{a, b}, r
	}
}

func (d *device) collect() {
	d.identity()
	d.memory()
	d.modes()
	d.migDevices()
	d.ecc()
	d.sram()
	d.pages()
	d.clocks()
	d.violations()
	d.pcie()
	d.thermalPower()
	d.utilization()
	d.processes()
	d.affinity()
	d.nvlinks()
	d.fabric()
	d.recoveryAction()
}

// recoveryAction reads NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230; nvml.h
// nvmlDeviceGpuRecoveryAction_t): what the driver says the GPU needs before
// it is used again (NVIDIA's memory error management guide, "Recovery
// action flag": None, Reset, Reboot, Drain P2P, Drain and Reset). A driver
// without the field answers in the value's nvmlReturn; it is then filed as
// unsupported under the field's name.
func (d *device) recoveryAction() {
	if d.g.stopped != "" {
		return
	}
	const name = "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION"
	v, read := d.field(name, gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION)
	if !read {
		return
	}
	a, known := fieldUint(v)
	if !known || a > 1000 {
		d.g.fail(name, fmt.Sprintf("field value of unknown type %d or out of range", v.ValueType), false)
		return
	}
	i := int(a)
	d.gpu.RecoveryAction = &i
}

// field reads one field value, named name for the report. A field the
// driver does not know (NOT_SUPPORTED, INVALID_ARGUMENT in the value's own
// nvmlReturn) is filed as unsupported under that name, a failed one as an
// error; the bool is true only for a value that was read.
func (d *device) field(name string, id uint32) (gonvml.FieldValue, bool) {
	vals := []gonvml.FieldValue{{FieldId: id}}
	if !d.fieldValues(vals) {
		return gonvml.FieldValue{}, false
	}
	switch ret := gonvml.Return(vals[0].NvmlReturn); ret {
	case gonvml.SUCCESS:
		return vals[0], true
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_INVALID_ARGUMENT:
		d.gpu.Unsupported = append(d.gpu.Unsupported, name)
	default:
		d.g.fail(name, returnString(ret), false)
	}
	return gonvml.FieldValue{}, false
}

func (d *device) identity() {
	g, dev, gpu := d.g, d.dev, d.gpu
	if v, o := call(g, "nvmlDeviceGetIndex", dev.GetIndex); o == ok {
		gpu.Index = v
	}
	if v, o := call(g, "nvmlDeviceGetUUID", dev.GetUUID); o == ok {
		gpu.UUID = v
	}
	if v, o := call(g, "nvmlDeviceGetName", dev.GetName); o == ok {
		gpu.Name = v
	}
	if v, o := call(g, "nvmlDeviceGetSerial", dev.GetSerial); o == ok {
		gpu.Serial = v
	}
	if v, o := call(g, "nvmlDeviceGetPciInfo", dev.GetPciInfo); o == ok {
		gpu.PCIBusID = pciBusID(v)
	}
	if v, o := call(g, "nvmlDeviceGetMinorNumber", dev.GetMinorNumber); o == ok {
		gpu.Minor = &v
	}
	if v, o := call(g, "nvmlDeviceGetArchitecture", dev.GetArchitecture); o == ok {
		gpu.Architecture = archName(v)
	}
	if v, o := call(g, "nvmlDeviceGetCudaComputeCapability", two(dev.GetCudaComputeCapability)); o == ok {
		gpu.ComputeCapability = fmt.Sprintf("%d.%d", v.a, v.b)
	}
}

func (d *device) memory() {
	if d.sym["nvmlDeviceGetMemoryInfo_v2"] {
		// v2 reports the driver's reserved memory separately; v1 counts it as used.
		if m, o := call(d.g, "nvmlDeviceGetMemoryInfo_v2", d.dev.GetMemoryInfo_v2); o == ok {
			d.gpu.Memory = &state.Memory{TotalBytes: m.Total, UsedBytes: m.Used, FreeBytes: m.Free, ReservedBytes: m.Reserved}
			return
		} else if o == unsupported {
			d.gpu.Unsupported = d.gpu.Unsupported[:len(d.gpu.Unsupported)-1] // fall back quietly
		}
	}
	if m, o := call(d.g, "nvmlDeviceGetMemoryInfo", d.dev.GetMemoryInfo); o == ok {
		d.gpu.Memory = &state.Memory{TotalBytes: m.Total, UsedBytes: m.Used, FreeBytes: m.Free}
	}
}

func (d *device) modes() {
	if v, o := call(d.g, "nvmlDeviceGetPersistenceMode", d.dev.GetPersistenceMode); o == ok {
		on := v == gonvml.FEATURE_ENABLED
		d.gpu.PersistenceMode = &on
	}
	if v, o := call(d.g, "nvmlDeviceGetMigMode", two(d.dev.GetMigMode)); o == ok {
		d.gpu.MIG = &state.MIG{Current: v.a == gonvml.DEVICE_MIG_ENABLE, Pending: v.b == gonvml.DEVICE_MIG_ENABLE}
	}
}

// migDevices lists the MIG instances of a GPU in MIG mode; slots without an
// instance answer NOT_FOUND and are skipped.
func (d *device) migDevices() {
	if d.gpu.MIG == nil || !d.gpu.MIG.Current {
		return
	}
	n, o := call(d.g, "nvmlDeviceGetMaxMigDeviceCount", d.dev.GetMaxMigDeviceCount)
	if o != ok {
		return
	}
	for i := 0; i < n; i++ {
		quiet := &guard{ctx: d.g.ctx, timeout: d.g.timeout, gpu: d.gpu, errs: &d.gpu.Errors, lib: d.g.lib}
		m, o := call(quiet, "nvmlDeviceGetMigDeviceHandleByIndex", func() (gonvml.Device, gonvml.Return) {
			h, r := d.dev.GetMigDeviceHandleByIndex(i)
			if r == gonvml.ERROR_NOT_FOUND || r == gonvml.ERROR_INVALID_ARGUMENT {
				r = gonvml.ERROR_NOT_SUPPORTED // an empty slot
			}
			return h, r
		})
		if quiet.stopped != "" {
			d.g.stopped = quiet.stopped
			return
		}
		if o != ok {
			continue
		}
		md := state.MIGDevice{}
		if v, o := call(d.g, "nvmlDeviceGetUUID", m.GetUUID); o == ok {
			md.UUID = v
		}
		if v, o := call(d.g, "nvmlDeviceGetGpuInstanceId", m.GetGpuInstanceId); o == ok {
			md.GPUInstanceID = v
		}
		if v, o := call(d.g, "nvmlDeviceGetComputeInstanceId", m.GetComputeInstanceId); o == ok {
			md.ComputeInstanceID = v
		}
		if v, o := call(d.g, "nvmlDeviceGetMemoryInfo", m.GetMemoryInfo); o == ok {
			md.MemoryTotalBytes = v.Total
		}
		d.gpu.MIGDevices = append(d.gpu.MIGDevices, md)
	}
}

func (d *device) ecc() {
	mode, o := call(d.g, "nvmlDeviceGetEccMode", two(d.dev.GetEccMode))
	if o != ok {
		return
	}
	e := &state.ECC{EnabledCurrent: mode.a == gonvml.FEATURE_ENABLED, EnabledPending: mode.b == gonvml.FEATURE_ENABLED}
	count := func(t gonvml.MemoryErrorType, c gonvml.EccCounterType) *uint64 {
		v, o := call(d.g, "nvmlDeviceGetTotalEccErrors", func() (uint64, gonvml.Return) {
			return d.dev.GetTotalEccErrors(t, c)
		})
		if o != ok {
			return nil
		}
		return &v
	}
	if e.EnabledCurrent {
		e.Volatile.Corrected = count(gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.VOLATILE_ECC)
		e.Volatile.Uncorrected = count(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC)
		e.Aggregate.Corrected = count(gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.AGGREGATE_ECC)
		e.Aggregate.Uncorrected = count(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.AGGREGATE_ECC)
	}
	d.gpu.ECC = e
}

func (d *device) pages() {
	if !d.sym["nvmlDeviceGetRemappedRows"] && d.g.stopped == "" {
		// A driver without the entry point (before R450) has no row
		// remapping to report: recorded as NOT_SUPPORTED would be.
		d.gpu.Unsupported = append(d.gpu.Unsupported, "nvmlDeviceGetRemappedRows")
	}
	if d.sym["nvmlDeviceGetRemappedRows"] {
		type rr struct {
			corr, unc        int
			pending, failure bool
		}
		if v, o := call(d.g, "nvmlDeviceGetRemappedRows", func() (rr, gonvml.Return) {
			c, u, p, f, r := d.dev.GetRemappedRows()
			return rr{c, u, p, f}, r
		}); o == ok {
			d.gpu.RemappedRows = &state.RemappedRows{Correctable: v.corr, Uncorrectable: v.unc, Pending: v.pending, Failure: v.failure}
			return // row remapping replaces page retirement: no need to ask for both
		}
	}
	sbe, o1 := call(d.g, "nvmlDeviceGetRetiredPages", func() ([]uint64, gonvml.Return) {
		return d.dev.GetRetiredPages(gonvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
	})
	if o1 != ok {
		return
	}
	dbe, o2 := call(d.g, "nvmlDeviceGetRetiredPages", func() ([]uint64, gonvml.Return) {
		return d.dev.GetRetiredPages(gonvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
	})
	pending, o3 := call(d.g, "nvmlDeviceGetRetiredPagesPendingStatus", d.dev.GetRetiredPagesPendingStatus)
	if o2 == ok && o3 == ok {
		d.gpu.RetiredPages = &state.RetiredPages{SingleBitECC: len(sbe), DoubleBitECC: len(dbe), Pending: pending == gonvml.FEATURE_ENABLED}
	}
}

func (d *device) clocks() {
	name, f := "nvmlDeviceGetCurrentClocksThrottleReasons", d.dev.GetCurrentClocksThrottleReasons
	if d.sym["nvmlDeviceGetCurrentClocksEventReasons"] {
		name, f = "nvmlDeviceGetCurrentClocksEventReasons", d.dev.GetCurrentClocksEventReasons
	}
	if v, o := call(d.g, name, f); o == ok {
		d.gpu.ClockEvents = &state.ClockEvents{Mask: v, Reasons: ClockEventNames(v)}
	}
}

// violationPolicies are the perf policies nvmlDeviceGetViolationStatus
// answers for, by the names state.Violation records (nvml.h
// nvmlPerfPolicyType_t).
var violationPolicies = []struct {
	name string
	p    gonvml.PerfPolicyType
}{
	{"power", gonvml.PERF_POLICY_POWER},
	{"thermal", gonvml.PERF_POLICY_THERMAL},
	{"sync_boost", gonvml.PERF_POLICY_SYNC_BOOST},
	{"board_limit", gonvml.PERF_POLICY_BOARD_LIMIT},
	{"low_utilization", gonvml.PERF_POLICY_LOW_UTILIZATION},
	{"reliability", gonvml.PERF_POLICY_RELIABILITY},
	{"total_app_clocks", gonvml.PERF_POLICY_TOTAL_APP_CLOCKS},
	{"total_base_clocks", gonvml.PERF_POLICY_TOTAL_BASE_CLOCKS},
}

// violations reads NVML's cumulative violation time per perf policy, raw.
// A GPU may support some policies and not others, so each is asked under a
// guard that files nothing as unsupported; the entry point goes into
// Unsupported once, when no policy answered. The first failure ends the
// walk: the same error eight times says nothing more. nvml.h marks the call
// deprecated in 13.0 (to be removed in CUDA 14), hence the symbol guard.
func (d *device) violations() {
	const name = "nvmlDeviceGetViolationStatus"
	if !d.sym[name] || d.g.stopped != "" {
		if d.g.stopped == "" {
			d.gpu.Unsupported = append(d.gpu.Unsupported, name)
		}
		return
	}
	quiet := &guard{ctx: d.g.ctx, timeout: d.g.timeout, gpu: d.gpu, errs: &d.gpu.Errors, lib: d.g.lib}
	var got []state.Violation
	failedOnce := false
	for _, pol := range violationPolicies {
		v, o := call(quiet, name, func() (gonvml.ViolationTime, gonvml.Return) {
			return d.dev.GetViolationStatus(pol.p)
		})
		if o == failed {
			failedOnce = true
			break
		}
		if o == ok {
			got = append(got, state.Violation{Policy: pol.name, ReferenceTimeUs: v.ReferenceTime, ViolationNs: v.ViolationTime})
		}
	}
	if quiet.stopped != "" {
		d.g.stopped = quiet.stopped
	}
	if len(got) == 0 && !failedOnce {
		d.gpu.Unsupported = append(d.gpu.Unsupported, name)
	}
	d.gpu.Violations = append(got, d.hwSlowdownCounters()...)
}

// hwSlowdownCounters reads the two cumulative HW slowdown times nvml.h has
// as field values (go-nvml v0.13.4-0, pkg/nvml/nvml.h):
// NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN 270 ("Throttling due to
// temperature being too high (reducing core clocks by a factor of 2 or
// more) in ns") and _HW_POWER_BRAKE_SLOWDOWN 271 ("... external power brake
// assertion trigger ..."). With two samples they say how long the real
// causes of HW slowdown held the clocks between the daemon's cycles, which
// one sample of the reason bits cannot. A driver that does not know the
// fields answers in each value's nvmlReturn; they are then left out and
// filed as unsupported under the field's name.
func (d *device) hwSlowdownCounters() []state.Violation {
	if d.g.stopped != "" {
		return nil
	}
	vals := []gonvml.FieldValue{
		{FieldId: gonvml.FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN},
		{FieldId: gonvml.FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN},
	}
	policies := []string{"hw_thermal_slowdown", "hw_power_brake_slowdown"}
	names := []string{"NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN", "NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN"}
	if !d.fieldValues(vals) {
		return nil
	}
	var out []state.Violation
	for i, v := range vals {
		switch ret := gonvml.Return(v.NvmlReturn); ret {
		case gonvml.SUCCESS:
		case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_INVALID_ARGUMENT:
			d.gpu.Unsupported = append(d.gpu.Unsupported, names[i])
			continue
		default:
			d.g.fail(names[i], returnString(ret), false)
			continue
		}
		ns, known := fieldUint(v)
		if !known {
			continue
		}
		out = append(out, state.Violation{Policy: policies[i], ReferenceTimeUs: uint64(max(v.Timestamp, 0)), ViolationNs: ns})
	}
	return out
}

// tlimitThresholds derives the absolute slowdown and shutdown temperatures
// where nvmlDeviceGetTemperatureThreshold no longer answers: nvml.h says it
// "is no longer the preferred interface ... on Ada and later" and points to
// the NVML_FI_DEV_TEMPERATURE_*_TLIMIT field values instead. Those are
// margins to the GPU's T.Limit (-8 and -2 on a real H200), and
// nvmlDeviceGetMarginTemperature is how far below T.Limit the GPU is now
// (54 at 33 C), so a threshold is current + margin - field: 33+54+2 = 89
// and 33+54+8 = 95, exactly what the threshold call answered on the same
// GPU (driver 580.159.04). Nil where a piece is missing or the result is not
// a plausible temperature.
func (d *device) tlimitThresholds(cur int) (slow, shut *int) {
	if d.g.stopped != "" {
		return nil, nil
	}
	m, o := call(d.g, "nvmlDeviceGetMarginTemperature", d.dev.GetMarginTemperature)
	if o != ok {
		return nil, nil
	}
	vals := []gonvml.FieldValue{
		{FieldId: gonvml.FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT},
		{FieldId: gonvml.FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT},
	}
	if !d.fieldValues(vals) {
		return nil, nil
	}
	field := func(v gonvml.FieldValue) *int {
		f, known := fieldInt(v)
		if gonvml.Return(v.NvmlReturn) != gonvml.SUCCESS || !known || f < -1000 || f > 1000 {
			return nil
		}
		i := int(f)
		return &i
	}
	margin := int(m.MarginTemperature)
	return state.TLimitThresholds(cur, &margin, field(vals[0]), field(vals[1]))
}

// fieldValues asks nvmlDeviceGetFieldValues for vals, quietly: a driver
// that does not know the call or a field leaves what depends on it unknown,
// and is not an error of the GPU; each value's own nvmlReturn says whether
// it was answered. A hang still stops the device's remaining calls.
func (d *device) fieldValues(vals []gonvml.FieldValue) bool {
	quiet := &guard{ctx: d.g.ctx, timeout: d.g.timeout, gpu: d.gpu, errs: &d.gpu.Errors, unsupp: &d.gpu.Unsupported, lib: d.g.lib}
	_, o := call(quiet, "nvmlDeviceGetFieldValues", func() (struct{}, gonvml.Return) { return struct{}{}, d.dev.GetFieldValues(vals) })
	if quiet.stopped != "" {
		d.g.stopped = quiet.stopped
	}
	return o == ok
}

func (d *device) pcie() {
	cg, o1 := call(d.g, "nvmlDeviceGetCurrPcieLinkGeneration", d.dev.GetCurrPcieLinkGeneration)
	mg, o2 := call(d.g, "nvmlDeviceGetMaxPcieLinkGeneration", d.dev.GetMaxPcieLinkGeneration)
	cw, o3 := call(d.g, "nvmlDeviceGetCurrPcieLinkWidth", d.dev.GetCurrPcieLinkWidth)
	mw, o4 := call(d.g, "nvmlDeviceGetMaxPcieLinkWidth", d.dev.GetMaxPcieLinkWidth)
	if o1 != ok || o2 != ok || o3 != ok || o4 != ok {
		return
	}
	p := &state.PCIe{CurrentGen: cg, MaxGen: mg, CurrentWidth: cw, MaxWidth: mw}
	if v, o := call(d.g, "nvmlDeviceGetPcieReplayCounter", d.dev.GetPcieReplayCounter); o == ok {
		u := uint64(v)
		p.ReplayCounter = &u
	}
	d.gpu.PCIe = p
}

func (d *device) thermalPower() {
	if t, o := call(d.g, "nvmlDeviceGetTemperature", func() (uint32, gonvml.Return) {
		return d.dev.GetTemperature(gonvml.TEMPERATURE_GPU)
	}); o == ok {
		th := &state.Thermal{TemperatureC: int(t)}
		threshold := func(k gonvml.TemperatureThresholds) *int {
			v, o := call(d.g, "nvmlDeviceGetTemperatureThreshold", func() (uint32, gonvml.Return) {
				return d.dev.GetTemperatureThreshold(k)
			})
			if o != ok {
				return nil
			}
			i := int(v)
			return &i
		}
		th.SlowdownC = threshold(gonvml.TEMPERATURE_THRESHOLD_SLOWDOWN)
		th.ShutdownC = threshold(gonvml.TEMPERATURE_THRESHOLD_SHUTDOWN)
		if th.SlowdownC == nil && th.ShutdownC == nil {
			th.SlowdownC, th.ShutdownC = d.tlimitThresholds(int(t))
		}
		d.memoryTemperature(th)
		d.gpu.Thermal = th
	}
	if mw, o := call(d.g, "nvmlDeviceGetPowerUsage", d.dev.GetPowerUsage); o == ok {
		p := &state.Power{DrawWatts: float64(mw) / 1000}
		if lim, o := call(d.g, "nvmlDeviceGetEnforcedPowerLimit", d.dev.GetEnforcedPowerLimit); o == ok {
			w := float64(lim) / 1000
			p.LimitWatts = &w
		}
		d.gpu.Power = p
	}
}

// memoryTemperature reads the memory (HBM) temperature, the field value
// NVML_FI_DEV_MEMORY_TEMP (82, nvml.h: "Memory temperature for the
// device"), and where it answers, the memory's own limit:
// nvmlDeviceGetTemperatureThreshold(NVML_TEMPERATURE_THRESHOLD_MEM_MAX),
// "Memory Temperature at which the GPU will begin SW slowdown". A field the
// driver does not know is filed as unsupported under the field's name; a
// failed field, under the same name as an error.
func (d *device) memoryTemperature(th *state.Thermal) {
	if d.g.stopped != "" {
		return
	}
	const name = "NVML_FI_DEV_MEMORY_TEMP"
	v, read := d.field(name, gonvml.FI_DEV_MEMORY_TEMP)
	if !read {
		return
	}
	f, known := fieldInt(v)
	switch {
	case !known:
		d.g.fail(name, fmt.Sprintf("field value of unknown type %d", v.ValueType), false)
		return
	case f <= 0 || f >= 200:
		// 0 is what a vGPU guest shows for a sensor it cannot see
		// (docs/nvidia-smi.md): no reading, and no fault of the GPU.
		d.gpu.Unsupported = append(d.gpu.Unsupported, name)
		return
	}
	mt := int(f)
	th.MemoryTemperatureC = &mt
	if v, o := call(d.g, state.MemoryMaxThresholdCall, func() (uint32, gonvml.Return) {
		return d.dev.GetTemperatureThreshold(gonvml.TEMPERATURE_THRESHOLD_MEM_MAX)
	}); o == ok && v > 0 && v < 200 {
		i := int(v)
		th.MemoryMaxC = &i
	}
}

// sram reads nvmlDeviceGetSramEccErrorStatus (Ampere and later, root only;
// newer than the oldest driver supported, so guarded by its symbol).
func (d *device) sram() {
	if !d.sym["nvmlDeviceGetSramEccErrorStatus"] {
		if d.g.stopped == "" {
			d.gpu.Unsupported = append(d.gpu.Unsupported, "nvmlDeviceGetSramEccErrorStatus")
		}
		return
	}
	if s, o := call(d.g, "nvmlDeviceGetSramEccErrorStatus", d.dev.GetSramEccErrorStatus); o == ok {
		d.gpu.SRAMECC = &state.SRAMECC{
			AggregateUncParity: s.AggregateUncParity, AggregateUncSecDed: s.AggregateUncSecDed, AggregateCor: s.AggregateCor,
			VolatileUncParity: s.VolatileUncParity, VolatileUncSecDed: s.VolatileUncSecDed, VolatileCor: s.VolatileCor,
			ThresholdExceeded: s.BThresholdExceeded != 0,
		}
	}
}

// utilization is nvmlDeviceGetUtilizationRates: the share of the driver's
// last sample period with a kernel running, and with memory traffic.
func (d *device) utilization() {
	if u, o := call(d.g, "nvmlDeviceGetUtilizationRates", d.dev.GetUtilizationRates); o == ok {
		d.gpu.Utilization = &state.Utilization{GPUPercent: u.Gpu, MemoryPercent: u.Memory}
	}
	// nvml.h nvmlPstates_t: NVML_PSTATE_0 (max performance) ..
	// NVML_PSTATE_15 (min), NVML_PSTATE_UNKNOWN 32.
	if p, o := call(d.g, "nvmlDeviceGetPerformanceState", d.dev.GetPerformanceState); o == ok && p >= gonvml.PSTATE_0 && p <= gonvml.PSTATE_15 {
		v := int(p)
		d.gpu.PerformanceState = &v
	}
}

// valueNotAvailable is nvml.h's NVML_VALUE_NOT_AVAILABLE (-1 as unsigned
// long long): a process's used memory the driver does not know.
const valueNotAvailable = ^uint64(0)

func (d *device) processes() {
	ps, o := call(d.g, "nvmlDeviceGetComputeRunningProcesses", d.dev.GetComputeRunningProcesses)
	if o != ok {
		return
	}
	d.gpu.ProcessesKnown = true
	for _, p := range ps {
		proc := state.Process{PID: p.Pid, UsedMemoryBytes: p.UsedGpuMemory}
		if p.UsedGpuMemory == valueNotAvailable {
			// nvml.h: "Under WDDM, NVML_VALUE_NOT_AVAILABLE is always
			// reported"; a number that is not one.
			proc.UsedMemoryBytes, proc.UsedMemoryUnknown = 0, true
		}
		d.gpu.Processes = append(d.gpu.Processes, proc)
	}
	d.mpsProcesses()
}

// mpsCall is the entry point go-nvml binds for GetMPSComputeRunningProcesses
// (_v3, _v2 or the unversioned v1, whichever the library has); the
// unversioned one is looked up, as older drivers lack it altogether.
const mpsCall = "nvmlDeviceGetMPSComputeRunningProcesses"

// mpsProcesses is nvmlDeviceGetMPSComputeRunningProcesses: the processes
// with an MPS compute context on the GPU (nvml.h: "Get information about
// processes with a MPS compute context on a device", NVML API reference).
// Each is marked MPSClient in Processes, and one the compute list did not
// name is added (whether the compute list names a client too is not
// assumed either way).
// An error leaves MPSProcessesKnown false (the call in Errors) and a
// library without the entry point or a NOT_SUPPORTED answer files the call
// as unsupported: neither says "no MPS clients".
func (d *device) mpsProcesses() {
	if !d.sym[mpsCall] {
		if d.g.stopped == "" {
			d.gpu.Unsupported = append(d.gpu.Unsupported, mpsCall)
		}
		return
	}
	ps, o := call(d.g, mpsCall, d.dev.GetMPSComputeRunningProcesses)
	if o != ok {
		return
	}
	d.gpu.MPSProcessesKnown = true
	for _, p := range ps {
		i := slices.IndexFunc(d.gpu.Processes, func(q state.Process) bool { return q.PID == p.Pid })
		if i < 0 {
			proc := state.Process{PID: p.Pid, UsedMemoryBytes: p.UsedGpuMemory}
			if p.UsedGpuMemory == valueNotAvailable {
				proc.UsedMemoryBytes, proc.UsedMemoryUnknown = 0, true
			}
			d.gpu.Processes = append(d.gpu.Processes, proc)
			i = len(d.gpu.Processes) - 1
		}
		d.gpu.Processes[i].MPSClient = true
	}
}

func (d *device) affinity() {
	if d.sym["nvmlDeviceGetNumaNodeId"] {
		if n, o := call(d.g, "nvmlDeviceGetNumaNodeId", d.dev.GetNumaNodeId); o == ok {
			d.gpu.NUMANode = &n
		}
	}
	if mask, o := call(d.g, "nvmlDeviceGetCpuAffinity", func() ([]uint, gonvml.Return) {
		return d.dev.GetCpuAffinity(maxCPUs / 64)
	}); o == ok {
		d.gpu.CPUAffinity = cpuList(mask)
	}
}

// nvlinks walks every possible link. Links past the GPU's count answer
// INVALID_ARGUMENT or NOT_SUPPORTED: that is the end of the list, not a
// finding, so the state call runs under a guard that files no "unsupported".
func (d *device) nvlinks() {
	if d.g.stopped != "" {
		return
	}
	var links []state.NVLink
	quiet := &guard{ctx: d.g.ctx, timeout: d.g.timeout, gpu: d.gpu, errs: &d.gpu.Errors, lib: d.g.lib}
	for link := 0; link < gonvml.NVLINK_MAX_LINKS; link++ {
		l := link
		st, o := call(quiet, "nvmlDeviceGetNvLinkState", func() (gonvml.EnableState, gonvml.Return) {
			s, r := d.dev.GetNvLinkState(l)
			if r == gonvml.ERROR_INVALID_ARGUMENT {
				r = gonvml.ERROR_NOT_SUPPORTED
			}
			return s, r
		})
		if quiet.stopped != "" {
			d.g.stopped = quiet.stopped
			break
		}
		if o != ok {
			continue
		}
		nl := state.NVLink{Link: l, Up: st == gonvml.FEATURE_ENABLED}
		if !nl.Up {
			// A link that is not active has no version, peer or traffic to
			// count: a PCIe card answers for all 18 links disabled, and
			// asking each for six more things was 108 calls per GPU per
			// cycle answered with errors.
			links = append(links, nl)
			continue
		}
		if v, o := call(d.g, "nvmlDeviceGetNvLinkVersion", func() (uint32, gonvml.Return) { return d.dev.GetNvLinkVersion(l) }); o == ok {
			nl.Version = int(v)
		}
		if v, o := call(d.g, "nvmlDeviceGetNvLinkRemoteDeviceType", func() (gonvml.IntNvLinkDeviceType, gonvml.Return) {
			return d.dev.GetNvLinkRemoteDeviceType(l)
		}); o == ok {
			nl.RemoteType = remoteTypeName(v)
		}
		if v, o := call(d.g, "nvmlDeviceGetNvLinkRemotePciInfo", func() (gonvml.PciInfo, gonvml.Return) {
			return d.dev.GetNvLinkRemotePciInfo(l)
		}); o == ok {
			nl.RemotePCIBusID = normBusID(cString(v.BusId[:]))
		}
		counter := func(c gonvml.NvLinkErrorCounter) *uint64 {
			v, o := call(d.g, "nvmlDeviceGetNvLinkErrorCounter", func() (uint64, gonvml.Return) {
				return d.dev.GetNvLinkErrorCounter(l, c)
			})
			if o != ok {
				return nil
			}
			return &v
		}
		nl.CRCFlitErrors = counter(gonvml.NVLINK_ERROR_DL_CRC_FLIT)
		nl.CRCDataErrors = counter(gonvml.NVLINK_ERROR_DL_CRC_DATA)
		nl.ReplayErrors = counter(gonvml.NVLINK_ERROR_DL_REPLAY)
		nl.RecoveryErrors = counter(gonvml.NVLINK_ERROR_DL_RECOVERY)
		links = append(links, nl)
	}
	if len(links) == 0 {
		d.gpu.Unsupported = append(d.gpu.Unsupported, "nvmlDeviceGetNvLinkState")
	}
	d.gpu.NVLinks = links
}

// FabricInfoV is nvmlDeviceGetGpuFabricInfoV at struct version 3, offered
// by the library. go-nvml routes that entry point around its Interface
// (Device.GetGpuFabricInfoV hands back a handler that calls the C library
// itself), so a library offers it through this interface instead: Open's
// library calls the driver, the simulated one (sim/nvml) answers from its
// devices. The fabric code is the same for both.
type FabricInfoV interface {
	DeviceGetGpuFabricInfoV3(gonvml.Device) (gonvml.GpuFabricInfo_v3, gonvml.Return)
}

// fabric asks the newest fabric API the library has.
func (d *device) fabric() {
	type fi struct {
		state, status uint32
		mask          uint32
		clique        uint32
		cluster       [16]uint8
		api           string
		summary       uint8
	}
	var got fi
	var o outcome = unsupported
	switch {
	case d.sym["nvmlDeviceGetGpuFabricInfo_v4"]:
		got, o = call(d.g, "nvmlDeviceGetGpuFabricInfo_v4", func() (fi, gonvml.Return) {
			v, r := d.dev.GetGpuFabricInfo_v4()
			c := uint32(0)
			if v.NumCliques > 0 {
				c = v.Cliques[0].Id
			}
			return fi{uint32(v.State), v.Status, v.HealthMask, c, v.ClusterUuid, "nvmlDeviceGetGpuFabricInfo_v4", v.HealthSummary}, r
		})
	case d.fabricV != nil && d.sym["nvmlDeviceGetGpuFabricInfoV"]:
		got, o = call(d.g, "nvmlDeviceGetGpuFabricInfoV", func() (fi, gonvml.Return) {
			v, r := d.fabricV.DeviceGetGpuFabricInfoV3(d.dev)
			return fi{uint32(v.State), v.Status, v.HealthMask, v.CliqueId, v.ClusterUuid, "nvmlDeviceGetGpuFabricInfoV", v.HealthSummary}, r
		})
	case d.sym["nvmlDeviceGetGpuFabricInfo"]:
		got, o = call(d.g, "nvmlDeviceGetGpuFabricInfo", func() (fi, gonvml.Return) {
			v, r := d.dev.GetGpuFabricInfo()
			return fi{uint32(v.State), v.Status, 0, v.CliqueId, v.ClusterUuid, "nvmlDeviceGetGpuFabricInfo", 0}, r
		})
	}
	if o != ok {
		return
	}
	f := &state.Fabric{
		API:           got.api,
		State:         FabricStateName(got.state),
		Status:        fabricStatus(got.status),
		HealthMask:    got.mask,
		HealthSummary: got.summary,
		CliqueID:      got.clique,
	}
	if got.cluster != [16]uint8{} {
		f.ClusterUUID = fmt.Sprintf("%x-%x-%x-%x-%x", got.cluster[0:4], got.cluster[4:6], got.cluster[6:8], got.cluster[8:10], got.cluster[10:16])
	}
	d.gpu.Fabric = f
}

// cpuList turns NVML's CPU bitmask into the list form sysfs and Slurm use.
func cpuList(words []uint) string {
	var cpus []int
	for cpu := 0; cpu < len(words)*64; cpu++ {
		if words[cpu/64]&(1<<(uint(cpu)%64)) != 0 {
			cpus = append(cpus, cpu)
		}
	}
	return cpulist.Format(cpus)
}

// pciBusID is the GPU's canonical address from nvmlPciInfo: BusId, else
// the legacy 13-character field some mocks and old drivers fill.
func pciBusID(v gonvml.PciInfo) string {
	id := cString(v.BusId[:])
	if id == "" {
		id = cString(v.BusIdLegacy[:])
	}
	return normBusID(id)
}
