package topo

import (
	"reflect"
	"testing"

	sysfake "github.com/gpuprobe/gpuprobe/sim/sysfs"
)

// PCIGPUs is every NVIDIA GPU function on the bus with its driver, whatever
// NVML lists: one NVML does not list (bound to nvidia), one with no driver,
// one bound to vfio-pci; not the NVSwitch (0x0680), the GPU's HDMI audio
// (0x0403), its USB controller (0x0c03), another vendor's VGA, or an SR-IOV
// virtual function (physfn link).
func TestPCIGPUsListsEveryNVIDIAGPUWithItsDriver(t *testing.T) {
	m := sysfake.New()
	m.NUMA(map[int]string{0: "0-7"})
	unbound := gpu("0000:19:00.0", "pci0000:00", 0)
	unbound.Driver = ""
	vfio := gpu("0000:1a:00.0", "pci0000:00", 0)
	vfio.Driver = "vfio-pci"
	addAll(t, m,
		gpu("0000:17:00.0", "pci0000:00", 0),
		gpu("0000:18:00.0", "pci0000:00", 0),
		unbound, vfio,
		sysfake.PCI{BusID: "0000:17:00.1", Parent: "pci0000:00", Vendor: 0x10de, Device: 0x22ba, Class: 0x040300, Driver: "snd_hda_intel"},
		sysfake.PCI{BusID: "0000:17:00.2", Parent: "pci0000:00", Vendor: 0x10de, Device: 0x1ad8, Class: 0x0c0330, Driver: "xhci_hcd"},
		sysfake.PCI{BusID: "0000:05:00.0", Parent: "pci0000:00", Vendor: 0x10de, Device: 0x22a3, Class: 0x068000},
		sysfake.PCI{BusID: "0000:03:00.0", Parent: "pci0000:00", Vendor: 0x1a03, Device: 0x2000, Class: 0x030000, Driver: "ast"},
		sysfake.PCI{BusID: "0000:1b:00.4", Parent: "pci0000:00", Vendor: 0x10de, Device: 0x2230, Class: 0x030200, Driver: "nvidia"},
	)
	m.Tree.Link(m.Dir("0000:1b:00.4")+"/physfn", "../0000:17:00.0")
	tp := collectMachine(t, m, Options{GPUs: []GPUHint{{Index: 0, BusID: "00000000:17:00.0"}}})
	type fn struct{ bus, driver string }
	var got []fn
	for _, f := range tp.PCIGPUs {
		got = append(got, fn{f.BusID, f.Driver})
	}
	want := []fn{{"0000:17:00.0", "nvidia"}, {"0000:18:00.0", "nvidia"}, {"0000:19:00.0", ""}, {"0000:1a:00.0", "vfio-pci"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PCI GPUs %v, want %v", got, want)
	}
	if tp.GPUSource != "nvml" || len(tp.GPUs) != 1 {
		t.Errorf("NVML's GPUs still come from NVML: %s %d", tp.GPUSource, len(tp.GPUs))
	}
}
