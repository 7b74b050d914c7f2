package check

import (
	"fmt"

	"github.com/gpuprobe/gpuprobe/state"
)

// gspTimeouts judges the driver's "GSP Timeout" banners in the kernel log
// for gpu.xid (docs/checks.md). The driver prints the banner and then logs
// the timeout as an Xid (open-gpu-kernel-modules
// src/nvidia/src/kernel/gpu/gsp/kernel_gsp.c, _kgspLogRpcTimeout: Xid 119
// GSP_RPC_TIMEOUT, or 175 MEMORY_SUBSYSTEM_ERROR on 595 drivers). Where
// that Xid line is in the log, it is the finding and the banner adds
// nothing. Where it is not (a ticket's excerpt cut after the banner), the
// log shows a GSP timeout it cannot attribute: the banner names the GPU
// only by the driver's instance number, not its PCI address, and which Xid
// followed (NVIDIA's catalogue gives 119 RESET_GPU; 175 is not in it) is
// not in the log. That warns: a timeout read, its GPU and action unknown.
// It never passes as a clean log.
func gspTimeouts(n *state.Node, k *state.Kernel, cfg *Config, v *verdict) {
	withXid := map[int]bool{} // driver loads whose log holds an Xid 119 or 175
	for _, ev := range k.XIDs {
		if ev.Code == 119 || ev.Code == 175 {
			withXid[ev.DriverLoad] = true
		}
	}
	for _, ev := range k.GSPTimeouts {
		if cfg.XID.Window > 0 && !ev.Time.IsZero() && ev.Time.Before(n.CollectedAt.Add(-cfg.XID.Window)) {
			continue
		}
		if withXid[ev.DriverLoad] {
			continue
		}
		if beforeDriverLoad(k, ev.DriverLoad) {
			// A later driver load reset every GPU, as it answers an Xid
			// 119 (RESET_GPU: clearedByDriverLoad).
			continue
		}
		who := "a GPU the banner does not name"
		if ev.GPU != "" {
			who = ev.GPU + " (the driver's number for it, not a PCI address)"
		}
		v.add(Warn, nil, "read the node's full kernel log (dmesg | grep -E 'Xid|GSP'): the Xid after the banner decides; "+
			"Xid 119 means drain and reset the GPU (NVIDIA's Xid catalogue: RESET_GPU)",
			fmt.Sprintf("the driver logged a GSP RPC timeout on %s (%d \"GSP Timeout\" banner(s)), but not the Xid line it logs with it: "+
				"which GPU and which Xid the log cannot say", who, ev.Lines))
	}
}
