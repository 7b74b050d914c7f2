package topo

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		out  string
	}{
		{"0-3,8-9\n", []int{0, 1, 2, 3, 8, 9}, "0-3,8-9"},
		{"", nil, ""},
		{"5", []int{5}, "5"},
		{"0-55,112-167", nil, "0-55,112-167"},
		{"3,1,2", []int{1, 2, 3}, "1-3"},
		{"0-7:2", []int{0, 2, 4, 6}, "0,2,4,6"},
		{"0-3,2-5", []int{0, 1, 2, 3, 4, 5}, "0-5"},
	} {
		got, err := ParseCPUList(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if c.want != nil && !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q = %v, want %v", c.in, got, c.want)
		}
		if f := FormatCPUList(got); f != c.out {
			t.Errorf("%q formats as %q, want %q", c.in, f, c.out)
		}
	}
	for _, bad := range []string{"a", "3-1", "0-", "-1", "0-4294967295", "1,,2", "0-3:0"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-55,112-167", "", "1", "0-7:2", "3-1", "0-65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		// Formatting and parsing again must give the same set.
		again, err := ParseCPUList(FormatCPUList(cpus))
		if err != nil || !reflect.DeepEqual(again, cpus) && !(len(again) == 0 && len(cpus) == 0) {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, cpus, FormatCPUList(cpus), again, err)
		}
	})
}

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
		if b, err := ParseBusID(s); err == nil {
			// A parsed address prints in sysfs form and parses back the same.
			if b2, err := ParseBusID(b.String()); err != nil || b2 != b {
				t.Fatalf("%q -> %v -> %v, %v", s, b, b2, err)
			}
		}
		kernelVersion(s)
	})
}

func TestBusIDs(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:3B:00.0": "0000:3b:00.0", "19:00.0": "0000:19:00.0", "0000:19:00.0": "0000:19:00.0", "pci0000:15": "pci0000:15",
	} {
		if got := NormalizeBusID(in); got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"0000:19:00", "0000:19:20.0", "0000:19:00.8", "0000:100:00.0", "x:y:z.w"} {
		if _, err := ParseBusID(bad); err == nil {
			t.Errorf("%q accepted", bad)
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
