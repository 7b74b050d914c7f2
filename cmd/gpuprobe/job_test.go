package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/report"
)

// Every simulated job, sampled by the real collectors over the simulated
// sources, gets the verdict its scenario is there to show.
func TestJobSimulatedScenarios(t *testing.T) {
	for _, c := range []struct {
		fault, id string
		status    check.Status
		summary   string
	}{
		{"job-healthy", "perf.bottleneck", check.Pass, "GPU-bound"},
		{"job-input-bound", "perf.bottleneck", check.Warn, "input pipeline CPU-bound"},
		{"job-io-bound", "perf.bottleneck", check.Warn, "from nfs4 /data (a network filesystem)"},
		{"job-loader-starved", "perf.bottleneck", check.Warn, "one process is CPU-bound: pid 70110 (pt_data_worker) kept one CPU"},
		{"job-one-gpu", "perf.gpus_used", check.Warn, "the job uses 1 of its 4 GPUs"},
		{"job-oversized", "perf.gpu_fit", check.Warn, "would fit on 1 of its 4 GPUs"},
		{"job-memory-pressure", "perf.memory", check.Fail, "killed 1 of the job's processes"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			code, out, errOut := runCLI(t, "job", "--simulate", "dgx-h100:"+c.fault, "--duration", "1s", "--interval", "250ms", "--format", "json")
			var doc report.Document
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("exit %d, %v: %s %s", code, err, out, errOut)
			}
			if doc.JobPerf == nil || doc.JobPerf.JobID != "4242" || doc.JobPerf.User != "alice" || len(doc.JobPerf.GPUs) != 4 {
				t.Fatalf("job figures %+v", doc.JobPerf)
			}
			for _, r := range doc.Checks {
				if r.ID == c.id {
					if r.Status != c.status || !strings.Contains(r.Summary, c.summary) {
						t.Errorf("%s: %s %q, want %s containing %q", c.id, r.Status, r.Summary, c.status, c.summary)
					}
					want := 0
					if c.status == check.Fail {
						want = 1
					}
					if code != want {
						t.Errorf("exit %d, want %d", code, want)
					}
					return
				}
			}
			t.Errorf("%s not in the report", c.id)
		})
	}
}

func TestJobUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"job"}, "not inside a Slurm job"},
		{[]string{"job", "--job", "12;rm"}, "a job ID is a number"},
		{[]string{"job", "--job", "1", "--duration", "1s", "--interval", "2s"}, "no longer than --duration"},
		{[]string{"job", "--simulate", "dgx-h100:job-io-bound,job-one-gpu"}, "one simulated job at a time"},
		{[]string{"job", "--simulate", "dgx-h100:job-io-bound", "--gpus", "0-x"}, "--gpus"},
		{[]string{"job", "--simulate", "dgx-h100:job-io-bound", "--checks", "gpu.ecc"}, "no check matches"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.err) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.err)
		}
	}
}

// The one-line-per-GPU summary an Epilog appends to the job's output file.
func TestJobSummary(t *testing.T) {
	code, out, errOut := runCLI(t, "job", "--simulate", "dgx-h100:job-one-gpu", "--duration", "1s", "--interval", "250ms", "--summary")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 || !strings.HasPrefix(lines[1], "gpuprobe: job 4242 GPU 1: 0% busy") ||
		!strings.Contains(lines[4], "WARN: perf.gpus_used: the job uses 1 of its 4 GPUs") {
		t.Errorf("exit %d:\n%s\n%s", code, out, errOut)
	}
}

// After the job's processes are gone, the Epilog's summary comes from what
// the daemon recorded while it ran (serve --simulate ...:job-one-gpu: the
// rank on GPU 0 carries job 4242 through its cgroup).
func TestJobSummaryFromDaemon(t *testing.T) {
	d, srv := testServe(t, "dgx-h100:job-one-gpu", time.Hour)
	defer srv.Close()
	for i := 0; i < 4; i++ {
		d.Cycle(context.Background())
	}
	code, out, errOut := runCLI(t, "job", "--job", "4242", "--summary", "--from-daemon", srv.URL)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "gpuprobe: job 4242 GPU 0: 9") || !strings.Contains(lines[1], "job 4242: PASS") {
		t.Errorf("exit %d:\n%s\n%s", code, out, errOut)
	}
	// A job the daemon never saw falls back to sampling, which finds no such job here.
	if code, _, errOut := runCLI(t, "job", "--job", "4243", "--summary", "--from-daemon", srv.URL, "--duration", "1s", "--interval", "500ms"); code != 2 || !strings.Contains(errOut, "job 4243") {
		t.Errorf("unknown job: exit %d, %s", code, errOut)
	}
}

// The bug: off a cluster, 'job --job 4242' said "job 4242: job 4242: ..."
// and then printed scontrol's stderr raw, a line per failed DNS SRV lookup
// with whatever escape sequences it held. The failure is one line, names
// the job once, and quotes scontrol bounded and escaped.
func TestJobOffClusterOneLine(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8 9 10 11 12; do\n" +
		"  printf 'scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\\033[2J line %s\\n' $i >&2\ndone\n" +
		"printf 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)\\n' >&2\nexit 1\n"
	sc := filepath.Join(dir, "scontrol")
	if err := os.WriteFile(sc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "job", "--job", "4242", "--scontrol", sc, "--duration", "1s", "--interval", "500ms")
	line := strings.TrimSuffix(errOut, "\n")
	if code != 2 || strings.Contains(line, "\n") || strings.Count(line, "job 4242:") != 1 || strings.ContainsRune(line, '\x1b') {
		t.Fatalf("exit %d, want 2 and one line naming the job once with no raw escape:\n%q", code, errOut)
	}
	_, quoted, ok := strings.Cut(line, "scontrol listpids failed: ")
	if !ok || len(quoted) > maxScontrolFailure+len("…") || !strings.Contains(quoted, "Unable to contact slurm controller") || !strings.Contains(quoted, `\x1b[2J`) {
		t.Errorf("scontrol's failure not summarised (bounded, escaped, with its conclusion):\n%s", line)
	}
}

func TestScontrolFailure(t *testing.T) {
	cause := context.DeadlineExceeded
	err := scontrolFailure(fmt.Errorf("scontrol show job -d 1: %w: %s", cause, strings.Repeat("é", 1000)))
	if !errors.Is(err, cause) || len(err.Error()) > maxScontrolFailure+len("…") || !utf8.ValidString(err.Error()) {
		t.Errorf("%d bytes, valid UTF-8 %v, unwraps %v", len(err.Error()), utf8.ValidString(err.Error()), errors.Is(err, cause))
	}
	if scontrolFailure(nil) != nil {
		t.Error("no failure became one")
	}
	if err := jobError("7", errors.New("job 7: no cgroup")); err.Error() != "job 7: no cgroup" {
		t.Errorf("prefixed twice: %q", err)
	}
	if err := jobError("7", errors.New("no cgroup")); err.Error() != "job 7: no cgroup" {
		t.Errorf("not named: %q", err)
	}
}

// gpuprobe job --hang over each simulated hang shape names the local rank
// the job waits on, or says none of the local ranks is it.
func TestJobHangSimulated(t *testing.T) {
	for _, c := range []struct {
		shape   string
		status  check.Status
		code    int
		summary string
		devices []int
	}{
		{"job-hang-peer", check.Warn, 0, "all 4 local ranks wait in NCCL for a peer: the rank they wait on is not on this node (RAS says: rank 37 (GPU 1, pid 31337) on 192.0.2.64 unresponsive (missing from communicator #0-0))", nil},
		{"job-hang-dstate", check.Fail, 1, "rank 3 (pid 70103, GPU 3) stuck on a network filesystem (NFS/Lustre): uninterruptible sleep in rpc_wait_bit_killable (wchan rpc_wait_bit_killable; files open on nfs4 /data); 3 local ranks wait in NCCL", []int{3}},
		{"job-hang-dead", check.Fail, 1, "rank 3 (pid 70103, GPU 3) rank exited (its process is gone); 3 local ranks wait in NCCL", []int{3}},
		{"job-slow-not-hung", check.Pass, 0, "all 4 local ranks are computing (slow, not hung)", nil},
	} {
		t.Run(c.shape, func(t *testing.T) {
			code, out, errOut := runCLI(t, "job", "--hang", "--simulate", "dgx-h100:"+c.shape, "--duration", "2s", "--format", "json")
			var doc report.Document
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("exit %d, %v: %s %s", code, err, out, errOut)
			}
			if len(doc.Checks) != 1 || doc.Checks[0].ID != "perf.hang" {
				t.Fatalf("checks %+v, want perf.hang alone", doc.Checks)
			}
			r := doc.Checks[0]
			if r.Status != c.status || !strings.Contains(r.Summary, c.summary) {
				t.Errorf("%s %q, want %s containing %q", r.Status, r.Summary, c.status, c.summary)
			}
			if code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
			var devs []int
			for _, d := range r.Devices {
				devs = append(devs, d.Index)
			}
			if fmt.Sprint(devs) != fmt.Sprint(c.devices) {
				t.Errorf("devices %v, want %v", devs, c.devices)
			}
			h := doc.JobPerf.Hang
			if h == nil || len(h.Ranks) != 4 || h.RAS == nil {
				t.Fatalf("hang facts %+v, want the 4 ranks (not the 8 DataLoader workers) and what RAS said", h)
			}
			// Only job-hang-peer's job runs NCCL 2.24+ with RAS on; the
			// others' port refuses.
			if answered := c.shape == "job-hang-peer"; h.RAS.Answered != answered ||
				!answered && !strings.HasPrefix(h.RAS.Error, "RAS not available (NCCL < 2.24, or NCCL_RAS_ENABLE=0)") {
				t.Errorf("RAS %+v", h.RAS)
			}
			// Asked twice when the first query answered, once otherwise.
			if (h.RASStart != nil) != h.RAS.Answered || h.RASStart != nil && !h.RASStart.Answered {
				t.Errorf("RAS at the start %+v, at the end answered %v", h.RASStart, h.RAS.Answered)
			}
			// The simulated ranks' kernel stacks are read; py-spy is never
			// run on simulated PIDs.
			if !strings.HasPrefix(h.PySpyError, "py-spy not installed") {
				t.Errorf("py-spy: %q", h.PySpyError)
			}
			if c.shape == "job-hang-dstate" && (len(h.Ranks[3].KernelStack) == 0 || h.Ranks[3].KernelStack[0] != "rpc_wait_bit_killable [sunrpc]" || len(h.Ranks[3].DStacks) != 1) {
				t.Errorf("rank in D: stack %q, threads' %q", h.Ranks[3].KernelStack, h.Ranks[3].DStacks)
			}
			for i, rk := range h.Ranks {
				if rk.Rank != fmt.Sprint(i) || rk.Comm != "python" || rk.Threads == 0 {
					t.Errorf("rank %d: %+v", i, rk)
				}
			}
		})
	}
}

// Without --hang, perf.hang is not run (nothing to judge).
func TestJobWithoutHangSkipsPerfHang(t *testing.T) {
	_, out, _ := runCLI(t, "job", "--simulate", "dgx-h100:job-healthy", "--duration", "1s", "--interval", "500ms", "--format", "json")
	if strings.Contains(out, `"perf.hang"`) {
		t.Error("perf.hang ran without --hang")
	}
}
