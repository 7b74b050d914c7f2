package slurm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
)

// fakeScontrol writes a stand-in scontrol that records its argv, one
// argument a line, and prints a drained node for "show".
func fakeScontrol(t *testing.T, body string) (path, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	path = filepath.Join(dir, "scontrol")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> " + argsFile + "; done\necho \"SLURM_CONF=$SLURM_CONF PATH=$PATH\" >> " + argsFile + "\n" + body
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, argsFile
}

func TestScontrolRunsWithoutShell(t *testing.T) {
	path, args := fakeScontrol(t, "echo 'NodeName=n1 State=IDLE+DRAIN'\necho '   Reason=gpuprobe: x [root@now]'\n")
	s := &Scontrol{Path: path, SlurmConf: "/tmp/e2e/slurm.conf", Timeout: 5 * time.Second}
	n, err := s.ShowNode(context.Background(), "n1")
	if err != nil || !strings.HasPrefix(n.Reason, check.ReasonPrefix) || n.Name != "n1" {
		t.Fatalf("ShowNode = %+v, %v", n, err)
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	reason := "gpuprobe: x; $(touch " + marker + ") `touch " + marker + "`"
	if err := s.Drain(context.Background(), "n1", reason); err != nil {
		t.Fatal(err)
	}
	if err := s.Resume(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(args)
	got := string(data)
	want := "show\nnode\nn1\nSLURM_CONF=/tmp/e2e/slurm.conf PATH=/usr/sbin:/usr/bin:/sbin:/bin\n" +
		"update\nNodeName=n1\nState=DRAIN\nReason=" + reason + "\nSLURM_CONF=/tmp/e2e/slurm.conf PATH=/usr/sbin:/usr/bin:/sbin:/bin\n" +
		"update\nNodeName=n1\nState=RESUME\nSLURM_CONF=/tmp/e2e/slurm.conf PATH=/usr/sbin:/usr/bin:/sbin:/bin\n"
	if got != want {
		t.Errorf("argv log:\n%s\nwant:\n%s", got, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the reason went through a shell")
	}
}

func TestScontrolTimeoutAndFailure(t *testing.T) {
	path, _ := fakeScontrol(t, "sleep 30\n")
	s := &Scontrol{Path: path, Timeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := s.ShowNode(context.Background(), "n1")
	if err == nil || !strings.Contains(err.Error(), "no answer within") || time.Since(start) > 5*time.Second {
		t.Errorf("hung scontrol: %v after %s", err, time.Since(start))
	}
	path, _ = fakeScontrol(t, "echo 'slurm_update error: Invalid node name specified' >&2\nexit 1\n")
	s = &Scontrol{Path: path}
	if err := s.Drain(context.Background(), "nope", "gpuprobe: x"); err == nil || !strings.Contains(err.Error(), "Invalid node name") {
		t.Errorf("failed update: %v", err)
	}
}

func TestFindScontrol(t *testing.T) {
	path, _ := fakeScontrol(t, "")
	if p, err := FindScontrol(path); err != nil || p != path {
		t.Errorf("explicit: %q %v", p, err)
	}
	if _, err := FindScontrol("scontrol"); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative path accepted: %v", err)
	}
	if _, err := FindScontrol(filepath.Dir(path)); err == nil {
		t.Error("a directory accepted")
	}
	old := DefaultScontrolDirs
	defer func() { DefaultScontrolDirs = old }()
	DefaultScontrolDirs = []string{"/nonexistent", filepath.Dir(path)}
	if p, err := FindScontrol(""); err != nil || p != path {
		t.Errorf("search: %q %v", p, err)
	}
	DefaultScontrolDirs = []string{"/nonexistent"}
	if _, err := FindScontrol(""); err == nil || !strings.Contains(err.Error(), "--scontrol") {
		t.Errorf("not found: %v", err)
	}
}

// Issue 32: scontrol output was buffered without bound; a streaming stub
// drove --slurm-drain to a fatal out-of-memory at 1.08 GB. Output over the
// cap stops the run at once with an error naming the limit.
func TestScontrolOutputIsBounded(t *testing.T) {
	for _, body := range []string{"exec yes NodeName=n1\n", "exec yes NodeName=n1 >&2\n"} {
		path, _ := fakeScontrol(t, body)
		s := &Scontrol{Path: path, Timeout: 20 * time.Second}
		start := time.Now()
		_, err := s.ShowNode(context.Background(), "n1")
		if err == nil || !strings.Contains(err.Error(), "over the size limit") || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: %v, want an error naming scontrol and the size limit", body, err)
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Errorf("%q: took %s", body, el)
		}
	}
}

func TestScontrolShowNodesBounded(t *testing.T) {
	path, args := fakeScontrol(t, "echo 'NodeName=n1 State=IDLE Partitions=gpu'\necho 'NodeName=n2 State=IDLE+DRAIN Partitions=gpu Reason=gpuprobe: gpu.ecc node x [root@2026-11-22T05:08:27]'\n")
	s := &Scontrol{Path: path, Timeout: 5 * time.Second}
	ns, err := s.ShowNodes(context.Background())
	if err != nil || len(ns) != 2 || ns[1].Reason != "gpuprobe: gpu.ecc node x" {
		t.Fatalf("ShowNodes = %+v, %v", ns, err)
	}
	if a, _ := os.ReadFile(args); !strings.HasPrefix(string(a), "-o\nshow\nnodes\n") {
		t.Errorf("argv %q", a)
	}
	// A flood of output ends the call with an error, not a large buffer.
	flood, _ := fakeScontrol(t, "yes 'NodeName=n1 State=IDLE Partitions=gpu'\n")
	s = &Scontrol{Path: flood, Timeout: 5 * time.Second, MaxOutput: 1 << 20}
	start := time.Now()
	if _, err := s.ShowNodes(context.Background()); err == nil || !strings.Contains(err.Error(), "over the size limit") || time.Since(start) > 4*time.Second {
		t.Errorf("flood: %v after %s", err, time.Since(start))
	}
}
