package topostate

import (
	"strconv"

	"github.com/gpuprobe/gpuprobe/internal/busid"
)

// Topology is what Collect found. It is plain data: it serialises to JSON
// inside the node state, and a check never needs anything else.
type Topology struct {
	// SysfsRoot and ProcfsRoot are the trees read ("simulated" for --simulate).
	SysfsRoot  string `json:"sysfs_root"`
	ProcfsRoot string `json:"procfs_root"`
	// GPUSource says where the GPU list came from: "nvml" (bus IDs from the
	// driver) or "sysfs" (PCI vendor 0x10de with a display or 3D class).
	GPUSource string `json:"gpu_source"`
	// NVLinkKnown is false when NVML gave no NVLink data: GPU pairs are then
	// classified by their PCIe path alone.
	NVLinkKnown    bool           `json:"nvlink_known"`
	Virtualization Virtualization `json:"virtualization"`
	// DMI is the machine's SMBIOS identity as the kernel exports it under
	// /sys/class/dmi/id; nil when the tree has no DMI (ARM boards without
	// SMBIOS, a captured tree without it). check/ reads the platform from it.
	DMI       *DMI       `json:"dmi,omitempty"`
	NUMANodes []NUMANode `json:"numa_nodes"`
	// Cores are the physical CPU cores in Slurm's logical core order
	// (gres.conf(5) Cores=: core 0 is the first core of the first socket,
	// as hwloc's "Core L#"): by package, then by lowest CPU number. Empty
	// when sysfs has no CPU topology.
	Cores []Core `json:"cores,omitempty"`
	GPUs  []GPU  `json:"gpus"`
	// PCIGPUs are the NVIDIA GPU functions on the PCI bus (vendor 0x10de,
	// class VGA 0x0300xx or 3D 0x0302xx: no NVSwitch, 0x0680, no HDMI
	// audio, 0x0403, no USB controller), SR-IOV virtual functions left out,
	// in bus order, each with the driver bound to it ("" when none), whether
	// NVML lists them or not. Absent from the JSON when the tree holds none,
	// and from a snapshot written before it was read: check then does not
	// compare NVML's GPUs with the bus, and says so.
	PCIGPUs []PCIFunction `json:"pci_gpus,omitempty"`
	NICs    []NIC         `json:"nics"`
	// Bridges are the PCI bridges on any GPU or NIC path, keyed by nothing:
	// find one with Bridge.
	Bridges []Bridge `json:"bridges"`
	// Paths holds one entry per unordered pair of GPUs and NICs.
	Paths   []Path  `json:"paths"`
	IOMMU   IOMMU   `json:"iommu"`
	PeerMem PeerMem `json:"peer_memory"`
	// Notes are things Collect could not read, and why; none is fatal.
	Notes []string `json:"notes,omitempty"`
}

// PCIFunction is what sysfs says about one PCI function.
type PCIFunction struct {
	BusID string `json:"bus_id"` // dddd:bb:dd.f, lower case
	// Vendor, Device and Class are as sysfs prints them ("0x10de", "0x030200").
	Vendor string `json:"vendor,omitempty"`
	Device string `json:"device,omitempty"`
	Class  string `json:"class,omitempty"`
	Driver string `json:"driver,omitempty"`
	// NUMANode is -1 when the firmware gave the device no proximity.
	NUMANode   int    `json:"numa_node"`
	LocalCPUs  string `json:"local_cpulist,omitempty"`
	Link       *Link  `json:"link,omitempty"`
	IOMMUGroup string `json:"iommu_group,omitempty"`
	HostBridge string `json:"host_bridge"` // the pciDDDD:BB directory it hangs off
	// Upstream lists the bridges from the root port down to the device's
	// own parent, as sysfs nests them.
	Upstream []string `json:"upstream,omitempty"`
}

// Link is a device's PCIe link as sysfs reports it.
type Link struct {
	CurrentSpeed string `json:"current_speed,omitempty"` // "32.0 GT/s PCIe"
	MaxSpeed     string `json:"max_speed,omitempty"`
	CurrentWidth int    `json:"current_width,omitempty"`
	MaxWidth     int    `json:"max_width,omitempty"`
}

// GPU is an NVIDIA GPU.
type GPU struct {
	// Index is NVML's index, or the PCI bus order when NVML is unavailable
	// (which is NVML's order too).
	Index int `json:"index"`
	PCIFunction
	// SwitchLinks counts NVLinks up to an NVSwitch; PeerLinks counts NVLinks
	// up directly to another GPU, by that GPU's bus ID.
	SwitchLinks int            `json:"nvswitch_links,omitempty"`
	PeerLinks   map[string]int `json:"nvlink_peers,omitempty"`
}

// NIC is an RDMA device of /sys/class/infiniband (InfiniBand, RoCE,
// Omni-Path, EFA): what NCCL's IB transport would use.
type NIC struct {
	// Index orders NICs the way nvidia-smi's NIC legend does (natural order
	// of the names).
	Index int    `json:"index"`
	Name  string `json:"name"` // mlx5_0
	// PCIFunction is empty when the device link is missing (some captures).
	PCIFunction
	HCAType   string   `json:"hca_type,omitempty"`
	FWVersion string   `json:"fw_ver,omitempty"`
	BoardID   string   `json:"board_id,omitempty"`
	NetDevs   []string `json:"netdevs,omitempty"`
	Ports     []IBPort `json:"ports"`
	// Error is why the device's attributes could not be read.
	Error string `json:"error,omitempty"`
}

// IBPort is one port of an RDMA device.
type IBPort struct {
	Port        int     `json:"port"`
	State       string  `json:"state"` // ACTIVE, DOWN, INIT, ARMED
	StateID     int     `json:"state_id"`
	PhysState   string  `json:"phys_state"` // LinkUp, Polling, Disabled
	PhysStateID int     `json:"phys_state_id"`
	RateGbps    float64 `json:"rate_gbps"`
	LinkLayer   string  `json:"link_layer"` // InfiniBand, Ethernet
}

// Active reports whether the port can carry traffic: the logical state is
// ACTIVE and the physical link is up. A physical state that was not read
// (an ibv_devinfo capture; sysfs always has phys_state) does not count
// against an ACTIVE port: a port reaches ACTIVE only over a LinkUp link
// (the IB port state machine; RoCE drivers report ACTIVE only with LinkUp).
func (p IBPort) Active() bool {
	return p.StateID == 4 && (p.PhysStateID == 5 || p.PhysState == "LinkUp" || p.PhysStateID == 0 && p.PhysState == "")
}

// StateText is the port's state as the checks print it: "DOWN/Polling",
// or "DOWN (physical state not read)" when there is no physical state.
func (p IBPort) StateText() string {
	if p.PhysState == "" {
		return p.State + " (physical state not read)"
	}
	return p.State + "/" + p.PhysState
}

// Bridge is a PCI bridge on some GPU or NIC path.
type Bridge struct {
	BusID  string `json:"bus_id"`
	Vendor string `json:"vendor,omitempty"`
	Device string `json:"device,omitempty"`
	// Role is root_port, switch_upstream or switch_downstream, from where
	// the bridge sits in the sysfs hierarchy.
	Role string   `json:"role"`
	ACS  ACSState `json:"acs"`
}

// ACSState is what the bridge's config space says about ACS.
type ACSState struct {
	// Status is "present", "absent" (the capability list has no ACS), or
	// "unknown" (config space could not be read far enough).
	Status string `json:"status"`
	// Reason explains absent and unknown ("needs root or CAP_SYS_ADMIN").
	Reason string `json:"reason,omitempty"`
	*ACS   `json:",omitempty"`
}

// Path is the connection between two devices (GPU or NIC).
type Path struct {
	A string `json:"a"` // "GPU0", "mlx5_3"
	B string `json:"b"`
	// ABusID and BBusID are the endpoints' PCI addresses.
	ABusID string `json:"a_bus_id"`
	BBusID string `json:"b_bus_id"`
	// Type is the nvidia-smi cell: NV#, PIX, PXB, PHB, NODE or SYS.
	Type string `json:"type"`
	// PCIe is the PCIe-only classification (what `nvidia-smi topo -mp`
	// shows); it equals Type unless NVLink connects the pair.
	PCIe    string `json:"pcie"`
	NVLinks int    `json:"nvlinks,omitempty"`
	// Bridges are the PCIe bridges P2P traffic crosses when the pair shares
	// a switch (PIX/PXB), in order from A to B; empty otherwise, because
	// through a host bridge the traffic reaches the root complex anyway.
	Bridges []string `json:"bridges,omitempty"`
}

// NUMANode is one node of /sys/devices/system/node.
// Core is one physical core: its package (socket), the kernel's core_id
// within it, and its hardware threads as OS CPU numbers.
type Core struct {
	Package int    `json:"package"`
	CoreID  int    `json:"core_id"`
	CPUs    string `json:"cpus"`
}

type NUMANode struct {
	ID      int    `json:"id"`
	CPUList string `json:"cpulist"`
}

// Virtualization says whether the node is a virtual machine, and how that
// was decided.
type Virtualization struct {
	// Kind is "none" (bare metal) or "vm".
	Kind string `json:"kind"`
	// Hypervisor names it when known (kvm, vmware, microsoft, xen, ...).
	Hypervisor string `json:"hypervisor,omitempty"`
	// Source is "detected" or "flag" (--virt overrode detection).
	Source string `json:"source"`
	// Evidence is the file and value that decided.
	Evidence string `json:"evidence"`
}

// DMI holds /sys/class/dmi/id/{sys_vendor,product_name,board_name} as
// read, trimmed of surrounding white space; an unreadable or absent file is
// an empty string.
type DMI struct {
	SysVendor   string `json:"sys_vendor,omitempty"`
	ProductName string `json:"product_name,omitempty"`
	BoardName   string `json:"board_name,omitempty"`
}

// VM reports whether the node is a virtual machine.
func (v Virtualization) VM() bool { return v.Kind == "vm" }

// IOMMU is the IOMMU's state as far as it matters to GPUDirect.
type IOMMU struct {
	// Mode is off (no IOMMU groups), passthrough (identity domains),
	// translated (DMA domains), mixed, or unknown.
	Mode string `json:"mode"`
	// Evidence names the files that decided.
	Evidence string `json:"evidence"`
	// Cmdline holds the iommu-related kernel parameters.
	Cmdline []string `json:"cmdline,omitempty"`
	// Translated lists the bus IDs of the GPUs and NICs whose IOMMU group
	// translates DMA.
	Translated []string `json:"translated,omitempty"`
}

// PeerMem is how GPU memory can be registered with the RDMA NICs.
type PeerMem struct {
	// Module is the loaded peer-memory module (nvidia_peermem, nv_peer_mem)
	// and Path the file NCCL would find; both empty when none is loaded.
	Module  string `json:"module,omitempty"`
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	// DMABuf says whether the DMA-BUF path is likely usable instead: the open
	// GPU kernel module on a kernel of 5.12 or later.
	DMABuf       bool   `json:"dmabuf"`
	DMABufReason string `json:"dmabuf_reason"`
	// Driver is the NVIDIA kernel module line of /proc/driver/nvidia/version.
	Driver string `json:"driver,omitempty"`
}

// Loaded reports whether a peer-memory module is present.
func (p PeerMem) Loaded() bool { return p.Module != "" }

// GPU returns the GPU with this bus ID, or nil.
func (t *Topology) GPU(busID string) *GPU {
	id := busid.Canonical(busID)
	for i := range t.GPUs {
		if t.GPUs[i].BusID == id {
			return &t.GPUs[i]
		}
	}
	return nil
}

// Bridge returns the bridge with this bus ID, or nil.
func (t *Topology) Bridge(busID string) *Bridge {
	id := busid.Canonical(busID)
	for i := range t.Bridges {
		if t.Bridges[i].BusID == id {
			return &t.Bridges[i]
		}
	}
	return nil
}

// Label names a device of the matrix ("GPU0", "NIC2") by bus ID.
func (t *Topology) Label(busID string) string {
	for _, g := range t.GPUs {
		if g.BusID == busID {
			return "GPU" + strconv.Itoa(g.Index)
		}
	}
	for _, n := range t.NICs {
		if n.BusID == busID {
			return n.Name
		}
	}
	return busID
}
