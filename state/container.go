package state

// Container is what the step's own view of the machine says about the
// container it runs in (collect/container.go): which runtime, on what
// evidence, and the facts the container.* checks judge. Runtime is empty
// when nothing marks a container; the checks then judge nothing. These are
// the step's own files and environment, which a user controls: they inform
// job-scope checks only, never a node's drain.
type Container struct {
	// Runtime is "enroot" (Pyxis or plain Enroot), "apptainer",
	// "kubernetes", "podman", "docker" or "" (none seen). The first of
	// ContainerRuntimes' order whose marker is present wins.
	Runtime string `json:"runtime,omitempty"`
	// Evidence lists every marker seen, runtime first ("env
	// APPTAINER_CONTAINER=/scratch/pytorch.sif", "file /.dockerenv"), so a
	// reader can weigh them.
	Evidence []ContainerEvidence `json:"evidence,omitempty"`

	// Shm is /dev/shm as /proc/self/mountinfo shows it; nil when no mount
	// sits there (it is then part of its parent file system).
	Shm *ShmMount `json:"shm,omitempty"`
	// MemTotalBytes is /proc/meminfo's MemTotal: a tmpfs without size= is
	// limited to half of it.
	MemTotalBytes uint64 `json:"mem_total_bytes,omitempty"`
	// Memlock is RLIMIT_MEMLOCK from /proc/self/limits; nil when unread.
	Memlock *Rlimit `json:"memlock,omitempty"`

	// IBDevices lists /sys/class/infiniband: the host's RDMA devices (sysfs
	// shows them inside a container unless a runtime masks the directory,
	// as Enroot's Mellanox hook does with the ones it does not expose).
	IBDevices []string `json:"ib_devices,omitempty"`
	// UverbsDevices lists /dev/infiniband/uverbs*; RDMACM says whether
	// /dev/infiniband/rdma_cm exists. DevInfinibandRead is false when
	// /dev/infiniband could not be listed for another reason than absence.
	UverbsDevices     []string `json:"uverbs_devices,omitempty"`
	RDMACM            bool     `json:"rdma_cm,omitempty"`
	DevInfinibandRead bool     `json:"dev_infiniband_read"`

	// NVIDIAVisibleDevices and MellanoxVisibleDevices are the runtime hooks'
	// variables (nil when unset).
	NVIDIAVisibleDevices   *string `json:"nvidia_visible_devices,omitempty"`
	MellanoxVisibleDevices *string `json:"mellanox_visible_devices,omitempty"`

	// ModuleVersion is the loaded nvidia.ko's version and ModuleVersionFrom
	// the file it was read from (/sys/module/nvidia/version, else
	// /proc/driver/nvidia/version): both show the host's kernel module
	// inside a container.
	ModuleVersion     string `json:"module_version,omitempty"`
	ModuleVersionFrom string `json:"module_version_from,omitempty"`
	// NVMLLibraries are the libnvidia-ml.so.<version> files found in the
	// container's library directories, in the dynamic loader's search
	// order (LD_LIBRARY_PATH first).
	NVMLLibraries []NVMLLibrary `json:"nvml_libraries,omitempty"`
	// CompatLibraries are the libcuda.so.<driver version> files of NVIDIA's
	// CUDA forward-compatibility package (cuda-compat-<major>-<minor>) in
	// the image: in a compat directory on LD_LIBRARY_PATH, or in
	// /usr/local/cuda/compat (and its lib, lib.real) where the package and
	// NVIDIA's CUDA images put them. Version is the driver they come from.
	CompatLibraries []NVMLLibrary `json:"compat_libraries,omitempty"`

	// NetPlugins are the NCCL network plugin libraries (libnccl-net.so,
	// libnccl-net-<name>.so) in the container, in the loader's order: the
	// LD_LIBRARY_PATH directories, the directories of /etc/ld.so.conf.d,
	// the default ones, then the directories aws-ofi-nccl and HPC-X
	// install to (not on the loader's path by themselves); and any absolute
	// path NCCL_NET_PLUGIN names.
	NetPlugins []NetPluginLibrary `json:"net_plugins,omitempty"`

	// Errors are files that exist but could not be read or parsed.
	Errors []string `json:"errors,omitempty"`
}

// ContainerEvidence is one marker: the runtime it points to and what was seen.
type ContainerEvidence struct {
	Runtime string `json:"runtime"`
	Seen    string `json:"seen"`
}

// ContainerRuntimes is the order detection prefers when markers of several
// runtimes are present: the innermost, most specific runtime first (an
// Enroot or Apptainer container started inside a pod is judged as what it
// is), then Kubernetes before the engine under it (a pod's /dev/shm and
// limits are set in the pod spec, not with the engine's flags; CRI-O also
// writes /run/.containerenv, Docker-backed pods have /.dockerenv).
var ContainerRuntimes = []string{"enroot", "apptainer", "kubernetes", "podman", "docker"}

// ShmMount is the mount at /dev/shm.
type ShmMount struct {
	FSType string `json:"fs_type"`
	// Source is the mount source ("shm", "tmpfs", "/dev/shm" for a bind).
	Source string `json:"source,omitempty"`
	// Root is the mount's root within its file system (mountinfo field 4):
	// "/" for its own tmpfs, a path for a bind of part of another.
	Root string `json:"root,omitempty"`
	// SuperOptions are the per-superblock options ("rw,size=65536k").
	SuperOptions string `json:"super_options,omitempty"`
	// SizeBytes is the size= option in bytes; 0 when absent.
	SizeBytes uint64 `json:"size_bytes,omitempty"`
}

// Rlimit is one row of /proc/self/limits. A nil value is "unlimited".
type Rlimit struct {
	Soft *uint64 `json:"soft"`
	Hard *uint64 `json:"hard"`
	Unit string  `json:"unit,omitempty"`
}

// NVMLLibrary is one libnvidia-ml.so.<version> (or, in CompatLibraries,
// libcuda.so.<version>) file.
type NVMLLibrary struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	// OnLDLibraryPath says its directory is one of LD_LIBRARY_PATH's.
	OnLDLibraryPath bool `json:"on_ld_library_path,omitempty"`
	// LoaderConf, for a forward-compatibility libcuda off LD_LIBRARY_PATH,
	// is the /etc/ld.so.conf(.d) file that names its directory when
	// /etc/ld.so.cache holds it: the loader finds it through the cache
	// (NVIDIA Container Toolkit's enable-cuda-compat hook writes such a
	// file).
	LoaderConf string `json:"loader_conf,omitempty"`
	// ShadowedBy, for a forward-compatibility libcuda the loader would
	// reach, is the libcuda.so.1 it finds first (ld.so(8): LD_LIBRARY_PATH
	// in order, then the cache in its ld.so.conf order), if any.
	ShadowedBy string `json:"shadowed_by,omitempty"`
}

// NetPluginLibrary is one libnccl-net*.so file.
type NetPluginLibrary struct {
	Path string `json:"path"`
	// OnLoaderPath says dlopen of its bare name finds it: its directory is
	// on LD_LIBRARY_PATH, in /etc/ld.so.conf(.d) or a default directory,
	// or NCCL_NET_PLUGIN names the path itself.
	OnLoaderPath bool `json:"on_loader_path"`
	// From says where the directory came from ("LD_LIBRARY_PATH",
	// "/etc/ld.so.conf.d/100_ofinccl.conf", "default", "NCCL_NET_PLUGIN",
	// "install directory").
	From string `json:"from"`
}
