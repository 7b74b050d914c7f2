package topo

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/internal/topocapture"
	sysfake "github.com/gpuprobe/gpuprobe/sim/sysfs"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// capAffinity is what an `nvidia-smi topo -m` GPU row says after its cells:
// the CPU Affinity and, when the header has the column, the NUMA Affinity.
type capAffinity struct{ cpu, numa string }

// topoMAffinity reads the affinity columns of a capture's GPU rows. Older
// drivers print no NUMA Affinity column (numa is then ""); newer ones add
// "GPU NUMA ID" after it, which is not read.
func topoMAffinity(t *testing.T, text string) map[string]capAffinity {
	t.Helper()
	out := map[string]capAffinity{}
	for name, r := range topocapture.Read(text).Rows {
		if strings.HasPrefix(name, "GPU") && r.CPU != "" {
			out[name] = capAffinity{cpu: r.CPU, numa: r.NUMA}
		}
	}
	return out
}

// nearestNIC is what topo.gpu_nic_affinity reads from a matrix: for each
// GPU row, the closest NIC column ("mlx5_0 PIX"), the first one on a tie.
func nearestNIC(cells map[[2]string]string, names []string) map[string]string {
	out := map[string]string{}
	best := map[string]int{}
	for _, g := range names {
		if !strings.HasPrefix(g, "GPU") {
			continue
		}
		for _, n := range names {
			if strings.HasPrefix(n, "GPU") {
				continue
			}
			c, ok := cells[[2]string{g, n}]
			if !ok {
				continue // a row the capture lost
			}
			if r, seen := best[g]; !seen || topostate.PathRank(c) < r {
				best[g], out[g] = topostate.PathRank(c), n+" "+c
			}
		}
	}
	return out
}

// The real captures added with the topology corpus, read as the tests read
// every capture: devices (NICk through the NIC legend where the capture has
// one), cells, affinity columns, and each GPU's nearest NIC. Partial
// captures (a truncated issue excerpt) yield only their complete rows.
func TestCorpusTopoMCaptures(t *testing.T) {
	for _, c := range []struct {
		file    string
		cols    int               // device columns in the header
		gpuRows int               // complete GPU rows
		cells   map[string]string // "A-B" -> cell
		aff     map[string]capAffinity
		nearest map[string]string // GPU -> "NIC TYPE"
	}{
		{file: "warpem106_4xL40S_nics-on-socket1_topo-m.txt", cols: 6, gpuRows: 4,
			cells: map[string]string{"GPU0-GPU1": "NODE", "GPU0-GPU2": "SYS", "GPU0-mlx5_0": "SYS", "GPU2-mlx5_1": "NODE", "mlx5_0-mlx5_1": "PIX", "mlx5_1-GPU3": "NODE"},
			aff:   map[string]capAffinity{"GPU0": {"0-95,192-287", "0"}, "GPU3": {"96-191,288-383", "1"}},
			// No GPU has a NIC behind its switch; GPU0/GPU1 only across sockets.
			nearest: map[string]string{"GPU0": "mlx5_0 SYS", "GPU1": "mlx5_0 SYS", "GPU2": "mlx5_0 NODE", "GPU3": "mlx5_0 NODE"}},
		{file: "sglang13973_8xH100_9nic_snc-4numa_topo-m_PARTIAL.txt", cols: 17, gpuRows: 6,
			cells:   map[string]string{"GPU0-GPU7": "NV18", "GPU3-NIC4": "PIX", "GPU3-NIC3": "NODE", "GPU4-NIC8": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"0-23,96-119", "0"}, "GPU3": {"24-47,120-143", "1"}, "GPU5": {"48-71,144-167", "2"}},
			nearest: map[string]string{"GPU0": "NIC0 PIX", "GPU1": "NIC1 PIX", "GPU2": "NIC2 PIX", "GPU3": "NIC4 PIX", "GPU4": "NIC5 PIX", "GPU5": "NIC6 PIX"}},
		{file: "daskcuda1358_2xA100_nv12_slurm-step_numa3_topo-m_PARTIAL.txt", cols: 12, gpuRows: 2,
			cells:   map[string]string{"GPU0-GPU1": "NV12", "GPU0-NIC0": "PXB", "GPU1-NIC9": "SYS", "NIC0-NIC1": "PXB", "NIC2-NIC3": "PXB", "NIC0-NIC2": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"48-63,176-191", "3"}, "GPU1": {"48-63,176-191", "3"}},
			nearest: map[string]string{"GPU0": "NIC0 PXB", "GPU1": "NIC0 PXB"}},
		{file: "nccl1453_8xH100_9nic_nic0-sys-to-all_topo-m_PARTIAL.txt", cols: 17, gpuRows: 8,
			cells: map[string]string{"GPU0-NIC8": "PIX", "GPU7-NIC1": "PIX", "GPU0-NIC0": "SYS", "NIC0-NIC5": "SYS", "NIC0-NIC1": "SYS", "NIC1-NIC2": "NODE", "NIC5-GPU3": "PIX"},
			aff:   map[string]capAffinity{"GPU0": {"0-79", "0"}, "GPU7": {"80-159", "1"}},
			nearest: map[string]string{"GPU0": "NIC8 PIX", "GPU1": "NIC7 PIX", "GPU2": "NIC6 PIX", "GPU3": "NIC5 PIX",
				"GPU4": "NIC4 PIX", "GPU5": "NIC3 PIX", "GPU6": "NIC2 PIX", "GPU7": "NIC1 PIX"}},
		{file: "deepep137_8xH20_5nic_gpus-without-near-nic_topo-m_PARTIAL.txt", cols: 13, gpuRows: 7,
			cells: map[string]string{"GPU0-NIC0": "PIX", "GPU1-NIC0": "NODE", "GPU4-NIC2": "PIX", "GPU6-NIC4": "PIX", "GPU6-NIC0": "SYS"},
			aff:   map[string]capAffinity{"GPU0": {"0-27,56-83", "0"}, "GPU6": {"28-55,84-111", "1"}},
			nearest: map[string]string{"GPU0": "NIC0 PIX", "GPU1": "NIC0 NODE", "GPU2": "NIC1 PIX", "GPU3": "NIC0 NODE",
				"GPU4": "NIC2 PIX", "GPU5": "NIC2 NODE", "GPU6": "NIC4 PIX"}},
		// -mp: the PCIe-only matrix, so GPU pairs read PHB/SYS whatever NVLink does.
		{file: "deepep55_8gpu_9nic_container_phb_topo-mp_PARTIAL.txt", cols: 17, gpuRows: 6,
			cells:   map[string]string{"GPU0-GPU1": "PHB", "GPU0-GPU4": "SYS", "GPU0-NIC0": "NODE", "GPU0-NIC1": "PHB", "GPU4-NIC5": "PHB", "GPU5-NIC0": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"0-87", "0"}, "GPU5": {"88-175", "1"}},
			nearest: map[string]string{"GPU0": "NIC1 PHB", "GPU3": "NIC1 PHB", "GPU4": "NIC5 PHB", "GPU5": "NIC5 PHB"}},
		{file: "deepep128_8gpu_sys-pairs_10nic_topo-m_PARTIAL.txt", cols: 18, gpuRows: 6,
			cells:   map[string]string{"GPU0-GPU1": "SYS", "GPU0-NIC0": "PIX", "GPU5-NIC5": "PIX", "GPU5-NIC0": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"0-55,112-167", "0"}, "GPU4": {"56-111,168-223", "1"}},
			nearest: map[string]string{"GPU0": "NIC0 PIX", "GPU3": "NIC3 PIX", "GPU5": "NIC5 PIX"}},
		// The old layout: the RDMA device is its own column name, and there
		// is no NUMA Affinity column.
		{file: "k8s53497_8gpu_mlx4_0_old-format_topo-m_PARTIAL.txt", cols: 9, gpuRows: 5,
			cells:   map[string]string{"GPU0-GPU1": "PIX", "GPU0-GPU2": "PHB", "GPU0-GPU4": "SYS", "GPU0-mlx4_0": "PHB", "GPU4-mlx4_0": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"0-9,20-29", ""}, "GPU4": {"10-19,30-39", ""}},
			nearest: map[string]string{"GPU0": "mlx4_0 PHB", "GPU3": "mlx4_0 PHB", "GPU4": "mlx4_0 SYS"}},
		{file: "nccl2150_8xH100_8nic_pxb_epyc-nps1_topo-m_PARTIAL.txt", cols: 16, gpuRows: 6,
			cells:   map[string]string{"GPU0-NIC0": "PXB", "GPU0-NIC1": "NODE", "GPU0-NIC4": "SYS", "GPU5-NIC5": "PXB"},
			aff:     map[string]capAffinity{"GPU0": {"0-63,128-191", "0"}, "GPU4": {"64-127,192-255", "1"}},
			nearest: map[string]string{"GPU0": "NIC0 PXB", "GPU3": "NIC3 PXB", "GPU5": "NIC5 PXB"}},
		{file: "deepep223_8xH20_10nic_container_topo-m_PARTIAL.txt", cols: 18, gpuRows: 5,
			cells:   map[string]string{"GPU0-NIC0": "NODE", "GPU0-NIC2": "PIX", "GPU3-NIC5": "PIX", "GPU4-NIC6": "PIX", "GPU4-NIC0": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"0-47,96-143", "0"}, "GPU4": {"48-95,144-191", "1"}},
			nearest: map[string]string{"GPU0": "NIC2 PIX", "GPU4": "NIC6 PIX"}},
		{file: "nccl933_8xA800_nv8_9nic_topo-m_PARTIAL.txt", cols: 17, gpuRows: 7,
			cells:   map[string]string{"GPU0-GPU1": "NV8", "GPU0-NIC2": "PIX", "GPU0-NIC0": "NODE", "GPU4-NIC1": "PIX", "GPU6-NIC5": "PIX"},
			aff:     map[string]capAffinity{"GPU0": {"0-47,96-143", "0"}, "GPU6": {"48-95,144-191", "1"}},
			nearest: map[string]string{"GPU0": "NIC2 PIX", "GPU3": "NIC8 PIX", "GPU4": "NIC1 PIX"}},
		// nvidia-smi glued two header names ("NIC11NIC12"): the header still
		// has 21 device columns, as the rows have 21 cells.
		{file: "vllm31594_8xB200_13nic_glued-header_topo-m_PARTIAL.txt", cols: 21, gpuRows: 4,
			cells:   map[string]string{"GPU0-NIC11": "PIX", "GPU0-NIC12": "NODE", "GPU1-NIC10": "PIX", "GPU3-NIC8": "PIX", "GPU3-NIC12": "NODE", "GPU0-NIC0": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"0-15", "0"}, "GPU3": {"0-15", "0"}},
			nearest: map[string]string{"GPU0": "NIC11 PIX", "GPU1": "NIC10 PIX", "GPU2": "NIC9 PIX", "GPU3": "NIC8 PIX"}},
		{file: "unsloth3872_8xB200_9nic_4numa_topo-m_PARTIAL.txt", cols: 17, gpuRows: 5,
			cells:   map[string]string{"GPU0-NIC0": "PIX", "GPU0-NIC8": "NODE", "GPU2-NIC8": "SYS", "GPU3-NIC2": "NODE"},
			aff:     map[string]capAffinity{"GPU0": {"0-27", "0"}, "GPU2": {"28-55", "1"}, "GPU4": {"56-83", "2"}},
			nearest: map[string]string{"GPU0": "NIC0 PIX", "GPU3": "NIC3 PIX", "GPU4": "NIC4 PIX"}},
		// NPS4: GPU NUMA ids 3 and 1, and the padding slips past NIC11.
		{file: "nccl2157_8xA100_18nic_epyc-nps4_topo-m_PARTIAL.txt", cols: 26, gpuRows: 4,
			cells:   map[string]string{"GPU0-NIC5": "PXB", "GPU0-NIC8": "PXB", "GPU0-NIC13": "SYS", "GPU2-NIC1": "PXB", "GPU2-NIC5": "SYS", "GPU3-NIC17": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"48-63,176-191", "3"}, "GPU3": {"16-31,144-159", "1"}},
			nearest: map[string]string{"GPU0": "NIC5 PXB", "GPU2": "NIC1 PXB"}},
		// topo5: the DGX-1 hybrid cube mesh, NV1/NV2 or SYS between GPUs,
		// both NICs behind GPU2/GPU3's switch; GPU7's affinity is cut.
		{file: "nccltests29_8xV100_hybrid-cube-mesh_2nic_topo-m_PARTIAL.txt", cols: 10, gpuRows: 8,
			cells:   map[string]string{"GPU0-GPU3": "NV1", "GPU2-GPU6": "NV2", "GPU4-GPU2": "SYS", "GPU2-mlx5_0": "PIX", "GPU3-mlx5_1": "PIX", "GPU7-mlx5_1": "SYS", "GPU7-GPU3": "NV2"},
			aff:     map[string]capAffinity{"GPU0": {"0-23,48-71", ""}, "GPU7": {"24-47,", ""}},
			nearest: map[string]string{"GPU0": "mlx5_0 NODE", "GPU2": "mlx5_0 PIX", "GPU3": "mlx5_0 PIX", "GPU4": "mlx5_0 SYS", "GPU7": "mlx5_0 SYS"}},
		// DGX-2: 16 GPUs on NVSwitch (NV6), ten RDMA columns by device name.
		{file: "nccltests78_dgx2_16xV100_10nic_topo-m_PARTIAL.txt", cols: 26, gpuRows: 5,
			cells:   map[string]string{"GPU0-GPU15": "NV6", "GPU0-mlx5_1": "PXB", "GPU2-mlx5_1": "PIX", "GPU4-mlx5_2": "PIX", "GPU0-mlx5_9": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"0-23,48-71", ""}, "GPU4": {"0-23,4", ""}},
			nearest: map[string]string{"GPU0": "mlx5_0 PIX", "GPU2": "mlx5_1 PIX", "GPU4": "mlx5_2 PIX"}},
		{file: "nccl1737_8xH100_6nic_gpu1-node-only_topo-m_PARTIAL.txt", cols: 14, gpuRows: 3,
			cells:   map[string]string{"GPU0-NIC0": "PIX", "GPU1-NIC0": "NODE", "GPU2-NIC1": "PIX", "GPU0-NIC4": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"0-31,64-95", "0"}, "GPU2": {"0-31,64-95", "0"}},
			nearest: map[string]string{"GPU0": "NIC0 PIX", "GPU1": "NIC0 NODE", "GPU2": "NIC1 PIX"}},
		// -mp: GPU pairs NODE/SYS; the header pads NIC11 with one more space.
		{file: "deepep60_8gpu_14nic_pix-per-gpu_topo-mp_PARTIAL.txt", cols: 22, gpuRows: 4,
			cells:   map[string]string{"GPU0-GPU1": "NODE", "GPU0-GPU4": "SYS", "GPU3-NIC7": "PIX", "GPU3-NIC3": "NODE", "GPU0-NIC12": "SYS", "GPU0-NIC13": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"0-47,96-143", "0"}},
			nearest: map[string]string{"GPU0": "NIC0 PIX", "GPU1": "NIC1 PIX", "GPU2": "NIC2 PIX", "GPU3": "NIC7 PIX"}},
		// GB200: NVLink-C2C is no PCIe class, every GPU-NIC cell is SYS, and
		// the NUMA Affinity column is a list.
		{file: "sglang11208_4xGB200_6nic_all-sys_c2c_topo-m_PARTIAL.txt", cols: 10, gpuRows: 3,
			cells:   map[string]string{"GPU0-GPU3": "NV18", "GPU0-NIC0": "SYS", "GPU2-NIC5": "SYS"},
			aff:     map[string]capAffinity{"GPU0": {"0-71", "0,3-9,11-17"}, "GPU2": {"72-143", "1,19-25,27-33"}},
			nearest: map[string]string{"GPU0": "NIC0 SYS", "GPU2": "NIC0 SYS"}},
		{file: "deepep145_8gpu_18nic_pxb-groups_topo-m_PARTIAL.txt", cols: 26, gpuRows: 4,
			cells:   map[string]string{"GPU0-NIC0": "PXB", "GPU0-NIC4": "NODE", "GPU2-NIC6": "PXB", "GPU3-NIC9": "PXB", "GPU0-NIC17": "SYS"},
			aff:     map[string]capAffinity{"GPU3": {"0-55,112-167", "0"}},
			nearest: map[string]string{"GPU0": "NIC0 PXB", "GPU2": "NIC6 PXB"}},
		// Tab-separated, 26 NICs; GPU1 has a PHB NIC beside its PIX one.
		{file: "vllm16997_8gpu_26nic_tabs_topo-m_PARTIAL.txt", cols: 34, gpuRows: 6,
			cells: map[string]string{"GPU0-NIC18": "PIX", "GPU1-NIC20": "PHB", "GPU1-NIC21": "PIX", "GPU2-NIC20": "PIX", "GPU4-NIC24": "PIX", "GPU4-NIC0": "NODE", "GPU0-NIC0": "SYS"},
			aff:   map[string]capAffinity{"GPU0": {"0-95,192-287", "0"}, "GPU4": {"96-191,288-383", "1"}},
			nearest: map[string]string{"GPU0": "NIC18 PIX", "GPU1": "NIC21 PIX", "GPU2": "NIC20 PIX", "GPU3": "NIC19 PIX",
				"GPU4": "NIC24 PIX", "GPU5": "NIC23 PIX"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			text := readTestdata(t, "topo-m/"+c.file)
			cells, names := topoM(t, text)
			if len(names) != c.cols {
				t.Errorf("%d device columns %v, want %d", len(names), names, c.cols)
			}
			rows := map[string]bool{}
			for k := range cells {
				if strings.HasPrefix(k[0], "GPU") {
					rows[k[0]] = true
				}
			}
			if len(rows) != c.gpuRows {
				t.Errorf("%d complete GPU rows, want %d", len(rows), c.gpuRows)
			}
			for pair, want := range c.cells {
				a, b, _ := strings.Cut(pair, "-")
				if got := cells[[2]string{a, b}]; got != want {
					t.Errorf("%s = %q, want %q", pair, got, want)
				}
			}
			aff := topoMAffinity(t, text)
			if len(aff) != c.gpuRows {
				t.Errorf("affinity for %d GPU rows, want %d", len(aff), c.gpuRows)
			}
			for g, want := range c.aff {
				if aff[g] != want {
					t.Errorf("%s affinity %+v, want %+v", g, aff[g], want)
				}
			}
			near := nearestNIC(cells, names)
			for g, want := range c.nearest {
				if near[g] != want {
					t.Errorf("%s nearest NIC %q, want %q", g, near[g], want)
				}
			}
		})
	}
}

// ibstatPortsAll is ibstatPorts for the corpus's multi-port CAs, kept apart
// so that the Dell fixture's single-port reading stays as it was tested.
func ibstatPortsAll(t *testing.T, text string) []sysfake.IB {
	t.Helper()
	var out []sysfake.IB
	var cur *sysfake.IB
	var port *sysfake.IBPort
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(raw, "#") {
			continue
		}
		if name, ok := strings.CutPrefix(line, "CA '"); ok {
			out = append(out, sysfake.IB{Name: strings.TrimSuffix(name, "'")})
			cur, port = &out[len(out)-1], nil
			continue
		}
		if cur == nil {
			continue
		}
		if n, ok := strings.CutPrefix(line, "Port "); ok && strings.HasSuffix(n, ":") {
			cur.Ports = append(cur.Ports, sysfake.IBPort{})
			port = &cur.Ports[len(cur.Ports)-1]
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		switch {
		case k == "CA type":
			cur.HCAType = v
		case k == "Firmware version":
			cur.FWVer = v
		case port == nil:
		case k == "State":
			port.State = ibstatToSysfsState[v]
			if port.State == "" {
				t.Fatalf("%s: ibstat state %q has no sysfs name", cur.Name, v)
			}
		case k == "Physical state":
			port.PhysState = ibstatToSysfsPhys[v]
			if port.PhysState == "" {
				t.Fatalf("%s: ibstat physical state %q has no sysfs name", cur.Name, v)
			}
		case k == "Rate":
			port.Rate = v + " Gb/sec"
		case k == "Link layer":
			port.LinkLayer = v
		}
	}
	return out
}

// ibstat prints a port's states by name (infiniband-diags' ibstat.c:
// "Down", "Initializing", "Armed", "Active"; physical "Sleep", "Polling",
// "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery",
// "PhyTest"); the kernel's sysfs prints "<number>: <name>"
// (Documentation/ABI/stable/sysfs-class-infiniband, drivers/infiniband/
// core/sysfs.c: state DOWN/INIT/ARMED/ACTIVE, phys_state Sleep ... Phy Test).
var (
	ibstatToSysfsState = map[string]string{"Down": "1: DOWN", "Initializing": "2: INIT", "Armed": "3: ARMED", "Active": "4: ACTIVE"}
	ibstatToSysfsPhys  = map[string]string{"Sleep": "1: Sleep", "Polling": "2: Polling", "Disabled": "3: Disabled",
		"PortConfigurationTraining": "4: PortConfigurationTraining", "LinkUp": "5: LinkUp", "LinkErrorRecovery": "6: LinkErrorRecovery", "PhyTest": "7: Phy Test"}
)

// ibCorpusMachine puts each CA of an ibstat capture on its own root port,
// so that topo.Collect reads its ports from sysfs as on the node.
func ibCorpusMachine(t *testing.T, cas []sysfake.IB) *sysfake.Machine {
	t.Helper()
	m := sysfake.New()
	m.NUMA(map[int]string{0: "0-7"})
	for i, ca := range cas {
		rp, fn := fmt.Sprintf("0000:00:%02x.0", i+1), fmt.Sprintf("0000:%02x:00.0", i+1)
		addAll(t, m, sysfake.PCI{BusID: rp, Parent: "pci0000:00"}, nicFn(fn, rp, 0))
		ca.BusID = fn
		if ca.FWVer == "" {
			ca.FWVer = "unknown" // the partial block lost it
		}
		if err := m.AddIB(ca); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// The ibstat captures, through sysfs, read back port by port: state and
// physical state by number and name, rate, link layer, and whether the port
// counts as active.
func TestCorpusIBStat(t *testing.T) {
	type port struct {
		state, phys string
		stateID     int
		physID      int
		rate        float64
		layer       string
		active      bool
	}
	for _, c := range []struct {
		file  string
		ports map[string]port // "mlx4_0:2"
	}{
		{"lore-linux-rdma_mlx4_ib-polling_eth-disabled_ibstat.txt", map[string]port{
			"mlx4_0:1": {"DOWN", "Polling", 1, 2, 10, "InfiniBand", false},
			"mlx4_0:2": {"DOWN", "Disabled", 1, 3, 40, "Ethernet", false}}},
		{"network-operator249_sriov-vf_down-linkup_ibstat.txt", map[string]port{
			"mlx5_7:1": {"DOWN", "LinkUp", 1, 5, 200, "InfiniBand", false}}},
		{"archwiki_mlx4_active_and_polling_ibstat.txt", map[string]port{
			"mlx4_0:1": {"ACTIVE", "LinkUp", 4, 5, 20, "InfiniBand", true},
			"mlx4_0:2": {"DOWN", "Polling", 1, 2, 10, "InfiniBand", false}}},
		{"mooncake1999_roce-cx7_active_cx6dx-disabled_ibstat_PARTIAL.txt", map[string]port{
			"mlx5_0:1":  {"ACTIVE", "LinkUp", 4, 5, 200, "Ethernet", true},
			"mlx5_1:1":  {"ACTIVE", "LinkUp", 4, 5, 200, "Ethernet", true},
			"mlx5_10:1": {"DOWN", "Disabled", 1, 3, 0, "", false}}},
		// topo5: a ConnectX-7 IB port with no peer, at the untrained rate.
		{"gpud482_cx7-ndr_down-polling_rate10_ibstat.txt", map[string]port{
			"mlx5_10:1": {"DOWN", "Polling", 1, 2, 10, "InfiniBand", false}}},
		// An HDR port up beside an IB port Disabled; mlx5_2's block lost its
		// rate and link layer.
		{"nccltests128_cx6-hdr-active_cx6-ib-disabled_cx4lx_ibstat_PARTIAL.txt", map[string]port{
			"mlx5_0:1": {"ACTIVE", "LinkUp", 4, 5, 200, "InfiniBand", true},
			"mlx5_1:1": {"DOWN", "Disabled", 1, 3, 10, "InfiniBand", false},
			"mlx5_2:1": {"ACTIVE", "LinkUp", 4, 5, 0, "", true}}},
		{"sglang6823_h20_cx6dx-roce-disabled_ibstat_PARTIAL.txt", map[string]port{
			"mlx5_0:1": {"DOWN", "Disabled", 1, 3, 40, "Ethernet", false},
			"mlx5_1:1": {"DOWN", "Disabled", 1, 3, 40, "Ethernet", false}}},
		{"deepep303_h20_cx7-ndr400_active_ibstat_PARTIAL.txt", map[string]port{
			"mlx5_0:1": {"ACTIVE", "LinkUp", 4, 5, 400, "InfiniBand", true},
			"mlx5_1:1": {"ACTIVE", "LinkUp", 4, 5, 400, "InfiniBand", true}}},
	} {
		t.Run(c.file, func(t *testing.T) {
			cas := ibstatPortsAll(t, readTestdata(t, "ib/"+c.file))
			tp := collectMachine(t, ibCorpusMachine(t, cas), Options{})
			got := map[string]port{}
			for _, n := range tp.NICs {
				if n.Error != "" {
					t.Errorf("%s: %s", n.Name, n.Error)
				}
				for _, p := range n.Ports {
					got[fmt.Sprintf("%s:%d", n.Name, p.Port)] = port{p.State, p.PhysState, p.StateID, p.PhysStateID, p.RateGbps, p.LinkLayer, p.Active()}
				}
			}
			var keys []string
			for k := range c.ports {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if got[k] != c.ports[k] {
					t.Errorf("%s = %+v, want %+v", k, got[k], c.ports[k])
				}
			}
			if len(got) != len(c.ports) {
				t.Errorf("%d ports read, want %d: %+v", len(got), len(c.ports), got)
			}
		})
	}
}

// ibstatus prints each port's sysfs strings as the kernel wrote them: the
// corpus's ibstatus captures are fed to sysfs verbatim and read back.
func ibstatusDevices(t *testing.T, text string) []sysfake.IB {
	t.Helper()
	var out []sysfake.IB
	head := regexp.MustCompile(`^Infiniband device '([^']+)' port (\d+) status:$`)
	for _, raw := range strings.Split(text, "\n") {
		if strings.HasPrefix(raw, "#") {
			continue
		}
		line := strings.TrimSpace(raw)
		if m := head.FindStringSubmatch(line); m != nil {
			out = append(out, sysfake.IB{Name: m[1], FWVer: "unknown", Ports: []sysfake.IBPort{{}}})
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || len(out) == 0 {
			continue
		}
		p := &out[len(out)-1].Ports[0]
		switch v = strings.TrimSpace(v); k {
		case "state":
			p.State = v
		case "phys state":
			p.PhysState = v
		case "rate":
			p.Rate = v
		case "link_layer":
			p.LinkLayer = v
		}
	}
	return out
}

func TestCorpusIBStatus(t *testing.T) {
	for _, c := range []struct {
		file  string
		names []string
		rate  float64
	}{
		{"nccl1866_roce-100g_ibstatus_PARTIAL.txt", []string{"mlx5_0", "mlx5_1"}, 100},
		// LAG bonds keep their own RDMA names.
		{"deepep150_roce-bond_h20_ibstatus_PARTIAL.txt", []string{"mlx5_bond_0", "mlx5_bond_1", "mlx5_bond_2"}, 200},
	} {
		t.Run(c.file, func(t *testing.T) {
			devs := ibstatusDevices(t, readTestdata(t, "ib/"+c.file))
			tp := collectMachine(t, ibCorpusMachine(t, devs), Options{})
			var names []string
			for i, n := range tp.NICs {
				names = append(names, n.Name)
				if n.Index != i || len(n.Ports) != 1 {
					t.Fatalf("%s: index %d, %d ports", n.Name, n.Index, len(n.Ports))
				}
				p := n.Ports[0]
				if p.StateID != 4 || p.State != "ACTIVE" || p.PhysStateID != 5 || p.PhysState != "LinkUp" || p.RateGbps != c.rate || p.LinkLayer != "Ethernet" || !p.Active() {
					t.Errorf("%s port 1 = %+v", n.Name, p)
				}
			}
			if strings.Join(names, " ") != strings.Join(c.names, " ") {
				t.Errorf("devices %v, want %v", names, c.names)
			}
		})
	}
}
