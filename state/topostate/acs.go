package topostate

import "strings"

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
