package exporter

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

// The golden expositions are written by the exporter itself (-update), so
// on their own they prove only that nothing changed. Here what each fault
// must move is stated from the fault's definition (sim/nvml/faults.go) and
// the checks' rules (docs/checks.md), and held against both the golden file
// and a fresh exposition: a golden regenerated from a wrong exporter fails.

const (
	uuid0 = `uuid="GPU-5e1a0000-1000-4000-8000-00005e1a0000"`
	gpu1  = `gpu="1",pci_bus_id="0000:3b:00.0",uuid="GPU-5e1a0001-1011-4001-8001-00005e1a0001"`
	gpu2  = `gpu="2",pci_bus_id="0000:4c:00.0",uuid="GPU-5e1a0002-1022-4002-8002-00005e1a0002"`
	gpu3  = `gpu="3",pci_bus_id="0000:5d:00.0",uuid="GPU-5e1a0003-1033-4003-8003-00005e1a0003"`
	gpu4  = `gpu="4",pci_bus_id="0000:9b:00.0",uuid="GPU-5e1a0004-1044-4004-8004-00005e1a0004"`
	gpu5  = `gpu="5",pci_bus_id="0000:bb:00.0",uuid="GPU-5e1a0005-1055-4005-8005-00005e1a0005"`
)

// simGPULabels are the labels of GPU i in the simulated dgx-h100.
var simGPULabels = []string{
	`gpu="0",pci_bus_id="0000:19:00.0",` + uuid0, gpu1, gpu2, gpu3, gpu4, gpu5,
	`gpu="6",pci_bus_id="0000:cb:00.0",uuid="GPU-5e1a0006-1066-4006-8006-00005e1a0006"`,
	`gpu="7",pci_bus_id="0000:db:00.0",uuid="GPU-5e1a0007-1077-4007-8007-00005e1a0007"`,
}

// nodeChecks are the checks 'serve' judges, and how each ends on a healthy
// simulated dgx-h100 outside Slurm: 0 pass, -1 skip.
var nodeChecks = map[string]string{
	"fabric.state": "0", "fabric.sxid": "0", "gdr.peermem": "0", "gpu.count": "0", "gpu.driver": "0",
	"gpu.ecc": "0", "gpu.mig": "0", "gpu.pcie_link": "0", "gpu.persistence": "0", "gpu.power": "0",
	"gpu.processes": "0", "gpu.retired_pages": "-1", // H100 uses row remapping
	"gpu.row_remap": "0", "gpu.temperature": "0", "gpu.throttle": "0", "gpu.xid": "0", "ib.ports": "0",
	"iommu.mode": "0", "nccl.transport": "-1", // no NCCL log in the daemon
	"nvlink.errors": "0", "nvlink.state": "0", "pcie.acs": "0",
	"slurm.gres": "-1", "slurm.topology": "-1", // no slurm.conf
	"topo.gpu_nic_affinity": "0", "topo.numa": "0",
}

// healthySeries is what a healthy node exports for the golden names.
func healthySeries() map[string]string {
	m := map[string]string{
		"gpuprobe_node_healthy": "1", "gpuprobe_collect_success": "1", "gpuprobe_simulated": "1",
	}
	for id, v := range nodeChecks {
		m[`gpuprobe_check_status{check="`+id+`"}`] = v
	}
	for _, g := range simGPULabels {
		m["gpuprobe_gpu_row_remap_pending{"+g+"}"] = "0"
		m["gpuprobe_gpu_lost{"+g+"}"] = "0"
		m["gpuprobe_nvlink_links_up{"+g+"}"] = "18" // H100 SXM5: 18 NVLinks
		m["gpuprobe_gpu_fabric_registered{"+g+"}"] = "1"
		for _, c := range []string{"aggregate", "volatile"} {
			for _, ty := range []string{"corrected", "uncorrected"} {
				m[`gpuprobe_gpu_ecc_errors_total{counter="`+c+`",`+beforeUUID(g, `type="`+ty+`"`)+"}"] = "0"
			}
		}
		// idle: the only clock event is gpu_idle
		m["gpuprobe_gpu_clock_event_active{"+beforeUUID(g, `reason="gpu_idle"`)+"}"] = "1"
		m["gpuprobe_gpu_pcie_link_width{"+g+`,which="current"}`] = "16"
		m["gpuprobe_gpu_pcie_link_width{"+g+`,which="max"}`] = "16"
		m["gpuprobe_gpu_persistence_mode{"+g+"}"] = "1"
		m["gpuprobe_gpu_compute_processes{"+g+"}"] = "0"
	}
	return m
}

// statedExpositions: each fault's expected series, as changes to the
// healthy set ("" removes a series).
func statedExpositions() map[string]map[string]string {
	eccOn := func(g string) map[string]string {
		m := map[string]string{`gpuprobe_check_status{check="gpu.ecc"}`: "2", "gpuprobe_node_healthy": "0"}
		for _, c := range []string{"aggregate", "volatile"} { // the fault answers 2 uncorrected, 14 corrected for every counter
			m[`gpuprobe_gpu_ecc_errors_total{counter="`+c+`",`+beforeUUID(g, `type="uncorrected"`)+"}"] = "2"
			m[`gpuprobe_gpu_ecc_errors_total{counter="`+c+`",`+beforeUUID(g, `type="corrected"`)+"}"] = "14"
		}
		return m
	}
	lost := map[string]string{`gpuprobe_check_status{check="gpu.count"}`: "2", "gpuprobe_node_healthy": "0", "gpuprobe_gpu_lost{" + gpu5 + "}": "1"}
	for k := range healthySeries() { // a lost GPU answers nothing after its identity
		if strings.Contains(k, `gpu="5"`) && !strings.HasPrefix(k, "gpuprobe_gpu_lost{") {
			lost[k] = ""
		}
	}
	// Registration IN_PROGRESS warns (DCGM: Fabric Manager trains the links
	// after boot): still healthy.
	fabric := map[string]string{`gpuprobe_check_status{check="fabric.state"}`: "1"}
	persistence := map[string]string{`gpuprobe_check_status{check="gpu.persistence"}`: "1"} // a warning: still healthy
	for _, g := range simGPULabels {
		fabric["gpuprobe_gpu_fabric_registered{"+g+"}"] = "0"
		persistence["gpuprobe_gpu_persistence_mode{"+g+"}"] = "0"
	}
	return map[string]map[string]string{
		"healthy":           {},
		"row-remap-pending": {`gpuprobe_check_status{check="gpu.row_remap"}`: "2", "gpuprobe_node_healthy": "0", "gpuprobe_gpu_row_remap_pending{" + gpu3 + "}": "1"},
		"gpu-lost":          lost,
		"nvlink-down":       {`gpuprobe_check_status{check="nvlink.state"}`: "2", "gpuprobe_node_healthy": "0", "gpuprobe_nvlink_links_up{" + gpu2 + "}": "17"},
		"fabric-incomplete": fabric,
		"ecc-uncorrectable": eccOn(gpu4),
		// hardware slowdown warns (docs/checks.md gpu.throttle): still healthy
		"hw-slowdown": {`gpuprobe_check_status{check="gpu.throttle"}`: "1",
			`gpuprobe_gpu_clock_event_active{gpu="5",pci_bus_id="0000:bb:00.0",reason="gpu_idle",uuid="GPU-5e1a0005-1055-4005-8005-00005e1a0005"}`:    "",
			`gpuprobe_gpu_clock_event_active{gpu="5",pci_bus_id="0000:bb:00.0",reason="hw_slowdown",uuid="GPU-5e1a0005-1055-4005-8005-00005e1a0005"}`: "1"},
		// x8 of x16 on a busy GPU (no gpu_idle event) fails
		"pcie-x8": {`gpuprobe_check_status{check="gpu.pcie_link"}`: "2", "gpuprobe_node_healthy": "0",
			"gpuprobe_gpu_pcie_link_width{" + gpu1 + `,which="current"}`:                                                                           "8",
			`gpuprobe_gpu_clock_event_active{gpu="1",pci_bus_id="0000:3b:00.0",reason="gpu_idle",uuid="GPU-5e1a0001-1011-4001-8001-00005e1a0001"}`: ""},
		"persistence-off": persistence,
		// a leftover process warns
		"leftover-process": {`gpuprobe_check_status{check="gpu.processes"}`: "1", `gpuprobe_gpu_compute_processes{gpu="0",pci_bus_id="0000:19:00.0",` + uuid0 + "}": "1"},
	}
}

// beforeUUID adds a label to a GPU's, in the exposition's (sorted) order.
func beforeUUID(gpu, label string) string {
	return strings.Replace(gpu, ",uuid=", ","+label+",uuid=", 1)
}

// samples reads the sample lines of a text exposition: series → value.
func samples(t *testing.T, b []byte) map[string]string {
	t.Helper()
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			t.Fatalf("not a sample line: %q", l)
		}
		m[l[:i]] = l[i+1:]
	}
	return m
}

func TestGoldenExpositionsStated(t *testing.T) {
	specs := map[string]string{}
	for _, tc := range []struct{ name, spec string }{
		{"healthy", "dgx-h100"}, {"row-remap-pending", "dgx-h100:row-remap-pending=3"}, {"gpu-lost", "dgx-h100:gpu-lost=5"},
		{"nvlink-down", "dgx-h100:nvlink-down=2"}, {"fabric-incomplete", "dgx-h100:fabric-incomplete"},
		{"ecc-uncorrectable", "dgx-h100:ecc-uncorrectable=4"}, {"hw-slowdown", "dgx-h100:hw-slowdown=5"},
		{"pcie-x8", "dgx-h100:pcie-x8=1"}, {"persistence-off", "dgx-h100:persistence-off"}, {"leftover-process", "dgx-h100:leftover-process=0"},
	} {
		specs[tc.name] = tc.spec
	}
	stated := statedExpositions()
	if len(stated) != len(specs) {
		t.Fatalf("%d stated expositions for %d goldens", len(stated), len(specs))
	}
	for name, changes := range stated {
		t.Run(name, func(t *testing.T) {
			want := healthySeries()
			for k, v := range changes {
				if v == "" {
					delete(want, k)
				} else {
					want[k] = v
				}
			}
			golden, err := os.ReadFile(filepath.Join("testdata", name+".prom"))
			if err != nil {
				t.Fatal(err)
			}
			d := daemonFor(t, specs[name], false)
			d.Cycle(context.Background())
			fresh, err := testutil.CollectAndFormat(d.Exporter, expfmt.TypeTextPlain, goldenNames...)
			if err != nil {
				t.Fatal(err)
			}
			for what, b := range map[string][]byte{"golden " + name + ".prom": golden, "fresh exposition": fresh} {
				got := samples(t, b)
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
					}
				}
				for k := range got {
					if _, ok := want[k]; !ok {
						t.Errorf("%s: unexpected series %s %s", what, k, got[k])
					}
				}
			}
		})
	}
}
