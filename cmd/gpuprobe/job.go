package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kingpin/v2"
	"go.uber.org/zap"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/report"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	"github.com/gpuprobe/gpuprobe/slurm"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

func init() { registrars = append(registrars, registerJob) }

type jobFlags struct {
	collect    collectFlags
	job        string
	duration   time.Duration
	interval   time.Duration
	gpus       string
	format     string
	color      string
	configFile string
	checks     []string
	skip       []string
	strict     bool
	verbose    bool
	summary    bool
	fromDaemon string
	scontrol   string
	slurmConf  string
	hang       bool
}

func registerJob(c *cli) {
	f := &jobFlags{}
	cmd := c.app.Command("job", "Sample a running job's GPUs, CPUs, memory and reads for --duration and say what holds it back. Inside a step: srun --overlap --jobid=$JOBID gpuprobe job; as root on the node: gpuprobe job --job ID. Exit 0: nothing failed; 1: a verdict failed; 2: gpuprobe could not run.")
	f.collect.register(cmd, "30s")
	cmd.Flag("job", "The Slurm job to sample (default: the job this runs in, $SLURM_JOB_ID).").PlaceHolder("ID").StringVar(&f.job)
	cmd.Flag("duration", "How long to sample.").Default("10s").DurationVar(&f.duration)
	cmd.Flag("interval", "Time between samples.").Default("1s").DurationVar(&f.interval)
	cmd.Flag("gpus", "The job's GPUs as NVML indexes (default: from scontrol show job -d, else the step's SLURM_STEP_GPUS/SLURM_JOB_GPUS, else the GPUs running the job's processes).").PlaceHolder("LIST").StringVar(&f.gpus)
	cmd.Flag("format", "Output format.").Default("text").EnumVar(&f.format, "text", "json")
	cmd.Flag("color", "Colour the text report: auto, always, never.").Default("auto").EnumVar(&f.color, "auto", "always", "never")
	cmd.Flag("config", "YAML file with thresholds (the perf: section, see docs/job.md).").PlaceHolder("FILE").StringVar(&f.configFile)
	cmd.Flag("checks", "Run only these perf checks, by ID or prefix.").PlaceHolder("ID").StringsVar(&f.checks)
	cmd.Flag("skip", "Skip these perf checks, by ID or prefix.").PlaceHolder("ID").StringsVar(&f.skip)
	cmd.Flag("strict", "Treat warnings as failures.").BoolVar(&f.strict)
	cmd.Flag("verbose", "Print every verdict's evidence.").Short('v').BoolVar(&f.verbose)
	cmd.Flag("summary", "Print one line per GPU and one verdict line, for a job's output file (Epilog, TaskEpilog).").BoolVar(&f.summary)
	cmd.Flag("from-daemon", "Read the job's record from a running 'gpuprobe serve' (URL, or 'local') instead of sampling: what the job's GPUs did while it ran, for an Epilog after its processes are gone (only the GPUs that ran one of its processes; no CPU or I/O side). Samples when the daemon has no record.").PlaceHolder("URL").StringVar(&f.fromDaemon)
	cmd.Flag("hang", "My job hangs: read each rank process's state, wait channel, threads in uninterruptible sleep and CPU time beside its GPU's utilisation and power, ask NCCL's RAS (NCCL 2.24+) on the job's loopback RAS port, and say which local rank the job waits on or which remote rank RAS names (runs only perf.hang unless --checks is given; see docs/job.md, \"My job hangs\").").BoolVar(&f.hang)
	cmd.Flag("scontrol", "Absolute path of scontrol (default: the first of the usual places).").PlaceHolder("PATH").StringVar(&f.scontrol)
	cmd.Flag("slurm-conf", "slurm.conf for scontrol (SLURM_CONF).").PlaceHolder("FILE").StringVar(&f.slurmConf)
	cmd.Action(func(*kingpin.ParseContext) error { return c.runJob(f) })
}

func (c *cli) runJob(f *jobFlags) error {
	start := time.Now()
	if f.interval <= 0 || f.duration < f.interval {
		return c.usageError("--interval (%s) must be positive and no longer than --duration (%s)", f.interval, f.duration)
	}
	cfgCtx, cfgCancel := context.WithTimeout(context.Background(), max(f.collect.timeout, time.Millisecond))
	cfg, err := c.loadConfig(cfgCtx, f.configFile, true)
	cfgCancel()
	if err != nil {
		return c.usageError("%v", err)
	}
	cfg.Strict = cfg.Strict || f.strict
	include, exclude := splitList(append(cfg.Checks, f.checks...)), splitList(append(cfg.Skip, f.skip...))
	if len(f.checks) > 0 {
		include = splitList(f.checks)
	}
	switch {
	case f.hang && len(f.checks) == 0:
		include = []string{"perf.hang"}
	case !f.hang:
		exclude = append(exclude, "perf.hang") // nothing to judge without --hang's facts
	}
	checks, err := check.PerfChecks(include, exclude)
	if err != nil {
		return c.usageError("%v", err)
	}
	o, err := f.collect.options()
	if err != nil {
		return c.usageError("%v", err)
	}
	jo := collect.JobOptions{Options: o, Duration: f.duration, Interval: f.interval, Hang: f.hang}

	// Where the job's host side comes from: a simulated job lives in the
	// simulated tree; a spec without a job-* fault simulates only the GPUs,
	// and the job is this machine's (the Slurm e2e samples a real job so).
	var scenario *simulate.JobScenario
	if o.Sources.Simulated != "" {
		spec, _ := simulate.Parse(o.Sources.Simulated)
		if scenario, err = spec.Job(); err != nil {
			return c.usageError("%v", err)
		}
		if scenario == nil {
			jo.Sources.Root, jo.Sources.RootLabel = nil, ""
		}
	}
	jo.JobID = f.job
	if jo.JobID == "" {
		jo.JobID = c.getenv("SLURM_JOB_ID")
	}
	if jo.JobID == "" && scenario != nil {
		jo.JobID = simulate.SimJob.ID
	}
	if jo.JobID == "" {
		return c.usageError("not inside a Slurm job ($SLURM_JOB_ID unset): give --job ID")
	}
	if _, err := strconv.ParseUint(jo.JobID, 10, 32); err != nil {
		return c.usageError("--job %q: a job ID is a number (array and het job IDs: give the numeric JobId scontrol shows)", jo.JobID)
	}

	ctx, cancel := context.WithTimeout(context.Background(), f.duration+f.collect.timeout)
	defer cancel()
	host := collect.HostName(c.getenv, os.Hostname)
	var perf *state.JobPerf
	if f.fromDaemon != "" {
		if perf, err = daemonClient(f.fromDaemon).Job(ctx, jo.JobID); err != nil {
			c.log.Info("sampling the job: the daemon has no usable record", zap.String("daemon", f.fromDaemon), zap.Error(err))
		}
	}
	if perf == nil {
		if perf, err = c.sampleJob(ctx, f, &jo, scenario, host); err != nil {
			return c.usageError("%v", jobError(jo.JobID, err))
		}
	}
	node := &state.Node{SchemaVersion: state.SchemaVersion, Host: host, CollectedAt: perf.Start,
		Simulated: o.Sources.Simulated, GpuprobeVersion: o.Version, JobPerf: perf}
	results := check.Run(ctx, node, cfg, checks)
	doc := report.New(node, results, cfg.Strict, time.Since(start))
	switch {
	case f.summary:
		err = doc.WriteJobSummary(c.stdout)
	case f.format == "json":
		err = doc.WriteJSON(c.stdout)
	default:
		err = doc.WriteText(c.stdout, report.TextOptions{Color: c.useColor(f.color), Verbose: f.verbose})
	}
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	c.exit = check.ExitCode(results, cfg.Strict)
	return nil
}

// sampleJob finds the job's processes and GPUs and samples them.
func (c *cli) sampleJob(ctx context.Context, f *jobFlags, jo *collect.JobOptions, scenario *simulate.JobScenario, host string) (*state.JobPerf, error) {
	var sc *slurm.Scontrol
	if scenario == nil {
		if path, err := slurm.FindScontrol(f.scontrol); err == nil {
			sc = &slurm.Scontrol{Path: path, SlurmConf: f.slurmConf}
			jo.ListPIDs = func(ctx context.Context, id string) ([]int32, error) {
				pids, err := sc.ListPIDs(ctx, id)
				return pids, scontrolFailure(err)
			}
		} else {
			c.log.Info("no scontrol: the job's processes come from its cgroup only", zap.Error(err))
		}
	}
	if err := c.jobGPUs(ctx, f, jo, scenario, sc, host); err != nil {
		return nil, err
	}
	return collect.Job(ctx, *jo)
}

// jobGPUs decides which GPUs are the job's: --gpus; the simulated job's;
// Slurm's record of the job on this node (scontrol show job -d, IDX); the
// step's own variables; else (nil) the GPUs that run the job's processes.
// Slurm's indexes are taken as NVML's, as job.visible_devices does without
// a device cgroup (docs/job.md says when they differ), except on a node
// with MIG on, where they number MIG GRES records: they are marked
// SlurmGPUNumbers and collect.Job asks NVML first.
func (c *cli) jobGPUs(ctx context.Context, f *jobFlags, jo *collect.JobOptions, scenario *simulate.JobScenario, sc *slurm.Scontrol, host string) error {
	switch {
	case f.gpus != "":
		l, err := cpulist.Parse(f.gpus)
		if err != nil {
			return fmt.Errorf("--gpus %q: %v", f.gpus, err)
		}
		jo.GPUs, jo.GPUsFrom = l, "--gpus"
		return nil
	case scenario != nil:
		jo.GPUs, jo.GPUsFrom = simulate.SimJob.GPUs, "simulated job"
		return nil
	}
	if sc != nil {
		jn, found, err := sc.JobNode(ctx, jo.JobID, host)
		switch {
		case err != nil:
			c.log.Info("scontrol show job gave no GPU list", zap.Error(scontrolFailure(err)))
		case found && jn.GPUs == nil && jn.SharedGPU:
			// Shard or MPS shares: scontrol says how many, not on which
			// GPU; the step's variables or the job's processes say it.
			jo.AllocatedCPUs = jn.CPUIDs
		case found:
			jo.GPUs, jo.GPUsFrom, jo.SlurmGPUNumbers = jn.GPUs, "scontrol show job -d", true
			if jn.GPUs == nil {
				jo.GPUs = []int{}
			}
			jo.AllocatedCPUs = jn.CPUIDs
			return nil
		}
	}
	if f.job == "" {
		var environ []string
		for _, k := range []string{"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"} {
			if v := c.getenv(k); v != "" {
				environ = append(environ, k+"="+v)
			}
		}
		env := slurmstate.ParseEnv(environ)
		if gpus, from := env.AllocatedGPUs(); gpus != nil {
			jo.GPUs, jo.GPUsFrom, jo.SlurmGPUNumbers = gpus, from, true
		}
	}
	return nil
}

// jobError names the job in err once: the job sampler's errors already
// start with "job ID:", and prefixing again printed "job 4242: job 4242:".
func jobError(id string, err error) error {
	if strings.HasPrefix(err.Error(), "job "+id+":") {
		return err
	}
	return fmt.Errorf("job %s: %w", id, err)
}

// maxScontrolFailure bounds what one scontrol failure adds to a message.
const maxScontrolFailure = 300

// scontrolFailure makes a failed scontrol call one bounded, escaped line.
// Off a cluster (or with slurmctld unreachable) scontrol prints a line per
// DNS SRV lookup before the one that says what failed, and every line of
// its stderr reached the terminal raw, escape sequences included. The
// summary keeps the first line (the command and its exit status) and the
// last (scontrol's conclusion), says how many were left out, and escapes
// what scontrol printed (safetext). The cause stays wrapped.
func scontrolFailure(err error) error {
	if err == nil {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	msg := strings.Join(lines, " ")
	if len(lines) > 2 {
		msg = fmt.Sprintf("%s … %s (%d more lines)", lines[0], lines[len(lines)-1], len(lines)-2)
	}
	msg = safetext.Clean(msg)
	if len(msg) > maxScontrolFailure {
		cut := maxScontrolFailure
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return &summarized{msg: msg, err: err}
}

// summarized is an error shown by its summary that still unwraps to its
// cause (a deadline, an exit status).
type summarized struct {
	msg string
	err error
}

func (e *summarized) Error() string { return e.msg }
func (e *summarized) Unwrap() error { return e.err }
