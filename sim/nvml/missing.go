package nvml

import (
	"fmt"
	"slices"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// A GPU on the PCI bus that NVML does not list. The simulated sysfs keeps
// every GPU of the model bound to nvidia (sim/topo); these faults take the
// GPU out of NVML's enumeration, as the driver does:
//
//   - gpu-missing: the driver did not bring it up (a failed RmInitAdapter
//     leaves it out of nvidia-smi's count: open-gpu-kernel-modules issue
//     789) and does not exclude it: nvmlGetExcludedDeviceCount answers 0.
//   - gpu-excluded: the driver option NVreg_ExcludedGpus names it: the
//     driver keeps it bound and out of its card list (nv-pci.c
//     nv_check_and_exclude_gpu, nv.c nvidia_read_card_info), and NVML lists
//     it among the excluded GPUs (nvmlGetExcludedDeviceInfoByIndex).
//
// The GPU is named by the node's index; the others are renumbered from 0,
// as NVML numbers the GPUs it enumerates. Applied after every other fault
// (which name GPUs by the node's index too).
const (
	missingFault  = "gpu-missing"
	excludedFault = "gpu-excluded"
)

func init() {
	register(missingFault, "GPU", "the GPU is on the PCI bus, bound to nvidia, but NVML does not list it (the driver did not bring it up); NVML's excluded list is empty",
		func(*System, simulate.Fault) error { return nil })
	register(excludedFault, "GPU", "the driver excludes the GPU (NVreg_ExcludedGpus): bound to nvidia, not listed by NVML, named by nvmlGetExcludedDeviceInfoByIndex",
		func(*System, simulate.Fault) error { return nil })
}

// healthyExcluded is what a driver without exclusions answers: none.
func healthyExcluded(srv *server.Server) {
	srv.GetExcludedDeviceCountFunc = func() (int, gonvml.Return) { return 0, gonvml.SUCCESS }
	srv.GetExcludedDeviceInfoByIndexFunc = func(int) (gonvml.ExcludedDeviceInfo, gonvml.Return) {
		return gonvml.ExcludedDeviceInfo{}, gonvml.ERROR_INVALID_ARGUMENT
	}
}

// unlist takes the GPUs of the spec's gpu-missing and gpu-excluded faults
// out of NVML's enumeration, and lists the excluded ones.
func unlist(s *System) error {
	hide := map[int]bool{}
	var excl []*server.Device
	for _, name := range []string{missingFault, excludedFault} {
		for _, f := range s.Spec.Has(name) {
			i, err := f.GPU(len(s.Devices))
			if err != nil {
				return err
			}
			if hide[i] {
				return fmt.Errorf("fault %s=%s: GPU %d is already taken out of NVML's list", f.Name, f.Value, i)
			}
			hide[i] = true
			if name == excludedFault {
				excl = append(excl, s.Devices[i])
			}
		}
	}
	if len(hide) == 0 {
		return nil
	}
	if len(s.Spec.Has(CgroupFault)) > 0 {
		return fmt.Errorf("faults %s/%s and %s: not together (each renumbers NVML's GPUs)", missingFault, excludedFault, CgroupFault)
	}
	var devs []*server.Device
	for i, d := range s.Devices {
		if !hide[i] {
			d.Index = len(devs)
			devs = append(devs, d)
		}
	}
	s.Devices = devs
	s.Server.Devices = s.Server.Devices[:0:0]
	for _, d := range devs {
		s.Server.Devices = append(s.Server.Devices, d)
	}
	slices.SortFunc(excl, func(a, b *server.Device) int { return a.Minor - b.Minor })
	s.Server.GetExcludedDeviceCountFunc = func() (int, gonvml.Return) { return len(excl), gonvml.SUCCESS }
	s.Server.GetExcludedDeviceInfoByIndexFunc = func(i int) (gonvml.ExcludedDeviceInfo, gonvml.Return) {
		if i < 0 || i >= len(excl) {
			return gonvml.ExcludedDeviceInfo{}, gonvml.ERROR_INVALID_ARGUMENT
		}
		p, ret := excl[i].GetPciInfo()
		if ret != gonvml.SUCCESS {
			return gonvml.ExcludedDeviceInfo{}, ret
		}
		info := gonvml.ExcludedDeviceInfo{PciInfo: p}
		copy8(info.Uuid[:], excl[i].UUID)
		return info, gonvml.SUCCESS
	}
	return nil
}
