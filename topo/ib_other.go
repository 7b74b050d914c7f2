//go:build !linux

package topo

import "github.com/gpuprobe/gpuprobe/state/topostate"

// readIB needs Linux's sysfs; elsewhere there are no RDMA devices to read.
func (fsr fsReader) readIB(string) ([]topostate.NIC, error) { return nil, nil }
