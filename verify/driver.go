// Package verify measures what a node's GPUs deliver: host↔device and peer
// copy bandwidth, device memory bandwidth, a compute load watched through
// NVML, and a memory pattern test. It measures through a Driver — the CUDA
// driver API (package cuda) on a real node, sim/cuda under --simulate — and
// records plain facts in state.Verify; check/verify*.go judges them.
package verify

import (
	"context"
	"time"
)

// Device is one GPU as the driver enumerates it.
type Device struct {
	Ordinal     int
	Name        string
	PCIBusID    string // as cuDeviceGetPCIBusId gives it, e.g. "0000:18:00.0"
	TotalMemory uint64 // bytes
}

// Driver is what verify measures through. Every method is one bounded
// operation on the device; the caller gives it a context whose deadline it
// must honour where it can (a real driver call cannot be interrupted: the
// caller runs it under internal/deadline and never calls a driver that hung
// again). Durations are device time as the driver's events measure it, not
// wall time, so a simulated driver can answer at once.
type Driver interface {
	// Describe says how the driver was reached ("libcuda.so.1 (CUDA 12.4)",
	// "simulated").
	Describe() string
	// Devices enumerates the GPUs visible to this process (after
	// CUDA_VISIBLE_DEVICES), in CUDA ordinal order.
	Devices(ctx context.Context) ([]Device, error)
	// CopyHostToDevice copies bytes from pinned host memory to the device
	// iters times and returns the device time of all iterations.
	CopyHostToDevice(ctx context.Context, dev int, bytes int64, iters int) (time.Duration, error)
	// CopyDeviceToHost is the other direction.
	CopyDeviceToHost(ctx context.Context, dev int, bytes int64, iters int) (time.Duration, error)
	// CopyDeviceToDevice copies bytes between two buffers on one device.
	CopyDeviceToDevice(ctx context.Context, dev int, bytes int64, iters int) (time.Duration, error)
	// CanAccessPeer says whether src can copy to dst directly (P2P).
	CanAccessPeer(ctx context.Context, src, dst int) (bool, error)
	// CopyPeer copies bytes from src's memory to dst's, with peer access
	// enabled where CanAccessPeer allows it.
	CopyPeer(ctx context.Context, src, dst int, bytes int64, iters int) (time.Duration, error)
	// Compute runs a fused multiply-add kernel on dev for about d of device
	// time and returns the floating-point operations it did and the device
	// time it took.
	Compute(ctx context.Context, dev int, d time.Duration) (flops float64, took time.Duration, err error)
	// MemPattern writes a pattern over bytes of dev's memory, reads it back
	// and returns how many 32-bit words differ.
	MemPattern(ctx context.Context, dev int, bytes int64) (mismatches int64, err error)
	// Close releases every context and allocation.
	Close() error
}
