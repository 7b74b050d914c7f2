package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
)

// fakeScontrol is a stand-in scontrol that keeps one node's state and reason
// in files, as slurmctld would, and logs every call's argv.
func fakeScontrol(t *testing.T, state, reason string) (path, dir string) {
	t.Helper()
	dir = t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("state", state)
	write("reason", reason)
	script := `#!/bin/sh
D=` + dir + `
echo "$*" >> $D/calls
case "$1" in
-o)
  [ -f $D/list-fails ] && { echo "scontrol: error: Unable to contact slurm controller" >&2; exit 1; }
  r=$(cat $D/reason)
  line="NodeName=vm Arch=x86_64 State=$(cat $D/state) Partitions=debug"
  [ -n "$r" ] && line="$line Reason=$r [root@2026-11-22T05:08:27]"
  echo "$line"
  [ -f $D/others ] && cat $D/others
  exit 0 ;;
show)
  echo "NodeName=$3 Arch=x86_64"
  echo "   State=$(cat $D/state) ThreadsPerCore=1"
  r=$(cat $D/reason)
  [ -n "$r" ] && echo "   Reason=$r [root@2026-11-22T05:08:27]"
  exit 0 ;;
update)
  for a in "$@"; do
    case "$a" in
    State=DRAIN) echo "IDLE+DRAIN" > $D/state ;;
    State=RESUME) echo "IDLE" > $D/state; : > $D/reason ;;
    Reason=*) printf '%s' "${a#Reason=}" > $D/reason ;;
    esac
  done ;;
esac
`
	path = filepath.Join(dir, "scontrol")
	write("scontrol", script)
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path, dir
}

func runEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb, func(k string) string { return env[k] })
	return code, out.String(), errb.String()
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestSlurmDrainAndResume(t *testing.T) {
	sc, dir := fakeScontrol(t, "IDLE", "")
	env := map[string]string{"SLURMD_NODENAME": "vm"}
	hc := func(spec string) (int, string, string) {
		return runEnv(t, env, "check", "--slurm-drain", "--scontrol", sc, "--simulate", spec, "--checks", "gpu", "--log.level", "info")
	}
	state := func() (string, string) {
		return readFile(t, filepath.Join(dir, "state")), readFile(t, filepath.Join(dir, "reason"))
	}

	if code, out, errs := hc("dgx-h100"); code != 0 || strings.Contains(errs, "slurm-drain: drained node") {
		t.Fatalf("healthy: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := hc("dgx-h100:row-remap-pending=3")
	st, reason := state()
	if code != 1 || st != "IDLE+DRAIN" || !strings.HasPrefix(reason, "gpuprobe: gpu.row_remap node gpu=3 GPU 3") || !strings.Contains(errs, "slurm-drain: drained node") {
		t.Fatalf("fault: exit %d state %q reason %q\n%s%s", code, st, reason, out, errs)
	}
	if strings.Contains(out, "job.") {
		t.Errorf("job checks in a health-check report:\n%s", out)
	}
	calls := readFile(t, filepath.Join(dir, "calls"))
	if hc("dgx-h100:row-remap-pending=3"); readFile(t, filepath.Join(dir, "calls")) != calls+"\nshow node vm" {
		t.Errorf("same failure again must not update:\n%s", readFile(t, filepath.Join(dir, "calls")))
	}
	if code, _, errs := hc("dgx-h100"); code != 0 || !strings.Contains(errs, "slurm-drain: resumed node") {
		t.Errorf("recovery: exit %d\n%s", code, errs)
	}
	if st, reason := state(); st != "IDLE" || reason != "" {
		t.Errorf("after resume: %q %q", st, reason)
	}

	// An admin's drain survives both a failure and a recovery.
	os.WriteFile(filepath.Join(dir, "state"), []byte("IDLE+DRAIN"), 0o644)
	os.WriteFile(filepath.Join(dir, "reason"), []byte("admin: replacing PSU"), 0o644)
	hc("dgx-h100:ecc-uncorrectable=1")
	hc("dgx-h100")
	if st, reason := state(); st != "IDLE+DRAIN" || reason != "admin: replacing PSU" {
		t.Errorf("admin drain touched: %q %q", st, reason)
	}
	// A down node is left alone.
	os.WriteFile(filepath.Join(dir, "state"), []byte("DOWN+NOT_RESPONDING"), 0o644)
	os.WriteFile(filepath.Join(dir, "reason"), []byte(""), 0o644)
	if _, _, errs := hc("dgx-h100:row-remap-pending=3"); !strings.Contains(errs, "left alone") {
		t.Errorf("down node: %s", errs)
	}
	if st, _ := state(); st != "DOWN+NOT_RESPONDING" {
		t.Errorf("down node changed to %q", st)
	}
}

func TestSlurmDrainUsage(t *testing.T) {
	env := map[string]string{"SLURMD_NODENAME": "vm"}
	if code, _, errs := runEnv(t, env, "check", "--slurm-drain", "--scontrol", "scontrol", "--simulate", "dgx-h100"); code != 2 || !strings.Contains(errs, "absolute path") {
		t.Errorf("relative scontrol: exit %d %s", code, errs)
	}
	if code, _, errs := runEnv(t, env, "check", "--slurm-drain", "--scontrol", "/nonexistent/scontrol", "--simulate", "dgx-h100"); code != 2 || !strings.Contains(errs, "no such file") {
		t.Errorf("missing scontrol: exit %d %s", code, errs)
	}
	sc, _ := fakeScontrol(t, "IDLE", "")
	if code, _, errs := runEnv(t, env, "check", "--slurm-drain", "--scontrol", sc, "--slurm-deadline", "5s", "--simulate", "dgx-h100"); code != 2 || !strings.Contains(errs, "leaves no time") {
		t.Errorf("short deadline: exit %d %s", code, errs)
	}
	if code, _, errs := runEnv(t, env, "check", "--min-gpu-memory", "lots", "--simulate", "dgx-h100"); code != 2 || !strings.Contains(errs, "--min-gpu-memory") {
		t.Errorf("bad memory size: exit %d %s", code, errs)
	}
}

func TestSlurmDrainScontrolFails(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "scontrol")
	os.WriteFile(sc, []byte("#!/bin/sh\necho 'scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host' >&2\nexit 1\n"), 0o755)
	code, _, errs := runEnv(t, map[string]string{"SLURMD_NODENAME": "vm"}, "check", "--slurm-drain", "--scontrol", sc, "--simulate", "dgx-h100", "--checks", "gpu")
	if code != 1 || !strings.Contains(errs, "cannot read the node's state") || !strings.Contains(errs, "Unknown host") {
		t.Errorf("exit %d\n%s", code, errs)
	}
}

func TestJobFlagsForceJobChecks(t *testing.T) {
	code, out, _ := runEnv(t, nil, "check", "--simulate", "dgx-h100", "--checks", "job", "--no-job", "-v")
	if code != 0 || strings.Count(out, "job checks off") != 9 {
		t.Errorf("--no-job: exit %d\n%s", code, out)
	}
	code, out, _ = runEnv(t, nil, "check", "--simulate", "dgx-h100", "--checks", "job.gpu_memory", "--job", "--min-gpu-memory", "100GiB", "--format", "json")
	if code != 1 || !strings.Contains(out, "below the required 100GiB") {
		t.Errorf("--job --min-gpu-memory: exit %d\n%s", code, out)
	}
}

// A wedged driver must not keep a health check past its hard deadline:
// --timeout is cut to leave scontrol its time, and the node is drained.
func TestSlurmDrainHungDriverFinishesInTime(t *testing.T) {
	if testing.Short() {
		t.Skip("takes the 10 s collection budget")
	}
	sc, dir := fakeScontrol(t, "IDLE", "")
	start := time.Now()
	code, out, errs := runEnv(t, map[string]string{"SLURMD_NODENAME": "vm"}, "check", "--slurm-drain", "--scontrol", sc,
		"--slurm-deadline", "20s", "--timeout", "60s", "--simulate", "dgx-h100:nvml-hang=1", "--checks", "gpu")
	took := time.Since(start)
	if code != 1 || took > 19*time.Second {
		t.Fatalf("exit %d after %s\n%s%s", code, took, out, errs)
	}
	if st := readFile(t, filepath.Join(dir, "state")); st != "IDLE+DRAIN" {
		t.Errorf("state %q after a hung driver (took %s)\n%s", st, took, readFile(t, filepath.Join(dir, "reason")))
	}
}

func TestWatchdogFires(t *testing.T) {
	fired := make(chan int, 1)
	old := watchdogExit
	watchdogExit = func(code int) { fired <- code }
	defer func() { watchdogExit = old }()
	s := &slurmFlags{drain: true, deadline: 2 * scontrolBudget}
	sc, _ := fakeScontrol(t, "IDLE", "")
	s.scontrol = sc
	f := &checkFlags{}
	f.collect.timeout = time.Minute
	cfg := check.DefaultConfig()
	var o collect.Options
	if err := s.configure(f, cfg, &o); err != nil {
		t.Fatal(err)
	}
	if f.collect.timeout != scontrolBudget || o.SlurmJob != "never" || cfg.Job.Mode != "never" {
		t.Errorf("configure: timeout %s, job %q/%q", f.collect.timeout, o.SlurmJob, cfg.Job.Mode)
	}
	s.watchdog.Reset(10 * time.Millisecond)
	select {
	case code := <-fired:
		if code != exitFailed {
			t.Errorf("watchdog exit %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Error("watchdog did not fire")
	}
}

// The bug: a --slurm-conf that exists but cannot be read (over the size
// limit, a directory, a permission error, a timeout) became "no slurm.conf
// (not a Slurm node)": the Slurm checks skipped and the health check passed.
// It is now an error naming the file and the reason; a missing file at the
// default path stays a skip.
func TestSlurmConfUnreadableIsAnError(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "slurm.conf")
	f, _ := os.Create(big)
	f.Truncate(17 << 20)
	f.Close()
	notFile := filepath.Join(dir, "conf.d")
	os.Mkdir(notFile, 0o755)
	for _, c := range []struct{ path, reason string }{{big, "over the size limit"}, {notFile, "directory"}} {
		code, out, errs := runCLI(t, "check", "--simulate", "dgx-h100", "--slurm-conf", c.path, "--checks", "slurm", "--format", "json")
		d := decode(t, out)
		if code == 0 || len(d.Checks) == 0 {
			t.Fatalf("%s: exit %d\n%s%s", c.path, code, out, errs)
		}
		for _, r := range d.Checks {
			if r.Status != check.Error || !strings.Contains(r.Summary, c.path) || !strings.Contains(r.Summary, c.reason) || strings.Contains(r.Summary, "not a Slurm node") {
				t.Errorf("%s: %s %s: %q, want an error naming the file and %q", c.path, r.ID, r.Status, r.Summary, c.reason)
			}
		}
	}
}

// The circuit breaker: a failing node in a cluster where gpuprobe's drains
// already cover too much is not drained; the log, the report and the
// textfile say so; --no-drain-breaker drains anyway; a cluster that cannot
// be listed is not drained.
func TestSlurmDrainBreaker(t *testing.T) {
	sc, dir := fakeScontrol(t, "IDLE", "")
	var others strings.Builder
	for i := 1; i < 20; i++ {
		st, reason := "IDLE", ""
		if i <= 2 {
			st, reason = "IDLE+DRAIN", " Reason=gpuprobe: gpu.ecc node gpu=1 GPU 1: uncorrectable ECC [root@2026-11-22T05:00:00]"
		} else if i == 3 {
			st, reason = "IDLE+DRAIN", " Reason=admin: PSU [root@2026-11-22T05:00:00]"
		}
		fmt.Fprintf(&others, "NodeName=n%d State=%s Partitions=debug%s\n", i, st, reason)
	}
	os.WriteFile(filepath.Join(dir, "others"), []byte(others.String()), 0o644)
	tf := filepath.Join(t.TempDir(), "gpuprobe.prom")
	env := map[string]string{"SLURMD_NODENAME": "vm"}
	hc := func(extra ...string) (int, string, string) {
		args := append([]string{"check", "--slurm-drain", "--scontrol", sc, "--simulate", "dgx-h100:row-remap-pending=3", "--log.level", "info", "--textfile", tf}, extra...)
		return runEnv(t, env, args...)
	}
	code, out, errs := hc()
	if st := readFile(t, filepath.Join(dir, "state")); code != 1 || st != "IDLE" || !strings.Contains(errs, "drain suppressed by the circuit breaker") ||
		!strings.Contains(out, "drain: SUPPRESSED by the circuit breaker: gpuprobe: gpu.row_remap node gpu=3") || !strings.Contains(out, "2 of 20 nodes") {
		t.Fatalf("exit %d state %s\n%s%s", code, st, out, errs)
	}
	if m := readFile(t, tf); !strings.Contains(m, "gpuprobe_drain_suppressed 1") {
		t.Errorf("textfile:\n%s", m)
	}
	_, out, _ = hc("--format", "json")
	if !strings.Contains(out, `"suppressed": true`) {
		t.Errorf("json report:\n%s", out)
	}
	// The emergency override.
	code, out, errs = hc("--no-drain-breaker")
	if st := readFile(t, filepath.Join(dir, "state")); code != 1 || st != "IDLE+DRAIN" || !strings.Contains(out, "drain: drain gpuprobe: gpu.row_remap") {
		t.Fatalf("--no-drain-breaker: exit %d state %s\n%s%s", code, st, out, errs)
	}
	if m := readFile(t, tf); !strings.Contains(m, "gpuprobe_drain_suppressed 0") {
		t.Errorf("textfile:\n%s", m)
	}
	// A cluster that cannot be listed: not drained, and said so.
	os.WriteFile(filepath.Join(dir, "state"), []byte("IDLE"), 0o644)
	os.WriteFile(filepath.Join(dir, "reason"), []byte(""), 0o644)
	os.WriteFile(filepath.Join(dir, "list-fails"), nil, 0o644)
	code, out, errs = hc()
	if st := readFile(t, filepath.Join(dir, "state")); code != 1 || st != "IDLE" || !strings.Contains(out, "cannot list the cluster") || !strings.Contains(errs, "Unable to contact") {
		t.Fatalf("unlistable: exit %d state %s\n%s%s", code, st, out, errs)
	}
	// ... unless the config says the cluster is known to be small.
	conf := filepath.Join(t.TempDir(), "gpuprobe.yaml")
	os.WriteFile(conf, []byte("drain: {breaker: {unreadable: drain}}\n"), 0o644)
	if hc("--config", conf); readFile(t, filepath.Join(dir, "state")) != "IDLE+DRAIN" {
		t.Errorf("unreadable: drain did not drain")
	}
}

// TestSlurmDrainQuarantine: a node fault is lifted when it clears; the same
// fault on the same GPU after that resume is drained again and held for an
// admin; the history file survives corruption; resume_node_class: false keeps
// node-class drains.
func TestSlurmDrainQuarantine(t *testing.T) {
	sc, dir := fakeScontrol(t, "IDLE", "")
	hist := filepath.Join(t.TempDir(), "drain-history.json")
	env := map[string]string{"SLURMD_NODENAME": "vm"}
	hc := func(spec string, extra ...string) (int, string, string) {
		args := append([]string{"check", "--slurm-drain", "--scontrol", sc, "--simulate", spec, "--checks", "gpu", "--log.level", "info", "--drain-history", hist, "--no-drain-breaker"}, extra...)
		return runEnv(t, env, args...)
	}
	state := func() (string, string) {
		return readFile(t, filepath.Join(dir, "state")), readFile(t, filepath.Join(dir, "reason"))
	}
	const fault = "dgx-h100:row-remap-pending=3"
	hc(fault)
	if st, reason := state(); st != "IDLE+DRAIN" || !strings.HasPrefix(reason, "gpuprobe: gpu.row_remap node gpu=3 GPU 3") {
		t.Fatalf("first drain: %q %q", st, reason)
	}
	if h := readFile(t, hist); !strings.Contains(h, `"check": "gpu.row_remap"`) {
		t.Fatalf("history after the drain:\n%s", h)
	}
	if _, _, errs := hc("dgx-h100"); !strings.Contains(errs, "slurm-drain: resumed node") {
		t.Fatalf("first resume:\n%s", errs)
	}
	hc(fault)
	if st, reason := state(); st != "IDLE+DRAIN" || !strings.HasPrefix(reason, "gpuprobe: gpu.row_remap node gpu=3 recurred: GPU 3") {
		t.Fatalf("recurrence: %q %q", st, reason)
	}
	if _, _, errs := hc("dgx-h100"); !strings.Contains(errs, "an admin resumes the node") {
		t.Errorf("held drain:\n%s", errs)
	}
	if st, _ := state(); st != "IDLE+DRAIN" {
		t.Errorf("held drain lifted: %q", st)
	}

	// A corrupt or oversized history is ignored with a warning.
	for _, bad := range []string{"{not json", strings.Repeat("x", 1<<20)} {
		os.WriteFile(hist, []byte(bad), 0o644)
		code, out, errs := hc("dgx-h100")
		if code != 0 || !strings.Contains(errs, "ignoring the drain history") {
			t.Errorf("bad history (%d bytes): exit %d\n%s%s", len(bad), code, out, errs)
		}
		// Forgotten: the drain is node-class and lifted as by default.
		if st, _ := state(); st != "IDLE" {
			t.Errorf("bad history: node %q", st)
		}
		if _, err := check.ParseDrainHistory([]byte(readFile(t, hist))); err != nil {
			t.Errorf("history not rewritten: %v", err)
		}
		os.WriteFile(filepath.Join(dir, "state"), []byte("IDLE+DRAIN"), 0o644)
		os.WriteFile(filepath.Join(dir, "reason"), []byte("gpuprobe: gpu.row_remap node gpu=3 recurred: GPU 3"), 0o644)
	}

	// resume_node_class: false keeps a node-class drain for an admin.
	os.Remove(hist)
	conf := filepath.Join(t.TempDir(), "gpuprobe.yaml")
	os.WriteFile(conf, []byte("drain: {resume_node_class: false}\n"), 0o644)
	if _, _, errs := hc("dgx-h100", "--config", conf); !strings.Contains(errs, "resume_node_class is false") {
		t.Errorf("resume_node_class: false:\n%s", errs)
	}
	if st, _ := state(); st != "IDLE+DRAIN" {
		t.Errorf("resume_node_class: false lifted the drain: %q", st)
	}
	// An admin's drain is never lifted.
	os.WriteFile(filepath.Join(dir, "reason"), []byte("admin: PSU"), 0o644)
	if hc("dgx-h100"); readFile(t, filepath.Join(dir, "reason")) != "admin: PSU" {
		t.Errorf("admin drain touched")
	}
}

// Issue 32: the drain history was checked with Lstat and then opened with a
// plain open(2): a FIFO swapped in between (whoever can rename in its
// directory) blocked --slurm-drain for good. Here the path flips between a
// file and a FIFO while it is read again and again: every read ends.
func TestDrainHistorySwappedForFIFO(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.json")
	good := []byte("{}")
	os.WriteFile(path, good, 0o600)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := filepath.Join(dir, fmt.Sprintf("t%d", i))
			if i%2 == 0 {
				syscall.Mkfifo(tmp, 0o600)
			} else {
				os.WriteFile(tmp, good, 0o600)
			}
			os.Rename(tmp, path)
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
		// Let an open still blocked on a FIFO (the old code) return.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}()
	s := &slurmFlags{history: path}
	deadline := time.Now().Add(3 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		done := make(chan struct{})
		go func() { s.readHistory(zap.NewNop()); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("read %d of a drain history swapped for a FIFO: still blocked after 10s", n)
		}
	}
}
