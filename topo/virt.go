package topo

import (
	"bufio"
	"fmt"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"io"
	"path/filepath"
	"strings"
)

// Virtualization modes for Options.Virt.
const (
	VirtAuto = "auto"
	VirtNone = "none"
	VirtVM   = "vm"
)

// dmiVendors are the DMI prefixes that name a hypervisor, as
// systemd-detect-virt's table has them (src/basic/virt.c).
var dmiVendors = []struct{ prefix, name string }{
	{"KVM", "kvm"}, {"OpenStack", "kvm"}, {"KubeVirt", "kvm"}, {"Amazon EC2", "amazon"},
	{"QEMU", "qemu"}, {"VMware", "vmware"}, {"VMW", "vmware"}, {"innotek GmbH", "oracle"},
	{"VirtualBox", "oracle"}, {"Xen", "xen"}, {"Bochs", "bochs"}, {"Parallels", "parallels"},
	{"BHYVE", "bhyve"}, {"Hyper-V", "microsoft"}, {"Apple Virtualization", "apple"},
	{"Google Compute Engine", "google"}, {"Google", "google"},
}

// dmiFiles are the DMI attributes systemd looks at, in its order.
var dmiFiles = []string{"product_name", "sys_vendor", "board_vendor", "bios_vendor", "product_version"}

// detectVirt decides bare metal or VM from files under the given roots
// only, so a captured tree is judged as the machine it came from. The
// order follows systemd-detect-virt: DMI first (a hypervisor that borrows
// KVM still names itself there), then the SMBIOS "virtual machine" bit,
// then the CPU's hypervisor flag, then Xen and device-tree markers.
func (fsr fsReader) detectVirt(sysfs, procfs, override string) topostate.Virtualization {
	v := fsr.detectVirtAuto(sysfs, procfs)
	switch override {
	case VirtNone, VirtVM:
		return topostate.Virtualization{Kind: override, Source: "flag",
			Evidence: fmt.Sprintf("--virt=%s (detection said %s: %s)", override, v.Kind, v.Evidence)}
	}
	return v
}

func (fsr fsReader) detectVirtAuto(sysfs, procfs string) topostate.Virtualization {
	vm := func(name, evidence string) topostate.Virtualization {
		return topostate.Virtualization{Kind: VirtVM, Hypervisor: name, Source: "detected", Evidence: evidence}
	}
	dmiDir := filepath.Join(sysfs, "class", "dmi", "id")
	var dmiSeen string
	smbiosVM, smbiosKnown := fsr.smbiosVMBit(sysfs)
	for _, f := range dmiFiles {
		val, ok, _ := fsr.readAttr(filepath.Join(dmiDir, f))
		if !ok || val == "" {
			continue
		}
		if dmiSeen == "" {
			dmiSeen = fmt.Sprintf("DMI %s %q", f, val)
		}
		if f == "product_name" && val == "Virtual Machine" {
			if sv, _, _ := fsr.readAttr(filepath.Join(dmiDir, "sys_vendor")); sv == "Microsoft Corporation" {
				return vm("microsoft", fmt.Sprintf("DMI product_name %q by %q (%s)", val, sv, dmiDir))
			}
		}
		for _, d := range dmiVendors {
			if !strings.HasPrefix(val, d.prefix) {
				continue
			}
			// EC2 names itself the same on metal instances; the SMBIOS bit
			// and the ".metal" product name tell them apart.
			if d.name == "amazon" {
				pn, _, _ := fsr.readAttr(filepath.Join(dmiDir, "product_name"))
				if (smbiosKnown && !smbiosVM) || strings.HasSuffix(pn, ".metal") {
					return topostate.Virtualization{Kind: VirtNone, Source: "detected",
						Evidence: fmt.Sprintf("DMI %s %q on a metal instance (product_name %q)", f, val, pn)}
				}
			}
			return vm(d.name, fmt.Sprintf("DMI %s %q (%s)", f, val, filepath.Join(dmiDir, f)))
		}
	}
	if smbiosKnown && smbiosVM {
		return vm("", "SMBIOS BIOS characteristics: virtual machine bit set ("+filepath.Join(sysfs, "firmware/dmi/entries/0-0/raw")+")")
	}
	cpuinfo := filepath.Join(procfs, "cpuinfo")
	flag, cpuErr := fsr.cpuFlag(cpuinfo, "hypervisor")
	if flag {
		name := ""
		if t, ok, _ := fsr.readAttr(filepath.Join(sysfs, "hypervisor", "type")); ok {
			name = t
		}
		return vm(name, "CPU flag \"hypervisor\" in "+cpuinfo)
	}
	if t, ok, _ := fsr.readAttr(filepath.Join(sysfs, "hypervisor", "type")); ok && t != "" {
		// Xen's control domain runs on the hardware and has the same file.
		if caps, _, _ := fsr.readAttr(filepath.Join(procfs, "xen", "capabilities")); !strings.Contains(caps, "control_d") {
			return vm(t, fmt.Sprintf("%s is %q", filepath.Join(sysfs, "hypervisor", "type"), t))
		}
	}
	dt := filepath.Join(sysfs, "firmware", "devicetree", "base", "hypervisor", "compatible")
	if c, ok, _ := fsr.readAttr(dt); ok {
		return vm(strings.TrimRight(c, "\x00"), "device tree "+dt)
	}
	var ev []string
	switch {
	case cpuErr != nil:
		ev = append(ev, cpuErr.Error())
	default:
		ev = append(ev, "no \"hypervisor\" CPU flag in "+cpuinfo)
	}
	if dmiSeen != "" {
		ev = append(ev, dmiSeen)
	} else {
		ev = append(ev, "no DMI in "+dmiDir)
	}
	return topostate.Virtualization{Kind: VirtNone, Source: "detected", Evidence: strings.Join(ev, ", ")}
}

// cpuFlag reports whether the first "flags" line of cpuinfo lists flag.
func (fsr fsReader) cpuFlag(path, flag string) (bool, error) {
	f, err := fsr.Open(path)
	if err != nil {
		return false, fmt.Errorf("%s not readable", path)
	}
	defer f.Close()
	found, err := hasCPUFlag(f, flag)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return found, nil
}

// hasCPUFlag scans cpuinfo text for the first "flags" line (x86; ARM has
// "Features" and no hypervisor flag).
func hasCPUFlag(r io.Reader, flag string) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		for _, fl := range strings.Fields(v) {
			if fl == flag {
				return true, nil
			}
		}
		return false, nil
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	return false, fmt.Errorf("no flags line (not x86?)")
}

// smbiosVMBit reads the SMBIOS type 0 structure's BIOS Characteristics
// Extension Byte 2, bit 4, "system is a virtual machine" (DSP0134 7.1.2.2).
func (fsr fsReader) smbiosVMBit(sysfs string) (vm, known bool) {
	raw, err := fsr.ReadFile(filepath.Join(sysfs, "firmware", "dmi", "entries", "0-0", "raw"))
	if err != nil || len(raw) < 0x14 || raw[0] != 0 || raw[1] < 0x14 {
		return false, false
	}
	return raw[0x13]&0x10 != 0, true
}
