package check

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// The container checks judge a job step that runs inside a container, from
// the container's own view (collect/container.go): what the runtime gave the
// step that NCCL and CUDA need. They are job checks: the facts come from
// files and variables the user controls, so they never drain a node, and
// outside a container they judge nothing. Sources: docs/checks.md,
// "Containers".
func init() {
	for _, c := range []Check{
		{ID: "container.shm", Title: "/dev/shm in the container is large enough for NCCL's shared-memory segments", Run: checkContainerShm},
		{ID: "container.memlock", Title: "RLIMIT_MEMLOCK is unlimited in a container on an InfiniBand host", Run: checkContainerMemlock},
		{ID: "container.rdma_devices", Title: "the host's InfiniBand devices are inside the container (/dev/infiniband/uverbs*)", Run: checkContainerRDMA},
		{ID: "container.visible_devices", Title: "NVIDIA_VISIBLE_DEVICES agrees with Slurm's GPUs and CUDA_VISIBLE_DEVICES", Run: checkContainerVisible},
		{ID: "container.driver_libs", Title: "the container's libnvidia-ml matches the host's kernel module", Run: checkContainerDriverLibs},
		{ID: "container.cuda_compat", Title: "the image's CUDA runtime runs on the host's driver, directly or through forward compatibility", Run: checkContainerCUDACompat},
		{ID: "container.net_plugin", Title: "the NCCL network plugin the fabric needs (aws-ofi-nccl for EFA, the SHARP plugin for CollNet) is on the container's library path", Run: checkContainerNetPlugin},
	} {
		c.Scope = JobScope
		register(c)
	}
}

// containerSkip is the precondition of every container check: a job step,
// and a container seen.
func containerSkip(n *state.Node, cfg *Config) (*state.Container, Result, bool) {
	if r, skip := jobSkip(n, cfg); skip {
		return nil, r, true
	}
	c := n.Container
	if c == nil {
		return nil, Result{Status: Skip, Summary: "container facts not collected"}, true
	}
	if c.Runtime == "" {
		return nil, Result{Status: Skip, Summary: "not in a container (no runtime's marker seen)"}, true
	}
	return c, Result{}, false
}

// runtimeName is how a finding names the runtime, with its evidence.
func runtimeName(c *state.Container) string {
	name := map[string]string{"enroot": "Enroot/Pyxis", "apptainer": "Apptainer", "kubernetes": "Kubernetes", "podman": "Podman", "docker": "Docker"}[c.Runtime]
	if name == "" {
		name = c.Runtime
	}
	for _, e := range c.Evidence {
		if e.Runtime == c.Runtime {
			return name + " container (" + e.Seen + ")"
		}
	}
	return name + " container"
}

// shm thresholds: Docker's and Podman's default --shm-size is 64 MB, where
// NCCL fails ("failed to extend /dev/shm/nccl-... to 4194660 bytes"); the
// NCCL troubleshooting guide's example is --shm-size=1g.
const (
	shmFailBytes = 64 << 20
	shmWarnBytes = 1 << 30
)

var shmFix = map[string]string{
	"docker":     "start the container with docker run --shm-size=1g (or --ipc=host)",
	"podman":     "start the container with podman run --shm-size=1g (or --ipc=host)",
	"kubernetes": "mount an emptyDir volume with medium: Memory (and a sizeLimit of 1Gi or more) at /dev/shm in the pod spec",
	"enroot":     "Enroot binds the node's own /dev/shm (conf/mounts/10-system.fstab): ask the admins to enlarge it, or set ENROOT_UNSHARE_IPC=y for the container (conf/hooks/10-devices.sh then mounts a fresh tmpfs, limited to half of RAM)",
	"apptainer":  "Apptainer shares the host's /dev/shm: ask the admins to enlarge the node's /dev/shm, or bind a larger tmpfs with --bind",
}

func checkContainerShm(n *state.Node, cfg *Config) Result {
	c, r, skip := containerSkip(n, cfg)
	if skip {
		return r
	}
	if c.Shm == nil {
		return Result{Status: Skip, Summary: fmt.Sprintf("no mount at /dev/shm in this %s: its size is its parent file system's", runtimeName(c))}
	}
	size, from := c.Shm.SizeBytes, "size="+mib(c.Shm.SizeBytes)
	if size == 0 {
		if c.Shm.FSType != "tmpfs" || c.MemTotalBytes == 0 {
			return Result{Status: Skip, Summary: fmt.Sprintf("/dev/shm is %s %s with no size= option: its size is unknown", c.Shm.FSType, c.Shm.Source)}
		}
		size, from = c.MemTotalBytes/2, "tmpfs default, half of MemTotal "+mib(c.MemTotalBytes)
	}
	what := fmt.Sprintf("/dev/shm in this %s is %s (%s)", runtimeName(c), mib(size), from)
	fix := shmFix[c.Runtime]
	switch {
	case size <= shmFailBytes:
		return Result{Status: Fail, Summary: what + ": NCCL's shared-memory transport and proxy need segments of 4 MiB and more per peer; NCCL fails to initialize (\"failed to extend /dev/shm/nccl-...\", unhandled system error)", Remedy: fix}
	case size < shmWarnBytes:
		return Result{Status: Warn, Summary: what + ": below the 1 GiB NCCL's troubleshooting guide asks for; a step with many local ranks can run out", Remedy: fix}
	}
	return Result{Status: Pass, Summary: what}
}

func mib(b uint64) string {
	if b >= 1<<30 && b%(1<<30) == 0 {
		return strconv.FormatUint(b>>30, 10) + " GiB"
	}
	return strconv.FormatUint(b>>20, 10) + " MiB"
}

var memlockFix = map[string]string{
	"docker":     "start the container with docker run --ulimit memlock=-1 (NCCL's guide: --shm-size=1g --ulimit memlock=-1)",
	"podman":     "start the container with podman run --ulimit memlock=-1",
	"kubernetes": "raise the container runtime's default (LimitMEMLOCK=infinity in containerd's or dockerd's systemd unit): a pod spec cannot set rlimits",
	"enroot":     "Enroot keeps the step's limits: have Slurm propagate an unlimited one (PropagateResourceLimitsExcept=MEMLOCK in slurm.conf and LimitMEMLOCK=infinity in slurmd's unit), or ulimit -l unlimited before srun",
	"apptainer":  "Apptainer keeps the step's limits: have Slurm propagate an unlimited one (PropagateResourceLimitsExcept=MEMLOCK in slurm.conf and LimitMEMLOCK=infinity in slurmd's unit), or ulimit -l unlimited before srun",
}

// hostIB is the host's RDMA devices as the container's sysfs shows them,
// else as the Slurm collector found them.
func hostIB(n *state.Node, c *state.Container) []string {
	if len(c.IBDevices) > 0 {
		return c.IBDevices
	}
	if n.Slurm != nil && n.Slurm.Host != nil {
		return n.Slurm.Host.IBDevices
	}
	return nil
}

func checkContainerMemlock(n *state.Node, cfg *Config) Result {
	c, r, skip := containerSkip(n, cfg)
	if skip {
		return r
	}
	if c.Memlock == nil {
		return Result{Status: Skip, Summary: "RLIMIT_MEMLOCK not read (/proc/self/limits)"}
	}
	ib := hostIB(n, c)
	if c.Memlock.Soft == nil {
		return Result{Status: Pass, Summary: fmt.Sprintf("RLIMIT_MEMLOCK is unlimited in this %s", runtimeName(c))}
	}
	lim := fmt.Sprintf("RLIMIT_MEMLOCK is %s (soft) / %s (hard) in this %s", limitText(c.Memlock.Soft), limitText(c.Memlock.Hard), runtimeName(c))
	if len(ib) == 0 {
		return Result{Status: Pass, Summary: lim + "; no InfiniBand device on this host, so no verbs memory registration needs it"}
	}
	return Result{Status: Warn, Summary: fmt.Sprintf("%s while the host has InfiniBand (%s): ibv_reg_mr cannot pin NCCL's buffers beyond it, and NCCL falls back to sockets or aborts", lim, strings.Join(ib, ", ")),
		Remedy: memlockFix[c.Runtime]}
}

func limitText(v *uint64) string {
	if v == nil {
		return "unlimited"
	}
	if *v >= 1<<20 {
		return mib(*v)
	}
	return strconv.FormatUint(*v>>10, 10) + " KiB"
}

var rdmaFix = map[string]string{
	"enroot":     "set MELLANOX_VISIBLE_DEVICES=all for the container (Enroot's 99-mellanox.sh hook mounts /dev/infiniband/uverbs* and rdma_cm only then; put it in an environ.d file or the image's /etc/environment), or unset ENROOT_RESTRICT_DEV",
	"docker":     "pass the devices: docker run --device=/dev/infiniband/uverbsN (one per HCA) --device=/dev/infiniband/rdma_cm --ulimit memlock=-1",
	"podman":     "pass the devices: podman run --device=/dev/infiniband/uverbsN (one per HCA) --device=/dev/infiniband/rdma_cm --ulimit memlock=-1",
	"kubernetes": "request the HCAs through an RDMA device plugin resource in the pod spec (the device plugin mounts /dev/infiniband)",
	"apptainer":  "Apptainer binds the host's /dev unless --contain/--containall is given: drop it, or add --bind /dev/infiniband",
}

func checkContainerRDMA(n *state.Node, cfg *Config) Result {
	c, r, skip := containerSkip(n, cfg)
	if skip {
		return r
	}
	ib := hostIB(n, c)
	if len(ib) == 0 {
		return Result{Status: Skip, Summary: "no InfiniBand device on this host (/sys/class/infiniband is empty)"}
	}
	if !c.DevInfinibandRead {
		return Result{Status: Error, Summary: "/dev/infiniband could not be listed"}
	}
	if len(c.UverbsDevices) == 0 {
		return Result{Status: Fail, Summary: fmt.Sprintf("the host has InfiniBand (%s) but this %s has no /dev/infiniband/uverbs*: NCCL finds no IB device and silently falls back to TCP sockets (NET/Socket)", strings.Join(ib, ", "), runtimeName(c)),
			Remedy: rdmaFix[c.Runtime]}
	}
	return Result{Status: Pass, Summary: fmt.Sprintf("%d verbs device(s) inside the container for the host's %s", len(c.UverbsDevices), strings.Join(ib, ", "))}
}

// nvidiaVisible reads NVIDIA_VISIBLE_DEVICES as the NVIDIA Container
// Toolkit does: "all", "none" (driver libraries, no GPU), "void" or empty
// (the hook does nothing), else a comma list of indexes or UUIDs.
func nvidiaVisible(v string) (mode string, indexes []int, count int) {
	s := strings.TrimSpace(v)
	switch s {
	case "all", "none", "void":
		return s, nil, 0
	case "":
		return "void", nil, 0
	}
	allIdx := true
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		count++
		i, err := strconv.Atoi(e)
		if err != nil || i < 0 {
			allIdx = false
			continue
		}
		indexes = append(indexes, i)
	}
	if !allIdx {
		indexes = nil
	}
	return "list", indexes, count
}

func checkContainerVisible(n *state.Node, cfg *Config) Result {
	c, r, skip := containerSkip(n, cfg)
	if skip {
		return r
	}
	if c.NVIDIAVisibleDevices == nil {
		return Result{Status: Skip, Summary: "NVIDIA_VISIBLE_DEVICES is not set: the runtime's own device options decide (job.visible_devices judges CUDA_VISIBLE_DEVICES)"}
	}
	nvd := *c.NVIDIAVisibleDevices
	env := n.Slurm.Env
	alloc, allocFrom := env.AllocatedGPUs()
	mode, idx, count := nvidiaVisible(nvd)
	v := verdict{id: "container.visible_devices"}
	const fixNVD = "give the container exactly the step's GPUs: NVIDIA_VISIBLE_DEVICES=$SLURM_STEP_GPUS (or the runtime's --gpus/--device with the same list)"
	switch mode {
	case "void", "none":
		if len(alloc) > 0 {
			what := "the runtime's NVIDIA hook does nothing"
			if mode == "none" {
				what = "the runtime's NVIDIA hook mounts the driver libraries but no GPU"
			}
			v.add(Fail, nil, fixNVD, fmt.Sprintf("NVIDIA_VISIBLE_DEVICES=%q: %s, but Slurm allocated GPU %s (%s)", nvd, what, listOr(alloc), allocFrom))
		}
	case "all":
	case "list":
		switch {
		case idx != nil && len(alloc) > 0 && !sameInts(idx, alloc):
			v.add(Fail, nil, fixNVD, fmt.Sprintf("NVIDIA_VISIBLE_DEVICES=%s gives the container GPU %s, but Slurm allocated GPU %s (%s)", nvd, joinInts(idx), listOr(alloc), allocFrom))
		case idx == nil && len(alloc) > 0 && count != len(alloc):
			v.add(Fail, nil, fixNVD, fmt.Sprintf("NVIDIA_VISIBLE_DEVICES=%s names %d GPU(s), but Slurm allocated %d (%s=%s)", nvd, count, len(alloc), allocFrom, listOr(alloc)))
		}
		// Docker, Podman and Kubernetes give the container only the listed
		// GPUs, numbered from 0 inside: CUDA_VISIBLE_DEVICES must count
		// from 0 too. (Enroot binds the host's /dev and Apptainer uses
		// --nv, so the numbering there is not the list's.)
		cvd := env.CUDAVisible
		if (c.Runtime == "docker" || c.Runtime == "podman" || c.Runtime == "kubernetes") && cvd != nil && cvd.Set {
			for _, e := range cvd.Entries {
				if e.Kind == slurmstate.RefIndex && e.Index >= count {
					v.add(Fail, nil, fmt.Sprintf("inside the container number the GPUs from 0: CUDA_VISIBLE_DEVICES=%s, or unset it", joinInts(seq(count))),
						fmt.Sprintf("CUDA_VISIBLE_DEVICES=%s names GPU %d, but NVIDIA_VISIBLE_DEVICES=%s gives this %s %d GPU(s), numbered 0-%d inside: CUDA finds no such device", cvd.Raw, e.Index, nvd, runtimeName(c), count, count-1))
					break
				}
			}
		}
	}
	pass := fmt.Sprintf("NVIDIA_VISIBLE_DEVICES=%s agrees with Slurm's GPUs (%s) and CUDA_VISIBLE_DEVICES", nvd, listOr(alloc))
	if env.RayWorker() {
		// Ray sets each worker's CUDA_VISIBLE_DEVICES to the GPUs it
		// assigned: a subset, judged like any other list above.
		pass += " (a Ray worker's: Ray's subset of the container's GPUs)"
	}
	return v.result(pass)
}

func sameInts(a, b []int) bool {
	seen := map[int]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, k := range seen {
		if k != 0 {
			return false
		}
	}
	return true
}

// joinInts writes a list as the visible-device variables take it: commas,
// no ranges.
func joinInts(l []int) string {
	s := make([]string, len(l))
	for i, v := range l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

var driverLibsFix = map[string]string{
	"docker":     "do not install driver packages (libnvidia-compute, nvidia-utils) in the image: let the NVIDIA Container Toolkit inject the host's libraries (docker run --gpus, or --device nvidia.com/gpu=all with CDI)",
	"podman":     "do not install driver packages in the image: let the NVIDIA Container Toolkit inject the host's libraries (podman run --device nvidia.com/gpu=all with CDI)",
	"kubernetes": "do not install driver packages in the image: the NVIDIA device plugin and Container Toolkit inject the host's libraries",
	"enroot":     "do not install driver packages in the image: Enroot's 98-nvidia.sh hook injects the host's libraries when NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES=compute,utility are set",
	"apptainer":  "do not install driver packages in the image: apptainer exec --nv binds the host's libraries",
}

func checkContainerDriverLibs(n *state.Node, cfg *Config) Result {
	c, r, skip := containerSkip(n, cfg)
	if skip {
		return r
	}
	mod, from := c.ModuleVersion, c.ModuleVersionFrom
	if mod == "" && n.Kernel != nil && n.Kernel.ModuleVersion != "" {
		mod, from = n.Kernel.ModuleVersion, "/proc/driver/nvidia/version"
	}
	if mod == "" {
		return Result{Status: Skip, Summary: "the nvidia kernel module's version is unknown (no /sys/module/nvidia/version, no /proc/driver/nvidia/version)"}
	}
	if len(c.NVMLLibraries) == 0 {
		return Result{Status: Skip, Summary: "no libnvidia-ml.so.<version> in the container's library directories"}
	}
	v := verdict{id: "container.driver_libs"}
	fix := driverLibsFix[c.Runtime] + "; after a driver upgrade on the host, reload the module (reboot) so it matches the new libraries"
	for i, l := range c.NVMLLibraries {
		if l.Version == mod {
			continue
		}
		if i == 0 {
			v.add(Fail, nil, fix, fmt.Sprintf("%s (NVML %s) is the first libnvidia-ml on the loader's path in this %s, but the kernel module is %s (%s): NVML fails with \"Driver/library version mismatch\"", l.Path, l.Version, runtimeName(c), mod, from))
		} else {
			v.add(Warn, nil, fix, fmt.Sprintf("%s (NVML %s) does not match the kernel module %s (%s); a program whose RPATH or LD_LIBRARY_PATH puts it first fails with \"Driver/library version mismatch\"", l.Path, l.Version, mod, from))
		}
	}
	return v.result(fmt.Sprintf("libnvidia-ml %s in the container matches the kernel module %s (%s)", c.NVMLLibraries[0].Version, mod, from))
}

// imageFix is how each runtime gets an image whose CUDA the driver runs.
var cudaImageFix = map[string]string{
	"docker":     "run an image built for CUDA %[1]s or older (an older tag), or upgrade the host driver",
	"podman":     "run an image built for CUDA %[1]s or older (an older tag), or upgrade the host driver",
	"kubernetes": "use an image built for CUDA %[1]s or older in the pod spec, or schedule on nodes with a newer driver",
	"enroot":     "import an image built for CUDA %[1]s or older (srun --container-image=<older tag>), or ask the admins for a newer driver",
	"apptainer":  "build the .sif from an image for CUDA %[1]s or older, or ask the admins for a newer driver",
}

// consumerGPU says the GPU's name is a GeForce or TITAN board: forward
// compatibility is for data center GPUs, select NGC Server Ready RTX SKUs
// and Jetson (CUDA Compatibility, "Forward Compatibility").
func consumerGPU(name string) bool {
	u := strings.ToUpper(name)
	return strings.Contains(u, "GEFORCE") || strings.Contains(u, "TITAN")
}

// checkContainerCUDACompat judges the image's CUDA runtime (CUDA_VERSION,
// which NVIDIA's CUDA images set, else the runtime the job would load)
// against the host driver's CUDA version, and, when it is newer than
// minor-version compatibility covers, the forward-compatibility package in
// the image. Source: NVIDIA, CUDA Compatibility
// (docs.nvidia.com/deploy/cuda-compatibility), "Minor Version
// Compatibility" and "Forward Compatibility".
func checkContainerCUDACompat(n *state.Node, cfg *Config) Result {
	c, r, skip := containerSkip(n, cfg)
	if skip {
		return r
	}
	if n.Slurm == nil || n.Slurm.Host == nil || n.Slurm.Host.CUDARuntime == nil {
		return Result{Status: Skip, Summary: "no CUDA runtime in the image's environment (CUDA_VERSION, CUDA_HOME, LD_LIBRARY_PATH)"}
	}
	if n.NVML == nil || n.NVML.CUDADriverVersion == "" {
		return Result{Status: Skip, Summary: "the host driver's CUDA version is unknown"}
	}
	rt, drv := n.Slurm.Host.CUDARuntime, n.NVML.CUDADriverVersion
	rMaj, rMin, ok1 := majorMinor(rt.Version)
	dMaj, dMin, ok2 := majorMinor(drv)
	if !ok1 || !ok2 {
		return Result{Status: Skip, Summary: fmt.Sprintf("%s=%q or the driver's CUDA %q is not a version", rt.From, rt.Version, drv)}
	}
	what := fmt.Sprintf("CUDA %s in this %s (%s)", rt.Version, runtimeName(c), rt.From)
	have := fmt.Sprintf("the host driver %s supports CUDA %s", orNA(n.NVML.DriverVersion), drv)
	// Minor-version compatibility (CUDA 11 and later) runs a newer minor
	// release of the same major; job.cuda_compat warns about its limits.
	needFwd := rMaj > dMaj || (rMaj == dMaj && rMin > dMin && rMaj < 11)
	if !needFwd {
		if r, bad := loadedCompatWithoutNeed(n, c, what, have); bad {
			return r
		}
		return Result{Status: Pass, Summary: fmt.Sprintf("%s; %s: no forward compatibility needed", what, have)}
	}
	fix := fmt.Sprintf(cudaImageFix[c.Runtime], drv) + fmt.Sprintf("; on a data center GPU, NVIDIA's forward-compatibility package (cuda-compat-%d-%d, in /usr/local/cuda/compat of NVIDIA's images) on LD_LIBRARY_PATH runs it on a supported driver branch", rMaj, rMin)
	if len(c.CompatLibraries) == 0 {
		return Result{Status: Fail, Summary: fmt.Sprintf("%s is newer than %s, and the image has no forward-compatibility libcuda (/usr/local/cuda/compat): cudaErrorInsufficientDriver (35) at the first CUDA call", what, have), Remedy: fix}
	}
	compat := c.CompatLibraries[0]
	var consumer []string
	if n.NVML != nil {
		for _, g := range n.NVML.GPUs {
			if consumerGPU(g.Name) {
				consumer = append(consumer, fmt.Sprintf("GPU %d %s", g.Index, g.Name))
			}
		}
	}
	if len(consumer) > 0 {
		return Result{Status: Fail, Summary: fmt.Sprintf("%s needs forward compatibility (%s from %s), which runs only on data center GPUs, select NGC Server Ready RTX and Jetson: %s; CUDA fails with cudaErrorCompatNotSupportedOnDevice (804)", what, compat.Path, compat.Version, strings.Join(consumer, ", ")), Remedy: fmt.Sprintf(cudaImageFix[c.Runtime], drv)}
	}
	cMaj, _, okc := majorMinor(compat.Version)
	hMaj, _, okh := majorMinor(n.NVML.DriverVersion)
	if okc && okh && cMaj <= hMaj {
		// Off the loader's path the host's libcuda answers (35); loaded,
		// an older branch's libcuda on a newer kernel module is error 803.
		code := "cudaErrorInsufficientDriver"
		if loaderTakes(compat) {
			code = "loaded from " + loaderSource(compat) + " against a newer kernel module it fails to initialize; CUDA reports cudaErrorSystemDriverMismatch (803) or cudaErrorInsufficientDriver"
		}
		return Result{Status: Fail, Summary: fmt.Sprintf("%s: the image's forward-compatibility libcuda %s comes from driver %s, not newer than the host's %s: it cannot provide CUDA %d.%d (%s)", what, compat.Path, compat.Version, n.NVML.DriverVersion, rMaj, rMin, code), Remedy: fix}
	}
	if compat.ShadowedBy != "" {
		return Result{Status: Warn, Summary: fmt.Sprintf("%s is newer than %s; the image has the forward-compatibility libcuda %s (driver %s) on %s, but the loader takes %s first", what, have, compat.Path, compat.Version, loaderSource(compat), compat.ShadowedBy),
			Remedy: "put the compat directory first on LD_LIBRARY_PATH (" + path.Dir(compat.Path) + ")"}
	}
	if !loaderTakes(compat) {
		return Result{Status: Warn, Summary: fmt.Sprintf("%s is newer than %s; the image has the forward-compatibility libcuda %s (driver %s) but its directory is not on LD_LIBRARY_PATH nor seen in /etc/ld.so.cache through an /etc/ld.so.conf(.d) file: the loader finds it only if the image's entrypoint adds it (NVIDIA's NGC entrypoint does)", what, have, compat.Path, compat.Version),
			Remedy: "put the compat directory first on LD_LIBRARY_PATH (" + path.Dir(compat.Path) + "), or start the container through the image's entrypoint"}
	}
	return Result{Status: Pass, Summary: fmt.Sprintf("%s is newer than %s; forward compatibility through %s (driver %s) from %s, on data center GPUs (NVIDIA lists the host driver branches each cuda-compat package supports)", what, have, compat.Path, compat.Version, loaderSource(compat))}
}

// loadedCompatWithoutNeed judges a forward-compatibility libcuda the loader
// takes (a compat directory on LD_LIBRARY_PATH or in the loader cache
// through /etc/ld.so.conf.d, no libcuda.so.1 before it: loaderTakes)
// when the host driver runs the image's CUDA by itself. The compat libcuda
// is a user-mode driver from another branch than the kernel module:
//   - from an older branch than the host's, CUDA fails with
//     cudaErrorSystemDriverMismatch (803), "a mismatch between the versions
//     of the display driver and the CUDA driver" (CUDA Runtime API, error
//     types). NVIDIA's Container Toolkit therefore adds the compat
//     directory only when its major version is greater than the host
//     driver's (nvidia-container-toolkit, cmd/nvidia-cdi-hook
//     enable-cuda-compat: "driverMajor >= compatMajor" skips it); reports:
//     NVIDIA-NeMo/labs-molt#44 (compat 580 on a 595 host: 803),
//     NVIDIA/nvidia-container-toolkit#1679 (compat in the ldcache: 803),
//     espressomd/espresso#4090 (CUDA 11.0's compat on a newer driver).
//   - from a newer branch on a GeForce or TITAN GPU, forward compatibility
//     is attempted where it is not supported: cudaErrorCompatNotSupportedOnDevice
//     (804), reported as NVIDIA/nvidia-docker#1515 (a CUDA 11.3 image,
//     which the 11.2 driver ran by minor-version compatibility, failed once
//     compat libraries were on the path).
//   - from the host's own branch but another version: the toolkit does not
//     use it and NVIDIA documents no outcome: unknown.
//
// bad is false when no compat libcuda is loaded, or it is one of a newer
// branch on data center GPUs (forward compatibility, which then works).
func loadedCompatWithoutNeed(n *state.Node, c *state.Container, what, have string) (Result, bool) {
	var compat *state.NVMLLibrary
	for i, l := range c.CompatLibraries {
		if loaderTakes(l) {
			compat = &c.CompatLibraries[i]
			break
		}
	}
	if compat == nil {
		return Result{}, false
	}
	off := fmt.Sprintf("take %s off LD_LIBRARY_PATH", path.Dir(compat.Path))
	if !compat.OnLDLibraryPath {
		off = fmt.Sprintf("remove %s and run ldconfig (an NVIDIA Container Toolkit that writes it for a host this new is NVIDIA/nvidia-container-toolkit#1679's bug: update it)", compat.LoaderConf)
	}
	fix := off + ": the host driver runs this CUDA without it (NVIDIA's images add it only when the host driver is older, as the NVIDIA Container Toolkit does)"
	cMaj, _, okc := majorMinor(compat.Version)
	hMaj, _, okh := majorMinor(n.NVML.DriverVersion)
	if !okc || !okh {
		return Result{Status: Skip, Summary: fmt.Sprintf("%s; %s, but the forward-compatibility libcuda %s from %s replaces the host's, and its driver version %q or the host's %q is not a version: whether it runs is unknown", what, have, compat.Path, loaderSource(*compat), compat.Version, n.NVML.DriverVersion)}, true
	}
	loaded := fmt.Sprintf("the loader takes the forward-compatibility libcuda %s (driver %s) from %s instead of the host's", compat.Path, compat.Version, loaderSource(*compat))
	switch {
	case cMaj < hMaj:
		return Result{Status: Fail, Summary: fmt.Sprintf("%s; %s, but %s, an older branch than the kernel module %s: CUDA fails with cudaErrorSystemDriverMismatch (803, \"system has unsupported display driver / cuda driver combination\")", what, have, loaded, n.NVML.DriverVersion), Remedy: fix}, true
	case cMaj == hMaj && compat.Version != n.NVML.DriverVersion:
		return Result{Status: Skip, Summary: fmt.Sprintf("%s; %s, but %s, of the kernel module's branch %d yet not its version %s: NVIDIA documents no outcome for this pairing (its Container Toolkit never loads such a compat library), so whether CUDA initializes is unknown", what, have, loaded, hMaj, n.NVML.DriverVersion), Remedy: fix}, true
	case cMaj > hMaj:
		var consumer []string
		for _, g := range n.NVML.GPUs {
			if consumerGPU(g.Name) {
				consumer = append(consumer, fmt.Sprintf("GPU %d %s", g.Index, g.Name))
			}
		}
		if len(consumer) > 0 {
			return Result{Status: Fail, Summary: fmt.Sprintf("%s; %s, but %s, and forward compatibility runs only on data center GPUs, select NGC Server Ready RTX and Jetson: %s; CUDA fails with cudaErrorCompatNotSupportedOnDevice (804)", what, have, loaded, strings.Join(consumer, ", ")), Remedy: fix}, true
		}
	}
	return Result{}, false
}

// loaderTakes says the dynamic loader resolves libcuda.so.1 to the compat
// library: its directory is on LD_LIBRARY_PATH or in the loader cache
// through an ld.so.conf file, and no libcuda.so.1 comes before it in
// ld.so(8)'s order (the collector's compatLibraries models it).
func loaderTakes(l state.NVMLLibrary) bool {
	return (l.OnLDLibraryPath || l.LoaderConf != "") && l.ShadowedBy == ""
}

// loaderSource says where the loader finds a compat library.
func loaderSource(l state.NVMLLibrary) string {
	if l.OnLDLibraryPath || l.LoaderConf == "" {
		return "LD_LIBRARY_PATH"
	}
	return "the loader cache (" + l.LoaderConf + ")"
}

// netPluginCandidates is what NCCL's NET plugin loader tries to dlopen
// (NCCL src/plugin/net.cc initPluginLibsOnceFunc and plugin_open.cc
// openPluginLib): NCCL_NET_PLUGIN unset, "libnccl-net.so"; "none" (any
// case), nothing; else each comma-separated name as given and, when it has
// no "/" and is not a lib*.so file name, also "libnccl-net-<name>.so".
func netPluginCandidates(plugin string, set bool) (names []string, disabled bool) {
	if !set {
		return []string{"libnccl-net.so"}, false
	}
	if strings.EqualFold(strings.TrimSpace(plugin), "none") {
		return nil, true
	}
	for _, n := range strings.Split(plugin, ",") {
		if n == "" {
			continue
		}
		names = append(names, n)
		if !strings.Contains(n, "/") && !(strings.HasPrefix(n, "lib") && strings.HasSuffix(n, ".so")) {
			names = append(names, "libnccl-net-"+n+".so")
		}
	}
	return names, len(names) == 0
}

// efaDevices are the host's RDMA devices the efa driver binds (AWS Elastic
// Fabric Adapter; sysfs shows them in /sys/class/infiniband, rdmapNsM).
func efaDevices(n *state.Node) []string {
	var out []string
	if n.Topology != nil {
		for _, nic := range n.Topology.NICs {
			if nic.Driver == "efa" {
				out = append(out, nic.Name)
			}
		}
	}
	return out
}

// sharpConfigured lists the variables that ask NCCL for SHARP through
// CollNet: NCCL_COLLNET_ENABLE=1 (the HPC-X guide's switch for SHARP
// aggregation), NCCL_SHARP_* and the SHARP library's SHARP_COLL_*.
func sharpConfigured(env *slurmstate.Env) []string {
	var out []string
	for k, v := range env.NCCL {
		if (k == "NCCL_COLLNET_ENABLE" && strings.TrimSpace(v) == "1") || strings.HasPrefix(k, "NCCL_SHARP_") {
			out = append(out, k+"="+v)
		}
	}
	for k, v := range env.Sharp {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

var netPluginFix = map[string]map[string]string{
	"efa": {
		"docker":     "build the image with aws-ofi-nccl (the EFA installer's libfabric and aws-ofi-nccl, or an AWS Deep Learning Container), or bind the host's: docker run -v /opt/amazon:/opt/amazon:ro -e LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib:$LD_LIBRARY_PATH --device=/dev/infiniband/uverbsN",
		"podman":     "build the image with aws-ofi-nccl (the EFA installer's libfabric and aws-ofi-nccl), or bind the host's: podman run -v /opt/amazon:/opt/amazon:ro -e LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib:$LD_LIBRARY_PATH --device=/dev/infiniband/uverbsN",
		"kubernetes": "use an image with aws-ofi-nccl (an AWS Deep Learning Container) and request vpc.amazonaws.com/efa from the EFA device plugin",
		"enroot":     "import an image with aws-ofi-nccl, or mount the host's: srun --container-mounts=/opt/amazon:/opt/amazon with LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib (an Enroot environ.d file, or the job's environment)",
		"apptainer":  "build the .sif with aws-ofi-nccl, or bind the host's: apptainer exec --nv --bind /opt/amazon with APPTAINERENV_LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib",
	},
	"sharp": {
		"docker":     "use an image with HPC-X's nccl-rdma-sharp plugin (NVIDIA's NGC images ship it in /opt/hpcx/nccl_rdma_sharp_plugin/lib) and put that directory on LD_LIBRARY_PATH (docker run -e LD_LIBRARY_PATH=...)",
		"podman":     "use an image with HPC-X's nccl-rdma-sharp plugin (NVIDIA's NGC images ship it in /opt/hpcx/nccl_rdma_sharp_plugin/lib) and put that directory on LD_LIBRARY_PATH (podman run -e LD_LIBRARY_PATH=...)",
		"kubernetes": "use an image with HPC-X's nccl-rdma-sharp plugin and its lib directory on LD_LIBRARY_PATH in the pod spec",
		"enroot":     "import an image with HPC-X's nccl-rdma-sharp plugin (NGC images: /opt/hpcx/nccl_rdma_sharp_plugin/lib) and put it on LD_LIBRARY_PATH, or mount the host's HPC-X with srun --container-mounts",
		"apptainer":  "build the .sif with HPC-X's nccl-rdma-sharp plugin and set APPTAINERENV_LD_LIBRARY_PATH to its lib directory, or --bind the host's HPC-X",
	},
}

// checkContainerNetPlugin: on an EFA host NCCL needs aws-ofi-nccl (its
// internal IB transport does not drive EFA and falls back to sockets), and
// SHARP through CollNet needs the nccl-rdma-sharp plugin; NCCL loads either
// only as a library its loader finds under the names NCCL_NET_PLUGIN gives.
// Sources: NCCL src/plugin/net.cc and plugin_open.cc; aws-ofi-nccl's README;
// NVIDIA HPC-X "NCCL-RDMA-SHARP Plugins". The name is judged, not the
// library's contents.
func checkContainerNetPlugin(n *state.Node, cfg *Config) Result {
	c, r, skip := containerSkip(n, cfg)
	if skip {
		return r
	}
	env := n.Slurm.Env
	efa := efaDevices(n)
	sharp := sharpConfigured(env)
	if len(efa) == 0 && len(sharp) == 0 {
		return Result{Status: Pass, Summary: "no EFA device on this host and SHARP not asked for (NCCL_COLLNET_ENABLE, NCCL_SHARP_*, SHARP_COLL_*): NCCL's own IB and socket transports need no plugin"}
	}
	var need, what []string
	if len(efa) > 0 {
		need = append(need, "efa")
		what = append(what, fmt.Sprintf("the host's RDMA devices are EFA (%s): NCCL reaches them only through aws-ofi-nccl (libnccl-net-ofi.so, or libnccl-net.so in older releases), else it falls back to TCP sockets", strings.Join(efa, ", ")))
	}
	if len(sharp) > 0 {
		need = append(need, "sharp")
		what = append(what, fmt.Sprintf("the job asks for SHARP (%s): CollNet needs the nccl-rdma-sharp plugin (libnccl-net.so of HPC-X), else NCCL runs without SHARP", strings.Join(sharp, ", ")))
	}
	// Without aws-ofi-nccl an EFA job runs on TCP sockets; without the
	// SHARP plugin CollNet is off and NCCL runs its own algorithms.
	status := Warn
	if len(efa) > 0 {
		status = Fail
	}
	fix := netPluginFix[need[0]][c.Runtime]
	if len(need) > 1 {
		fix += "; and " + netPluginFix[need[1]][c.Runtime]
	}
	plugin, set := env.NCCL["NCCL_NET_PLUGIN"]
	names, disabled := netPluginCandidates(plugin, set)
	if disabled {
		return Result{Status: status, Summary: fmt.Sprintf("NCCL_NET_PLUGIN=%s in this %s turns off every external network plugin, but %s", plugin, runtimeName(c), strings.Join(what, "; ")),
			Remedy: "unset NCCL_NET_PLUGIN (or name the plugin: NCCL_NET_PLUGIN=ofi for aws-ofi-nccl)"}
	}
	var loaded *state.NetPluginLibrary
	for _, name := range names {
		for i, l := range c.NetPlugins {
			if l.OnLoaderPath && (l.Path == name || (!strings.Contains(name, "/") && path.Base(l.Path) == name)) {
				loaded = &c.NetPlugins[i]
				break
			}
		}
		if loaded != nil {
			break
		}
	}
	tried := strings.Join(names, ", ")
	if loaded != nil {
		return Result{Status: Pass, Summary: fmt.Sprintf("NCCL loads %s (%s) in this %s, as %s needs (judged by name: NCCL_DEBUG=INFO's \"NET/Plugin\" line names the plugin that loaded)", loaded.Path, loaded.From, runtimeName(c), strings.Join(need, " and "))}
	}
	// What is there under another name, or off the loader's path.
	var near []string
	var hint string
	for _, l := range c.NetPlugins {
		switch {
		case !l.OnLoaderPath:
			near = append(near, l.Path+" (not on the loader's path)")
			if hint == "" {
				hint = "put " + path.Dir(l.Path) + " on LD_LIBRARY_PATH"
			}
		default:
			near = append(near, l.Path)
			if b := path.Base(l.Path); hint == "" && b != "libnccl-net.so" {
				hint = "set NCCL_NET_PLUGIN=" + strings.TrimSuffix(strings.TrimPrefix(b, "libnccl-net-"), ".so") + " (NCCL then opens " + b + ")"
			}
		}
	}
	sum := fmt.Sprintf("%s; NCCL looks for %s and this %s has none on the loader's path", strings.Join(what, "; "), tried, runtimeName(c))
	if len(near) > 0 {
		sum += " (found: " + strings.Join(near, ", ") + ")"
		fix = hint + "; or " + fix
	} else {
		sum += ", nor any libnccl-net*.so elsewhere"
	}
	return Result{Status: status, Summary: sum, Remedy: fix}
}
