package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	simnode "github.com/gpuprobe/gpuprobe/sim/node"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	"github.com/gpuprobe/gpuprobe/state"
)

// collectFlags are shared by every command that collects node state, so
// --simulate and the deadlines mean the same everywhere.
type collectFlags struct {
	simulate     string
	simulateFile string
	timeout      time.Duration
	callTimeout  time.Duration
	sysfs        string
	procfs       string
	virt         string
}

func (f *collectFlags) register(cmd *kingpin.CmdClause, defaultTimeout string) {
	cmd.Flag("simulate", "Collect from a simulated node instead of the driver: MODEL[:FAULT[=ARG],...], e.g. dgx-h100:row-remap-pending=3 (models: "+
		strings.Join(simulate.Models, ", ")+"; 'gpuprobe faults' lists faults).").PlaceHolder("SPEC").StringVar(&f.simulate)
	cmd.Flag("simulate-file", "Read the --simulate spec from FILE, again at every collection (the daemon picks up a changed fault without a restart; an empty file means real hardware).").PlaceHolder("FILE").StringVar(&f.simulateFile)
	cmd.Flag("timeout", "Deadline for the whole run; a hung driver call becomes an error result and the run still ends on time.").Default(defaultTimeout).DurationVar(&f.timeout)
	cmd.Flag("call-timeout", "Deadline for each NVML call.").Default("10s").DurationVar(&f.callTimeout)
	cmd.Flag("path.sysfs", "sysfs mount point: a captured tree is judged as the machine it came from.").Default("/sys").StringVar(&f.sysfs)
	cmd.Flag("path.procfs", "procfs mount point.").Default("/proc").StringVar(&f.procfs)
	cmd.Flag("virt", "Virtualization for the topology checks: auto (detect from --path.sysfs/--path.procfs), none (bare metal) or vm.").Default("auto").EnumVar(&f.virt, "auto", "none", "vm")
}

// options validates the flags into collector options.
func (f *collectFlags) options() (collect.Options, error) {
	o := collect.Options{CallTimeout: f.callTimeout, Version: version.Version, SysfsRoot: f.sysfs, ProcfsRoot: f.procfs, Virt: f.virt}
	if f.timeout <= 0 {
		return o, fmt.Errorf("--timeout must be positive")
	}
	if f.callTimeout <= 0 {
		return o, fmt.Errorf("--call-timeout must be positive")
	}
	spec := f.simulate
	if f.simulateFile != "" {
		if spec != "" {
			return o, fmt.Errorf("--simulate and --simulate-file exclude each other")
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
		data, err := readlimit.File(ctx, "--simulate-file "+f.simulateFile, f.simulateFile, readlimit.SimulateSpec)
		cancel()
		if err != nil {
			return o, err
		}
		spec = strings.TrimSpace(string(data))
	}
	if spec != "" {
		s, err := simulate.Parse(spec)
		if err != nil {
			return o, err
		}
		// Simulation is wired here, at the edge: the collectors get mocks
		// and an in-memory tree and never know.
		if o.Sources, err = simnode.Sources(s); err != nil {
			return o, err
		}
		// real-container: the step's own view of its container is this
		// machine's (a real Podman container judged against the simulated
		// node); the host's side stays simulated.
		if len(s.Has(simnode.RealContainer)) > 0 {
			o.Sources.ContainerView = os.DirFS("/")
		}
	}
	return o, nil
}

// collectDeadline leaves a slice of the run's deadline for judging and
// printing, so a hung collection still yields a report on time.
func collectDeadline(timeout time.Duration) time.Duration {
	margin := timeout / 10
	if margin > time.Second {
		margin = time.Second
	}
	return timeout - margin
}

func (c *cli) collectNode(parent context.Context, f *collectFlags, o collect.Options) *state.Node {
	ctx, cancel := context.WithTimeout(parent, collectDeadline(f.timeout))
	defer cancel()
	n := collect.Node(ctx, o)
	for _, s := range n.Sources {
		if !s.OK {
			c.log.Info("collector reported a problem", zap.String("source", s.Name), zap.String("error", s.Error))
		}
	}
	return n
}

// isTerminal reports whether w is a terminal (colour only goes to one).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
