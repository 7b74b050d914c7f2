// Package deadline runs calls that can hang — a driver call, a read of a
// pseudo-file, a user lookup on a hung LDAP, a child process — so that the
// caller always gets an answer on time and a source that hung is not called
// again until its earlier call has returned.
//
// Neither a cgo call nor a blocking read can be cancelled: an overrunning
// call is left running in its goroutine (holding an OS thread). Calling the
// same wedged source again every cycle would pile up one thread per cycle
// until the process dies, so the source is marked busy until that goroutine
// returns, and every call in between is refused at once with ErrBusy.
package deadline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrTimeout is wrapped by the error of a call that did not answer in time.
var ErrTimeout = errors.New("no answer before the deadline")

// ErrBusy is wrapped by the error of a call refused because an earlier call
// to the same source has not returned yet.
var ErrBusy = errors.New("an earlier call to this source has not returned")

// Run runs f in its own goroutine and returns its result, or ErrTimeout once
// ctx ends or d passes (d <= 0: ctx alone bounds it). A panic in f becomes
// an error.
func Run[T any](ctx context.Context, d time.Duration, f func() (T, error)) (T, error) {
	v, err, _ := run(ctx, d, f, nil)
	return v, err
}

// Do is Run for a named source: while an earlier Do on the same name has not
// returned, Do refuses at once with ErrBusy instead of calling f again.
// Names are paths ("/proc/driver/nvidia/version"), devices ("nvml:0000:19:00.0")
// or commands ("scontrol").
func Do[T any](ctx context.Context, name string, d time.Duration, f func() (T, error)) (T, error) {
	return DoIn(&Default, ctx, name, d, f)
}

// DoIn is Do with an explicit registry (tests use their own).
func DoIn[T any](r *Registry, ctx context.Context, name string, d time.Duration, f func() (T, error)) (T, error) {
	var zero T
	if since, busy := r.Busy(name); busy {
		return zero, fmt.Errorf("%s: %w (waiting since %s)", name, ErrBusy, since.UTC().Format(time.RFC3339))
	}
	v, err, hung := run(ctx, d, f, func() { r.done(name) })
	if hung {
		r.hang(name)
		return zero, fmt.Errorf("%s: %w", name, err)
	}
	return v, err
}

type result[T any] struct {
	v   T
	err error
}

// run returns hung=true when f was abandoned; then onReturn runs once f
// finally returns (never, for a call that is wedged for good).
func run[T any](ctx context.Context, d time.Duration, f func() (T, error), onReturn func()) (T, error, bool) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("%w: %v", ErrTimeout, err), false
	}
	ch := make(chan result[T], 1)
	var mu sync.Mutex
	abandoned := false
	go func() {
		var r result[T]
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("panic: %v", p)
			}
			ch <- r
			mu.Lock()
			a := abandoned
			mu.Unlock()
			if a && onReturn != nil {
				onReturn()
			}
		}()
		r.v, r.err = f()
	}()
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	abandon := func(why string) (T, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		select {
		case r := <-ch: // it answered just now
			return r.v, r.err, false
		default:
		}
		abandoned = true
		return zero, fmt.Errorf("%w (%s)", ErrTimeout, why), true
	}
	select {
	case r := <-ch:
		return r.v, r.err, false
	case <-timeout:
		return abandon(fmt.Sprintf("waited %s", d))
	case <-ctx.Done():
		return abandon("the run's deadline passed")
	}
}

// Registry remembers the sources that have a call outstanding. It holds only
// hung sources, so it stays as small as the number of wedged things.
type Registry struct {
	mu   sync.Mutex
	busy map[string]time.Time
}

// Default is the process-wide registry: a daemon meets the same hung file
// again next cycle.
var Default Registry

// Busy reports whether name has a call outstanding, and since when.
func (r *Registry) Busy(name string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.busy[name]
	return t, ok
}

// Hung lists the sources with a call outstanding, for logs and metrics.
func (r *Registry) Hung() map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Time, len(r.busy))
	for k, v := range r.busy {
		out[k] = v
	}
	return out
}

func (r *Registry) hang(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy == nil {
		r.busy = map[string]time.Time{}
	}
	if _, ok := r.busy[name]; !ok {
		r.busy[name] = time.Now()
	}
}

func (r *Registry) done(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.busy, name)
}
