package collect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// fakePySpy writes a shell script named py-spy into a fresh directory and
// returns its path.
func fakePySpy(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "py-spy")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

func TestRunPySpy(t *testing.T) {
	ctx := context.Background()
	// The dump jobperf's parser tests read (py-spy's layout, composed).
	dumpFile, err := filepath.Abs("../jobperf/testdata/pyspy-dump-torch.txt")
	if err != nil {
		t.Fatal(err)
	}
	torch, err := os.ReadFile(dumpFile)
	if err != nil {
		t.Fatal(err)
	}
	// It is asked for a dump of the PID, without stopping the process.
	good := fakePySpy(t, `[ "$1 $2 $3 $4" = "dump --pid 70100 --nonblocking" ] || { echo "bad args: $*" >&2; exit 2; }
cat `+dumpFile, 0o755)
	out, err := runPySpy(ctx, good, 70100, PySpyTimeout, PySpyMaxOutput)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(torch) {
		t.Errorf("output %q", out)
	}
	p, _ := pythonStack(ctx, func(context.Context, int32) ([]byte, error) { return out, nil }, 70100)
	if p.Error != "" || p.Thread != "70100 MainThread" || p.Status != "active" || len(p.Frames) != 6 ||
		p.Frames[0] != "all_reduce (torch/distributed/distributed_c10d.py:2501)" {
		t.Errorf("%+v", p)
	}
	if _, err := runPySpy(ctx, good, 1, PySpyTimeout, PySpyMaxOutput); err == nil || !strings.Contains(err.Error(), "bad args") {
		t.Errorf("py-spy's own error not said: %v", err)
	}

	// A py-spy that hangs is killed at the deadline, its children too.
	slow := fakePySpy(t, "sleep 30 & sleep 30", 0o755)
	start := time.Now()
	_, err = runPySpy(ctx, slow, 1, 300*time.Millisecond, PySpyMaxOutput)
	if err == nil || !strings.Contains(err.Error(), "no dump within") || time.Since(start) > 5*time.Second {
		t.Errorf("slow py-spy: %v after %s", err, time.Since(start))
	}

	// One that floods is stopped at the cap.
	flood := fakePySpy(t, "yes '    f (a.py:1)'", 0o755)
	start = time.Now()
	_, err = runPySpy(ctx, flood, 1, 10*time.Second, 64<<10)
	if err == nil || !strings.Contains(err.Error(), "more than") || time.Since(start) > 5*time.Second {
		t.Errorf("flooding py-spy: %v after %s", err, time.Since(start))
	}
}

func TestFindPySpy(t *testing.T) {
	ctx := context.Background()
	good := fakePySpy(t, "true", 0o755)
	if p, err := findPySpy(ctx, []string{t.TempDir(), filepath.Dir(good)}); err != nil || p != good {
		t.Errorf("got %q, %v; want %s", p, err, good)
	}
	_, err := findPySpy(ctx, []string{t.TempDir()})
	if !errors.Is(err, ErrPySpyNotInstalled) || !strings.HasPrefix(err.Error(), "py-spy not installed (searched ") {
		t.Errorf("absent: %v", err)
	}
	// One anyone may replace is not run as root.
	writable := fakePySpy(t, "true", 0o777)
	if _, err := findPySpy(ctx, []string{filepath.Dir(writable)}); !errors.Is(err, ErrPySpyNotInstalled) || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("world-writable: %v", err)
	}
	notExec := fakePySpy(t, "true", 0o644)
	if _, err := findPySpy(ctx, []string{filepath.Dir(notExec)}); !strings.Contains(fmtErr(err), "not an executable file") {
		t.Errorf("not executable: %v", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Only python ranks are dumped; an absent py-spy is said once.
func TestPythonStacks(t *testing.T) {
	h := &state.JobHang{Ranks: []state.HangRank{{PID: 1}, {PID: 2}, {PID: 3, Exited: true}}}
	exes := map[int32]string{1: "/usr/bin/python3.11", 2: "/opt/app/trainer", 3: "/usr/bin/python3"}
	var asked []int32
	o := JobOptions{Options: Options{Sources: Sources{
		Process: func(_ context.Context, pid int32) (string, string, string) { return "u", exes[pid], "" },
		PySpy: func(_ context.Context, pid int32) ([]byte, error) {
			asked = append(asked, pid)
			return []byte("Thread 1 (active): \"MainThread\"\n    f (a.py:1)\n"), nil
		},
	}}}
	pythonStacks(context.Background(), o, h)
	if len(asked) != 1 || asked[0] != 1 || h.Ranks[0].Python == nil || h.Ranks[1].Python != nil || h.Ranks[2].Python != nil {
		t.Errorf("asked %v: %+v", asked, h.Ranks)
	}
	if h.Ranks[0].Exe != "/usr/bin/python3.11" || h.Ranks[1].Exe != "/opt/app/trainer" {
		t.Errorf("exes: %+v", h.Ranks)
	}
	o.Sources.PySpy = func(context.Context, int32) ([]byte, error) { return nil, ErrPySpyNotInstalled }
	h = &state.JobHang{Ranks: []state.HangRank{{PID: 1}}}
	pythonStacks(context.Background(), o, h)
	if h.PySpyError != "py-spy not installed" || h.Ranks[0].Python != nil {
		t.Errorf("PySpyError %q", h.PySpyError)
	}
}
