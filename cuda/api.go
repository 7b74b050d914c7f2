package cuda

// The CUDA driver API, resolved at run time from libcuda.so.1 with dlopen
// and dlsym (libcuda.c). No CUDA header is needed at build time: libcuda.h
// declares the few types used as cuda.h declares them (CUdevice an int,
// CUdeviceptr an unsigned long long on 64-bit hosts, the handles opaque
// pointers, CUresult an enum the size of an int), and each entry point is
// resolved under the exact name cuda.h maps it to (cuMemAlloc is
// cuMemAlloc_v2 since CUDA 3.2, cuEventDestroy is cuEventDestroy_v2 since
// 4.0, cuDevicePrimaryCtxRelease is cuDevicePrimaryCtxRelease_v2 since
// 11.0). The copies are the legacy default-stream entry points
// (cuMemcpyHtoD_v2, not the _ptds variants), so events recorded on stream 0
// bracket them.

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "libcuda.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// api is one loaded libcuda.so.1. It is never unloaded: libcuda keeps
// threads of its own, and dlclose under them is not safe.
type api struct {
	p    *C.gp_api
	path string // the file the loader opened
}

// load opens lib: "libcuda.so.1" searched the way the system loader
// searches (ld.so.cache, the default paths) or, in tests only, a path.
func load(lib string) (*api, error) {
	cs := C.CString(lib)
	defer C.free(unsafe.Pointer(cs))
	var cerr *C.char
	var missing *C.char
	p := C.gp_open(cs, &cerr, &missing)
	if p == nil {
		if missing != nil {
			return nil, fmt.Errorf("%s has no %s: the NVIDIA driver is older than CUDA 11.0", lib, C.GoString(missing))
		}
		msg := C.GoString(cerr)
		C.free(unsafe.Pointer(cerr))
		if strings.Contains(msg, "No such file or directory") {
			return nil, fmt.Errorf("libcuda.so.1 not found: no NVIDIA driver on this machine (%w)", errors.New(msg))
		}
		return nil, fmt.Errorf("libcuda.so.1 could not be loaded: %w", errors.New(msg))
	}
	return &api{p: p, path: C.GoString(C.gp_path(p))}, nil
}

// errorText asks the driver to name r; ok is false when it cannot.
func (a *api) errorText(r C.CUresult) (name, desc string, ok bool) {
	var n, d *C.char
	if C.gp_cuGetErrorName(a.p, r, &n) != 0 || n == nil {
		return "", "", false
	}
	if C.gp_cuGetErrorString(a.p, r, &d) == 0 && d != nil {
		desc = C.GoString(d)
	}
	return C.GoString(n), desc, true
}
