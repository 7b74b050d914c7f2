package topo

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/internal/topocapture"
	sysfake "github.com/gpuprobe/gpuprobe/sim/sysfs"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// topoM reads an `nvidia-smi topo -m` capture into cells keyed by device
// names (GPU0, mlx5_3), translating NICk through the NIC legend.
func topoM(t *testing.T, text string) (map[[2]string]string, []string) {
	t.Helper()
	m := topocapture.Read(text)
	cells := map[[2]string]string{}
	var names []string
	for _, c := range m.Cols {
		names = append(names, m.Name(c))
	}
	for r, row := range m.Rows {
		for i, v := range row.Cells {
			if v != "X" {
				cells[[2]string{m.Name(r), names[i]}] = v
			}
		}
	}
	if len(cells) == 0 {
		t.Fatal("no matrix in the capture")
	}
	return cells, names
}

// ourCells is the same view of a topostate.Topology.
func ourCells(tp *topostate.Topology) map[[2]string]string {
	cells := map[[2]string]string{}
	for _, p := range tp.Paths {
		cells[[2]string{p.A, p.B}] = p.Type
		cells[[2]string{p.B, p.A}] = p.Type
	}
	return cells
}

func compareCells(t *testing.T, want, got map[[2]string]string) {
	t.Helper()
	var diffs []string
	for k, w := range want {
		if g := got[k]; g != w {
			diffs = append(diffs, k[0]+"-"+k[1]+": nvidia-smi "+w+", gpuprobe "+g)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("%d cells differ from nvidia-smi:\n%s", len(diffs), strings.Join(diffs, "\n"))
	}
}

// dellHGX builds the Dell XE9680 HGX H100 tree from its real lspci -vvv,
// with the RDMA devices of the Mooncake node's ibstat: the same platform
// (8 H100, one ConnectX-7 per PEX890xx switch, two dual-port ConnectX-6 Dx
// next to GPU0 and GPU4), so nvidia-smi's matrix of the one is the expected
// matrix of the other. The CPU lists are not in the capture; these are the
// 2x56-core layout.
func dellHGX(t *testing.T) *sysfake.Machine {
	t.Helper()
	devs := parseLspci(t, readTestdata(t, "lspci/dell-xe9680-hgx-h100.lspci-vvv.txt"))
	m := lspciMachine(t, devs, map[int]string{0: "0-55,112-167", 1: "56-111,168-223"})
	ibs := ibstatPorts(t, readTestdata(t, "ib/mooncake2039_ibstat_12hca.txt"))
	n := 0
	for _, d := range devs {
		if !strings.Contains(d.desc, "Mellanox") {
			continue
		}
		ib := ibs["mlx5_"+itoa(n)]
		ib.BusID = d.busID
		n++
		if err := m.AddIB(ib); err != nil {
			t.Fatal(err)
		}
	}
	if n != 12 {
		t.Fatalf("%d Mellanox functions in the capture, want 12", n)
	}
	return m
}

func hopperHints(links int) []GPUHint {
	var hints []GPUHint
	for i, id := range []string{"0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0", "0000:9b:00.0", "0000:bb:00.0", "0000:cb:00.0", "0000:db:00.0"} {
		hints = append(hints, GPUHint{Index: i, BusID: id, SwitchLinks: links})
	}
	return hints
}

func TestDellHGXMatchesNvidiaSMI(t *testing.T) {
	sys, proc := writeTree(t, dellHGX(t).Tree)
	tp, err := Collect(context.Background(), Options{SysfsRoot: sys, ProcfsRoot: proc, GPUs: hopperHints(18), NVLinkKnown: true})
	if err != nil {
		t.Fatal(err)
	}
	want, names := topoM(t, readTestdata(t, "topo-m/mooncake2039_8xH100_12nic_container-cpuset_topo-m.txt"))
	if len(names) != 20 || len(tp.GPUs) != 8 || len(tp.NICs) != 12 {
		t.Fatalf("devices: capture %d, gpuprobe %d GPUs + %d NICs", len(names), len(tp.GPUs), len(tp.NICs))
	}
	if len(want) != 380 {
		t.Fatalf("capture has %d cells, want 380", len(want))
	}
	compareCells(t, want, ourCells(tp))

	// The NVSwitch management bridges (PMC-Sierra 82:0x.0) redirect, but no
	// GPU or NIC sits below them: they must not be on any path.
	for _, p := range tp.Paths {
		for _, b := range p.Bridges {
			if strings.HasPrefix(b, "0000:82:") {
				t.Errorf("path %s-%s crosses NVSwitch bridge %s", p.A, p.B, b)
			}
		}
	}
	if b := tp.Bridge("0000:17:01.0"); b == nil || b.ACS.Status != "present" || b.ACS.Offset != 0x170 || b.ACS.Redirect || b.Role != "switch_downstream" {
		t.Errorf("bridge 17:01.0 = %+v", b)
	}
	if b := tp.Bridge("0000:15:01.0"); b == nil || b.Role != "root_port" || b.ACS.Offset != 0x220 {
		t.Errorf("root port 15:01.0 = %+v", b)
	}
	if b := tp.Bridge("0000:16:00.0"); b == nil || b.Role != "switch_upstream" || b.ACS.Status != "absent" {
		t.Errorf("upstream port 16:00.0 = %+v", b)
	}
}

// Without NVML the same tree is judged from sysfs alone: the GPUs are found
// by PCI ID in bus order, and GPU pairs show their PCIe path, which on this
// board crosses host bridges.
func TestDellHGXWithoutNVML(t *testing.T) {
	sys, proc := writeTree(t, dellHGX(t).Tree)
	tp, err := Collect(context.Background(), Options{SysfsRoot: sys, ProcfsRoot: proc})
	if err != nil {
		t.Fatal(err)
	}
	if tp.GPUSource != "sysfs" || len(tp.GPUs) != 8 || tp.GPUs[4].BusID != "0000:9b:00.0" || tp.NVLinkKnown {
		t.Fatalf("sysfs discovery: source %s, %d GPUs, nvlink %v", tp.GPUSource, len(tp.GPUs), tp.NVLinkKnown)
	}
	got := ourCells(tp)
	for _, c := range []struct{ a, b, want string }{{"GPU0", "GPU1", "NODE"}, {"GPU0", "GPU4", "SYS"}, {"GPU0", "mlx5_0", "PIX"}, {"GPU0", "mlx5_2", "PIX"}} {
		if g := got[[2]string{c.a, c.b}]; g != c.want {
			t.Errorf("%s-%s = %s, want %s", c.a, c.b, g, c.want)
		}
	}
}

// NVML GPUs that are not in the tree mean the tree came from another
// machine: the tree's own GPUs are judged, and the note says why.
func TestForeignNVMLHintsIgnored(t *testing.T) {
	sys, proc := writeTree(t, dellHGX(t).Tree)
	tp, err := Collect(context.Background(), Options{SysfsRoot: sys, ProcfsRoot: proc,
		GPUs: []GPUHint{{Index: 0, BusID: "0000:07:00.0", SwitchLinks: 12}}, NVLinkKnown: true})
	if err != nil {
		t.Fatal(err)
	}
	if tp.GPUSource != "sysfs" || len(tp.GPUs) != 8 || tp.NVLinkKnown {
		t.Fatalf("source %s, %d GPUs", tp.GPUSource, len(tp.GPUs))
	}
	if !strings.Contains(strings.Join(tp.Notes, "\n"), "none of NVML's GPUs") {
		t.Errorf("notes = %q", tp.Notes)
	}
}
