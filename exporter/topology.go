package exporter

import (
	"strconv"

	"github.com/gpuprobe/gpuprobe/state"
)

var (
	dACSRedirect = desc("pcie_acs_redirect_bridges", "Bridges above GPUs and NICs whose ACS redirects peer-to-peer traffic to the root complex.")
	dACSUnknown  = desc("pcie_acs_unknown_bridges", "Bridges whose ACS state could not be read (needs root or CAP_SYS_ADMIN).")
	dPeerMem     = desc("gdr_peermem_loaded", "1 when nvidia_peermem (or nv_peer_mem) is loaded.")
	dDMABuf      = desc("gdr_dmabuf_available", "1 when a DMA-BUF GPUDirect RDMA path is likely available.")
	dIBActive    = desc("ib_port_active", "1 when the InfiniBand/RoCE port is ACTIVE and LinkUp.", "device", "port", "link_layer")
	dIBRate      = desc("ib_port_rate_bytes_per_second", "The port's negotiated rate.", "device", "port", "link_layer")
)

// emitTopology exports the GPUDirect facts the topology collector found.
func emitTopology(e emitter, n *state.Node) {
	t := n.Topology
	if t == nil {
		return
	}
	redirect, unknown := 0, 0
	for _, b := range t.Bridges {
		switch {
		case b.ACS.ACS != nil && b.ACS.Redirect:
			redirect++
		case b.ACS.Status == "unknown":
			unknown++
		}
	}
	e.gauge(dACSRedirect, float64(redirect))
	e.gauge(dACSUnknown, float64(unknown))
	e.gauge(dPeerMem, b2f(t.PeerMem.Loaded()))
	e.gauge(dDMABuf, b2f(t.PeerMem.DMABuf))
	for _, nic := range t.NICs {
		for _, p := range nic.Ports {
			l := []string{nic.Name, strconv.Itoa(p.Port), p.LinkLayer}
			e.gauge(dIBActive, b2f(p.Active()), l...)
			e.gauge(dIBRate, p.RateGbps*1e9/8, l...)
		}
	}
}
