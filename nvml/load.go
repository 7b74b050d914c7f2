package nvml

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/dl"
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// LibraryName is the soname the driver installs.
const LibraryName = "libnvidia-ml.so.1"

// Open returns the real NVML. go-nvml's Init reports a missing library as a
// bare ERROR_LIBRARY_NOT_FOUND; opening it here first keeps dlopen's own
// message ("libnvidia-ml.so.1: cannot open shared object file: ..."), which
// is what an admin needs to see. The probe handle stays open: closing it
// would only make the library's refcount bounce.
func Open() (gonvml.Interface, error) {
	h := dl.New(LibraryName, dl.RTLD_LAZY|dl.RTLD_GLOBAL)
	if err := h.Open(); err != nil {
		return nil, fmt.Errorf("cannot load %s (NVIDIA driver not installed?): %v", LibraryName, err)
	}
	return library{gonvml.New(gonvml.WithLibraryPath(LibraryName))}, nil
}

// library is the driver's NVML with the entry points go-nvml's Interface
// leaves out (FabricInfoV).
type library struct{ gonvml.Interface }

func (library) DeviceGetGpuFabricInfoV3(dev gonvml.Device) (gonvml.GpuFabricInfo_v3, gonvml.Return) {
	return dev.GetGpuFabricInfoV().V3()
}
