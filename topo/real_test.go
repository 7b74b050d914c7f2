package topo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"os"
	"strings"
	"testing"
)

// TestRealMachine reads this machine's own /sys and /proc. On the CI host
// (a VM with virtio devices only, no GPU, no InfiniBand) that is the case of
// "nothing to judge", which must come out clean; on a GPU node it checks
// that everything real sysfs offers is read without a hitch. It never
// skips silently: without /sys it fails unless GPUPROBE_SKIP_REAL_SYSFS=1.
func TestRealMachine(t *testing.T) {
	if os.Getenv("GPUPROBE_SKIP_REAL_SYSFS") == "1" {
		t.Skip("GPUPROBE_SKIP_REAL_SYSFS=1")
	}
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		t.Fatalf("this machine has no readable /sys/bus/pci/devices (%v); set GPUPROBE_SKIP_REAL_SYSFS=1 where sysfs is absent by design", err)
	}
	tp, err := Collect(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("virtualization: %+v", tp.Virtualization)
	t.Logf("IOMMU: %+v; peer memory: %+v", tp.IOMMU, tp.PeerMem)
	t.Logf("%d GPUs, %d NICs, %d bridges, %d NUMA nodes, notes %q", len(tp.GPUs), len(tp.NICs), len(tp.Bridges), len(tp.NUMANodes), tp.Notes)
	if tp.Virtualization.Evidence == "" || tp.Virtualization.Kind != VirtNone && tp.Virtualization.Kind != VirtVM {
		t.Errorf("virtualization %+v", tp.Virtualization)
	}
	switch tp.IOMMU.Mode {
	case "off", "passthrough", "translated", "mixed", "unknown":
	default:
		t.Errorf("IOMMU mode %q", tp.IOMMU.Mode)
	}
	for _, n := range tp.Notes {
		// Real sysfs must parse: a note about a value we could not read
		// would mean a parser that does not know real kernels' output.
		if strings.Contains(n, "want") {
			t.Errorf("unparsed value: %s", n)
		}
	}
	// Every online CPU is in exactly one core, and each core's threads are
	// what the kernel lists as its siblings.
	seen := map[int]bool{}
	for _, c := range tp.Cores {
		cpus, err := cpulist.Parse(c.CPUs)
		if err != nil || len(cpus) == 0 {
			t.Fatalf("core %+v: %v", c, err)
		}
		for _, cpu := range cpus {
			if seen[cpu] {
				t.Errorf("CPU %d in two cores", cpu)
			}
			seen[cpu] = true
			sib, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu))
			if err == nil && strings.TrimSpace(string(sib)) != c.CPUs {
				t.Errorf("core %+v: CPU %d's siblings are %q", c, cpu, strings.TrimSpace(string(sib)))
			}
		}
	}
	if online, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if want, _ := cpulist.Parse(strings.TrimSpace(string(online))); len(seen) != len(want) {
			t.Errorf("%d CPUs in cores, %d online (%s)", len(seen), len(want), strings.TrimSpace(string(online)))
		}
	}
	for _, g := range tp.GPUs {
		if g.HostBridge == "" {
			t.Errorf("GPU %s not placed in the hierarchy", g.BusID)
		}
	}
	for _, p := range tp.Paths {
		if p.Type == topostate.PathUnknown {
			t.Errorf("path %s-%s unclassified", p.A, p.B)
		}
	}
	for _, b := range tp.Bridges {
		if b.ACS.Status == "unknown" && os.Geteuid() == 0 {
			t.Errorf("bridge %s: ACS unknown as root: %s", b.BusID, b.ACS.Reason)
		}
	}
	if len(tp.GPUs) == 0 {
		m := tp.Matrix()
		if len(m.Rows) != len(tp.NICs) || tp.GPUSource != "sysfs" {
			t.Errorf("no GPUs, yet the matrix has %d rows for %d NICs", len(m.Rows), len(tp.NICs))
		}
	}
	if _, err := os.Stat("/sys/class/infiniband"); err != nil && len(tp.NICs) != 0 {
		t.Errorf("no /sys/class/infiniband, yet NICs %+v", tp.NICs)
	}
	b, err := json.Marshal(tp)
	if err != nil {
		t.Fatal(err)
	}
	// A capture of this machine reads the same as the machine.
	dst := t.TempDir()
	if notes, err := Capture("", "", dst); err != nil || len(notes) != 0 {
		t.Errorf("capturing /sys: %v, notes %q", err, notes)
	}
	captured, err := Collect(context.Background(), Options{SysfsRoot: dst + "/sys", ProcfsRoot: dst + "/proc"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Relocate(captured, "/sys", "/proc"); err != nil {
		t.Fatal(err)
	}
	if c, _ := json.Marshal(captured); string(c) != string(b) {
		t.Errorf("the capture of this machine reads differently:\n%s\n%s", b, c)
	}
	var back topostate.Topology
	if err := json.Unmarshal(b, &back); err != nil || back.Virtualization != tp.Virtualization || len(back.GPUs) != len(tp.GPUs) {
		t.Errorf("JSON round trip: %v", err)
	}
}
