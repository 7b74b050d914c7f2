package topostate

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
