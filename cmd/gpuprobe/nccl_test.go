package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const ncclLogs = "../../nccl/testdata/logs/"

func TestNCCLAnalyzeExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"nccl", "analyze", ncclLogs + "005.log"}, 1, "Inter-node traffic used TCP sockets"},
		{[]string{"nccl", "analyze", ncclLogs + "005.log", "--format", "json"}, 1, `"tcp_fallback": true`},
		{[]string{"nccl", "analyze", filepath.Join(t.TempDir(), "none.log")}, 2, ""},
	} {
		code, out, errs := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.stdout) {
			t.Errorf("%v: exit %d\n%s%s", tc.args, code, out, errs)
		}
	}
}

func TestNCCLAnalyzeHealthyLogExitsZero(t *testing.T) {
	// A clean single-node log: every connection stays on the node.
	log := filepath.Join(t.TempDir(), "ok.log")
	os.WriteFile(log, []byte(strings.Join([]string{
		"node1:100:100 [0] NCCL INFO NCCL version 2.18.3+cuda12.2",
		"node1:100:100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>",
		"node1:100:100 [0] NCCL INFO comm 0x55d1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0",
		"node1:100:100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
		"node1:100:100 [0] NCCL INFO comm 0x55d1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1c2d - Init COMPLETE",
	}, "\n")+"\n"), 0o644)
	code, out, errs := runCLI(t, "nccl", "analyze", "--format", "json", log)
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["inter_node"] != "none" || v["tcp_fallback"] != false {
		t.Errorf("exit %d inter_node=%v tcp_fallback=%v\n%s%s", code, v["inter_node"], v["tcp_fallback"], out, errs)
	}
}

func TestNCCLRunPassesExitCodeAndOutput(t *testing.T) {
	report := filepath.Join(t.TempDir(), "verdict.json")
	code, out, errs := runCLI(t, "nccl", "run", "--report", report, "--", "sh", "-c",
		`echo "n1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>"; echo "child stderr $NCCL_DEBUG" >&2; exit 3`)
	if code != 3 {
		t.Fatalf("exit %d, want the child's 3\n%s", code, errs)
	}
	if !strings.Contains(out, "NCCL INFO NET/Socket") || !strings.Contains(errs, "child stderr INFO") || !strings.Contains(errs, "gpuprobe nccl verdict") {
		t.Errorf("pass-through or verdict missing:\nstdout %q\nstderr %q", out, errs)
	}
	data, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(data), `"inter_node"`) {
		t.Errorf("--report: %v %s", err, data)
	}
	// --fail-on-verdict turns a bad verdict of a successful command into exit 1.
	code, _, _ = runCLI(t, "nccl", "run", "--fail-on-verdict", "--", "sh", "-c",
		`echo "n1:1:1 [0] NCCL INFO NET/IB : No device found."; echo "n1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>"; echo "n1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0"; echo "n2:2:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0"`)
	if code != 1 {
		t.Errorf("--fail-on-verdict on a TCP fallback: exit %d", code)
	}
}

func TestCheckNCCLLog(t *testing.T) {
	code, out, errs := runCLI(t, "check", "--simulate", "dgx-h100", "--nccl-log", ncclLogs+"005.log", "--checks", "nccl", "--format", "json")
	d := decode(t, out)
	if code != 1 || len(d.Checks) != 1 || d.Checks[0].ID != "nccl.transport" || d.Checks[0].Status != "fail" || d.Checks[0].Remedy == "" {
		t.Fatalf("exit %d %+v\n%s", code, d.Checks, errs)
	}
	code, out, _ = runCLI(t, "check", "--simulate", "dgx-h100", "--checks", "nccl", "--format", "json")
	if d := decode(t, out); code != 0 || d.Checks[0].Status != "skip" {
		t.Errorf("without --nccl-log: exit %d %+v", code, d.Checks)
	}
}

func TestNCCLRunMissingCommand(t *testing.T) {
	code, _, errs := runCLI(t, "nccl", "run", "--", "/nonexistent/trainer")
	if code != 127 || !strings.Contains(errs, "nccl run") {
		t.Errorf("exit %d, want 127 like a shell: %s", code, errs)
	}
}

// runWithin runs the CLI and fails the test if it is still running after
// limit (the bug was a hang: without this the test would hang too).
func runWithin(t *testing.T, limit time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type res struct {
		code      int
		out, errs string
	}
	done := make(chan res, 1)
	go func() {
		code, out, errs := runCLI(t, args...)
		done <- res{code, out, errs}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.errs
	case <-time.After(limit):
		t.Fatalf("%v: still running after %s", args, limit)
	}
	return 0, "", ""
}

// The bugs: `nccl analyze` read a FIFO with no writer, or one whose writer
// never writes, for ever (no deadline at all); /dev/zero as --nccl-log or
// to `nccl analyze` spun past --timeout for good (one endless line, skipped
// in a loop that never looked at the deadline).
func TestNCCLLogBoundedInTime(t *testing.T) {
	dir := t.TempDir()
	// The bounds below are the deadline plus what the same command costs on
	// an ordinary log in this run: a loaded machine slows both alike, and a
	// read that ignored its deadline still overshoots by far (it never ends).
	plain := filepath.Join(dir, "plain.log")
	if err := os.WriteFile(plain, []byte("host:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	runWithin(t, time.Minute, "check", "--simulate", "dgx-h100", "--checks", "nccl", "--timeout", "5s", "--nccl-log", plain)
	base := time.Since(t0)
	t.Logf("baseline: check --checks nccl on a one-line log took %s", base)
	within := func(deadline time.Duration) time.Duration { return deadline + 3*base + 2*time.Second }
	fifo := func(name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // let an open(2) still blocked on it return
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		})
		return p
	}
	noWriter := fifo("no-writer.log")
	start := time.Now()
	code, _, errs := runWithin(t, time.Minute, "nccl", "analyze", "--timeout", "1s", noWriter)
	if code != exitUsage || !strings.Contains(errs, noWriter) || !strings.Contains(errs, "FIFO with no writer") {
		t.Errorf("FIFO with no writer: exit %d, %q", code, errs)
	}
	if el := time.Since(start); el > within(time.Second) {
		t.Errorf("FIFO with no writer: took %s with --timeout 1s (baseline %s)", el, base)
	}

	// A writer that holds the FIFO open and never writes.
	silent := fifo("silent.log")
	w, err := os.OpenFile(silent, os.O_RDWR, 0) // O_RDWR: does not wait for a reader
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, args := range [][]string{
		{"nccl", "analyze", "--timeout", "1s", silent},
		{"check", "--simulate", "dgx-h100", "--checks", "nccl", "--timeout", "1s", "--nccl-log", silent},
	} {
		start := time.Now()
		code, out, errs := runWithin(t, time.Minute, args...)
		if el := time.Since(start); el > within(time.Second) {
			t.Errorf("%v: took %s with --timeout 1s (baseline %s)", args, el, base)
		}
		if code == 0 || !strings.Contains(out+errs, silent) || !strings.Contains(out+errs, "no end of file") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}

	// Devices and directories are refused by type, at once.
	for _, p := range []string{"/dev/zero", dir} {
		for _, args := range [][]string{
			{"nccl", "analyze", "--timeout", "5s", p},
			{"check", "--simulate", "dgx-h100", "--checks", "nccl", "--timeout", "5s", "--nccl-log", p},
		} {
			start := time.Now()
			code, out, errs := runWithin(t, time.Minute, args...)
			// Refused by type at once: well inside the 5 s deadline.
			if el := time.Since(start); el > within(0) {
				t.Errorf("%v: took %s (baseline %s)", args, el, base)
			}
			if code == 0 || !strings.Contains(out+errs, "log "+p+": a ") || !strings.Contains(out+errs, "not a log file") {
				t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
			}
		}
	}
}

// The bug: `nccl run --report PATH` created PATH with a plain open, so a
// symlink's target was overwritten and a FIFO was opened read-write. The
// report now goes through internal/safefile's rules, checked before the
// command runs: the link and the FIFO are refused and left as they were.
func TestNCCLRunReportRefusesLinksAndFIFOs(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o644)
	link := filepath.Join(dir, "link.json")
	os.Symlink(victim, link)
	fifo := filepath.Join(dir, "fifo.json")
	syscall.Mkfifo(fifo, 0o600)
	ran := filepath.Join(dir, "ran")
	for _, c := range []struct{ path, want string }{{link, "symlink to " + victim}, {fifo, "FIFO"}} {
		code, _, errs := runWithin(t, 20*time.Second, "nccl", "run", "--report", c.path, "--", "sh", "-c", "touch "+ran+"; echo x")
		if code == 0 || !strings.Contains(errs, c.path) || !strings.Contains(errs, c.want) {
			t.Errorf("--report %s: exit %d, want a refusal naming it and %q\n%s", c.path, code, c.want, errs)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("the link's target was overwritten: %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the command ran although --report was refused")
	}
}
