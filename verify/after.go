package verify

import (
	"github.com/gpuprobe/gpuprobe/state"
)

// AfterRun fills what one NVML sample cannot show into each compute
// measurement's load watch, from the node collected before the run and the
// one collected right after it: the growth of the volatile uncorrectable
// ECC count, the Xids the kernel logged for the GPU that the first
// collection had not seen (by sequence number, else by count), and whether
// the GPU is lost now. The window is the whole run, the load included: an
// error during a copy is as much the GPU's. Pure: both nodes are facts
// already collected.
func AfterRun(v *state.Verify, before, after *state.Node) {
	if v == nil || after == nil {
		return
	}
	gpu := func(n *state.Node, i int) *state.GPU {
		if n == nil || n.NVML == nil {
			return nil
		}
		for k := range n.NVML.GPUs {
			if n.NVML.GPUs[k].Index == i {
				return &n.NVML.GPUs[k]
			}
		}
		return nil
	}
	seen := map[uint64]bool{}
	seenCount := map[string]int{}
	if before != nil && before.Kernel != nil {
		for _, e := range before.Kernel.XIDs {
			if e.Seq != 0 {
				seen[e.Seq] = true
			}
			seenCount[e.BusID]++
		}
	}
	for k := range v.Measurements {
		m := &v.Measurements[k]
		if m.Kind != state.MeasureCompute || m.GPU < 0 {
			continue
		}
		if m.Load == nil {
			m.Load = &state.LoadWatch{ECCDelta: -1}
		}
		b, a := gpu(before, m.GPU), gpu(after, m.GPU)
		if a == nil {
			continue
		}
		m.Load.Lost = m.Load.Lost || a.Lost
		if b != nil && b.ECC != nil && a.ECC != nil && b.ECC.Volatile.Uncorrected != nil && a.ECC.Volatile.Uncorrected != nil {
			m.Load.ECCDelta = int64(*a.ECC.Volatile.Uncorrected) - int64(*b.ECC.Volatile.Uncorrected)
		}
		if after.Kernel == nil || a.PCIBusID == "" {
			continue
		}
		count := map[string]int{}
		for _, e := range after.Kernel.XIDs {
			if !e.MatchGPU(a.PCIBusID) {
				continue
			}
			count[e.BusID]++
			if e.Seq != 0 && seen[e.Seq] || e.Seq == 0 && count[e.BusID] <= seenCount[e.BusID] {
				continue
			}
			m.Load.XIDs = append(m.Load.XIDs, e.Code)
		}
	}
}
