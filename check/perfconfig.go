package check

import "fmt"

// PerfConfig sets the perf.* checks that `gpuprobe job` runs on a sampled
// job (YAML key "perf"). Every default and its reason is in docs/job.md,
// "Thresholds".
type PerfConfig struct {
	// IdlePercent: a GPU whose mean utilisation over the window is below
	// this is "mostly idle" (waiting more than 70% of the time at 30).
	IdlePercent float64 `yaml:"idle_percent"`
	// BusyPercent: every used GPU at or above this is GPU-bound.
	BusyPercent float64 `yaml:"busy_percent"`
	// UnusedPercent: a GPU below this, with no process of the job and
	// UnusedMemoryMiB or less in use, is not used by the job at all.
	UnusedPercent   float64 `yaml:"unused_percent"`
	UnusedMemoryMiB uint64  `yaml:"unused_memory_mib"`
	// CPUSaturatedPercent: CPU time used at or above this share of the
	// allocated CPUs × window is a saturated allocation.
	CPUSaturatedPercent float64 `yaml:"cpu_saturated_percent"`
	// ProcessCPUPercent: one process whose CPU time is at or above this
	// share of one CPU × window (and below two CPUs' worth) while the job's
	// allocation is not saturated is a serial bottleneck: one loader worker,
	// or the training loop's Python thread under the GIL.
	ProcessCPUPercent float64 `yaml:"process_cpu_percent"`
	// IOWaitTasks: the job's tasks in state D, averaged over the ticks, at or
	// above this means it waits for reads; IOPressurePercent is the same
	// judgement from cgroup v2 io.pressure "some" (share of the window).
	IOWaitTasks       float64 `yaml:"io_wait_tasks"`
	IOPressurePercent float64 `yaml:"io_pressure_percent"`
	// FitMemoryPercent: when every used GPU holds less than this share of
	// its memory and is mostly idle, the work fits on fewer GPUs.
	FitMemoryPercent float64 `yaml:"fit_memory_percent"`
	// MemoryLimitPercent: host memory at or above this share of the job's
	// cgroup limit is "at the limit" (with swap or reclaim events: warn).
	MemoryLimitPercent float64 `yaml:"memory_limit_percent"`
	// ThrottledPercent: a busy GPU slowed by the hardware (HW slowdown,
	// thermal, power brake) in at least this share of ticks warns.
	ThrottledPercent float64 `yaml:"throttled_percent"`
	// MinSamples: fewer GPU ticks than this cannot say what a job does.
	MinSamples int `yaml:"min_samples"`
}

// DefaultPerfConfig returns the documented defaults.
func DefaultPerfConfig() PerfConfig {
	return PerfConfig{IdlePercent: 30, BusyPercent: 80, UnusedPercent: 5, UnusedMemoryMiB: 1024,
		CPUSaturatedPercent: 90, ProcessCPUPercent: 90, IOWaitTasks: 1, IOPressurePercent: 25, FitMemoryPercent: 25,
		MemoryLimitPercent: 90, ThrottledPercent: 50, MinSamples: 3}
}

// Validate rejects thresholds that cannot mean anything.
func (c PerfConfig) Validate() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"idle_percent", c.IdlePercent}, {"busy_percent", c.BusyPercent}, {"unused_percent", c.UnusedPercent},
		{"cpu_saturated_percent", c.CPUSaturatedPercent}, {"process_cpu_percent", c.ProcessCPUPercent}, {"io_pressure_percent", c.IOPressurePercent},
		{"fit_memory_percent", c.FitMemoryPercent}, {"memory_limit_percent", c.MemoryLimitPercent},
		{"throttled_percent", c.ThrottledPercent}} {
		if p.v < 0 || p.v > 100 {
			return fmt.Errorf("perf.%s: %v is not a percentage (0-100)", p.name, p.v)
		}
	}
	if c.IdlePercent > c.BusyPercent {
		return fmt.Errorf("perf.idle_percent (%v) is above perf.busy_percent (%v)", c.IdlePercent, c.BusyPercent)
	}
	if c.IOWaitTasks < 0 {
		return fmt.Errorf("perf.io_wait_tasks: %v is negative", c.IOWaitTasks)
	}
	if c.MinSamples < 1 {
		return fmt.Errorf("perf.min_samples: %d, want at least 1", c.MinSamples)
	}
	return nil
}
