package collect

import (
	"context"
	"io"
	"io/fs"
	"net"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Sources are what the collectors read. The zero value is this node: the
// driver, the files under --path.sysfs/--path.procfs, /dev/kmsg and the
// process table. Simulation (package simnode) fills them at the edge with
// go-nvml's mocks and an in-memory tree; no collector knows which it got,
// and a simulated run writes nothing.
type Sources struct {
	// OpenNVML opens the library for one collection; nil opens
	// libnvidia-ml.so.1. (A mock records every call, so a long-lived one
	// would grow: the simulation hands out a fresh one each time.)
	OpenNVML func() (gonvml.Interface, error)
	// Root is the machine's filesystem rooted at "/" (see rootfs); nil is
	// this machine's own.
	Root fs.FS
	// KernelLog opens the kernel log (kmsg records or dmesg lines); nil
	// reads /dev/kmsg. KernelLogName names it in the state.
	KernelLog     func() (io.ReadCloser, error)
	KernelLogName string
	// KernelLogForeign says the log is not this boot's (a saved file): its
	// records' times since boot cannot be dated from this machine's uptime.
	KernelLogForeign bool
	// Process names the owner, executable and command line of a PID; nil
	// reads /proc and asks NSS for the user name.
	Process func(ctx context.Context, pid int32) (user, exe, cmdline string)
	// ProcessJob names the Slurm job whose cgroup holds a PID ("" when
	// none); nil reads /proc/PID/cgroup.
	ProcessJob func(ctx context.Context, pid int32) string
	// ProcessContainer names the container runtime holding a PID and its
	// marker ("" when none); nil reads /proc/PID/cgroup, environ and
	// root/run/.containerenv (collect.ProcessContainer).
	ProcessContainer func(ctx context.Context, pid int32) (runtime, from string)
	// PIDNamespace names this process's PID namespace ("pid:[4026531836]");
	// nil reads /proc/self/ns/pid under --path.procfs. A simulated node's
	// processes are in its own (the host's) namespace, whatever this
	// machine's is.
	PIDNamespace func() (string, error)
	// GPUDeviceFiles lists the device files the driver made for this
	// machine's GPUs, in device order (/dev/nvidia0, /dev/nvidia1, ...); nil
	// globs /dev/nvidia[0-9]*. The Slurm collector adds them to the files
	// gres.conf names and looks at each.
	GPUDeviceFiles func() []string
	// StepCgroup is a /proc/self/cgroup line of the Slurm job step a
	// simulated node's device cgroup belongs to (cgroup-gpu faults: the
	// step holds some GPUs, and NVML lists those alone). The Slurm collector
	// takes it as this process's cgroup where this process's own names no
	// Slurm job; a real step (scripts/slurm-2node-e2e.sh) keeps its own.
	// "" for this node.
	StepCgroup string
	// ProcessFile reads one file of a process's /proc directory ("status",
	// "environ"); nil reads it under --path.procfs. The Slurm collector ties
	// the processes on the GPUs to their jobs with it.
	ProcessFile func(pid int32, name string) ([]byte, error)
	// RASDial connects to NCCL's RAS port of a job (a loopback host:port
	// ncclras.ValidateAddr accepted); nil dials TCP. Simulation serves a
	// canned report through it.
	RASDial func(ctx context.Context, addr string) (net.Conn, error)
	// PySpy dumps a rank's Python stacks for `job --hang` (py-spy's dump
	// text); nil runs py-spy from PySpyDirs when it is installed there.
	// Simulation answers ErrPySpyNotInstalled: its PIDs are not this
	// machine's.
	PySpy PySpyFunc
	// ContainerView is the step's own view of its container for the
	// container collector: /proc/self, /proc/1/cgroup, /proc/meminfo, /dev,
	// the runtime's marker files and the image's library directories. nil is
	// Root. The host's side (sysfs, the kernel module's version) is always
	// read from Root. cmd sets it to this machine under --simulate with
	// real-container, so a real container is judged against the simulated
	// node (scripts/container-e2e.sh).
	ContainerView fs.FS
	// RootLabel names Root in the state ("simulated"); empty records the
	// paths as they are.
	RootLabel string
	// Simulated is the --simulate spec the sources stand for, recorded in
	// the state so every report says so; "" for this node.
	Simulated string
}
