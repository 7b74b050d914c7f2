package check

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config holds the expectations and thresholds checks judge against. It is
// read from YAML (--config) and then overridden by flags. Every default is
// documented, with its reason, in docs/checks.md.
type Config struct {
	// ExpectGPUs is the number of GPUs this node should have; 0 = no expectation.
	ExpectGPUs int `yaml:"expect_gpus"`
	// MinDriver is the oldest acceptable driver version ("535.104.05"); empty = any.
	MinDriver string    `yaml:"min_driver"`
	ECC       ECCConfig `yaml:"ecc"`
	// Checks and Skip select checks by ID or prefix, as --checks/--skip do.
	Checks []string `yaml:"checks"`
	Skip   []string `yaml:"skip"`
	// Strict turns warnings into failures, as --strict does.
	Strict bool `yaml:"strict"`

	XID          XIDConfig          `yaml:"xid"`
	RetiredPages RetiredPagesConfig `yaml:"retired_pages"`
	PCIe         PCIeConfig         `yaml:"pcie"`
	Temperature  TemperatureConfig  `yaml:"temperature"`
	Power        PowerConfig        `yaml:"power"`
	Processes    ProcessesConfig    `yaml:"processes"`
	MIG          MIGConfig          `yaml:"mig"`
	NVLink       NVLinkConfig       `yaml:"nvlink"`
	NCCL         NCCLConfig         `yaml:"nccl"`
	Job          JobConfig          `yaml:"job"`
	Topo         TopoConfig         `yaml:"topo"`
}

// XIDConfig sets gpu.xid.
type XIDConfig struct {
	// Critical replaces the default critical set (NVIDIA's reset/reboot/RMA
	// XIDs, see docs/checks.md); other XIDs warn.
	Critical []int `yaml:"critical"`
	// Ignore lists XIDs not reported at all.
	Ignore []int `yaml:"ignore"`
	// Window only counts events this recent (0 = since boot), as --xid-window.
	Window time.Duration `yaml:"window"`
}

// RetiredPagesConfig sets gpu.retired_pages.
type RetiredPagesConfig struct {
	// Max fails a GPU with this many retired pages. Default 60: NVIDIA's
	// RMA criterion for dynamic page retirement (the table holds 64).
	Max int `yaml:"max"`
}

// PCIeConfig sets gpu.pcie_link.
type PCIeConfig struct {
	// ReplayRatePerMinuteWarn warns when replays since boot average more than
	// this per minute. Default 8: DCGM's PCIe replay health threshold.
	ReplayRatePerMinuteWarn float64 `yaml:"replay_rate_per_minute_warn"`
}

// TemperatureConfig sets gpu.temperature; 0 means "from the GPU's own
// slowdown threshold" (fail at it, warn 5 °C below).
type TemperatureConfig struct {
	WarnC int `yaml:"warn_c"`
	FailC int `yaml:"fail_c"`
}

// PowerConfig sets gpu.power.
type PowerConfig struct {
	// MinLimitWatts fails a GPU whose enforced power limit was capped below
	// this (0 = off): a capped GPU silently loses throughput.
	MinLimitWatts float64 `yaml:"min_limit_watts"`
}

// ProcessesConfig sets gpu.processes.
type ProcessesConfig struct {
	// ExpectIdle (--expect-idle) fails instead of warning: for prologs and
	// health checks on nodes that should be empty.
	ExpectIdle bool `yaml:"expect_idle"`
	// IdleMemoryMiB is the memory in use, with no process listed, that counts
	// as a leftover. Default 1024: the driver itself holds a few hundred MiB.
	IdleMemoryMiB uint64 `yaml:"idle_memory_mib"`
}

// MIGConfig sets gpu.mig.
type MIGConfig struct {
	// Uniform fails when GPUs differ in MIG mode.
	Uniform bool `yaml:"uniform"`
	// Expect is "enabled", "disabled" or "" (no expectation).
	Expect string `yaml:"expect"`
}

// NVLinkConfig sets nvlink.state and nvlink.errors.
type NVLinkConfig struct {
	// ExpectedLinks per GPU; 0 = the most links up on any GPU of the same
	// model on this node.
	ExpectedLinks int `yaml:"expected_links"`
	// Per-link error counters since reset that warn (0 = off), and the
	// recovery count that fails.
	CRCFlitWarn  uint64 `yaml:"crc_flit_warn"`
	CRCDataWarn  uint64 `yaml:"crc_data_warn"`
	ReplayWarn   uint64 `yaml:"replay_warn"`
	RecoveryFail uint64 `yaml:"recovery_fail"`
}

// ECCConfig sets the ECC thresholds. A threshold of 0 disables that rule.
type ECCConfig struct {
	// VolatileUncorrectedFail: fail when the volatile (since last reset)
	// uncorrectable count reaches this. Default 1: any uncorrectable error
	// since the last reset may have corrupted a job's data.
	VolatileUncorrectedFail uint64 `yaml:"volatile_uncorrected_fail"`
	// AggregateUncorrectedWarn: warn when the lifetime uncorrectable count
	// reaches this. Default 1: the GPU has a history worth watching.
	AggregateUncorrectedWarn uint64 `yaml:"aggregate_uncorrected_warn"`
	// VolatileCorrectedWarn: warn when corrected errors since reset reach
	// this. Default 10000: hardware fixes them, but a storm predicts remaps.
	VolatileCorrectedWarn uint64 `yaml:"volatile_corrected_warn"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() *Config {
	return &Config{
		ECC:          ECCConfig{VolatileUncorrectedFail: 1, AggregateUncorrectedWarn: 1, VolatileCorrectedWarn: 10000},
		RetiredPages: RetiredPagesConfig{Max: 60},
		PCIe:         PCIeConfig{ReplayRatePerMinuteWarn: 8},
		Processes:    ProcessesConfig{IdleMemoryMiB: 1024},
		NVLink:       NVLinkConfig{CRCFlitWarn: 100, CRCDataWarn: 100, ReplayWarn: 100, RecoveryFail: 1},
		Job:          DefaultJobConfig(),
		Topo:         DefaultTopoConfig(),
	}
}

// LoadConfig reads a YAML config over the defaults. Unknown keys are errors,
// so a misspelt threshold never silently falls back to its default.
func LoadConfig(path string) (*Config, error) {
	cfg := DefaultConfig()
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := ParseConfig(data, cfg); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig decodes YAML into cfg, keeping what the YAML does not set.
func ParseConfig(data []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && err.Error() != "EOF" {
		return err
	}
	switch cfg.MIG.Expect {
	case "", "enabled", "disabled":
	default:
		return fmt.Errorf("mig.expect: %q is not enabled, disabled or empty", cfg.MIG.Expect)
	}
	if cfg.MinDriver != "" && strings.Trim(cfg.MinDriver, "0123456789.") != "" {
		return fmt.Errorf("min_driver: %q is not a version like 550.54.15", cfg.MinDriver)
	}
	return nil
}
