package topo

import (
	"strings"
	"testing"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	sim "github.com/gpuprobe/gpuprobe/sim/topo"
)

// The simulated DGX H100: 8 GPUs and 8 NICs behind 4 switches on 2 NUMA
// nodes, bare metal, IOMMU passthrough, peermem loaded, every port up.
func TestSimDGXH100(t *testing.T) {
	tp := simTopology(t, "dgx-h100", 18)
	if len(tp.GPUs) != 8 || len(tp.NICs) != 8 || len(tp.NUMANodes) != 2 || tp.Virtualization.VM() ||
		tp.IOMMU.Mode != "passthrough" || !tp.PeerMem.Loaded() || tp.GPUSource != "nvml" {
		t.Fatalf("sim topology: %d GPUs %d NICs %d NUMA virt %+v iommu %+v peermem %+v", len(tp.GPUs), len(tp.NICs), len(tp.NUMANodes), tp.Virtualization, tp.IOMMU, tp.PeerMem)
	}
	switches := map[string]bool{}
	for _, b := range tp.Bridges {
		if b.Role == "switch_upstream" {
			switches[b.BusID] = true
		}
		if b.ACS.Status == "present" && b.ACS.Redirect {
			t.Errorf("healthy sim has ACS redirect on %s", b.BusID)
		}
	}
	if len(switches) != 4 {
		t.Errorf("%d switches, want 4", len(switches))
	}
	for _, g := range tp.GPUs {
		want := "0"
		if g.Index >= 4 {
			want = "1"
		}
		if itoa(g.NUMANode) != want || len(g.Upstream) != 3 {
			t.Errorf("GPU%d numa %d upstream %v", g.Index, g.NUMANode, g.Upstream)
		}
	}
	cells := ourCells(tp)
	for _, c := range [][3]string{{"GPU0", "GPU7", "NV18"}, {"GPU0", "mlx5_0", "PIX"}, {"GPU1", "mlx5_0", "PIX"}, {"GPU0", "mlx5_2", "NODE"}, {"GPU0", "mlx5_4", "SYS"}, {"mlx5_6", "mlx5_7", "PIX"}} {
		if cells[[2]string{c[0], c[1]}] != c[2] {
			t.Errorf("%s-%s = %s, want %s", c[0], c[1], cells[[2]string{c[0], c[1]}], c[2])
		}
	}
	// The GPU half of the simulated matrix is what a real 8x H100 prints.
	want, _ := topoM(t, readTestdata(t, "topo-m/mleng_h100x8_ht_topo-m.txt"))
	compareCells(t, want, cells)
}

func TestSimFaults(t *testing.T) {
	tp := simTopology(t, "dgx-h100:acs-redirect=0000:4a:01.0,no-peermem,ib-down=mlx5_3", 18)
	if b := tp.Bridge("0000:4a:01.0"); b == nil || !b.ACS.Redirect || b.ACS.CtlFlags != "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-" {
		t.Errorf("acs-redirect bridge = %+v", b)
	}
	if tp.PeerMem.Loaded() || tp.PeerMem.DMABuf {
		t.Errorf("no-peermem: %+v", tp.PeerMem)
	}
	for _, n := range tp.NICs {
		if active := n.Ports[0].Active(); active == (n.Name == "mlx5_3") {
			t.Errorf("%s active = %v", n.Name, active)
		}
	}
	// Without a value, acs-redirect hits the port above GPU 0, and ib-down mlx5_0.
	tp = simTopology(t, "dgx-h100:acs-redirect,ib-down", 18)
	if b := tp.Bridge(tp.GPUs[0].Upstream[2]); b == nil || !b.ACS.Redirect || tp.NICs[0].Ports[0].Active() {
		t.Errorf("defaults: bridge %+v, mlx5_0 %+v", b, tp.NICs[0].Ports)
	}
	for _, bad := range []string{"dgx-h100:acs-redirect=0000:15:02.0", "dgx-h100:acs-redirect=zz", "dgx-h100:ib-down=mlx5_9"} {
		spec, err := simulate.Parse(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Build(spec); err == nil || !strings.Contains(err.Error(), "fault") {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

// Every model builds, and its GPUs are where the NVML simulation puts them.
func TestSimModels(t *testing.T) {
	for _, model := range simulate.Models {
		spec, _ := simulate.Parse(model)
		tr, err := sim.Build(spec)
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		sys, proc := writeTree(t, tr)
		tp, err := Collect(t.Context(), Options{SysfsRoot: sys, ProcfsRoot: proc})
		if err != nil || len(tp.GPUs) != 8 || len(tp.NICs) != 8 {
			t.Errorf("%s: %v, %d GPUs", model, err, len(tp.GPUs))
		}
	}
}

func TestRelocate(t *testing.T) {
	tp := simTopology(t, "dgx-h100", 18)
	old := tp.SysfsRoot
	if err := Relocate(tp, "/sys", "/proc"); err != nil {
		t.Fatal(err)
	}
	if tp.SysfsRoot != "/sys" || tp.PeerMem.Path != "/sys/module/nvidia_peermem/version" || strings.Contains(tp.Virtualization.Evidence, old) {
		t.Errorf("relocated: %s %s %s", tp.SysfsRoot, tp.PeerMem.Path, tp.Virtualization.Evidence)
	}
}
