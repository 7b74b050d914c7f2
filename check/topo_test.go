package check

import (
	"context"
	"encoding/json"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"github.com/gpuprobe/gpuprobe/topo"
	"strings"
	"sync"
	"testing"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	toposim "github.com/gpuprobe/gpuprobe/sim/topo"
	"github.com/gpuprobe/gpuprobe/state"
)

var (
	simTopoMu    sync.Mutex
	simTopoCache = map[string][]byte{}
)

// simNode reads the simulated node's sysfs tree through topo.Collect, as
// the collector does, and returns a fresh copy that a case may change.
func simNode(t *testing.T, spec string, mutate func(*topostate.Topology)) *state.Node {
	t.Helper()
	simTopoMu.Lock()
	raw, ok := simTopoCache[spec]
	if !ok {
		s, err := simulate.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		fsys, err := toposim.FS(s)
		if err != nil {
			t.Fatal(err)
		}
		var hints []topo.GPUHint
		for i, id := range []string{"0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0", "0000:9b:00.0", "0000:bb:00.0", "0000:cb:00.0", "0000:db:00.0"} {
			hints = append(hints, topo.GPUHint{Index: i, BusID: id, SwitchLinks: 18})
		}
		tp, err := topo.Collect(context.Background(), topo.Options{FS: fsys, GPUs: hints, NVLinkKnown: true})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ = json.Marshal(tp)
		simTopoCache[spec] = raw
	}
	simTopoMu.Unlock()
	var tp topostate.Topology
	if err := json.Unmarshal(raw, &tp); err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(&tp)
	}
	return &state.Node{Topology: &tp}
}

func vm(t *topostate.Topology) {
	t.Virtualization = topostate.Virtualization{Kind: "vm", Hypervisor: "kvm", Source: "detected", Evidence: `CPU flag "hypervisor" in /proc/cpuinfo`}
}

func noGPUs(t *topostate.Topology) {
	t.GPUs, t.Paths, t.Bridges = []topostate.GPU{}, []topostate.Path{}, []topostate.Bridge{}
}

func noNICs(t *topostate.Topology) {
	t.NICs = []topostate.NIC{}
	var keep []topostate.Path
	for _, p := range t.Paths {
		if strings.HasPrefix(p.A, "GPU") && strings.HasPrefix(p.B, "GPU") {
			keep = append(keep, p)
		}
	}
	t.Paths = keep
}

// remedyCases runs cases and also checks the remedy names what to do.
func remedyCases(t *testing.T, run func(*state.Node, *Config) Result, cases []checkCase, remedies map[string]string) {
	t.Helper()
	runCases(t, run, cases)
	for _, c := range cases {
		want, ok := remedies[c.name]
		if !ok {
			continue
		}
		cfg := DefaultConfig()
		if c.cfg != nil {
			c.cfg(cfg)
		}
		if r := run(c.node, cfg); !strings.Contains(r.Remedy, want) {
			t.Errorf("%s: remedy %q, want it to contain %q", c.name, r.Remedy, want)
		}
	}
}

func TestTopoACS(t *testing.T) {
	unknownAll := func(tp *topostate.Topology) {
		for i := range tp.Bridges {
			tp.Bridges[i].ACS = topostate.ACSState{Status: "unknown", Reason: "config space readable only to 64 bytes (needs root or CAP_SYS_ADMIN)"}
		}
	}
	remedyCases(t, checkACS, []checkCase{
		{name: "clean switches", node: simNode(t, "dgx-h100", nil), status: Pass, summary: "no ACS redirect on the 20 bridges"},
		{name: "redirect on GPU0's switch port", node: simNode(t, "dgx-h100:acs-redirect", nil), status: Fail,
			summary: "bridge 0000:17:00.0 (switch downstream) redirects", devices: []int{0}},
		{name: "redirect on a NIC's port names the GPUs behind the switch", node: simNode(t, "dgx-h100:acs-redirect=0000:99:03.0", nil), status: Fail,
			summary: "GPU4↔mlx5_5 (PIX via 0000:99:00.0→0000:98:00.0→0000:99:03.0)", devices: []int{4}},
		{name: "redirect in a VM is expected", node: simNode(t, "dgx-h100:acs-redirect", vm), status: Pass, summary: "expected in a kvm virtual machine"},
		{name: "not root", node: simNode(t, "dgx-h100", unknownAll), status: Skip, summary: "needs root or CAP_SYS_ADMIN"},
		{name: "redirect found while another bridge is unknown", node: simNode(t, "dgx-h100:acs-redirect", func(tp *topostate.Topology) {
			tp.Bridge("0000:4a:00.0").ACS = topostate.ACSState{Status: "unknown", Reason: "needs root"}
		}), status: Fail, devices: []int{0}},
		{name: "no switch paths", node: simNode(t, "dgx-h100", noNICs), status: Skip, summary: "no GPU↔NIC or GPU↔GPU PCIe path stays inside a PCIe switch"},
		{name: "no GPUs", node: simNode(t, "dgx-h100", noGPUs), status: Skip, summary: "no NVIDIA GPUs"},
		{name: "not collected", node: &state.Node{}, status: Skip, summary: "not collected"},
		{name: "collector failed", node: &state.Node{Sources: []state.Source{{Name: "topo", Error: "listing PCI devices: open /x/bus/pci/devices: no such file"}}},
			status: Error, summary: "/x/bus/pci/devices"},
	}, map[string]string{
		"redirect on GPU0's switch port": "setpci -s 0000:17:00.0 176.w=0011",
	})
}

func TestTopoIOMMU(t *testing.T) {
	translated := func(tp *topostate.Topology) {
		tp.IOMMU = topostate.IOMMU{Mode: "translated", Evidence: "IOMMU group type DMA-FQ in /sys/kernel/iommu_groups",
			Translated: []string{"0000:19:00.0", "0000:1a:00.0"}}
	}
	remedyCases(t, checkIOMMU, []checkCase{
		{name: "passthrough", node: simNode(t, "dgx-h100", nil), status: Pass, summary: "passthrough"},
		{name: "off", node: simNode(t, "dgx-h100", func(tp *topostate.Topology) { tp.IOMMU = topostate.IOMMU{Mode: "off", Evidence: "no IOMMU groups"} }), status: Pass, summary: "IOMMU off"},
		{name: "translated on bare metal with IB", node: simNode(t, "dgx-h100", translated), status: Warn,
			summary: "IOMMU translates DMA for GPU0 (0000:19:00.0", devices: []int{0}},
		{name: "translated in a VM", node: simNode(t, "dgx-h100", func(tp *topostate.Topology) { translated(tp); vm(tp) }), status: Pass, summary: "virtual machine"},
		{name: "translated without NICs", node: simNode(t, "dgx-h100", func(tp *topostate.Topology) { translated(tp); noNICs(tp) }), status: Pass, summary: "not expected"},
		{name: "translated, GDR expected by config", node: simNode(t, "dgx-h100", func(tp *topostate.Topology) { translated(tp); noNICs(tp) }),
			cfg: func(c *Config) { c.Topo.ExpectGDR = "yes" }, status: Warn, devices: []int{0}},
		{name: "unknown", node: simNode(t, "dgx-h100", func(tp *topostate.Topology) { tp.IOMMU = topostate.IOMMU{Mode: "unknown", Evidence: "no type file"} }), status: Skip},
		{name: "no GPUs", node: simNode(t, "dgx-h100", noGPUs), status: Skip},
	}, map[string]string{"translated on bare metal with IB": "iommu=pt"})
}

func TestTopoPeerMem(t *testing.T) {
	remedyCases(t, checkPeerMem, []checkCase{
		{name: "nvidia_peermem loaded", node: simNode(t, "dgx-h100", nil), status: Pass, summary: "nvidia_peermem loaded (version 550.54.15"},
		{name: "no module, no DMA-BUF", node: simNode(t, "dgx-h100:no-peermem", nil), status: Fail,
			summary: "proprietary NVIDIA kernel module"},
		{name: "no module, DMA-BUF", node: simNode(t, "dgx-h100", func(tp *topostate.Topology) { tp.PeerMem.Module, tp.PeerMem.Path = "", "" }),
			status: Pass, summary: "DMA-BUF path is available"},
		{name: "no NICs", node: simNode(t, "dgx-h100:no-peermem", noNICs), status: Skip, summary: "not expected"},
		{name: "expect_gdr no", node: simNode(t, "dgx-h100:no-peermem", nil), cfg: func(c *Config) { c.Topo.ExpectGDR = "no" }, status: Skip},
		{name: "no GPUs", node: simNode(t, "dgx-h100:no-peermem", noGPUs), status: Skip},
	}, map[string]string{"no module, no DMA-BUF": "modprobe nvidia_peermem"})
}

// onDGX gives a simulated topology the GPUs of healthy() and a DMI product.
func onDGX(n *state.Node, product string) *state.Node {
	n.NVML = healthy(nil).NVML
	n.Topology.DMI = &topostate.DMI{SysVendor: "NVIDIA", ProductName: product}
	n.Topology.Virtualization = topostate.Virtualization{Kind: "none"}
	return n
}

// dropNIC removes the i-th RDMA device, as if its HCA left the bus.
func dropNIC(i int) func(*topostate.Topology) {
	return func(tp *topostate.Topology) { tp.NICs = append(tp.NICs[:i:i], tp.NICs[i+1:]...) }
}

func TestTopoIBPorts(t *testing.T) {
	slow := func(tp *topostate.Topology) { tp.NICs[5].Ports[0].RateGbps = 200 }
	remedyCases(t, checkIBPorts, []checkCase{
		{name: "all active", node: simNode(t, "dgx-h100", nil), status: Pass, summary: "8 RDMA ports ACTIVE/LinkUp (8× 400 Gb/s InfiniBand)"},
		{name: "expected count and rate met", node: simNode(t, "dgx-h100", nil), cfg: func(c *Config) { c.Topo.IBPorts, c.Topo.IBRateGbps = 8, 400 }, status: Pass, summary: "expected 8"},
		{name: "port down", node: simNode(t, "dgx-h100:ib-down=mlx5_3", nil), status: Fail, summary: "mlx5_3 port 1 (InfiniBand) is DOWN/Polling"},
		{name: "down port ignored", node: simNode(t, "dgx-h100:ib-down=mlx5_3", nil), cfg: func(c *Config) { c.Topo.IBIgnore = []string{"mlx5_3:1"} }, status: Pass, summary: "7 RDMA ports"},
		{name: "too few ports", node: simNode(t, "dgx-h100:ib-down=mlx5_3", nil), cfg: func(c *Config) { c.Topo.IBPorts = 9; c.Topo.IBIgnore = []string{"mlx5_3"} },
			status: Fail, summary: "7 RDMA ports found, expected 9"},
		{name: "slow against config", node: simNode(t, "dgx-h100", slow), cfg: func(c *Config) { c.Topo.IBRateGbps = 400 }, status: Fail, summary: "mlx5_5 port 1 (InfiniBand) runs at 200 Gb/s, expected 400"},
		{name: "slow against its siblings", node: simNode(t, "dgx-h100", slow), status: Warn, summary: "while other MT4129 ports run at 400"},
		{name: "link up, no subnet manager", node: simNode(t, "dgx-h100", func(tp *topostate.Topology) {
			tp.NICs[0].Ports[0].State, tp.NICs[0].Ports[0].StateID = "INIT", 2
		}), status: Fail, summary: "INIT with the physical link up"},
		{name: "unreadable device", node: simNode(t, "dgx-h100", func(tp *topostate.Topology) { tp.NICs[2].Error, tp.NICs[2].Ports = "no fw_ver", nil }), status: Error, summary: "mlx5_2: no fw_ver"},
		{name: "no IB", node: simNode(t, "dgx-h100", noNICs), status: Skip, summary: "no RDMA devices"},
		{name: "no IB but ports expected", node: simNode(t, "dgx-h100", noNICs), cfg: func(c *Config) { c.Topo.IBPorts = 8 }, status: Fail, summary: "expected 8 ports"},
		// A DGX (DMI) has one ConnectX compute port per GPU: an HCA gone from
		// /sys/class/infiniband fails though every port left is fine; an
		// ignored port is accounted for; an OEM HGX board expects nothing.
		{name: "DGX H100 with an HCA missing", node: onDGX(simNode(t, "dgx-h100", dropNIC(3)), "DGX H100"), status: Fail,
			summary: "7 RDMA ports found, expected 8 (platform dgx-h100: one compute-fabric ConnectX port per GPU)"},
		{name: "DGX H100 complete", node: onDGX(simNode(t, "dgx-h100", nil), "DGX H100"), status: Pass, summary: "expected 8 (platform)"},
		{name: "DGX H100 with a port ignored", node: onDGX(simNode(t, "dgx-h100:ib-down=mlx5_3", nil), "DGX H100"), cfg: func(c *Config) { c.Topo.IBIgnore = []string{"mlx5_3"} }, status: Pass},
		{name: "HGX board: no count from the platform", node: onDGX(simNode(t, "dgx-h100", dropNIC(3)), "SYS-821GE-TNHR"), status: Pass, summary: "7 RDMA ports"},
		{name: "DGX without any RDMA device", node: onDGX(simNode(t, "dgx-h100", noNICs), "DGX H100"), status: Fail, summary: "expected 8 ports (platform dgx-h100"},
		{name: "IB without GPUs is still judged", node: simNode(t, "dgx-h100:ib-down=mlx5_0", noGPUs), status: Fail},
	}, map[string]string{"port down": "ibstat mlx5_3", "link up, no subnet manager": "subnet manager"})
}

func TestTopoGPUNICAffinity(t *testing.T) {
	// Moving every NIC to the other socket's root complexes leaves each GPU
	// at NODE or SYS from the nearest one.
	far := func(tp *topostate.Topology) {
		for i := range tp.Paths {
			p := &tp.Paths[i]
			if strings.HasPrefix(p.A, "GPU") && strings.HasPrefix(p.B, "mlx5") && p.PCIe == topostate.PathPIX {
				p.PCIe, p.Type, p.Bridges = topostate.PathNODE, topostate.PathNODE, nil
			}
		}
	}
	remedyCases(t, checkGPUNICAffinity, []checkCase{
		{name: "NIC on every GPU's switch", node: simNode(t, "dgx-h100", nil), status: Pass, summary: "each of 8 GPUs has a NIC within PXB"},
		// A lost GPU is not counted as one that has a NIC.
		{name: "one GPU lost", node: withLostGPU(simNode(t, "dgx-h100", nil), 5), status: Pass, summary: "each of 7 GPUs has a NIC within PXB (1 lost or unreachable GPUs not judged, see gpu.count)"},
		{name: "nearest NIC across host bridges", node: simNode(t, "dgx-h100", far), status: Warn,
			summary: "GPUs 0,1,2,3: nearest NIC is mlx5_0 at NODE", devices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "NODE accepted by config", node: simNode(t, "dgx-h100", far), cfg: func(c *Config) { c.Topo.GDRLevel = "NODE" }, status: Pass},
		{name: "PIX required", node: simNode(t, "dgx-h100", nil), cfg: func(c *Config) { c.Topo.GDRLevel = "PIX" }, status: Pass},
		{name: "bad level", node: simNode(t, "dgx-h100", nil), cfg: func(c *Config) { c.Topo.GDRLevel = "NEAR" }, status: Error},
		{name: "in a VM", node: simNode(t, "dgx-h100", func(tp *topostate.Topology) { far(tp); vm(tp) }), status: Pass, summary: "hypervisor's"},
		{name: "no NICs", node: simNode(t, "dgx-h100", noNICs), status: Skip},
		{name: "no GPUs", node: simNode(t, "dgx-h100", noGPUs), status: Skip},
	}, map[string]string{"nearest NIC across host bridges": "NCCL_NET_GDR_LEVEL=NODE"})
}

// withLostGPU gives the topology's GPUs an NVML state in which GPU lost
// fell off the bus (NVML answers GPU_IS_LOST; sysfs still lists it).
func withLostGPU(n *state.Node, lost int) *state.Node {
	n.NVML = &state.NVML{Available: true, DeviceCount: len(n.Topology.GPUs)}
	for _, g := range n.Topology.GPUs {
		n.NVML.GPUs = append(n.NVML.GPUs, state.GPU{Index: g.Index, PCIBusID: g.BusID, Lost: g.Index == lost})
	}
	return n
}

func TestTopoNUMA(t *testing.T) {
	lost := func(tp *topostate.Topology) {
		for i := range tp.GPUs {
			if tp.GPUs[i].Index >= 6 {
				tp.GPUs[i].NUMANode = -1
			}
		}
	}
	single := func(tp *topostate.Topology) {
		lost(tp)
		tp.NUMANodes = tp.NUMANodes[:1]
	}
	remedyCases(t, checkTopoNUMA, []checkCase{
		{name: "two sockets", node: simNode(t, "dgx-h100", nil), status: Pass, summary: "GPU0,GPU1,GPU2,GPU3 on node 0; GPU4,GPU5,GPU6,GPU7 on node 1"},
		{name: "numa -1 on two sockets", node: simNode(t, "dgx-h100", lost), status: Warn, summary: "numa_node is -1 on a machine with 2 NUMA nodes", devices: []int{6, 7}},
		{name: "numa -1 on one node", node: simNode(t, "dgx-h100", single), status: Pass, summary: "single NUMA node"},
		{name: "NIC without a node", node: simNode(t, "dgx-h100", func(tp *topostate.Topology) { tp.NICs[0].NUMANode = -1 }), status: Warn, summary: "mlx5_0 (0000:1a:00.0)"},
		{name: "no GPUs", node: simNode(t, "dgx-h100", noGPUs), status: Skip},
	}, map[string]string{"numa -1 on two sockets": "numactl"})
}

func TestTopoConfigDefaults(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.Topo.GDRLevel != "PXB" || cfg.Topo.ExpectGDR != "auto" || cfg.Topo.IBPorts != 0 {
		t.Errorf("defaults = %+v", cfg.Topo)
	}
	if err := ParseConfig([]byte("topo:\n  ib_ports: 8\n  ib_rate_gbps: 400\n  ib_ignore: [mlx5_1]\n  gdr_level: PIX\n"), cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Topo.IBPorts != 8 || cfg.Topo.IBRateGbps != 400 || cfg.Topo.IBIgnore[0] != "mlx5_1" || cfg.Topo.GDRLevel != "PIX" || cfg.Topo.ExpectGDR != "auto" {
		t.Errorf("parsed = %+v", cfg.Topo)
	}
	if err := ParseConfig([]byte("topo:\n  ib_port: 8\n"), cfg); err == nil {
		t.Error("a misspelt key was accepted")
	}
}

// A redirect found next to an unreadable bridge still fails, and the
// unreadable one is named rather than passed over.
func TestTopoACSNamesUnknownBridges(t *testing.T) {
	n := simNode(t, "dgx-h100:acs-redirect", func(tp *topostate.Topology) {
		tp.Bridge("0000:4a:00.0").ACS = topostate.ACSState{Status: "unknown", Reason: "config space readable only to 64 bytes (needs root or CAP_SYS_ADMIN)"}
	})
	r := checkACS(n, DefaultConfig())
	if r.Status != Fail || !strings.Contains(strings.Join(r.Details, "\n"), "ACS of bridge 0000:4a:00.0 unknown: config space readable only to 64 bytes") {
		t.Errorf("result %+v", r)
	}
}
