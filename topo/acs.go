package topo

import (
	"encoding/binary"
	"fmt"
	"strings"
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

// ACS register bits, the same in the capability and control registers
// (include/uapi/linux/pci_regs.h, PCI_ACS_*), with the names lspci prints.
const (
	ACSSrcValid    uint16 = 0x0001
	ACSTransBlk    uint16 = 0x0002
	ACSReqRedir    uint16 = 0x0004
	ACSCmpltRedir  uint16 = 0x0008
	ACSUpstreamFwd uint16 = 0x0010
	ACSEgressCtrl  uint16 = 0x0020
	ACSDirectTrans uint16 = 0x0040

	// ACSRedirectMask is what makes a bridge send peer-to-peer traffic up to
	// the root complex: the kernel's pci_bridge_has_acs_redir() tests exactly
	// these. Source validation alone is harmless.
	ACSRedirectMask = ACSReqRedir | ACSCmpltRedir | ACSEgressCtrl
)

var acsBitNames = []struct {
	bit  uint16
	name string
}{
	{ACSSrcValid, "SrcValid"}, {ACSTransBlk, "TransBlk"}, {ACSReqRedir, "ReqRedir"},
	{ACSCmpltRedir, "CmpltRedir"}, {ACSUpstreamFwd, "UpstreamFwd"}, {ACSEgressCtrl, "EgressCtrl"},
	{ACSDirectTrans, "DirectTrans"},
}

// ACS is a decoded Access Control Services capability.
type ACS struct {
	// Offset is where the capability header sits in config space; the
	// control register is at Offset+6.
	Offset  int    `json:"offset"`
	Version int    `json:"version"`
	Cap     uint16 `json:"cap"`
	Ctl     uint16 `json:"ctl"`
	// CapFlags and CtlFlags spell the registers the way `lspci -vvv` does.
	CapFlags string `json:"cap_flags"`
	CtlFlags string `json:"ctl_flags"`
	// Redirect is set when ReqRedir, CmpltRedir or EgressCtrl is enabled.
	Redirect bool `json:"redirect"`
}

// CtlOffset is the config-space offset of the ACS Control register.
func (a *ACS) CtlOffset() int { return a.Offset + 6 }

// ClearedCtl is the control value with the redirect bits cleared and every
// other bit kept, which is the least a fix has to change.
func (a *ACS) ClearedCtl() uint16 { return a.Ctl &^ ACSRedirectMask }

// FormatACSFlags spells a register as lspci does:
// "SrcValid+ TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-".
func FormatACSFlags(v uint16) string {
	parts := make([]string, len(acsBitNames))
	for i, b := range acsBitNames {
		sign := "-"
		if v&b.bit != 0 {
			sign = "+"
		}
		parts[i] = b.name + sign
	}
	return strings.Join(parts, " ")
}

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
func DecodeACS(cfg []byte) (*ACS, error) {
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
		a := &ACS{Offset: c.Offset, Version: c.Version,
			Cap: binary.LittleEndian.Uint16(cfg[c.Offset+4:]), Ctl: binary.LittleEndian.Uint16(cfg[c.Offset+6:])}
		a.CapFlags, a.CtlFlags = FormatACSFlags(a.Cap), FormatACSFlags(a.Ctl)
		a.Redirect = a.Ctl&ACSRedirectMask != 0
		return a, nil
	}
	if err != nil {
		return nil, &ConfigError{Msg: "walking the extended capabilities: " + err.Error()}
	}
	return nil, nil
}
