package collect

import (
	"context"
	"io"
	"io/fs"

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
	// ForeignGPUs says the GPUs OpenNVML reports are not this machine's
	// devices (a simulation): their /dev files and processes are not looked
	// up here, where they would find some other device or process.
	ForeignGPUs bool
	// RootLabel names Root in the state ("simulated"); empty records the
	// paths as they are.
	RootLabel string
	// Simulated is the --simulate spec the sources stand for, recorded in
	// the state so every report says so; "" for this node.
	Simulated string
}
