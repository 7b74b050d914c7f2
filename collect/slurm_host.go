package collect

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpuprobe/gpuprobe/state"
)

func realSlurmHost(o Options) slurmHost {
	h := slurmHost{
		proc:       o.procfs(),
		sys:        o.SysfsRoot,
		gpuDevices: o.Sources.GPUDeviceFiles,
		procFile:   o.Sources.ProcessFile,
		stepCgroup: o.Sources.StepCgroup,
		hostname:   os.Hostname,
		pidNS:      o.Sources.PIDNamespace,
		affinity:   schedAffinity,
		uid:        os.Getuid,
		pid:        os.Getpid,
		lookupID: func(uid string) (string, error) {
			u, err := user.LookupId(uid)
			if err != nil {
				return "", err
			}
			return u.Username, nil
		},
		resolve:  net.DefaultResolver.LookupHost,
		addrs:    localAddrs,
		readFile: boundedReadFile, // readfile.go
		readDir:  dirNames,
		probe:    probeDevice,
		timeout:  2 * time.Second,
	}
	if h.sys == "" {
		h.sys = "/sys"
	}
	if h.gpuDevices == nil {
		h.gpuDevices = driverDeviceFiles
	}
	if h.pidNS == nil {
		proc := h.proc
		h.pidNS = func() (string, error) { return os.Readlink(filepath.Join(proc, "self/ns/pid")) }
	}
	if h.procFile == nil {
		proc, read := h.proc, h.readFile
		h.procFile = func(pid int32, name string) ([]byte, error) {
			return read(filepath.Join(proc, strconv.Itoa(int(pid)), name))
		}
	}
	return h
}

// driverDeviceFiles lists /dev/nvidia0, /dev/nvidia1, ... in device order
// (/dev/nvidia10 after /dev/nvidia9).
func driverDeviceFiles() []string {
	m, _ := filepath.Glob("/dev/nvidia[0-9]*")
	sort.Slice(m, func(i, j int) bool { return devNum(m[i]) < devNum(m[j]) })
	return m
}

func schedAffinity() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

func probeDevice(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// gpuDeviceFiles lists the GPU device files Slurm's gres.conf names for this
// node and those the driver created, with whether this task may open them.
// The open probe only runs inside a job, where it tells a device cgroup.
func gpuDeviceFiles(ctx context.Context, st *slurmstate.State, conf *slurmstate.Conf, h slurmHost) []slurmstate.DeviceFile {
	var paths []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	if conf != nil && conf.GresConf != nil {
		for _, d := range slurmstate.Devices(conf.GresConf.ForNode(st.NodeName, "gpu")) {
			add(d.File)
		}
	}
	if h.gpuDevices != nil {
		for _, p := range h.gpuDevices() {
			add(p)
		}
	}
	var out []slurmstate.DeviceFile
	for _, p := range paths {
		if ctx.Err() != nil {
			break
		}
		d := slurmstate.DeviceFile{Path: p, Access: "absent"}
		var sb unix.Stat_t
		if err := unix.Stat(p, &sb); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				d.Access, d.Error = "error", err.Error()
			}
			out = append(out, d)
			continue
		}
		d.Exist = true
		d.Char = sb.Mode&unix.S_IFMT == unix.S_IFCHR
		d.Major, d.Minor = int(unix.Major(uint64(sb.Rdev))), int(unix.Minor(uint64(sb.Rdev)))
		d.Access = ""
		if st.InJob && d.Char {
			// deadline.Do by path: an open() on a wedged driver blocks in the
			// kernel; a device whose earlier open is still stuck is not tried again.
			_, err := deadline.Do(ctx, "open "+p, h.timeout, func() (struct{}, error) { return struct{}{}, h.probe(p) })
			switch {
			case err == nil, errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENODEV):
				d.Access = "ok"
			case errors.Is(err, unix.EPERM):
				d.Access, d.Error = "denied", "operation not permitted (device cgroup)"
			case errors.Is(err, unix.EACCES):
				d.Access, d.Error = "denied", "permission denied (file mode)"
			case errors.Is(err, deadline.ErrTimeout), errors.Is(err, deadline.ErrBusy):
				d.Access, d.Error = "timeout", "open() did not return within "+h.timeout.String()
			default:
				d.Access, d.Error = "error", err.Error()
			}
		}
		out = append(out, d)
	}
	return out
}

// devNum sorts /dev/nvidia10 after /dev/nvidia9.
func devNum(p string) int {
	i := len(p)
	for i > 0 && p[i-1] >= '0' && p[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(p[i:])
	return n
}

// gpuProcesses finds the Slurm job of every process on a GPU: from its
// environment when readable (root, or our own), else from its cgroup path,
// which anyone may read.
func gpuProcesses(n *state.Node, h slurmHost) []slurmstate.Process {
	if n.NVML == nil {
		return nil
	}
	var out []slurmstate.Process
	for _, g := range n.NVML.GPUs {
		for _, p := range g.Processes {
			sp := slurmstate.Process{GPU: g.Index, PID: p.PID, UsedMemoryBytes: p.UsedMemoryBytes, User: p.User, Command: p.Command}
			status, err := h.procFile(int32(p.PID), "status")
			if err != nil {
				sp.Gone = errors.Is(err, os.ErrNotExist)
				out = append(out, sp)
				continue
			}
			if uid, ok := statusUID(string(status)); ok {
				sp.UID = &uid
			}
			// The job comes from the process's cgroup under Slurm's own
			// directories (set by slurmstepd; slurmstate.JobFromCgroup, as
			// the NVML collector recorded it). Its environment is the user's
			// to write, so SLURM_JOB_ID there is believed only for a process
			// of the same user as this run (no job cgroup: proctrack/linuxproc);
			// another user's process claiming this job is not.
			if p.JobID != "" {
				sp.JobID, sp.JobFrom = p.JobID, "cgroup"
			} else if sp.UID != nil && *sp.UID == h.uid() {
				if env, err := h.procFile(int32(p.PID), "environ"); err == nil {
					for _, kv := range strings.Split(string(env), "\x00") {
						if v, ok := strings.CutPrefix(kv, "SLURM_JOB_ID="); ok {
							sp.JobID, sp.JobFrom = v, "environ"
						}
					}
				}
			}
			out = append(out, sp)
		}
	}
	return out
}

func statusUID(status string) (int, bool) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				// A uid is a 32-bit unsigned number; "-1" or a 20-digit
				// figure is no owner (fuzz audit).
				n, err := strconv.ParseUint(f[0], 10, 32)
				return int(n), err == nil
			}
		}
	}
	return 0, false
}

// readTask reads this process's CPU mask and cgroup.
func readTask(ctx context.Context, h slurmHost) (*slurmstate.Task, []string) {
	var errs []string
	t := &slurmstate.Task{PID: h.pid(), UID: h.uid()}
	if name, err := deadline.Do(ctx, "user lookup", h.timeout, func() (string, error) { return h.lookupID(strconv.Itoa(t.UID)) }); err == nil {
		t.User = name
	}
	cpus, err := h.affinity()
	if err != nil {
		errs = append(errs, "sched_getaffinity: "+err.Error())
	}
	t.CPUs = cpus
	if h.pidNS != nil {
		if ns, err := deadline.Do(ctx, "/proc/self/ns/pid", h.timeout, h.pidNS); err == nil {
			t.PIDNamespace = ns
		}
	}
	cg, err := h.readFile(filepath.Join(h.proc, "self", "cgroup"))
	if h.stepCgroup != "" && (err != nil || slurmstate.JobFromCgroup(cg) == "") {
		// A simulated job step's device cgroup (cgroup-gpu): this
		// process runs in no job of its own.
		cg, err = []byte(h.stepCgroup+"\n"), nil
	}
	if err != nil {
		return t, errs
	}
	var devPath string
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			if t.Cgroup == "" {
				t.Cgroup = parts[2]
			}
		case hasController(parts[1], "devices"):
			devPath = parts[2]
			t.Cgroup = parts[2]
		}
	}
	t.CgroupJobID = slurmstate.JobFromCgroup(cg)
	if devPath != "" && ctx.Err() == nil {
		if data, err := h.readFile(filepath.Join(h.sys, "fs", "cgroup", "devices", devPath, "devices.list")); err == nil {
			t.DeviceRules = strings.Split(strings.TrimSpace(string(data)), "\n")
		}
	}
	return t, errs
}

func hasController(list, c string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == c {
			return true
		}
	}
	return false
}

// readJobHost gathers what the job checks need beyond the GPUs: the HCAs
// and interfaces NCCL variables name, the master's address, the CUDA
// runtime the job would load.
func readJobHost(ctx context.Context, env *slurmstate.Env, h slurmHost) *slurmstate.Host {
	host := &slurmstate.Host{IBDevices: listDir(filepath.Join(h.sys, "class", "infiniband")),
		NetInterfaces: listDir(filepath.Join(h.sys, "class", "net"))}
	if env.MasterAddr != "" {
		names := []string{env.MasterAddr}
		if hosts, err := slurmstate.ExpandHostlist(env.JobNodelist); err == nil && len(hosts) > 0 && hosts[0] != env.MasterAddr {
			names = append(names, hosts[0])
		}
		host.Resolved = map[string][]string{}
		for _, name := range names {
			if ctx.Err() != nil {
				break
			}
			rctx, cancel := context.WithTimeout(ctx, h.timeout)
			addrs, err := h.resolve(rctx, name)
			cancel()
			sort.Strings(addrs)
			host.Resolved[name] = append([]string{}, addrs...)
			if err != nil {
				if host.ResolveErrors == nil {
					host.ResolveErrors = map[string]string{}
				}
				host.ResolveErrors[name] = err.Error()
			}
		}
	}
	if env.MasterAddr != "" && h.addrs != nil {
		if a, err := h.addrs(); err == nil {
			sort.Strings(a)
			host.LocalAddresses = a
		}
	}
	host.CUDARuntime = findCUDARuntime(env, h)
	return host
}

// localAddrs is this node's interface addresses, IPv4 and IPv6.
func localAddrs() ([]string, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			out = append(out, n.IP.String())
		}
	}
	return out, nil
}

// dirNames lists the names in dir.
func dirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out, err
}

func listDir(dir string) []string {
	entries, err := os.ReadDir(dir)
	out := []string{}
	if err != nil {
		return out
	}
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

var cudartRe = regexp.MustCompile(`^libcudart\.so\.(\d+)(?:\.(\d+))?`)

// findCUDARuntime names the CUDA runtime a job would load: CUDA_VERSION
// (set by NVIDIA's containers), else $CUDA_HOME/version.json or version.txt,
// else the highest libcudart.so.N[.M] on LD_LIBRARY_PATH or under CUDA_HOME.
func findCUDARuntime(env *slurmstate.Env, h slurmHost) *slurmstate.CUDARuntime {
	if env.CUDAVersion != "" {
		return &slurmstate.CUDARuntime{Version: env.CUDAVersion, From: "CUDA_VERSION"}
	}
	if env.CUDAHome != "" {
		if data, err := h.readFile(filepath.Join(env.CUDAHome, "version.json")); err == nil {
			var v struct {
				CUDA struct {
					Version string `json:"version"`
				} `json:"cuda"`
			}
			if json.Unmarshal(data, &v) == nil && v.CUDA.Version != "" {
				return &slurmstate.CUDARuntime{Version: v.CUDA.Version, From: filepath.Join(env.CUDAHome, "version.json")}
			}
		}
		if data, err := h.readFile(filepath.Join(env.CUDAHome, "version.txt")); err == nil {
			if f := strings.Fields(string(data)); len(f) >= 3 && f[0] == "CUDA" {
				return &slurmstate.CUDARuntime{Version: f[2], From: filepath.Join(env.CUDAHome, "version.txt")}
			}
		}
	}
	var dirs []string
	for _, d := range strings.Split(env.LDLibraryPath, ":") {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if env.CUDAHome != "" {
		dirs = append(dirs, filepath.Join(env.CUDAHome, "lib64"), filepath.Join(env.CUDAHome, "lib"))
	}
	var best *slurmstate.CUDARuntime
	bestMaj, bestMin := -1, -1
	for _, d := range dirs {
		for _, name := range listDir(d) {
			m := cudartRe.FindStringSubmatch(name)
			if m == nil {
				continue
			}
			maj, _ := strconv.Atoi(m[1])
			mnr := -1
			if m[2] != "" {
				mnr, _ = strconv.Atoi(m[2])
			}
			if maj > bestMaj || maj == bestMaj && mnr > bestMin {
				bestMaj, bestMin = maj, mnr
				v := m[1]
				if m[2] != "" {
					v += "." + m[2]
				}
				best = &slurmstate.CUDARuntime{Version: v, From: filepath.Join(d, name)}
			}
		}
	}
	return best
}
