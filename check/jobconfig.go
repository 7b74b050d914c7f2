package check

import (
	"fmt"
	"strconv"
	"strings"
)

// JobConfig sets the job.* checks (YAML key "job"). Defaults and their
// reasons are in docs/checks.md, "Slurm and job launch".
type JobConfig struct {
	// Mode: "auto" (default: judge the job checks when gpuprobe runs inside a
	// job step), "always" (--job) or "never" (--no-job, and --slurm-drain).
	Mode string `yaml:"mode"`
	// MinCPUsPerGPU warns when the job has fewer CPUs per visible GPU.
	// Default 4: below that, data-loader workers starve the GPU.
	MinCPUsPerGPU float64 `yaml:"min_cpus_per_gpu"`
	// MinGPUMemory fails a visible GPU with less memory ("80GB", "40GiB",
	// "81920" MiB); empty (default) = no minimum. As --min-gpu-memory.
	MinGPUMemory string `yaml:"min_gpu_memory"`
	// UsedMemoryWarnMiB warns when a job's GPU already holds this much memory
	// that no process of the job accounts for. Default 1024: the driver
	// itself keeps a few hundred MiB.
	UsedMemoryWarnMiB uint64 `yaml:"used_memory_warn_mib"`
}

// DefaultJobConfig returns the documented defaults.
func DefaultJobConfig() JobConfig {
	return JobConfig{Mode: "auto", MinCPUsPerGPU: 4, UsedMemoryWarnMiB: 1024}
}

// Validate checks the values a YAML file or a flag may have got wrong.
func (c JobConfig) Validate() error {
	switch c.Mode {
	case "", "auto", "always", "never":
	default:
		return fmt.Errorf("job.mode: %q is not auto, always or never", c.Mode)
	}
	if c.MinCPUsPerGPU < 0 {
		return fmt.Errorf("job.min_cpus_per_gpu: %v is negative", c.MinCPUsPerGPU)
	}
	if _, err := ParseMemory(c.MinGPUMemory); err != nil {
		return fmt.Errorf("job.min_gpu_memory: %w", err)
	}
	return nil
}

// ParseMemory reads a memory size: a bare number is MiB; K/M/G/T (and
// KiB/MiB/GiB/TiB) are powers of 1024 as in Slurm's --mem; KB/MB/GB/TB are
// powers of 1000, so "80GB" accepts an H100 80GB (81559 MiB). "" is 0.
func ParseMemory(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.ToUpper(strings.TrimSpace(s[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a memory size such as 80GB or 40GiB", s)
	}
	mult := map[string]float64{"": 1 << 20, "K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GIB": 1 << 30,
		"T": 1 << 40, "TIB": 1 << 40, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "B": 1}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q (use MiB, GiB, MB, GB)", s, unit)
	}
	if v*mult > 1<<62 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return uint64(v * mult), nil
}
