package collect

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/state"
)

func fakeProc(t *testing.T, pid string, status string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, pid)
	os.MkdirAll(dir, 0o755)
	if status != "" {
		os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644)
	}
	os.Symlink("/opt/conda/bin/python3.11", filepath.Join(dir, "exe"))
	os.WriteFile(filepath.Join(dir, "comm"), []byte("python3.11\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "cmdline"), []byte("python3\x00train.py\x00--wandb-key=s3cr3t\x00"), 0o644)
	return root
}

func node(pid uint32) *state.Node {
	return &state.Node{NVML: &state.NVML{GPUs: []state.GPU{{Processes: []state.Process{{PID: pid}}}}}}
}

// The bug: /report and drain reasons carried the first 120 characters of
// every GPU process's command line (arguments hold tokens). By default a
// process is now its pid, user and executable name.
func TestProcessesNamedWithoutArguments(t *testing.T) {
	root := fakeProc(t, "4242", "Name:\tpython3\nUid:\t1000\t1000\t1000\t1000\n")
	tab := &procTable{root: root, reg: &deadline.Registry{}, timeout: time.Second,
		lookupID: func(uid string) (string, error) { return map[string]string{"1000": "alice"}[uid], nil }}
	n := node(4242)
	describeProcesses(context.Background(), n, tab.lookup, tab.job)
	p := n.NVML.GPUs[0].Processes[0]
	if p.User != "alice" || p.Command != "python3.11" || p.CommandLine != "" {
		t.Fatalf("got user %q command %q command line %q; want alice, python3.11 and no command line", p.User, p.Command, p.CommandLine)
	}
	tab.commandLines = true
	describeProcesses(context.Background(), n, tab.lookup, tab.job)
	if p := n.NVML.GPUs[0].Processes[0]; p.CommandLine != "python3 train.py --wandb-key=s3cr3t" {
		t.Fatalf("with command lines asked for: %q", p.CommandLine)
	}
}

// The bug: an NSS user lookup on a hung LDAP froze the collection (and in a
// daemon piled up one thread per cycle). Now the first lookup gives up at
// its timeout, the rest are refused at once, and the uid is shown instead.
func TestUserLookupOnHungLDAP(t *testing.T) {
	root := fakeProc(t, "4242", "Uid:\t1000\t1000\t1000\t1000\n")
	block := make(chan struct{})
	defer close(block)
	var calls atomic.Int32
	tab := &procTable{root: root, reg: &deadline.Registry{}, timeout: 300 * time.Millisecond,
		lookupID: func(string) (string, error) { calls.Add(1); <-block; return "alice", nil }}
	g0 := runtime.NumGoroutine()
	start := time.Now()
	for i := 0; i < 1000; i++ {
		usr, exe, _ := tab.lookup(context.Background(), 4242)
		if usr != "uid 1000" || exe != "python3.11" {
			t.Fatalf("lookup %d: %q %q", i, usr, exe)
		}
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("1000 lookups took %s with a hung NSS", el)
	}
	if calls.Load() != 1 || runtime.NumGoroutine() > g0+2 {
		t.Errorf("NSS called %d times, goroutines %d -> %d: want one call, one goroutine", calls.Load(), g0, runtime.NumGoroutine())
	}
}

func TestProcStatusHung(t *testing.T) {
	root := fakeProc(t, "77", "")
	fifo := filepath.Join(root, "77", "status")
	syscall.Mkfifo(fifo, 0o600)
	defer func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}()
	tab := &procTable{root: root, reg: &deadline.Registry{}, timeout: 20 * time.Millisecond, lookupID: nssUser}
	for i := 0; i < 100; i++ {
		if usr, exe, _ := tab.lookup(context.Background(), 77); usr != "" || exe != "python3.11" {
			t.Fatalf("%q %q", usr, exe)
		}
	}
}

// A GPU process's Slurm job comes from the cgroup the kernel lists for it:
// a v2 task line of a real node (NordicHPC/sonar's capture) and a v1 one
// (state/slurmstate's JobFromCgroup tests hold the captures).
func TestProcessJobFromCgroup(t *testing.T) {
	for _, c := range []struct{ cgroup, want string }{
		{"0::/system.slice/slurmstepd.scope/job_1426637/step_0/user/task_0\n", "1426637"},
		{"12:memory:/slurm/uid_20821/job_10/step_batch/task_0\n11:cpuacct,cpu:/slurm/uid_20821/job_10/step_batch/task_0\n", "10"},
		{"0::/user.slice/user-1000.slice/session-3.scope\n", ""},
		{"0::/system.slice/job_12;rm -rf/x\n", ""},
		// A user's own systemd subtree: the user names its directories, so a
		// job_<id> there is not Slurm's (it was taken as job 99 before).
		{"0::/user.slice/user-1000.slice/user@1000.service/app.slice/job_99/x\n", ""},
	} {
		root := fakeProc(t, "4242", "Uid:\t1000\t1000\t1000\t1000\n")
		os.WriteFile(filepath.Join(root, "4242", "cgroup"), []byte(c.cgroup), 0o644)
		tab := &procTable{root: root, reg: &deadline.Registry{}, timeout: time.Second, lookupID: nssUser}
		n := node(4242)
		describeProcesses(context.Background(), n, tab.lookup, tab.job)
		if got := n.NVML.GPUs[0].Processes[0].JobID; got != c.want {
			t.Errorf("%q: job %q, want %q", c.cgroup, got, c.want)
		}
	}
}
