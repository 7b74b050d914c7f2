package topo

import (
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"strconv"
)

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
		return topostate.PathUnknown, nil
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
		return topostate.PathPHB, nil
	}
	var bridges []string
	for i := len(ua) - 1; i >= k-1; i-- {
		bridges = append(bridges, ua[i])
	}
	bridges = append(bridges, ub[k:]...)
	if len(bridges) <= 3 {
		return topostate.PathPIX, bridges
	}
	return topostate.PathPXB, bridges
}

// crossHost decides NODE or SYS for devices under different host bridges.
// With an unknown NUMA node on a machine with several, it cannot prove the
// two share a socket and says SYS, the cautious answer.
func crossHost(na, nb, numaNodes int) string {
	switch {
	case na >= 0 && nb >= 0 && na == nb:
		return topostate.PathNODE
	case na >= 0 && nb >= 0:
		return topostate.PathSYS
	case numaNodes <= 1:
		return topostate.PathNODE
	}
	return topostate.PathSYS
}

// nvlinks counts the NVLinks joining two GPUs: links straight to each
// other, plus, when both reach the NVSwitch fabric, the fewer of their
// switch links (every pair of an HGX board gets all of them: NV18 on H100).
func nvlinks(a, b *topostate.GPU) int {
	n := max(a.PeerLinks[b.BusID], b.PeerLinks[a.BusID])
	if a.SwitchLinks > 0 && b.SwitchLinks > 0 {
		n += min(a.SwitchLinks, b.SwitchLinks)
	}
	return n
}

func nvType(n int) string { return "NV" + strconv.Itoa(n) }

func itoa(i int) string { return strconv.Itoa(i) }
