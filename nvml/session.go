package nvml

import (
	"context"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuprobe/gpuprobe/state"
)

// Session keeps one NVML initialisation for a daemon's life, so the
// driver's per-client set-up (seconds per GPU on a node without persistence
// mode) happens once and not every cycle, and each collection reads through
// the held library without its own nvmlInit/nvmlShutdown pair.
//
// It re-initialises only when the library says it must: while no Init has
// succeeded yet (a daemon started before the driver was loaded tries again
// every cycle), or after a collection's calls answered
// NVML_ERROR_UNINITIALIZED or NVML_ERROR_DRIVER_NOT_LOADED.
//
// Holding NVML has the cost every monitoring daemon has: `nvidia-smi -r`
// refuses to reset a GPU while a monitoring application has it open
// (nvidia-smi(1)), so the daemon must be stopped before a reset
// (docs/deploy.md).
type Session struct {
	open    func() (gonvml.Interface, error)
	timeout time.Duration

	mu   sync.Mutex
	lib  gonvml.Interface
	held bool
	// hung: an Init or Shutdown did not return; the library is never
	// called from here again (deadline.Do refuses it anyway).
	hung bool
}

// NewSession opens the library with open when first asked (nvml.Open for
// the real driver); timeout bounds nvmlInit and nvmlShutdown.
func NewSession(open func() (gonvml.Interface, error), timeout time.Duration) *Session {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	return &Session{open: open, timeout: timeout}
}

// Acquire returns the library and whether the session holds an
// initialisation of it: then Collect must be told (Options.Held) and makes
// no Init of its own. Not held, Collect initialises as a one-shot run does
// and reports why that failed. An error means the library could not even be
// loaded.
func (s *Session) Acquire(ctx context.Context) (gonvml.Interface, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lib == nil {
		lib, err := s.open()
		if err != nil {
			return nil, false, err
		}
		s.lib = lib
	}
	if s.held || s.hung {
		return s.lib, s.held, nil
	}
	// Keyed like the real library's system calls (lib "nvml"): an Init stuck
	// here makes a collection's system calls refuse at once, and the other
	// way round.
	var errs []state.CallError
	g := &guard{ctx: ctx, timeout: s.timeout, errs: &errs, lib: "nvml"}
	if _, o := call(g, "nvmlInit", func() (gonvml.Return, gonvml.Return) {
		r := s.lib.Init()
		return r, r
	}); o == ok {
		s.held = true
	} else if g.stopped != "" {
		s.hung = true
	}
	return s.lib, s.held, nil
}

// Observe looks at what a collection through the held library found and
// drops the hold when the library said it is no longer initialised; the
// next Acquire initialises again.
func (s *Session) Observe(st *state.NVML) {
	if st == nil || !needsInit(st) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release()
}

// Close gives the initialisation back (nvmlShutdown), unless a call hung.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release()
}

func (s *Session) release() {
	if !s.held || s.hung {
		return
	}
	s.held = false
	var errs []state.CallError
	g := &guard{ctx: context.Background(), timeout: s.timeout, errs: &errs, lib: "nvml"}
	if _, o := call(g, "nvmlShutdown", func() (gonvml.Return, gonvml.Return) {
		r := s.lib.Shutdown()
		return r, r
	}); o != ok && g.stopped != "" {
		s.hung = true
	}
}

// needsInit: some call of the collection was answered "not initialised" or
// "driver not loaded", the two answers after which NVML must be
// initialised again before it can answer anything.
func needsInit(st *state.NVML) bool {
	says := func(errs []state.CallError) bool {
		for _, e := range errs {
			if e.Error == returnString(gonvml.ERROR_UNINITIALIZED) || e.Error == returnString(gonvml.ERROR_DRIVER_NOT_LOADED) {
				return true
			}
		}
		return false
	}
	if says(st.Errors) {
		return true
	}
	for i := range st.GPUs {
		if says(st.GPUs[i].Errors) {
			return true
		}
	}
	return false
}
