package collect

import (
	"context"
	"errors"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/slurm"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() { collectors = append(collectors, collector{name: "slurm", run: collectSlurm}) }

// slurmHost is where the Slurm collector looks; tests point it at a fake
// tree. The environment is not here: it comes from Options.Environ, so that
// a simulated run still reads the real job's variables.
type slurmHost struct {
	proc, sys string
	// gpuDevices lists the driver's GPU device files (Sources.GPUDeviceFiles).
	gpuDevices func() []string
	// procFile reads a file of /proc/PID (Sources.ProcessFile).
	procFile func(pid int32, name string) ([]byte, error)
	hostname func() (string, error)
	affinity func() ([]int, error)
	uid      func() int
	pid      func() int
	lookupID func(uid string) (string, error)
	resolve  func(ctx context.Context, host string) ([]string, error)
	// addrs lists this node's interface addresses.
	addrs    func() ([]string, error)
	readFile slurm.ReadFile
	// probe opens a device file and closes it again; its error tells a device
	// cgroup (EPERM) from a device with no driver (ENXIO).
	probe func(path string) error
	// timeout bounds every single lookup of a name, user or device.
	timeout time.Duration
}

func collectSlurm(ctx context.Context, n *state.Node, o Options) state.Source {
	h := realSlurmHost(o)
	environ := os.Environ
	if o.Environ != nil {
		environ = o.Environ
	}
	st := gatherSlurm(ctx, n, o, environ(), h)
	n.Slurm = st
	if len(st.Errors) > 0 {
		return state.Source{OK: false, Error: strings.Join(st.Errors, "; ")}
	}
	return state.Source{OK: true}
}

// gatherSlurm reads the environment at once (it is memory), then does the
// file and name lookups in a goroutine bounded by ctx: a hung NFS slurm.conf
// or NSS lookup must cost a partial state, never the run's deadline.
func gatherSlurm(ctx context.Context, n *state.Node, o Options, environ []string, h slurmHost) *slurmstate.State {
	env := slurmstate.ParseEnv(environ)
	st := &slurmstate.State{Env: env}
	st.NodeName, st.NodeNameFrom = env.NodeName, "SLURMD_NODENAME"
	if st.NodeName == "" {
		host, err := h.hostname()
		if err != nil {
			st.Errors = append(st.Errors, "hostname: "+err.Error())
		}
		st.NodeName, _, _ = strings.Cut(host, ".")
		st.NodeNameFrom = "hostname"
	}
	switch o.SlurmJob {
	case "always":
		st.InJob, st.JobReason = true, "forced by --job"
	case "never":
		st.InJob, st.JobReason = false, "job checks off (--no-job)"
	default:
		st.InJob, st.JobReason = env.InJobStep()
	}
	confPath := o.SlurmConf
	if confPath == "" {
		confPath = envValue(environ, "SLURM_CONF")
	}

	type result struct {
		conf  *slurmstate.Conf
		devs  []slurmstate.DeviceFile
		procs []slurmstate.Process
		task  *slurmstate.Task
		host  *slurmstate.Host
		errs  []string
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.conf = readSlurmConf(confPath, h)
		r.devs = gpuDeviceFiles(ctx, st, r.conf, h)
		if st.InJob {
			r.procs = gpuProcesses(n, h)
		}
		r.task, r.errs = readTask(ctx, h)
		if st.InJob {
			r.host = readJobHost(ctx, env, h)
		}
		done <- r
	}()
	select {
	case r := <-done:
		st.Conf, st.Devices, st.Processes, st.Task, st.Host = r.conf, r.devs, r.procs, r.task, r.host
		st.Errors = append(st.Errors, r.errs...)
	case <-ctx.Done():
		st.Errors = append(st.Errors, "Slurm files and lookups did not finish before the collection deadline")
	}
	return st
}

func envValue(environ []string, key string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// configlessConf is where slurmd caches the configuration in configless
// mode; clients find it there when /etc/slurm has none.
const configlessConf = "/run/slurm/conf/slurm.conf"

// readSlurmConf reads slurm.conf and, beside it (as Slurm looks for them),
// gres.conf, cgroup.conf and topology.conf/topology.yaml.
func readSlurmConf(path string, h slurmHost) *slurmstate.Conf {
	c := &slurmstate.Conf{}
	// exists reads p: true when it reads, false when it is absent; any other
	// failure (permission, size limit, timeout, a directory) is recorded as
	// unreadable, so the checks say why instead of "not a Slurm node".
	exists := func(p string) bool {
		_, err := h.readFile(p)
		switch {
		case err == nil:
			return true
		case !errors.Is(err, fs.ErrNotExist):
			c.Unreadable = append(c.Unreadable, slurmstate.FileError{Path: p, Reason: unreadableReason(p, err)})
		}
		return false
	}
	given := path != ""
	if !given {
		path = "/etc/slurm/slurm.conf"
		if _, err := h.readFile(path); errors.Is(err, fs.ErrNotExist) {
			if _, err := h.readFile(configlessConf); err == nil {
				path = configlessConf
			}
		}
	}
	c.SlurmConfPath = path
	if !exists(path) {
		if _, bad := c.UnreadableFile(path); !bad {
			if given {
				// Named by --slurm-conf or SLURM_CONF: a typo is not "no Slurm".
				c.Unreadable = append(c.Unreadable, slurmstate.FileError{Path: path, Reason: "no such file (named by --slurm-conf or SLURM_CONF)"})
			} else {
				c.Missing = append(c.Missing, path)
			}
		}
		return c
	}
	c.SlurmConf = slurm.ParseSlurmConf(path, h.readFile)
	dir := filepath.Dir(path)
	c.GresConfPath = filepath.Join(dir, "gres.conf")
	if exists(c.GresConfPath) {
		c.GresConf = slurm.ParseGresConf(c.GresConfPath, h.readFile)
	} else if !isUnreadable(c, c.GresConfPath) {
		c.Missing = append(c.Missing, c.GresConfPath)
	}
	if p := filepath.Join(dir, "cgroup.conf"); exists(p) {
		c.CgroupConf = slurm.ParseCgroupConf(p, h.readFile)
	} else if !isUnreadable(c, p) {
		c.Missing = append(c.Missing, p)
	}
	for _, name := range []string{"topology.conf", "topology.yaml"} {
		if p := filepath.Join(dir, name); exists(p) {
			c.TopologyConf = p
			break
		}
	}
	return c
}

func isUnreadable(c *slurmstate.Conf, p string) bool { _, bad := c.UnreadableFile(p); return bad }

// unreadableReason is err without the path it usually starts with.
func unreadableReason(p string, err error) string {
	msg := err.Error()
	for _, prefix := range []string{"open " + p + ": ", "read " + p + ": ", p + ": "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return msg
}
