package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
)

// The bar: a quick verify of a simulated 8-GPU DGX H100 passes in
// ≤ 30 s (the simulated driver answers device time at once, so this
// measures gpuprobe's own overhead: two collections, the runner, judging).
func TestVerifySimulatedQuickPassesInTime(t *testing.T) {
	start := time.Now()
	code, out, errs := runCLI(t, "verify", "--simulate", "dgx-h100", "--quick", "--format", "json")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if took > 30*time.Second {
		t.Errorf("verify --quick took %s, more than the 30 s budget", took)
	}
	d := decode(t, out)
	if d.Verify == nil || d.Verify.Tier != "quick" || len(d.Verify.Devices) != 8 {
		t.Fatalf("verify facts missing from the document: %+v", d.Verify)
	}
	ids := map[string]check.Status{}
	for _, r := range d.Checks {
		ids[r.ID] = r.Status
	}
	for _, id := range []string{"verify.run", "verify.h2d", "verify.d2h", "verify.d2d", "verify.peer", "verify.compute", "verify.memtest"} {
		if ids[id] != check.Pass {
			t.Errorf("%s: %s, want pass", id, ids[id])
		}
	}
	// verify runs only verify's checks; check never runs them.
	if _, ok := ids["gpu.ecc"]; ok {
		t.Error("verify ran the node checks")
	}
	t.Logf("verify --quick on simulated dgx-h100: %s", took)
}

// Each injected fault fails, naming the GPU or the pair.
func TestVerifySimulatedFaultsFailNamingTheGPU(t *testing.T) {
	for _, tc := range []struct {
		fault, id string
		gpus      []int
		want      string
	}{
		{"h2d-slow=3", "verify.h2d", []int{3}, "GPU 3 (0000:5d:00.0): host → device"},
		{"peer-slow=1-2", "verify.peer", []int{1, 2}, "GPU 1 → GPU 2"},
		{"load-throttle=5", "verify.compute", []int{5}, "hw_slowdown"},
		{"mem-miscompare=0", "verify.memtest", []int{0}, "GPU 0 (0000:19:00.0): 3 words"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			code, out, errs := runCLI(t, "verify", "--simulate", "dgx-h100:"+tc.fault, "--quick", "--format", "json")
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
			}
			d := decode(t, out)
			for _, r := range d.Checks {
				var gpus []int
				for _, dv := range r.Devices {
					gpus = append(gpus, dv.Index)
				}
				if r.ID == tc.id {
					if r.Status != check.Fail || !slices.Equal(gpus, tc.gpus) || !strings.Contains(r.Summary, tc.want) {
						t.Errorf("%s: %s on %v: %s; want fail on %v naming %q", r.ID, r.Status, gpus, r.Summary, tc.gpus, tc.want)
					}
				} else if r.Status == check.Fail && !(tc.fault == "h2d-slow=3" && r.ID == "verify.d2h") {
					t.Errorf("%s failed too: %s", r.ID, r.Summary)
				}
			}
		})
	}
}

// A GPU that runs another user's process is refused (and named) unless
// --allow-busy.
func TestVerifyRefusesBusyGPUs(t *testing.T) {
	_, out, _ := runCLI(t, "verify", "--simulate", "dgx-h100:leftover-process=2", "--quick", "--format", "json")
	d := decode(t, out)
	if len(d.Verify.Refused) != 1 || !strings.HasPrefix(d.Verify.Refused[0], "GPU 2 ") {
		t.Fatalf("refused: %v", d.Verify.Refused)
	}
	for _, m := range d.Verify.Measurements {
		if m.GPU == 2 || m.Peer == 2 {
			t.Fatalf("GPU 2 was measured: %+v", m)
		}
	}
	_, out, _ = runCLI(t, "verify", "--simulate", "dgx-h100:leftover-process=2", "--quick", "--allow-busy", "--format", "json")
	if d := decode(t, out); len(d.Verify.Refused) != 0 {
		t.Errorf("--allow-busy still refused %v", d.Verify.Refused)
	}
}

// --gpus measures only the listed GPUs.
func TestVerifyGPUsFlag(t *testing.T) {
	code, out, errs := runCLI(t, "verify", "--simulate", "dgx-h100", "--quick", "--gpus", "0-1", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, m := range decode(t, out).Verify.Measurements {
		if m.GPU > 1 || m.Peer > 1 {
			t.Fatalf("GPU outside --gpus measured: %+v", m)
		}
	}
}

// Without --simulate on a machine without the NVIDIA driver (this one, and
// CI's), the real loader's answer is an error of verify.run (exit 1) that
// says why, never a pass.
func TestVerifyWithoutDriverIsAnError(t *testing.T) {
	if d, err := openRealDriver(); err == nil {
		d.Close()
		t.Skip("SKIP: this machine has a CUDA driver (libcuda.so.1 loads): the no-driver path cannot be shown here; cuda's TestRealDriver covers the driver")
	}
	code, out, errs := runCLI(t, "verify", "--quick", "--format", "json", "--timeout", "5s", "--path.sysfs", t.TempDir(), "--path.procfs", t.TempDir())
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	d := decode(t, out)
	for _, r := range d.Checks {
		if r.ID == "verify.run" && (r.Status != check.Error || !strings.Contains(r.Summary, "libcuda.so.1 not found: no NVIDIA driver on this machine")) {
			t.Errorf("verify.run: %s %s", r.Status, r.Summary)
		}
	}
}

// --textfile writes verify's own metrics, with the time of the run.
func TestVerifyTextfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "verify.prom")
	if code, out, errs := runCLI(t, "verify", "--simulate", "dgx-h100:h2d-slow=3", "--quick", "--textfile", path); code != 1 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"gpuprobe_verify_last_run_timestamp_seconds ",
		"gpuprobe_verify_healthy 0",
		`gpuprobe_verify_check_status{check="verify.h2d"} 2`,
		`gpuprobe_verify_bandwidth_gbps{gpu="3",kind="h2d",peer=""} 13.`,
		`gpuprobe_verify_compute_tflops{gpu="0"}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("textfile lacks %q:\n%s", want, b)
		}
	}
}

// The quarantine flow: a failing verify drains with verify's own prefix; a
// passing check leaves that drain; a passing verify lifts it; a failing
// verify never overwrites a health check's drain.
func TestVerifySlurmDrainOwnsItsDrains(t *testing.T) {
	sc, dir := fakeScontrol(t, "IDLE", "")
	env := map[string]string{"SLURMD_NODENAME": "vm"}
	hist := filepath.Join(dir, "verify-history.json")
	verifyRun := func(spec string) int {
		code, out, errs := runEnv(t, env, "verify", "--simulate", spec, "--quick", "--slurm-drain", "--scontrol", sc, "--drain-history", hist, "--no-drain-breaker")
		if code == 2 {
			t.Fatalf("exit 2\n%s%s", out, errs)
		}
		return code
	}
	if code := verifyRun("dgx-h100:h2d-slow=3"); code != 1 {
		t.Fatalf("failing verify: exit %d", code)
	}
	reason := readFile(t, filepath.Join(dir, "reason"))
	if st := strings.TrimSpace(readFile(t, filepath.Join(dir, "state"))); !strings.HasPrefix(reason, "gpuprobe-verify: verify.h2d node gpu=3 ") || st != "IDLE+DRAIN" {
		t.Fatalf("drain reason %q, state %q", reason, st)
	}
	// A passing health check does not lift verify's drain.
	if code, out, errs := runEnv(t, env, "check", "--simulate", "dgx-h100", "--slurm-drain", "--scontrol", sc, "--drain-history", filepath.Join(dir, "check-history.json"), "--no-job"); code != 0 {
		t.Fatalf("check: exit %d\n%s%s", code, out, errs)
	}
	if got := readFile(t, filepath.Join(dir, "reason")); got != reason {
		t.Fatalf("check changed verify's drain: %q", got)
	}
	// A passing verify lifts it.
	if code := verifyRun("dgx-h100"); code != 0 {
		t.Fatalf("passing verify: exit %d", code)
	}
	if st := strings.TrimSpace(readFile(t, filepath.Join(dir, "state"))); st != "IDLE" {
		t.Fatalf("not resumed: %q", st)
	}
	// A health check's drain is not verify's to overwrite or lift.
	if err := os.WriteFile(filepath.Join(dir, "state"), []byte("IDLE+DRAIN"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkReason := "gpuprobe: gpu.xid node gpu=1 Xid 79"
	if err := os.WriteFile(filepath.Join(dir, "reason"), []byte(checkReason), 0o644); err != nil {
		t.Fatal(err)
	}
	verifyRun("dgx-h100:h2d-slow=3")
	verifyRun("dgx-h100")
	if got := readFile(t, filepath.Join(dir, "reason")); got != checkReason {
		t.Fatalf("verify touched check's drain: %q", got)
	}
}

// verify --from on the real outputs of benchout's corpus: the command
// picks each tool's checks, and each file gets the verdict read in its
// .source (benchout/corpus_test.go states the reasoning per file). A run
// that judged nothing of the tool's (every check skipped) would fail here.
func TestVerifyFromCorpusThroughTheCommand(t *testing.T) {
	dir := filepath.Join("..", "..", "benchout", "testdata", "real")
	for _, tc := range []struct {
		file  string
		exit  int
		check string
		want  check.Status
	}{
		{"nccltests290_all_reduce_perf_h100x8_1node.txt", 0, "verify.nccl_tests", check.Pass},
		{"nccltests107_v100x2_nranks1.txt", 1, "verify.nccl_tests", check.Error},
		{"nccltests290_h100x16_2node.txt", 0, "verify.nccl_tests", check.Skip},
		{"dcgm124_dcgm442_r2_1gpu.txt", 0, "verify.dcgmi_diag", check.Pass},
		{"dcgm_jsonresult_test_dcgm310_8gpu.json", 0, "verify.dcgmi_diag", check.Pass},
		{"nvbandwidth15_rtx4090x8_h2d_d2h.txt", 0, "verify.h2d", check.Pass},
		{"aznhc_nvbandwidth_v0.10_2gpu.txt", 0, "verify.peer", check.Pass},
		// A GPU that failed under a test whose first line passed
		// (DCGM 3.x "Pass - GPUs: 0, 2, 3" / "Fail - GPU: 1").
		{"sagemaker_dcgm339_a10gx4_targeted_power_fail.txt", 1, "verify.dcgmi_diag", check.Fail},
		// NCCL on TCP sockets warns; a warning alone exits 0 (--strict: 1).
		{"awsdoeks_karpenter_socket_1gpu_2node.txt", 0, "verify.nccl_tests", check.Warn},
		// Old-format all_gather rows read, and its own validation failed.
		{"dgx2_v100x12_all_gather_oob_failed.txt", 1, "verify.nccl_tests", check.Fail},
		{"nvbandwidth48_h20_3e_x8_device_local_copy.txt", 0, "verify.d2d", check.Pass},
		// dcgmi rows pasted without the table's head: still dcgmi's.
		{"mleng_dcgm_r2_h100_gpu0_thermal_excerpt.txt", 1, "verify.dcgmi_diag", check.Fail},
		// CUDA could not start (fabric manager down): an error, not a GPU.
		{"nccltests264_dcgm338_h100x8_cuinit_fabricmanager.txt", 1, "verify.dcgmi_diag", check.Error},
	} {
		code, out, errs := runCLI(t, "verify", "--from", filepath.Join(dir, tc.file), "--format", "json")
		if code != tc.exit {
			t.Errorf("%s: exit %d, want %d\n%s", tc.file, code, tc.exit, errs)
			continue
		}
		d := decode(t, out)
		got := map[string]check.Status{}
		for _, r := range d.Checks {
			got[r.ID] = r.Status
		}
		if got[tc.check] != tc.want {
			t.Errorf("%s: %s %q, want %q (%v)", tc.file, tc.check, got[tc.check], tc.want, got)
		}
		if len(got) > 5 {
			t.Errorf("%s: %d checks ran; --from runs only its tool's", tc.file, len(got))
		}
	}
	// A saved output is another run's: it cannot drain this node or write
	// its metrics, and a file that is none of the three tools' is named.
	for _, args := range [][]string{
		{"--from", filepath.Join(dir, "dcgm124_dcgm442_r2_1gpu.txt"), "--slurm-drain"},
		{"--from", filepath.Join(dir, "dcgm124_dcgm442_r2_1gpu.txt"), "--textfile", filepath.Join(t.TempDir(), "v.prom")},
	} {
		if code, _, errs := runCLI(t, append([]string{"verify"}, args...)...); code != 2 || !strings.Contains(errs, "saved output") {
			t.Errorf("verify %v: exit %d, %s", args, code, errs)
		}
	}
	junk := filepath.Join(t.TempDir(), "junk.txt")
	if err := os.WriteFile(junk, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "verify", "--from", junk); code != 2 || !strings.Contains(errs, "junk.txt") {
		t.Errorf("verify --from junk: exit %d, %s", code, errs)
	}
}

// drain.resume_verify: a health check that passes lifts its node-class
// drain only when verify --quick passes on the node too; a transient drain
// is lifted on the checks alone, and without the key nothing changes.
func TestResumeWaitsForVerify(t *testing.T) {
	for _, tc := range []struct {
		name, reason, spec string
		resumeVerify       bool
		resumed            bool
		why                string
	}{
		{"node class, verify fails", "gpuprobe: gpu.row_remap node gpu=3 GPU 3: row remap pending", "dgx-h100:h2d-slow=3", true, false, "verify.h2d fail"},
		{"node class, verify passes", "gpuprobe: gpu.row_remap node gpu=3 GPU 3: row remap pending", "dgx-h100", true, true, "verify --quick passes"},
		{"transient class: no verify", "gpuprobe: gpu.processes transient gpu=2 GPU 2: 1 compute process", "dgx-h100:h2d-slow=3", true, true, "all node checks pass"},
		{"key off: as before", "gpuprobe: gpu.row_remap node gpu=3 GPU 3: row remap pending", "dgx-h100:h2d-slow=3", false, true, "all node checks pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, dir := fakeScontrol(t, "IDLE+DRAIN", tc.reason)
			cfg := filepath.Join(dir, "gpuprobe.yml")
			if err := os.WriteFile(cfg, []byte(fmt.Sprintf("drain:\n  resume_verify: %v\n", tc.resumeVerify)), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runEnv(t, map[string]string{"SLURMD_NODENAME": "vm"}, "check", "--simulate", tc.spec, "--slurm-drain", "--scontrol", sc,
				"--config", cfg, "--drain-history", filepath.Join(dir, "h.json"), "--no-job", "--format", "json")
			if code == 2 {
				t.Fatalf("exit 2\n%s%s", out, errs)
			}
			st := strings.TrimSpace(readFile(t, filepath.Join(dir, "state")))
			if resumed := st == "IDLE"; resumed != tc.resumed {
				t.Errorf("state %q after a passing check (resumed %v, want %v)\n%s", st, resumed, tc.resumed, errs)
			}
			d := decode(t, out)
			if d.Drain == nil || !strings.Contains(d.Drain.Why, tc.why) {
				t.Errorf("drain decision %+v, want its why to name %q", d.Drain, tc.why)
			}
		})
	}
}
