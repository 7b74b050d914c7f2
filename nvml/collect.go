// Package nvml is the only package that talks to go-nvml. It turns the
// driver's answers into state.NVML, with every call under a deadline, and
// never calls into the library after a failed Init.
package nvml

import (
	"context"
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/busid"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuprobe/gpuprobe/state"
)

// Options tune a collection.
type Options struct {
	// CallTimeout bounds each NVML call; the context bounds the whole run.
	CallTimeout time.Duration
	// Library names the library for deadline.Do across collections: a
	// device whose call is still hung is not called again by a later
	// collection of the same library. Empty: this collection alone (a mock
	// is new every time, and an address could be reused by the next one).
	Library string
	// Held: the caller holds an initialisation of lib for its life
	// (Session), so this collection makes no nvmlInit/nvmlShutdown of its own.
	Held bool
}

var collections atomic.Int64

// DefaultCallTimeout is long enough for a cold NVML on a busy 8-GPU node
// (persistence off costs seconds on the first call) yet well inside Slurm's
// 60 s HealthCheckProgram kill.
const DefaultCallTimeout = 10 * time.Second

// Collect initialises lib, reads the system and every GPU, and shuts the
// library down again. It always returns a state; what failed is recorded in it.
func Collect(ctx context.Context, lib gonvml.Interface, opts Options) *state.NVML {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	st := &state.NVML{GPUs: []state.GPU{}}
	libName := opts.Library
	if libName == "" {
		libName = fmt.Sprintf("nvml#%d", collections.Add(1))
	}
	sys := &guard{ctx: ctx, timeout: opts.CallTimeout, errs: &st.Errors, lib: libName}

	if !opts.Held {
		ret, o := call(sys, "nvmlInit", func() (gonvml.Return, gonvml.Return) {
			r := lib.Init()
			return r, r
		})
		if o != ok {
			// Never call into the library after a failed Init, not even Shutdown:
			// without libnvidia-ml the process would die in the dynamic linker.
			st.Error = initError(ret, st.Errors)
			return st
		}
	}
	st.Available = true
	// The excluded-GPU list has a guard of its own: a hang there costs that
	// fact alone, not the GPUs.
	ex := &guard{ctx: ctx, timeout: opts.CallTimeout, errs: &st.Errors, lib: libName, key: "excluded"}
	defer func() {
		if opts.Held || sys.stopped != "" || ex.stopped != "" {
			return // a wedged driver would wedge Shutdown too
		}
		call(sys, "nvmlShutdown", func() (gonvml.Return, gonvml.Return) {
			r := lib.Shutdown()
			return r, r
		})
	}()

	if v, o := call(sys, "nvmlSystemGetDriverVersion", lib.SystemGetDriverVersion); o == ok {
		st.DriverVersion = v
	}
	if v, o := call(sys, "nvmlSystemGetNVMLVersion", lib.SystemGetNVMLVersion); o == ok {
		st.NVMLVersion = v
	}
	if v, o := call(sys, "nvmlSystemGetCudaDriverVersion", lib.SystemGetCudaDriverVersion); o == ok && v > 0 {
		st.CUDADriverVersion = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	count, o := call(sys, "nvmlDeviceGetCount", lib.DeviceGetCount)
	if o != ok {
		return st
	}
	st.DeviceCount = count
	st.GPUs = make([]state.GPU, count)

	symbols := lookupSymbols(lib)
	var wg sync.WaitGroup
	for i := 0; i < count; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			gpu := &st.GPUs[i]
			gpu.Index = i
			g := &guard{ctx: ctx, timeout: opts.CallTimeout, gpu: gpu, errs: &gpu.Errors, unsupp: &gpu.Unsupported, lib: libName}
			// The return code travels in the call's result, not in a variable
			// the closure writes: a call abandoned at its deadline may still
			// return later, and must then write nothing this goroutine reads.
			type handle struct {
				dev gonvml.Device
				ret gonvml.Return
			}
			h, o := call(g, "nvmlDeviceGetHandleByIndex", func() (handle, gonvml.Return) {
				d, r := lib.DeviceGetHandleByIndex(i)
				return handle{d, r}, r
			})
			dev := h.dev
			if o != ok {
				if h.ret == gonvml.ERROR_NO_PERMISSION {
					gpu.Denied = true // a device cgroup, not a broken GPU
				} else {
					gpu.Unreachable = true
				}
				return
			}
			d := &device{g: g, dev: dev, gpu: gpu, sym: symbols}
			d.fabricV, _ = lib.(FabricInfoV)
			d.collect()
		}(i)
	}
	wg.Wait()
	// After the GPUs: they matter more, and a hung query here then delays
	// none of them.
	excluded(ex, lib, symbols, st)
	return st
}

func initError(ret gonvml.Return, errs []state.CallError) string {
	if len(errs) > 0 && errs[len(errs)-1].Timeout {
		return "nvmlInit did not return: " + errs[len(errs)-1].Error
	}
	if ret == gonvml.ERROR_LIBRARY_NOT_FOUND {
		return "libnvidia-ml could not be loaded"
	}
	return "nvmlInit failed: " + returnString(ret)
}

// symbols records which newer entry points the loaded library has, looked up
// once per collection rather than once per GPU.
type symbols map[string]bool

var guardedSymbols = []string{
	"nvmlDeviceGetMemoryInfo_v2",
	"nvmlDeviceGetCurrentClocksEventReasons",
	"nvmlDeviceGetNumaNodeId",
	"nvmlDeviceGetGpuFabricInfo_v4",
	"nvmlDeviceGetGpuFabricInfoV",
	"nvmlDeviceGetGpuFabricInfo",
	"nvmlDeviceGetRemappedRows",
	"nvmlDeviceGetViolationStatus",
	"nvmlDeviceGetSramEccErrorStatus",
	mpsCall,
	excludedCountCall,
	excludedInfoCall,
}

func lookupSymbols(lib gonvml.Interface) symbols {
	s := symbols{}
	ext := lib.Extensions()
	if ext == nil {
		return s
	}
	for _, name := range guardedSymbols {
		s[name] = ext.LookupSymbol(name) == nil
	}
	return s
}

// normBusID turns NVML's "00000000:18:00.0" into the canonical "0000:18:00.0".
func normBusID(raw string) string { return busid.Canonical(strings.TrimRight(raw, "\x00")) }

func cString[T ~int8 | ~uint8](b []T) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
