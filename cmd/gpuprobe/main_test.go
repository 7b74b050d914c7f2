package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/report"
)

// runCLI runs the CLI in-process with an empty environment.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb, func(string) string { return "" })
	return code, out.String(), errb.String()
}

func decode(t *testing.T, s string) *report.Document {
	t.Helper()
	var d report.Document
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatalf("not a result document: %v\n%s", err, s)
	}
	return &d
}

func TestCheckSimulatedHealthyExitsZero(t *testing.T) {
	code, out, errs := runCLI(t, "check", "--simulate", "dgx-h100")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if !strings.HasPrefix(out, "*** SIMULATED: dgx-h100") || !strings.Contains(out, "8 GPUs") || !strings.Contains(out, "PASS") {
		t.Errorf("report:\n%s", out)
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("healthy simulation failed something:\n%s", out)
	}
}

func TestCheckRowRemapPendingNamesGPUAndRemedy(t *testing.T) {
	code, out, _ := runCLI(t, "check", "--simulate", "dgx-h100:row-remap-pending=3", "--format", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	d := decode(t, out)
	if !d.Simulated || d.Status != "fail" {
		t.Errorf("document: simulated=%v status=%s", d.Simulated, d.Status)
	}
	for _, r := range d.Checks {
		if r.ID != "gpu.row_remap" {
			if r.Status == "fail" {
				t.Errorf("unexpected failure %s: %s", r.ID, r.Summary)
			}
			continue
		}
		if r.Status != "fail" || len(r.Devices) != 1 || r.Devices[0].Index != 3 || r.Devices[0].PCIBusID != "0000:5d:00.0" || r.Devices[0].UUID == "" {
			t.Errorf("gpu.row_remap = %+v", r)
		}
		if !strings.Contains(r.Remedy, "reset the GPU") {
			t.Errorf("remedy = %q", r.Remedy)
		}
	}
}

// Every GPU of a DGX lost every NVLink. Compared with each other the GPUs
// look alike, which nvlink.state used to take for healthy; the platform
// (the DGX H100's DMI name and its GPUs' model) says 18 each. On the
// DGX A100, whose simulated DMI is a real one's, likewise with 12.
func TestCheckAllNVLinksLostFails(t *testing.T) {
	for _, tc := range []struct{ model, want string }{
		{"dgx-h100", "0 of 18 NVLinks up"},
		{"dgx-a100", "0 of 12 NVLinks up"},
	} {
		code, out, _ := runCLI(t, "check", "--simulate", tc.model+":nvlinks-lost", "--checks", "nvlink.state,gpu.count", "--format", "json")
		if code != 1 {
			t.Fatalf("%s: exit %d, want 1\n%s", tc.model, code, out)
		}
		for _, r := range decode(t, out).Checks {
			switch r.ID {
			case "nvlink.state":
				if r.Status != "fail" || len(r.Devices) != 8 || !strings.Contains(strings.Join(r.Details, "\n"), tc.want) {
					t.Errorf("%s: nvlink.state = %+v", tc.model, r)
				}
			case "gpu.count":
				if r.Status != "pass" || !strings.Contains(r.Summary, "(expected 8, platform dgx-") {
					t.Errorf("%s: gpu.count = %+v", tc.model, r)
				}
			}
		}
		// The same node without the fault passes against the same platform.
		code, out, _ = runCLI(t, "check", "--simulate", tc.model, "--checks", "nvlink.state", "--format", "json")
		if code != 0 || !strings.Contains(out, "(platform dgx-") {
			t.Errorf("%s healthy: exit %d\n%s", tc.model, code, out)
		}
	}
}

func TestCheckExitCodes(t *testing.T) {
	dir := t.TempDir()
	badCfg := filepath.Join(dir, "bad.yml")
	os.WriteFile(badCfg, []byte("expect_gpuz: 8\n"), 0o644)
	goodCfg := filepath.Join(dir, "good.yml")
	os.WriteFile(goodCfg, []byte("expect_gpus: 4\n"), 0o644)
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"check", "--bogus"}, 2, "unknown long flag"},
		{[]string{"check", "--simulate", "dgx-h999"}, 2, `unknown model "dgx-h999"`},
		{[]string{"check", "--simulate", "dgx-h100:nosuch"}, 2, `unknown fault "nosuch"`},
		{[]string{"check", "--simulate", "dgx-h100", "--config", badCfg}, 2, "expect_gpuz"},
		{[]string{"check", "--simulate", "dgx-h100", "--config", filepath.Join(dir, "missing.yml")}, 2, "missing.yml"},
		{[]string{"check", "--simulate", "dgx-h100", "--checks", "gpu.nope"}, 2, `"gpu.nope"`},
		{[]string{"check", "--simulate", "dgx-h100", "--config", goodCfg}, 1, ""},
		{[]string{"check", "--simulate", "dgx-h100", "--expect-gpus", "8"}, 0, ""},
		{[]string{"check", "--simulate", "dgx-h100:ecc-uncorrectable=4", "--skip", "gpu.ecc"}, 0, ""},
		{[]string{"check", "--from-snapshot", filepath.Join(dir, "none.json")}, 2, "none.json"},
	} {
		code, out, errs := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.stderr) {
			t.Errorf("%v: exit %d stderr %q, want %d and %q\n%s", tc.args, code, errs, tc.code, tc.stderr, out)
		}
	}
}

func TestStrictTurnsWarningIntoFailure(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yml")
	// A corrected-error threshold of 1 makes the ecc-uncorrectable fault's
	// 14 corrected errors a warning on its own once uncorrected ones are allowed.
	os.WriteFile(cfg, []byte("ecc:\n  volatile_uncorrected_fail: 100\n  aggregate_uncorrected_warn: 100\n  volatile_corrected_warn: 1\n"), 0o644)
	args := []string{"check", "--simulate", "dgx-h100:ecc-uncorrectable=2", "--config", cfg, "--checks", "gpu.ecc"}
	if code, out, _ := runCLI(t, args...); code != 0 || !strings.Contains(out, "WARN") {
		t.Fatalf("without --strict: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, append(args, "--strict")...); code != 1 || !strings.Contains(out, "FAIL (strict)") {
		t.Fatalf("with --strict: exit %d\n%s", code, out)
	}
}

// The snapshot round trip: what check judges live and what it judges from a
// saved snapshot of the same node must be the same results.
func TestSnapshotRoundTrip(t *testing.T) {
	spec := "dgx-h100:row-remap-pending=3,gpu-lost=5,ecc-uncorrectable=1"
	file := filepath.Join(t.TempDir(), "snap.json")
	if code, _, errs := runCLI(t, "snapshot", "--simulate", spec, "-o", file); code != 0 {
		t.Fatalf("snapshot exit %d: %s", code, errs)
	}
	_, live, _ := runCLI(t, "check", "--simulate", spec, "--format", "json")
	code, saved, errs := runCLI(t, "check", "--from-snapshot", file, "--format", "json")
	if code != 1 {
		t.Fatalf("from-snapshot exit %d: %s", code, errs)
	}
	a, b := decode(t, live), decode(t, saved)
	if !reflect.DeepEqual(a.Checks, b.Checks) {
		t.Errorf("results differ:\nlive  %+v\nsaved %+v", a.Checks, b.Checks)
	}
	if !b.Simulated || b.SimulateSpec != spec {
		t.Errorf("snapshot lost its SIMULATED mark: %v %q", b.Simulated, b.SimulateSpec)
	}
}

func TestSnapshotRejectsGarbage(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"torn.json": `{"schema_version": 1, "nvml": {`, "future.json": `{"schema_version": 99}`} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		code, _, errs := runCLI(t, "check", "--from-snapshot", p)
		if code != 2 || !strings.Contains(errs, name) {
			t.Errorf("%s: exit %d, stderr %q", name, code, errs)
		}
	}
}

// The real binary on a machine without the NVIDIA driver: exit 1, one clear
// line naming libnvidia-ml and dlopen's message, no panic, and not 127 (the
// dynamic linker's death when NVML is called after a failed Init).
func TestRealBinaryWithoutDriver(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gpuprobe")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "check", "-v") // -v: one line per skip, so each can be asserted
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "PASS   gpu.driver") {
		if os.Getenv("GPUPROBE_HAVE_DRIVER") == "1" {
			t.Skip("GPUPROBE_HAVE_DRIVER=1: this machine has an NVIDIA driver, the driver-less path cannot be exercised")
		}
		t.Fatal("this machine has a working NVIDIA driver, so the driver-less path cannot be tested; set GPUPROBE_HAVE_DRIVER=1 to skip")
	}
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if strings.Contains(out.String()+errb.String(), "panic") {
		t.Fatalf("panicked:\n%s", errb.String())
	}
	var driverLines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "libnvidia-ml") {
			driverLines = append(driverLines, l)
		}
	}
	if len(driverLines) != 1 || !strings.Contains(driverLines[0], "FAIL") || !strings.Contains(driverLines[0], "cannot open shared object file") {
		t.Errorf("want one FAIL line naming libnvidia-ml and the dlopen error, got %q\n%s", driverLines, out.String())
	}
	for _, id := range []string{"gpu.count", "gpu.ecc", "gpu.row_remap"} {
		if !strings.Contains(out.String(), "SKIP   "+id) {
			t.Errorf("%s not skipped:\n%s", id, out.String())
		}
	}
}

func TestListCommands(t *testing.T) {
	code, out, _ := runCLI(t, "checks")
	if code != 0 || !strings.Contains(out, "gpu.row_remap") {
		t.Errorf("checks: %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "faults")
	if code != 0 || !strings.Contains(out, "row-remap-pending=GPU") {
		t.Errorf("faults: %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "--help"); code != 0 {
		t.Errorf("--help exit %d", code)
	}
}

// Every named fault makes exactly its check fail, and nothing else.
func TestSimulatedFaultsFailTheirCheck(t *testing.T) {
	for _, tc := range []struct {
		fault string
		extra []string
		check string
	}{
		{"row-remap-pending=3", nil, "gpu.row_remap"},
		{"row-remap-failure=2", nil, "gpu.row_remap"},
		{"gpu-lost=3", nil, "gpu.count"},
		{"nvlink-down=3", nil, "nvlink.state"},
		{"fabric-incomplete", []string{"--strict"}, "fabric.state"}, // IN_PROGRESS alone warns (DCGM)
		{"xid=79@2", nil, "gpu.xid"},
		{"hw-slowdown=5", []string{"--strict"}, "gpu.throttle"}, // one sample alone warns
		{"pcie-x8=1", nil, "gpu.pcie_link"},
		{"leftover-process=0", []string{"--expect-idle"}, "gpu.processes"},
		{"ecc-uncorrectable=4", nil, "gpu.ecc"},
		// Issue 26: the memory temperature and the SRAM flag were not read.
		{"hbm-hot=2", nil, "gpu.temperature"},
		{"sram-threshold=5", nil, "gpu.ecc"},
		{"persistence-off", []string{"--strict"}, "gpu.persistence"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			args := append([]string{"check", "--simulate", "dgx-h100:" + tc.fault, "--format", "json", "--checks", "gpu,nvlink,fabric"}, tc.extra...)
			code, out, errs := runCLI(t, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1: %s", code, errs)
			}
			d := decode(t, out)
			var failed []string
			for _, r := range d.Checks {
				if r.Status == "fail" || (d.Strict && r.Status == "warn") || r.Status == "error" {
					failed = append(failed, r.ID)
				}
			}
			if len(failed) != 1 || failed[0] != tc.check {
				t.Errorf("failed checks = %v, want exactly [%s]", failed, tc.check)
			}
		})
	}
}

func TestHungDriverCallBecomesErrorOnTime(t *testing.T) {
	// --call-timeout 1s: long enough that no healthy mock call reaches it
	// on a loaded machine under -race; the hung one costs it once.
	code, out, _ := runCLI(t, "check", "--simulate", "dgx-h100:nvml-hang=6", "--call-timeout", "1s", "--timeout", "5s", "--format", "json")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	d := decode(t, out)
	found := false
	for _, r := range d.Checks {
		if r.ID == "gpu.temperature" {
			found = r.Status == "error" && strings.Contains(r.Summary, "GPU 6") && strings.Contains(r.Summary, "nvmlDeviceGetTemperature")
		}
	}
	if !found || d.ElapsedSeconds > 5 {
		t.Errorf("want gpu.temperature error naming GPU 6 and nvmlDeviceGetTemperature within the 5s run; elapsed %.2fs\n%s", d.ElapsedSeconds, out)
	}
}
