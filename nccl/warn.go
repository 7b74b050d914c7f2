package nccl

import "bytes"

// WARN records and the foreign lines that matter around them.

// hintGDRBlocked explains IB completion errors with vendor syndrome 0x81
// (129) or 81: the NIC's DMA to or from GPU memory failed, which is what a
// PCIe path that blocks peer-to-peer traffic looks like.
const hintGDRBlocked = "vendor err 81/129 means the NIC could not complete DMA to or from GPU memory: GPUDirect RDMA is blocked. " +
	"Usual causes: PCIe ACS redirecting peer-to-peer traffic through the root complex (disable ACS on the switches, see gpuprobe's pcie.acs check), " +
	"the IOMMU in translating mode (iommu=pt or off), or nvidia-peermem missing or mismatched with the driver. " +
	"NCCL_NET_GDR_LEVEL=LOC turns GDR off to confirm (slower, but it should then work)."

type warnRule struct {
	match []byte
	sev   string
	code  string
	hint  string
}

// warnRules classify WARN messages; the first match wins. WARNs not listed
// are errors: NCCL warns when something failed.
var warnRules = []warnRule{
	{[]byte("Got async event"), SevWarning, "ib_async_event", "an InfiniBand port event (port up/down, client reregistration); harmless once, a flapping link if repeated"},
	{[]byte("Failed to open libibverbs"), SevWarning, "no_ibverbs", "libibverbs could not be loaded, so NCCL cannot use InfiniBand/RoCE: install rdma-core (libibverbs) in the image or fix LD_LIBRARY_PATH"},
	{[]byte("Failed to find CUDA library"), SevWarning, "no_libcuda", "NCCL could not dlopen libcuda.so; it falls back to the runtime's copy (set NCCL_CUDA_PATH if that fails)"},
	{[]byte("does not loop back"), SevError, "topology_error", "NCCL built an inconsistent ring: ranks disagree about the topology (mixed NCCL versions, different NCCL_* settings per node, or a broken NCCL_TOPO_FILE)"},
	{[]byte("ibv_reg_mr"), SevError, "ib_memory_registration", "registering GPU memory with the NIC failed: nvidia-peermem not loaded or DMA-BUF unsupported; also check ulimit -l (locked memory) is unlimited"},
	{[]byte("ibv_reg_dmabuf_mr"), SevError, "ib_memory_registration", "DMA-BUF registration failed: the NIC driver or kernel lacks DMA-BUF support; set NCCL_DMABUF_ENABLE=0 and load nvidia-peermem instead"},
	{[]byte("Bootstrap"), SevError, "bootstrap_error", "ranks could not reach each other over the bootstrap network: check NCCL_SOCKET_IFNAME, MASTER_ADDR/port and firewalls"},
	{[]byte("Connection closed by remote peer"), SevError, "peer_lost", "a peer closed its connection: usually another rank crashed or timed out first; look for the first error in time"},
	{[]byte("Connection refused"), SevError, "connection_refused", "a peer was not listening: rank died, wrong interface (NCCL_SOCKET_IFNAME) or a firewall"},
	{[]byte("Cuda failure"), SevError, "cuda_error", ""},
}

func (a *Analyzer) applyWarn(p *process, r *rawRecord, at loc) {
	m := r.msg
	full := string(r.tag) + " NCCL WARN " + string(m)
	if bytes.Contains(m, []byte("NET/IB")) || bytes.Contains(m, []byte("NET/IBext")) {
		p.see(netIB, strengthInit, at, m)
	}
	if bytes.Contains(m, []byte("Got completion from peer")) {
		a.ibCompletion(p, r, at, full)
		return
	}
	for _, rule := range warnRules {
		if bytes.Contains(m, rule.match) {
			a.find.add(rule.sev, rule.code, string(r.tag), full, rule.hint, where(p), at)
			return
		}
	}
	a.find.add(SevError, "nccl_warn", string(r.tag), full, "", where(p), at)
}

// ibCompletion handles "NET/IB : Got completion from peer … with error 4,
// opcode …, vendor err 81 (Send)" (NCCL core) and "… with status=12
// opcode=0 len=0 vendor err 129 (Recv) …" (HPC-X plugin).
func (a *Analyzer) ibCompletion(p *process, r *rawRecord, at loc, full string) {
	m := r.msg
	vendor := numberAfter(m, []byte("vendor err "))
	status := numberAfter(m, []byte("with error "))
	if status < 0 {
		status = numberAfter(m, []byte("status="))
	}
	key := "status " + itoa(status) + " vendor " + itoa(vendor)
	hint := "an InfiniBand work request failed; status 12 (retry exceeded) means the peer stopped answering: a link or switch problem, or the peer process died"
	if vendor == 81 || vendor == 129 {
		hint = hintGDRBlocked
	}
	a.find.add(SevError, "ib_completion_error", key, full, hint, where(p), at)
}

// numberAfter returns the decimal number that follows marker in m, or -1.
func numberAfter(m, marker []byte) int64 {
	i := bytes.Index(m, marker)
	if i < 0 {
		return -1
	}
	v, n := leadingInt(m[i+len(marker):])
	if n == 0 {
		return -1
	}
	return v
}

type foreignRule struct {
	match []byte
	sev   string
	code  string
	hint  string
}

// foreignRules pick out the lines from other software that decide or
// explain an NCCL problem. The rest of the foreign lines are only counted.
var foreignRules = []foreignRule{
	{[]byte("Watchdog caught collective operation timeout"), SevError, "collective_timeout",
		"a collective did not finish within the framework's timeout: one rank is stuck or slow (network, a crashed peer, mismatched collectives); find the first rank that stopped"},
	{[]byte("Caught signal "), SevError, "crash", "a process crashed; the frames after this line name the library"},
	{[]byte("NCCL error"), SevError, "framework_nccl_error", "the framework reported an NCCL error; the NCCL WARN lines before it give the cause (rerun with NCCL_DEBUG=INFO if there are none)"},
	{[]byte("DistBackendError"), SevError, "framework_nccl_error", "the framework reported an NCCL error; the NCCL WARN lines before it give the cause"},
	{[]byte("<warn>"), SevNote, "libfabric_warning", ""},
	{[]byte("nccl=="), SevNote, "framework_nccl_version", "the NCCL version the framework claims; the library NCCL prints wins if they differ"},
}

// matchForeign returns the index of the first foreign rule b matches, or -1.
func matchForeign(b []byte) int {
	for i, rule := range foreignRules {
		if bytes.Contains(b, rule.match) {
			return i
		}
	}
	return -1
}

// foreign notes a line from other software. The parser has counted it.
func (a *Analyzer) foreign(b []byte) {
	i := matchForeign(b)
	if i < 0 {
		return
	}
	if a.seen.dup(b, 0) {
		a.stats.Duplicates++
		return
	}
	rule := foreignRules[i]
	key := ""
	if rule.sev == SevNote {
		key = "all" // notes are counted, one example is enough
	}
	a.find.add(rule.sev, rule.code, key, string(b), rule.hint, "", a.cur)
}
