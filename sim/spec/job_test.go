package spec

import (
	"strings"
	"testing"
)

func TestJobScenario(t *testing.T) {
	cases := []struct {
		spec, want, err string
	}{
		{"dgx-h100", "", ""},
		{"dgx-h100:job-io-bound", "job-io-bound", ""},
		{"dgx-h100:test-fault,job-one-gpu", "job-one-gpu", ""},
		{"dgx-h100:job-io-bound,job-one-gpu", "", "one simulated job at a time"},
	}
	for _, c := range cases {
		s, err := Parse(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		j, err := s.Job()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.spec, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		got := ""
		if j != nil {
			got = j.Fault
		}
		if got != c.want {
			t.Errorf("%s: scenario %q, want %q", c.spec, got, c.want)
		}
	}
	for _, j := range JobScenarios {
		n := len(SimJob.GPUs)
		if len(j.GPUUtil) != n || len(j.MemUtil) != n || len(j.GPUMemPercent) != n || len(j.RanksOnGPU) != n {
			t.Errorf("%s: per-GPU rows must have %d entries", j.Fault, n)
		}
	}
}
