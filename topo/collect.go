package topo

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/internal/rootfs"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
)

// Options say where to read and what the caller already knows.
type Options struct {
	// SysfsRoot and ProcfsRoot default to /sys and /proc.
	SysfsRoot  string
	ProcfsRoot string
	// Virt is auto (detect), none or vm; see --virt.
	Virt string
	// GPUs come from NVML when it is available; empty means "discover in
	// sysfs" (PCI vendor 0x10de, VGA or 3D class).
	GPUs []GPUHint
	// NVLinkKnown says the hints carry NVLink counts (NVML answered the
	// NVLink calls), so a pair without links really has none.
	NVLinkKnown bool
	// FS is the tree to read, rooted at "/" (SysfsRoot and ProcfsRoot name
	// places inside it); nil is this machine's own filesystem. A simulated
	// node hands an in-memory tree here.
	FS fs.FS
}

// GPUHint is what NVML knows about one GPU.
type GPUHint struct {
	Index int
	BusID string
	// SwitchLinks counts NVLinks up to an NVSwitch; PeerLinks counts NVLinks
	// up straight to another GPU, by that GPU's bus ID.
	SwitchLinks int
	PeerLinks   map[string]int
}

// Collect reads the topology under ctx's deadline. Sysfs reads do not
// block in practice, but a wedged device can stall a config-space read, so
// the work runs aside and an expired deadline returns an error at once.
func Collect(ctx context.Context, o Options) (*topostate.Topology, error) {
	// deadline.Do: while a read of this tree is still hung, the next cycle
	// is refused at once instead of leaving one more thread behind.
	root := rootOr(o.SysfsRoot, "/sys")
	t, err := deadline.Do(ctx, "topo:"+root, 0, func() (*topostate.Topology, error) { return collect(o) })
	if errors.Is(err, deadline.ErrTimeout) || errors.Is(err, deadline.ErrBusy) {
		return nil, fmt.Errorf("reading the topology under %s: %w", root, err)
	}
	return t, err
}

func rootOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func collect(o Options) (*topostate.Topology, error) {
	sys, proc := rootOr(o.SysfsRoot, "/sys"), rootOr(o.ProcfsRoot, "/proc")
	fsr := fsReader{rootfs.FS{Tree: o.FS}}
	virt := rootOr(o.Virt, VirtAuto)
	if virt != VirtAuto && virt != VirtNone && virt != VirtVM {
		return nil, fmt.Errorf("virtualization mode %q: want auto, none or vm", o.Virt)
	}
	pci, err := fsr.readPCI(sys)
	if err != nil {
		return nil, err
	}
	t := &topostate.Topology{SysfsRoot: sys, ProcfsRoot: proc, GPUs: []topostate.GPU{}, NICs: []topostate.NIC{}, Bridges: []topostate.Bridge{}, Paths: []topostate.Path{}}
	notef := func(f string, a ...any) { t.Notes = append(t.Notes, fmt.Sprintf(f, a...)) }
	t.Virtualization = fsr.detectVirt(sys, proc, virt)
	t.DMI = fsr.readDMI(sys)
	t.NUMANodes = fsr.readNUMA(sys, notef)
	t.Cores = fsr.readCores(sys, notef)
	t.GPUs, t.GPUSource = pickGPUs(pci, o.GPUs, sys, notef)
	t.NVLinkKnown = o.NVLinkKnown && t.GPUSource == "nvml"
	t.PCIGPUs = pci.nvidiaGPUs()
	nics, err := fsr.readIB(sys)
	if err != nil {
		notef("InfiniBand: %v", err)
	}
	t.NICs = placeNICs(pci, nics, fsr.readNetDevs(sys), notef)
	t.Bridges = readBridges(pci, t)
	t.Paths = classifyAll(pci, t)
	t.IOMMU = fsr.readIOMMU(sys, proc, endpoints(t))
	t.PeerMem = fsr.readPeerMem(sys, proc)
	t.Notes = append(pci.notes, t.Notes...)
	return t, nil
}

// pickGPUs takes NVML's GPUs when they are in this tree. NVML's GPUs all
// missing means the tree was captured elsewhere (--path.sysfs on another
// machine): the tree's own GPUs are judged then, by PCI ID.
func pickGPUs(pci *pciTree, hints []GPUHint, sys string, notef func(string, ...any)) ([]topostate.GPU, string) {
	var found []topostate.GPU
	inNVML := map[string]bool{}
	for _, h := range hints {
		id := busid.Canonical(h.BusID)
		inNVML[id] = true
		d, ok := pci.devs[id]
		if !ok {
			notef("NVML GPU %d (%s) is not under %s/bus/pci/devices", h.Index, id, sys)
			continue
		}
		g := topostate.GPU{Index: h.Index, PCIFunction: d.fn, SwitchLinks: h.SwitchLinks}
		for peer, n := range h.PeerLinks {
			if g.PeerLinks == nil {
				g.PeerLinks = map[string]int{}
			}
			g.PeerLinks[busid.Canonical(peer)] += n
		}
		found = append(found, g)
	}
	if len(found) > 0 {
		for _, id := range pci.sorted() {
			d := pci.devs[id]
			if isNVIDIAGPU(d) && !inNVML[id] {
				notef("GPU %s is in sysfs but NVML does not list it (driver rejected it?)", id)
			}
		}
		sort.Slice(found, func(i, j int) bool { return found[i].Index < found[j].Index })
		return found, "nvml"
	}
	if len(hints) > 0 {
		notef("none of NVML's GPUs is in %s: judging the GPUs found there by PCI ID instead", sys)
	}
	out := []topostate.GPU{}
	for _, id := range pci.sorted() {
		if d := pci.devs[id]; isNVIDIAGPU(d) {
			out = append(out, topostate.GPU{Index: len(out), PCIFunction: d.fn})
		}
	}
	return out, "sysfs"
}

func isNVIDIAGPU(d *pciDev) bool { return d.vendor == vendorNVIDIA && isGPUClass(d.class) }

// nvidiaGPUs lists the NVIDIA GPU functions on the bus with their drivers,
// whatever NVML says. An SR-IOV virtual function (a physfn link, the
// kernel's Documentation/ABI/testing/sysfs-bus-pci) is left out: it is a
// slice of a GPU, which NVML does not count as one (a vGPU host binds them
// to nvidia).
func (t *pciTree) nvidiaGPUs() []topostate.PCIFunction {
	out := []topostate.PCIFunction{}
	for _, id := range t.sorted() {
		d := t.devs[id]
		if !isNVIDIAGPU(d) {
			continue
		}
		if _, err := t.fsr.Readlink(filepath.Join(d.dir, "physfn")); err == nil {
			continue
		}
		out = append(out, d.fn)
	}
	return out
}

// placeNICs fills each RDMA device's PCI data and orders them as
// nvidia-smi's NIC legend does.
func placeNICs(pci *pciTree, nics []topostate.NIC, netdevs map[string][]string, notef func(string, ...any)) []topostate.NIC {
	sort.Slice(nics, func(i, j int) bool { return naturalLess(nics[i].Name, nics[j].Name) })
	out := []topostate.NIC{}
	for _, n := range nics {
		if n.Error != "" {
			notef("%s", n.Error)
		}
		if n.BusID != "" {
			if d, ok := pci.devs[n.BusID]; ok {
				n.PCIFunction = d.fn
			} else {
				notef("%s: device %s is not under bus/pci/devices", n.Name, n.BusID)
			}
			n.NetDevs = netdevs[n.BusID]
		} else {
			notef("%s has no device link: its PCIe position is unknown", n.Name)
		}
		n.Index = len(out)
		out = append(out, n)
	}
	return out
}

// readBridges decodes every bridge above a GPU or NIC once.
func readBridges(pci *pciTree, t *topostate.Topology) []topostate.Bridge {
	seen := map[string]bool{}
	var out []topostate.Bridge
	visit := func(fn topostate.PCIFunction) {
		for i, id := range fn.Upstream {
			if seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, readBridge(pci, id, i))
		}
	}
	for _, g := range t.GPUs {
		visit(g.PCIFunction)
	}
	for _, n := range t.NICs {
		visit(n.PCIFunction)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BusID < out[j].BusID })
	if out == nil {
		out = []topostate.Bridge{}
	}
	return out
}

// readBridge reads one bridge's ACS. depth is its position below the host
// bridge: the first is the root port, then switch ports alternate upstream
// and downstream.
func readBridge(pci *pciTree, id string, depth int) topostate.Bridge {
	b := topostate.Bridge{BusID: id, Role: "switch_downstream"}
	switch {
	case depth == 0:
		b.Role = "root_port"
	case depth%2 == 1:
		b.Role = "switch_upstream"
	}
	d, ok := pci.devs[id]
	if !ok {
		b.ACS = topostate.ACSState{Status: "unknown", Reason: id + " is not under bus/pci/devices"}
		return b
	}
	b.Vendor, b.Device = d.fn.Vendor, d.fn.Device
	file := filepath.Join(d.dir, "config")
	cfg, ok, err := pci.fsr.readConfig(file)
	switch {
	case err != nil:
		b.ACS = topostate.ACSState{Status: "unknown", Reason: err.Error()}
		return b
	case !ok:
		b.ACS = topostate.ACSState{Status: "unknown", Reason: file + " does not exist"}
		return b
	}
	acs, err := DecodeACS(cfg)
	switch {
	case err != nil:
		b.ACS = topostate.ACSState{Status: "unknown", Reason: file + ": " + err.Error()}
	case acs == nil && len(cfg) <= confSpaceBasic:
		b.ACS = topostate.ACSState{Status: "absent", Reason: "no PCIe extended config space (" + strconv.Itoa(len(cfg)) + " bytes)"}
	case acs == nil:
		b.ACS = topostate.ACSState{Status: "absent", Reason: "no ACS in the extended capability list"}
	default:
		b.ACS = topostate.ACSState{Status: "present", ACS: acs}
	}
	return b
}

// classifyAll computes every pair of GPUs and NICs, GPUs first.
func classifyAll(pci *pciTree, t *topostate.Topology) []topostate.Path {
	type ep struct {
		name string
		fn   topostate.PCIFunction
		gpu  *topostate.GPU
	}
	var eps []ep
	for i := range t.GPUs {
		eps = append(eps, ep{"GPU" + itoa(t.GPUs[i].Index), t.GPUs[i].PCIFunction, &t.GPUs[i]})
	}
	for _, n := range t.NICs {
		if n.BusID != "" {
			eps = append(eps, ep{n.Name, n.PCIFunction, nil})
		}
	}
	out := []topostate.Path{}
	for i := range eps {
		for j := i + 1; j < len(eps); j++ {
			a, b := eps[i], eps[j]
			p := topostate.Path{A: a.name, B: b.name, ABusID: a.fn.BusID, BBusID: b.fn.BusID}
			da, db := pci.devs[a.fn.BusID], pci.devs[b.fn.BusID]
			if da == nil || db == nil {
				p.PCIe = topostate.PathUnknown
			} else {
				p.PCIe, p.Bridges = classifyPCIe(da, db, len(t.NUMANodes))
			}
			p.Type = p.PCIe
			if a.gpu != nil && b.gpu != nil {
				if n := nvlinks(a.gpu, b.gpu); n > 0 {
					p.Type, p.NVLinks = nvType(n), n
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// endpoints lists the GPUs' and placed NICs' PCI data.
func endpoints(t *topostate.Topology) []*topostate.PCIFunction {
	var devs []*topostate.PCIFunction
	for i := range t.GPUs {
		devs = append(devs, &t.GPUs[i].PCIFunction)
	}
	for i := range t.NICs {
		if t.NICs[i].BusID != "" {
			devs = append(devs, &t.NICs[i].PCIFunction)
		}
	}
	return devs
}

// naturalLess orders "mlx5_2" before "mlx5_10".
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da != "" && db != "" {
			x, _ := strconv.Atoi(da)
			y, _ := strconv.Atoi(db)
			if x != y {
				return x < y
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitPrefix(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(s)
	}
	if i > 9 {
		i = 9
	}
	return s[:i]
}
