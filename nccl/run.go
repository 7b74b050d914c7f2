package nccl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// RunOptions describe the command `gpuprobe nccl run` wraps.
type RunOptions struct {
	Args   []string  // the command and its arguments
	Env    []string  // its environment; nil means this process's
	Dir    string    // its working directory; empty means this process's
	Stdin  io.Reader // default os.Stdin
	Stdout io.Writer // where its stdout goes, unchanged; default os.Stdout
	Stderr io.Writer // where its stderr goes, unchanged; default os.Stderr
	// Signals replaces the SIGINT/SIGTERM/SIGHUP/SIGQUIT this process
	// receives (for tests). Every signal read from it is forwarded.
	Signals <-chan os.Signal
	// KillGrace is how long a child gets to exit after SIGTERM when ctx is
	// done, before SIGKILL (default 10s).
	KillGrace time.Duration
}

// Debug settings RunCommand gives the child unless its environment already
// has them: INIT and NET carry every line the verdict needs.
var runEnvDefaults = []string{"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET"}

// RunCommand runs a command with NCCL's INFO logging switched on, passes
// its stdout and stderr through unchanged as they arrive, analyses both
// streams as they pass, and returns the command's exit code with the
// facts (check/ncclverdict judges them).
//
// The exit code is the child's own; a child killed by a signal gets
// 128+signal, as in a shell. err is set only when the command could not be
// run at all (then the code is 127 for a command that was not found, 126
// otherwise) or ctx ended it.
//
// The child runs in its own process group. SIGINT, SIGTERM, SIGHUP and
// SIGQUIT sent to this process are forwarded to that group, so a Ctrl-C
// or a scancel reaches the child's whole process tree exactly once, as if
// the child had received it directly.
func RunCommand(ctx context.Context, opts RunOptions) (int, *state.NCCLFacts, error) {
	if len(opts.Args) == 0 {
		return 2, nil, errors.New("nccl run: no command given")
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	env, userEnv := withDebugEnv(env)
	a := NewAnalyzer()
	outS, errS := a.Stream("stdout"), a.Stream("stderr")
	stdout := &tee{name: "stdout", out: orWriter(opts.Stdout, os.Stdout), an: outS}
	stderr := &tee{name: "stderr", out: orWriter(opts.Stderr, os.Stderr), an: errS}

	cmd := exec.Command(opts.Args[0], opts.Args[1:]...)
	cmd.Env, cmd.Dir = env, opts.Dir
	cmd.Stdin = orReader(opts.Stdin, os.Stdin)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	grace := opts.KillGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	cmd.WaitDelay = grace

	sigs := opts.Signals
	if sigs == nil {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
		defer signal.Stop(ch)
		sigs = ch
	}
	if err := cmd.Start(); err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return code, nil, fmt.Errorf("nccl run: start %s: %w", opts.Args[0], err)
	}
	pgid := cmd.Process.Pid

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr, ctxErr error
	var killTimer <-chan time.Time
loop:
	for {
		select {
		case werr = <-waited:
			break loop
		case s := <-sigs:
			if sig, ok := s.(syscall.Signal); ok {
				_ = syscall.Kill(-pgid, sig) // the group may be gone already
			}
		case <-ctx.Done():
			if ctxErr == nil {
				ctxErr = ctx.Err()
				_ = syscall.Kill(-pgid, syscall.SIGTERM)
				killTimer = time.After(grace)
			}
		case <-killTimer:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	outS.Close()
	errS.Close()
	v := a.Facts()
	v.Run = &state.NCCLRun{UserEnv: userEnv}
	for _, t := range []*tee{stdout, stderr} {
		if err := t.failed(); err != nil {
			if v.Run.OutputErrors == nil {
				v.Run.OutputErrors = map[string]string{}
			}
			v.Run.OutputErrors[t.name] = err.Error()
		}
	}
	code := exitCode(cmd.ProcessState)
	if ctxErr != nil {
		return code, v, fmt.Errorf("nccl run: %w", ctxErr)
	}
	var exitErr *exec.ExitError
	if werr != nil && !errors.As(werr, &exitErr) && !errors.Is(werr, exec.ErrWaitDelay) {
		return code, v, fmt.Errorf("nccl run: wait for %s: %w", opts.Args[0], werr)
	}
	return code, v, nil
}

// withDebugEnv adds the NCCL debug settings the child's environment lacks
// and returns the debug settings the user had set: the judge tells the
// user when they hide what the verdict needs.
func withDebugEnv(env []string) ([]string, map[string]string) {
	out := append([]string(nil), env...)
	have := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		have[k] = v
	}
	for _, kv := range runEnvDefaults {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := have[k]; !ok {
			out = append(out, kv)
		}
	}
	var user map[string]string
	for _, k := range []string{"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"} {
		if v, ok := have[k]; ok {
			if user == nil {
				user = map[string]string{}
			}
			user[k] = v
		}
	}
	return out, user
}

// exitCode is the child's exit status as a shell reports it.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// tee passes a child's output through at once and analyses it. Writing
// through never fails toward the child: a closed terminal must not block
// or kill the job, so the first write error is kept and later output is
// only analysed.
type tee struct {
	name string
	mu   sync.Mutex
	out  io.Writer
	an   io.Writer
	err  error
}

func (t *tee) Write(p []byte) (int, error) {
	t.mu.Lock()
	if t.err == nil {
		if _, err := t.out.Write(p); err != nil {
			t.err = err
		}
	}
	t.mu.Unlock()
	_, _ = t.an.Write(p) // analysis never fails a write
	return len(p), nil
}

func (t *tee) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func orWriter(w, def io.Writer) io.Writer {
	if w == nil {
		return def
	}
	return w
}

func orReader(r, def io.Reader) io.Reader {
	if r == nil {
		return def
	}
	return r
}
