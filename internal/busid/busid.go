// Package busid is the one spelling of a PCI address gpuprobe uses.
//
// NVML pads the domain to eight digits ("00000000:19:00.0"), lspci may drop
// it ("19:00.0"), the kernel's XID lines drop the function ("0000:19:00"),
// and nvidia-smi prints upper case. Every collector turns what it read into
// the canonical sysfs form "dddd:bb:dd.f" (lower case) with Canonical, so two
// sources always compare equal when they name the same function.
package busid

import (
	"fmt"
	"strconv"
	"strings"
)

// ID is a parsed PCI address.
type ID struct {
	Domain, Bus, Device, Function int
}

// String is the canonical sysfs spelling.
func (b ID) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", b.Domain, b.Bus, b.Device, b.Function)
}

// Slot is the address without the function ("dddd:bb:dd"), the form the
// kernel's NVRM XID lines use.
func (b ID) Slot() string {
	return fmt.Sprintf("%04x:%02x:%02x", b.Domain, b.Bus, b.Device)
}

// Parse reads "[domain:]bus:device[.function]" in hex, any case. The domain
// may have up to eight digits (NVML pads it); a missing domain is 0 and a
// missing function is 0 (XID lines name the slot only).
func Parse(s string) (ID, error) {
	var b ID
	t := strings.TrimSpace(s)
	parts := strings.Split(t, ":")
	if len(parts) == 2 {
		parts = append([]string{"0"}, parts...)
	}
	if len(parts) != 3 {
		return b, fmt.Errorf("PCI address %q: want [domain:]bus:device.function", s)
	}
	dev, fn, hasFn := strings.Cut(parts[2], ".")
	if !hasFn {
		fn = "0"
	}
	fields := []struct {
		s    string
		max  uint64
		dst  *int
		name string
	}{
		{parts[0], 0xffffffff, &b.Domain, "domain"}, {parts[1], 0xff, &b.Bus, "bus"},
		{dev, 0x1f, &b.Device, "device"}, {fn, 0x7, &b.Function, "function"},
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

// Canonical returns s in the canonical form, or s lower-cased and trimmed
// when it is not a PCI address (so a value is never lost, only left as read).
func Canonical(s string) string {
	b, err := Parse(s)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(s))
	}
	return b.String()
}

// Valid reports whether s is a full PCI function address with a domain, the
// shape of a sysfs directory name ("0000:19:00.0").
func Valid(s string) bool {
	if strings.Count(s, ":") != 2 || !strings.Contains(s, ".") {
		return false
	}
	_, err := Parse(s)
	return err == nil
}

// SameSlot reports whether a and b name the same slot (domain, bus, device),
// ignoring the function: an XID line names the slot, NVML the function.
func SameSlot(a, b string) bool {
	x, err1 := Parse(a)
	y, err2 := Parse(b)
	return err1 == nil && err2 == nil && x.Domain == y.Domain && x.Bus == y.Bus && x.Device == y.Device
}
