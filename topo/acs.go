package topo

import (
	"encoding/binary"
	"fmt"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// PCIe extended configuration space starts at 0x100; each capability begins
// with a 32-bit header: ID in bits 15:0, version in 19:16, next offset in
// 31:20 (PCIe base spec 7.6.3; pciutils lib/header.h).
const (
	extCapStart = 0x100
	extCapACS   = 0x000d
	// confSpaceBasic is what a device without extended space exposes.
	confSpaceBasic = 256
)

// ExtCap is one header of the extended capability list.
type ExtCap struct {
	Offset  int
	ID      uint16
	Version int
}

// WalkExtCaps lists the extended capabilities of a config-space blob. It
// stops at the end of the list, at a zero or all-ones header (no extended
// space, or a device that fell off the bus), and with an error at a
// pointer that leaves the blob, points back into the basic space or loops:
// firmware bugs must not hang or crash the collector.
func WalkExtCaps(cfg []byte) ([]ExtCap, error) {
	var caps []ExtCap
	seen := map[int]bool{}
	off := extCapStart
	for {
		if off+4 > len(cfg) {
			return caps, fmt.Errorf("extended capability at 0x%x lies beyond the %d bytes read", off, len(cfg))
		}
		if seen[off] {
			return caps, fmt.Errorf("extended capability list loops back to 0x%x", off)
		}
		seen[off] = true
		h := binary.LittleEndian.Uint32(cfg[off:])
		if h == 0 || h == 0xffffffff {
			return caps, nil
		}
		caps = append(caps, ExtCap{Offset: off, ID: uint16(h), Version: int(h>>16) & 0xf})
		next := int(h>>20) &^ 3 // the low two bits are reserved
		if next == 0 {
			return caps, nil
		}
		if next < extCapStart {
			return caps, fmt.Errorf("extended capability at 0x%x points to 0x%x, inside the basic config space", off, next)
		}
		off = next
	}
}

// ConfigError says why a config-space blob cannot answer the ACS question.
type ConfigError struct {
	// Unknown is true when more privilege would help (the read was cut
	// short), false when the blob is simply malformed.
	Unknown bool
	Msg     string
}

func (e *ConfigError) Error() string { return e.Msg }

// DecodeACS finds and decodes the ACS capability of a config-space blob as
// read from sysfs. It returns (nil, nil) when the device definitely has no
// ACS (no extended space, or a list without it), and a *ConfigError when the
// answer is unknown: the kernel hands a reader without CAP_SYS_ADMIN only
// the first 64 bytes (128 for cardbus; drivers/pci/pci-sysfs.c), and that
// must read as "unknown", never as "no ACS".
func DecodeACS(cfg []byte) (*topostate.ACS, error) {
	switch {
	case len(cfg) <= 128:
		return nil, &ConfigError{Unknown: true, Msg: fmt.Sprintf("config space readable only to %d bytes (needs root or CAP_SYS_ADMIN)", len(cfg))}
	case len(cfg) < confSpaceBasic:
		return nil, &ConfigError{Msg: fmt.Sprintf("config space is %d bytes, shorter than the %d-byte header space", len(cfg), confSpaceBasic)}
	case len(cfg) == confSpaceBasic:
		// A conventional or virtual device: no extended space, so no ACS.
		return nil, nil
	}
	caps, err := WalkExtCaps(cfg)
	for _, c := range caps {
		if c.ID != extCapACS {
			continue
		}
		if c.Offset+8 > len(cfg) {
			return nil, &ConfigError{Msg: fmt.Sprintf("ACS capability at 0x%x is cut off at %d bytes", c.Offset, len(cfg))}
		}
		a := &topostate.ACS{Offset: c.Offset, Version: c.Version,
			Cap: binary.LittleEndian.Uint16(cfg[c.Offset+4:]), Ctl: binary.LittleEndian.Uint16(cfg[c.Offset+6:])}
		a.CapFlags, a.CtlFlags = topostate.FormatACSFlags(a.Cap), topostate.FormatACSFlags(a.Ctl)
		a.Redirect = a.Ctl&topostate.ACSRedirectMask != 0
		return a, nil
	}
	if err != nil {
		return nil, &ConfigError{Msg: "walking the extended capabilities: " + err.Error()}
	}
	return nil, nil
}
