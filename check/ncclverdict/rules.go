package ncclverdict

import "strings"

// Severity of a finding.
const (
	SevError   = "error"
	SevWarning = "warning"
	SevNote    = "note"
)

type rule struct{ sev, hint string }

// hintGDRBlocked explains IB completion errors with vendor syndrome 0x81
// (129) or 81: the NIC's DMA to or from GPU memory failed, which is what a
// PCIe path that blocks peer-to-peer traffic looks like.
const hintGDRBlocked = "vendor err 81/129 means the NIC could not complete DMA to or from GPU memory: GPUDirect RDMA is blocked. " +
	"Usual causes: PCIe ACS redirecting peer-to-peer traffic through the root complex (disable ACS on the switches, see gpuprobe's pcie.acs check), " +
	"the IOMMU in translating mode (iommu=pt or off), or nvidia-peermem missing or mismatched with the driver. " +
	"NCCL_NET_GDR_LEVEL=LOC turns GDR off to confirm (slower, but it should then work)."

const hintIBCompletion = "an InfiniBand work request failed; status 12 (retry exceeded) means the peer stopped answering: a link or switch problem, or the peer process died"

// rules give each finding code the parser emits its severity and remedy.
// WARNs NCCL prints when something failed are errors; the benign probes
// and port events are warnings; what only explains is a note. A code not
// listed (a newer parser) is an error: NCCL warns when something failed.
var rules = map[string]rule{
	// WARN records (see nccl/warn.go for what each matches).
	"ib_async_event":         {SevWarning, "an InfiniBand port event (port up/down, client reregistration); harmless once, a flapping link if repeated"},
	"no_ibverbs":             {SevWarning, "libibverbs could not be loaded, so NCCL cannot use InfiniBand/RoCE: install rdma-core (libibverbs) in the image or fix LD_LIBRARY_PATH"},
	"no_libcuda":             {SevWarning, "NCCL could not dlopen libcuda.so; it falls back to the runtime's copy (set NCCL_CUDA_PATH if that fails)"},
	"topology_error":         {SevError, "NCCL built an inconsistent ring: ranks disagree about the topology (mixed NCCL versions, different NCCL_* settings per node, or a broken NCCL_TOPO_FILE)"},
	"ib_memory_registration": {SevError, "registering GPU memory with the NIC failed: nvidia-peermem not loaded or DMA-BUF unsupported (NCCL_DMABUF_ENABLE=0 and nvidia-peermem if ibv_reg_dmabuf_mr failed); also check ulimit -l (locked memory) is unlimited"},
	"bootstrap_error":        {SevError, "ranks could not reach each other over the bootstrap network: check NCCL_SOCKET_IFNAME, MASTER_ADDR/port and firewalls"},
	"peer_lost":              {SevError, "a peer closed its connection: usually another rank crashed or timed out first; look for the first error in time"},
	"connection_refused":     {SevError, "a peer was not listening: rank died, wrong interface (NCCL_SOCKET_IFNAME) or a firewall"},
	"cuda_error":             {SevError, ""},
	"nccl_warn":              {SevError, ""},
	"ib_completion_error":    {SevError, hintIBCompletion},
	// Return-code traces.
	"nccl_call_failed": {SevError, "read the NCCL WARN lines just before it for the cause"},
	"nccl_error_path":  {SevWarning, ""},
	// GPUDirect RDMA decisions.
	"gdr_disabled":  {SevWarning, "load nvidia-peermem, or use DMA-BUF (NCCL_DMABUF_ENABLE=1, driver >= 515, kernel >= 5.12, NCCL >= 2.13), then rerun"},
	"gdr_no_module": {SevWarning, "modprobe nvidia-peermem (nv_peer_mem on old MLNX_OFED), or use DMA-BUF (NCCL_DMABUF_ENABLE=1, driver >= 515, kernel >= 5.12)"},
	"gdr_distance":  {SevWarning, "use the NIC on the GPU's PCIe switch (NCCL_IB_HCA), or raise NCCL_NET_GDR_LEVEL (e.g. PHB, SYS) if the platform supports it"},
	"dmabuf":        {SevNote, ""},
	// Lines from other software.
	"collective_timeout":     {SevError, "a collective did not finish within the framework's timeout: one rank is stuck or slow (network, a crashed peer, mismatched collectives); find the first rank that stopped"},
	"crash":                  {SevError, "a process crashed; the frames after this line name the library"},
	"framework_nccl_error":   {SevError, "the framework reported an NCCL error; the NCCL WARN lines before it give the cause (rerun with NCCL_DEBUG=INFO if there are none)"},
	"libfabric_warning":      {SevNote, ""},
	"framework_nccl_version": {SevNote, "the NCCL version the framework claims; the library NCCL prints wins if they differ"},
}

// gdrWhy explains each way NCCL reports GPUDirect RDMA off.
var gdrWhy = map[string]string{
	"gdr_disabled":  "the NIC cannot access GPU memory (no nvidia-peermem, no DMA-BUF)",
	"gdr_no_module": "no peer-memory module (nvidia-peermem) is loaded",
	"gdr_distance":  "the GPU is too far from the NIC for NCCL_NET_GDR_LEVEL",
}

// ruleFor returns the severity and remedy of a finding.
func ruleFor(code, key string) rule {
	r, ok := rules[code]
	if !ok {
		return rule{SevError, ""}
	}
	if code == "ib_completion_error" && (strings.HasSuffix(key, " vendor 81") || strings.HasSuffix(key, " vendor 129")) {
		r.hint = hintGDRBlocked
	}
	return r
}
