package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The contrib Epilog judges only its job's GPUs and speaks through its exit
// code, as Slurm asks of an Epilog: another job's leftover on GPU 5 of a
// shared node passes job 77 (GPUs 0,1); its own leftover exits 1 (Slurm
// drains the node); gpuprobe failing to run exits 0 (no drain); a job
// without GPUs is not judged.
func TestContribEpilogScopedToTheJob(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gpuprobe")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	script, _ := filepath.Abs("../../contrib/slurm/epilog.sh")
	run := func(jobGPUs, args string) int {
		cmd := exec.Command("/bin/sh", script)
		cmd.Env = []string{"GPUPROBE=" + bin, "GPUPROBE_EPILOG_ARGS=" + args, "SLURM_JOB_ID=77", "SLURM_JOB_GPUS=" + jobGPUs,
			"GPUPROBE_CONTRIB=" + filepath.Dir(script)}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if strings.TrimSpace(string(out)) != "" {
			t.Errorf("the Epilog printed %q: its output goes nowhere useful, the journal gets the reason", out)
		}
		return 0
	}
	for _, c := range []struct {
		name, gpus, args string
		want             int
	}{
		{"another job's leftover", "0,1", "--checks gpu --expect-idle --simulate dgx-h100:leftover-process=5", 0},
		{"its own leftover", "0,1", "--checks gpu --expect-idle --simulate dgx-h100:leftover-process=1", 1},
		{"gpuprobe cannot run", "0,1", "--checks no-such-check", 0},
		{"a job without GPUs", "", "--checks gpu --expect-idle --simulate dgx-h100:leftover-process=1", 0},
	} {
		if got := run(c.gpus, c.args); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

func TestCheckScopedToGPUs(t *testing.T) {
	spec := "dgx-h100:leftover-process=5,xid=79@5"
	code, out, _ := runCLI(t, "check", "--simulate", spec, "--checks", "gpu", "--expect-idle", "--expect-gpus", "8", "--gpus", "0,1")
	if code != 0 || !strings.Contains(out, "2 GPUs (only GPU 0,1 (--gpus 0,1))") || strings.Contains(out, "Xid") {
		t.Errorf("scoped to 0,1: exit %d (GPU 5's process and Xid 79 are not this run's; expect-gpus is the node's)\n%s", code, out)
	}
	code, out, _ = runCLI(t, "check", "--simulate", spec, "--checks", "gpu", "--expect-idle", "--gpus", "5")
	if code != 1 || !strings.Contains(out, "Xid 79") || !strings.Contains(out, "gpu.processes") {
		t.Errorf("scoped to 5: exit %d, want its Xid and its process\n%s", code, out)
	}
	if code, _, errOut := runEnv(t, map[string]string{}, "check", "--simulate", spec, "--gpus", "job"); code != 2 || !strings.Contains(errOut, "SLURM_JOB_GPUS is not set") {
		t.Errorf("--gpus job without SLURM_JOB_GPUS: exit %d %q", code, errOut)
	}
}
