package main

import (
	"context"
	"time"

	"github.com/gpuprobe/gpuprobe/cuda"
	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/verify"
)

// cudaOpenTimeout bounds cuInit and the device enumeration: on a wedged GPU
// cuInit can block for good (docs/verify.md, "How verify reaches the
// driver"); the abandoned call keeps one thread and is never repeated.
const cudaOpenTimeout = 30 * time.Second

// openRealDriver opens the CUDA driver API of this machine (libcuda.so.1,
// as the system loader finds it) for `gpuprobe verify`; tests replace it.
var openRealDriver = func() (verify.Driver, error) {
	d, err := deadline.Run(context.Background(), cudaOpenTimeout, func() (*cuda.Driver, error) { return cuda.Open() })
	if err != nil {
		return nil, err // never a typed nil in the interface
	}
	return d, nil
}
