package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

func strp(s string) *string { return &s }
func u64p(v uint64) *uint64 { return &v }

// inContainer is a task of a step (GPUs 0,1 on gpu001) in a container of
// runtime rt; mut sets the container's facts.
func inContainer(rt string, extraEnv []string, mut func(c *state.Container)) *state.Node {
	env := step(0, 1, append([]string{"SLURM_STEP_GPUS=0,1", "CUDA_VISIBLE_DEVICES=0,1"}, extraEnv...)...)
	return jobNode(env, func(n *state.Node) {
		n.Container = &state.Container{Runtime: rt, Evidence: []state.ContainerEvidence{{Runtime: rt, Seen: "file /.dockerenv"}}, DevInfinibandRead: true}
		if mut != nil {
			mut(n.Container)
		}
	})
}

type containerCase struct {
	name    string
	node    *state.Node
	cfg     func(*Config)
	want    Status
	summary string // a substring of the summary
	remedy  string // a substring of the remedy
}

func runContainerCases(t *testing.T, run func(*state.Node, *Config) Result, cases []containerCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if c.cfg != nil {
				c.cfg(cfg)
			}
			r := run(c.node, cfg)
			if r.Status != c.want || !strings.Contains(r.Summary, c.summary) || !strings.Contains(r.Remedy, c.remedy) {
				t.Errorf("got %s %q\nremedy %q\ndetails %q\nwant %s %q remedy %q", r.Status, r.Summary, r.Remedy, r.Details, c.want, c.summary, c.remedy)
			}
		})
	}
}

// Outside a container, and outside a job, nothing is judged.
func commonContainerCases() []containerCase {
	bare := inContainer("", nil, nil)
	bare.Container.Evidence = nil
	notJob := jobNode([]string{"SLURMD_NODENAME=gpu001"}, func(n *state.Node) { n.Container = &state.Container{Runtime: "docker"} })
	uncollected := inContainer("docker", nil, nil)
	uncollected.Container = nil
	return []containerCase{
		{name: "not in a container", node: bare, want: Skip, summary: "not in a container"},
		{name: "not in a job step", node: notJob, want: Skip, summary: "not inside a job step"},
		{name: "not collected", node: uncollected, want: Skip, summary: "not collected"},
	}
}

func TestContainerShm(t *testing.T) {
	shm := func(rt string, size uint64) *state.Node {
		return inContainer(rt, nil, func(c *state.Container) {
			c.Shm = &state.ShmMount{FSType: "tmpfs", Source: "shm", Root: "/", SizeBytes: size}
			c.MemTotalBytes = 2 << 40
		})
	}
	hostShm := inContainer("enroot", nil, func(c *state.Container) {
		c.Shm = &state.ShmMount{FSType: "tmpfs", Source: "tmpfs", Root: "/"}
		c.MemTotalBytes = 2 << 40
	})
	noMount := inContainer("apptainer", nil, nil)
	runContainerCases(t, checkContainerShm, append(commonContainerCases(),
		containerCase{name: "docker default 64 MB", node: shm("docker", 64<<20), want: Fail, summary: "is 64 MiB (size=64 MiB)", remedy: "docker run --shm-size=1g"},
		containerCase{name: "podman 64 MB", node: shm("podman", 64<<20), want: Fail, remedy: "podman run --shm-size=1g"},
		containerCase{name: "kubernetes 64 MB", node: shm("kubernetes", 64<<20), want: Fail, remedy: "emptyDir"},
		containerCase{name: "512 MB warns", node: shm("docker", 512<<20), want: Warn, summary: "below the 1 GiB"},
		containerCase{name: "1 GiB passes", node: shm("docker", 1<<30), want: Pass, summary: "is 1 GiB"},
		containerCase{name: "enroot binds the host's tmpfs: half of RAM", node: hostShm, want: Pass, summary: "tmpfs default, half of MemTotal"},
		containerCase{name: "no mount at /dev/shm", node: noMount, want: Skip, summary: "no mount at /dev/shm"},
	))
}

func TestContainerMemlock(t *testing.T) {
	lim := func(rt string, soft, hard *uint64, ib []string) *state.Node {
		n := inContainer(rt, nil, func(c *state.Container) {
			c.Memlock = &state.Rlimit{Soft: soft, Hard: hard, Unit: "bytes"}
			c.IBDevices = ib
		})
		n.Slurm.Host.IBDevices = nil
		return n
	}
	fromSlurm := lim("podman", u64p(64<<10), u64p(64<<10), nil)
	fromSlurm.Slurm.Host.IBDevices = []string{"mlx5_0"}
	runContainerCases(t, checkContainerMemlock, append(commonContainerCases(),
		containerCase{name: "docker 8 MiB with IB", node: lim("docker", u64p(8<<20), u64p(8<<20), []string{"mlx5_0", "mlx5_1"}), want: Warn, summary: "8 MiB (soft) / 8 MiB (hard)", remedy: "--ulimit memlock=-1"},
		containerCase{name: "IB seen by the Slurm collector", node: fromSlurm, want: Warn, summary: "64 KiB (soft)", remedy: "podman run --ulimit memlock=-1"},
		containerCase{name: "enroot: the step's limit", node: lim("enroot", u64p(64<<10), nil, []string{"mlx5_0"}), want: Warn, summary: "/ unlimited (hard)", remedy: "PropagateResourceLimitsExcept=MEMLOCK"},
		containerCase{name: "unlimited", node: lim("docker", nil, nil, []string{"mlx5_0"}), want: Pass, summary: "unlimited"},
		containerCase{name: "no IB on the host", node: lim("docker", u64p(8<<20), u64p(8<<20), nil), want: Pass, summary: "no InfiniBand device"},
		containerCase{name: "limits unread", node: inContainer("docker", nil, nil), want: Skip, summary: "not read"},
	))
}

func TestContainerRDMA(t *testing.T) {
	rdma := func(rt string, ib, uverbs []string) *state.Node {
		n := inContainer(rt, nil, func(c *state.Container) { c.IBDevices, c.UverbsDevices = ib, uverbs })
		n.Slurm.Host.IBDevices = nil
		return n
	}
	unreadable := rdma("docker", []string{"mlx5_0"}, nil)
	unreadable.Container.DevInfinibandRead = false
	runContainerCases(t, checkContainerRDMA, append(commonContainerCases(),
		containerCase{name: "enroot without the Mellanox hook", node: rdma("enroot", []string{"mlx5_0", "mlx5_1"}, nil), want: Fail, summary: "falls back to TCP sockets", remedy: "MELLANOX_VISIBLE_DEVICES=all"},
		containerCase{name: "docker without --device", node: rdma("docker", []string{"mlx5_0"}, nil), want: Fail, summary: "has InfiniBand (mlx5_0)", remedy: "--device=/dev/infiniband/rdma_cm"},
		containerCase{name: "apptainer --contain", node: rdma("apptainer", []string{"mlx5_0"}, nil), want: Fail, remedy: "--bind /dev/infiniband"},
		containerCase{name: "devices present", node: rdma("podman", []string{"mlx5_0"}, []string{"/dev/infiniband/uverbs0"}), want: Pass, summary: "1 verbs device"},
		containerCase{name: "no IB on the host", node: rdma("docker", nil, nil), want: Skip, summary: "no InfiniBand"},
		containerCase{name: "/dev/infiniband unreadable", node: unreadable, want: Error},
	))
}

func TestContainerVisibleDevices(t *testing.T) {
	vis := func(rt, nvd string, extra ...string) *state.Node {
		return inContainer(rt, extra, func(c *state.Container) { c.NVIDIAVisibleDevices = strp(nvd) })
	}
	// Slurm without ConstrainDevices: global indexes 4,5 in both variables.
	global := func(rt string) *state.Node {
		n := jobNode(step(0, 1, "SLURM_STEP_GPUS=4,5", "CUDA_VISIBLE_DEVICES=4,5"), func(n *state.Node) {
			n.Container = &state.Container{Runtime: rt, Evidence: []state.ContainerEvidence{{Runtime: rt, Seen: "file /.dockerenv"}}, NVIDIAVisibleDevices: strp("4,5")}
		})
		return n
	}
	unset := inContainer("docker", nil, nil)
	runContainerCases(t, checkContainerVisible, append(commonContainerCases(),
		containerCase{name: "unset", node: unset, want: Skip, summary: "not set"},
		containerCase{name: "agrees", node: vis("docker", "0,1"), want: Pass, summary: "agrees with Slurm's GPUs (0,1)"},
		containerCase{name: "other GPUs than Slurm's", node: vis("docker", "2,3"), want: Fail, summary: "gives the container GPU 2,3, but Slurm allocated GPU 0,1 (SLURM_STEP_GPUS)", remedy: "$SLURM_STEP_GPUS"},
		containerCase{name: "UUID count differs", node: vis("podman", "GPU-00000000-1111-2222-3333-444444444444"), want: Fail, summary: "names 1 GPU(s), but Slurm allocated 2"},
		containerCase{name: "void with GPUs allocated", node: vis("enroot", "void"), want: Fail, summary: "hook does nothing"},
		containerCase{name: "empty is void", node: vis("docker", ""), want: Fail, summary: "hook does nothing"},
		containerCase{name: "none with GPUs allocated", node: vis("docker", "none"), want: Fail, summary: "driver libraries but no GPU"},
		containerCase{name: "all", node: vis("docker", "all"), want: Pass},
		containerCase{name: "docker renumbers: CUDA_VISIBLE_DEVICES=4,5 inside", node: global("docker"), want: Fail, summary: "CUDA_VISIBLE_DEVICES=4,5 names GPU 4, but NVIDIA_VISIBLE_DEVICES=4,5 gives this Docker container", remedy: "CUDA_VISIBLE_DEVICES=0,1,"},
		containerCase{name: "enroot keeps the host's /dev: no renumbering judged", node: global("enroot"), want: Pass},
	))
}

func TestContainerDriverLibs(t *testing.T) {
	libs := func(rt, mod string, versions ...string) *state.Node {
		return inContainer(rt, nil, func(c *state.Container) {
			c.ModuleVersion, c.ModuleVersionFrom = mod, "/sys/module/nvidia/version"
			for _, v := range versions {
				c.NVMLLibraries = append(c.NVMLLibraries, state.NVMLLibrary{Path: "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + v, Version: v})
			}
		})
	}
	fromKernel := libs("docker", "", "550.54.15")
	fromKernel.Kernel = &state.Kernel{ModuleVersion: "535.104.05"}
	runContainerCases(t, checkContainerDriverLibs, append(commonContainerCases(),
		containerCase{name: "match", node: libs("docker", "550.54.15", "550.54.15"), want: Pass, summary: "matches the kernel module 550.54.15"},
		containerCase{name: "image ships its own driver", node: libs("docker", "550.54.15", "535.104.05"), want: Fail, summary: "libnvidia-ml.so.535.104.05 (NVML 535.104.05) is the first", remedy: "--gpus"},
		containerCase{name: "enroot", node: libs("enroot", "550.54.15", "535.104.05"), want: Fail, summary: "kernel module is 550.54.15 (/sys/module/nvidia/version)", remedy: "98-nvidia.sh"},
		containerCase{name: "a later copy differs", node: libs("apptainer", "550.54.15", "550.54.15", "535.104.05"), want: Warn, remedy: "--nv"},
		containerCase{name: "module from the kernel collector", node: fromKernel, want: Fail, summary: "535.104.05 (/proc/driver/nvidia/version)"},
		containerCase{name: "module unknown", node: libs("docker", "", "550.54.15"), want: Skip, summary: "version is unknown"},
		containerCase{name: "no library", node: libs("docker", "550.54.15"), want: Skip, summary: "no libnvidia-ml"},
	))
}

// TestContainerCUDACompat: the image's CUDA against the host driver (550.54.15,
// CUDA 12.4), and forward compatibility as NVIDIA's CUDA Compatibility guide
// bounds it: a compat libcuda from a newer driver, on a data center GPU.
func TestContainerCUDACompat(t *testing.T) {
	withCUDA := func(rt, v string, compat ...state.NVMLLibrary) *state.Node {
		n := inContainer(rt, []string{"CUDA_VERSION=" + v}, func(c *state.Container) { c.CompatLibraries = compat })
		n.Slurm.Host.CUDARuntime = &slurmstate.CUDARuntime{Version: v, From: "CUDA_VERSION"}
		return n
	}
	fwd := state.NVMLLibrary{Path: "/usr/local/cuda/compat/lib/libcuda.so.580.65.06", Version: "580.65.06", OnLDLibraryPath: true}
	offPath := fwd
	offPath.OnLDLibraryPath = false
	older := state.NVMLLibrary{Path: "/usr/local/cuda/compat/libcuda.so.535.183.01", Version: "535.183.01", OnLDLibraryPath: true}
	shadowed := fwd
	shadowed.ShadowedBy = "/usr/local/nvidia/lib64/libcuda.so.1"
	olderShadowed := older
	olderShadowed.ShadowedBy = shadowed.ShadowedBy
	sameBranch := state.NVMLLibrary{Path: "/usr/local/cuda/compat/libcuda.so.550.90.07", Version: "550.90.07", OnLDLibraryPath: true}
	sameVersion := sameBranch
	sameVersion.Path, sameVersion.Version = "/usr/local/cuda/compat/libcuda.so.550.54.15", "550.54.15"
	// Through /etc/ld.so.conf.d and the loader cache (the Container
	// Toolkit's enable-cuda-compat hook), not LD_LIBRARY_PATH.
	viaConf := func(l state.NVMLLibrary) state.NVMLLibrary {
		l.OnLDLibraryPath, l.LoaderConf = false, "/etc/ld.so.conf.d/00-compat-1.conf"
		return l
	}
	geforceConf := withCUDA("docker", "12.4", viaConf(fwd))
	for i := range geforceConf.NVML.GPUs {
		geforceConf.NVML.GPUs[i].Name = "NVIDIA GeForce RTX 4090"
	}
	olderConfShadowed := viaConf(older)
	olderConfShadowed.ShadowedBy = "/usr/local/nvidia/lib64/libcuda.so.1"
	geforce := withCUDA("docker", "13.0", fwd)
	for i := range geforce.NVML.GPUs {
		geforce.NVML.GPUs[i].Name = "NVIDIA GeForce RTX 4090"
	}
	noRuntime := inContainer("docker", nil, nil)
	cases := append(commonContainerCases(),
		containerCase{name: "same CUDA", node: withCUDA("podman", "12.4"), want: Pass, summary: "no forward compatibility needed"},
		containerCase{name: "newer minor: minor-version compatibility", node: withCUDA("podman", "12.8"), want: Pass, summary: "no forward compatibility needed"},
		containerCase{name: "newer major, no compat package (podman)", node: withCUDA("podman", "13.0"), want: Fail, summary: "cudaErrorInsufficientDriver (35)", remedy: "an image built for CUDA 12.4 or older"},
		containerCase{name: "newer major, no compat package (enroot)", node: withCUDA("enroot", "13.0"), want: Fail, summary: "no forward-compatibility libcuda", remedy: "srun --container-image=<older tag>"},
		containerCase{name: "newer major, no compat package (apptainer)", node: withCUDA("apptainer", "13.0"), want: Fail, summary: "Apptainer container", remedy: "build the .sif"},
		containerCase{name: "pre-11 newer minor", node: func() *state.Node {
			n := withCUDA("docker", "10.2")
			n.NVML.CUDADriverVersion, n.NVML.DriverVersion = "10.1", "418.87.01"
			return n
		}(), want: Fail, summary: "cudaErrorInsufficientDriver"},
		containerCase{name: "forward compatibility on H100", node: withCUDA("podman", "13.0", fwd), want: Pass, summary: "forward compatibility through /usr/local/cuda/compat/lib/libcuda.so.580.65.06"},
		containerCase{name: "compat not on LD_LIBRARY_PATH", node: withCUDA("podman", "13.0", offPath), want: Warn, summary: "not on LD_LIBRARY_PATH", remedy: "/usr/local/cuda/compat/lib"},
		containerCase{name: "compat older than the host driver", node: withCUDA("podman", "13.0", older), want: Fail, summary: "not newer than the host's 550.54.15"},
		containerCase{name: "compat on GeForce", node: geforce, want: Fail, summary: "cudaErrorCompatNotSupportedOnDevice (804)", remedy: "an image built for CUDA 12.4"},
		containerCase{name: "compat shadowed by an earlier libcuda.so.1", node: withCUDA("podman", "13.0", shadowed), want: Warn, summary: "the loader takes /usr/local/nvidia/lib64/libcuda.so.1", remedy: "put the compat directory first"},
		containerCase{name: "compat of an older branch loaded, not needed", node: withCUDA("docker", "12.4", older), want: Fail, summary: "cudaErrorSystemDriverMismatch (803", remedy: "take /usr/local/cuda/compat off LD_LIBRARY_PATH"},
		containerCase{name: "compat of an older branch shadowed, not needed", node: withCUDA("docker", "12.4", olderShadowed), want: Pass, summary: "no forward compatibility needed"},
		containerCase{name: "compat of the host's branch, another version, not needed", node: withCUDA("docker", "12.4", sameBranch), want: Skip, summary: "whether CUDA initializes is unknown"},
		containerCase{name: "compat of the host's own version, not needed", node: withCUDA("docker", "12.4", sameVersion), want: Pass, summary: "no forward compatibility needed"},
		containerCase{name: "compat of a newer branch on H100, not needed", node: withCUDA("docker", "12.4", fwd), want: Pass, summary: "no forward compatibility needed"},
		containerCase{name: "compat older on the path, needed", node: withCUDA("podman", "13.0", older), want: Fail, summary: "cudaErrorSystemDriverMismatch (803) or cudaErrorInsufficientDriver"},
		containerCase{name: "compat of an older branch in the loader cache, not needed", node: withCUDA("docker", "12.4", viaConf(older)), want: Fail, summary: "from the loader cache (/etc/ld.so.conf.d/00-compat-1.conf) instead of the host's, an older branch than the kernel module 550.54.15: CUDA fails with cudaErrorSystemDriverMismatch (803", remedy: "remove /etc/ld.so.conf.d/00-compat-1.conf and run ldconfig"},
		containerCase{name: "compat of an older branch in the loader cache behind LD_LIBRARY_PATH's libcuda, not needed", node: withCUDA("docker", "12.4", olderConfShadowed), want: Pass, summary: "no forward compatibility needed"},
		containerCase{name: "compat of the host's branch in the loader cache, not needed", node: withCUDA("docker", "12.4", viaConf(sameBranch)), want: Skip, summary: "whether CUDA initializes is unknown"},
		containerCase{name: "compat of a newer branch in the loader cache on GeForce, not needed", node: geforceConf, want: Fail, summary: "cudaErrorCompatNotSupportedOnDevice (804)"},
		containerCase{name: "forward compatibility through the loader cache on H100", node: withCUDA("podman", "13.0", viaConf(fwd)), want: Pass, summary: "from the loader cache (/etc/ld.so.conf.d/00-compat-1.conf)"},
		containerCase{name: "compat older in the loader cache, needed", node: withCUDA("podman", "13.0", viaConf(older)), want: Fail, summary: "loaded from the loader cache (/etc/ld.so.conf.d/00-compat-1.conf) against a newer kernel module"},
		containerCase{name: "no runtime", node: noRuntime, want: Skip, summary: "no CUDA runtime"},
		containerCase{name: "garbage version", node: withCUDA("docker", "latest"), want: Skip, summary: "not a version"},
	)
	runContainerCases(t, checkContainerCUDACompat, cases)
}

func TestNetPluginCandidates(t *testing.T) {
	for _, c := range []struct {
		plugin   string
		set      bool
		want     string
		disabled bool
	}{
		{set: false, want: "libnccl-net.so"},
		{plugin: "none", set: true, disabled: true},
		{plugin: "NONE", set: true, disabled: true},
		{plugin: "ofi", set: true, want: "ofi libnccl-net-ofi.so"},
		{plugin: "libnccl-net-ofi.so", set: true, want: "libnccl-net-ofi.so"},
		{plugin: "/opt/aws-ofi-nccl/lib/libnccl-net-ofi.so", set: true, want: "/opt/aws-ofi-nccl/lib/libnccl-net-ofi.so"},
		{plugin: "ofi,sharp", set: true, want: "ofi libnccl-net-ofi.so sharp libnccl-net-sharp.so"},
		{plugin: "", set: true, disabled: true},
	} {
		names, disabled := netPluginCandidates(c.plugin, c.set)
		if strings.Join(names, " ") != c.want || disabled != c.disabled {
			t.Errorf("NCCL_NET_PLUGIN=%q (set %v): %q disabled %v, want %q %v", c.plugin, c.set, names, disabled, c.want, c.disabled)
		}
	}
}

func TestContainerNetPlugin(t *testing.T) {
	// efa puts two EFA devices on the host, as a p5 shows them in sysfs.
	efa := func(n *state.Node) *state.Node {
		n.Topology = &topostate.Topology{NICs: []topostate.NIC{
			{Name: "rdmap16s27", PCIFunction: topostate.PCIFunction{Driver: "efa"}},
			{Name: "rdmap32s27", PCIFunction: topostate.PCIFunction{Driver: "efa"}},
		}}
		return n
	}
	mlx := func(n *state.Node) *state.Node {
		n.Topology = &topostate.Topology{NICs: []topostate.NIC{{Name: "mlx5_0", PCIFunction: topostate.PCIFunction{Driver: "mlx5_core"}}}}
		return n
	}
	libs := func(l ...state.NetPluginLibrary) func(c *state.Container) {
		return func(c *state.Container) { c.NetPlugins = l }
	}
	ofiOnPath := state.NetPluginLibrary{Path: "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", OnLoaderPath: true, From: "/etc/ld.so.conf.d/100_ofinccl.conf"}
	ofiDefault := state.NetPluginLibrary{Path: "/opt/amazon/ofi-nccl/lib/libnccl-net.so", OnLoaderPath: true, From: "LD_LIBRARY_PATH"}
	ofiOff := state.NetPluginLibrary{Path: "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", From: "install directory"}
	sharpLib := state.NetPluginLibrary{Path: "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so", OnLoaderPath: true, From: "LD_LIBRARY_PATH"}
	explicit := state.NetPluginLibrary{Path: "/opt/aws-ofi-nccl/lib/libnccl-net-ofi.so", OnLoaderPath: true, From: "NCCL_NET_PLUGIN"}
	runContainerCases(t, checkContainerNetPlugin, append(commonContainerCases(),
		containerCase{name: "InfiniBand, no SHARP: nothing needed", node: mlx(inContainer("podman", nil, nil)), want: Pass, summary: "no EFA device"},
		containerCase{name: "EFA, no plugin", node: efa(inContainer("podman", nil, nil)), want: Fail,
			summary: "EFA (rdmap16s27, rdmap32s27)", remedy: "podman run -v /opt/amazon:/opt/amazon:ro"},
		containerCase{name: "EFA, no plugin anywhere", node: efa(inContainer("podman", nil, nil)), want: Fail,
			summary: "NCCL looks for libnccl-net.so and this Podman container (file /.dockerenv) has none on the loader's path, nor any libnccl-net*.so elsewhere", remedy: "build the image with aws-ofi-nccl"},
		containerCase{name: "EFA, libnccl-net.so on LD_LIBRARY_PATH", node: efa(inContainer("docker", nil, libs(ofiDefault))), want: Pass,
			summary: "NCCL loads /opt/amazon/ofi-nccl/lib/libnccl-net.so (LD_LIBRARY_PATH)"},
		containerCase{name: "EFA, only libnccl-net-ofi.so and NCCL_NET_PLUGIN unset", node: efa(inContainer("enroot", nil, libs(ofiOnPath))), want: Fail,
			summary: "NCCL looks for libnccl-net.so", remedy: "set NCCL_NET_PLUGIN=ofi"},
		containerCase{name: "EFA, NCCL_NET_PLUGIN=ofi", node: efa(inContainer("enroot", []string{"NCCL_NET_PLUGIN=ofi"}, libs(ofiOnPath))), want: Pass,
			summary: "NCCL loads /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"},
		containerCase{name: "EFA, NCCL_NET_PLUGIN a path", node: efa(inContainer("docker", []string{"NCCL_NET_PLUGIN=/opt/aws-ofi-nccl/lib/libnccl-net-ofi.so"}, libs(explicit))), want: Pass,
			summary: "(NCCL_NET_PLUGIN)"},
		containerCase{name: "EFA, NCCL_NET_PLUGIN a path that is not there", node: efa(inContainer("docker", []string{"NCCL_NET_PLUGIN=/opt/aws-ofi-nccl/lib/libnccl-net-ofi.so"}, libs(ofiOnPath))), want: Fail,
			summary: "NCCL looks for /opt/aws-ofi-nccl/lib/libnccl-net-ofi.so"},
		containerCase{name: "EFA, plugin off the loader's path", node: efa(inContainer("apptainer", []string{"NCCL_NET_PLUGIN=ofi"}, libs(ofiOff))), want: Fail,
			summary: "(not on the loader's path)", remedy: "put /opt/amazon/ofi-nccl/lib on LD_LIBRARY_PATH; or build the .sif"},
		containerCase{name: "EFA, NCCL_NET_PLUGIN=none", node: efa(inContainer("kubernetes", []string{"NCCL_NET_PLUGIN=none"}, libs(ofiDefault))), want: Fail,
			summary: "turns off every external network plugin", remedy: "unset NCCL_NET_PLUGIN"},
		containerCase{name: "SHARP asked for, no plugin", node: mlx(inContainer("enroot", []string{"NCCL_COLLNET_ENABLE=1"}, nil)), want: Warn,
			summary: "the job asks for SHARP (NCCL_COLLNET_ENABLE=1)", remedy: "HPC-X's nccl-rdma-sharp plugin"},
		containerCase{name: "SHARP through SHARP_COLL_*, plugin there", node: mlx(inContainer("docker", []string{"SHARP_COLL_ENABLE_SAT=1"}, libs(sharpLib))), want: Pass,
			summary: "NCCL loads /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"},
		containerCase{name: "NCCL_COLLNET_ENABLE=0 asks for nothing", node: mlx(inContainer("docker", []string{"NCCL_COLLNET_ENABLE=0"}, nil)), want: Pass, summary: "no EFA device"},
	))
}
