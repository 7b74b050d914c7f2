package topo

import (
	"fmt"
	"strconv"
	"strings"
)

// NormalizeBusID turns the spellings of a PCI address that NVML, lspci and
// sysfs use ("00000000:19:00.0", "19:00.0", "0000:19:00.0") into sysfs's
// "dddd:bb:dd.f", lower case. Input that is not a PCI address comes back
// lower-cased and otherwise unchanged.
func NormalizeBusID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	b, err := ParseBusID(s)
	if err != nil {
		return s
	}
	return b.String()
}

// BusID is a parsed PCI address.
type BusID struct {
	Domain, Bus, Device, Function int
}

func (b BusID) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", b.Domain, b.Bus, b.Device, b.Function)
}

// ParseBusID reads "[domain:]bus:device.function" in hex; the domain may
// have up to 8 digits (NVML pads it).
func ParseBusID(s string) (BusID, error) {
	var b BusID
	parts := strings.Split(s, ":")
	if len(parts) == 2 {
		parts = append([]string{"0"}, parts...)
	}
	if len(parts) != 3 {
		return b, fmt.Errorf("PCI address %q: want [domain:]bus:device.function", s)
	}
	devfn := strings.Split(parts[2], ".")
	if len(devfn) != 2 {
		return b, fmt.Errorf("PCI address %q: want device.function after the bus", s)
	}
	fields := []struct {
		s    string
		max  uint64
		dst  *int
		name string
	}{
		{parts[0], 0xffffffff, &b.Domain, "domain"}, {parts[1], 0xff, &b.Bus, "bus"},
		{devfn[0], 0x1f, &b.Device, "device"}, {devfn[1], 0x7, &b.Function, "function"},
	}
	for _, f := range fields {
		if f.s == "" || len(f.s) > 8 {
			return b, fmt.Errorf("PCI address %q: bad %s %q", s, f.name, f.s)
		}
		v, err := strconv.ParseUint(f.s, 16, 32)
		if err != nil || v > f.max {
			return b, fmt.Errorf("PCI address %q: bad %s %q", s, f.name, f.s)
		}
		*f.dst = int(v)
	}
	return b, nil
}

// isBusID reports whether a sysfs directory name is a PCI function.
func isBusID(name string) bool {
	if strings.Count(name, ":") != 2 {
		return false
	}
	_, err := ParseBusID(name)
	return err == nil
}
