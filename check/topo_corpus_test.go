package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/internal/topocapture"
	sysfake "github.com/gpuprobe/gpuprobe/sim/sysfs"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"github.com/gpuprobe/gpuprobe/topo"
)

// The real captures of the topology corpus live with the topo package's
// fixtures (topo/testdata/topo-m, topo/testdata/ib); each file's header
// names its source.
func corpusFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "topo", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// captureNode builds the topology that an `nvidia-smi topo -m` capture
// describes, as topo.Collect would hand it to the checks: one GPU per
// complete GPU row (NVML's index), one RDMA device per NIC column (named
// through the NIC legend when the capture has one), a GPU-NIC path per cell
// with the cell as its PCIe class, and each GPU's NUMA node from the NUMA
// Affinity column (-1 where the capture has none). Bus IDs are invented: a
// capture has none. NUMA nodes are those the rows name.
func captureNode(t *testing.T, text string) *state.Node {
	t.Helper()
	m := topocapture.Read(text)
	cols, legend := m.Cols, m.Legend
	type row struct {
		cells []string
		numa  string
	}
	rows := map[string]row{}
	for name, r := range m.Rows {
		// GPU rows with their affinity columns, as this reader always took.
		if strings.HasPrefix(name, "GPU") && r.CPU != "" {
			rows[name] = row{cells: r.Cells, numa: r.NUMA}
		}
	}
	// `topo -mp` prints the PCIe-only matrix: NVLink is then not known.
	pcieOnly := strings.Contains(text, "topo -mp")
	tp := &topostate.Topology{GPUSource: "nvml", NVLinkKnown: !pcieOnly, Virtualization: topostate.Virtualization{Kind: "none"}}
	nodes := map[int]bool{}
	busOf := map[string]string{}
	for i, c := range cols {
		if strings.HasPrefix(c, "GPU") {
			continue
		}
		name := c
		if n, ok := legend[c]; ok {
			name = n
		}
		bus := fmt.Sprintf("0000:%02x:00.0", 0x80+i)
		busOf[c] = bus
		tp.NICs = append(tp.NICs, topostate.NIC{Index: len(tp.NICs), Name: name, PCIFunction: topostate.PCIFunction{BusID: bus, NUMANode: -1},
			Ports: []topostate.IBPort{{Port: 1, State: "ACTIVE", StateID: 4, PhysState: "LinkUp", PhysStateID: 5, RateGbps: 400, LinkLayer: "InfiniBand"}}})
	}
	for _, c := range cols {
		r, ok := rows[c]
		if !ok || !strings.HasPrefix(c, "GPU") {
			continue
		}
		idx, _ := strconv.Atoi(strings.TrimPrefix(c, "GPU"))
		numa := -1
		if n, err := strconv.Atoi(r.numa); err == nil {
			numa = n
			nodes[n] = true
		}
		bus := fmt.Sprintf("0000:%02x:00.0", 0x10+idx)
		tp.GPUs = append(tp.GPUs, topostate.GPU{Index: idx, PCIFunction: topostate.PCIFunction{BusID: bus, NUMANode: numa}})
		for j, cell := range r.cells {
			if nb, isNIC := busOf[cols[j]]; isNIC {
				tp.Paths = append(tp.Paths, topostate.Path{A: c, B: tp.Label(nb), ABusID: bus, BBusID: nb, Type: cell, PCIe: cell})
				continue
			}
			// GPU pairs once, with their NVLink count from NV#; the PCIe
			// class behind an NV# cell is not in the capture.
			peer, _ := strconv.Atoi(strings.TrimPrefix(cols[j], "GPU"))
			if _, seen := rows[cols[j]]; !seen || peer <= idx || cell == "X" {
				continue
			}
			p := topostate.Path{A: c, B: cols[j], ABusID: bus, BBusID: fmt.Sprintf("0000:%02x:00.0", 0x10+peer), Type: cell, PCIe: cell}
			if n, err := strconv.Atoi(strings.TrimPrefix(cell, "NV")); err == nil && strings.HasPrefix(cell, "NV") {
				p.NVLinks, p.PCIe = n, topostate.PathUnknown
			}
			tp.Paths = append(tp.Paths, p)
		}
	}
	var ids []int
	for n := range nodes {
		ids = append(ids, n)
	}
	sort.Ints(ids)
	for _, n := range ids {
		tp.NUMANodes = append(tp.NUMANodes, topostate.NUMANode{ID: n})
	}
	if len(tp.GPUs) == 0 {
		t.Fatal("no GPU rows in the capture")
	}
	return &state.Node{Topology: tp}
}

// What topo.gpu_nic_affinity concludes for the node each real capture
// describes (partial captures: the GPUs whose rows survived).
func TestCorpusGPUNICAffinity(t *testing.T) {
	node := func(f string) *state.Node { return captureNode(t, corpusFile(t, "topo-m/"+f)) }
	const noGDR = "NCCL will not use GPUDirect RDMA for this GPU by default"
	runCases(t, checkGPUNICAffinity, []checkCase{
		// 4x L40S, no NVLink, both NICs on socket 1: no GPU has a NIC behind
		// its switch; GPU0/GPU1 reach one only across the sockets.
		{name: "warpem106 L40S, NICs on the other socket", node: node("warpem106_4xL40S_nics-on-socket1_topo-m.txt"), status: Warn,
			summary: "GPUs 0,1: nearest NIC is mlx5_0 at SYS, beyond PXB: " + noGDR + "; GPUs 2,3: nearest NIC is mlx5_0 at NODE", devices: []int{0, 1, 2, 3}},
		{name: "warpem106 with gdr_level NODE", node: node("warpem106_4xL40S_nics-on-socket1_topo-m.txt"), cfg: func(c *Config) { c.Topo.GDRLevel = "NODE" }, status: Warn,
			summary: "GPUs 0,1: nearest NIC is mlx5_0 at SYS, beyond NODE", devices: []int{0, 1}},
		// The old layout: one mlx4_0, PHB to socket 0's GPUs, SYS to GPU4;
		// GPU pairs are PCIe (PIX/PHB/SYS), so no NVLink peer relays.
		{name: "k8s53497 one HCA for 8 GPUs", node: node("k8s53497_8gpu_mlx4_0_old-format_topo-m_PARTIAL.txt"), status: Warn,
			summary: "GPUs 0,1,2,3: nearest NIC is mlx4_0 at PHB, beyond PXB: " + noGDR + "; GPU 4 (0000:14:00.0): nearest NIC is mlx4_0 at SYS", devices: []int{0, 1, 2, 3, 4}},
		// -mp hides NVLink, and no GPU has a NIC within PXB: no relay could
		// help, so the conclusion holds without NVLink data.
		{name: "deepep55 -mp, every NIC through a host bridge", node: node("deepep55_8gpu_9nic_container_phb_topo-mp_PARTIAL.txt"), status: Warn,
			summary: "GPUs 0,1,2,3: nearest NIC is NIC1 at PHB, beyond PXB: " + noGDR + "; GPUs 4,5: nearest NIC is NIC5 at PHB", devices: []int{0, 1, 2, 3, 4, 5}},
		{name: "nccl1453 H100, a PIX NIC per GPU", node: node("nccl1453_8xH100_9nic_nic0-sys-to-all_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 8 GPUs has a NIC within PXB"},
		{name: "sglang13973 H100 on 4 SNC nodes", node: node("sglang13973_8xH100_9nic_snc-4numa_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 6 GPUs has a NIC within PXB"},
		{name: "dask1358 Slurm step, PXB", node: node("daskcuda1358_2xA100_nv12_slurm-step_numa3_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 2 GPUs has a NIC within PXB"},
		{name: "dask1358 with gdr_level PIX", node: node("daskcuda1358_2xA100_nv12_slurm-step_numa3_topo-m_PARTIAL.txt"), cfg: func(c *Config) { c.Topo.GDRLevel = "PIX" }, status: Warn,
			summary: "GPUs 0,1: nearest NIC is NIC0 at PXB, beyond PIX", devices: []int{0, 1}},
		{name: "nccl2150 H100 RoCE, PXB", node: node("nccl2150_8xH100_8nic_pxb_epyc-nps1_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 6 GPUs has a NIC within PXB"},
		{name: "deepep128 no NVLink, a PIX NIC per GPU", node: node("deepep128_8gpu_sys-pairs_10nic_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 6 GPUs has a NIC within PXB"},
		{name: "deepep223 H20, a PIX NIC per GPU", node: node("deepep223_8xH20_10nic_container_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 5 GPUs has a NIC within PXB"},
		{name: "vllm31594 B200, glued header", node: node("vllm31594_8xB200_13nic_glued-header_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 4 GPUs has a NIC within PXB"},
		{name: "unsloth3872 B200 on 4 NUMA nodes", node: node("unsloth3872_8xB200_9nic_4numa_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 5 GPUs has a NIC within PXB"},
		{name: "nccl2157 A100 NPS4, PXB", node: node("nccl2157_8xA100_18nic_epyc-nps4_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 4 GPUs has a NIC within PXB"},
		{name: "nccl933 A800, a PIX NIC per GPU", node: node("nccl933_8xA800_nv8_9nic_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 7 GPUs has a NIC within PXB"},
		// 8x H20 on NVSwitch with 5 NICs: GPUs 1, 3 and 5 have no NIC nearer
		// than NODE, but each is NVLinked to a GPU with a PIX NIC, and NCCL
		// sends through that GPU (PXN, src/graph/paths.cc): GPUDirect RDMA
		// is used, from the peer. Saying it is not would be wrong.
		{name: "deepep137 H20, NICs reached through NVLink peers", node: node("deepep137_8xH20_5nic_gpus-without-near-nic_topo-m_PARTIAL.txt"), status: Pass,
			summary: "each of 7 GPUs has a NIC within PXB, GPUs 1,3,5 through an NVLink peer (NCCL's PXN, on unless NCCL_PXN_DISABLE=1: GPU1 via GPU0 to NIC0, GPU3 via GPU0 to NIC0, GPU5 via GPU4 to NIC2)"},
		// With PXN off the same GPUs are what the warning says.
		{name: "deepep137 with PXN off", node: node("deepep137_8xH20_5nic_gpus-without-near-nic_topo-m_PARTIAL.txt"), cfg: func(c *Config) { c.Topo.PXN = "no" }, status: Warn,
			summary: "GPUs 1,3: nearest NIC is NIC0 at NODE, beyond PXB: " + noGDR, devices: []int{1, 3, 5}},
		// topo5. The DGX-1 hybrid cube mesh: both NICs sit behind GPU2/GPU3's
		// switch. GPUs 0, 1, 6 and 7 have a direct NVLink to GPU2 or GPU3 and
		// relay through it (PXN needs the peer <= PATH_NVL, a direct link);
		// GPUs 4 and 5 reach GPU2/GPU3 only at SYS, so no relay exists.
		{name: "nccltests29 hybrid cube mesh, GPUs 4,5 without a relay", node: node("nccltests29_8xV100_hybrid-cube-mesh_2nic_topo-m_PARTIAL.txt"), status: Warn,
			summary: "GPUs 4,5: nearest NIC is mlx5_0 at SYS, beyond PXB: " + noGDR, devices: []int{4, 5}},
		{name: "nccltests29 with PXN off", node: node("nccltests29_8xV100_hybrid-cube-mesh_2nic_topo-m_PARTIAL.txt"), cfg: func(c *Config) { c.Topo.PXN = "no" }, status: Warn,
			summary: "GPUs 0,1: nearest NIC is mlx5_0 at NODE, beyond PXB: " + noGDR, devices: []int{0, 1, 4, 5, 6, 7}},
		{name: "nccltests78 DGX-2, a PIX NIC per GPU pair", node: node("nccltests78_dgx2_16xV100_10nic_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 5 GPUs has a NIC within PXB"},
		// Six NICs for eight NVSwitch H100s: GPU1's nearest NIC is NODE,
		// and GPU0 (PIX to NIC0, NV18 to GPU1) relays.
		{name: "nccl1737 H100, GPU1 through GPU0", node: node("nccl1737_8xH100_6nic_gpu1-node-only_topo-m_PARTIAL.txt"), status: Pass,
			summary: "each of 3 GPUs has a NIC within PXB, GPU 1 through an NVLink peer (NCCL's PXN, on unless NCCL_PXN_DISABLE=1: GPU1 via GPU0 to NIC0)"},
		{name: "deepep60 -mp, a PIX NIC per GPU", node: node("deepep60_8gpu_14nic_pix-per-gpu_topo-mp_PARTIAL.txt"), status: Pass, summary: "each of 4 GPUs has a NIC within PXB"},
		{name: "deepep145 four NICs per GPU pair at PXB", node: node("deepep145_8gpu_18nic_pxb-groups_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 4 GPUs has a NIC within PXB"},
		{name: "vllm16997 tabs, 26 NICs", node: node("vllm16997_8gpu_26nic_tabs_topo-m_PARTIAL.txt"), status: Pass, summary: "each of 6 GPUs has a NIC within PXB"},
		// GB200: NVLink-C2C to the Grace CPU is no PCIe class, so every cell
		// is SYS; NCCL (2.27 and later by default) uses GPUDirect RDMA to a
		// NIC on the GPU's own Grace (P2C). Which NIC sits where, and which
		// NCCL runs, the capture cannot say: unknown, not "will not".
		{name: "sglang11208 GB200 over C2C", node: withGPUNames(node("sglang11208_4xGB200_6nic_all-sys_c2c_topo-m_PARTIAL.txt"), "NVIDIA GB200"), status: Warn,
			summary: "GPUs 0,1,2: nearest NIC is NIC0 at SYS, beyond PXB: unknown whether NCCL uses GPUDirect RDMA: the GPU reaches its CPU over NVLink-C2C", devices: []int{0, 1, 2},
			remedy: "NCCL_NET_GDR_C2C=1"},
	})
	if r := checkGPUNICAffinity(node("deepep137_8xH20_5nic_gpus-without-near-nic_topo-m_PARTIAL.txt"), &Config{Topo: TopoConfig{GDRLevel: "PXB", PXN: "maybe"}}); r.Status != Error {
		t.Errorf("topo.pxn maybe: %s %q", r.Status, r.Summary)
	}
	// A relay GPU that NVML lost relays nothing: GPU1's only PIX peers are
	// GPU0 (NIC0) and GPU2 (NIC1); with GPU0 lost, GPU2 relays.
	lost := withLostGPU(node("deepep137_8xH20_5nic_gpus-without-near-nic_topo-m_PARTIAL.txt"), 0)
	if r := checkGPUNICAffinity(lost, DefaultConfig()); r.Status != Pass || !strings.Contains(r.Summary, "GPU1 via GPU2 to NIC1") || strings.Contains(r.Summary, "via GPU0") {
		t.Errorf("deepep137 with GPU0 lost: %s %q", r.Status, r.Summary)
	}
	if DefaultConfig().Topo.PXN != "yes" {
		t.Errorf("topo.pxn default %q, want yes (NCCL's default)", DefaultConfig().Topo.PXN)
	}
	// Without NVLink data a GPU whose peers have near NICs cannot be judged
	// for PXN: the warning says so instead of stating NCCL's choice.
	n := node("deepep137_8xH20_5nic_gpus-without-near-nic_topo-m_PARTIAL.txt")
	n.Topology.NVLinkKnown = false
	var keep []topostate.Path
	for _, p := range n.Topology.Paths {
		if p.NVLinks == 0 {
			keep = append(keep, p)
		}
	}
	n.Topology.Paths = keep
	if r := checkGPUNICAffinity(n, DefaultConfig()); r.Status != Warn || !strings.Contains(r.Summary, "unknown whether NCCL relays through an NVLink peer (PXN): no NVLink data") ||
		strings.Contains(r.Summary, noGDR) {
		t.Errorf("deepep137 without NVLink data: %s %q", r.Status, r.Summary)
	}
}

// ibstatNode reads an ibstat capture into the RDMA devices topo.Collect
// would report for it: sysfs's "<n>: <NAME>" states (ibstat prints
// Down/Initializing/Armed/Active and Sleep/Polling/Disabled/.../LinkUp;
// topo/corpus_test.go reads the same captures through a sysfs tree).
func ibstatNode(t *testing.T, text string) *state.Node {
	t.Helper()
	states := map[string]struct {
		id   int
		name string
	}{"Down": {1, "DOWN"}, "Initializing": {2, "INIT"}, "Armed": {3, "ARMED"}, "Active": {4, "ACTIVE"}}
	phys := map[string]int{"Sleep": 1, "Polling": 2, "Disabled": 3, "PortConfigurationTraining": 4, "LinkUp": 5, "LinkErrorRecovery": 6, "PhyTest": 7}
	tp := &topostate.Topology{Virtualization: topostate.Virtualization{Kind: "none"}}
	var port *topostate.IBPort
	for _, raw := range strings.Split(text, "\n") {
		if strings.HasPrefix(raw, "#") {
			continue
		}
		line := strings.TrimSpace(raw)
		if name, ok := strings.CutPrefix(line, "CA '"); ok {
			tp.NICs = append(tp.NICs, topostate.NIC{Index: len(tp.NICs), Name: strings.TrimSuffix(name, "'"),
				PCIFunction: topostate.PCIFunction{BusID: fmt.Sprintf("0000:%02x:00.0", len(tp.NICs)+1), NUMANode: 0}})
			port = nil
			continue
		}
		if len(tp.NICs) == 0 {
			continue
		}
		nic := &tp.NICs[len(tp.NICs)-1]
		if n, ok := strings.CutPrefix(line, "Port "); ok && strings.HasSuffix(n, ":") {
			num, _ := strconv.Atoi(strings.TrimSuffix(n, ":"))
			nic.Ports = append(nic.Ports, topostate.IBPort{Port: num})
			port = &nic.Ports[len(nic.Ports)-1]
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		switch {
		case !ok:
		case k == "CA type":
			nic.HCAType = v
		case port == nil:
		case k == "State":
			s, known := states[v]
			if !known {
				t.Fatalf("ibstat state %q", v)
			}
			port.StateID, port.State = s.id, s.name
		case k == "Physical state":
			id, known := phys[v]
			if !known {
				t.Fatalf("ibstat physical state %q", v)
			}
			port.PhysStateID, port.PhysState = id, v
		case k == "Rate":
			port.RateGbps, _ = strconv.ParseFloat(v, 64)
		case k == "Link layer":
			port.LinkLayer = v
		}
	}
	return &state.Node{Topology: tp}
}

// What ib.ports says for each port state the real ibstat captures show.
func TestCorpusIBPorts(t *testing.T) {
	node := func(f string) *state.Node { return ibstatNode(t, corpusFile(t, "ib/"+f)) }
	withNetdev := func(n *state.Node, dev, netdev string) *state.Node {
		for i := range n.Topology.NICs {
			if n.Topology.NICs[i].Name == dev {
				n.Topology.NICs[i].NetDevs = []string{netdev}
			}
		}
		return n
	}
	runCases(t, checkIBPorts, []checkCase{
		// InfiniBand, no peer: the PHY keeps training.
		{name: "archwiki port 2 Down/Polling", node: node("archwiki_mlx4_active_and_polling_ibstat.txt"), status: Fail,
			summary: "mlx4_0 port 2 (InfiniBand) is DOWN/Polling", remedy: "check the cable, transceiver and switch port (ibstat mlx4_0)"},
		{name: "archwiki port 2 ignored", node: node("archwiki_mlx4_active_and_polling_ibstat.txt"), cfg: func(c *Config) { c.Topo.IBIgnore = []string{"mlx4_0:2"} },
			status: Pass, summary: "1 RDMA ports ACTIVE/LinkUp (1× 20 Gb/s InfiniBand)"},
		// One CA, port 1 InfiniBand Down/Polling, port 2 Ethernet
		// Down/Disabled: the Ethernet port is a RoCE port, whose state is its
		// network interface's (RoCE drivers report ACTIVE/LinkUp only while
		// the netdev runs with carrier, DOWN/Disabled otherwise), so the
		// remedy names the interface, not a subnet manager or only a cable.
		{name: "lore mlx4 IB Polling and Ethernet Disabled", node: node("lore-linux-rdma_mlx4_ib-polling_eth-disabled_ibstat.txt"), status: Fail,
			summary: "mlx4_0 port 1 (InfiniBand) is DOWN/Polling; mlx4_0 port 2 (Ethernet) is DOWN/Disabled: a RoCE port is up only while its network interface is up with carrier",
			remedy:  "ip link show"},
		{name: "mooncake2039 Ethernet ports Disabled, netdev named", node: withNetdev(node("mooncake2039_ibstat_12hca.txt"), "mlx5_1", "enp27s0f0np0"), status: Fail,
			summary: "mlx5_1 port 1 (Ethernet) is DOWN/Disabled", remedy: "ip link show enp27s0f0np0"},
		// SR-IOV VF in a pod: physical link up, logical state DOWN, and a
		// subnet manager exists (SM lid 1). That is not "no subnet manager".
		{name: "network-operator249 VF Down with LinkUp", node: node("network-operator249_sriov-vf_down-linkup_ibstat.txt"), status: Fail,
			summary: "mlx5_7 port 1 (InfiniBand) is DOWN with the physical link up", remedy: "SR-IOV virtual function"},
		// RoCE ConnectX-7 ports run; the partial block of mlx5_10 lost its
		// link layer, and the summary says it is not known.
		{name: "mooncake1999 RoCE active, CX-6 Dx disabled", node: node("mooncake1999_roce-cx7_active_cx6dx-disabled_ibstat_PARTIAL.txt"), status: Fail,
			summary: "mlx5_10 port 1 (link layer unknown) is DOWN/Disabled"},
		{name: "mooncake1999 CX-6 Dx ignored", node: node("mooncake1999_roce-cx7_active_cx6dx-disabled_ibstat_PARTIAL.txt"), cfg: func(c *Config) { c.Topo.IBIgnore = []string{"mlx5_10"} },
			status: Pass, summary: "2 RDMA ports ACTIVE/LinkUp (2× 200 Gb/s Ethernet)"},
	})
	runCases(t, checkIBPorts, []checkCase{
		// topo5. A ConnectX-7 InfiniBand port with no peer (Polling, Rate 10).
		{name: "gpud482 CX-7 Down/Polling", node: node("gpud482_cx7-ndr_down-polling_rate10_ibstat.txt"), status: Fail,
			summary: "mlx5_10 port 1 (InfiniBand) is DOWN/Polling", remedy: "check the cable, transceiver and switch port (ibstat mlx5_10)"},
		// An HDR port beside an IB port whose PHY is Disabled, not Polling.
		{name: "nccltests128 IB Down/Disabled", node: node("nccltests128_cx6-hdr-active_cx6-ib-disabled_cx4lx_ibstat_PARTIAL.txt"), status: Fail,
			summary: "mlx5_1 port 1 (InfiniBand) is DOWN/Disabled", remedy: "ignore a port left down on purpose with topo.ib_ignore"},
		// The two ports of one ConnectX-6 Dx, RoCE, both down.
		{name: "sglang6823 RoCE pair Disabled", node: node("sglang6823_h20_cx6dx-roce-disabled_ibstat_PARTIAL.txt"), status: Fail,
			summary: "mlx5_0 port 1 (Ethernet) is DOWN/Disabled: a RoCE port is up only while its network interface is up with carrier; mlx5_1 port 1 (Ethernet) is DOWN/Disabled",
			remedy:  "rdma link show mlx5_0 names it"},
		{name: "deepep303 NDR 400 active", node: node("deepep303_h20_cx7-ndr400_active_ibstat_PARTIAL.txt"), status: Pass,
			summary: "2 RDMA ports ACTIVE/LinkUp (2× 400 Gb/s InfiniBand)"},
	})
	// ibv_devinfo of an InfiniBand port never activated (sm_lid 0, lid
	// 65535): no physical state to name, and no interface.
	runCases(t, checkIBPorts, []checkCase{{name: "deepep60 IB PORT_DOWN", node: ibvDevinfoNode(t, corpusFile(t, "ib/deepep60_ibv-devinfo_ndr-port-down_PARTIAL.txt")), status: Fail,
		summary: "mlx5_0 port 1 (InfiniBand) is DOWN (physical state not read)", remedy: "check the cable, transceiver and switch port (ibstat mlx5_0)"}})
	// ibdev2netdev + ibv_devinfo: the RoCE port mlx5_3 is PORT_DOWN where
	// its interface enp23s0f1 is Down; ibv_devinfo gives no physical state,
	// and the message does not invent one.
	ucx := ibvDevinfoNode(t, corpusFile(t, "ib/ucx2534_ibdev2netdev_ibv-devinfo_roce-down-with-netdev_PARTIAL.txt"))
	runCases(t, checkIBPorts, []checkCase{{name: "ucx2534 RoCE port down with its netdev", node: ucx, status: Fail,
		summary: "mlx5_3 port 1 (Ethernet) is DOWN (physical state not read): a RoCE port is up only while its network interface is up with carrier",
		remedy:  "ip link show enp23s0f1"}})
	// A physical IB port in INIT has no subnet manager's attention: that
	// remedy stays for INIT, and is not given to the VF above.
	r := checkIBPorts(node("network-operator249_sriov-vf_down-linkup_ibstat.txt"), DefaultConfig())
	if strings.Contains(r.Remedy, "no subnet manager activated it") {
		t.Errorf("VF DOWN/LinkUp with SM lid 1: remedy %q blames a missing subnet manager", r.Remedy)
	}
}

// rebuilt lays out PCIe as a capture implies and reads it back through
// topo.Collect, as on the node: each "host" is a root complex on a NUMA
// node, each group below it one PCIe switch (or one root port when it holds
// a single device). GPUs are named by index, NICs by RDMA name; NVML would
// report 18 NVSwitch links per GPU when nvswitch is set.
type rebuiltGroup struct {
	gpus []int
	nics []string // RDMA device names, one PCI function each
}

func rebuiltNode(t *testing.T, cpus map[int]string, hosts map[int][][]rebuiltGroup, nvswitch bool) *state.Node {
	t.Helper()
	m := sysfake.New()
	m.NUMA(cpus)
	var hints []topo.GPUHint
	bus := 0x10
	var numas []int
	for n := range hosts {
		numas = append(numas, n)
	}
	sort.Ints(numas)
	add := func(d sysfake.PCI) {
		if d.Class == 0 {
			d.Class = 0x060400
		}
		if err := m.AddPCI(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, numa := range numas {
		for _, groups := range hosts[numa] {
			host := fmt.Sprintf("pci0000:%02x", bus)
			for gi, g := range groups {
				rp := fmt.Sprintf("0000:%02x:%02x.0", bus, gi+1)
				add(sysfake.PCI{BusID: rp, Parent: host, NUMA: numa})
				parent, below := rp, bus+gi*8+1
				if len(g.gpus)+len(g.nics) > 1 { // a switch: upstream port, one downstream port per device
					up := fmt.Sprintf("0000:%02x:00.0", below)
					add(sysfake.PCI{BusID: up, Parent: rp, NUMA: numa})
					parent, below = up, below+1
				}
				slot := 0
				place := func(d sysfake.PCI) string {
					at := parent
					if parent != rp {
						at = fmt.Sprintf("0000:%02x:%02x.0", below, slot)
						add(sysfake.PCI{BusID: at, Parent: parent, NUMA: numa})
					}
					d.BusID, d.Parent, d.NUMA = fmt.Sprintf("0000:%02x:00.0", below+1+slot), at, numa
					slot++
					add(d)
					return d.BusID
				}
				for _, gpu := range g.gpus {
					id := place(sysfake.PCI{Vendor: 0x10de, Device: 0x2329, Class: 0x030200, Driver: "nvidia"})
					h := topo.GPUHint{Index: gpu, BusID: id}
					if nvswitch {
						h.SwitchLinks = 18
					}
					hints = append(hints, h)
				}
				for _, nic := range g.nics {
					id := place(sysfake.PCI{Vendor: 0x15b3, Device: 0x1021, Class: 0x020700})
					if err := m.AddIB(sysfake.IB{Name: nic, BusID: id, FWVer: "28.39.1002", HCAType: "MT4129",
						Ports: []sysfake.IBPort{{State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "400 Gb/sec (4X NDR)", LinkLayer: "InfiniBand"}}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			bus += 0x10
		}
	}
	sort.Slice(hints, func(i, j int) bool { return hints[i].Index < hints[j].Index })
	fsys, err := m.Tree.FS()
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Collect(context.Background(), topo.Options{FS: fsys, GPUs: hints, NVLinkKnown: true, Virt: "none"})
	if err != nil {
		t.Fatal(err)
	}
	return &state.Node{Topology: tp}
}

// compareWithCapture checks every GPU-GPU and GPU-NIC cell the capture has
// against what gpuprobe derived from the rebuilt sysfs tree (NICk is
// mlx5_k: these partial captures have no NIC legend).
func compareWithCapture(t *testing.T, capture, rebuilt *state.Node) {
	t.Helper()
	got := map[[2]string]string{}
	for _, p := range rebuilt.Topology.Paths {
		got[[2]string{p.A, p.B}], got[[2]string{p.B, p.A}] = p.Type, p.Type
	}
	n := 0
	for _, p := range capture.Topology.Paths {
		b := p.B
		if k, ok := strings.CutPrefix(b, "NIC"); ok {
			b = "mlx5_" + k
		}
		if g := got[[2]string{p.A, b}]; g != p.Type {
			t.Errorf("%s-%s: nvidia-smi %s, gpuprobe %s", p.A, b, p.Type, g)
		}
		n++
	}
	if n < 14 {
		t.Errorf("only %d cells compared", n)
	}
}

// The two nodes where a GPU and its NIC are far apart, rebuilt in sysfs:
// gpuprobe derives nvidia-smi's cells, and the check's verdict on the
// collected topology is the verdict on the capture.
func TestCorpusRebuiltFarNICs(t *testing.T) {
	// warpem106: 4x L40S, each on its own root port; both NIC functions
	// (one dual-port card) on socket 1's last root complex.
	warpem := rebuiltNode(t, map[int]string{0: "0-95,192-287", 1: "96-191,288-383"}, map[int][][]rebuiltGroup{
		0: {{{gpus: []int{0}}}, {{gpus: []int{1}}}},
		1: {{{gpus: []int{2}}}, {{gpus: []int{3}}}, {{nics: []string{"mlx5_0", "mlx5_1"}}}},
	}, false)
	capW := captureNode(t, corpusFile(t, "topo-m/warpem106_4xL40S_nics-on-socket1_topo-m.txt"))
	compareWithCapture(t, capW, warpem)
	for _, n := range []*state.Node{capW, warpem} {
		if r := checkGPUNICAffinity(n, DefaultConfig()); r.Status != Warn || !strings.Contains(r.Summary, "GPUs 0,1: nearest NIC is mlx5_0 at SYS") || !strings.Contains(r.Summary, "GPUs 2,3: nearest NIC is mlx5_0 at NODE") {
			t.Errorf("warpem106: %s %q", r.Status, r.Summary)
		}
	}
	// deepep137: 8x H20 on NVSwitch; GPU0+NIC0, GPU2+NIC1, GPU4+NIC2 and
	// GPU6+NIC4 share a switch, the odd GPUs sit alone, NIC3 alone on
	// socket 1.
	deepep := rebuiltNode(t, map[int]string{0: "0-27,56-83", 1: "28-55,84-111"}, map[int][][]rebuiltGroup{
		0: {{{gpus: []int{0}, nics: []string{"mlx5_0"}}}, {{gpus: []int{1}}}, {{gpus: []int{2}, nics: []string{"mlx5_1"}}}, {{gpus: []int{3}}}},
		1: {{{gpus: []int{4}, nics: []string{"mlx5_2"}}}, {{gpus: []int{5}}}, {{nics: []string{"mlx5_3"}}}, {{gpus: []int{6}, nics: []string{"mlx5_4"}}}, {{gpus: []int{7}}}},
	}, true)
	capD := captureNode(t, corpusFile(t, "topo-m/deepep137_8xH20_5nic_gpus-without-near-nic_topo-m_PARTIAL.txt"))
	compareWithCapture(t, capD, deepep)
	r := checkGPUNICAffinity(deepep, DefaultConfig())
	if r.Status != Pass || !strings.Contains(r.Summary, "each of 8 GPUs has a NIC within PXB, GPUs 1,3,5,7 through an NVLink peer") ||
		!strings.Contains(r.Summary, "GPU1 via GPU0 to mlx5_0") || !strings.Contains(r.Summary, "GPU7 via GPU4 to mlx5_2") {
		t.Errorf("deepep137 rebuilt: %s %q", r.Status, r.Summary)
	}
}

// topo.numa on the captures whose NUMA Affinity column places the GPUs on
// more than two nodes: sub-NUMA clustering (sglang#13973) and AMD NPS4,
// where the GPU numbering does not follow the NUMA ids (nccl#2157).
func TestCorpusTopoNUMA(t *testing.T) {
	// A capture gives no NIC a NUMA node: the GPUs alone are judged.
	node := func(f string) *state.Node {
		n := captureNode(t, corpusFile(t, "topo-m/"+f))
		n.Topology.NICs = nil
		return n
	}
	runCases(t, checkTopoNUMA, []checkCase{
		{name: "sglang13973 SNC", node: node("sglang13973_8xH100_9nic_snc-4numa_topo-m_PARTIAL.txt"), status: Pass,
			summary: "GPU0,GPU1,GPU2 on node 0; GPU3 on node 1; GPU4,GPU5 on node 2"},
		{name: "nccl2157 NPS4", node: node("nccl2157_8xA100_18nic_epyc-nps4_topo-m_PARTIAL.txt"), status: Pass,
			summary: "GPU2,GPU3 on node 1; GPU0,GPU1 on node 3"},
		{name: "unsloth3872 B200, 4 nodes", node: node("unsloth3872_8xB200_9nic_4numa_topo-m_PARTIAL.txt"), status: Pass,
			summary: "GPU0,GPU1 on node 0; GPU2,GPU3 on node 1; GPU4 on node 2"},
		{name: "vllm16997 two sockets", node: node("vllm16997_8gpu_26nic_tabs_topo-m_PARTIAL.txt"), status: Pass,
			summary: "GPU0,GPU1,GPU2,GPU3 on node 0; GPU4,GPU5 on node 1"},
	})
}

// ibvDevinfoNode reads `ibdev2netdev` and `ibv_devinfo` (no -v: no
// physical state) into RDMA devices with their network interfaces.
func ibvDevinfoNode(t *testing.T, text string) *state.Node {
	t.Helper()
	netdev := map[string]string{}
	tp := &topostate.Topology{Virtualization: topostate.Virtualization{Kind: "none"}}
	names := map[int]string{1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE"}
	link := regexp.MustCompile(`^(\S+) port \d+ ==> (\S+) \((Up|Down)\)$`)
	st := regexp.MustCompile(`^PORT_\w+ \((\d)\)$`)
	for _, raw := range strings.Split(text, "\n") {
		if strings.HasPrefix(raw, "#") {
			continue
		}
		line := strings.TrimSpace(raw)
		if m := link.FindStringSubmatch(line); m != nil {
			netdev[m[1]] = m[2]
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch {
		case k == "hca_id":
			tp.NICs = append(tp.NICs, topostate.NIC{Index: len(tp.NICs), Name: v, NetDevs: []string{netdev[v]},
				PCIFunction: topostate.PCIFunction{BusID: fmt.Sprintf("0000:%02x:00.0", len(tp.NICs)+1)}})
		case len(tp.NICs) == 0:
		case k == "port":
			n, _ := strconv.Atoi(v)
			nic := &tp.NICs[len(tp.NICs)-1]
			nic.Ports = append(nic.Ports, topostate.IBPort{Port: n})
		case k == "state":
			m := st.FindStringSubmatch(v)
			if m == nil {
				t.Fatalf("ibv_devinfo state %q", v)
			}
			nic := &tp.NICs[len(tp.NICs)-1]
			id, _ := strconv.Atoi(m[1])
			nic.Ports[len(nic.Ports)-1].StateID, nic.Ports[len(nic.Ports)-1].State = id, names[id]
		case k == "link_layer":
			nic := &tp.NICs[len(tp.NICs)-1]
			nic.Ports[len(nic.Ports)-1].LinkLayer = v
		}
	}
	return &state.Node{Topology: tp}
}

// withGPUNames gives the capture's GPUs the NVML name the capture's
// surrounding output reports for them (sglang's check_env: "GPU 0,1,2,3:
// NVIDIA GB200").
func withGPUNames(n *state.Node, name string) *state.Node {
	n.NVML = &state.NVML{Available: true, DeviceCount: len(n.Topology.GPUs)}
	for _, g := range n.Topology.GPUs {
		n.NVML.GPUs = append(n.NVML.GPUs, state.GPU{Index: g.Index, Name: name, PCIBusID: g.BusID})
	}
	return n
}

// The GB200 capture once more: a C2C GPU whose nearest NIC is known to be on
// the other CPU's NUMA node is still unknown (NCCL 2.28 relays through the
// NVLink peer on that CPU over C2C: PXN_C2C); without NVML's name nothing
// tells the GPU is C2C, and the PCIe class decides as before.
func TestCorpusGB200C2C(t *testing.T) {
	const f = "topo-m/sglang11208_4xGB200_6nic_all-sys_c2c_topo-m_PARTIAL.txt"
	const noGDR = "NCCL will not use GPUDirect RDMA for this GPU by default"
	far := withGPUNames(captureNode(t, corpusFile(t, f)), "NVIDIA GB200")
	for i := range far.Topology.GPUs {
		far.Topology.GPUs[i].NUMANode = 0
	}
	for i := range far.Topology.NICs {
		far.Topology.NICs[i].NUMANode = 1
	}
	if r := checkGPUNICAffinity(far, DefaultConfig()); r.Status != Warn || strings.Contains(r.Summary, noGDR) || !strings.Contains(r.Summary, "unknown whether NCCL uses GPUDirect RDMA") {
		t.Errorf("GB200, NICs on the other CPU: %s %q", r.Status, r.Summary)
	}
	if r := checkGPUNICAffinity(captureNode(t, corpusFile(t, f)), DefaultConfig()); r.Status != Warn || !strings.Contains(r.Summary, noGDR) {
		t.Errorf("GB200 without NVML names: %s %q", r.Status, r.Summary)
	}
	for name, want := range map[string]bool{"NVIDIA GB200": true, "NVIDIA GH200 480GB": true, "NVIDIA GB300": true, "NVIDIA B200": false, "NVIDIA H200": false, "": false} {
		if c2cGPU(name) != want {
			t.Errorf("c2cGPU(%q) = %v", name, !want)
		}
	}
}
