package cuda

import (
	"errors"
	"fmt"
)

// Result is a CUresult, as cuda.h numbers it.
type Result int

// The CUresult values this package names itself, when the driver's
// cuGetErrorName cannot (cuda.h, enum cudaError_enum).
const (
	Success                   Result = 0
	ErrorInvalidValue         Result = 1
	ErrorOutOfMemory          Result = 2
	ErrorNotInitialized       Result = 3
	ErrorDeinitialized        Result = 4
	ErrorStubLibrary          Result = 34
	ErrorDeviceUnavailable    Result = 46
	ErrorNoDevice             Result = 100
	ErrorInvalidDevice        Result = 101
	ErrorDeviceNotLicensed    Result = 102
	ErrorInvalidImage         Result = 200
	ErrorInvalidContext       Result = 201
	ErrorNoBinaryForGPU       Result = 209
	ErrorECCUncorrectable     Result = 214
	ErrorPeerAccessUnsupp     Result = 217
	ErrorInvalidPTX           Result = 218
	ErrorNVLinkUncorrectable  Result = 220
	ErrorJITCompilerNotFound  Result = 221
	ErrorUnsupportedPTX       Result = 222
	ErrorInvalidHandle        Result = 400
	ErrorNotFound             Result = 500
	ErrorNotReady             Result = 600
	ErrorIllegalAddress       Result = 700
	ErrorLaunchOutOfResources Result = 701
	ErrorLaunchTimeout        Result = 702
	ErrorPeerAccessEnabled    Result = 704
	ErrorContextIsDestroyed   Result = 709
	ErrorTooManyPeers         Result = 711
	ErrorIllegalInstruction   Result = 715
	ErrorLaunchFailed         Result = 719
	ErrorNotPermitted         Result = 800
	ErrorNotSupported         Result = 801
	ErrorSystemNotReady       Result = 802
	ErrorSystemDriverMismatch Result = 803
	ErrorUnknown              Result = 999
)

var resultNames = map[Result]string{
	Success:                   "CUDA_SUCCESS",
	ErrorInvalidValue:         "CUDA_ERROR_INVALID_VALUE",
	ErrorOutOfMemory:          "CUDA_ERROR_OUT_OF_MEMORY",
	ErrorNotInitialized:       "CUDA_ERROR_NOT_INITIALIZED",
	ErrorDeinitialized:        "CUDA_ERROR_DEINITIALIZED",
	ErrorStubLibrary:          "CUDA_ERROR_STUB_LIBRARY",
	ErrorDeviceUnavailable:    "CUDA_ERROR_DEVICE_UNAVAILABLE",
	ErrorNoDevice:             "CUDA_ERROR_NO_DEVICE",
	ErrorInvalidDevice:        "CUDA_ERROR_INVALID_DEVICE",
	ErrorDeviceNotLicensed:    "CUDA_ERROR_DEVICE_NOT_LICENSED",
	ErrorInvalidImage:         "CUDA_ERROR_INVALID_IMAGE",
	ErrorInvalidContext:       "CUDA_ERROR_INVALID_CONTEXT",
	ErrorNoBinaryForGPU:       "CUDA_ERROR_NO_BINARY_FOR_GPU",
	ErrorECCUncorrectable:     "CUDA_ERROR_ECC_UNCORRECTABLE",
	ErrorPeerAccessUnsupp:     "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
	ErrorInvalidPTX:           "CUDA_ERROR_INVALID_PTX",
	ErrorNVLinkUncorrectable:  "CUDA_ERROR_NVLINK_UNCORRECTABLE",
	ErrorJITCompilerNotFound:  "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	ErrorUnsupportedPTX:       "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	ErrorInvalidHandle:        "CUDA_ERROR_INVALID_HANDLE",
	ErrorNotFound:             "CUDA_ERROR_NOT_FOUND",
	ErrorNotReady:             "CUDA_ERROR_NOT_READY",
	ErrorIllegalAddress:       "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrorLaunchOutOfResources: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	ErrorLaunchTimeout:        "CUDA_ERROR_LAUNCH_TIMEOUT",
	ErrorPeerAccessEnabled:    "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
	ErrorContextIsDestroyed:   "CUDA_ERROR_CONTEXT_IS_DESTROYED",
	ErrorTooManyPeers:         "CUDA_ERROR_TOO_MANY_PEERS",
	ErrorIllegalInstruction:   "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	ErrorLaunchFailed:         "CUDA_ERROR_LAUNCH_FAILED",
	ErrorNotPermitted:         "CUDA_ERROR_NOT_PERMITTED",
	ErrorNotSupported:         "CUDA_ERROR_NOT_SUPPORTED",
	ErrorSystemNotReady:       "CUDA_ERROR_SYSTEM_NOT_READY",
	ErrorSystemDriverMismatch: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	ErrorUnknown:              "CUDA_ERROR_UNKNOWN",
}

// String is the cuda.h name of r, or "CUresult N" for one this package
// does not know.
func (r Result) String() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("CUresult %d", int(r))
}

// Error is a driver call that did not return CUDA_SUCCESS.
type Error struct {
	Call string // the entry point, as resolved: "cuMemcpyPeer", "cuMemAlloc_v2"
	Code Result
	Name string // as the driver's cuGetErrorName names Code
	Desc string // as cuGetErrorString describes it; may be empty
	// Log is the PTX JIT compiler's error log, for cuModuleLoadDataEx.
	Log string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, int(e.Code))
	if e.Desc != "" {
		s += ": " + e.Desc
	}
	if e.Log != "" {
		s += ": " + e.Log
	}
	return s
}

// Is matches another *Error by its code alone, so that
// errors.Is(err, &cuda.Error{Code: cuda.ErrorPeerAccessUnsupp}) asks what
// the driver said, whichever call said it.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Call == "" || t.Call == e.Call)
}

// CodeOf returns the CUresult an error carries, and whether it carries one.
func CodeOf(err error) (Result, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	return 0, false
}
