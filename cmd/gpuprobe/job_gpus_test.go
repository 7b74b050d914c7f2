package main

import (
	"context"
	"slices"
	"testing"

	"github.com/gpuprobe/gpuprobe/collect"
)

// Slurm's numbers (SLURM_STEP_GPUS, scontrol's IDX) are marked as Slurm's,
// so collect.Job asks NVML whether MIG is on before it takes them as GPUs
// (on a MIG node they number GRES records, one per MIG instance); --gpus is
// NVML's own numbering and is taken as it is.
func TestJobGPUsMarksSlurmNumbers(t *testing.T) {
	for _, c := range []struct {
		name  string
		gpus  string
		env   map[string]string
		want  []int
		slurm bool
	}{
		{"step variables", "", map[string]string{"SLURM_STEP_GPUS": "12,13"}, []int{12, 13}, true},
		{"--gpus", "0,1", map[string]string{"SLURM_STEP_GPUS": "12,13"}, []int{0, 1}, false},
	} {
		c0 := testCLI()
		c0.getenv = func(k string) string { return c.env[k] }
		var jo collect.JobOptions
		if err := c0.jobGPUs(context.Background(), &jobFlags{gpus: c.gpus}, &jo, nil, nil, "gpu001"); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(jo.GPUs, c.want) || jo.SlurmGPUNumbers != c.slurm {
			t.Errorf("%s: GPUs %v (Slurm's numbers %v), want %v (%v)", c.name, jo.GPUs, jo.SlurmGPUNumbers, c.want, c.slurm)
		}
	}
}
