package main

import (
	"errors"

	"github.com/gpuprobe/gpuprobe/verify"
)

// openRealDriver opens the CUDA driver API of this machine (libcuda.so.1)
// for `gpuprobe verify`. The loader (package cuda) is wired in here; until
// it is, verify without --simulate says so as a verify.run error.
var openRealDriver = func() (verify.Driver, error) {
	return nil, errors.New("the CUDA driver loader is not built in")
}
