package check

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"sort"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

func init() {
	register(Check{ID: "pcie.acs", Title: "no PCIe bridge between a GPU and its NIC or peer GPU redirects P2P (ACS)", Run: checkACS})
	register(Check{ID: "iommu.mode", Title: "the IOMMU does not translate GPU/NIC DMA where GPUDirect RDMA is expected", Run: checkIOMMU})
	register(Check{ID: "gdr.peermem", Title: "a GPUDirect RDMA peer-memory path exists (nvidia_peermem or DMA-BUF)", Run: checkPeerMem})
	register(Check{ID: "ib.ports", Title: "RDMA ports are ACTIVE/LinkUp, at the expected count and rate", Run: checkIBPorts})
	register(Check{ID: "topo.gpu_nic_affinity", Title: "every GPU has a NIC close enough for GPUDirect RDMA (PIX/PXB)", Run: checkGPUNICAffinity})
	register(Check{ID: "topo.numa", Title: "GPUs have a NUMA node on a multi-socket machine", Run: checkTopoNUMA})
}

// TopoConfig sets the topology and GPUDirect checks' expectations.
type TopoConfig struct {
	// IBPorts is the number of RDMA ports the node must have, after
	// IBIgnore. Default 0: no expectation.
	IBPorts int `yaml:"ib_ports"`
	// IBRateGbps is the least rate an ACTIVE port may run at, in Gb/s (400
	// for NDR). Default 0: no expectation; a port slower than the fastest
	// port of the same HCA type then warns.
	IBRateGbps float64 `yaml:"ib_rate_gbps"`
	// IBIgnore lists devices ("mlx5_1") or ports ("mlx5_1:1") that ib.ports
	// leaves alone: storage or management ports left down on purpose.
	IBIgnore []string `yaml:"ib_ignore"`
	// ExpectGDR is auto (GPUDirect RDMA is expected when the node has GPUs
	// and RDMA NICs), yes, or no. Default auto.
	ExpectGDR string `yaml:"expect_gdr"`
	// GDRLevel is the farthest GPU↔NIC path at which NCCL uses GPUDirect
	// RDMA: PIX, PXB, PHB, NODE or SYS. Default PXB, NCCL's own default on
	// x86 (NCCL_NET_GDR_LEVEL).
	GDRLevel string `yaml:"gdr_level"`
	// PXN says whether NCCL may relay a GPU's network traffic through an
	// NVLink-connected GPU whose NIC is near (PXN): yes (NCCL's default
	// since 2.12) or no (jobs run with NCCL_PXN_DISABLE=1). Default yes.
	PXN string `yaml:"pxn"`
}

// DefaultTopoConfig returns the documented defaults.
func DefaultTopoConfig() TopoConfig {
	return TopoConfig{ExpectGDR: "auto", GDRLevel: topostate.PathPXB, PXN: "yes"}
}

// topoPre is the common precondition. A topology collector that failed is
// an error (a wrong --path.sysfs must not pass as "nothing to check"); a
// state without one (an old snapshot) is a skip.
func topoPre(n *state.Node, needGPUs bool) (Result, bool) {
	if n.Topology == nil {
		for _, s := range n.Sources {
			if s.Name == "topo" && !s.OK {
				return Result{Status: Error, Summary: "topology not read: " + s.Error}, true
			}
		}
		return Result{Status: Skip, Summary: "topology not collected"}, true
	}
	if needGPUs && len(n.Topology.GPUs) == 0 {
		return Result{Status: Skip, Summary: "no NVIDIA GPUs in sysfs (PCI vendor 0x10de, VGA/3D class)"}, true
	}
	return Result{}, false
}

// gpuOf names a topology GPU as the other checks do: NVML's record when
// there is one (it has the UUID), else index and bus ID.
func gpuOf(n *state.Node, g *topostate.GPU) *state.GPU {
	if n.NVML != nil {
		for i := range n.NVML.GPUs {
			if busid.Canonical(n.NVML.GPUs[i].PCIBusID) == g.BusID {
				return &n.NVML.GPUs[i]
			}
		}
	}
	return &state.GPU{Index: g.Index, PCIBusID: g.BusID}
}

// expectGDR says whether GPUDirect RDMA matters on this node.
func expectGDR(t *topostate.Topology, cfg *Config) bool {
	switch strings.ToLower(cfg.Topo.ExpectGDR) {
	case "yes", "true":
		return true
	case "no", "false":
		return false
	}
	return len(t.GPUs) > 0 && len(placedNICs(t)) > 0
}

func placedNICs(t *topostate.Topology) []topostate.NIC {
	var out []topostate.NIC
	for _, n := range t.NICs {
		if n.BusID != "" {
			out = append(out, n)
		}
	}
	return out
}

func virtNote(t *topostate.Topology) string {
	v := t.Virtualization
	s := "virtual machine (" + v.Evidence + ")"
	if v.Hypervisor != "" {
		s = v.Hypervisor + " " + s
	}
	return s
}

// --- pcie.acs ---------------------------------------------------------------

// acsHit is one redirecting bridge and the pairs it sits between.
type acsHit struct {
	bridge *topostate.Bridge
	paths  []string
	gpu    *topostate.GPU
}

func checkACS(n *state.Node, cfg *Config) Result {
	if r, skip := topoPre(n, true); skip {
		return r
	}
	t := n.Topology
	hits := map[string]*acsHit{}
	unknown := map[string]string{}
	judged, bridges := 0, map[string]bool{}
	for _, p := range t.Paths {
		a, b := t.GPU(p.ABusID), t.GPU(p.BBusID)
		// Only pairs whose P2P could stay inside a switch: through a host
		// bridge it reaches the root complex anyway, over NVLink it never
		// touches PCIe, and NIC↔NIC is not GPUDirect.
		if a == nil && b == nil || a != nil && b != nil && p.NVLinks > 0 || len(p.Bridges) == 0 {
			continue
		}
		judged++
		g := a
		if g == nil {
			g = b
		}
		for _, id := range p.Bridges {
			bridges[id] = true
			br := t.Bridge(id)
			switch {
			case br == nil:
				unknown[id] = "not read"
			case br.ACS.Status == "unknown":
				unknown[id] = br.ACS.Reason
			case br.ACS.ACS != nil && br.ACS.Redirect:
				h := hits[id]
				if h == nil {
					h = &acsHit{bridge: br, gpu: g}
					hits[id] = h
				}
				h.paths = append(h.paths, fmt.Sprintf("%s↔%s (%s via %s)", p.A, p.B, p.PCIe, strings.Join(p.Bridges, "→")))
			}
		}
	}
	if judged == 0 {
		return Result{Status: Skip, Summary: "no GPU↔NIC or GPU↔GPU PCIe path stays inside a PCIe switch (pairs meet at a host bridge or over NVLink), so ACS cannot reroute any"}
	}
	ids := sortedKeys(hits)
	if len(hits) > 0 && t.Virtualization.VM() {
		r := Result{Status: Pass, Summary: fmt.Sprintf("ACS redirect on %d bridge(s), expected in a %s: P2P routing is the hypervisor's", len(hits), virtNote(t))}
		for _, id := range ids {
			r.Details = append(r.Details, acsDetail(hits[id]))
		}
		return r
	}
	v := verdict{id: "pcie.acs"}
	for _, id := range ids {
		h := hits[id]
		a := h.bridge.ACS.ACS
		v.add(Fail, gpuOf(n, h.gpu), fmt.Sprintf("setpci -s %s %x.w=%04x (clears ReqRedir/CmpltRedir/EgressCtrl until reboot; for good disable ACS in the BIOS or boot with pci=disable_acs_redir=%s)",
			id, a.CtlOffset(), a.ClearedCtl(), id), acsDetail(h))
	}
	if len(hits) == 0 && len(unknown) > 0 {
		return Result{Status: Skip, Summary: fmt.Sprintf("ACS unknown on %d of %d bridges on GPU paths (%s)", len(unknown), len(bridges), unknown[sortedKeys(unknown)[0]])}
	}
	r := v.result(fmt.Sprintf("no ACS redirect on the %d bridges of %d GPU↔NIC/GPU↔GPU switch paths", len(bridges), judged))
	for _, id := range sortedKeys(unknown) {
		r.Details = append(r.Details, fmt.Sprintf("ACS of bridge %s unknown: %s", id, unknown[id]))
	}
	return r
}

func acsDetail(h *acsHit) string {
	a := h.bridge.ACS.ACS
	paths := h.paths
	more := ""
	if len(paths) > 2 {
		more = fmt.Sprintf(" and %d more", len(paths)-2)
		paths = paths[:2]
	}
	return fmt.Sprintf("bridge %s (%s) redirects peer-to-peer to the root complex, ACSCtl %s (control register at 0x%x): on %s%s",
		h.bridge.BusID, strings.ReplaceAll(h.bridge.Role, "_", " "), a.CtlFlags, a.CtlOffset(), strings.Join(paths, ", "), more)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// --- iommu.mode -------------------------------------------------------------

func checkIOMMU(n *state.Node, cfg *Config) Result {
	if r, skip := topoPre(n, true); skip {
		return r
	}
	t := n.Topology
	io := t.IOMMU
	switch io.Mode {
	case "off":
		return Result{Status: Pass, Summary: "IOMMU off: GPU and NIC DMA is not translated (" + io.Evidence + ")"}
	case "passthrough":
		return Result{Status: Pass, Summary: "IOMMU in passthrough: GPU and NIC DMA is not translated (" + io.Evidence + ")"}
	case "unknown":
		return Result{Status: Skip, Summary: "IOMMU mode unknown: " + io.Evidence}
	}
	names := deviceNames(t, io.Translated)
	switch {
	case t.Virtualization.VM():
		return Result{Status: Pass, Summary: fmt.Sprintf("IOMMU translates DMA for %s inside a %s: the host's IOMMU is what matters", names, virtNote(t))}
	case !expectGDR(t, cfg):
		return Result{Status: Pass, Summary: fmt.Sprintf("IOMMU translates DMA for %s, but GPUDirect RDMA is not expected (no RDMA NIC, or expect_gdr: no)", names)}
	}
	v := verdict{id: "iommu.mode"}
	remedy := "boot with iommu=pt (keeping intel_iommu=on or amd_iommu=on) and reboot"
	for _, id := range io.Translated {
		var g *state.GPU
		if tg := t.GPU(id); tg != nil {
			g = gpuOf(n, tg)
		}
		v.add(Warn, g, remedy, fmt.Sprintf("IOMMU translates DMA for %s (%s; %s): GPUDirect RDMA pays for every translation, and an isolating IOMMU is why the kernel turns ACS redirect on",
			t.Label(id), id, io.Evidence))
	}
	return v.result("")
}

func deviceNames(t *topostate.Topology, ids []string) string {
	var names []string
	for _, id := range ids {
		names = append(names, t.Label(id))
	}
	if len(names) > 4 {
		names = append(names[:4], fmt.Sprintf("%d more", len(names)-4))
	}
	return strings.Join(names, ", ")
}

// --- gdr.peermem ------------------------------------------------------------

func checkPeerMem(n *state.Node, cfg *Config) Result {
	if r, skip := topoPre(n, true); skip {
		return r
	}
	t := n.Topology
	nics := placedNICs(t)
	if !expectGDR(t, cfg) {
		return Result{Status: Skip, Summary: "GPUDirect RDMA not expected (no RDMA NIC in /sys/class/infiniband, or expect_gdr: no)"}
	}
	pm := t.PeerMem
	switch {
	case pm.Loaded():
		return Result{Status: Pass, Summary: fmt.Sprintf("%s loaded (version %s, %s)", pm.Module, pm.Version, pm.Path)}
	case pm.DMABuf:
		return Result{Status: Pass, Summary: "no peer-memory module, but the DMA-BUF path is available: " + pm.DMABufReason + " (NCCL uses it when CUDA reports DMA-BUF support)"}
	}
	var ids []string
	for _, nic := range nics {
		ids = append(ids, nic.BusID)
	}
	names := "the expected NICs"
	if len(ids) > 0 {
		names = deviceNames(t, ids)
	}
	return Result{Status: Fail,
		Summary: fmt.Sprintf("no GPUDirect RDMA peer memory: no nvidia_peermem or nv_peer_mem module (NCCL looks for /sys/module/nvidia_peermem/version and /sys/kernel/mm/memory_peers/nv_mem{,_nc}/version) and no DMA-BUF path (%s); NCCL will copy through host memory on %s",
			pm.DMABufReason, names),
		Remedy: "modprobe nvidia_peermem, and list it in /etc/modules-load.d/ so it loads at every boot"}
}

// --- ib.ports ---------------------------------------------------------------

func ibIgnored(list []string, dev string, port int) bool {
	for _, x := range list {
		if x == dev || x == fmt.Sprintf("%s:%d", dev, port) {
			return true
		}
	}
	return false
}

func checkIBPorts(n *state.Node, cfg *Config) Result {
	if r, skip := topoPre(n, false); skip {
		return r
	}
	t := n.Topology
	want, wantFrom := cfg.Topo.IBPorts, ""
	if want == 0 {
		// A DGX has one ConnectX compute port per GPU: fewer enumerated is
		// an HCA gone from the bus or its driver not loaded.
		if p := cfg.PlatformFor(n); p.IBPorts > 0 {
			want, wantFrom = p.IBPorts, fmt.Sprintf(" (platform %s: one compute-fabric ConnectX port per GPU)", p.Name)
		}
	}
	if len(t.NICs) == 0 {
		if want > 0 {
			return Result{Status: Fail, Summary: fmt.Sprintf("no RDMA devices in /sys/class/infiniband, expected %d ports%s", want, wantFrom),
				Remedy: "check that the HCAs are seated and their drivers loaded (lspci -d 15b3:; lsmod | grep ib_core; ibstat)"}
		}
		return Result{Status: Skip, Summary: "no RDMA devices (/sys/class/infiniband absent or empty)"}
	}
	// The fastest active port of each HCA type and link layer is what its
	// siblings should run at when no rate is configured.
	best := map[string]float64{}
	for _, nic := range t.NICs {
		for _, p := range nic.Ports {
			if p.Active() && !ibIgnored(cfg.Topo.IBIgnore, nic.Name, p.Port) {
				k := nic.HCAType + "/" + p.LinkLayer
				best[k] = max(best[k], p.RateGbps)
			}
		}
	}
	v := verdict{id: "ib.ports"}
	count, active, ignoredPorts := 0, 0, 0
	rates := map[string]int{}
	for _, nic := range t.NICs {
		if ibIgnored(cfg.Topo.IBIgnore, nic.Name, 0) {
			ignoredPorts += len(nic.Ports)
			continue
		}
		if nic.Error != "" {
			v.add(Error, nil, "", nic.Name+": "+nic.Error)
			continue
		}
		for _, p := range nic.Ports {
			if ibIgnored(cfg.Topo.IBIgnore, nic.Name, p.Port) {
				ignoredPorts++
				continue
			}
			count++
			layer := p.LinkLayer
			if layer == "" {
				layer = "link layer unknown"
			}
			where := fmt.Sprintf("%s port %d (%s)", nic.Name, p.Port, layer)
			switch {
			case !p.Active() && p.LinkLayer == "Ethernet":
				// A RoCE port has no subnet manager and no IB PHY states of its
				// own: the driver reports ACTIVE/LinkUp while its network
				// interface runs with carrier and DOWN/Disabled otherwise
				// (irdma_query_port, ocrdma_query_port, mana_ib_query_port:
				// netif_running && carrier ok). So the interface is what to
				// look at.
				cmd, ifc := "ip link show", "the port's network interface (rdma link show "+nic.Name+" names it)"
				if len(nic.NetDevs) > 0 {
					cmd, ifc = "ip link show "+nic.NetDevs[0], strings.Join(nic.NetDevs, ", ")
				}
				v.add(Fail, nil, cmd+": bring "+ifc+" up, or check its cable, transceiver and switch port; ignore a port left down on purpose with topo.ib_ignore",
					fmt.Sprintf("%s is %s: a RoCE port is up only while its network interface is up with carrier", where, p.StateText()))
			case !p.Active() && p.PhysState == "LinkUp" && p.StateID == 1:
				// IB: a port whose physical link comes up leaves DOWN for INIT
				// by itself, and the subnet manager takes it on to ACTIVE. One
				// that stays DOWN with the link up is an SR-IOV virtual
				// function whose logical link the PF and the subnet manager
				// hold down (network-operator#249: SM lid 1, so a subnet
				// manager exists), or a physical port caught in transition.
				v.add(Fail, nil, "on an SR-IOV virtual function the VF's link is held down through the PF: check its link policy and GUID and that the subnet manager has virtualization enabled; on a physical port run ibstat "+nic.Name+" again (DOWN with the link up passes to INIT)",
					fmt.Sprintf("%s is %s with the physical link up", where, p.State))
			case !p.Active() && p.PhysState == "LinkUp":
				v.add(Fail, nil, "the link is up but no subnet manager activated it: check opensm/UFM and the switch (ibstat "+nic.Name+")",
					fmt.Sprintf("%s is %s with the physical link up", where, p.State))
			case !p.Active():
				v.add(Fail, nil, "check the cable, transceiver and switch port (ibstat "+nic.Name+"); ignore a port left down on purpose with topo.ib_ignore",
					fmt.Sprintf("%s is %s", where, p.StateText()))
			case cfg.Topo.IBRateGbps > 0 && p.RateGbps < cfg.Topo.IBRateGbps:
				v.add(Fail, nil, "check the cable and the switch port's speed (ibstat "+nic.Name+"); reseat or replace the cable",
					fmt.Sprintf("%s runs at %g Gb/s, expected %g", where, p.RateGbps, cfg.Topo.IBRateGbps))
			case cfg.Topo.IBRateGbps == 0 && p.RateGbps < best[nic.HCAType+"/"+p.LinkLayer]:
				v.add(Warn, nil, "check the cable and the switch port's speed (ibstat "+nic.Name+"); set topo.ib_rate_gbps to make a slow port fail",
					fmt.Sprintf("%s runs at %g Gb/s while other %s ports run at %g", where, p.RateGbps, nic.HCAType, best[nic.HCAType+"/"+p.LinkLayer]))
			default:
				active++
				rates[fmt.Sprintf("%g Gb/s %s", p.RateGbps, p.LinkLayer)]++
			}
		}
	}
	// Against the platform's count, a port the admin ignores is accounted
	// for (present, down on purpose); topo.ib_ports counts as it always did.
	have := count
	if wantFrom != "" {
		have += ignoredPorts
	}
	if want > 0 && have < want {
		v.add(Fail, nil, "check that every HCA is seated and its driver loaded (lspci -d 15b3:; ibstat)",
			fmt.Sprintf("%d RDMA ports found, expected %d%s", count, want, wantFrom))
	}
	var parts []string
	for _, k := range sortedKeys(rates) {
		parts = append(parts, fmt.Sprintf("%d× %s", rates[k], k))
	}
	pass := fmt.Sprintf("%d RDMA ports ACTIVE/LinkUp (%s)", active, strings.Join(parts, ", "))
	if want > 0 {
		pass += fmt.Sprintf(", expected %d", want)
		if wantFrom != "" {
			pass += " (platform)"
		}
	}
	return v.result(pass)
}

// --- topo.gpu_nic_affinity --------------------------------------------------

func checkGPUNICAffinity(n *state.Node, cfg *Config) Result {
	if r, skip := topoPre(n, true); skip {
		return r
	}
	t := n.Topology
	if len(placedNICs(t)) == 0 {
		return Result{Status: Skip, Summary: "no RDMA NICs with a PCIe position"}
	}
	level := strings.ToUpper(cfg.Topo.GDRLevel)
	if level == "" {
		level = topostate.PathPXB
	}
	if topostate.PathRank(level) > topostate.PathRank(topostate.PathSYS) {
		return Result{Status: Error, Summary: fmt.Sprintf("topo.gdr_level %q: want PIX, PXB, PHB, NODE or SYS", cfg.Topo.GDRLevel)}
	}
	type near struct {
		nic, bus, typ string
	}
	nearest := map[string]near{}
	gpuNIC := map[[2]string]string{} // GPU bus, NIC bus -> PCIe class
	for _, p := range t.Paths {
		g, nicBus := p.ABusID, p.BBusID
		if t.GPU(g) == nil {
			g, nicBus = nicBus, g
		}
		if t.GPU(g) == nil || t.GPU(nicBus) != nil {
			continue
		}
		gpuNIC[[2]string{g, nicBus}] = p.PCIe
		if cur, ok := nearest[g]; !ok || topostate.PathRank(p.PCIe) < topostate.PathRank(cur.typ) {
			nearest[g] = near{t.Label(nicBus), nicBus, p.PCIe}
		}
	}
	// PXN (NCCL src/graph/paths.cc, ncclTopoComputePaths): a GPU whose NIC
	// is beyond PXB sends through a peer GPU that is NVLink-connected to it
	// (directly or through NVSwitch, PATH_NVL) and at most PXB from the
	// NIC; ncclTopoCheckGdr then judges the peer's distance, so GPUDirect
	// RDMA is used, from the peer. NCCL_PXN_DISABLE=1 turns it off.
	var pxnOn bool
	switch strings.ToLower(cfg.Topo.PXN) {
	case "", "yes", "true":
		pxnOn = true
	case "no", "false":
	default:
		return Result{Status: Error, Summary: fmt.Sprintf("topo.pxn %q: want yes or no", cfg.Topo.PXN)}
	}
	relayLevel := level
	if topostate.PathRank(relayLevel) > topostate.PathRank(topostate.PathPXB) {
		relayLevel = topostate.PathPXB
	}
	nvlinked := func(a, b string) bool {
		for _, p := range t.Paths {
			if (p.ABusID == a && p.BBusID == b || p.ABusID == b && p.BBusID == a) && (p.NVLinks > 0 || strings.HasPrefix(p.Type, "NV")) {
				return true
			}
		}
		return false
	}
	// relay names the NVLink peer with a near NIC ("GPU1 via GPU0 to
	// mlx5_0"), the one whose NIC is nearest the GPU itself when several
	// qualify, and says whether some other GPU has a near NIC at all.
	relay := func(g *topostate.GPU) (string, bool) {
		anyNear, route, best := false, "", 0
		for i := range t.GPUs {
			p := &t.GPUs[i]
			nr, ok := nearest[p.BusID]
			if p.BusID == g.BusID || !ok || topostate.PathRank(nr.typ) > topostate.PathRank(relayLevel) {
				continue
			}
			if ng := gpuOf(n, p); ng.Lost || ng.Unreachable {
				continue // a GPU that fell off the bus relays nothing
			}
			anyNear = true
			if !nvlinked(g.BusID, p.BusID) {
				continue
			}
			if r := topostate.PathRank(gpuNIC[[2]string{g.BusID, nr.bus}]); route == "" || r < best {
				route, best = fmt.Sprintf("GPU%d via GPU%d to %s", g.Index, p.Index, nr.nic), r
			}
		}
		return route, anyNear
	}
	v := verdict{id: "topo.gpu_nic_affinity"}
	judged, gone := 0, 0
	var viaPeer, routes []string
	for i := range t.GPUs {
		g := &t.GPUs[i]
		// A GPU NVML lost or cannot hand out is not there to use a NIC
		// (gpu.count fails for it): the count is of the GPUs present.
		if ng := gpuOf(n, g); ng.Lost || ng.Unreachable {
			gone++
			continue
		}
		judged++
		nr, ok := nearest[g.BusID]
		switch {
		case !ok || nr.typ == topostate.PathUnknown:
			v.add(Skip, gpuOf(n, g), "", "PCIe position unknown")
			continue
		case topostate.PathRank(nr.typ) <= topostate.PathRank(level):
			v.add(Pass, gpuOf(n, g), "", "")
			continue
		case t.Virtualization.VM():
			v.add(Pass, gpuOf(n, g), "", "")
			continue
		}
		remedy := "move a NIC behind the GPU's PCIe switch (see 'gpuprobe topo'); NCCL_NET_GDR_LEVEL=" + nr.typ + " makes NCCL use GPUDirect RDMA anyway, often slower"
		far := fmt.Sprintf("nearest NIC is %s at %s, beyond %s", nr.nic, nr.typ, level)
		route, someNear := relay(g)
		switch {
		case pxnOn && route != "":
			v.add(Pass, gpuOf(n, g), "", "")
			viaPeer, routes = append(viaPeer, itoa(g.Index)), append(routes, route)
		case c2cGPU(gpuOf(n, g).Name):
			// A Grace superchip GPU reaches its CPU over NVLink-C2C, which
			// nvidia-smi and the PCIe tree do not show (sgl-project/sglang#11208:
			// every GB200 GPU-NIC cell SYS). NCCL joins C2C and the CPU's PHB
			// path to a NIC into P2C (src/graph/paths.cc, ncclTopoComputePaths)
			// and ncclTopoCheckGdr allows GPUDirect RDMA up to P2C while
			// NCCL_NET_GDR_C2C is set: a parameter since 2.26, off there, on by
			// default since 2.27 (NCCL_PARAM(NetGdrC2c, "NET_GDR_C2C", 1)); a
			// NIC on the other CPU is reached through the NVLink peer there
			// when PXN over C2C is on (NCCL_PXN_C2C: off in 2.27, on in 2.28,
			// meta-pytorch/torchcomms#942). Which NCCL version runs decides,
			// and this node's data cannot say.
			v.add(Warn, gpuOf(n, g), "NCCL_DEBUG=INFO shows NCCL's path to each NIC (P2C or SYS) and whether it uses GDRDMA; on NCCL 2.26 set NCCL_NET_GDR_C2C=1, on 2.27 NCCL_PXN_C2C=1 for NICs on the other CPU",
				far+": unknown whether NCCL uses GPUDirect RDMA: the GPU reaches its CPU over NVLink-C2C, which this path class does not show, and NCCL 2.27 and later (NCCL_NET_GDR_C2C, on by default) use it to a NIC on that CPU")
		case pxnOn && someNear && !t.NVLinkKnown:
			// Another GPU has a near NIC, but whether NVLink joins them is
			// not known (no NVML): NCCL's choice cannot be stated.
			v.add(Warn, gpuOf(n, g), remedy, far+": unknown whether NCCL relays through an NVLink peer (PXN): no NVLink data (NVML); without one it will not use GPUDirect RDMA for this GPU by default")
		default:
			v.add(Warn, gpuOf(n, g), remedy, far+": NCCL will not use GPUDirect RDMA for this GPU by default")
		}
	}
	pass := fmt.Sprintf("each of %d GPUs has a NIC within %s", judged, level)
	if len(viaPeer) > 0 {
		pass += fmt.Sprintf(", GPU%s %s through an NVLink peer (NCCL's PXN, on unless NCCL_PXN_DISABLE=1: %s)",
			map[bool]string{true: "s", false: ""}[len(viaPeer) > 1], strings.Join(viaPeer, ","), strings.Join(routes, ", "))
	}
	if t.Virtualization.VM() {
		pass = fmt.Sprintf("%d GPUs; in a %s the PCIe layout is the hypervisor's (NCCL_TOPO_FILE describes the real one)", judged, virtNote(t))
	}
	if gone > 0 {
		pass += fmt.Sprintf(" (%d lost or unreachable GPUs not judged, see gpu.count)", gone)
	}
	return v.result(pass)
}

// c2cGPU says whether NVML's name is that of a Grace superchip GPU, joined
// to its Grace CPU by NVLink-C2C rather than by PCIe alone: GH200 (Grace
// Hopper), GB200 and GB300 (Grace Blackwell), per NVIDIA's GH200 and GB200
// NVL72 datasheets. Deliberately narrow: a name it does not know is not C2C.
func c2cGPU(name string) bool {
	n := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "NVIDIA ")
	for _, p := range []string{"GH200", "GB200", "GB300"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// --- topo.numa --------------------------------------------------------------

func checkTopoNUMA(n *state.Node, cfg *Config) Result {
	if r, skip := topoPre(n, true); skip {
		return r
	}
	t := n.Topology
	nodes := len(t.NUMANodes)
	v := verdict{id: "topo.numa"}
	byNode := map[int][]string{}
	remedy := "fix the firmware's NUMA description (update the BIOS; enable ACPI SRAT/NUMA settings); meanwhile bind ranks by hand (numactl --cpunodebind)"
	for i := range t.GPUs {
		g := &t.GPUs[i]
		byNode[g.NUMANode] = append(byNode[g.NUMANode], "GPU"+itoa(g.Index))
		if g.NUMANode < 0 && nodes > 1 {
			v.add(Warn, gpuOf(n, g), remedy, fmt.Sprintf("numa_node is -1 on a machine with %d NUMA nodes: the firmware gives the GPU no proximity, so NCCL and Slurm cannot place its CPUs", nodes))
		}
	}
	for _, nic := range placedNICs(t) {
		if nic.NUMANode < 0 && nodes > 1 {
			v.add(Warn, nil, remedy, fmt.Sprintf("%s (%s): numa_node is -1 on a machine with %d NUMA nodes", nic.Name, nic.BusID, nodes))
		}
	}
	var parts []string
	keys := make([]int, 0, len(byNode))
	for k := range byNode {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		node := itoa(k)
		if k < 0 {
			node = "none (numa_node -1)"
			if nodes <= 1 {
				node = "none (numa_node -1: the firmware gives no proximity, which one node does not need)"
			}
		}
		parts = append(parts, strings.Join(byNode[k], ",")+" on node "+node)
	}
	pass := strings.Join(parts, "; ")
	if nodes <= 1 {
		pass = fmt.Sprintf("single NUMA node: %s", pass)
	}
	return v.result(pass)
}
