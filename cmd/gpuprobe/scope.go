package main

import (
	"fmt"
	"slices"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state"
)

// scopeFlag resolves check --gpus: an NVML index list, or "job" for the
// job's own GPUs as slurmd hands them to a Prolog or Epilog
// (SLURM_JOB_GPUS, global indexes; prolog_epilog.html lists it). The
// returned label names the scope in the report.
func (c *cli) scopeFlag(v string) ([]int, string, error) {
	if v == "" {
		return nil, "", nil
	}
	from := "--gpus " + v
	if v == "job" {
		v = c.getenv("SLURM_JOB_GPUS")
		from = "SLURM_JOB_GPUS=" + v
		if v == "" {
			return nil, "", fmt.Errorf("--gpus job: SLURM_JOB_GPUS is not set (a Prolog/Epilog of a job with GPUs has it)")
		}
	}
	l, err := cpulist.Parse(v)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %v", from, err)
	}
	return l, "GPU " + cpulist.Format(l) + " (" + from + ")", nil
}

// scopeNode keeps only the listed GPUs in the node state, and the XIDs
// that do not name another GPU: a Prolog or Epilog judges its job's GPUs,
// so another job's leftover process or a fault on another GPU does not
// fail it (the health check and the daemon judge the whole node). The GPU
// count expectation is the whole node's and is not applied.
func scopeNode(n *state.Node, cfg *check.Config, keep []int, label string) {
	if keep == nil || n.NVML == nil {
		return
	}
	var kept []state.GPU
	var others []string
	for _, g := range n.NVML.GPUs {
		if slices.Contains(keep, g.Index) {
			kept = append(kept, g)
		} else if g.PCIBusID != "" {
			others = append(others, g.PCIBusID)
		}
	}
	n.NVML.GPUs = kept
	if n.Kernel != nil {
		var xids []state.XIDEvent
		for _, ev := range n.Kernel.XIDs {
			if !slices.ContainsFunc(others, ev.MatchGPU) {
				xids = append(xids, ev)
			}
		}
		n.Kernel.XIDs = xids
	}
	n.Scope = label
	cfg.ExpectGPUs = 0
}
