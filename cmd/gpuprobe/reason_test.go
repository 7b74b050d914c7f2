package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/report"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// TestDrainReasonEveryFault: every simulated fault's findings, as the drain
// writes them (each failing check first in turn, and all of them together),
// parse in the reason grammar and write back the same text.
func TestDrainReasonEveryFault(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the catalogue once per simulated fault")
	}
	cfg := check.DefaultConfig()
	cfg.Strict, cfg.Drain.ConfigChecks = true, true
	seen := 0
	for _, f := range simulate.Known() {
		if strings.Contains(f.Name, "hang") || strings.Contains(f.Name, "slow") {
			continue
		}
		spec := "dgx-h100:" + f.Name
		switch {
		case f.Arg == "":
		case f.Arg == "HCA":
			spec += "=mlx5_0"
		case strings.Contains(f.Arg, "@"):
			spec += "=79@3"
		default:
			spec += "=3"
		}
		code, out, errs := runEnv(t, nil, "check", "--simulate", spec, "--format", "json", "--no-job")
		if code == 2 {
			t.Logf("%s: not run (%s)", spec, strings.TrimSpace(errs))
			continue
		}
		var doc report.Document
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		fails := drainFailures(&doc, cfg)
		for i := range fails {
			seen++
			reason := check.DrainReason(append([]check.DrainFailure{fails[i]}, fails[:i]...))
			r, err := check.ParseReason(reason)
			if err != nil || r.Legacy || r.String() != reason || r.Check != fails[i].ID || r.Class != check.ClassOf(fails[i].ID) {
				t.Errorf("%s: reason %q parses to %+v, %v", spec, reason, r, err)
			}
		}
	}
	if seen < 10 {
		t.Errorf("only %d failing findings over all faults", seen)
	}
}
