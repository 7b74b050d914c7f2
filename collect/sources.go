package collect

import (
	"io"
	"io/fs"
	"os"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Sources are what the collectors read. cmd builds them once — Real for this
// node, or the simulation package for --simulate — and hands them in; no
// collector knows which it got, and a simulated run writes nothing.
type Sources struct {
	// NVML is the library to read. nil: load libnvidia-ml.so.1 (the real
	// driver); the mocks of go-nvml implement the same interface.
	NVML gonvml.Interface
	// Sys and Proc are the sysfs and procfs trees, rooted where /sys and /proc
	// are (names inside are "bus/pci/devices", "driver/nvidia/version"). Sys
	// implements fs.ReadLinkFS: sysfs is made of symlinks.
	Sys, Proc fs.FS
	// SysRoot and ProcRoot are what Sys and Proc stand for, recorded in the
	// state ("/sys", or "simulated:/sys").
	SysRoot, ProcRoot string
	// KernelLog opens the kernel log (XID lines), /dev/kmsg on a real node.
	KernelLog func() (io.ReadCloser, error)
	// Environ is the job step's environment (os.Environ() on a real node).
	Environ []string
	// Host is the node's name as reports show it.
	Host string
	// Owner names a process's user and executable from the process table.
	Owner func(pid uint32) (user, exe string, err error)
	// Simulated is the --simulate spec the sources were built from; empty
	// for the real node.
	Simulated string
}

// RealSources are this node's own: the driver, /sys, /proc, /dev/kmsg and this
// process's environment. Roots other than / serve captured trees (--path.sysfs).
func RealSources(sysRoot, procRoot string) Sources {
	if sysRoot == "" {
		sysRoot = "/sys"
	}
	if procRoot == "" {
		procRoot = "/proc"
	}
	host, _ := os.Hostname()
	return Sources{
		Sys: os.DirFS(sysRoot), Proc: os.DirFS(procRoot),
		SysRoot: sysRoot, ProcRoot: procRoot,
		Environ: os.Environ(),
		Host:    host,
	}
}
