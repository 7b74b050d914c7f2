package check

import (
	"strings"
	"testing"
)

func TestDefaultConfigValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("the defaults fail their own validation: %v", err)
	}
}

// Each of these used to load and silently turn a rule off (or be ignored).
func TestParseConfigRejects(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"temperature: {fail_c: -1000}\n", "temperature.fail_c: -1000 is negative"},
		{"temperature: {warn_c: 90, fail_c: 85}\n", "warn_c 90 must be below"},
		{"temperature: {fail_c: 1000}\n", "outside 20..150"},
		{"pcie: {replay_rate_per_minute_warn: .nan}\n", "pcie.replay_rate_per_minute_warn: NaN is not a finite number"},
		{"power: {min_limit_watts: .inf}\n", "power.min_limit_watts: +Inf is not a finite number"},
		{"power: {min_limit_watts: -5}\n", "power.min_limit_watts: -5 is negative"},
		{"retired_pages: {max: -1}\n", "retired_pages.max: -1 is negative"},
		{"expect_gpus: -2\n", "expect_gpus: -2 is negative"},
		{"expect_gpus: 50000000\n", "more GPUs than a node holds"},
		{"xid: {critical: [0, 79]}\n", "xid.critical: 0 is not an XID"},
		{"xid: {window: -5m}\n", "xid.window: -5m0s is negative"},
		{"strict: true\n---\nstrict: false\n", "line 2: a second YAML document"},
		{"nvlink: {crc_fail_per_second: .nan}\n", "nvlink.crc_fail_per_second: NaN is not a finite number"},
		{"nvlink: {crc_warn_per_minute: -1}\n", "nvlink.crc_warn_per_minute: -1 is negative"},
		{"nvlink: {crc_warn_per_minute: 600, crc_fail_per_second: 10}\n", "nvlink.crc_warn_per_minute 600 must be below nvlink.crc_fail_per_second 10"},
		{"nvlink: {replay_growth_warn: 5, replay_growth_fail: 2}\n", "nvlink.replay_growth_warn 5 is above nvlink.replay_growth_fail 2"},
	} {
		err := ParseConfig([]byte(tc.yaml), DefaultConfig())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func TestParseConfigAccepts(t *testing.T) {
	for _, y := range []string{"", "---\nstrict: true\n", "# only a comment\n", "temperature: {warn_c: 80, fail_c: 88}\nxid: {critical: [79, 48]}\n",
		"nvlink: {recovery_fail: 1, crc_warn_per_minute: 0.5, crc_fail_per_second: 100, replay_growth_warn: 1, replay_growth_fail: 1}\n"} {
		if err := ParseConfig([]byte(y), DefaultConfig()); err != nil {
			t.Errorf("ParseConfig(%q): %v", y, err)
		}
	}
}
