// Package simnode builds the sources of a simulated node for --simulate: the
// NVML library is go-nvml's own mock server for the model, the filesystem is
// an in-memory sysfs/procfs tree, the kernel log holds the XID lines the
// faults ask for, and the process table is the simulation's own. The
// collectors read them exactly as they read a real node; nothing is written.
package node

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/internal/busid"
	jobsim "github.com/gpuprobe/gpuprobe/sim/job"
	nvmlsim "github.com/gpuprobe/gpuprobe/sim/nvml"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	toposim "github.com/gpuprobe/gpuprobe/sim/topo"
)

func init() {
	simulate.Register(simulate.FaultDoc{Name: "xid", Arg: "CODE@GPU",
		Effect: "the kernel log holds XID CODE for the GPU (e.g. xid=79@2: fallen off the bus on GPU 2)"})
	simulate.Register(simulate.FaultDoc{Name: RealContainer,
		Effect: "the container facts are this machine's own (the process's /proc/self, /dev/shm, /dev/infiniband, the runtime's marker files, the image's libraries): a real container judged against the simulated node (scripts/container-e2e.sh)"})
}

// RealContainer is the spec item that reads the container's side from this
// machine; cmd wires it (the simulation itself reads nothing real).
const RealContainer = "real-container"

// Sources returns the sources of the node spec describes. It builds
// everything once and checks every fault, so a bad spec is an error here,
// before any collection.
func Sources(spec *simulate.Spec) (collect.Sources, error) {
	sys, err := nvmlsim.New(spec)
	if err != nil {
		return collect.Sources{}, err
	}
	root, err := toposim.FS(spec)
	if err != nil {
		return collect.Sources{}, err
	}
	// A job scenario's cgroup and /proc, over the node's tree.
	if root, err = jobsim.FS(root, spec, nil); err != nil {
		return collect.Sources{}, err
	}
	var bus []string
	for _, d := range sys.Devices {
		bus = append(bus, d.PciBusID)
	}
	log, err := KernelLog(spec, bus)
	if err != nil {
		return collect.Sources{}, err
	}
	owners := sys.Owners
	job, _ := spec.Job()
	return collect.Sources{
		// A fresh mock per collection: go-nvml's mocks record every call.
		OpenNVML: func() (gonvml.Interface, error) {
			s, err := nvmlsim.New(spec)
			if err != nil {
				return nil, err
			}
			return s.Lib, nil
		},
		Root:          root,
		KernelLog:     func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(log)), nil },
		KernelLogName: "simulated",
		Process: func(_ context.Context, pid int32) (string, string, string) {
			o := owners[uint32(pid)]
			return o.User, exe(o.Command), o.Command
		},
		ProcessJob: func(_ context.Context, pid int32) string {
			if job != nil && slices.Contains(simulate.SimJob.RankPIDs, pid) {
				return simulate.SimJob.ID
			}
			return ""
		},
		// The simulated processes run in no container (and this machine's
		// /proc is not theirs).
		ProcessContainer: func(context.Context, int32) (string, string) { return "", "" },
		// The host's (initial) namespace: slurmstate.InitPIDNamespace.
		PIDNamespace: func() (string, error) { return "pid:[4026531836]", nil },
		// The simulated GPUs have no device files on this machine.
		GPUDeviceFiles: func() []string { return nil },
		StepCgroup:     stepCgroup(spec),
		ProcessFile: func(pid int32, name string) ([]byte, error) {
			return processFile(root, owners, pid, name)
		},
		RASDial: jobsim.RASDial(spec),
		// The simulated ranks are not this machine's processes: py-spy is
		// never run on their PIDs.
		PySpy: func(context.Context, int32) ([]byte, error) {
			return nil, fmt.Errorf("%w (simulated node)", collect.ErrPySpyNotInstalled)
		},
		RootLabel: "simulated",
		Simulated: spec.Raw,
	}, nil
}

// stepCgroup is the cgroup of the job step a cgroup-gpu fault's device
// cgroup belongs to (slurmd's cgroup/v2 layout, as the job scenarios'), ""
// without one: a real step's device cgroup hides the other jobs' GPUs from
// NVML, and gpuprobe run in it (srun --overlap, or an ssh session that
// pam_slurm_adopt put there) is in the job's cgroup, so gpu.count does not
// take the GPUs it hides for ones the driver failed to bring up.
func stepCgroup(spec *simulate.Spec) string {
	if len(spec.Has(nvmlsim.CgroupFault)) == 0 {
		return ""
	}
	return "0::" + jobsim.JobCgroup + "/step_0/user/task_0"
}

// processFile reads /proc/PID/NAME of the simulation: the job's ranks from
// the tree, the other processes on the GPUs (owners, such as a leftover) a
// status with their owner's uid; any other PID has exited.
func processFile(root fs.FS, owners map[uint32]nvmlsim.Owner, pid int32, name string) ([]byte, error) {
	p := path.Join("proc", strconv.Itoa(int(pid)), name)
	if root != nil {
		if data, err := fs.ReadFile(root, p); err == nil {
			return data, nil
		}
	}
	o, ok := owners[uint32(pid)]
	if !ok || name != "status" {
		return nil, &fs.PathError{Op: "open", Path: "/" + p, Err: fs.ErrNotExist}
	}
	uid := "1002" // a user of the simulated cluster other than the job's
	if o.User == simulate.SimJob.User {
		uid = simulate.SimJob.UID
	}
	return fmt.Appendf(nil, "Name:\t%s\nUid:\t%s\t%s\t%s\t%s\n", exe(o.Command), uid, uid, uid, uid), nil
}

func exe(cmdline string) string {
	f := strings.Fields(cmdline)
	if len(f) == 0 {
		return ""
	}
	return filepath.Base(f[0])
}

// KernelLog writes the kmsg records of the spec's xid faults in the driver's
// own format ("NVRM: Xid (PCI:0000:4c:00): 79, pid=..., name=..., ..."), an
// hour before now on a node up for a day (the tree's /proc/uptime), so they
// go through the real parser. A record's sequence number is its own, as the
// kernel's are: a hash of its place and content, so the daemon, which
// re-reads the log every cycle, sees the same fault as the same record (and
// counts it once, as it does re-reads of /dev/kmsg), and a fault
// --simulate-file adds as a new one.
func KernelLog(spec *simulate.Spec, busIDs []string) ([]byte, error) {
	var b bytes.Buffer
	for i, f := range spec.Has("xid") {
		code, _, _ := strings.Cut(f.Value, "@")
		c, err := strconv.Atoi(code)
		if err != nil || c <= 0 {
			return nil, fmt.Errorf("fault xid=%s: want CODE@GPU, e.g. xid=79@2", f.Value)
		}
		gpu, err := f.GPU(len(busIDs))
		if err != nil {
			return nil, err
		}
		id, err := busid.Parse(busIDs[gpu])
		if err != nil {
			return nil, fmt.Errorf("fault xid=%s: %w", f.Value, err)
		}
		bus := id.Slot()
		usec := int64(23*time.Hour/time.Microsecond) + int64(i)
		h := fnv.New32a()
		fmt.Fprintf(h, "%d:%d@%s", i, c, bus)
		seq := 5000 + uint64(h.Sum32())
		fmt.Fprintf(&b, "3,%d,%d,-;NVRM: Xid (PCI:%s): %d, pid=%d, name=python, simulated by gpuprobe --simulate\n", seq, usec, bus, c, 31337+i)
	}
	return b.Bytes(), nil
}
