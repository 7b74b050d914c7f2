package topo

import (
	"github.com/gpuprobe/gpuprobe/internal/busid"
	"strings"
	"testing"
)

func TestSysfsValues(t *testing.T) {
	if v, err := ParseHexID("0x10de\n"); err != nil || v != 0x10de {
		t.Errorf("vendor: %x %v", v, err)
	}
	for _, bad := range []string{"", "0x", "zz", "0x123456789"} {
		if _, err := ParseHexID(bad); err == nil {
			t.Errorf("ParseHexID(%q) accepted", bad)
		}
	}
	if n, err := ParseNUMANode("-1"); err != nil || n != -1 {
		t.Errorf("numa -1: %d %v", n, err)
	}
	if _, err := ParseNUMANode("-2"); err == nil {
		t.Error("numa -2 accepted")
	}
	for in, want := range map[string]float64{"16.0 GT/s PCIe": 16, "8 GT/s": 8, "2.5 GT/s PCIe": 2.5} {
		if v, ok, err := ParseLinkSpeed(in); err != nil || !ok || v != want {
			t.Errorf("%q = %v %v %v", in, v, ok, err)
		}
	}
	if _, ok, err := ParseLinkSpeed("Unknown"); ok || err != nil {
		t.Error("Unknown speed is not an error, just unknown")
	}
	if _, _, err := ParseLinkSpeed("fast"); err == nil {
		t.Error("'fast' accepted")
	}
	if PCIeGen(32) != 5 || PCIeGen(2.5) != 1 || PCIeGen(3) != 0 {
		t.Error("PCIeGen")
	}
	if w, ok, err := ParseLinkWidth("16"); w != 16 || !ok || err != nil {
		t.Errorf("width 16: %d %v %v", w, ok, err)
	}
	if _, ok, err := ParseLinkWidth("255"); ok || err != nil {
		t.Error("width 255 means unknown")
	}
}

func FuzzSysfsValues(f *testing.F) {
	for _, s := range []string{"0x10de", "-1", "16.0 GT/s PCIe", "x16", "Unknown", "0000:19:00.0", "00000000:3B:00.0", "19:00.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ParseHexID(s)
		if n, err := ParseNUMANode(s); err == nil && n < -1 {
			t.Fatalf("numa %d from %q", n, s)
		}
		if v, ok, err := ParseLinkSpeed(s); err == nil && ok && v <= 0 {
			t.Fatalf("speed %v from %q", v, s)
		}
		if w, ok, err := ParseLinkWidth(s); err == nil && ok && (w <= 0 || w > 32) {
			t.Fatalf("width %d from %q", w, s)
		}
		if b, err := busid.Parse(s); err == nil {
			// A parsed address prints in sysfs form and parses back the same.
			if b2, err := busid.Parse(b.String()); err != nil || b2 != b {
				t.Fatalf("%q -> %v -> %v, %v", s, b, b2, err)
			}
		}
		kernelVersion(s)
	})
}

func TestBusIDs(t *testing.T) {
	// sysfs directory names: a PCI function has a domain and a function.
	for name, want := range map[string]bool{"0000:19:00.0": true, "pci0000:15": false, "0000:19:00": false, "0000:19:20.0": false, "0000:19:00.8": false} {
		if busid.Valid(name) != want {
			t.Errorf("busid.Valid(%q) = %v", name, !want)
		}
	}
	if !naturalLess("mlx5_2", "mlx5_10") || naturalLess("mlx5_10", "mlx5_2") || !naturalLess("mlx4_0", "mlx5_0") {
		t.Error("natural order")
	}
	if !strings.HasPrefix(nvType(18), "NV18") {
		t.Error("nvType")
	}
}

func FuzzCPUInfoFlags(f *testing.F) {
	f.Add("processor\t: 0\nflags\t\t: fpu hypervisor sse2\n")
	f.Add("flags:\n")
	f.Add("Features\t: fp asimd\n")
	f.Fuzz(func(t *testing.T, s string) {
		found, err := hasCPUFlag(strings.NewReader(s), "hypervisor")
		if found && (err != nil || !strings.Contains(s, "hypervisor")) {
			t.Fatalf("found the flag in %q with %v", s, err)
		}
	})
}
