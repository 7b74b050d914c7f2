package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check/ncclverdict"
)

func run(t *testing.T, opts RunOptions) (int, *Verdict, string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	if opts.Stdout == nil {
		opts.Stdout = &out
	}
	if opts.Stderr == nil {
		opts.Stderr = &errb
	}
	if opts.Stdin == nil {
		opts.Stdin = strings.NewReader("")
	}
	if opts.Env == nil {
		opts.Env = []string{"PATH=" + os.Getenv("PATH")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, f, err := RunCommand(ctx, opts)
	var v *Verdict
	if f != nil {
		v = ncclverdict.Judge(f)
	}
	return code, v, out.String(), errb.String(), err
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func TestRunExitCodeAndOutput(t *testing.T) {
	code, v, out, errs, err := run(t, RunOptions{Args: sh("echo out; echo err >&2; exit 3")})
	if err != nil || code != 3 {
		t.Fatalf("code %d err %v, want 3 and no error", code, err)
	}
	if out != "out\n" || errs != "err\n" {
		t.Errorf("output changed on the way: stdout %q stderr %q", out, errs)
	}
	if v == nil || v.Stats.Lines != 2 || len(v.Stats.Inputs) != 2 {
		t.Errorf("both streams must be analysed: %+v", v)
	}
	if code, _, _, _, err := run(t, RunOptions{Args: sh("exit 0")}); code != 0 || err != nil {
		t.Errorf("exit 0: code %d err %v", code, err)
	}
}

func TestRunDebugEnv(t *testing.T) {
	show := sh(`echo "$NCCL_DEBUG|$NCCL_DEBUG_SUBSYS|${NCCL_DEBUG_FILE-unset}"`)
	_, v, out, _, _ := run(t, RunOptions{Args: show})
	if out != "INFO|INIT,NET|unset\n" || len(v.Warnings) != 0 {
		t.Errorf("defaults: %q, warnings %+v", out, v.Warnings)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "NCCL_DEBUG=WARN", "NCCL_DEBUG_SUBSYS=ALL"}
	_, v, out, _, _ = run(t, RunOptions{Args: show, Env: env})
	if out != "WARN|ALL|unset\n" {
		t.Errorf("the user's settings must win: %q", out)
	}
	if !hasCode(v.Warnings, "nccl_debug_level") || hasCode(v.Warnings, "nccl_debug_subsys") {
		t.Errorf("warnings %+v", v.Warnings)
	}
	env = []string{"PATH=" + os.Getenv("PATH"), "NCCL_DEBUG_SUBSYS=", "NCCL_DEBUG_FILE=/tmp/nccl.%h.%p"}
	_, v, out, _, _ = run(t, RunOptions{Args: show, Env: env})
	if out != "INFO||/tmp/nccl.%h.%p\n" || !hasCode(v.Warnings, "nccl_debug_subsys") || !hasCode(v.Warnings, "nccl_debug_file") {
		t.Errorf("an empty setting is still the user's: %q %+v", out, v.Warnings)
	}
}

// TestRunAnalysesBothStreams: NCCL lines on stdout and stderr make one
// verdict, and the bytes pass through unchanged.
func TestRunAnalysesBothStreams(t *testing.T) {
	script := `echo "nodea:10:11 [0] NCCL INFO NET/IB : No device found."
echo "nodeb:20:21 [0] NCCL INFO NET/IB : No device found." >&2
printf 'nodea:10:11 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0'
sleep 0.05
echo
echo "nodeb:20:21 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/Socket/0" >&2
printf 'no newline at the end'`
	code, v, out, errs, err := run(t, RunOptions{Args: sh(script)})
	if code != 0 || err != nil {
		t.Fatalf("code %d err %v", code, err)
	}
	if v.InterNode != InterSocket || !v.TCPFallback || v.Hosts != 2 || v.NetConnections != 2 {
		t.Errorf("verdict %s fallback %v hosts %d conns %d", v.InterNode, v.TCPFallback, v.Hosts, v.NetConnections)
	}
	if !strings.HasSuffix(out, "via NET/Socket/0\nno newline at the end") || strings.Count(errs, "\n") != 2 {
		t.Errorf("output changed: %q / %q", out, errs)
	}
}

// readyWriter reports when a marker has been written, so that a test acts
// only once the child is running its script.
type readyWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	ready  chan struct{}
}

func newReadyWriter(marker string) *readyWriter {
	return &readyWriter{marker: marker, ready: make(chan struct{})}
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.marker)
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.marker) {
		close(w.ready)
	}
	return len(p), nil
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestRunForwardsSignals(t *testing.T) {
	loop := `trap 'echo got %s; exit %d' %s; echo ready; while :; do sleep 0.05; done`
	t.Run("injected SIGTERM", func(t *testing.T) {
		w := newReadyWriter("ready")
		sigs := make(chan os.Signal, 1)
		go func() {
			<-w.ready
			sigs <- syscall.SIGTERM
		}()
		code, _, _, _, err := run(t, RunOptions{Args: sh(fmt.Sprintf(loop, "TERM", 42, "TERM")), Stdout: w, Signals: sigs})
		if code != 42 || err != nil || !strings.Contains(w.String(), "got TERM") {
			t.Errorf("code %d err %v output %q", code, err, w.String())
		}
	})
	t.Run("real SIGINT to this process", func(t *testing.T) {
		w := newReadyWriter("ready")
		go func() {
			<-w.ready
			syscall.Kill(os.Getpid(), syscall.SIGINT)
		}()
		code, _, _, _, err := run(t, RunOptions{Args: sh(fmt.Sprintf(loop, "INT", 43, "INT")), Stdout: w})
		if code != 43 || err != nil || !strings.Contains(w.String(), "got INT") {
			t.Errorf("code %d err %v output %q", code, err, w.String())
		}
	})
	t.Run("killed by a signal", func(t *testing.T) {
		w := newReadyWriter("ready")
		sigs := make(chan os.Signal, 1)
		go func() {
			<-w.ready
			sigs <- syscall.SIGKILL
		}()
		code, _, _, _, err := run(t, RunOptions{Args: sh("echo ready; sleep 10"), Stdout: w, Signals: sigs})
		if code != 128+9 || err != nil {
			t.Errorf("code %d err %v, want 137 as a shell reports it", code, err)
		}
	})
}

// TestRunUnbuffered: the child's first line must reach the caller while
// the child still runs.
func TestRunUnbuffered(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "seen")
	w := newReadyWriter("first")
	go func() {
		<-w.ready
		os.WriteFile(flag, nil, 0o600)
	}()
	script := `echo first; i=0; while [ ! -e "` + flag + `" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; [ -e "` + flag + `" ] && echo second || exit 9`
	code, _, _, _, err := run(t, RunOptions{Args: sh(script), Stdout: w})
	if code != 0 || err != nil || !strings.HasSuffix(w.String(), "second\n") {
		t.Errorf("code %d err %v output %q: output held back until the child ended?", code, err, w.String())
	}
}

func TestRunFailures(t *testing.T) {
	code, v, _, _, err := run(t, RunOptions{Args: []string{"/nonexistent/gpuprobe-test-command"}})
	if code != 127 || err == nil || v != nil {
		t.Errorf("missing command: code %d err %v", code, err)
	}
	if code, _, _, _, err := run(t, RunOptions{}); code != 2 || err == nil {
		t.Errorf("no command: code %d err %v", code, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	code, f, err := RunCommand(ctx, RunOptions{Args: sh("sleep 30"), Env: []string{"PATH=" + os.Getenv("PATH")},
		Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, KillGrace: time.Second})
	if !errors.Is(err, context.DeadlineExceeded) || code != 128+15 || f == nil {
		t.Errorf("deadline: code %d err %v", code, err)
	}
}

type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("terminal gone") }

// TestRunSurvivesBrokenOutput: a closed terminal must not block or kill
// the job; the child runs to its end and the verdict says what happened.
func TestRunSurvivesBrokenOutput(t *testing.T) {
	script := `i=0; while [ $i -lt 2000 ]; do echo "h:1:2 [0] NCCL INFO Using network IB line $i"; i=$((i+1)); done; exit 5`
	code, v, _, _, err := run(t, RunOptions{Args: sh(script), Stdout: brokenWriter{}})
	if code != 5 || err != nil {
		t.Fatalf("code %d err %v", code, err)
	}
	if !hasCode(v.Warnings, "output_error") || v.NetSelected != "IB" || v.Stats.Lines != 2000 {
		t.Errorf("warnings %+v, net %q, %d lines", v.Warnings, v.NetSelected, v.Stats.Lines)
	}
}
