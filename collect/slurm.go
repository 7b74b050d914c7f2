package collect

import (
	"context"
	"errors"
	"fmt"
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
	// pidNS reads /proc/self/ns/pid's link; nil: not read.
	pidNS func() (string, error)
	// gpuDevices lists the driver's GPU device files (Sources.GPUDeviceFiles).
	gpuDevices func() []string
	// stepCgroup stands for /proc/self/cgroup where that names no Slurm
	// job (Sources.StepCgroup).
	stepCgroup string
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
	// readDir lists a directory's names (slurmd's plugin directory).
	readDir func(dir string) ([]string, error)
	// pluginDirs are the default plugin directories looked in when
	// slurm.conf sets no PluginDir= (defaultPluginDirs).
	pluginDirs []string
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
	c.Plugins = slurmdPlugins(c.SlurmConf.PluginDir, h)
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

// defaultPluginDirs are where the distributions' slurmd loads plugins from
// when slurm.conf sets no PluginDir=: Debian and Ubuntu's slurm-wlm
// (dpkg -L slurm-wlm-basic-plugins: /usr/lib/x86_64-linux-gnu/slurm-wlm),
// RPM builds (/usr/lib64/slurm), and a source build's default prefix
// (/usr/local/lib/slurm).
var defaultPluginDirs = []string{
	"/usr/lib/x86_64-linux-gnu/slurm-wlm",
	"/usr/lib/aarch64-linux-gnu/slurm-wlm",
	"/usr/lib64/slurm",
	"/usr/local/lib/slurm",
}

// gpuNVMLPlugin is the plugin slurmd loads for AutoDetect=nvml
// (src/plugins/gpu/nvml, built only when configure finds NVML).
const gpuNVMLPlugin = "gpu_nvml.so"

// slurmdPlugins looks for gpu_nvml.so where slurmd loads plugins from:
// slurm.conf's PluginDir= (a colon-separated list, searched in turn), else
// the default directories that exist and hold plugins. It answers "unknown"
// rather than "no" when a directory could not be read, when no default
// directory is found, or when two defaults disagree (which slurmd is
// running is not known here).
func slurmdPlugins(pluginDir string, h slurmHost) *slurmstate.Plugins {
	p := &slurmstate.Plugins{From: "PluginDir", GPUNVML: "unknown"}
	readDir := h.readDir
	if readDir == nil {
		return nil
	}
	has := func(names []string, want string) bool {
		for _, n := range names {
			if n == want {
				return true
			}
		}
		return false
	}
	var unreadable []string
	if pluginDir != "" {
		for _, d := range strings.Split(pluginDir, ":") {
			if d = strings.TrimSpace(d); d == "" {
				continue
			}
			p.Dirs = append(p.Dirs, d)
			names, err := readDir(d)
			if err != nil {
				unreadable = append(unreadable, d+": "+unreadableReason(d, err))
				continue
			}
			if has(names, gpuNVMLPlugin) {
				p.GPUNVML, p.GPUNVMLPath = "yes", filepath.Join(d, gpuNVMLPlugin)
				return p
			}
		}
		if len(unreadable) > 0 {
			p.Why = "cannot read " + strings.Join(unreadable, "; ")
			return p
		}
		p.GPUNVML, p.Why = "no", "no "+gpuNVMLPlugin+" in PluginDir="+pluginDir
		return p
	}
	p.From = "default"
	dirs := h.pluginDirs
	if dirs == nil {
		dirs = defaultPluginDirs
	}
	var with, without []string
	for _, d := range dirs {
		names, err := readDir(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			unreadable = append(unreadable, d+": "+unreadableReason(d, err))
			continue
		}
		plugins := false
		for _, n := range names {
			plugins = plugins || strings.HasSuffix(n, ".so")
		}
		if !plugins {
			continue
		}
		p.Dirs = append(p.Dirs, d)
		if has(names, gpuNVMLPlugin) {
			with = append(with, d)
		} else {
			without = append(without, d)
		}
	}
	switch {
	case len(unreadable) > 0:
		p.Why = "cannot read " + strings.Join(unreadable, "; ")
	case len(with) == 0 && len(without) == 0:
		p.Why = "no plugin directory at the defaults (" + strings.Join(dirs, ", ") + ") and no PluginDir= in slurm.conf"
	case len(with) > 0 && len(without) > 0:
		p.Why = fmt.Sprintf("%s has %s and %s does not: which one this slurmd loads from is not known (set PluginDir=)",
			strings.Join(with, ", "), gpuNVMLPlugin, strings.Join(without, ", "))
	case len(with) > 0:
		p.GPUNVML, p.GPUNVMLPath = "yes", filepath.Join(with[0], gpuNVMLPlugin)
	default:
		p.GPUNVML, p.Why = "no", "no "+gpuNVMLPlugin+" in "+strings.Join(without, ", ")
	}
	return p
}
