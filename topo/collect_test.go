package topo

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	sysfake "github.com/gpuprobe/gpuprobe/sim/sysfs"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"github.com/gpuprobe/gpuprobe/topo/fstree"
)

func flat(t *testing.T, name, prefix string) *fstree.Tree {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := fstree.ParseFlat(f, name, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// prometheus/procfs's fixtures were captured from real hosts: an AMD box
// (numa_node -1, an IOMMU group, an NVMe behind a root port) and an Intel
// E810 on NUMA 1, plus three RDMA devices without device links.
func TestProcfsFixtures(t *testing.T) {
	tr := flat(t, "sysfs/procfs_fixtures_sys_bus_pci_devices.txt", "")
	tr.Merge(flat(t, "sysfs/procfs_fixtures_sys_class_infiniband.txt", ""))
	sys, proc := writeTree(t, tr)
	tp, err := Collect(context.Background(), Options{SysfsRoot: sys, ProcfsRoot: proc})
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.GPUs) != 0 || tp.GPUSource != "sysfs" {
		t.Errorf("GPUs = %+v", tp.GPUs)
	}
	var names []string
	for _, n := range tp.NICs {
		names = append(names, n.Name)
	}
	if strings.Join(names, ",") != "hfi1_0,mlx4_0,mlx5_0" {
		t.Fatalf("NICs = %v", names)
	}
	mlx4 := tp.NICs[1]
	if len(mlx4.Ports) != 2 || mlx4.Ports[1].RateGbps != 40 || !mlx4.Ports[1].Active() || mlx4.BusID != "" {
		t.Errorf("mlx4_0 = %+v", mlx4)
	}
	// The fixture's mlx5_0 says phys_state "4: ACTIVE" (real HCAs say
	// "5: LinkUp"): not a physical LinkUp, so not active.
	if p := tp.NICs[2].Ports[0]; p.Active() || p.RateGbps != 25 {
		t.Errorf("mlx5_0 port = %+v", p)
	}
	if len(tp.Paths) != 0 || !strings.Contains(strings.Join(tp.Notes, "\n"), "mlx4_0 has no device link") {
		t.Errorf("paths %v, notes %q", tp.Paths, tp.Notes)
	}
	if tp.IOMMU.Mode != "off" {
		// The NVMe links to group 11, but the fixture has no
		// /sys/kernel/iommu_groups to say what the group does.
		t.Errorf("IOMMU = %+v", tp.IOMMU)
	}
}

// gpud's capture of an H100 node's /sys/class/infiniband: eight ConnectX-7
// NDR ports and a RoCE bond. One device with a file missing (fw_ver, taken
// out here) must not hide the others.
func TestGpudIBTree(t *testing.T) {
	tr := flat(t, "ib/gpud_h100_sys-class-infiniband_tree.txt", "sys/class/infiniband")
	tr.Dir("sys/bus/pci/devices")
	tr.Remove("sys/class/infiniband/mlx5_9/fw_ver")
	sys, proc := writeTree(t, tr)
	tp, err := Collect(context.Background(), Options{SysfsRoot: sys, ProcfsRoot: proc})
	if err != nil {
		t.Fatal(err)
	}
	var bond, broken *topostate.NIC
	active := 0
	for i := range tp.NICs {
		n := &tp.NICs[i]
		switch n.Name {
		case "mlx5_bond_0":
			bond = n
			continue
		case "mlx5_9":
			broken = n
			continue
		}
		if len(n.Ports) == 1 && n.Ports[0].Active() && n.Ports[0].RateGbps == 400 && n.Ports[0].LinkLayer == "InfiniBand" && n.HCAType == "MT4129" {
			active++
		}
	}
	if active != 7 || bond == nil || len(bond.Ports) != 1 || bond.Ports[0].LinkLayer != "Ethernet" || bond.Ports[0].RateGbps != 200 {
		t.Errorf("%d active NDR ports, bond %+v", active, bond)
	}
	if broken == nil || !strings.Contains(broken.Error, "fw_ver") || len(broken.Ports) != 0 {
		t.Errorf("mlx5_9 without fw_ver = %+v", broken)
	}
}

func TestMissingPCIIsAnError(t *testing.T) {
	_, err := Collect(context.Background(), Options{SysfsRoot: t.TempDir(), ProcfsRoot: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "bus/pci/devices") {
		t.Errorf("err = %v, want one naming bus/pci/devices", err)
	}
	if _, err := Collect(context.Background(), Options{SysfsRoot: t.TempDir(), Virt: "maybe"}); err == nil {
		t.Error("--virt=maybe accepted")
	}
}

func TestCollectDeadline(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := Collect(ctx, Options{SysfsRoot: t.TempDir()}); err == nil {
		t.Error("an expired deadline returned no error")
	}
}

func TestVirtualization(t *testing.T) {
	cases := []struct {
		name     string
		files    map[string]string
		override string
		kind     string
		hyper    string
		evidence string
	}{
		{"bare metal", map[string]string{"proc/cpuinfo": "processor\t: 0\nflags\t\t: fpu vme sse2", "sys/class/dmi/id/sys_vendor": "Dell Inc."}, "", "none", "", `DMI sys_vendor "Dell Inc."`},
		{"kvm by flag", map[string]string{"proc/cpuinfo": "flags\t\t: fpu hypervisor sse2"}, "", "vm", "", `CPU flag "hypervisor"`},
		{"qemu by DMI", map[string]string{"proc/cpuinfo": "flags\t\t: fpu", "sys/class/dmi/id/sys_vendor": "QEMU"}, "", "vm", "qemu", "DMI sys_vendor"},
		{"hyper-v", map[string]string{"sys/class/dmi/id/product_name": "Virtual Machine", "sys/class/dmi/id/sys_vendor": "Microsoft Corporation"}, "", "vm", "microsoft", "Virtual Machine"},
		{"ec2 metal", map[string]string{"sys/class/dmi/id/sys_vendor": "Amazon EC2", "sys/class/dmi/id/product_name": "p5.48xlarge.metal", "proc/cpuinfo": "flags\t\t: fpu"}, "", "none", "", "metal"},
		{"ec2 vm", map[string]string{"sys/class/dmi/id/sys_vendor": "Amazon EC2", "sys/class/dmi/id/product_name": "p5.48xlarge", "proc/cpuinfo": "flags\t\t: fpu hypervisor"}, "", "vm", "amazon", "Amazon EC2"},
		{"xen dom0", map[string]string{"sys/hypervisor/type": "xen", "proc/xen/capabilities": "control_d", "proc/cpuinfo": "flags\t\t: fpu"}, "", "none", "", "no \"hypervisor\""},
		{"xen domU", map[string]string{"sys/hypervisor/type": "xen", "proc/cpuinfo": "flags\t\t: fpu"}, "", "vm", "xen", "hypervisor/type"},
		{"override", map[string]string{"proc/cpuinfo": "flags\t\t: fpu hypervisor"}, "none", "none", "", "--virt=none (detection said vm"},
		{"nothing readable", map[string]string{}, "", "none", "", "not readable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := sysfake.New()
			for p, v := range c.files {
				m.File(p, v)
			}
			m.Tree.Dir("sys/bus/pci/devices")
			tp := collectMachine(t, m, Options{Virt: c.override})
			v := tp.Virtualization
			if v.Kind != c.kind || v.Hypervisor != c.hyper || !strings.Contains(v.Evidence, c.evidence) {
				t.Errorf("got %+v, want %s/%s with %q", v, c.kind, c.hyper, c.evidence)
			}
		})
	}
	// The SMBIOS "virtual machine" bit decides when the vendor is unknown.
	m := sysfake.New()
	raw := make([]byte, 0x18)
	raw[1], raw[0x13] = 0x18, 0x10
	m.Tree.Bytes("sys/firmware/dmi/entries/0-0/raw", raw)
	m.Tree.Dir("sys/bus/pci/devices")
	if v := collectMachine(t, m, Options{}).Virtualization; v.Kind != "vm" || !strings.Contains(v.Evidence, "SMBIOS") {
		t.Errorf("SMBIOS VM bit: %+v", v)
	}
}

func TestIOMMUAndPeerMem(t *testing.T) {
	build := func(groupType, cmdline, driver, kernel string, peermem string) *topostate.Topology {
		m := sysfake.New()
		addAll(t, m, sysfake.PCI{BusID: "0000:00:01.0", Parent: "pci0000:00"})
		g := gpu("0000:01:00.0", "0000:00:01.0", 0)
		g.IOMMUGroup = "7"
		addAll(t, m, g)
		if groupType != "" {
			m.File("sys/kernel/iommu_groups/7/type", groupType)
		}
		m.File("proc/cmdline", cmdline)
		if driver != "" {
			m.File("proc/driver/nvidia/version", driver)
		}
		m.File("proc/sys/kernel/osrelease", kernel)
		if peermem != "" {
			m.File(peermem, "1.0")
		}
		return collectMachine(t, m, Options{})
	}
	open := "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build"
	prop := "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Release Build"
	for _, c := range []struct {
		name          string
		tp            *topostate.Topology
		mode, module  string
		dmabuf        bool
		translatedLen int
	}{
		{"translated", build("DMA-FQ", "intel_iommu=on", prop, "5.15.0", "sys/module/nvidia_peermem/version"), "translated", "nvidia_peermem", false, 1},
		{"passthrough", build("identity", "intel_iommu=on iommu=pt", open, "6.8.0-45-generic", ""), "passthrough", "", true, 0},
		{"old kernel pt", build("", "amd_iommu=on iommu=pt", open, "5.4.0", "sys/kernel/mm/memory_peers/nv_mem/version"), "passthrough", "nv_peer_mem", false, 0},
		{"old kernel", build("", "", "", "5.4.0", ""), "unknown", "", false, 0},
	} {
		if c.tp.IOMMU.Mode != c.mode || len(c.tp.IOMMU.Translated) != c.translatedLen {
			t.Errorf("%s: IOMMU %+v", c.name, c.tp.IOMMU)
		}
		if c.tp.PeerMem.Module != c.module || c.tp.PeerMem.DMABuf != c.dmabuf || c.tp.PeerMem.DMABufReason == "" {
			t.Errorf("%s: peer memory %+v", c.name, c.tp.PeerMem)
		}
	}
	m := sysfake.New()
	m.Tree.Dir("sys/bus/pci/devices")
	if tp := collectMachine(t, m, Options{}); tp.IOMMU.Mode != "off" {
		t.Errorf("no groups: %+v", tp.IOMMU)
	}
}

// What a non-root reader gets (64 bytes) is "unknown", what a conventional
// device has (256 bytes) is "absent", and a real redirecting config (the
// Haswell-E root port of pciutils' cap-aer-root, used here as a switch's
// downstream port) is found on the path between a GPU and a NIC.
func TestBridgeConfigReadability(t *testing.T) {
	real := parseLspci(t, readTestdata(t, "acs/pciutils_test_cap-aer-root.txt"))[0].config
	m := sysfake.New()
	full := sysfake.Config(0x10b5, 0x8747, 0x060400, &sysfake.ACSRegs{Offset: 0xf24, Cap: 0x7f})
	addAll(t, m,
		sysfake.PCI{BusID: "0000:00:02.0", Parent: "pci0000:00", Config: full[:64]},
		sysfake.PCI{BusID: "0000:02:00.0", Parent: "0000:00:02.0", Config: full[:256]},
		sysfake.PCI{BusID: "0000:03:08.0", Parent: "0000:02:00.0", Config: real},
		sysfake.PCI{BusID: "0000:03:10.0", Parent: "0000:02:00.0", Config: full},
		gpu("0000:04:00.0", "0000:03:08.0", -1), nicFn("0000:05:00.0", "0000:03:10.0", -1))
	ib(t, m, "mlx5_0", "0000:05:00.0")
	tp := collectMachine(t, m, Options{})
	for id, want := range map[string]string{"0000:00:02.0": "unknown", "0000:02:00.0": "absent", "0000:03:08.0": "present", "0000:03:10.0": "present"} {
		b := tp.Bridge(id)
		if b == nil || b.ACS.Status != want {
			t.Errorf("%s: %+v, want %s", id, b, want)
		}
	}
	if r := tp.Bridge("0000:00:02.0").ACS.Reason; !strings.Contains(r, "needs root or CAP_SYS_ADMIN") {
		t.Errorf("reason %q", r)
	}
	if b := tp.Bridge("0000:03:08.0"); !b.ACS.Redirect || b.ACS.Offset != 0x110 || b.Role != "switch_downstream" {
		t.Errorf("real redirecting config: %+v", b.ACS)
	}
	p := findPath(tp, "GPU0", "mlx5_0")
	if p == nil || p.Type != topostate.PathPIX || strings.Join(p.Bridges, ",") != "0000:03:08.0,0000:02:00.0,0000:03:10.0" {
		t.Errorf("GPU0-mlx5_0 = %+v", p)
	}
}

// The evidence is printed as it stands after the mode (gpuprobe check -v,
// iommu.mode), so each case holds the whole text. A rename once put Go
// identifiers into it ("no topostate.IOMMU groups", seen on a real H200).
func TestIOMMUEvidenceText(t *testing.T) {
	for _, c := range []struct {
		name              string
		groups            map[string]string // group -> type file; nil: no iommu_groups directory
		gpuGroup, cmdline string
		mode, evidence    string // "<sys>" stands for the sysfs root
	}{
		{name: "no groups", cmdline: "quiet",
			mode: "off", evidence: "no IOMMU groups in <sys>/kernel/iommu_groups"},
		{name: "no GPU or NIC in a group", groups: map[string]string{"3": "DMA"}, cmdline: "quiet",
			mode: "passthrough", evidence: "no GPU or NIC is in an IOMMU group (<sys>/kernel/iommu_groups)"},
		{name: "identity", groups: map[string]string{"7": "identity"}, gpuGroup: "7", cmdline: "iommu=pt",
			mode: "passthrough", evidence: "IOMMU group type identity in <sys>/kernel/iommu_groups"},
		{name: "translated", groups: map[string]string{"7": "DMA-FQ"}, gpuGroup: "7", cmdline: "intel_iommu=on",
			mode: "translated", evidence: "IOMMU group type DMA-FQ in <sys>/kernel/iommu_groups"},
		{name: "old kernel, iommu=pt", groups: map[string]string{"7": ""}, gpuGroup: "7", cmdline: "amd_iommu=on iommu=pt",
			mode: "passthrough", evidence: "kernel command line has amd_iommu=on iommu=pt (no group type files: kernel older than 5.11)"},
		{name: "old kernel", groups: map[string]string{"7": ""}, gpuGroup: "7", cmdline: "quiet",
			mode: "unknown", evidence: "IOMMU groups have no type file (kernel older than 5.11) and the command line has no iommu=pt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := sysfake.New()
			addAll(t, m, sysfake.PCI{BusID: "0000:00:01.0", Parent: "pci0000:00"})
			g := gpu("0000:01:00.0", "0000:00:01.0", 0)
			g.IOMMUGroup = c.gpuGroup
			addAll(t, m, g)
			for id, typ := range c.groups {
				if typ == "" {
					m.Tree.Dir("sys/kernel/iommu_groups/" + id + "/devices")
				} else {
					m.File("sys/kernel/iommu_groups/"+id+"/type", typ)
				}
			}
			m.File("proc/cmdline", c.cmdline)
			sys, proc := writeTree(t, m.Tree)
			tp, err := Collect(context.Background(), Options{SysfsRoot: sys, ProcfsRoot: proc})
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(c.evidence, "<sys>", sys)
			if tp.IOMMU.Mode != c.mode || tp.IOMMU.Evidence != want {
				t.Errorf("got %s %q\nwant %s %q", tp.IOMMU.Mode, tp.IOMMU.Evidence, c.mode, want)
			}
		})
	}
}

// The other sentences the collector writes for people: a bridge without
// ACS (bridges[].acs.reason) and an NVML GPU the tree does not hold (a
// topology note).
func TestCollectorProseText(t *testing.T) {
	m := sysfake.New()
	addAll(t, m,
		sysfake.PCI{BusID: "0000:00:02.0", Parent: "pci0000:00", Config: sysfake.Config(0x10b5, 0x8747, 0x060400, nil)},
		gpu("0000:04:00.0", "0000:00:02.0", -1), nicFn("0000:05:00.0", "0000:00:02.0", -1))
	ib(t, m, "mlx5_0", "0000:05:00.0")
	sys, proc := writeTree(t, m.Tree)
	tp, err := Collect(context.Background(), Options{SysfsRoot: sys, ProcfsRoot: proc,
		GPUs: []GPUHint{{Index: 0, BusID: "0000:04:00.0"}, {Index: 1, BusID: "0000:09:00.0"}}})
	if err != nil {
		t.Fatal(err)
	}
	if b := tp.Bridge("0000:00:02.0"); b == nil || b.ACS.Status != "absent" || b.ACS.Reason != "no ACS in the extended capability list" {
		t.Errorf("bridge without ACS: %+v", b)
	}
	note := "NVML GPU 1 (0000:09:00.0) is not under " + sys + "/bus/pci/devices"
	if !slices.Contains(tp.Notes, note) {
		t.Errorf("notes %q, want %q among them", tp.Notes, note)
	}
}
