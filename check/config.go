package check

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config holds the expectations and thresholds checks judge against. It is
// read from YAML (--config) and then overridden by flags. Every default is
// documented, with its reason, in docs/checks.md.
type Config struct {
	// ExpectGPUs is the number of GPUs this node should have; 0 = the
	// platform's count where the platform is certain of it, else none.
	ExpectGPUs int `yaml:"expect_gpus"`
	// Platform overrides the detected platform profile (check/platform.go).
	Platform PlatformConfig `yaml:"platform"`
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
	Throttle     ThrottleConfig     `yaml:"throttle"`
	Temperature  TemperatureConfig  `yaml:"temperature"`
	Power        PowerConfig        `yaml:"power"`
	Processes    ProcessesConfig    `yaml:"processes"`
	MIG          MIGConfig          `yaml:"mig"`
	NVLink       NVLinkConfig       `yaml:"nvlink"`
	NCCL         NCCLConfig         `yaml:"nccl"`
	Job          JobConfig          `yaml:"job"`
	Perf         PerfConfig         `yaml:"perf"`
	Topo         TopoConfig         `yaml:"topo"`
	Drain        DrainConfig        `yaml:"drain"`
	Verify       VerifyConfig       `yaml:"verify"`
}

// VerifyConfig sets the verify.* checks (check/verify.go, docs/verify.md).
type VerifyConfig struct {
	// WarnPercent and FailPercent: a figure below this share of the
	// platform's expected figure (check/verifyexpect.go) warns, fails.
	// Defaults 85 and 70: the table's figures are what healthy GPUs
	// achieve, and published runs of healthy nodes spread about ±10%
	// around them (docs/verify.md); a link trained one generation down
	// gives 50%.
	WarnPercent float64 `yaml:"warn_percent"`
	FailPercent float64 `yaml:"fail_percent"`
	// OutlierPercent: a GPU (or GPU pair) below this share of the median
	// of its siblings on the node fails, with or without a table row.
	// Default 75 (issue #28: one GPU at 60% of its siblings must fail; a
	// node's identical GPUs measure within a few percent of each other,
	// NVIDIA/nvbandwidth#6: 56.7–57.1 GB/s beside the one at 14.2). Needs
	// three figures: with two, neither is known to be the slow one.
	OutlierPercent float64 `yaml:"outlier_percent"`
}

// DefaultVerifyConfig is verify's defaults.
func DefaultVerifyConfig() VerifyConfig {
	return VerifyConfig{WarnPercent: 85, FailPercent: 70, OutlierPercent: 75}
}

// DrainConfig sets which node checks drain the node under --slurm-drain.
type DrainConfig struct {
	// ConfigChecks also drains on findings of the checks that judge the
	// Slurm configuration (slurm.gres, slurm.topology). Off by default: one
	// wrong line in a shared gres.conf would drain every node that reads it,
	// while the GPUs are fine; the finding is reported (and alerted on) either way.
	ConfigChecks bool `yaml:"config_checks"`
	// Breaker stops new drains when gpuprobe's drains already cover too
	// much of the cluster (check/breaker.go, docs/slurm.md).
	Breaker BreakerConfig `yaml:"breaker"`
	// ResumeNodeClass lets a passing run lift a node-class drain (the
	// default); false keeps node-class drains for an admin, and only
	// transient and config drains are lifted by gpuprobe (check/history.go).
	ResumeNodeClass bool `yaml:"resume_node_class"`
	// ResumeVerify: a passing health check lifts a node-class drain only
	// when gpuprobe verify --quick also passes on the node (the quarantine
	// cycle's last step, docs/slurm.md). Off by default: verify loads the
	// GPUs for up to 30 s inside the health check's time.
	ResumeVerify bool `yaml:"resume_verify"`
	// EscalateWithin: a fault that comes back this soon after its drain was
	// lifted escalates its class (transient → node → held for an admin);
	// 0 turns escalation off. Default 7 days.
	EscalateWithin time.Duration `yaml:"escalate_within"`
}

// DefaultDrainConfig is drain's defaults.
func DefaultDrainConfig() DrainConfig {
	return DrainConfig{Breaker: DefaultBreakerConfig(), ResumeNodeClass: true, EscalateWithin: 7 * 24 * time.Hour}
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
	// Recurrence escalates application-class XIDs (NVIDIA's RESTART_APP)
	// that recur on one GPU to a failure.
	Recurrence XIDRecurrence `yaml:"recurrence"`
}

// XIDRecurrence: Count separate incidents of RESTART_APP-class XIDs on one
// GPU alone (a burst of lines is one incident; one that other GPUs share at
// the same time is the job's, not this GPU's) within any Window fail gpu.xid.
// Defaults 5 within 24h (docs/checks.md, gpu.xid); Count 0 turns it off,
// Window 0 counts since boot.
type XIDRecurrence struct {
	Count  int           `yaml:"count"`
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
	// ReplayRatePerMinuteWarn, when above 0, is a fixed replay rate per
	// minute above which gpu.pcie_link warns. Default 0: DCGM's PCIe replay
	// health limit, scaled by the link's current generation and width
	// (Gen4 x16 16/min, Gen5 x16 31/min; pcieReplayLimit).
	ReplayRatePerMinuteWarn float64 `yaml:"replay_rate_per_minute_warn"`
}

// ThrottleConfig sets gpu.throttle's judgement over time.
type ThrottleConfig struct {
	// ViolationWarnPercent warns when NVML's thermal or board-limit
	// violation counter grew by more than this share of the time between
	// the daemon's two samples. Default 10 (docs/checks.md, gpu.throttle):
	// no NVIDIA document gives a threshold; a tenth of the time below
	// application clocks is a loss a job can measure, while a clock
	// transition lasts milliseconds, far under a tenth of any scrape
	// interval the daemon accepts.
	ViolationWarnPercent float64 `yaml:"violation_warn_percent"`
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
	// ExpectedLinks per GPU; 0 = the platform's (check/platform.go), or
	// on an unknown platform the most links up on any GPU of the same model
	// on this node.
	ExpectedLinks int `yaml:"expected_links"`
	// One sample (a one-shot check, the daemon's first cycle): per-link
	// error counts since the counters were last reset (driver load, GPU
	// reset) that warn (0 = off). Default 100 each.
	CRCFlitWarn uint64 `yaml:"crc_flit_warn"`
	CRCDataWarn uint64 `yaml:"crc_data_warn"`
	ReplayWarn  uint64 `yaml:"replay_warn"`
	// RecoveryFail: recoveries on one link between the daemon's two samples
	// that fail (0 = off). Default 1: DCGM's NVLink health watch fails any
	// recovery-counter growth (DCGM_LIMIT_MAX_NVLINK_ERROR). From one
	// sample the count is not known to be growing and only warns.
	RecoveryFail uint64 `yaml:"recovery_fail"`
	// Between the daemon's two samples, per link: CRC flit or data errors
	// at CRCWarnPerMinute or faster warn, at CRCFailPerSecond or faster
	// fail (0 = off). Defaults 1/min (DCGM warns on any CRC growth in its
	// one-minute default window) and 100/s (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR:
	// "CRC errors only matter at rates of 100+ per second").
	CRCWarnPerMinute float64 `yaml:"crc_warn_per_minute"`
	CRCFailPerSecond float64 `yaml:"crc_fail_per_second"`
	// Replays on one link between two samples that warn and that fail (0 =
	// off). Defaults 1 and 0: DCGM fails any replay growth; docs/checks.md
	// says why gpuprobe warns.
	ReplayGrowthWarn uint64 `yaml:"replay_growth_warn"`
	ReplayGrowthFail uint64 `yaml:"replay_growth_fail"`
}

// DefaultNVLinkConfig: lifetime counts of 100 warn from one sample; in the
// daemon DCGM's NVLink health-watch limits (docs/checks.md, nvlink.errors).
func DefaultNVLinkConfig() NVLinkConfig {
	return NVLinkConfig{CRCFlitWarn: 100, CRCDataWarn: 100, ReplayWarn: 100, RecoveryFail: 1,
		CRCWarnPerMinute: 1, CRCFailPerSecond: 100, ReplayGrowthWarn: 1}
}

// ECCConfig sets the ECC thresholds. A threshold of 0 disables that rule.
type ECCConfig struct {
	// VolatileUncorrectedFail: fail when the volatile (since last reset)
	// uncorrectable count reaches this. Default 1: any uncorrectable error
	// since the last reset may have corrupted a job's data.
	VolatileUncorrectedFail uint64 `yaml:"volatile_uncorrected_fail"`
	// AggregateUncorrectedWarn: warn when the lifetime uncorrectable count
	// reaches this. Default 0 (off): the aggregate counter never resets, so
	// any threshold warns for the rest of the GPU's life (with --strict, a
	// drain that never lifts), while what an uncorrectable error demands —
	// a reset, a row remap — is judged from the volatile count and
	// gpu.row_remap. Sites that want the history flagged set it.
	AggregateUncorrectedWarn uint64 `yaml:"aggregate_uncorrected_warn"`
	// VolatileCorrectedWarn: warn when corrected errors since reset reach
	// this. Default 10000: hardware fixes them, but a storm predicts remaps.
	VolatileCorrectedWarn uint64 `yaml:"volatile_corrected_warn"`
}

// DefaultConfig returns the documented defaults.
// MaxXIDCode is the largest Xid code the kernel collector reads from a line
// (kernel.parseXid) and the configuration accepts.
const MaxXIDCode = 100000

func DefaultConfig() *Config {
	return &Config{
		ECC:          ECCConfig{VolatileUncorrectedFail: 1, VolatileCorrectedWarn: 10000},
		RetiredPages: RetiredPagesConfig{Max: 60},
		XID:          XIDConfig{Recurrence: XIDRecurrence{Count: 5, Window: 24 * time.Hour}},
		PCIe:         PCIeConfig{},
		Throttle:     ThrottleConfig{ViolationWarnPercent: 10},
		Processes:    ProcessesConfig{IdleMemoryMiB: 1024},
		NVLink:       DefaultNVLinkConfig(),
		Job:          DefaultJobConfig(),
		Perf:         DefaultPerfConfig(),
		Topo:         DefaultTopoConfig(),
		Drain:        DefaultDrainConfig(),
		Verify:       DefaultVerifyConfig(),
	}
}

// ParseConfig decodes one YAML document into cfg, keeping what the YAML
// does not set, and validates it. Unknown keys are errors, so a misspelt
// threshold never silently falls back to its default; so are a second
// document (it would be ignored), a NaN, an infinity or a negative number in
// any threshold (each turns its rule off), and values outside the ranges
// below. Reading the file is the command's job (cmd/gpuprobe), under the
// run's deadline and a size limit.
func ParseConfig(data []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return fmt.Errorf("line %d: a second YAML document; a config is one document (the rest would be ignored)", extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return err
	}
	return cfg.Validate()
}

// Validate checks every threshold: finite, not negative, and in range.
func (cfg *Config) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	numbers(reflect.ValueOf(cfg).Elem(), "", bad)
	switch cfg.MIG.Expect {
	case "", "enabled", "disabled":
	default:
		bad("mig.expect: %q is not enabled, disabled or empty", cfg.MIG.Expect)
	}
	if cfg.MinDriver != "" && strings.Trim(cfg.MinDriver, "0123456789.") != "" {
		bad("min_driver: %q is not a version like 550.54.15", cfg.MinDriver)
	}
	if cfg.ExpectGPUs > maxGPUs {
		bad("expect_gpus: %d is more GPUs than a node holds (at most %d)", cfg.ExpectGPUs, maxGPUs)
	}
	if cfg.RetiredPages.Max > 64 {
		bad("retired_pages.max: %d, but the retirement table holds 64 pages: the rule could never fire", cfg.RetiredPages.Max)
	}
	for _, t := range []struct {
		key string
		c   int
	}{{"temperature.warn_c", cfg.Temperature.WarnC}, {"temperature.fail_c", cfg.Temperature.FailC}} {
		if t.c != 0 && (t.c < 20 || t.c > 150) {
			bad("%s: %d °C is outside 20..150 (0: from the GPU's own slowdown threshold)", t.key, t.c)
		}
	}
	if w, f := cfg.Temperature.WarnC, cfg.Temperature.FailC; w != 0 && f != 0 && w >= f {
		bad("temperature.warn_c %d must be below temperature.fail_c %d", w, f)
	}
	if cfg.Throttle.ViolationWarnPercent > 100 {
		bad("throttle.violation_warn_percent: %g%% of an interval can never be exceeded", cfg.Throttle.ViolationWarnPercent)
	}
	if cfg.Power.MinLimitWatts > 10000 {
		bad("power.min_limit_watts: %g W is more than any GPU draws", cfg.Power.MinLimitWatts)
	}
	if cfg.NVLink.ExpectedLinks > 64 {
		bad("nvlink.expected_links: %d, NVML knows at most 18 links per GPU", cfg.NVLink.ExpectedLinks)
	}
	if w, f := cfg.NVLink.CRCWarnPerMinute, cfg.NVLink.CRCFailPerSecond; w > 0 && f > 0 && w >= f*60 {
		bad("nvlink.crc_warn_per_minute %g must be below nvlink.crc_fail_per_second %g (%g per minute): the warning could never come first", w, f, f*60)
	}
	if w, f := cfg.NVLink.ReplayGrowthWarn, cfg.NVLink.ReplayGrowthFail; w > 0 && f > 0 && w > f {
		bad("nvlink.replay_growth_warn %d is above nvlink.replay_growth_fail %d: the warning could never come first", w, f)
	}
	cfg.Platform.validate(bad)
	cfg.Drain.Breaker.validate(bad)
	if w := cfg.Drain.EscalateWithin; w < 0 || w > 366*24*time.Hour {
		bad("drain.escalate_within: %s is outside [0, 366 days] (0 turns escalation off)", w)
	}
	for key, codes := range map[string][]int{"xid.critical": cfg.XID.Critical, "xid.ignore": cfg.XID.Ignore} {
		for _, c := range codes {
			// The kernel collector reads Xid codes up to MaxXIDCode; a
			// code the driver can print must be configurable (issue 26:
			// codes above 999 were parsed but refused here).
			if c < 1 || c > MaxXIDCode {
				bad("%s: %d is not an XID (1..%d)", key, c, MaxXIDCode)
			}
		}
	}
	if c := cfg.XID.Recurrence.Count; c == 1 {
		bad("xid.recurrence.count: 1 would fail every application fault; a recurrence is 2 or more (0 = off)")
	} else if c > 10000 {
		bad("xid.recurrence.count: %d incidents is more than a log holds", c)
	}
	if v := cfg.Verify; v.WarnPercent > 100 || v.FailPercent > 100 || v.OutlierPercent > 100 {
		bad("verify: warn_percent, fail_percent and outlier_percent are shares of an expected figure, at most 100")
	} else if v.FailPercent > v.WarnPercent {
		bad("verify.fail_percent %g is above verify.warn_percent %g: the warning could never come first", v.FailPercent, v.WarnPercent)
	}
	if err := cfg.Perf.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// maxGPUs mirrors state.MaxGPUs without importing it for one number.
const maxGPUs = 1024

// numbers walks the config and reports every number that is NaN, infinite
// or negative, by its YAML key. No gpuprobe threshold is meaningfully
// negative, and each of these silently turns its rule off.
func numbers(v reflect.Value, path string, bad func(string, ...any)) {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if key == "-" {
				continue
			}
			if key == "" {
				key = strings.ToLower(f.Name)
			}
			if path != "" {
				key = path + "." + key
			}
			numbers(v.Field(i), key, bad)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			numbers(v.Index(i), fmt.Sprintf("%s[%d]", path, i), bad)
		}
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			bad("%s: %v is not a finite number", path, f)
		} else if f < 0 {
			bad("%s: %v is negative", path, f)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeOf(time.Duration(0)) {
			if v.Int() < 0 {
				bad("%s: %v is negative", path, time.Duration(v.Int()))
			}
		} else if v.Int() < 0 {
			bad("%s: %d is negative", path, v.Int())
		}
	}
}
