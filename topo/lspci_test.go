package topo

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"regexp"
	"strconv"
	"strings"
	"testing"

	sysfake "github.com/gpuprobe/gpuprobe/sim/sysfs"
)

// This file turns real `lspci -vvv` (and `lspci -xxxx`) captures into
// sysfs fixture trees, so the topology code is tested against real machines'
// hierarchies and real config-space bytes rather than against invented ones.

type lspciDev struct {
	busID      string
	desc       string
	secondary  int // -1: not a bridge
	numa       int
	driver     string
	acsOffset  int // 0: no ACS block printed
	acsCap     uint16
	acsCtl     uint16
	capLine    string
	ctlLine    string
	speed      string
	width      int
	config     []byte
	configRows int
}

var (
	lspciDevLine = regexp.MustCompile(`^(?:([0-9a-f]{4}):)?([0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) (.*)$`)
	lspciBus     = regexp.MustCompile(`Bus: primary=([0-9a-f]{2}), secondary=([0-9a-f]{2})`)
	lspciACS     = regexp.MustCompile(`Capabilities: \[([0-9a-f]+)(?: v\d+)?\] Access Control Services`)
	lspciLnkSta  = regexp.MustCompile(`LnkSta:\s+Speed ([0-9.]+)GT/s[^,]*, Width x(\d+)`)
	lspciHex     = regexp.MustCompile(`^([0-9a-f]{2,3}): ((?:[0-9a-f]{2} ){15}[0-9a-f]{2})\s*$`)
)

// parseLspci reads device blocks. Indentation (tabs, or spaces when copied
// from a terminal) is ignored.
func parseLspci(t testing.TB, text string) []*lspciDev {
	t.Helper()
	var out []*lspciDev
	var cur *lspciDev
	for _, raw := range strings.Split(text, "\n") {
		if strings.HasPrefix(raw, "#") {
			continue
		}
		if m := lspciDevLine.FindStringSubmatch(raw); m != nil && !lspciHex.MatchString(raw) {
			dom := m[1]
			if dom == "" {
				dom = "0000"
			}
			cur = &lspciDev{busID: dom + ":" + m[2], desc: m[3], secondary: -1, numa: -1}
			out = append(out, cur)
			continue
		}
		if cur == nil {
			continue
		}
		line := strings.TrimSpace(raw)
		if m := lspciHex.FindStringSubmatch(line); m != nil {
			for _, h := range strings.Fields(m[2]) {
				v, _ := strconv.ParseUint(h, 16, 8)
				cur.config = append(cur.config, byte(v))
			}
			cur.configRows++
			continue
		}
		if m := lspciBus.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseUint(m[2], 16, 8)
			cur.secondary = int(v)
		}
		if v, ok := strings.CutPrefix(line, "NUMA node:"); ok {
			cur.numa, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if v, ok := strings.CutPrefix(line, "Kernel driver in use:"); ok {
			cur.driver = strings.TrimSpace(v)
		}
		if m := lspciACS.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseUint(m[1], 16, 16)
			cur.acsOffset = int(v)
		}
		if v, ok := strings.CutPrefix(line, "ACSCap:"); ok {
			cur.capLine = strings.Join(strings.Fields(v), " ")
			cur.acsCap = acsFromFlags(t, cur.capLine)
		}
		if v, ok := strings.CutPrefix(line, "ACSCtl:"); ok {
			cur.ctlLine = strings.Join(strings.Fields(v), " ")
			cur.acsCtl = acsFromFlags(t, cur.ctlLine)
		}
		if m := lspciLnkSta.FindStringSubmatch(line); m != nil {
			f, _ := strconv.ParseFloat(m[1], 64)
			cur.speed = fmt.Sprintf("%.1f GT/s PCIe", f)
			cur.width, _ = strconv.Atoi(m[2])
		}
	}
	return out
}

// acsFromFlags reads lspci's "SrcValid+ TransBlk- ..." back into bits.
func acsFromFlags(t testing.TB, s string) uint16 {
	t.Helper()
	bits := map[string]uint16{}
	for i := range 7 {
		for _, f := range strings.Fields(topostate.FormatACSFlags(1 << i)) {
			if name, on := strings.CutSuffix(f, "+"); on {
				bits[name] = 1 << i
			}
		}
	}
	var v uint16
	for _, f := range strings.Fields(s) {
		name, sign := f[:len(f)-1], f[len(f)-1]
		b, found := bits[name]
		if !found {
			t.Fatalf("unknown ACS flag %q", f)
		}
		if sign == '+' {
			v |= b
		}
	}
	return v
}

var lspciClasses = map[string]uint32{
	"PCI bridge": 0x060400, "Class 0604": 0x060400, "3D controller": 0x030200, "VGA compatible controller": 0x030000,
	"Ethernet controller": 0x020000, "Infiniband controller": 0x020700, "Bridge": 0x068000,
	"Non-Volatile memory controller": 0x010802, "System peripheral": 0x088000,
}

var lspciVendors = map[string]uint16{
	"NVIDIA Corporation": 0x10de, "Mellanox Technologies": 0x15b3, "Intel Corporation": 0x8086,
	"Broadcom / LSI": 0x1000, "PMC-Sierra Inc.": 0x11f8, "PLX Technology, Inc.": 0x10b5,
}

func (d *lspciDev) ids() (vendor, device uint16, class uint32) {
	cls, rest, _ := strings.Cut(d.desc, ": ")
	class = lspciClasses[cls]
	if class == 0 {
		class = 0xff0000
	}
	for name, v := range lspciVendors {
		if strings.HasPrefix(rest, name) {
			vendor = v
		}
	}
	if m := regexp.MustCompile(`Device ([0-9a-f]{4})`).FindStringSubmatch(rest); m != nil {
		x, _ := strconv.ParseUint(m[1], 16, 16)
		device = uint16(x)
	}
	return vendor, device, class
}

// lspciMachine lays the devices out as sysfs would: a device on bus B hangs
// below the bridge whose secondary bus is B, or below host bridge
// pciDDDD:BB when none is. cpus gives each NUMA node's CPU list.
func lspciMachine(t *testing.T, devs []*lspciDev, cpus map[int]string) *sysfake.Machine {
	t.Helper()
	m := sysfake.New()
	bridgeOf := map[string]string{} // "dddd:bb" -> bridge bus ID
	for _, d := range devs {
		if d.secondary >= 0 {
			bridgeOf[fmt.Sprintf("%s:%02x", d.busID[:4], d.secondary)] = d.busID
		}
	}
	pending := append([]*lspciDev(nil), devs...)
	for len(pending) > 0 {
		var next []*lspciDev
		for _, d := range pending {
			bus := d.busID[:7]
			parent, ok := bridgeOf[bus]
			if !ok {
				parent = "pci" + bus
			} else if m.Dir(parent) == "" {
				next = append(next, d) // its bridge comes later in the file
				continue
			}
			v, dev, class := d.ids()
			cfg := d.config
			if cfg == nil {
				var acs *sysfake.ACSRegs
				if d.acsOffset != 0 {
					acs = &sysfake.ACSRegs{Offset: d.acsOffset, Cap: d.acsCap, Ctl: d.acsCtl}
				}
				cfg = sysfake.Config(v, dev, class, acs)
			} else if len(cfg) >= 12 {
				v, dev = uint16(cfg[0])|uint16(cfg[1])<<8, uint16(cfg[2])|uint16(cfg[3])<<8
				class = uint32(cfg[9]) | uint32(cfg[10])<<8 | uint32(cfg[11])<<16
			}
			err := m.AddPCI(sysfake.PCI{BusID: d.busID, Parent: parent, Vendor: v, Device: dev, Class: class,
				NUMA: d.numa, CPUs: cpus[d.numa], Speed: d.speed, Width: d.width, Driver: d.driver, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(next) == len(pending) {
			t.Fatalf("lspci fixture: %d devices whose bridges are missing, first %s", len(next), next[0].busID)
		}
		pending = next
	}
	m.NUMA(cpus)
	return m
}

// ibstatPort reads `ibstat` blocks into sysfs port values, by CA name.
func ibstatPorts(t *testing.T, text string) map[string]sysfake.IB {
	t.Helper()
	out := map[string]sysfake.IB{}
	var cur string
	var ib sysfake.IB
	var port sysfake.IBPort
	flush := func() {
		if cur != "" {
			ib.Ports = []sysfake.IBPort{port}
			out[cur] = ib
		}
	}
	states := map[string]string{"Active": "4: ACTIVE", "Down": "1: DOWN", "Initializing": "2: INIT", "Armed": "3: ARMED"}
	phys := map[string]string{"LinkUp": "5: LinkUp", "Disabled": "3: Disabled", "Polling": "2: Polling"}
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if name, ok := strings.CutPrefix(line, "CA '"); ok {
			flush()
			cur = strings.TrimSuffix(name, "'")
			ib, port = sysfake.IB{Name: cur}, sysfake.IBPort{}
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		switch k {
		case "CA type":
			ib.HCAType = v
		case "Firmware version":
			ib.FWVer = v
		case "State":
			port.State = states[v]
		case "Physical state":
			port.PhysState = phys[v]
		case "Rate":
			port.Rate = v + " Gb/sec"
		case "Link layer":
			port.LinkLayer = v
		}
	}
	flush()
	return out
}
