package main

import (
	"bytes"
	"context"
	"fmt"
	"os/user"
	"sort"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/benchout"
	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/exporter"
	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	"github.com/gpuprobe/gpuprobe/internal/safefile"
	"github.com/gpuprobe/gpuprobe/report"
	simcuda "github.com/gpuprobe/gpuprobe/sim/cuda"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	"github.com/gpuprobe/gpuprobe/slurm"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/verify"
)

func init() { registrars = append(registrars, registerVerify) }

type verifyFlags struct {
	collect    collectFlags
	quick      bool
	duration   time.Duration
	format     string
	color      string
	output     string
	textfile   string
	configFile string
	strict     bool
	verbose    bool
	gpus       string
	allowBusy  bool
	maxMemory  float64
	drain      bool
	breaker    bool
	history    string
	scontrol   string
	slurmConf  string
	from       string
}

// verifyHistoryDefault is verify's own drain history: its episodes are its
// drains, which check's quarantine cycle must not close or escalate.
var verifyHistoryDefault = "/var/lib/gpuprobe/verify-drain-history.json"

// loadWatchPeriod is how often NVML is read during the compute load.
const loadWatchPeriod = 250 * time.Millisecond

func registerVerify(c *cli) {
	f := &verifyFlags{}
	cmd := c.app.Command("verify", "Measure what the GPUs deliver (host↔device, device-local and peer copies, an FMA load watched through NVML, a memory pattern test) and judge it against the platform's expected figures (docs/verify.md). Exit 0: nothing failed; 1: a check failed; 2: gpuprobe could not run.")
	f.collect.register(cmd, "30s")
	cmd.Flag("quick", "The quick tier: ≤ 30 s on an 8-GPU node, for a Prolog (default tier: ≤ 2 min).").BoolVar(&f.quick)
	cmd.Flag("duration", "Bound the measurements to this long (default: the tier's 30 s or 2 min); the compute load shrinks to fit.").DurationVar(&f.duration)
	cmd.Flag("format", "Output format.").Default("text").EnumVar(&f.format, "text", "json")
	cmd.Flag("color", "Colour the text report: auto, always, never.").Default("auto").EnumVar(&f.color, "auto", "always", "never")
	cmd.Flag("output", "Write the report to FILE instead of stdout (atomically; a regular file or missing).").Short('o').PlaceHolder("FILE").StringVar(&f.output)
	cmd.Flag("textfile", "Also write gpuprobe_verify_* metrics to FILE for node_exporter's textfile collector (a file of its own, not check's).").PlaceHolder("FILE").StringVar(&f.textfile)
	cmd.Flag("config", "YAML file with expectations and thresholds (verify: warn_percent, fail_percent, outlier_percent; docs/verify.md).").PlaceHolder("FILE").StringVar(&f.configFile)
	cmd.Flag("strict", "Treat warnings as failures.").BoolVar(&f.strict)
	cmd.Flag("verbose", "Print every check's evidence.").Short('v').BoolVar(&f.verbose)
	cmd.Flag("gpus", "Measure only these GPUs (NVML indexes), or 'job' for SLURM_JOB_GPUS (a Prolog measures its job's GPUs).").PlaceHolder("LIST").StringVar(&f.gpus)
	cmd.Flag("allow-busy", "Measure GPUs that run other users' processes too (by default they are refused and listed).").BoolVar(&f.allowBusy)
	cmd.Flag("max-memory-fraction", "The share of each GPU's memory verify may hold at once; buffers shrink to fit.").Default(fmt.Sprint(verify.DefaultMaxMemoryFraction)).Float64Var(&f.maxMemory)
	cmd.Flag("slurm-drain", "Drain this node on a failing verify with a reason of verify's own (\""+check.VerifyReasonPrefix+" ...\"), and resume it when verify passes if verify drained it; check's drains and others' are left alone.").BoolVar(&f.drain)
	cmd.Flag("drain-breaker", "--slurm-drain: ask the drain circuit breaker before a new drain (docs/slurm.md).").Default("true").BoolVar(&f.breaker)
	cmd.Flag("drain-history", "--slurm-drain: verify's drain history (its own file: check's quarantine cycle keeps another).").Default(verifyHistoryDefault).PlaceHolder("FILE").StringVar(&f.history)
	cmd.Flag("scontrol", "Absolute path of scontrol for --slurm-drain.").PlaceHolder("PATH").StringVar(&f.scontrol)
	cmd.Flag("slurm-conf", "slurm.conf passed to scontrol as SLURM_CONF.").PlaceHolder("FILE").StringVar(&f.slurmConf)
	cmd.Flag("from", "Judge a saved output instead of measuring: nccl-tests (all_reduce_perf ...), nvbandwidth or dcgmi diag (text or -j JSON), told apart by content; '-' reads stdin (docs/verify.md, \"Judging saved outputs\").").PlaceHolder("FILE").StringVar(&f.from)
	cmd.Action(func(*kingpin.ParseContext) error { return c.runVerify(f) })
}

func (c *cli) runVerify(f *verifyFlags) error {
	start := time.Now()
	cfgCtx, cfgCancel := context.WithTimeout(context.Background(), max(f.collect.timeout, time.Millisecond))
	cfg, err := c.loadConfig(cfgCtx, f.configFile, true)
	cfgCancel()
	if err != nil {
		return c.usageError("%v", err)
	}
	cfg.Strict = cfg.Strict || f.strict
	if !f.breaker {
		cfg.Drain.Breaker.Off = true
	}
	if f.maxMemory <= 0 || f.maxMemory > 1 {
		return c.usageError("--max-memory-fraction %g: want a share in (0, 1]", f.maxMemory)
	}
	if f.duration < 0 {
		return c.usageError("--duration must not be negative")
	}
	o, err := f.collect.options()
	if err != nil {
		return c.usageError("%v", err)
	}
	scope, scopeLabel, err := c.scopeFlag(f.gpus)
	if err != nil {
		return c.usageError("%v", err)
	}
	if f.output != "" {
		if err := safefile.CheckTarget(f.output); err != nil {
			return c.usageError("--output: %v", err)
		}
	}
	if f.textfile != "" {
		if err := safefile.CheckTarget(f.textfile); err != nil {
			return c.usageError("--textfile: %v", err)
		}
	}
	if f.from != "" {
		return c.runVerifyFrom(f, cfg, start)
	}
	scontrolPath := ""
	if f.drain {
		if scontrolPath, err = slurm.FindScontrol(f.scontrol); err != nil {
			return c.usageError("%v", err)
		}
	}
	drv, watch, drvErr, err := verifyDriver(o)
	if err != nil {
		return c.usageError("%v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), f.collect.timeout)
	before := c.collectNode(ctx, &f.collect, o)
	cancel()
	opts := verify.Options{Tier: verify.TierDefault, Duration: f.duration, MaxMemoryFraction: f.maxMemory,
		CallTimeout: f.collect.callTimeout, GPUs: scope, NVMLIndex: nvmlIndexes(before), Watch: watch}
	if f.quick {
		opts.Tier = verify.TierQuick
	}
	if !f.allowBusy {
		opts.Refuse = c.busyGPUs(before)
	}
	var v *state.Verify
	if drvErr != nil {
		v = &state.Verify{Source: "measured", Tier: opts.Tier, Started: time.Now().UTC(), Driver: drvErr.Error(),
			Error: "cannot open the CUDA driver: " + drvErr.Error()}
	} else {
		v = verify.Run(context.Background(), drv, opts)
	}
	// A second collection bounds the window of ECC growth and Xids.
	ctx, cancel = context.WithTimeout(context.Background(), f.collect.timeout)
	after := c.collectNode(ctx, &f.collect, o)
	cancel()
	verify.AfterRun(v, before, after)

	node := before
	node.Verify = v
	if scope != nil {
		node.Scope = scopeLabel
	}
	checks, err := measuredChecks()
	if err != nil {
		return c.usageError("%v", err)
	}
	doc, results := judgeVerify(node, cfg, checks, start)
	exit := 0
	if f.drain {
		s := &slurmFlags{drain: true, prefix: check.VerifyReasonPrefix, cfg: cfg, start: time.Now(),
			deadline: 2 * scontrolBudget, scontrolPath: scontrolPath, slurmConf: f.slurmConf, history: f.history}
		code, err := s.act(c, node, doc)
		if err != nil {
			return err
		}
		exit = max(exit, code)
	}
	if err := c.writeVerify(f, doc, v, results); err != nil {
		return err
	}
	c.exit = max(check.ExitCode(results, cfg.Strict), exit)
	return nil
}

// writeVerify writes verify's report (and its textfile when asked).
func (c *cli) writeVerify(f *verifyFlags, doc *report.Document, v *state.Verify, results []check.Result) error {
	var err error
	var buf bytes.Buffer
	if f.format == "json" {
		err = doc.WriteJSON(&buf)
	} else {
		err = doc.WriteText(&buf, report.TextOptions{Color: f.output == "" && c.useColor(f.color), Verbose: f.verbose})
	}
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	if f.output != "" {
		if err := safefile.WriteFile(f.output, buf.Bytes(), 0o644); err != nil {
			return c.usageError("--output: %v", err)
		}
	} else if _, err := c.stdout.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	if f.textfile != "" {
		if err := exporter.WriteVerifyTextfile(f.textfile, v, results); err != nil {
			return c.usageError("%v", err)
		}
	}
	return nil
}

// judgeVerify runs the verify checks on node (its Verify set) and builds
// the report.
func judgeVerify(node *state.Node, cfg *check.Config, checks []check.Check, start time.Time) (*report.Document, []check.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results := check.Run(ctx, node, cfg, checks)
	doc := report.New(node, results, cfg.Strict, time.Since(start))
	doc.Verify = node.Verify
	return doc, results
}

// verifyFromChecks are the checks that judge each tool's saved output.
var verifyFromChecks = map[string][]string{
	"nccl-tests":  {"verify.run", "verify.nccl_tests"},
	"dcgmi-diag":  {"verify.run", "verify.dcgmi_diag"},
	"nvbandwidth": {"verify.run", "verify.h2d", "verify.d2h", "verify.d2d", "verify.peer"},
}

// runVerifyFrom judges a saved nccl-tests, nvbandwidth or dcgmi diag output
// (benchout). The figures are another run's, possibly another node's: the
// run neither drains this node nor writes its metrics.
func (c *cli) runVerifyFrom(f *verifyFlags, cfg *check.Config, start time.Time) error {
	switch {
	case f.drain:
		return c.usageError("--from judges a saved output: it cannot drain this node (--slurm-drain)")
	case f.textfile != "":
		return c.usageError("--from judges a saved output: its figures are not this node's metrics (--textfile)")
	case f.quick || f.duration != 0 || f.gpus != "" || f.allowBusy:
		return c.usageError("--from judges a saved output: --quick, --duration, --gpus and --allow-busy apply to a measurement")
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(f.collect.timeout, time.Second))
	data, err := readlimit.Input(ctx, "--from", f.from, c.stdinIf(true), benchout.MaxInput)
	cancel()
	if err != nil {
		return c.usageError("%v", err)
	}
	name := f.from
	if name == "-" {
		name = "(stdin)"
	}
	v, err := benchout.Parse(name, bytes.NewReader(data))
	if err != nil {
		return c.usageError("%v", err)
	}
	v.File = name
	node := &state.Node{SchemaVersion: state.SchemaVersion, CollectedAt: time.Now().UTC(), Verify: v}
	// Only the checks that judge what this tool's output can hold: the
	// others would each skip "holds no figure" and bury the verdict.
	checks, err := check.VerifyChecks(verifyFromChecks[v.Source], nil)
	if err != nil {
		return c.usageError("%v", err)
	}
	doc, results := judgeVerify(node, cfg, checks, start)
	if err := c.writeVerify(f, doc, v, results); err != nil {
		return err
	}
	c.exit = check.ExitCode(results, cfg.Strict)
	return nil
}

// verifyDriver is the driver verify measures through: the simulated one
// for --simulate (a bad spec is err, a usage error), else this machine's
// libcuda (drvErr says why it cannot be opened: the run's verify.run error).
func verifyDriver(o collect.Options) (drv verify.Driver, watch verify.LoadWatcher, drvErr, err error) {
	if spec := o.Sources.Simulated; spec != "" { // --simulate, or --simulate-file's spec
		s, err := simulate.Parse(spec)
		if err != nil {
			return nil, nil, nil, err
		}
		sd, err := simcuda.New(s)
		if err != nil {
			return nil, nil, nil, err
		}
		return sd, sd.Watch, nil, nil
	}
	drv, drvErr = openRealDriver()
	watch = func(ctx context.Context, indexes []int) func() map[int]state.LoadWatch {
		return collect.LoadWatch(ctx, o, indexes, loadWatchPeriod)
	}
	return drv, watch, drvErr, nil
}

// measuredChecks are the verify checks of a measurement (the others judge
// --from files).
func measuredChecks() ([]check.Check, error) {
	return check.VerifyChecks(nil, []string{"verify.nccl_tests", "verify.dcgmi_diag"})
}

// resumeGate is the quarantine cycle's last step (docs/slurm.md): before a
// health check lifts a node-class drain, verify --quick runs on the node's
// idle GPUs within what is left of ctx. It passes when no verify check
// fails or errs; why names the verdict either way.
func (c *cli) resumeGate(ctx context.Context, o collect.Options, cfg *check.Config, node *state.Node, callTimeout time.Duration) (ok bool, why string) {
	drv, watch, drvErr, err := verifyDriver(o)
	if err == nil {
		err = drvErr
	}
	if err != nil {
		return false, "verify could not run: " + err.Error()
	}
	budget := time.Minute // a caller without a deadline (tests) gets a quick tier's worth
	if dl, ok := ctx.Deadline(); ok {
		budget = time.Until(dl)
	}
	budget -= 2 * time.Second
	if budget < 5*time.Second {
		drv.Close()
		return false, fmt.Sprintf("verify --quick needs time the health check no longer has (%s left)", budget.Round(time.Second))
	}
	v := verify.Run(ctx, drv, verify.Options{Tier: verify.TierQuick, Duration: budget, MaxMemoryFraction: verify.DefaultMaxMemoryFraction,
		CallTimeout: callTimeout, NVMLIndex: nvmlIndexes(node), Watch: watch, Refuse: c.busyGPUs(node)})
	checks, err := measuredChecks()
	if err != nil {
		return false, err.Error()
	}
	n := *node
	n.Verify = v
	results := check.Run(ctx, &n, cfg, checks)
	for _, r := range results {
		if r.Status == check.Fail || r.Status == check.Error {
			return false, fmt.Sprintf("verify --quick: %s %s: %s", r.ID, r.Status, r.Summary)
		}
	}
	return true, fmt.Sprintf("verify --quick passes (%d checks)", len(results))
}

// nvmlIndexes maps each GPU's canonical PCI bus id to its NVML index: CUDA
// ordinals are matched to NVML's GPUs by bus id, never by position.
func nvmlIndexes(n *state.Node) map[string]int {
	out := map[string]int{}
	if n == nil || n.NVML == nil {
		return out
	}
	for _, g := range n.NVML.GPUs {
		if g.PCIBusID != "" {
			out[busid.Canonical(g.PCIBusID)] = g.Index
		}
	}
	return out
}

// busyGPUs names the GPUs that run another user's processes (a process
// whose owner is unknown counts as another's: it cannot be shown to be
// ours), with who runs what.
func (c *cli) busyGPUs(n *state.Node) map[int]string {
	me, _ := deadline.Run(context.Background(), 5*time.Second, func() (string, error) {
		u, err := user.Current()
		if err != nil {
			return "", err
		}
		return u.Username, nil
	})
	out := map[int]string{}
	if n == nil || n.NVML == nil {
		return out
	}
	for _, g := range n.NVML.GPUs {
		var who []string
		for _, p := range g.Processes {
			if p.User != "" && p.User == me {
				continue
			}
			u := p.User
			if u == "" {
				u = "unknown user"
			}
			who = append(who, fmt.Sprintf("pid %d (%s, %s)", p.PID, u, p.Command))
		}
		if len(who) > 0 {
			sort.Strings(who)
			out[g.Index] = "another user's processes run on it: " + strings.Join(who, ", ") + " (--allow-busy measures it anyway)"
		}
	}
	return out
}
