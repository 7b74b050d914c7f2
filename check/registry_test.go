package check

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

func TestSelect(t *testing.T) {
	got, err := Select([]string{"gpu.ecc", "gpu.row_remap"}, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("Select = %v, %v", got, err)
	}
	all, _ := Select(nil, nil)
	noGPU, err := Select(nil, []string{"gpu"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range noGPU {
		if strings.HasPrefix(c.ID, "gpu.") {
			t.Errorf("prefix skip kept %s", c.ID)
		}
	}
	if len(all)-len(noGPU) < 4 {
		t.Errorf("prefix 'gpu' removed only %d checks", len(all)-len(noGPU))
	}
	if _, err := Select([]string{"gpu.eccc"}, nil); err == nil || !strings.Contains(err.Error(), `"gpu.eccc"`) {
		t.Errorf("typo accepted: %v", err)
	}
	if _, err := Select(nil, []string{"nosuch"}); err == nil {
		t.Error("unknown skip pattern accepted")
	}
}

func TestRunSurvivesPanicAndDeadline(t *testing.T) {
	checks := []Check{
		{ID: "t.ok", Run: func(*state.Node, *Config) Result { return Result{Status: Pass, Summary: "fine"} }},
		{ID: "t.panic", Run: func(*state.Node, *Config) Result { panic("boom") }},
		{ID: "t.slow", Run: func(*state.Node, *Config) Result { time.Sleep(5 * time.Second); return Result{Status: Pass} }},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	rs := Run(ctx, &state.Node{}, DefaultConfig(), checks)
	if rs[0].Status != Pass || rs[0].ID != "t.ok" {
		t.Errorf("ok check = %+v", rs[0])
	}
	if rs[1].Status != Error || !strings.Contains(rs[1].Summary, "boom") {
		t.Errorf("panicking check = %+v", rs[1])
	}
	if rs[2].Status != Error || !strings.Contains(rs[2].Summary, "deadline") {
		t.Errorf("slow check = %+v", rs[2])
	}
}

func TestOverallAndExitCode(t *testing.T) {
	for _, tc := range []struct {
		statuses []Status
		strict   bool
		want     Status
		code     int
	}{
		{[]Status{Pass, Skip}, false, Pass, 0},
		{[]Status{Pass, Warn}, false, Warn, 0},
		{[]Status{Pass, Warn}, true, Fail, 1},
		{[]Status{Warn, Error}, false, Error, 1},
		{[]Status{Error, Fail}, false, Fail, 1},
	} {
		var rs []Result
		for _, s := range tc.statuses {
			rs = append(rs, Result{Status: s})
		}
		if got := Overall(rs, tc.strict); got != tc.want {
			t.Errorf("Overall(%v, %v) = %s, want %s", tc.statuses, tc.strict, got, tc.want)
		}
		if got := ExitCode(rs, tc.strict); got != tc.code {
			t.Errorf("ExitCode(%v, %v) = %d, want %d", tc.statuses, tc.strict, got, tc.code)
		}
	}
}

func TestConfigRejectsUnknownKeys(t *testing.T) {
	cfg := DefaultConfig()
	if err := ParseConfig([]byte("expect_gpus: 8\necc:\n  volatile_uncorrected_fail: 2\n"), cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ExpectGPUs != 8 || cfg.ECC.VolatileUncorrectedFail != 2 || cfg.ECC.VolatileCorrectedWarn != 10000 {
		t.Errorf("cfg = %+v", cfg)
	}
	err := ParseConfig([]byte("expect_gpu: 8\n"), DefaultConfig())
	if err == nil || !strings.Contains(err.Error(), "expect_gpu") {
		t.Errorf("misspelt key accepted: %v", err)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("expect_gpus: 8\nmin_driver: 550.54.15\n"))
	f.Add([]byte("ecc: {volatile_uncorrected_fail: 1}\nchecks: [gpu]\n"))
	f.Add([]byte(":\n- ["))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = ParseConfig(data, DefaultConfig()) // must not panic
	})
}
