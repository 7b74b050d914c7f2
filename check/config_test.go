package check

import (
	"os"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
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
		{"xid: {ignore: [100001]}\n", "xid.ignore: 100001 is not an XID (1..100000)"},
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
		// Issue 26: codes above 999 are read from the log, so configurable.
		"xid: {critical: [1001], ignore: [4096]}\n",
		"nvlink: {recovery_fail: 1, crc_warn_per_minute: 0.5, crc_fail_per_second: 100, replay_growth_warn: 1, replay_growth_fail: 1}\n"} {
		if err := ParseConfig([]byte(y), DefaultConfig()); err != nil {
			t.Errorf("ParseConfig(%q): %v", y, err)
		}
	}
}

// nvlink.expected_links: 0 is explained once, the same in the shipped
// config and in docs/checks.md, and as NVLinkExpectation does it: the
// platform profile's count; on an unknown platform no expectation (the
// check then compares GPUs of one model with the best of them).
func TestExpectedLinksZeroIsDocumentedAsCoded(t *testing.T) {
	const want = "expected_links: 0       # 0 = the platform profile's NVLinks per GPU; unknown platform: the most up on any GPU of the same model here"
	for _, path := range []string{"../packaging/config.yml", "../docs/checks.md"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, "expected_links: 0") {
				found = true
				if got := strings.TrimLeft(l, "# "); got != want {
					t.Errorf("%s: %q, want %q", path, got, want)
				}
			}
		}
		if !found {
			t.Errorf("%s does not explain nvlink.expected_links: 0", path)
		}
	}
	cfg := DefaultConfig()
	if cfg.NVLink.ExpectedLinks != 0 {
		t.Fatalf("default expected_links = %d", cfg.NVLink.ExpectedLinks)
	}
	g := &state.GPU{Name: "NVIDIA H100 80GB HBM3"}
	if want, ok := NVLinkExpectation(g, Platform{Name: "dgx-h100", NVLinks: 18, LinksKnown: true}, cfg); want != 18 || !ok {
		t.Errorf("known platform: expectation %d (from platform %v), want the profile's 18", want, ok)
	}
	if _, ok := NVLinkExpectation(g, Platform{Name: "unknown"}, cfg); ok {
		t.Error("unknown platform: an expectation came from the platform; the node's majority must decide")
	}
	none := DefaultConfig()
	none.Platform.Profile = "none"
	r := checkNVLinkState(healthy(func(n *state.Node) { n.NVML.GPUs[1].NVLinks[4].Up = false }), none)
	if r.Status != Fail || !strings.Contains(r.Summary, "17 of 18 NVLinks up") {
		t.Errorf("unknown platform, one GPU a link short of its model's best: %s %q", r.Status, r.Summary)
	}
}
