package nvml

import (
	"fmt"
	"strconv"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

type faultFunc func(*System, simulate.Fault) error

// faults are the NVML-level faults. Each wraps the dressed mock functions of
// one GPU (index after "=", GPU 0 when absent) the way the real driver would
// answer on a node with that failure.
var faults = map[string]faultFunc{}

func register(name, arg, effect string, f faultFunc) {
	simulate.Register(simulate.FaultDoc{Name: name, Arg: arg, Effect: effect})
	faults[name] = f
}

// perGPU adapts a fault that changes one device.
func perGPU(f func(*server.Device, simulate.Fault) error) faultFunc {
	return func(s *System, fl simulate.Fault) error {
		i, err := fl.GPU(len(s.Devices))
		if err != nil {
			return err
		}
		return f(s.Devices[i], fl)
	}
}

func init() {
	register("row-remap-pending", "GPU", "a row remap is pending: the GPU needs a reset",
		perGPU(func(d *server.Device, _ simulate.Fault) error {
			d.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) { return 0, 1, true, false, gonvml.SUCCESS }
			return nil
		}))
	register("row-remap-failure", "GPU", "a row remapping failed (nvmlDeviceGetRemappedRows failureOccurred)",
		perGPU(func(d *server.Device, _ simulate.Fault) error {
			d.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) { return 0, 512, false, true, gonvml.SUCCESS }
			return nil
		}))
	register("ecc-uncorrectable", "GPU", "volatile uncorrectable ECC errors on the GPU",
		perGPU(func(d *server.Device, _ simulate.Fault) error {
			d.GetTotalEccErrorsFunc = func(t gonvml.MemoryErrorType, _ gonvml.EccCounterType) (uint64, gonvml.Return) {
				if t == gonvml.MEMORY_ERROR_TYPE_UNCORRECTED {
					return 2, gonvml.SUCCESS
				}
				return 14, gonvml.SUCCESS
			}
			return nil
		}))
	register("gpu-lost", "GPU", "the GPU falls off the bus mid-collection: every call after its identity answers GPU_IS_LOST",
		perGPU(func(d *server.Device, _ simulate.Fault) error {
			lost := func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{}, gonvml.ERROR_GPU_IS_LOST }
			d.GetMemoryInfoFunc = lost
			d.GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) { return gonvml.Memory_v2{}, gonvml.ERROR_GPU_IS_LOST }
			return nil
		}))
	register("nvml-hang", "GPU", "nvmlDeviceGetTemperature never returns on the GPU (a wedged driver)",
		perGPU(func(d *server.Device, _ simulate.Fault) error {
			d.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { select {} }
			return nil
		}))
	register("nvlink-down", "GPU[@LINK]", "one NVLink of the GPU is down (link 0 unless LINK is given as LINK@GPU)",
		perGPU(func(d *server.Device, f simulate.Fault) error {
			link := 0
			if v, _, found := strings.Cut(f.Value, "@"); found {
				n, err := strconv.Atoi(v)
				if err != nil {
					return fmt.Errorf("fault nvlink-down=%s: want GPU or LINK@GPU", f.Value)
				}
				link = n
			}
			prev := d.GetNvLinkStateFunc
			d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
				st, r := prev(l)
				if l == link && r == gonvml.SUCCESS {
					return gonvml.FEATURE_DISABLED, r
				}
				return st, r
			}
			return nil
		}))
	register("nvlinks-lost", "", "every NVLink of every GPU is down (an NVSwitch baseboard or every switch tray lost): the GPUs look alike, so only the platform's expectation sees it",
		func(s *System, _ simulate.Fault) error {
			for _, d := range s.Devices {
				prev := d.GetNvLinkStateFunc
				d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
					st, r := prev(l)
					if r == gonvml.SUCCESS {
						return gonvml.FEATURE_DISABLED, r
					}
					return st, r
				}
			}
			return nil
		})
	register("fabric-info-v", "", "the driver's NVML has no nvmlDeviceGetGpuFabricInfo_v4 (drivers before R550): fabric state comes from nvmlDeviceGetGpuFabricInfoV",
		func(s *System, _ simulate.Fault) error {
			s.Server.LookupSymbolFunc = func(name string) error {
				if name == "nvmlDeviceGetGpuFabricInfo_v4" {
					return gonvml.ERROR_FUNCTION_NOT_FOUND
				}
				return nil
			}
			return nil
		})
	register("fabric-incomplete", "", "NVSwitch fabric registration stuck IN_PROGRESS on every GPU (fabric manager not finished)",
		func(s *System, _ simulate.Fault) error {
			for _, d := range s.Devices {
				prev := d.GetGpuFabricInfo_v4Func
				d.GetGpuFabricInfo_v4Func = func() (gonvml.GpuFabricInfo_v4, gonvml.Return) {
					f, r := prev()
					f.State = gonvml.GPU_FABRIC_STATE_IN_PROGRESS
					f.Status = uint32(gonvml.ERROR_NOT_READY)
					return f, r
				}
			}
			return nil
		})
	// The threshold is the fault's own: the mock answers
	// NVML_TEMPERATURE_THRESHOLD_MEM_MAX with NOT_SUPPORTED on a healthy
	// GPU (no real H100 reading of it is known to us); 95 °C is the one
	// absolute "Memory Max Operating Temp" a real capture here prints (an
	// HBM2 TITAN V, nvsmi/testdata/gpud_titanv_560.35.03_nvidia-smi-q.txt).
	register("hbm-hot", "GPU", "the GPU's memory (HBM) at 96 °C, above its memory max threshold of 95 °C (NVML_FI_DEV_MEMORY_TEMP, NVML_TEMPERATURE_THRESHOLD_MEM_MAX)",
		perGPU(func(d *server.Device, _ simulate.Fault) error {
			prevFields, prevThreshold := d.GetFieldValuesFunc, d.GetTemperatureThresholdFunc
			d.GetFieldValuesFunc = func(vals []gonvml.FieldValue) gonvml.Return {
				r := prevFields(vals)
				for i := range vals {
					if vals[i].FieldId == gonvml.FI_DEV_MEMORY_TEMP {
						vals[i].ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_INT)
						putU32(vals[i].Value[:], 96)
						vals[i].NvmlReturn = uint32(gonvml.SUCCESS)
					}
				}
				return r
			}
			d.GetTemperatureThresholdFunc = func(k gonvml.TemperatureThresholds) (uint32, gonvml.Return) {
				if k == gonvml.TEMPERATURE_THRESHOLD_MEM_MAX {
					return 95, gonvml.SUCCESS
				}
				return prevThreshold(k)
			}
			return nil
		}))
	register("sram-threshold", "GPU", "the GPU's SRAM error threshold of field diagnostics is exceeded (nvmlDeviceGetSramEccErrorStatus bThresholdExceeded, nvidia-smi <sram_threshold_exceeded>Yes)",
		perGPU(func(d *server.Device, _ simulate.Fault) error {
			d.GetSramEccErrorStatusFunc = func() (gonvml.EccSramErrorStatus, gonvml.Return) {
				return gonvml.EccSramErrorStatus{Version: 1, AggregateUncSecDed: 3, AggregateUncBucketSm: 3, BThresholdExceeded: 1}, gonvml.SUCCESS
			}
			return nil
		}))
	register("hw-slowdown", "GPU", "hardware slowdown clock event active on the GPU",
		perGPU(func(d *server.Device, _ simulate.Fault) error {
			d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) {
				return gonvml.ClocksThrottleReasonHwSlowdown, gonvml.SUCCESS
			}
			return nil
		}))
	register("pcie-x8", "GPU", "the GPU's PCIe link trained at x8 of x16 while the GPU is working (an idle GPU may narrow its link on purpose)",
		perGPU(func(d *server.Device, _ simulate.Fault) error {
			d.GetCurrPcieLinkWidthFunc = func() (int, gonvml.Return) { return 8, gonvml.SUCCESS }
			// Busy: no GPU-idle clock event, so the narrow link is judged.
			d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) { return 0, gonvml.SUCCESS }
			return nil
		}))
	register("leftover-process", "GPU", "a compute process holds 4 GiB on the GPU (a job that did not clean up)",
		func(s *System, f simulate.Fault) error {
			s.Owners[424242] = Owner{User: "alice", Command: "python train.py --epochs 90"}
			return perGPU(leftover)(s, f)
		})
	// MPS (NVIDIA's MPS guide): the control daemon starts a server with its
	// client's UID; the server holds the GPU's context for its clients and
	// is a plain compute process, its clients are what
	// nvmlDeviceGetMPSComputeRunningProcesses lists. Here the compute list
	// names the clients too; nvml's tests cover a client only the MPS list
	// names.
	register("mps", "GPU", "an MPS server (pid 424300, nvidia-cuda-mps-server) and two MPS clients of it (pids 424301-424302, alice's python) on the GPU",
		func(s *System, f simulate.Fault) error {
			s.Owners[mpsServerPID] = Owner{User: "alice", Command: "nvidia-cuda-mps-server"}
			for _, pid := range mpsClientPIDs {
				s.Owners[pid] = Owner{User: "alice", Command: "python train.py"}
			}
			return perGPU(mps)(s, f)
		})
	register("persistence-off", "", "persistence mode off on every GPU",
		func(s *System, _ simulate.Fault) error {
			for _, d := range s.Devices {
				d.GetPersistenceModeFunc = func() (gonvml.EnableState, gonvml.Return) { return gonvml.FEATURE_DISABLED, gonvml.SUCCESS }
			}
			return nil
		})
}

func leftover(d *server.Device, _ simulate.Fault) error {
	d.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
		return []gonvml.ProcessInfo{{Pid: 424242, UsedGpuMemory: 4 << 30}}, gonvml.SUCCESS
	}
	d.MemoryInfo.Used += 4 << 30
	d.MemoryInfo.Free -= 4 << 30
	return nil
}

const mpsServerPID = 424300

var mpsClientPIDs = []uint32{424301, 424302}

func mps(d *server.Device, _ simulate.Fault) error {
	clients := []gonvml.ProcessInfo{{Pid: mpsClientPIDs[0], UsedGpuMemory: 2 << 30}, {Pid: mpsClientPIDs[1], UsedGpuMemory: 2 << 30}}
	d.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
		return append([]gonvml.ProcessInfo{{Pid: mpsServerPID, UsedGpuMemory: 30 << 20}}, clients...), gonvml.SUCCESS
	}
	d.GetMPSComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
		return clients, gonvml.SUCCESS
	}
	d.MemoryInfo.Used += 4<<30 + 30<<20
	d.MemoryInfo.Free -= 4<<30 + 30<<20
	return nil
}
