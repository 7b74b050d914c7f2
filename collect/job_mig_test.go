package collect_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuprobe/gpuprobe/collect"
	nvmlsim "github.com/gpuprobe/gpuprobe/sim/nvml"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// Slurm numbers GRES records, and on a node with MIG on each MIG instance
// is a record: scontrol show job -d's IDX (or SLURM_STEP_GPUS) there are no
// GPU numbers (real records on one A100 node: "gpu:a100.MIG.20gb:5(IDX:0,3,5-7)",
// "gpu:a100.MIG.10gb:2(IDX:8,9)"). `gpuprobe job` sampled NVML GPUs 4-7 for
// a job whose processes run on 0-3; now it asks NVML whether MIG is on and
// then takes the GPUs that run the job's processes, saying why.
func TestJobSlurmNumbersOnMIG(t *testing.T) {
	spec, err := simulate.Parse("dgx-a100:job-healthy")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		mig      []int // GPUs with MIG on
		slurm    bool  // the numbers are Slurm's
		wantGPUs []int
		wantFrom string
	}{
		{"MIG on, Slurm's numbers", []int{0, 1, 2, 3}, true, []int{0, 1, 2, 3}, "processes (scontrol show job -d numbers Slurm's GRES records, and MIG is on for GPU 0-3 here"},
		{"MIG off, Slurm's numbers", nil, true, []int{4, 5, 6, 7}, "scontrol show job -d"},
		{"MIG on, --gpus", []int{0, 1, 2, 3}, false, []int{4, 5, 6, 7}, "--gpus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := simSources(t, spec, func(s *nvmlsim.System) {
				for _, i := range c.mig {
					s.Devices[i].SetMigMode(gonvml.DEVICE_MIG_ENABLE)
				}
			})
			from := "scontrol show job -d"
			if !c.slurm {
				from = "--gpus"
			}
			p, err := collect.Job(context.Background(), collect.JobOptions{
				Options: collect.Options{Sources: src, CallTimeout: time.Second},
				JobID:   simulate.SimJob.ID, Duration: 100 * time.Millisecond, Interval: 50 * time.Millisecond,
				GPUs: []int{4, 5, 6, 7}, GPUsFrom: from, SlurmGPUNumbers: c.slurm})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, g := range p.GPUs {
				got = append(got, g.Index)
			}
			if !slices.Equal(got, c.wantGPUs) || !strings.HasPrefix(p.GPUsFrom, c.wantFrom) {
				t.Errorf("GPUs %v from %q, want %v from %q…; errors %v", got, p.GPUsFrom, c.wantGPUs, c.wantFrom, p.Errors)
			}
		})
	}
}
