package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/daemonapi"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() { registrars = append(registrars, registerCheck) }

// checkExtension lets a feature add flags to 'check' and act on its results
// (drain the node, write a textfile) without growing this file. Extensions
// run in registration order, act before the report is printed and after
// once it is; an extension may
// raise the exit code, never lower it. flags is called for every run, so an
// extension must reset the variables its flags bind there.
type checkExtension struct {
	flags func(cmd *kingpin.CmdClause)
	// configure runs after flags are parsed and before checks are selected
	// and the run's deadline is set: it may change the config (including
	// cfg.Checks/cfg.Skip), the collector options and the flags themselves
	// (f.collect.timeout for a hard deadline).
	configure func(f *checkFlags, cfg *check.Config, o *collect.Options) error
	// start runs first, before any input is read (--config included): a
	// hard deadline armed here covers the whole run. It returns what to undo
	// when the run ends early.
	start func(f *checkFlags) (stop func())
	after func(c *cli, node *state.Node, doc *report.Document) (exit int, err error)
	// act runs before the report is written and may record in it what it
	// did (the Slurm drain).
	act func(c *cli, node *state.Node, doc *report.Document) (exit int, err error)
}

var checkExtensions []checkExtension

type checkFlags struct {
	collect      collectFlags
	fromSnapshot string
	format       string
	color        string
	configFile   string
	checks       []string
	skip         []string
	expectGPUs   int
	minDriver    string
	strict       bool
	verbose      bool
	expectIdle   bool
	xidWindow    time.Duration
	fromDaemon   string
	maxAge       time.Duration
	kernelLog    string
	gpus         string
}

func registerCheck(c *cli) {
	f := &checkFlags{}
	cmd := c.app.Command("check", "Judge this node (or a saved snapshot) and print a pass/fail report. Exit 0: nothing failed; 1: a check failed; 2: gpuprobe could not run.")
	f.collect.register(cmd, "30s")
	cmd.Flag("from-snapshot", "Judge a snapshot saved by 'gpuprobe snapshot' instead of collecting.").PlaceHolder("FILE").StringVar(&f.fromSnapshot)
	cmd.Flag("format", "Output format.").Default("text").EnumVar(&f.format, "text", "json")
	cmd.Flag("color", "Colour the text report: auto (on a terminal, unless NO_COLOR is set), always, never.").Default("auto").EnumVar(&f.color, "auto", "always", "never")
	cmd.Flag("config", "YAML file with expectations and thresholds (see docs/checks.md).").PlaceHolder("FILE").StringVar(&f.configFile)
	cmd.Flag("checks", "Run only these checks, by ID or prefix (comma-separated or repeated).").PlaceHolder("ID").StringsVar(&f.checks)
	cmd.Flag("skip", "Skip these checks, by ID or prefix.").PlaceHolder("ID").StringsVar(&f.skip)
	cmd.Flag("expect-gpus", "Number of GPUs this node must have.").IntVar(&f.expectGPUs)
	cmd.Flag("min-driver", "Oldest acceptable driver version.").PlaceHolder("VERSION").StringVar(&f.minDriver)
	cmd.Flag("strict", "Treat warnings as failures.").BoolVar(&f.strict)
	cmd.Flag("expect-idle", "Fail (not warn) on leftover processes or memory on a GPU: for prologs and idle-node health checks.").BoolVar(&f.expectIdle)
	cmd.Flag("from-daemon", "Judge from a running 'gpuprobe serve' (URL, or 'local' for http://127.0.0.1:"+daemonapi.DefaultPort+") when its report is fresher than --max-age; otherwise run directly. A health check then costs milliseconds and never touches the driver.").PlaceHolder("URL").StringVar(&f.fromDaemon)
	cmd.Flag("max-age", "Oldest daemon report --from-daemon accepts.").Default("60s").DurationVar(&f.maxAge)
	cmd.Flag("xid-window", "Only count XIDs this recent (default: since boot).").DurationVar(&f.xidWindow)
	cmd.Flag("gpus", "Judge only these GPUs (NVML indexes), or 'job' for SLURM_JOB_GPUS: a Prolog or Epilog judges its own job's GPUs, not another job's leftover on a shared node.").PlaceHolder("LIST").StringVar(&f.gpus)
	cmd.Flag("kernel-log", "Judge the XIDs of a saved kernel log (dmesg, dmesg -T, journalctl -k, or /dev/kmsg records; '-' is stdin) instead of this node's /dev/kmsg: a support ticket's log, with --checks gpu.xid.").PlaceHolder("FILE").StringVar(&f.kernelLog)
	cmd.Flag("verbose", "Print every check's evidence, not only the failures'.").Short('v').BoolVar(&f.verbose)
	for _, e := range checkExtensions {
		if e.flags != nil {
			e.flags(cmd)
		}
	}
	cmd.Action(func(*kingpin.ParseContext) error { return c.runCheck(f) })
}

func (c *cli) runCheck(f *checkFlags) error {
	start := time.Now()
	for _, e := range checkExtensions {
		if e.start != nil {
			defer e.start(f)()
		}
	}
	cfgCtx, cfgCancel := context.WithTimeout(context.Background(), max(f.collect.timeout, time.Millisecond))
	cfg, err := c.loadConfig(cfgCtx, f.configFile, true)
	cfgCancel()
	if err != nil {
		return c.usageError("%v", err)
	}
	if f.expectGPUs != 0 {
		cfg.ExpectGPUs = f.expectGPUs
	}
	if f.expectGPUs < 0 {
		return c.usageError("--expect-gpus must not be negative")
	}
	if f.minDriver != "" {
		cfg.MinDriver = f.minDriver
	}
	cfg.Strict = cfg.Strict || f.strict
	cfg.Processes.ExpectIdle = cfg.Processes.ExpectIdle || f.expectIdle
	if f.xidWindow < 0 {
		return c.usageError("--xid-window must not be negative")
	}
	if f.xidWindow > 0 {
		cfg.XID.Window = f.xidWindow
	}
	o, err := f.collect.options()
	if err != nil {
		return c.usageError("%v", err)
	}
	for _, e := range checkExtensions {
		if e.configure != nil {
			if err := e.configure(f, cfg, &o); err != nil {
				return c.usageError("%v", err)
			}
		}
	}
	if err := c.useKernelLog(f, cfg, &o); err != nil {
		return c.usageError("%v", err)
	}
	scope, scopeLabel, err := c.scopeFlag(f.gpus)
	if err != nil {
		return c.usageError("%v", err)
	}
	if scope != nil && f.fromDaemon != "" {
		return c.usageError("--gpus judges this run's collection: it excludes --from-daemon")
	}
	include, exclude := splitList(append(cfg.Checks, f.checks...)), splitList(append(cfg.Skip, f.skip...))
	if len(f.checks) > 0 {
		include = splitList(f.checks) // flags replace the config's selection
	}
	checks, err := check.Select(include, exclude)
	if err != nil {
		return c.usageError("%v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), f.collect.timeout)
	defer cancel()
	var node *state.Node
	var results []check.Result
	var source string // where a report read from the daemon came from
	if f.fromDaemon != "" {
		if f.fromSnapshot != "" || f.collect.simulate != "" {
			return c.usageError("--from-daemon excludes --from-snapshot and --simulate")
		}
		node, results, source = c.fromDaemon(ctx, f.fromDaemon, f.maxAge, checks)
	}
	if node != nil {
		// judged by the daemon
	} else if f.fromSnapshot != "" {
		if f.collect.simulate != "" {
			return c.usageError("--from-snapshot and --simulate exclude each other")
		}
		if node, err = c.loadSnapshot(ctx, f.fromSnapshot); err != nil {
			return c.usageError("%v", err)
		}
	} else {
		node = c.collectNode(ctx, &f.collect, o)
	}
	if results == nil {
		if scope != nil {
			scopeNode(node, cfg, scope, scopeLabel)
		}
		results = check.Run(ctx, node, cfg, checks)
	}
	doc := report.New(node, results, cfg.Strict, time.Since(start))
	doc.Source = source
	// Extensions that act on the node (the Slurm drain) do so before the
	// report is written, so that it says what they did.
	exit := 0
	for _, e := range checkExtensions {
		if e.act == nil {
			continue
		}
		code, err := e.act(c, node, doc)
		if err != nil {
			return err
		}
		exit = max(exit, code)
	}
	if f.format == "json" {
		err = doc.WriteJSON(c.stdout)
	} else {
		err = doc.WriteText(c.stdout, report.TextOptions{Color: c.useColor(f.color), Verbose: f.verbose})
	}
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	c.exit = max(check.ExitCode(results, cfg.Strict), exit)
	for _, e := range checkExtensions {
		if e.after == nil {
			continue
		}
		code, err := e.after(c, node, doc)
		if err != nil {
			return err
		}
		c.exit = max(c.exit, code)
	}
	return nil
}

func (c *cli) useColor(mode string) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	return c.getenv("NO_COLOR") == "" && isTerminal(c.stdout)
}

// splitList accepts both repeated flags and comma-separated values.
func splitList(in []string) []string {
	var out []string
	for _, s := range in {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// useKernelLog reads --kernel-log whole (bounded in size and time) and hands
// it to the kernel collector in place of /dev/kmsg. A saved log is another
// boot's: its records cannot be dated from this machine's uptime, so
// --xid-window, which needs their age, is refused rather than misapplied.
func (c *cli) useKernelLog(f *checkFlags, cfg *check.Config, o *collect.Options) error {
	if f.kernelLog == "" {
		return nil
	}
	if f.collect.simulate != "" || f.collect.simulateFile != "" || f.fromSnapshot != "" || f.fromDaemon != "" {
		return fmt.Errorf("--kernel-log judges this run's collection: it excludes --simulate, --from-snapshot and --from-daemon")
	}
	if cfg.XID.Window > 0 {
		return fmt.Errorf("--kernel-log: a saved log's records have no age on this machine; drop --xid-window (xid.window) and judge the whole log")
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.collect.timeout)
	defer cancel()
	data, err := readlimit.Input(ctx, "--kernel-log", f.kernelLog, c.stdinIf(true), readlimit.KernelLog)
	if err != nil {
		return err
	}
	o.Sources.KernelLog = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	o.Sources.KernelLogName = "file:" + f.kernelLog
	o.Sources.KernelLogForeign = true
	return nil
}
