package check

import (
	"bytes"
	"fmt"
	"os"

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
	return &Config{ECC: ECCConfig{VolatileUncorrectedFail: 1, AggregateUncorrectedWarn: 1, VolatileCorrectedWarn: 10000}}
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
	return nil
}
