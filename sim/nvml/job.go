package nvml

import (
	"sync/atomic"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// idle is what a real GPU with nothing running reports: no kernel and no
// memory traffic in the last sample period, SM clock parked, no process
// samples (NOT_FOUND).
func idle(d *server.Device, model string) {
	d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) { return gonvml.Utilization{}, gonvml.SUCCESS }
	// Per clock domain: an idle H100 shows SM 345, memory 2619 and video
	// 765 MHz, not 345 for all of them.
	d.GetClockInfoFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) { return idleClock(model, c), gonvml.SUCCESS }
	d.GetMaxClockInfoFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) { return maxClock(model, c), gonvml.SUCCESS }
	d.GetPcieThroughputFunc = func(gonvml.PcieUtilCounter) (uint32, gonvml.Return) { return 120, gonvml.SUCCESS }
	d.GetProcessUtilizationFunc = func(uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		return nil, gonvml.ERROR_NOT_FOUND
	}
}

// job makes the simulated job's GPUs run as the scenario says: utilisation
// within ±2 of the table from tick to tick, the memory it holds, its rank
// on the GPUs that have one (with per-process samples), PCIe and NVLink
// traffic in proportion to the work, and the power cap at full load.
func job(sys *System, sc *simulate.JobScenario, maxSM uint32) {
	for k, gi := range simulate.SimJob.GPUs {
		if gi >= len(sys.Devices) {
			continue
		}
		d := sys.Devices[gi]
		util, memUtil := sc.GPUUtil[k], sc.MemUtil[k]
		exited := sc.ExitedRank == k+1
		var tick atomic.Uint32
		jitter := func(v uint32) uint32 {
			if v == 0 {
				return 0
			}
			j := []int{0, 1, -1, 2, -2}[tick.Add(1)%5]
			return uint32(min(100, max(0, int(v)+j)))
		}
		d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
			return gonvml.Utilization{Gpu: jitter(util), Memory: memUtil}, gonvml.SUCCESS
		}
		total := d.MemoryInfo.Total
		used := total / 100 * uint64(sc.GPUMemPercent[k])
		d.MemoryInfo = gonvml.Memory{Total: total, Used: used, Free: total - used}
		limit := d.GetEnforcedPowerLimitFunc
		lw, _ := limit()
		idleW, _ := d.GetPowerUsageFunc()
		draw := idleW + (lw-idleW)/100*util
		if k < len(sc.PowerPercent) {
			draw = lw / 100 * sc.PowerPercent[k]
		}
		d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return draw, gonvml.SUCCESS }
		sm := 345 + (maxSM-345)/100*min(100, util*2)
		model := sys.Spec.Model
		d.GetClockInfoFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) {
			if c == gonvml.CLOCK_SM || c == gonvml.CLOCK_GRAPHICS {
				return sm, gonvml.SUCCESS
			}
			return idleClock(model, c), gonvml.SUCCESS
		}
		reasons := uint64(gonvml.ClocksEventReasonGpuIdle)
		if util > 0 {
			reasons = 0
		}
		if util >= 90 {
			reasons = gonvml.ClocksEventReasonSwPowerCap
		}
		d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) { return reasons, gonvml.SUCCESS }
		d.GetPcieThroughputFunc = func(gonvml.PcieUtilCounter) (uint32, gonvml.Return) { return 120 + util*20000, gonvml.SUCCESS }
		var nv atomic.Uint64
		prevFields := d.GetFieldValuesFunc
		d.GetFieldValuesFunc = func(vals []gonvml.FieldValue) gonvml.Return {
			// util × 40 MiB per read: ~4 GiB per 1 s tick at 100%, a
			// data-parallel gradient exchange well inside H100's 450 GB/s
			// per direction. (It was util × 4 GiB: 400 GiB a tick.)
			kib := nv.Add(uint64(util) * 40 << 10)
			for i := range vals {
				switch vals[i].FieldId {
				case gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
					vals[i].ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
					putU64(vals[i].Value[:], kib)
					vals[i].NvmlReturn = uint32(gonvml.SUCCESS)
				default:
					vals[i].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
					if prevFields != nil && prevFields(vals[i:i+1]) != gonvml.SUCCESS {
						vals[i].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
					}
				}
			}
			return gonvml.SUCCESS
		}
		if !sc.RanksOnGPU[k] || exited {
			continue
		}
		pid := uint32(simulate.SimJob.RankPIDs[k])
		sys.Owners[pid] = Owner{User: simulate.SimJob.User, Command: "python train.py --rank " + string(rune('0'+k))}
		d.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
			return []gonvml.ProcessInfo{{Pid: pid, UsedGpuMemory: used - min(used, 551<<20)}}, gonvml.SUCCESS
		}
		var ts atomic.Uint64
		d.GetProcessUtilizationFunc = func(since uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
			t := ts.Add(1_000_000)
			return []gonvml.ProcessUtilizationSample{{Pid: pid, TimeStamp: since + t, SmUtil: util, MemUtil: memUtil}}, gonvml.SUCCESS
		}
	}
}

func putU32(b []byte, v uint32) {
	for i := 0; i < 4; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

func putU64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}
