package collect

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/state"
)

// maxEnviron bounds the /proc/PID/environ read to tell a process's
// container: the markers are ordinary variables, and a process's
// environment is its owner's to fill (up to ARG_MAX); what lies beyond is
// not read.
const maxEnviron = 256 << 10

// maxCgroupRead bounds /proc/PID/cgroup, as the job's read does.
const maxCgroupRead = 16384

// ProcessContainer says which container runtime holds a process, and the
// marker: the runtime's directory in its cgroup path (the kernel writes
// /proc/PID/cgroup; the runtime, not the process, chose the cgroup), else
// /proc/PID/root/run/.containerenv (Podman's file, in the process's own
// root), else a runtime's variable in its environment (Enroot/Pyxis and
// Apptainer make no cgroup of their own: the process stays in the Slurm
// step's). The innermost runtime wins, in state.ContainerRuntimes' order.
// cgroup and environ are the files' bytes (nil: unread); containerenv says
// the file exists. The environment is untrusted: only variable names are
// matched, and only names are reported.
func ProcessContainer(cgroup, environ []byte, containerenv bool) (runtime, from string) {
	var ev []state.ContainerEvidence
	if rt, line := containerFromCgroup(cgroup); rt != "" {
		ev = append(ev, state.ContainerEvidence{Runtime: rt, Seen: "cgroup " + line})
	}
	if containerenv {
		ev = append(ev, state.ContainerEvidence{Runtime: "podman", Seen: "root/run/.containerenv"})
	}
	if rt, name := containerFromEnviron(environ); rt != "" {
		ev = append(ev, state.ContainerEvidence{Runtime: rt, Seen: "environ " + name})
	}
	rt := pickRuntime(ev)
	for _, e := range ev {
		if e.Runtime == rt {
			return rt, e.Seen
		}
	}
	return "", ""
}

// containerFromCgroup finds a runtime's cgroup in a /proc/PID/cgroup file:
// Kubernetes' kubepods slices (the kubelet's cgroup driver, systemd or
// cgroupfs), Podman's libpod-<id>.scope (systemd) or libpod-<id>
// (cgroupfs, under libpod_parent), Docker's docker-<id>.scope (systemd) or
// /docker/<id> (cgroupfs). The path is returned cut to 160 bytes.
func containerFromCgroup(data []byte) (runtime, path string) {
	if len(data) > maxCgroupRead {
		data = data[:maxCgroupRead]
	}
	best := ""
	var bestPath string
	for _, line := range strings.Split(string(data), "\n") {
		_, _, p := cutCgroupLine(line)
		if !strings.HasPrefix(p, "/") {
			continue
		}
		rt := ""
		c := strings.Split(p, "/")
		for i, seg := range c {
			switch {
			case strings.HasPrefix(seg, "kubepods"):
				rt = "kubernetes"
			case rt == "" && strings.HasPrefix(seg, "libpod-") && !strings.HasPrefix(seg, "libpod-conmon-") && hexID(strings.TrimSuffix(strings.TrimPrefix(seg, "libpod-"), ".scope")):
				rt = "podman"
			case rt == "" && strings.HasPrefix(seg, "docker-") && strings.HasSuffix(seg, ".scope") && hexID(strings.TrimSuffix(strings.TrimPrefix(seg, "docker-"), ".scope")):
				rt = "docker"
			case rt == "" && seg == "docker" && i+1 < len(c) && hexID(c[i+1]):
				rt = "docker"
			}
		}
		if rt != "" && (best == "" || pickRuntime([]state.ContainerEvidence{{Runtime: rt}, {Runtime: best}}) == rt) {
			best, bestPath = rt, p
		}
	}
	if len(bestPath) > 160 {
		bestPath = bestPath[:160] + "…"
	}
	return best, bestPath
}

// hexID is a container ID as the engines write it: 64 lower-case hex
// digits (a shorter prefix is accepted down to 12).
func hexID(s string) bool {
	if len(s) < 12 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// containerFromEnviron matches the runtime variables detectContainer
// knows in a NUL-separated environment; a name that is not a plain
// variable name ([A-Za-z_][A-Za-z0-9_]*, at most 128 bytes) is skipped.
func containerFromEnviron(data []byte) (runtime, name string) {
	if len(data) > maxEnviron {
		data = data[:maxEnviron]
	}
	var ev []state.ContainerEvidence
	for _, kv := range bytes.Split(data, []byte{0}) {
		k, v, _ := bytes.Cut(kv, []byte{'='})
		key := string(k)
		if !envName(key) {
			continue
		}
		rt := ""
		switch {
		case strings.HasPrefix(key, "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_"), strings.HasPrefix(key, "ENROOT_"), strings.HasPrefix(key, "PYXIS_"):
			rt = "enroot"
		case key == "APPTAINER_CONTAINER", key == "SINGULARITY_CONTAINER", key == "APPTAINER_NAME", key == "SINGULARITY_NAME":
			rt = "apptainer"
		case key == "KUBERNETES_SERVICE_HOST":
			rt = "kubernetes"
		case key == "container" && string(v) == "podman":
			rt, key = "podman", "container=podman"
		}
		if rt != "" {
			ev = append(ev, state.ContainerEvidence{Runtime: rt, Seen: key})
		}
	}
	rt := pickRuntime(ev)
	for _, e := range ev {
		if e.Runtime == rt {
			return rt, e.Seen
		}
	}
	return "", ""
}

func envName(k string) bool {
	if k == "" || len(k) > 128 || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// hostProcessContainers tells each PID's container from its /proc files,
// each read under the same guards as its owner and job.
func hostProcessContainers(o Options) func(context.Context, int32) (string, string) {
	t := &procTable{root: o.procfs(), reg: &deadline.Default, timeout: lookupTimeout}
	return t.container
}

func (t *procTable) container(ctx context.Context, pid int32) (string, string) {
	dir := filepath.Join(t.root, strconv.Itoa(int(pid)))
	read := func(name string, limit int) []byte {
		p := filepath.Join(dir, name)
		data, err := deadline.DoIn(t.reg, ctx, p, t.timeout, func() ([]byte, error) {
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return io.ReadAll(io.LimitReader(f, int64(limit)))
		})
		if err != nil {
			return nil
		}
		return data
	}
	cg := read("cgroup", maxCgroupRead)
	env := read("environ", maxEnviron)
	ce := filepath.Join(dir, "root/run/.containerenv")
	_, err := deadline.DoIn(t.reg, ctx, ce, t.timeout, func() (fs.FileInfo, error) { return os.Lstat(ce) })
	return ProcessContainer(cg, env, err == nil)
}

// describeContainers records the container of every process NVML lists.
// NVML reports host PIDs (the driver's view), so the files read are the
// host's /proc entries of those PIDs, whatever namespace the process is in.
func describeContainers(ctx context.Context, n *state.Node, of func(context.Context, int32) (string, string)) {
	if n.NVML == nil {
		return
	}
	for gi := range n.NVML.GPUs {
		for pi := range n.NVML.GPUs[gi].Processes {
			p := &n.NVML.GPUs[gi].Processes[pi]
			p.Container, p.ContainerFrom = of(ctx, int32(p.PID))
		}
	}
}

// jobContainers tells the container of each of the job's GPU processes.
func jobContainers(ctx context.Context, p *state.JobPerf, of func(context.Context, int32) (string, string)) []state.ProcessContainer {
	var pids []uint32
	for _, g := range p.GPUs {
		pids = append(pids, g.JobPIDs...)
	}
	slices.Sort(pids)
	var out []state.ProcessContainer
	for _, pid := range slices.Compact(pids) {
		if rt, from := of(ctx, int32(pid)); rt != "" {
			out = append(out, state.ProcessContainer{PID: pid, Runtime: rt, From: from})
		}
	}
	return out
}
