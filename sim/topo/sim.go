// Package sim builds the sysfs and procfs of a simulated DGX node for
// --simulate: the same models as the NVML simulation, with the same GPU bus
// IDs, so `gpuprobe topo --simulate dgx-h100` joins NVML's GPUs to a PCIe
// tree. Each model has 8 GPUs and 8 ConnectX NICs behind 4 PCIe switches
// (one GPU pair and its two NICs per switch, each switch on its own root
// complex), on 2 NUMA nodes.
//
// The tree is generated in memory and written to a fresh temporary
// directory per collection (a few hundred small files, milliseconds), so
// the reading code is exactly the one that reads /sys, and nothing
// outlives the process.
package topo

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/busid"
	"io/fs"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	sysfake "github.com/gpuprobe/gpuprobe/sim/sysfs"
	"github.com/gpuprobe/gpuprobe/topo/fstree"
)

// model is simulate's table entry, with the CPU lists in sysfs's spelling.
type model struct {
	simulate.Model
	cpus [2]string
}

func lookup(name string) (model, bool) {
	m, ok := simulate.Lookup(name)
	if !ok {
		return model{}, false
	}
	out := model{Model: m}
	for s := range 2 {
		var cpus []int
		for _, r := range m.CPUs[s] {
			for c := r[0]; c <= r[1]; c++ {
				cpus = append(cpus, c)
			}
		}
		out.cpus[s] = cpulist.Format(cpus)
	}
	return out, true
}

func init() {
	simulate.Register(simulate.FaultDoc{Name: "acs-redirect", Arg: "BRIDGE",
		Effect: "ACS ReqRedir/CmpltRedir enabled on a root or switch downstream port (bus ID; default: the switch port above GPU 0), so GPU<->NIC P2P detours through the root complex"})
	simulate.Register(simulate.FaultDoc{Name: "no-peermem", Arg: "",
		Effect: "nvidia_peermem not loaded (and the proprietary driver, so no DMA-BUF path): GPUDirect RDMA is off"})
	simulate.Register(simulate.FaultDoc{Name: "efa", Arg: "",
		Effect: "the RDMA NICs are AWS Elastic Fabric Adapters (PCI 1d0f:efa1, driver efa, rdmapNs0 in /sys/class/infiniband) instead of ConnectX HCAs: NCCL needs the aws-ofi-nccl plugin (container.net_plugin)"})
	simulate.Register(simulate.FaultDoc{Name: "ib-down", Arg: "HCA",
		Effect: "port 1 of the RDMA device (default mlx5_0) is DOWN/Polling (cable or switch port)"})
}

// Bridge BDFs of a model, for tests and the fault's default.
type layout struct {
	rootPort, upstream string
	down               [4]string // GPU a, NIC a, GPU b, NIC b
	gpus, nics         [2]string
	host               string
	numa               int
}

// switches lays out the four switches: GPUs 2k and 2k+1 with their NICs
// (GPU bus + 1) behind switch k. The bridge numbers come from the first
// GPU's bus, the way firmware numbers a switch's buses below its root
// port; sysfs only shows the nesting, which is what matters.
func (m model) switches() [4]layout {
	var out [4]layout
	for k := 0; k < 4; k++ {
		g0, _ := busOf(m.BusIDs[2*k])
		g1, _ := busOf(m.BusIDs[2*k+1])
		l := layout{
			host:     fmt.Sprintf("pci0000:%02x", g0-4),
			rootPort: fmt.Sprintf("0000:%02x:01.0", g0-4),
			upstream: fmt.Sprintf("0000:%02x:00.0", g0-3),
			gpus:     [2]string{m.BusIDs[2*k], m.BusIDs[2*k+1]},
			nics:     [2]string{fmt.Sprintf("0000:%02x:00.0", g0+1), fmt.Sprintf("0000:%02x:00.0", g1+1)},
			numa:     k / 2,
		}
		for i := range l.down {
			l.down[i] = fmt.Sprintf("0000:%02x:%02x.0", g0-2, i)
		}
		out[k] = l
	}
	return out
}

func busOf(id string) (int, error) {
	parts := strings.Split(id, ":")
	if len(parts) != 3 {
		return 0, fmt.Errorf("bus ID %q", id)
	}
	v, err := strconv.ParseUint(parts[1], 16, 8)
	return int(v), err
}

// ACS as the HGX switch and root ports report it (real Dell XE9680 H100
// capture): root ports at 0x220, Broadcom PEX890xx downstream ports at
// 0x170, control all clear; switch upstream ports have no ACS.
const (
	rootACSOffset = 0x220
	rootACSCap    = 0x001f
	downACSOffset = 0x170
	downACSCap    = 0x005f
	// redirectCtl is what Linux's pci_std_enable_acs() writes when an IOMMU
	// asks for isolation: SrcValid, ReqRedir, CmpltRedir, UpstreamFwd.
	redirectCtl = 0x001d
)

// Build returns the tree of a simulated node with spec's faults applied.
func Build(spec *simulate.Spec) (*fstree.Tree, error) {
	m, ok := lookup(spec.Model)
	if !ok {
		return nil, fmt.Errorf("simulate: no sysfs model for %q", spec.Model)
	}
	f, err := readFaults(spec, m)
	if err != nil {
		return nil, err
	}
	mc := sysfake.New()
	mc.NUMA(map[int]string{0: m.cpus[0], 1: m.cpus[1]})
	group := 0
	nextGroup := func() string { group++; return strconv.Itoa(group) }
	const gen5 = "32.0 GT/s PCIe"
	nicIndex := 0
	acsApplied := false
	for _, l := range m.switches() {
		cpus := m.cpus[l.numa]
		acs := func(off int, capb uint16, bus string) []byte {
			ctl := uint16(0)
			if f.acsBridge == bus {
				ctl, acsApplied = redirectCtl, true
			}
			return sysfake.Config(0, 0, 0x060400, &sysfake.ACSRegs{Offset: off, Cap: capb, Ctl: ctl})
		}
		add := func(d sysfake.PCI) error {
			d.NUMA, d.CPUs, d.Speed, d.Width = l.numa, cpus, gen5, 16
			d.IOMMUGroup = nextGroup()
			if d.Config != nil {
				// The synthesised header carries the real IDs.
				c := sysfake.Config(d.Vendor, d.Device, d.Class, nil)
				copy(d.Config[:16], c[:16])
			}
			return mc.AddPCI(d)
		}
		if err := add(sysfake.PCI{BusID: l.rootPort, Parent: l.host, Vendor: 0x8086, Device: 0x352a, Class: 0x060400,
			Driver: "pcieport", Config: acs(rootACSOffset, rootACSCap, l.rootPort)}); err != nil {
			return nil, err
		}
		if err := add(sysfake.PCI{BusID: l.upstream, Parent: l.rootPort, Vendor: 0x1000, Device: 0xc030, Class: 0x060400,
			Driver: "pcieport"}); err != nil {
			return nil, err
		}
		for i, dn := range l.down {
			if err := add(sysfake.PCI{BusID: dn, Parent: l.upstream, Vendor: 0x1000, Device: 0xc030, Class: 0x060400,
				Driver: "pcieport", Config: acs(downACSOffset, downACSCap, dn)}); err != nil {
				return nil, err
			}
			if i%2 == 0 {
				if err := add(sysfake.PCI{BusID: l.gpus[i/2], Parent: dn, Vendor: 0x10de, Device: m.GPUDevice, Class: 0x030200, Driver: "nvidia"}); err != nil {
					return nil, err
				}
				continue
			}
			nic := l.nics[i/2]
			bus, _ := busOf(nic)
			if f.efa {
				// An EFA device as sysfs shows it on a p4d/p5 instance: the
				// Amazon vendor ID, the efa driver, rdmap<bus>s<slot>
				// (systemd's predictable name), one port whose link layer
				// EFA reports as Unspecified.
				if err := add(sysfake.PCI{BusID: nic, Parent: dn, Vendor: 0x1d0f, Device: 0xefa1, Class: 0x020000, Driver: "efa"}); err != nil {
					return nil, err
				}
				nicIndex++
				if err := mc.AddIB(sysfake.IB{Name: fmt.Sprintf("rdmap%ds0", bus), BusID: nic, FWVer: "0.0.0.0",
					Ports: []sysfake.IBPort{{State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "100 Gb/sec (4X EDR)", LinkLayer: "Unspecified"}}}); err != nil {
					return nil, err
				}
				continue
			}
			if err := add(sysfake.PCI{BusID: nic, Parent: dn, Vendor: 0x15b3, Device: m.NICDevice, Class: 0x020700, Driver: "mlx5_core"}); err != nil {
				return nil, err
			}
			name := "mlx5_" + strconv.Itoa(nicIndex)
			nicIndex++
			port := sysfake.IBPort{State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: m.Rate, LinkLayer: "InfiniBand"}
			if f.ibDown == name {
				port = sysfake.IBPort{State: "1: DOWN", PhysState: "2: Polling", Rate: "10 Gb/sec (4X SDR)", LinkLayer: "InfiniBand"}
			}
			if err := mc.AddIB(sysfake.IB{Name: name, BusID: nic, HCAType: m.HCAType, FWVer: m.FW, BoardID: "MT_0000000838",
				Ports: []sysfake.IBPort{port}, NetDevs: []string{fmt.Sprintf("ibp%ds0", bus)}}); err != nil {
				return nil, err
			}
		}
	}
	if f.acsBridge != "" && !acsApplied {
		return nil, fmt.Errorf("fault acs-redirect=%s: no bridge with ACS there in the simulated %s (switch downstream ports: %s)", f.acsBridge, spec.Model, strings.Join(m.ports(), ", "))
	}
	if f.ibDown != "" && nicIndex > 0 && !mc.Tree.Has("sys/class/infiniband/"+f.ibDown) {
		return nil, fmt.Errorf("fault ib-down=%s: no such device (mlx5_0..mlx5_%d)", f.ibDown, nicIndex-1)
	}
	host(mc, m, f, group)
	return mc.Tree, nil
}

// host writes the node-wide files: DMI, CPU flags, kernel, driver, IOMMU
// and peer memory, as on a DGX running DGX OS.
func host(mc *sysfake.Machine, m model, f faults, groups int) {
	mc.File("sys/class/dmi/id/sys_vendor", "NVIDIA")
	mc.File("sys/class/dmi/id/product_name", m.Product)
	if m.Board != "" {
		mc.File("sys/class/dmi/id/board_name", m.Board)
	}
	mc.File("sys/class/dmi/id/bios_vendor", "American Megatrends International, LLC.")
	var cpuinfo strings.Builder
	for i := 0; i < 2; i++ {
		fmt.Fprintf(&cpuinfo, "processor\t: %d\nvendor_id\t: GenuineIntel\nphysical id\t: %d\n"+
			"flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc vmx smx est avx2 avx512f\n\n", i, i)
	}
	mc.File("proc/cpuinfo", strings.TrimRight(cpuinfo.String(), "\n"))
	// CPU topology as Linux numbers a two-socket Intel server: socket s's
	// cores first (one range), their hyperthread siblings after all cores.
	for s := range 2 {
		cores, sibs := m.CPUs[s][0], m.CPUs[s][1]
		for i := 0; i <= cores[1]-cores[0]; i++ {
			for _, cpu := range []int{cores[0] + i, sibs[0] + i} {
				if cpu > sibs[1] && cpu != cores[0]+i {
					continue
				}
				mc.File(fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu), strconv.Itoa(s))
				mc.File(fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/core_id", cpu), strconv.Itoa(i))
			}
		}
	}
	mc.File("proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-"+m.Kernel+" root=/dev/mapper/vg-root ro intel_iommu=on iommu=pt")
	mc.File("proc/sys/kernel/osrelease", m.Kernel)
	// A day up, so the simulated XIDs (logged an hour ago) have a time.
	mc.File("proc/uptime", "86400.00 171234.56")
	for g := 1; g <= groups; g++ {
		mc.File(fmt.Sprintf("sys/kernel/iommu_groups/%d/type", g), "identity")
	}
	module := "NVIDIA UNIX Open Kernel Module for x86_64"
	if f.noPeermem {
		module = "NVIDIA UNIX x86_64 Kernel Module"
	} else {
		mc.File("sys/module/nvidia_peermem/version", m.Driver)
	}
	mc.File("proc/driver/nvidia/version", fmt.Sprintf("NVRM version: %s  %s  Release Build  (dvs-builder@U16-I3-C02-3)  Thu Feb  1 00:00:00 UTC 2024\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)", module, m.Driver))
}

// ports lists a model's switch ports, for error messages.
func (m model) ports() []string {
	var out []string
	for _, l := range m.switches() {
		out = append(out, l.down[:]...)
	}
	return out
}

type faults struct {
	acsBridge string
	noPeermem bool
	ibDown    string
	efa       bool
}

func readFaults(spec *simulate.Spec, m model) (faults, error) {
	var f faults
	for _, fl := range spec.Has("acs-redirect") {
		f.acsBridge = m.switches()[0].down[0]
		if fl.Value != "" {
			id, err := busid.Parse(fl.Value)
			if err != nil {
				return f, fmt.Errorf("fault acs-redirect=%s: %w", fl.Value, err)
			}
			f.acsBridge = id.String()
		}
	}
	f.noPeermem = len(spec.Has("no-peermem")) > 0
	f.efa = len(spec.Has("efa")) > 0
	for _, fl := range spec.Has("ib-down") {
		f.ibDown = "mlx5_0"
		if fl.Value != "" {
			f.ibDown = fl.Value
		}
	}
	return f, nil
}

// FS is the simulated node's tree in memory, rooted at "/": its sysfs is at
// /sys and its procfs at /proc.
func FS(spec *simulate.Spec) (fs.FS, error) {
	t, err := Build(spec)
	if err != nil {
		return nil, err
	}
	return t.FS()
}
