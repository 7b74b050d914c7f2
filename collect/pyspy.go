package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/jobperf"
	"github.com/gpuprobe/gpuprobe/state"
)

// py-spy (github.com/benfred/py-spy) dumps a running Python process's
// stacks from outside it. --hang asks it for each rank whose executable is
// python*, when it is installed where the administrator put it: one of
// PySpyDirs, never the job's PATH (gpuprobe runs as root; the job's PATH
// is the job's choice), owned by root or by gpuprobe's own user, and
// writable by nobody else.
var PySpyDirs = []string{"/usr/local/bin", "/usr/bin", "/opt/conda/bin"}

// Bounds on one py-spy run: its time (--nonblocking does not stop the
// process, and a dump takes well under a second) and its output (a dump of
// a few hundred threads is tens of KiB).
const (
	PySpyTimeout   = 5 * time.Second
	PySpyMaxOutput = 256 << 10
	// pySpyParallel bounds the py-spy runs at once.
	pySpyParallel = 8
)

// ErrPySpyNotInstalled: no usable py-spy in PySpyDirs.
var ErrPySpyNotInstalled = errors.New("py-spy not installed")

// PySpyFunc dumps one process's Python stacks: py-spy's output, or why
// there is none.
type PySpyFunc func(ctx context.Context, pid int32) ([]byte, error)

// findPySpy returns the first py-spy in dirs that is a regular executable
// file owned by root (or by this process's user) and writable by no one
// else; the error says what was found wrong, or ErrPySpyNotInstalled.
func findPySpy(ctx context.Context, dirs []string) (string, error) {
	var why []string
	for _, d := range dirs {
		p := filepath.Join(d, "py-spy")
		fi, err := deadline.Do(ctx, "py-spy:"+p, lookupTimeout, func() (os.FileInfo, error) { return os.Stat(p) })
		if err != nil {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			why = append(why, p+" is not an executable file")
		case !ok || st.Uid != 0 && int(st.Uid) != os.Geteuid():
			why = append(why, p+" is not owned by root")
		case fi.Mode().Perm()&0o022 != 0:
			why = append(why, p+" is writable by group or others")
		default:
			return p, nil
		}
	}
	if len(why) > 0 {
		return "", fmt.Errorf("%w (searched %s; not used: %s)", ErrPySpyNotInstalled, strings.Join(dirs, ", "), strings.Join(why, "; "))
	}
	return "", fmt.Errorf("%w (searched %s)", ErrPySpyNotInstalled, strings.Join(dirs, ", "))
}

// runPySpy runs `exe dump --pid PID --nonblocking` under timeout, its
// process group killed at the deadline or when its output passes max bytes.
func runPySpy(ctx context.Context, exe string, pid int32, timeout time.Duration, max int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cmd := exec.CommandContext(ctx, exe, "dump", "--pid", strconv.Itoa(int(pid)), "--nonblocking")
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "NO_COLOR=1"}
	cmd.Dir = "/"
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out := &capWriter{max: max, stop: stop}
	errb := &capWriter{max: 4096}
	cmd.Stdout, cmd.Stderr = out, errb
	err := cmd.Run()
	if cause := context.Cause(ctx); errors.Is(cause, errPySpyCap) {
		return nil, cause
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("py-spy gave no dump within %s", timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(errb.buf.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, fmt.Errorf("py-spy: %v: %s", err, msg)
	}
	return out.buf.Bytes(), nil
}

var errPySpyCap = fmt.Errorf("py-spy printed more than %d bytes (the limit)", PySpyMaxOutput)

// capWriter keeps at most max bytes; past that it stops the run (stop
// non-nil) or drops the rest.
type capWriter struct {
	buf  bytes.Buffer
	max  int
	stop context.CancelCauseFunc
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.max {
		if w.stop != nil {
			w.stop(errPySpyCap)
			return 0, errPySpyCap
		}
		w.buf.Write(p[:max(0, w.max-w.buf.Len())])
		return len(p), nil
	}
	return w.buf.Write(p)
}

// isPython: an executable named python* (python, python3, python3.11).
func isPython(exe string) bool {
	return strings.HasPrefix(path.Base(exe), "python")
}

// pythonStacks records each live python rank's executable and main-thread
// Python stack. dump nil finds py-spy in PySpyDirs (and says it is not
// installed when it is not there).
func pythonStacks(ctx context.Context, o JobOptions, h *state.JobHang) {
	lookup := o.Sources.Process
	if lookup == nil {
		lookup = hostProcesses(o.Options)
	}
	var py []int
	for i := range h.Ranks {
		if h.Ranks[i].Exited {
			continue
		}
		_, exe, _ := lookup(ctx, h.Ranks[i].PID)
		h.Ranks[i].Exe = exe
		if isPython(exe) {
			py = append(py, i)
		}
	}
	if len(py) == 0 {
		return
	}
	dump := o.Sources.PySpy
	if dump == nil {
		exe, err := findPySpy(ctx, PySpyDirs)
		if err != nil {
			h.PySpyError = err.Error()
			return
		}
		h.PySpy = exe
		dump = func(ctx context.Context, pid int32) ([]byte, error) {
			return runPySpy(ctx, exe, pid, PySpyTimeout, PySpyMaxOutput)
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, pySpyParallel)
	absent := make([]error, len(py))
	for k, i := range py {
		wg.Add(1)
		go func(r *state.HangRank, absent *error) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r.Python, *absent = pythonStack(ctx, dump, r.PID)
		}(&h.Ranks[i], &absent[k])
	}
	wg.Wait()
	// A py-spy the source says is absent is said once, for the node.
	for k, i := range py {
		if absent[k] != nil {
			h.PySpyError, h.Ranks[i].Python = absent[k].Error(), nil
		}
	}
}

// pythonStack runs dump for one PID and keeps its main thread; absent is
// the error when dump says py-spy is not installed.
func pythonStack(ctx context.Context, dump PySpyFunc, pid int32) (p *state.HangPython, absent error) {
	start := time.Now()
	out, err := dump(ctx, pid)
	p = &state.HangPython{Seconds: time.Since(start).Seconds()}
	if errors.Is(err, ErrPySpyNotInstalled) {
		return nil, err
	}
	if err != nil {
		p.Error = err.Error()
		return p, nil
	}
	t, ok := jobperf.ParsePySpyDump(out)
	if !ok {
		p.Error = fmt.Sprintf("py-spy printed no thread (%d bytes)", len(out))
		return p, nil
	}
	p.Thread = strings.TrimSpace(t.ID + " " + t.Name)
	p.Status, p.Frames, p.MoreFrames = t.Status, t.Frames, t.More
	return p, nil
}
