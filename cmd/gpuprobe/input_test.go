package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func runStdin(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb, func(string) string { return "" })
	return code, out.String(), errb.String()
}

func simSnapshot(t *testing.T) string {
	t.Helper()
	code, out, errs := runCLI(t, "snapshot", "--simulate", "dgx-h100")
	if code != 0 {
		t.Fatalf("snapshot: exit %d: %s", code, errs)
	}
	return out
}

// The bug: the flag library turned a lone "-" into "", so a piped snapshot
// was ignored and the live node judged; --config - silently used defaults;
// --textfile - wrote nothing and exited 0.
func TestDashMeansStdinWhereDocumented(t *testing.T) {
	snap := simSnapshot(t)
	code, out, errs := runStdin(t, snap, "check", "--from-snapshot", "-", "--format", "json")
	if d := decode(t, out); code != 0 || d.SimulateSpec != "dgx-h100" {
		t.Fatalf("--from-snapshot - : exit %d, %s", code, errs)
	}
	code, out, errs = runStdin(t, "strict: true\n", "check", "--simulate", "dgx-h100", "--config", "-", "--format", "json")
	if code != 0 || !decode(t, out).Strict {
		t.Fatalf("--config - did not read stdin: exit %d, %s", code, errs)
	}
	for _, tc := range []struct {
		flag string
		args []string
	}{
		{"--textfile", []string{"check", "--simulate", "dgx-h100", "--textfile", "-"}},
		{"--textfile", []string{"check", "--simulate", "dgx-h100", "--textfile=-"}},
		{"--simulate-file", []string{"check", "--simulate-file", "-"}},
		{"--config", []string{"serve", "--config", "-"}},
	} {
		code, _, errs := runStdin(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.flag+": '-' (stdin) is not accepted here") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %s", tc.args, code, errs, tc.flag)
		}
	}
}

// The bug: a snapshot of only {"schema_version":1} passed with exit 0; one
// with device_count 8 and no GPUs passed "0 GPUs reachable"; indexes that
// did not match positions panicked.
func TestSnapshotValidatedBeforeJudging(t *testing.T) {
	base := `"host":"n1","collected_at":"2026-01-01T00:00:00Z","schema_version":1`
	for _, tc := range []struct{ snap, want string }{
		{`{"schema_version":1}`, "host: missing"},
		{`{` + base + `,"nvml":{"available":true,"device_count":8,"gpus":[]}}`, "device_count 8 but nvml.gpus has 0 entries"},
		{`{` + base + `,"nvml":{"available":true,"device_count":2,"gpus":[{"index":1},{"index":0}]}}`, "nvml.gpus[0].index is 1"},
		{`{` + base + `,"nvml":{"available":true,"device_count":-1,"gpus":[]}}`, "outside 0..1024"},
		{`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, "nested deeper than 64"},
	} {
		code, out, errs := runStdin(t, tc.snap, "check", "--from-snapshot", "-")
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("snapshot %.60s: exit %d, stderr %q, want exit 2 saying %q\n%s", tc.snap, code, errs, tc.want, out)
		}
	}
}

// The bug: 3 million empty GPUs in a 9 MB snapshot took 8.25 GB to decode.
func TestSnapshotHugeGPUListRefusedCheaply(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"schema_version":1,"host":"x","collected_at":"2026-01-01T00:00:00Z","nvml":{"available":true,"device_count":100000,"gpus":[`)
	for i := 0; i < 100000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{}")
	}
	b.WriteString("]}}")
	code, _, errs := runStdin(t, b.String(), "check", "--from-snapshot", "-")
	if code != exitUsage || !strings.Contains(errs, "holds more than 65536 elements") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	big := strings.Repeat(" ", 9<<20)
	code, _, errs = runStdin(t, big, "check", "--from-snapshot", "-")
	if code != exitUsage || !strings.Contains(errs, "more than 8 MiB") {
		t.Fatalf("9 MiB snapshot: exit %d: %s", code, errs)
	}
}

// The bug: a FIFO as --config, --from-snapshot or --simulate-file hung past
// --timeout.
func TestFIFOInputsEndByTimeout(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() { // let the reads still blocked in open(2) return
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}()
	for i, args := range [][]string{
		{"check", "--simulate", "dgx-h100", "--config"},
		{"check", "--from-snapshot"},
		{"check", "--simulate-file"},
		{"snapshot", "--simulate-file"},
	} {
		// a fresh FIFO each time: the earlier read of the same one is still outstanding
		p := filepath.Join(dir, "in"+string(rune('a'+i)))
		syscall.Mkfifo(p, 0o600)
		defer func() {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}()
		start := time.Now()
		code, _, errs := runCLI(t, append(args, p, "--timeout", "500ms")...)
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("%v: took %s with --timeout 500ms", args, el)
		}
		if code != exitUsage || !strings.Contains(errs, p) || !strings.Contains(errs, "FIFO") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming the input", args, code, errs)
		}
	}
}

func TestConfigThresholdsValidatedOnLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("temperature: {fail_c: -1000}\n"), 0o644)
	code, _, errs := runCLI(t, "check", "--simulate", "dgx-h100", "--config", p)
	if code != exitUsage || !strings.Contains(errs, "--config "+p+": temperature.fail_c: -1000 is negative") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	f, _ := os.Create(big)
	f.Truncate(2 << 30)
	f.Close()
	code, _, errs = runCLI(t, "check", "--simulate", "dgx-h100", "--config", big)
	if code != exitUsage || !strings.Contains(errs, "the limit is 1 MiB") {
		t.Fatalf("2 GB config: exit %d: %s", code, errs)
	}
}

// The bug: as root, 'snapshot -o /dev/null' renamed a regular file over the
// device node; a symlinked --textfile lost its link.
func TestOutputsNeverReplaceSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Logf("mknod (needs root): %v; testing with a FIFO only", err)
		dev = ""
	}
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	real := filepath.Join(dir, "gpuprobe.prom")
	os.WriteFile(real, []byte("# old\n"), 0o644)
	link := filepath.Join(dir, "link.prom")
	os.Symlink(real, link)
	for _, target := range []string{dev, fifo, link} {
		if target == "" {
			continue
		}
		before, _ := os.Lstat(target)
		for _, args := range [][]string{
			{"snapshot", "--simulate", "dgx-h100", "-o", target},
			{"check", "--simulate", "dgx-h100", "--textfile", target},
		} {
			code, _, errs := runCLI(t, args...)
			if code != exitUsage || !strings.Contains(errs, "refusing") {
				t.Errorf("%v: exit %d, %q; want a refusal", args, code, errs)
			}
			after, err := os.Lstat(target)
			if err != nil || after.Mode() != before.Mode() {
				t.Errorf("%v: %s changed from %v to %v", args, target, before.Mode(), after.Mode())
			}
		}
	}
	if b, _ := os.ReadFile(real); string(b) != "# old\n" {
		t.Errorf("symlink target written: %q", b)
	}
	out := filepath.Join(dir, "snap.json")
	if code, _, errs := runCLI(t, "snapshot", "--simulate", "dgx-h100", "-o", out); code != 0 {
		t.Fatalf("snapshot to a new file: exit %d: %s", code, errs)
	}
	if code, _, errs := runCLI(t, "check", "--from-snapshot", out); code != 0 {
		t.Fatalf("the written snapshot does not load: exit %d: %s", code, errs)
	}
}

// The bug: a FIFO as --nccl-log hung the run past --timeout.
func TestNCCLLogFIFOEndsByTimeout(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nccl.log")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}()
	start := time.Now()
	done := make(chan struct{})
	var code int
	var out string
	go func() {
		code, out, _ = runCLI(t, "check", "--simulate", "dgx-h100", "--nccl-log", p, "--timeout", "1s", "--checks", "nccl")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("check --nccl-log FIFO still running 10 s after a 1 s --timeout")
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("took %s with --timeout 1s", el)
	}
	if code == 0 {
		t.Errorf("a log that could not be read passed:\n%s", out)
	}
}

// The bug: 'check --textfile F --checks gpu.ecc' wrote
// gpuprobe_node_healthy 1 while an NVLink was down.
func TestTextfileRefusesASubsetOfChecks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpuprobe.prom")
	code, _, errs := runCLI(t, "check", "--simulate", "dgx-h100:nvlink-down=3", "--checks", "gpu.ecc", "--textfile", path)
	if code != exitUsage || !strings.Contains(errs, "--textfile") || !strings.Contains(errs, "subset") {
		t.Fatalf("exit %d, %q", code, errs)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a textfile was written")
	}
	code, _, errs = runCLI(t, "check", "--simulate", "dgx-h100:nvlink-down=3", "--textfile", path)
	data, err := os.ReadFile(path)
	if code != 1 || err != nil || !strings.Contains(string(data), "gpuprobe_node_healthy 0") {
		t.Fatalf("full run: exit %d, %v, %s", code, err, errs)
	}
}

// The bug: in --slurm-drain mode --config was read before the hard-deadline
// watchdog was armed and before --timeout was cut to leave scontrol its
// budget, so only the config's own 10 s cap kept a hung config (a FIFO, a
// hung NFS) inside slurmd's 60 s kill, and --slurm-deadline did not count
// it. Here the cap is lifted (a read that overstays it): the run must still
// end within --slurm-deadline less the scontrol budget, name the config,
// and leave the node alone (a config that cannot be read judges nothing).
func TestSlurmDrainHungConfigWithinDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("takes the 10 s collection budget")
	}
	oldLimit := configReadLimit
	configReadLimit = time.Hour
	defer func() { configReadLimit = oldLimit }()
	fired := make(chan int, 1)
	oldExit := watchdogExit
	watchdogExit = func(code int) { fired <- code }
	defer func() { watchdogExit = oldExit }()

	sc, dir := fakeScontrol(t, "IDLE", "")
	fifo := filepath.Join(t.TempDir(), "gpuprobe.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}()
	type res struct {
		code      int
		out, errs string
	}
	done := make(chan res, 1)
	start := time.Now()
	go func() {
		code, out, errs := runEnv(t, map[string]string{"SLURMD_NODENAME": "vm"}, "check", "--slurm-drain", "--scontrol", sc,
			"--slurm-deadline", "20s", "--timeout", "60s", "--simulate", "dgx-h100", "--config", fifo)
		done <- res{code, out, errs}
	}()
	var r res
	select {
	case r = <-done:
	case <-time.After(25 * time.Second):
		t.Fatal("still reading the config 25 s into a run with --slurm-deadline 20s")
	}
	if took := time.Since(start); took > 12*time.Second {
		t.Errorf("took %s: the config read was not bounded by --slurm-deadline less scontrol's budget", took)
	}
	if r.code != exitUsage || !strings.Contains(r.errs, "--config "+fifo) || !strings.Contains(r.errs, "FIFO") {
		t.Errorf("exit %d, stderr %q", r.code, r.errs)
	}
	if st := readFile(t, filepath.Join(dir, "state")); st != "IDLE" {
		t.Errorf("node state %q: a run that could not read its config changed the node", st)
	}
	select {
	case code := <-fired:
		t.Errorf("watchdog fired (exit %d)", code)
	default:
	}
}
