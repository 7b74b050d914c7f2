package topo

import (
	"context"
	"fmt"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sysfake "github.com/gpuprobe/gpuprobe/sim/sysfs"
)

// addAll adds functions in order, failing the test on a missing parent.
func addAll(t *testing.T, m *sysfake.Machine, devs ...sysfake.PCI) {
	t.Helper()
	for _, d := range devs {
		if d.Class == 0 {
			d.Class = 0x060400
		}
		if err := m.AddPCI(d); err != nil {
			t.Fatal(err)
		}
	}
}

func gpu(bus, parent string, numa int) sysfake.PCI {
	return sysfake.PCI{BusID: bus, Parent: parent, Vendor: 0x10de, Device: 0x2230, Class: 0x030000, NUMA: numa, Driver: "nvidia"}
}

func nicFn(bus, parent string, numa int) sysfake.PCI {
	return sysfake.PCI{BusID: bus, Parent: parent, Vendor: 0x15b3, Device: 0x101b, Class: 0x020700, NUMA: numa}
}

func ib(t *testing.T, m *sysfake.Machine, name, bus string) {
	t.Helper()
	if err := m.AddIB(sysfake.IB{Name: name, BusID: bus, FWVer: "20.31.1014",
		Ports: []sysfake.IBPort{{State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "200 Gb/sec (4X HDR)", LinkLayer: "InfiniBand"}}}); err != nil {
		t.Fatal(err)
	}
}

func collectMachine(t *testing.T, m *sysfake.Machine, o Options) *topostate.Topology {
	t.Helper()
	o.SysfsRoot, o.ProcfsRoot = writeTree(t, m.Tree)
	tp, err := Collect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// The UNIGE Baobab node (8x RTX A6000 with NVLink bridges on a 2-socket
// AMD host, a dual-port ConnectX next to GPU6): a layout rebuilt to
// reproduce its capture, which covers NV4 pairs, PHB, NODE, SYS and a
// dual-function NIC.
func TestBaobabA6000MatchesNvidiaSMI(t *testing.T) {
	m := sysfake.New()
	m.NUMA(map[int]string{0: "0-63", 1: "64-127"})
	// Socket 0: GPU0/1 on one root complex, GPU2/3 on another. Socket 1:
	// GPU4/5, then GPU6 and the NIC on one complex, GPU7 on its own.
	places := []struct{ host, gpu string }{
		{"pci0000:00", "0000:01:00.0"}, {"pci0000:00", "0000:02:00.0"}, {"pci0000:40", "0000:41:00.0"}, {"pci0000:40", "0000:42:00.0"},
		{"pci0000:80", "0000:81:00.0"}, {"pci0000:80", "0000:82:00.0"}, {"pci0000:c0", "0000:c1:00.0"}, {"pci0000:e0", "0000:e1:00.0"},
	}
	var hints []GPUHint
	for i, p := range places {
		numa := i / 4
		rp := fmt.Sprintf("%s:%s:01.%d", p.host[3:7], p.host[8:10], i%2)
		addAll(t, m, sysfake.PCI{BusID: rp, Parent: p.host, NUMA: numa}, gpu(p.gpu, rp, numa))
		peer := places[i^1].gpu
		hints = append(hints, GPUHint{Index: i, BusID: p.gpu, PeerLinks: map[string]int{peer: 4}})
	}
	addAll(t, m, sysfake.PCI{BusID: "0000:c0:03.1", Parent: "pci0000:c0", NUMA: 1},
		nicFn("0000:c2:00.0", "0000:c0:03.1", 1), nicFn("0000:c2:00.1", "0000:c0:03.1", 1))
	ib(t, m, "mlx5_0", "0000:c2:00.0")
	ib(t, m, "mlx5_1", "0000:c2:00.1")
	tp := collectMachine(t, m, Options{GPUs: hints, NVLinkKnown: true})
	want, _ := topoM(t, readTestdata(t, "topo-m/unige_baobab_gpu048_8xA6000_nvlink-pairs_topo-m.txt"))
	compareCells(t, want, ourCells(tp))
	if p := findPath(tp, "GPU0", "GPU1"); p == nil || p.PCIe != topostate.PathPHB || p.NVLinks != 4 {
		t.Errorf("GPU0-GPU1 = %+v: want NV4 over a PHB PCIe path", p)
	}
}

// A DGX A100-like half board: each GPU pair behind its own switch, the HCAs
// behind another, both below a shared top switch, so GPU to HCA crosses
// three switches: PXB. Expected cells are the GPU0..3 rows of the (partial)
// nccl#707 capture, for the devices built here.
func TestDGXA100PXB(t *testing.T) {
	m := sysfake.New()
	m.NUMA(map[int]string{0: "0-47,96-143", 1: "48-95,144-191"})
	var hints []GPUHint
	block := func(host string, base int, gpus [2]string, nics [2]string, names [4]string) {
		rp, up, dgpu, dnic := fmt.Sprintf("0000:%02x:01.1", base), fmt.Sprintf("0000:%02x:00.0", base+1), fmt.Sprintf("0000:%02x:08.0", base+2), fmt.Sprintf("0000:%02x:10.0", base+2)
		gup, nup := fmt.Sprintf("0000:%02x:00.0", base+3), fmt.Sprintf("0000:%02x:00.0", base+6)
		addAll(t, m, sysfake.PCI{BusID: rp, Parent: host}, sysfake.PCI{BusID: up, Parent: rp},
			sysfake.PCI{BusID: dgpu, Parent: up}, sysfake.PCI{BusID: dnic, Parent: up},
			sysfake.PCI{BusID: gup, Parent: dgpu}, sysfake.PCI{BusID: nup, Parent: dnic})
		for i, g := range gpus {
			dn := fmt.Sprintf("0000:%02x:%02x.0", base+4, i)
			addAll(t, m, sysfake.PCI{BusID: dn, Parent: gup}, gpu(g, dn, 0))
		}
		for i, n := range nics {
			dn := fmt.Sprintf("0000:%02x:%02x.0", base+8, i)
			fn0, fn1 := n, n[:len(n)-1]+"1"
			addAll(t, m, sysfake.PCI{BusID: dn, Parent: nup}, nicFn(fn0, dn, 0), nicFn(fn1, dn, 0))
			ib(t, m, names[2*i], fn0)
			ib(t, m, names[2*i+1], fn1)
		}
	}
	block("pci0000:00", 0x00, [2]string{"0000:07:00.0", "0000:0f:00.0"}, [2]string{"0000:0c:00.0", "0000:0d:00.0"}, [4]string{"mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"})
	block("pci0000:40", 0x40, [2]string{"0000:47:00.0", "0000:4e:00.0"}, [2]string{"0000:4b:00.0", "0000:4c:00.0"}, [4]string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"})
	for i, g := range []string{"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0"} {
		hints = append(hints, GPUHint{Index: i, BusID: g, SwitchLinks: 12})
	}
	tp := collectMachine(t, m, Options{GPUs: hints, NVLinkKnown: true})
	want, _ := topoM(t, readTestdata(t, "topo-m/nccl707_dgxa100-like_18nic_topo-m_PARTIAL.txt"))
	have := map[string]bool{}
	for _, p := range tp.Paths {
		have[p.A], have[p.B] = true, true
	}
	for k := range want {
		if !have[k[0]] || !have[k[1]] {
			delete(want, k)
		}
	}
	if len(want) < 40 {
		t.Fatalf("only %d comparable cells", len(want))
	}
	compareCells(t, want, ourCells(tp))
	if p := findPath(tp, "GPU0", "GPU1"); p == nil || p.PCIe != topostate.PathPIX || len(p.Bridges) != 3 {
		t.Errorf("GPU0-GPU1 PCIe = %+v, want PIX over 3 bridges", p)
	}
	if p := findPath(tp, "GPU0", "mlx5_4"); p == nil || len(p.Bridges) != 7 || p.Bridges[3] != "0000:01:00.0" {
		t.Errorf("GPU0-mlx5_4 = %+v, want PXB over 7 bridges with the top switch in the middle", p)
	}
}

func findPath(tp *topostate.Topology, a, b string) *topostate.Path {
	for i := range tp.Paths {
		p := &tp.Paths[i]
		if p.A == a && p.B == b || p.A == b && p.B == a {
			return p
		}
	}
	return nil
}

// A capture copied without its symlinks (cp -rL) has no hierarchy: the
// path is unknown, never guessed, and a note says why.
func TestUnknownHierarchy(t *testing.T) {
	m := sysfake.New()
	addAll(t, m, sysfake.PCI{BusID: "0000:00:01.0", Parent: "pci0000:00"}, gpu("0000:01:00.0", "0000:00:01.0", -1),
		sysfake.PCI{BusID: "0000:00:02.0", Parent: "pci0000:00"}, gpu("0000:02:00.0", "0000:00:02.0", -1))
	sys, proc := writeTree(t, m.Tree)
	link := filepath.Join(sys, "bus/pci/devices/0000:02:00.0")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../devices/pci0000:00/0000:00:02.0/0000:02:00.0", link+".tmp"); err != nil {
		t.Fatal(err)
	}
	// Replace the link by a plain copy of the attributes it pointed at.
	os.Mkdir(link, 0o755)
	for _, f := range []string{"vendor", "class", "device", "numa_node"} {
		b, _ := os.ReadFile(filepath.Join(link+".tmp", f))
		os.WriteFile(filepath.Join(link, f), b, 0o644)
	}
	os.Remove(link + ".tmp")
	tp, err := Collect(context.Background(), Options{SysfsRoot: sys, ProcfsRoot: proc})
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.GPUs) != 2 || tp.Paths[0].Type != topostate.PathUnknown {
		t.Fatalf("GPUs %d, path %+v", len(tp.GPUs), tp.Paths)
	}
	if !strings.Contains(strings.Join(tp.Notes, "\n"), "not a symlink") {
		t.Errorf("notes = %q", tp.Notes)
	}
}

func TestCrossHost(t *testing.T) {
	for _, c := range []struct {
		a, b, nodes int
		want        string
	}{
		{0, 0, 2, topostate.PathNODE}, {0, 1, 2, topostate.PathSYS}, {-1, -1, 1, topostate.PathNODE}, {-1, -1, 0, topostate.PathNODE}, {-1, 0, 2, topostate.PathSYS},
	} {
		if got := crossHost(c.a, c.b, c.nodes); got != c.want {
			t.Errorf("numa %d/%d of %d nodes = %s, want %s", c.a, c.b, c.nodes, got, c.want)
		}
	}
	if topostate.PathRank("NV18") >= topostate.PathRank(topostate.PathPIX) || topostate.PathRank(topostate.PathPXB) >= topostate.PathRank(topostate.PathPHB) || topostate.PathRank(topostate.PathSYS) >= topostate.PathRank(topostate.PathUnknown) {
		t.Error("path ranks out of order")
	}
}
