// Package sysfake lays out fake sysfs and procfs trees the way the kernel
// does: PCI functions nested under their bridges in /sys/devices with
// /sys/bus/pci/devices links, RDMA devices under their PCI function with
// /sys/class/infiniband links, NUMA nodes, modules. The --simulate node and
// the topo tests build their trees with it, so both exercise the same
// reading code as a real /sys.
package sysfs

import (
	"encoding/binary"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/gpuprobe/gpuprobe/topo/fstree"
)

// Machine is a tree under construction. Paths in the tree start with
// "sys/" and "proc/".
type Machine struct {
	Tree *fstree.Tree
	// dirs maps a PCI address (or a host bridge "pci0000:15") to its
	// directory under sys/devices.
	dirs map[string]string
}

// New starts an empty machine.
func New() *Machine {
	return &Machine{Tree: fstree.New(), dirs: map[string]string{}}
}

// PCI describes one PCI function.
type PCI struct {
	BusID string // 0000:19:00.0
	// Parent is the bridge's bus ID, or a host bridge directory
	// ("pci0000:15") for a root port or a device on a root bus.
	Parent string
	Vendor uint16
	Device uint16
	Class  uint32 // 0x030200
	// NUMA is the numa_node value (-1: none given).
	NUMA   int
	CPUs   string // local_cpulist; empty leaves the file out
	Speed  string // "32.0 GT/s PCIe"; empty leaves the link files out
	Width  int
	Driver string
	// Config is the config space; nil synthesises 4 KiB from the IDs.
	Config []byte
	// IOMMUGroup, when non-empty, links the function into that group.
	IOMMUGroup string
}

// Dir returns a function's directory under sys/devices ("" if unknown).
func (m *Machine) Dir(busID string) string { return m.dirs[busID] }

// AddPCI adds a function below its parent, which must already exist
// (host bridges are created on first use).
func (m *Machine) AddPCI(d PCI) error {
	parent, ok := m.dirs[d.Parent]
	if !ok {
		if !strings.HasPrefix(d.Parent, "pci") {
			return fmt.Errorf("sysfake: parent %s of %s not added yet", d.Parent, d.BusID)
		}
		parent = "sys/devices/" + d.Parent
		m.dirs[d.Parent] = parent
		m.Tree.Dir(parent)
	}
	dir := parent + "/" + d.BusID
	m.dirs[d.BusID] = dir
	t := m.Tree
	// ../../../devices/...: from sys/bus/pci/devices back to sys/.
	t.Link("sys/bus/pci/devices/"+d.BusID, "../../../"+strings.TrimPrefix(dir, "sys/"))
	t.Attr(dir+"/vendor", fmt.Sprintf("0x%04x", d.Vendor))
	t.Attr(dir+"/device", fmt.Sprintf("0x%04x", d.Device))
	t.Attr(dir+"/class", fmt.Sprintf("0x%06x", d.Class))
	t.Attr(dir+"/numa_node", fmt.Sprint(d.NUMA))
	if d.CPUs != "" {
		t.Attr(dir+"/local_cpulist", d.CPUs)
	}
	if d.Speed != "" {
		t.Attr(dir+"/current_link_speed", d.Speed)
		t.Attr(dir+"/max_link_speed", d.Speed)
		t.Attr(dir+"/current_link_width", fmt.Sprint(d.Width))
		t.Attr(dir+"/max_link_width", fmt.Sprint(d.Width))
	}
	if d.Driver != "" {
		t.Link(dir+"/driver", rel(dir, "sys/bus/pci/drivers/"+d.Driver))
	}
	if d.IOMMUGroup != "" {
		g := "sys/kernel/iommu_groups/" + d.IOMMUGroup
		t.Link(dir+"/iommu_group", rel(dir, g))
		t.Link(g+"/devices/"+d.BusID, rel(g+"/devices", dir))
	}
	cfg := d.Config
	if cfg == nil {
		cfg = Config(d.Vendor, d.Device, d.Class, nil)
	}
	t.Bytes(dir+"/config", cfg)
	return nil
}

// rel is the relative link from directory from to target (both tree paths).
func rel(from, target string) string {
	f, tg := strings.Split(from, "/"), strings.Split(target, "/")
	i := 0
	for i < len(f) && i < len(tg) && f[i] == tg[i] {
		i++
	}
	return strings.Repeat("../", len(f)-i) + strings.Join(tg[i:], "/")
}

// ACSRegs places an ACS capability in synthesised config space.
type ACSRegs struct {
	Offset int // 0x100..0xff8
	Cap    uint16
	Ctl    uint16
}

// Config synthesises a 4 KiB config space: the IDs and class in the
// header, and an extended capability list that holds ACS when given (after
// an AER capability, as real ports have it, unless ACS sits at 0x100).
func Config(vendor, device uint16, class uint32, acs *ACSRegs) []byte {
	b := make([]byte, 4096)
	binary.LittleEndian.PutUint16(b[0:], vendor)
	binary.LittleEndian.PutUint16(b[2:], device)
	b[9], b[10], b[11] = byte(class), byte(class>>8), byte(class>>16)
	if class>>8 == 0x0604 {
		b[14] = 1 // header type 1: PCI-to-PCI bridge
	}
	const aer, acsID = 0x0001, 0x000d
	if acs == nil {
		binary.LittleEndian.PutUint32(b[0x100:], 1<<16|aer)
		return b
	}
	off := acs.Offset &^ 3
	if off < 0x100 || off+8 > len(b) {
		off = 0x100
	}
	if off != 0x100 {
		binary.LittleEndian.PutUint32(b[0x100:], uint32(off)<<20|1<<16|aer)
	}
	binary.LittleEndian.PutUint32(b[off:], 1<<16|acsID)
	binary.LittleEndian.PutUint16(b[off+4:], acs.Cap)
	binary.LittleEndian.PutUint16(b[off+6:], acs.Ctl)
	return b
}

// IBPort is one port of an RDMA device, in sysfs spelling.
type IBPort struct {
	State     string // "4: ACTIVE"
	PhysState string // "5: LinkUp"
	Rate      string // "400 Gb/sec (4X NDR)"
	LinkLayer string // "InfiniBand"
}

// IB describes an RDMA device.
type IB struct {
	Name    string // mlx5_0
	BusID   string // its PCI function, which must exist
	HCAType string
	FWVer   string
	BoardID string
	Ports   []IBPort // port 1 first
	NetDevs []string
}

// AddIB adds an RDMA device under its PCI function, the class link, and
// its network interfaces.
func (m *Machine) AddIB(d IB) error {
	fn, ok := m.dirs[d.BusID]
	if !ok {
		return fmt.Errorf("sysfake: %s: PCI function %s not added", d.Name, d.BusID)
	}
	t := m.Tree
	dir := fn + "/infiniband/" + d.Name
	t.Link("sys/class/infiniband/"+d.Name, rel("sys/class/infiniband", dir))
	t.Link(dir+"/device", "../../../"+d.BusID)
	t.Attr(dir+"/fw_ver", d.FWVer)
	if d.HCAType != "" {
		t.Attr(dir+"/hca_type", d.HCAType)
	}
	if d.BoardID != "" {
		t.Attr(dir+"/board_id", d.BoardID)
	}
	for i, p := range d.Ports {
		pd := fmt.Sprintf("%s/ports/%d", dir, i+1)
		t.Attr(pd+"/state", p.State)
		t.Attr(pd+"/phys_state", p.PhysState)
		t.Attr(pd+"/rate", p.Rate)
		t.Attr(pd+"/link_layer", p.LinkLayer)
	}
	for _, n := range d.NetDevs {
		nd := fn + "/net/" + n
		t.Link("sys/class/net/"+n, rel("sys/class/net", nd))
		t.Link(nd+"/device", "../../../"+d.BusID)
		t.Attr(nd+"/operstate", "up")
	}
	return nil
}

// NUMA writes the NUMA nodes and their CPU lists.
func (m *Machine) NUMA(nodes map[int]string) {
	ids := make([]int, 0, len(nodes))
	for id := range nodes {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		m.Tree.Attr(fmt.Sprintf("sys/devices/system/node/node%d/cpulist", id), nodes[id])
	}
	if len(ids) > 0 {
		m.Tree.Attr("sys/devices/system/node/online", fmt.Sprintf("%d-%d", ids[0], ids[len(ids)-1]))
	}
}

// File writes any other attribute (DMI, module versions, procfs files).
func (m *Machine) File(p, value string) { m.Tree.Attr(path.Clean(p), value) }
