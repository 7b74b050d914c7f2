package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// DefaultScontrolDirs are searched, in order, when no --scontrol is given:
// slurmd runs a HealthCheckProgram with no PATH at all.
var DefaultScontrolDirs = []string{"/usr/bin", "/usr/local/bin", "/opt/slurm/bin"}

// FindScontrol returns an absolute path to scontrol: explicit if given (it
// must be absolute and executable), else the first of DefaultScontrolDirs.
func FindScontrol(explicit string) (string, error) {
	check := func(p string) error {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable file", p)
		}
		return nil
	}
	if explicit != "" {
		if !strings.HasPrefix(explicit, "/") {
			return "", fmt.Errorf("--scontrol %q: want an absolute path (a HealthCheckProgram has no PATH)", explicit)
		}
		if err := check(explicit); err != nil {
			return "", fmt.Errorf("--scontrol: %w", err)
		}
		return explicit, nil
	}
	for _, d := range DefaultScontrolDirs {
		p := d + "/scontrol"
		if check(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("scontrol not found in %s; pass --scontrol /path/to/scontrol", strings.Join(DefaultScontrolDirs, ", "))
}

// Scontrol runs scontrol directly (never through a shell) with a fixed,
// minimal environment and a deadline on every call.
type Scontrol struct {
	Path string
	// SlurmConf, when set, is passed as SLURM_CONF: the health check's own
	// environment has none, and a non-default config would not be found.
	SlurmConf string
	// Timeout bounds each call; the context may cut it shorter.
	Timeout time.Duration
	// MaxOutput bounds what a call may print on stdout (default
	// MaxScontrolOutput; the cluster listing, ListingMaxOutput): more ends
	// the call with an error.
	MaxOutput int
}

// ListingMaxOutput holds `scontrol -o show nodes` of a very large cluster
// (a node's line is under 2 KiB: 64 MiB is some 30,000 nodes).
const ListingMaxOutput = 64 << 20

// DefaultScontrolTimeout is generous for a busy slurmctld yet leaves a
// 45 s health check room for the show and the update.
const DefaultScontrolTimeout = 10 * time.Second

func (s *Scontrol) run(ctx context.Context, args ...string) (string, error) {
	t := s.Timeout
	if t <= 0 {
		t = DefaultScontrolTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	// Output over the cap kills the run at once (a streaming scontrol drove
	// --slurm-drain to a fatal out-of-memory at 1.08 GB, issue 32).
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cmd := exec.CommandContext(ctx, s.Path, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if s.SlurmConf != "" {
		cmd.Env = append(cmd.Env, "SLURM_CONF="+s.SlurmConf)
	}
	cmd.Dir = "/"
	// A child that leaves a grandchild holding the pipes must not hold us.
	cmd.WaitDelay = time.Second
	// On timeout kill the whole process group: a wrapper script's children
	// (the real scontrol behind a site's wrapper) must not outlive the run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	limit := s.MaxOutput
	if limit <= 0 {
		limit = MaxScontrolOutput
	}
	out := &cappedBuffer{max: limit, stop: stop, what: "output"}
	errb := &cappedBuffer{max: MaxScontrolOutput, stop: stop, what: "error output"}
	cmd.Stdout, cmd.Stderr = out, errb
	err := cmd.Run()
	if cause := context.Cause(ctx); errors.Is(cause, errOutputCap) {
		return "", fmt.Errorf("%s %s: %w", s.Path, strings.Join(args, " "), cause)
	}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return out.String(), fmt.Errorf("%s %s: no answer within %s", s.Path, strings.Join(args, " "), t)
	}
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", s.Path, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// MaxScontrolOutput bounds what one scontrol call may print (each of
// stdout and stderr): `show node` is a few KiB.
const MaxScontrolOutput = 1 << 20

var errOutputCap = errors.New("over the size limit")

// cappedBuffer keeps at most max bytes; past that it cancels the run (its
// process group is killed) and refuses further writes.
type cappedBuffer struct {
	buf  bytes.Buffer // not embedded: its ReadFrom would bypass Write
	max  int
	what string
	stop context.CancelCauseFunc
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.max {
		err := fmt.Errorf("%w: %s of more than %d bytes (the limit; not scontrol?)", errOutputCap, b.what, b.max)
		b.stop(err)
		return 0, err
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) String() string { return b.buf.String() }

// ShowNode reads the node's state and reason.
func (s *Scontrol) ShowNode(ctx context.Context, node string) (slurmstate.NodeInfo, error) {
	out, err := s.run(ctx, "show", "node", node)
	if err != nil {
		return slurmstate.NodeInfo{}, err
	}
	n, err := ParseShowNode(out)
	if n.Name == "" {
		n.Name = node
	}
	return n, err
}

// ShowNodes lists every node of the cluster in one call ("scontrol -o show
// nodes"), for the drain circuit breaker.
func (s *Scontrol) ShowNodes(ctx context.Context) ([]slurmstate.NodeInfo, error) {
	list := *s
	if list.MaxOutput <= 0 {
		list.MaxOutput = ListingMaxOutput
	}
	out, err := list.run(ctx, "-o", "show", "nodes")
	if err != nil {
		return nil, err
	}
	return ParseShowNodes(out)
}

// Drain drains node with reason (passed as one argument, never via a shell).
func (s *Scontrol) Drain(ctx context.Context, node, reason string) error {
	_, err := s.run(ctx, "update", "NodeName="+node, "State=DRAIN", "Reason="+reason)
	return err
}

// Resume lifts a drain.
func (s *Scontrol) Resume(ctx context.Context, node string) error {
	_, err := s.run(ctx, "update", "NodeName="+node, "State=RESUME")
	return err
}
