package topo

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"path/filepath"
	"strconv"
	"strings"
)

// peerMemFiles are what NCCL tests, in its order, to decide that the IB
// transport can register CUDA memory (src/transport/net_ib/gdr.cc): the
// legacy nv_peer_mem's two files, then nvidia_peermem's module version.
var peerMemFiles = []struct{ rel, module string }{
	{"kernel/mm/memory_peers/nv_mem/version", "nv_peer_mem"},
	{"kernel/mm/memory_peers/nv_mem_nc/version", "nv_peer_mem"},
	{"module/nvidia_peermem/version", "nvidia_peermem"},
}

// readPeerMem finds the peer-memory module, and whether the DMA-BUF path
// (which needs no module) is plausible. NCCL's real DMA-BUF test calls
// ibv_reg_dmabuf_mr, which no file shows; what files do show is its two
// preconditions: the open GPU kernel module, and a kernel with RDMA DMA-BUF
// support (5.12 or later).
func (fsr fsReader) readPeerMem(sysfs, procfs string) topostate.PeerMem {
	var p topostate.PeerMem
	for _, f := range peerMemFiles {
		path := filepath.Join(sysfs, filepath.FromSlash(f.rel))
		if v, ok, _ := fsr.readAttr(path); ok {
			p.Module, p.Path, p.Version = f.module, path, v
			break
		}
	}
	verFile := filepath.Join(procfs, "driver", "nvidia", "version")
	ver, ok, _ := fsr.readAttr(verFile)
	if !ok {
		p.DMABufReason = "NVIDIA kernel module not loaded (no " + verFile + ")"
		return p
	}
	p.Driver, _, _ = strings.Cut(ver, "\n")
	open := strings.Contains(p.Driver, "Open Kernel Module")
	rel, _, _ := fsr.readAttr(filepath.Join(procfs, "sys", "kernel", "osrelease"))
	major, minor, kerr := kernelVersion(rel)
	switch {
	case !open:
		p.DMABufReason = "proprietary NVIDIA kernel module (DMA-BUF needs the open one)"
	case kerr != nil:
		p.DMABufReason = "open NVIDIA kernel module, but the kernel version is unknown: " + kerr.Error()
	case major < 5 || major == 5 && minor < 12:
		p.DMABufReason = fmt.Sprintf("open NVIDIA kernel module, but kernel %s predates RDMA DMA-BUF (5.12)", rel)
	default:
		p.DMABuf = true
		p.DMABufReason = fmt.Sprintf("open NVIDIA kernel module on kernel %s", rel)
	}
	return p
}

// kernelVersion reads "5.15.0-1042-nvidia" as 5, 15 (and "6.1-rc1" as 6, 1).
func kernelVersion(rel string) (int, int, error) {
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("kernel release %q", rel)
	}
	major, err1 := strconv.Atoi(parts[0])
	digits := strings.IndexFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	if digits < 0 {
		digits = len(parts[1])
	}
	minor, err2 := strconv.Atoi(parts[1][:digits])
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("kernel release %q", rel)
	}
	return major, minor, nil
}
