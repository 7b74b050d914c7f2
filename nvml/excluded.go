package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuprobe/gpuprobe/state"
)

// NVML's excluded-GPU queries (NVML API reference, "Excluded GPU Queries",
// group__nvmlExcludedGpuQueries): nvmlGetExcludedDeviceCount "Retrieves the
// number of excluded GPU devices in the system", and
// nvmlGetExcludedDeviceInfoByIndex "Acquire the device information for an
// excluded GPU device, based on its index" (valid indices 0..count-1), an
// nvmlExcludedDeviceInfo_t of pciInfo and uuid. The GPUs so excluded are the
// ones the driver option NVreg_ExcludedGpus / NVreg_ExcludeAllGpus keeps out
// of its card list (open-gpu-kernel-modules kernel-open/nvidia/nv-pci.c
// nv_check_and_exclude_gpu; nv.c nvidia_read_card_info: "We do not include
// excluded GPUs"): bound to nvidia, not counted by nvmlDeviceGetCount.
const (
	excludedCountCall = "nvmlGetExcludedDeviceCount"
	excludedInfoCall  = "nvmlGetExcludedDeviceInfoByIndex"
)

// maxExcluded bounds the entries read: NVML's own bound on GPUs (a count
// above it is no real answer).
const maxExcluded = state.MaxGPUs

// excluded reads NVML's excluded GPUs into st.Excluded, under g: a guard
// of its own (keyed "excluded" for deadline.Do), so a hung query costs
// this fact alone and is not issued again while it is stuck. ExcludedKnown
// is set only when the count and every entry were read with a bus ID; a
// library without the entry points (looked up first: calling a missing
// one would abort the process), NOT_SUPPORTED, an error or a hang leave it
// false, keeping the entries read.
func excluded(g *guard, lib gonvml.Interface, sym symbols, st *state.NVML) {
	if !sym[excludedCountCall] || !sym[excludedInfoCall] {
		return
	}
	n, o := call(g, excludedCountCall, lib.GetExcludedDeviceCount)
	if o != ok {
		return
	}
	if n < 0 || n > maxExcluded {
		g.fail(excludedCountCall, fmt.Sprintf("%d excluded GPUs: outside 0..%d, not read", n, maxExcluded), false)
		return
	}
	complete := true
	for i := 0; i < n; i++ {
		info, o := call(g, excludedInfoCall, func() (gonvml.ExcludedDeviceInfo, gonvml.Return) {
			return lib.GetExcludedDeviceInfoByIndex(i)
		})
		if o != ok {
			complete = false
			if g.stopped != "" {
				break
			}
			continue
		}
		id := pciBusID(info.PciInfo)
		if id == "" {
			g.fail(excludedInfoCall, fmt.Sprintf("excluded GPU %d: no PCI bus ID", i), false)
			complete = false
			continue
		}
		st.Excluded = append(st.Excluded, id)
	}
	st.ExcludedKnown = complete
}
