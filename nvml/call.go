package nvml

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"strconv"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuprobe/gpuprobe/state"
)

// outcome is what one guarded call produced.
type outcome int

const (
	ok outcome = iota
	unsupported
	failed
)

// guard runs NVML calls for one device (or the system) under a deadline.
// A driver call cannot be cancelled, so a call that overruns is abandoned in
// its goroutine and the guard refuses every later call: the driver is wedged
// for this device and further calls would only pile up behind it.
type guard struct {
	ctx     context.Context
	timeout time.Duration
	gpu     *state.GPU         // nil for system-level calls
	errs    *[]state.CallError // where failures go
	unsupp  *[]string
	stopped string // why later calls are refused; empty while healthy
	// lib names the library instance for deadline.Do: the real driver is
	// one per process, a mock is new for every simulated collection.
	lib string
	// key names a system-level query with a source of its own for
	// deadline.Do ("excluded"); empty: the system's, or gpu's.
	key string
}

type result[T any] struct {
	v   T
	ret gonvml.Return
}

// call runs f under the guard's deadline and files its outcome. name is the
// C entry point, so messages match NVIDIA's documentation.
func call[T any](g *guard, name string, f func() (T, gonvml.Return)) (T, outcome) {
	var zero T
	if g.stopped != "" {
		return zero, failed
	}
	if err := g.ctx.Err(); err != nil {
		g.stop(name, "run deadline reached before the call", true)
		return zero, failed
	}
	// deadline.Do keyed by device: a call that hangs is abandoned (a cgo
	// call cannot be cancelled), and until it returns every later call on
	// that device — in this run and in the daemon's next cycles — is refused
	// at once instead of leaving one more thread behind each time.
	r, err := deadline.Do(g.ctx, g.source(), g.timeout, func() (result[T], error) {
		var r result[T]
		r.v, r.ret = f()
		return r, nil
	})
	switch {
	case errors.Is(err, deadline.ErrBusy):
		g.stop(name, "an earlier call on this device has not returned (the driver is wedged)", true)
	case errors.Is(err, deadline.ErrTimeout) && g.ctx.Err() != nil:
		g.stop(name, "no answer before the run deadline", true)
	case errors.Is(err, deadline.ErrTimeout):
		g.stop(name, fmt.Sprintf("no answer within %s", g.timeout), true)
	case err != nil: // a panic in the binding
		g.fail(name, fmt.Sprintf("%s: %v", name, err), false)
	default:
		return r.v, g.classify(name, r.ret)
	}
	return zero, failed
}

// source names the device (or the system) for deadline.Do.
func (g *guard) source() string {
	if g.key != "" {
		return g.lib + ":" + g.key
	}
	if g.gpu == nil {
		return g.lib + ":system"
	}
	return g.lib + ":gpu" + strconv.Itoa(g.gpu.Index)
}

func (g *guard) classify(name string, ret gonvml.Return) outcome {
	switch ret {
	case gonvml.SUCCESS:
		return ok
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND:
		if g.unsupp != nil {
			*g.unsupp = append(*g.unsupp, name)
		}
		return unsupported
	case gonvml.ERROR_GPU_IS_LOST:
		if g.gpu != nil {
			g.gpu.Lost = true
		}
		g.stop(name, "GPU is lost (fell off the bus)", false)
		return failed
	case gonvml.ERROR_RESET_REQUIRED:
		// nvml.h: "The GPU requires a reset before it can be used again".
		if g.gpu != nil {
			g.gpu.ResetRequired = true
		}
		g.fail(name, returnString(ret), false)
		return failed
	default:
		g.fail(name, returnString(ret), false)
		return failed
	}
}

func (g *guard) fail(name, msg string, timeout bool) {
	*g.errs = append(*g.errs, state.CallError{Call: name, Error: msg, Timeout: timeout})
}

func (g *guard) stop(name, msg string, timeout bool) {
	g.fail(name, msg, timeout)
	g.stopped = name
}

// returnString names a return code without calling into the library when the
// code is one we know: after a hang, nvmlErrorString may hang too.
func returnString(ret gonvml.Return) string {
	switch ret {
	case gonvml.ERROR_UNINITIALIZED:
		return "NVML not initialised"
	case gonvml.ERROR_INVALID_ARGUMENT:
		return "invalid argument"
	case gonvml.ERROR_NO_PERMISSION:
		return "no permission"
	case gonvml.ERROR_NOT_FOUND:
		return "not found"
	case gonvml.ERROR_INSUFFICIENT_POWER:
		return "insufficient external power"
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		return "NVIDIA kernel driver not loaded"
	case gonvml.ERROR_TIMEOUT:
		return "NVML timeout"
	case gonvml.ERROR_IRQ_ISSUE:
		return "interrupt issue with the GPU"
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return "libnvidia-ml not found"
	case gonvml.ERROR_GPU_IS_LOST:
		return "GPU is lost"
	case gonvml.ERROR_RESET_REQUIRED:
		return "GPU requires a reset"
	case gonvml.ERROR_UNKNOWN:
		return "unknown NVML error"
	case gonvml.ERROR_NOT_READY:
		return "not ready"
	case gonvml.ERROR_IN_USE:
		return "in use"
	}
	return fmt.Sprintf("NVML return code %d", int(ret))
}
