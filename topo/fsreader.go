package topo

import "github.com/gpuprobe/gpuprobe/internal/rootfs"

// fsReader is the tree topo reads (see rootfs); topo's readers are its
// methods so that every read goes through it.
type fsReader struct{ rootfs.FS }
