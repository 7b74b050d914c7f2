package topo

import (
	"strconv"
)

// Path types, nearest first. The names and meanings are nvidia-smi's
// (`nvidia-smi topo -m` legend); NCCL's PATH_PIX/PXB/PHB/SYS are the same
// notions, with NODE folded into PHB.
const (
	PathPIX  = "PIX"  // at most one PCIe switch
	PathPXB  = "PXB"  // several switches, no host bridge
	PathPHB  = "PHB"  // through one PCIe host bridge
	PathNODE = "NODE" // between host bridges of one NUMA node
	PathSYS  = "SYS"  // across the inter-socket link
	// PathUnknown is used when a device's place in the hierarchy is unknown.
	PathUnknown = "N/A"
)

// PathRank orders path types, nearest first: NV# < PIX < PXB < PHB < NODE <
// SYS < unknown. It is what "closer than" means in the checks.
func PathRank(t string) int {
	switch t {
	case PathPIX:
		return 1
	case PathPXB:
		return 2
	case PathPHB:
		return 3
	case PathNODE:
		return 4
	case PathSYS:
		return 5
	}
	if len(t) > 2 && t[:2] == "NV" {
		return 0
	}
	return 6
}

// classifyPCIe names the PCIe path between two devices and, when the path
// stays below a host bridge, lists the bridges that traffic between them
// crosses (A's side up to the common one, then down to B).
//
// A switch shows up in sysfs as an upstream port with downstream ports
// below it, so two devices behind one switch are three bridges apart
// (down, up, down); more than three means more than one switch. This is
// nvidia-smi's PIX/PXB distinction, and NCCL's, which skips two sysfs levels
// per PCI switch when it builds its topology.
func classifyPCIe(a, b *pciDev, numaNodes int) (string, []string) {
	if a.chain == nil || b.chain == nil {
		return PathUnknown, nil
	}
	ua, ub := a.chain[:len(a.chain)-1], b.chain[:len(b.chain)-1]
	if ua[0] != ub[0] {
		return crossHost(a.fn.NUMANode, b.fn.NUMANode, numaNodes), nil
	}
	k := 0
	for k < len(ua) && k < len(ub) && ua[k] == ub[k] {
		k++
	}
	if k == 1 {
		return PathPHB, nil
	}
	var bridges []string
	for i := len(ua) - 1; i >= k-1; i-- {
		bridges = append(bridges, ua[i])
	}
	bridges = append(bridges, ub[k:]...)
	if len(bridges) <= 3 {
		return PathPIX, bridges
	}
	return PathPXB, bridges
}

// crossHost decides NODE or SYS for devices under different host bridges.
// With an unknown NUMA node on a machine with several, it cannot prove the
// two share a socket and says SYS, the cautious answer.
func crossHost(na, nb, numaNodes int) string {
	switch {
	case na >= 0 && nb >= 0 && na == nb:
		return PathNODE
	case na >= 0 && nb >= 0:
		return PathSYS
	case numaNodes <= 1:
		return PathNODE
	}
	return PathSYS
}

// nvlinks counts the NVLinks joining two GPUs: links straight to each
// other, plus, when both reach the NVSwitch fabric, the fewer of their
// switch links (every pair of an HGX board gets all of them: NV18 on H100).
func nvlinks(a, b *GPU) int {
	n := max(a.PeerLinks[b.BusID], b.PeerLinks[a.BusID])
	if a.SwitchLinks > 0 && b.SwitchLinks > 0 {
		n += min(a.SwitchLinks, b.SwitchLinks)
	}
	return n
}

func nvType(n int) string { return "NV" + strconv.Itoa(n) }

func itoa(i int) string { return strconv.Itoa(i) }
