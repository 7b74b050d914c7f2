package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"go.uber.org/zap"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	"github.com/gpuprobe/gpuprobe/internal/safefile"
	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/slurm"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// slurmFlags are the Slurm options of 'check': job-check forcing, the
// HealthCheckProgram drain/resume mode and where Slurm's files are.
type slurmFlags struct {
	job, jobSet  bool
	drain        bool
	breaker      bool
	scontrol     string
	deadline     time.Duration
	minGPUMemory string
	slurmConf    string
	history      string

	// prefix is the owner of the drains this run sets and lifts: "" for
	// check's health checks, check.VerifyReasonPrefix for verify's.
	prefix string

	// set by configure for after
	cfg          *check.Config
	start        time.Time
	scontrolPath string
	watchdog     *time.Timer
	// opts and callTimeout are the run's collection options, for verify
	// --quick before a node-class drain is lifted (drain.resume_verify);
	// opts is nil in verify's own drain runs.
	opts        *collect.Options
	callTimeout time.Duration
}

// scontrolBudget is kept free of the collection deadline in drain mode for
// one "show node" and one "update" (each takes well under a second on a
// healthy slurmctld).
const scontrolBudget = 10 * time.Second

// drainHistoryDefault is --drain-history's default; tests point it elsewhere.
var drainHistoryDefault = "/var/lib/gpuprobe/drain-history.json"

// watchdogExit ends the process when a drain-mode run overstays its hard
// deadline; tests replace it.
var watchdogExit = os.Exit

func init() {
	s := &slurmFlags{}
	checkExtensions = append(checkExtensions, checkExtension{flags: s.register, start: s.begin, configure: s.configure, act: s.act})
}

func (s *slurmFlags) register(cmd *kingpin.CmdClause) {
	if s.watchdog != nil {
		s.watchdog.Stop()
	}
	*s = slurmFlags{}
	cmd.Flag("job", "Run the job.* checks as if inside a job step (--no-job: never run them). Default: when SLURM_JOB_ID says this is a job step.").
		IsSetByUser(&s.jobSet).BoolVar(&s.job)
	cmd.Flag("slurm-drain", "HealthCheckProgram mode: run the node checks and drain this node (scontrol update State=DRAIN Reason=\"gpuprobe: ...\") on failure; resume it when healthy if gpuprobe drained it. Never overwrites another reason; leaves down, maint and reserved nodes alone.").
		BoolVar(&s.drain)
	cmd.Flag("drain-breaker", "--slurm-drain: before a new drain, list the cluster's nodes (one scontrol call) and do not drain when gpuprobe's drains already cover too much of it (drain.breaker in the config, docs/slurm.md). --no-drain-breaker is the emergency override.").
		Default("true").BoolVar(&s.breaker)
	cmd.Flag("drain-history", "--slurm-drain: the node's drain history (a small JSON state file, written atomically), which escalates a fault that recurs after a resume (docs/slurm.md, \"The quarantine cycle\"); '' keeps none.").
		Default(drainHistoryDefault).PlaceHolder("FILE").StringVar(&s.history)
	cmd.Flag("scontrol", "Absolute path of scontrol for --slurm-drain (default: the first of "+strings.Join(slurm.DefaultScontrolDirs, ", ")+"; slurmd gives a health check no PATH).").
		PlaceHolder("PATH").StringVar(&s.scontrol)
	cmd.Flag("slurm-deadline", "Hard deadline of a --slurm-drain run, scontrol included; slurmd kills a health check at 60 s.").
		Default("45s").DurationVar(&s.deadline)
	cmd.Flag("min-gpu-memory", "job.gpu_memory: fail a visible GPU with less memory (80GB, 40GiB; a bare number is MiB).").
		PlaceHolder("SIZE").StringVar(&s.minGPUMemory)
	cmd.Flag("slurm-conf", "slurm.conf to read (gres.conf and cgroup.conf beside it); also passed to scontrol as SLURM_CONF. Default: $SLURM_CONF, else /etc/slurm/slurm.conf.").
		PlaceHolder("FILE").StringVar(&s.slurmConf)
}

// begin arms the drain mode's hard deadline before --config is read, and
// cuts --timeout so that reading the config and collecting leave scontrol
// its budget: a config on a hung file system used to be read (up to 10 s)
// before the watchdog started counting, so config + deadline could pass
// slurmd's 60 s kill.
func (s *slurmFlags) begin(f *checkFlags) func() {
	s.start = time.Now()
	if !s.drain || s.deadline < 2*scontrolBudget {
		return func() {} // configure refuses a deadline that short
	}
	if limit := s.deadline - scontrolBudget; f.collect.timeout > limit {
		f.collect.timeout = limit
	}
	// The last line of defence: whatever hangs, slurmd must not have to kill us.
	deadline := s.deadline
	s.watchdog = time.AfterFunc(deadline, func() {
		fmt.Fprintf(os.Stderr, "%s: --slurm-drain run exceeded its %s hard deadline; exiting\n", programName, deadline)
		watchdogExit(exitFailed)
	})
	w := s.watchdog
	return func() { w.Stop() }
}

func (s *slurmFlags) configure(f *checkFlags, cfg *check.Config, o *collect.Options) error {
	if s.start.IsZero() {
		s.start = time.Now()
	}
	s.cfg = cfg
	if err := cfg.Job.Validate(); err != nil {
		return err
	}
	if s.jobSet {
		cfg.Job.Mode = map[bool]string{true: "always", false: "never"}[s.job]
	}
	if cfg.Job.Mode == "always" || cfg.Job.Mode == "never" {
		o.SlurmJob = cfg.Job.Mode
	}
	if s.minGPUMemory != "" {
		if _, err := check.ParseMemory(s.minGPUMemory); err != nil {
			return fmt.Errorf("--min-gpu-memory: %w", err)
		}
		cfg.Job.MinGPUMemory = s.minGPUMemory
	}
	o.SlurmConf = s.slurmConf
	s.opts, s.callTimeout = o, f.collect.callTimeout
	if f.fromDaemon != "" && cfg.Job.Mode != "always" {
		// The daemon judges the node, never a job: outside a job step the job
		// checks would only skip, and must not make its report unusable.
		if in, _ := slurmstate.ParseEnv(os.Environ()).InJobStep(); !in {
			cfg.Skip = append(cfg.Skip, check.JobScopeGroups()...)
		}
	}
	if !s.breaker {
		cfg.Drain.Breaker.Off = true
	}
	if !s.drain {
		return nil
	}
	// A health check judges the node, never a job (there is none).
	cfg.Job.Mode, o.SlurmJob = "never", "never"
	cfg.Skip = append(cfg.Skip, check.JobScopeGroups()...)
	path, err := slurm.FindScontrol(s.scontrol)
	if err != nil {
		return err
	}
	s.scontrolPath = path
	if s.deadline < 2*scontrolBudget {
		return fmt.Errorf("--slurm-deadline %s leaves no time to collect: want at least %s", s.deadline, 2*scontrolBudget)
	}
	if s.watchdog == nil { // configure called on its own (tests)
		s.begin(f)
	}
	// What begin left of --timeout, less the whole seconds reading the
	// config took.
	if limit := s.deadline - scontrolBudget - time.Since(s.start).Truncate(time.Second); f.collect.timeout > limit {
		f.collect.timeout = max(limit, time.Millisecond)
	}
	return nil
}

func (s *slurmFlags) act(c *cli, n *state.Node, doc *report.Document) (int, error) {
	if !s.drain {
		return 0, nil
	}
	if s.watchdog != nil {
		defer s.watchdog.Stop()
	}
	node, from := c.getenv("SLURMD_NODENAME"), "SLURMD_NODENAME"
	if node == "" && n.Slurm != nil {
		node, from = n.Slurm.NodeName, n.Slurm.NodeNameFrom
	}
	if node == "" {
		c.log.Error("slurm-drain: cannot tell this node's Slurm name (no SLURMD_NODENAME, no host name)")
		return exitFailed, nil
	}
	fails := drainFailures(doc, s.cfg)
	remaining := s.deadline - time.Since(s.start)
	if remaining < time.Second {
		c.log.Error("slurm-drain: no time left for scontrol", zap.Duration("deadline", s.deadline))
		return exitFailed, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), remaining-remaining/10)
	defer cancel()
	conf := s.slurmConf
	if conf == "" {
		conf = c.getenv("SLURM_CONF")
	}
	sc := &slurm.Scontrol{Path: s.scontrolPath, SlurmConf: conf, Timeout: min(slurm.DefaultScontrolTimeout, remaining/2)}
	log := c.log.With(zap.String("node", node), zap.String("node_from", from), zap.String("scontrol", s.scontrolPath))
	info, err := sc.ShowNode(ctx, node)
	if err != nil {
		log.Error("slurm-drain: cannot read the node's state; not draining or resuming", zap.Error(err))
		return exitFailed, nil
	}
	hist, histBytes := s.readHistory(log)
	d, kept := check.DecideQuarantine(check.QuarantineInput{Node: info, Failures: fails, History: hist, Config: s.cfg.Drain, Now: time.Now(), Prefix: s.prefix})
	log = log.With(zap.String("state", info.State), zap.String("old_reason", info.Reason), zap.Int("failed_checks", len(fails)))
	if d.Action == check.DrainSet && !info.Drained() {
		// A new drain: ask the circuit breaker, with one listing of the
		// cluster (only in a run that is about to drain).
		in := check.BreakerInput{Node: node, Check: fails[0].ID, Now: time.Now()}
		if !s.cfg.Drain.Breaker.Off {
			in.Cluster, err = sc.ShowNodes(ctx)
			if err != nil {
				in.ListError = err.Error()
			}
		}
		v := check.Breaker(s.cfg.Drain.Breaker, in)
		d.Breaker = &v
		if v.Suppressed {
			doc.Drain = &d
			log.Warn("slurm-drain: drain suppressed by the circuit breaker", zap.String("reason", d.Reason), zap.String("why", v.Why),
				zap.Int("gpuprobe_drains", v.Owned), zap.Int("nodes", v.Nodes))
			return 0, nil
		}
	}
	if d.Action == check.DrainResume && check.ResumeNeedsVerify(info.Reason, s.cfg.Drain) {
		ok, why := false, "verify is not available in this run"
		if s.opts != nil {
			ok, why = c.resumeGate(ctx, *s.opts, s.cfg, n, s.callTimeout)
		}
		if !ok {
			log.Warn("slurm-drain: the checks pass but verify does not: staying drained", zap.String("verify", why))
			d = check.DrainDecision{Action: check.DrainNone, Why: "the checks pass, but the drain is node-class and drain.resume_verify wants verify --quick to pass too: " + why}
			kept = hist
		} else {
			d.Why += "; " + why
		}
	}
	doc.Drain = &d
	defer func() { s.writeHistory(log, kept, histBytes) }() // kept as it is when the run ends
	switch d.Action {
	case check.DrainSet:
		if err := sc.Drain(ctx, node, d.Reason); err != nil {
			log.Error("slurm-drain: drain failed", zap.String("reason", d.Reason), zap.Error(err))
			kept = hist // not drained: nothing to remember
			return exitFailed, nil
		}
		log.Warn("slurm-drain: drained node", zap.String("reason", d.Reason), zap.String("why", d.Why))
	case check.DrainResume:
		if err := sc.Resume(ctx, node); err != nil {
			log.Error("slurm-drain: resume failed", zap.Error(err))
			kept = hist
			return exitFailed, nil
		}
		log.Warn("slurm-drain: resumed node", zap.String("why", d.Why))
	default:
		log.Info("slurm-drain: no change", zap.String("why", d.Why))
	}
	return 0, nil
}

// drainFailures are check.DrainFailures of the run, made safe to show: the
// summary may quote a user's process name, and a drain reason is read by
// everyone in sinfo -R.
func drainFailures(doc *report.Document, cfg *check.Config) []check.DrainFailure {
	if cfg == nil {
		cfg = check.DefaultConfig()
	}
	c := *cfg
	c.Strict = c.Strict || doc.Strict
	out := check.DrainFailures(doc.Checks, &c)
	for i := range out {
		out[i].ID, out[i].Summary = safetext.Clean(out[i].ID), safetext.Clean(out[i].Summary)
	}
	return out
}

// readHistory reads --drain-history, at most check.MaxHistoryBytes of a
// regular file. A missing file is an empty history; an unreadable, oversized
// or corrupt one is logged and ignored (the node starts a new history, and
// an escalation it held is forgotten), never an error of the run.
// historyReadLimit bounds the drain history's read (a few KiB).
var historyReadLimit = 10 * time.Second

func (s *slurmFlags) readHistory(log *zap.Logger) (check.DrainHistory, []byte) {
	if s.history == "" {
		return check.DrainHistory{}, nil
	}
	log = log.With(zap.String("drain_history", s.history))
	fi, err := os.Lstat(s.history)
	if errors.Is(err, fs.ErrNotExist) {
		return check.DrainHistory{}, nil
	}
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", s.history, fi.Mode().Type())
	}
	var b []byte
	if err == nil {
		// Bounded in time too, and the kind taken from the opened file: a
		// FIFO swapped in after the Lstat blocked a plain open for good.
		ctx, cancel := context.WithTimeout(context.Background(), historyReadLimit)
		b, err = readlimit.Regular(ctx, "--drain-history "+s.history, s.history, check.MaxHistoryBytes+1)
		cancel()
	}
	var h check.DrainHistory
	if err == nil {
		h, err = check.ParseDrainHistory(b)
	}
	if err != nil {
		log.Warn("slurm-drain: ignoring the drain history (escalation starts afresh)", zap.Error(err))
		return check.DrainHistory{}, []byte{} // not nil: replaced by the next write
	}
	return h, b
}

// writeHistory writes the history kept when it differs from what was read.
// A failed write is logged: the drain itself stands.
func (s *slurmFlags) writeHistory(log *zap.Logger, h check.DrainHistory, was []byte) {
	if s.history == "" {
		return
	}
	b, err := h.Marshal()
	if err == nil && bytes.Equal(b, was) || was == nil && len(h.Episodes) == 0 {
		return
	}
	if err == nil {
		err = safefile.WriteFile(s.history, b, 0o644)
	}
	if err != nil {
		log.Warn("slurm-drain: cannot write the drain history", zap.String("drain_history", s.history), zap.Error(err))
	}
}
