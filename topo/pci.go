package topo

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"path/filepath"
	"sort"
	"strings"
)

// pciDev is one PCI function as read from sysfs, with its place in the
// hierarchy.
type pciDev struct {
	fn     topostate.PCIFunction
	vendor uint32
	class  uint32
	dir    string // the device's real directory
	// chain runs from the host bridge directory ("pci0000:15") down to the
	// device itself; nil when the device could not be placed.
	chain []string
}

// pciTree is every PCI function under <sysfs>/bus/pci/devices.
type pciTree struct {
	fsr   fsReader
	devs  map[string]*pciDev
	notes []string
}

func (t *pciTree) notef(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// sorted returns the bus IDs in PCI order.
func (t *pciTree) sorted() []string {
	ids := make([]string, 0, len(t.devs))
	for id := range t.devs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// readPCI lists the PCI functions. The directory missing altogether is an
// error (a wrong --path.sysfs must not look like a node without devices);
// a device that cannot be read fully becomes a note.
func (fsr fsReader) readPCI(sysfs string) (*pciTree, error) {
	base := filepath.Join(sysfs, "bus", "pci", "devices")
	entries, err := fsr.ReadDir(base)
	if err != nil {
		return nil, fmt.Errorf("listing PCI devices: %w", err)
	}
	t := &pciTree{fsr: fsr, devs: map[string]*pciDev{}}
	for _, e := range entries {
		if !busid.Valid(e.Name()) {
			continue
		}
		d := readPCIDev(t, base, e.Name())
		t.devs[d.fn.BusID] = d
	}
	return t, nil
}

func readPCIDev(t *pciTree, base, name string) *pciDev {
	link := filepath.Join(base, name)
	d := &pciDev{fn: topostate.PCIFunction{BusID: busid.Canonical(name), NUMANode: -1}, dir: link}
	if target, err := t.fsr.Readlink(link); err == nil {
		if !filepath.IsAbs(target) {
			target = filepath.Join(base, target)
		}
		d.dir = filepath.Clean(target)
		d.chain = hierarchy(d.dir)
	}
	if d.chain == nil {
		// A capture copied with cp -rL loses the links, and with them the
		// hierarchy; say so instead of guessing.
		t.notef("%s is not a symlink into %s/devices: its place in the PCIe hierarchy is unknown", link, filepath.Dir(filepath.Dir(filepath.Dir(base))))
	} else {
		d.fn.HostBridge = d.chain[0]
		d.fn.Upstream = append([]string(nil), d.chain[1:len(d.chain)-1]...)
	}
	attr := func(file string) string {
		v, ok, err := t.fsr.readAttr(filepath.Join(d.dir, file))
		if err != nil {
			t.notef("%v", err)
		}
		if !ok {
			return ""
		}
		return v
	}
	hexAttr := func(file string) (string, uint32) {
		s := attr(file)
		if s == "" {
			return "", 0
		}
		v, err := ParseHexID(s)
		if err != nil {
			t.notef("%s/%s: %v", d.dir, file, err)
			return s, 0
		}
		return s, v
	}
	d.fn.Vendor, d.vendor = hexAttr("vendor")
	d.fn.Device, _ = hexAttr("device")
	d.fn.Class, d.class = hexAttr("class")
	if s := attr("numa_node"); s != "" {
		n, err := ParseNUMANode(s)
		if err != nil {
			t.notef("%s/numa_node: %v", d.dir, err)
		}
		d.fn.NUMANode = n
	}
	if s := attr("local_cpulist"); s != "" {
		cpus, err := cpulist.Parse(s)
		if err != nil {
			t.notef("%s/local_cpulist: %v", d.dir, err)
		} else {
			d.fn.LocalCPUs = cpulist.Format(cpus)
		}
	}
	d.fn.Link = readLink(t, d.dir, attr)
	if target, err := t.fsr.Readlink(filepath.Join(d.dir, "driver")); err == nil {
		d.fn.Driver = filepath.Base(target)
	}
	if target, err := t.fsr.Readlink(filepath.Join(d.dir, "iommu_group")); err == nil {
		d.fn.IOMMUGroup = filepath.Base(target)
	}
	return d
}

func readLink(t *pciTree, dir string, attr func(string) string) *topostate.Link {
	l := &topostate.Link{}
	for _, f := range []struct {
		file  string
		speed *string
		width *int
	}{
		{"current_link_speed", &l.CurrentSpeed, nil}, {"max_link_speed", &l.MaxSpeed, nil},
		{"current_link_width", nil, &l.CurrentWidth}, {"max_link_width", nil, &l.MaxWidth},
	} {
		s := attr(f.file)
		if s == "" {
			continue
		}
		if f.speed != nil {
			if _, ok, err := ParseLinkSpeed(s); err != nil {
				t.notef("%s/%s: %v", dir, f.file, err)
			} else if ok {
				*f.speed = s
			}
			continue
		}
		if w, ok, err := ParseLinkWidth(s); err != nil {
			t.notef("%s/%s: %v", dir, f.file, err)
		} else if ok {
			*f.width = w
		}
	}
	if *l == (topostate.Link{}) {
		return nil
	}
	return l
}

// hierarchy turns a device's real path (".../devices/pci0000:15/0000:15:01.0/
// 0000:16:00.0/0000:17:01.0/0000:19:00.0") into its chain from the host
// bridge directory down. Virtual buses (Hyper-V's VMBus, platform devices on
// ARM) may sit above the host bridge, so the chain starts at the last
// component that names a PCI root ("pciDDDD:BB").
func hierarchy(dir string) []string {
	parts := strings.Split(filepath.ToSlash(dir), "/")
	start := -1
	for i, p := range parts {
		if strings.HasPrefix(p, "pci") && !busid.Valid(p) && strings.Contains(p, ":") {
			start = i
		}
	}
	if start < 0 || start == len(parts)-1 {
		return nil
	}
	chain := parts[start:]
	for _, p := range chain[1:] {
		if !busid.Valid(p) {
			return nil
		}
	}
	return chain
}
