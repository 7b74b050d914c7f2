// Package collect runs the collectors for one node and assembles the node
// state. It owns the choice between real hardware and simulation, so every
// command that collects (check, snapshot, topo, serve) gets --simulate the
// same way.
package collect

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/gpuprobe/gpuprobe/nvml"
	"github.com/gpuprobe/gpuprobe/state"
)

// Options select what to collect and from where. Each collector's file adds
// the fields it needs.
type Options struct {
	// Sources are where to read from; the zero value is this node.
	Sources Sources
	// CallTimeout bounds each NVML call.
	CallTimeout time.Duration
	// NVMLName names the library Sources.OpenNVML opens, for deadline.Do
	// across collections: a device whose call is still hung is not called
	// again by a later collection with the same name. The daemon sets it
	// for a simulated node (each cycle's mock is the same simulated GPU);
	// empty, a mock counts for its own collection alone. The real library
	// is always "nvml".
	NVMLName string
	// NVMLSession, when set, holds the real library's initialisation across
	// collections (the daemon's); ignored under simulation.
	NVMLSession *nvml.Session
	// Version is gpuprobe's own version, recorded in the state.
	Version string
	// NCCLLogs are NCCL_DEBUG=INFO logs to analyse (--nccl-log).
	NCCLLogs []string
	// KmsgPath is the kernel log to read XIDs from (default /dev/kmsg).
	KmsgPath string
	// ProcfsRoot is where procfs is mounted (--path.procfs, default /proc).
	ProcfsRoot string
	// SysfsRoot is where sysfs is mounted (--path.sysfs, default /sys).
	SysfsRoot string
	// Virt overrides virtualization detection (--virt: auto, none, vm).
	Virt string
	// Environ is the launch environment the Slurm collector reads (nil: this process's own).
	Environ func() []string
	// SlurmConf is slurm.conf's path (--slurm-conf; "" = $SLURM_CONF, else /etc/slurm/slurm.conf).
	SlurmConf string
	// SlurmJob forces the job-step view: "always" (--job), "never" (--no-job), "" = detect.
	SlurmJob string
	// ProcessCommandLines also records GPU processes' command lines
	// (serve --web.expose-process-details); by default only pid, user and
	// executable name.
	ProcessCommandLines bool
}

func (o Options) procfs() string {
	if o.ProcfsRoot == "" {
		return "/proc"
	}
	return o.ProcfsRoot
}

// collector fills its own part of the node state and says how it went.
// Collectors after the first (NVML) may read what NVML found, never each
// other's fields.
type collector struct {
	name string
	run  func(ctx context.Context, n *state.Node, o Options) state.Source
}

// nvmlCollector runs first: the others key their findings to its GPUs.
var nvmlCollector = collector{name: "nvml", run: collectNVML}

// collectors are the rest, each registered from its own file; they run side
// by side once NVML is done.
var collectors []collector

// Node collects the whole node state under ctx's deadline.
func Node(ctx context.Context, opts Options) *state.Node {
	n := &state.Node{SchemaVersion: state.SchemaVersion, Host: HostName(os.Getenv, os.Hostname), CollectedAt: time.Now().UTC(), GpuprobeVersion: opts.Version}
	// A simulated node keeps its own name; Simulated says which model it
	// plays, so reports from many simulated nodes stay apart.
	n.Simulated = opts.Sources.Simulated
	n.Sources = append(n.Sources, timed(ctx, nvmlCollector, n, opts))
	sources := make([]state.Source, len(collectors))
	var wg sync.WaitGroup
	for i, c := range collectors {
		wg.Add(1)
		go func(i int, c collector) {
			defer wg.Done()
			sources[i] = timed(ctx, c, n, opts)
		}(i, c)
	}
	wg.Wait()
	n.Sources = append(n.Sources, sources...)
	return n
}

// HostName is the node's name as reports give it: Slurm's name for the node
// (SLURMD_NODENAME, set in job steps, prologs and health checks; it may
// differ from the host name) or else the kernel's host name.
func HostName(getenv func(string) string, hostname func() (string, error)) string {
	if v := getenv("SLURMD_NODENAME"); v != "" {
		return v
	}
	h, err := hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	return h
}

func timed(ctx context.Context, c collector, n *state.Node, o Options) state.Source {
	start := time.Now()
	s := c.run(ctx, n, o)
	s.Name = c.name
	s.DurationSeconds = time.Since(start).Seconds()
	return s
}
