package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/collect"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// The simulated sysfs tree must put every GPU where the NVML simulation
// says it is, for every model: otherwise topo would judge other GPUs than
// the rest of the report.
func TestSimulatedTopologyMatchesNVML(t *testing.T) {
	want := map[string]string{"dgx-a100": "NV12", "dgx-h100": "NV18", "dgx-h200": "NV18", "dgx-b200": "NV18"}
	for _, model := range simulate.Models {
		spec, err := simulate.Parse(model)
		if err != nil {
			t.Fatal(err)
		}
		src, err := Sources(spec)
		if err != nil {
			t.Fatal(err)
		}
		n := collect.Node(context.Background(), collect.Options{Sources: src, CallTimeout: time.Second})
		tp := n.Topology
		if tp == nil {
			t.Fatalf("%s: no topology: %+v", model, n.Sources)
		}
		if tp.GPUSource != "nvml" || len(tp.GPUs) != 8 || !tp.NVLinkKnown || len(tp.Notes) != 0 {
			t.Errorf("%s: source %s, %d GPUs, nvlink %v, notes %q", model, tp.GPUSource, len(tp.GPUs), tp.NVLinkKnown, tp.Notes)
			continue
		}
		for i, g := range n.NVML.GPUs {
			if tp.GPUs[i].BusID != strings.ToLower(g.PCIBusID) || tp.GPUs[i].Index != g.Index || tp.GPUs[i].LocalCPUs != g.CPUAffinity {
				t.Errorf("%s GPU %d: topo %s cpus %s, NVML %s cpus %s", model, i, tp.GPUs[i].BusID, tp.GPUs[i].LocalCPUs, g.PCIBusID, g.CPUAffinity)
			}
		}
		if p := tp.Paths[0]; p.Type != want[model] {
			t.Errorf("%s: GPU0-GPU1 %s, want %s", model, p.Type, want[model])
		}
		if tp.SysfsRoot != "simulated:/sys" || strings.Contains(tp.Virtualization.Evidence, "gpuprobe-sim") {
			t.Errorf("%s: the temporary tree shows through: %s / %s", model, tp.SysfsRoot, tp.Virtualization.Evidence)
		}
	}
}

// The efa fault makes the NICs EFA devices as sysfs shows them: the
// topology collector records each under its rdmap name with driver efa,
// which container.net_plugin reads.
func TestSimulatedEFA(t *testing.T) {
	spec, err := simulate.Parse("dgx-h100:efa")
	if err != nil {
		t.Fatal(err)
	}
	src, err := Sources(spec)
	if err != nil {
		t.Fatal(err)
	}
	n := collect.Node(context.Background(), collect.Options{Sources: src, CallTimeout: time.Second})
	if n.Topology == nil || len(n.Topology.NICs) != 8 {
		t.Fatalf("topology %+v", n.Topology)
	}
	for _, nic := range n.Topology.NICs {
		if nic.Driver != "efa" || !strings.HasPrefix(nic.Name, "rdmap") || nic.Vendor != "0x1d0f" || len(nic.Ports) != 1 || nic.Ports[0].LinkLayer != "Unspecified" {
			t.Errorf("NIC %+v", nic)
		}
	}
}
