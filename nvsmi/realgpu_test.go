package nvsmi_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

// On a real H100 and H200 (driver 580.159.04) gpuprobe's NVML snapshot and
// nvidia-smi's report were taken in the same second. Everything both hold
// must agree: the importer reads nvidia-smi the way NVML answers, and a
// difference is a bug in one of them.
func TestRealGPUCaptureMatchesNVML(t *testing.T) {
	for _, tc := range []struct{ snap, text, xml string }{
		{"realgpu_h100_580.159.04_snapshot-idle.json", "realgpu_h100_580.159.04_nvidia-smi-q.txt", "realgpu_h100_580.159.04_nvidia-smi-q-x.xml"},
		{"realgpu_h100_580.159.04_snapshot-busy.json", "realgpu_h100-busy_580.159.04_nvidia-smi-q.txt", "realgpu_h100-busy_580.159.04_nvidia-smi-q-x.xml"},
		{"realgpu_h200_580.159.04_snapshot-idle.json", "realgpu_h200_580.159.04_nvidia-smi-q.txt", "realgpu_h200_580.159.04_nvidia-smi-q-x.xml"},
	} {
		real := loadSnapshot(t, tc.snap).NVML.GPUs[0]
		for _, file := range []string{tc.text, tc.xml} {
			t.Run(file, func(t *testing.T) {
				got := parse(t, file).NVML.GPUs[0]
				eq := func(what string, a, b any) {
					t.Helper()
					ja, _ := json.Marshal(a)
					jb, _ := json.Marshal(b)
					if string(ja) != string(jb) {
						t.Errorf("%s: nvidia-smi gives %s, NVML gave %s", what, ja, jb)
					}
				}
				eq("uuid", got.UUID, real.UUID)
				eq("bus id", got.PCIBusID, real.PCIBusID)
				eq("name", got.Name, real.Name)
				eq("serial", got.Serial, real.Serial)
				// nvidia-smi prints whole MiB: the H200's 615.06 MiB reserved
				// prints as 616, so memory agrees to within 1 MiB.
				mib := func(what string, a, b uint64) {
					t.Helper()
					if d := int64(a) - int64(b); d <= -1<<20 || d >= 1<<20 {
						t.Errorf("%s: nvidia-smi gives %d B, NVML gave %d B", what, a, b)
					}
				}
				mib("memory total", got.Memory.TotalBytes, real.Memory.TotalBytes)
				mib("memory reserved", got.Memory.ReservedBytes, real.Memory.ReservedBytes)
				eq("persistence", got.PersistenceMode, real.PersistenceMode)
				eq("mig", got.MIG, real.MIG)
				eq("ecc mode", []any{got.ECC.EnabledCurrent, got.ECC.EnabledPending}, []any{real.ECC.EnabledCurrent, real.ECC.EnabledPending})
				eq("ecc volatile", got.ECC.Volatile, real.ECC.Volatile)
				eq("ecc aggregate", got.ECC.Aggregate, real.ECC.Aggregate)
				eq("remapped rows", got.RemappedRows, real.RemappedRows)
				eq("pcie", got.PCIe, real.PCIe)
				eq("thresholds", []any{got.Thermal.SlowdownC, got.Thermal.ShutdownC}, []any{real.Thermal.SlowdownC, real.Thermal.ShutdownC})
				eq("power limit", got.Power.LimitWatts, real.Power.LimitWatts)
				eq("clock events", got.ClockEvents.Mask, real.ClockEvents.Mask)
				// Readings move between two calls: the same to within what
				// a second of the same load changes.
				if d := got.Thermal.TemperatureC - real.Thermal.TemperatureC; d < -3 || d > 3 {
					t.Errorf("temperature: nvidia-smi %d, NVML %d", got.Thermal.TemperatureC, real.Thermal.TemperatureC)
				}
				if d := got.Power.DrawWatts - real.Power.DrawWatts; d < -60 || d > 60 {
					t.Errorf("power draw: nvidia-smi %.1f, NVML %.1f", got.Power.DrawWatts, real.Power.DrawWatts)
				}
			})
		}
	}
}

// The NVML snapshots themselves, judged as `check --from-snapshot` judges
// them: a real healthy H100, idle and busy, raises nothing.
func TestRealGPUSnapshotsPass(t *testing.T) {
	for _, f := range []string{"realgpu_h100_580.159.04_snapshot-idle.json", "realgpu_h100_580.159.04_snapshot-busy.json", "realgpu_h200_580.159.04_snapshot-idle.json"} {
		t.Run(f, func(t *testing.T) {
			n := loadSnapshot(t, f)
			checks, err := check.Select(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			passed := 0
			for _, r := range check.Run(context.Background(), n, check.DefaultConfig(), checks) {
				switch r.Status {
				case check.Pass:
					passed++
				case check.Skip:
				default:
					t.Errorf("%s: %s: %s %v", r.ID, r.Status, r.Summary, r.Details)
				}
			}
			if passed < 10 {
				t.Errorf("only %d checks passed: the snapshot did not load what it holds", passed)
			}
		})
	}
}

func loadSnapshot(t *testing.T, file string) *state.Node {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "nvml", file))
	if err != nil {
		t.Fatal(err)
	}
	var n state.Node
	if err := json.Unmarshal(data, &n); err != nil {
		t.Fatal(err)
	}
	if n.NVML == nil || len(n.NVML.GPUs) != 1 {
		t.Fatalf("%s: want one GPU", file)
	}
	return &n
}
