package check

import (
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// TestContainerPublicCaptures judges what public reports of containerized
// GPU jobs show (collect/testdata/container/public, each file verbatim and
// its source in that directory's README): the facts a capture states are
// put into a step's container state (inContainer: two GPUs of an 8-GPU
// node, driver 550.54.15 / CUDA 12.4 unless the capture gives the host's),
// each capture must still hold the line the case rests on, and the verdict
// is the one the report's outcome and NVIDIA's documentation give.
func TestContainerPublicCaptures(t *testing.T) {
	const dir = "../collect/testdata/container/public"
	shm := func(rt string, size uint64) *state.Node {
		return inContainer(rt, nil, func(c *state.Container) {
			c.Shm = &state.ShmMount{FSType: "tmpfs", Source: "shm", Root: "/", SizeBytes: size}
		})
	}
	memlock := func(rt string, limit uint64, ib []string) *state.Node {
		n := inContainer(rt, nil, func(c *state.Container) {
			c.Memlock = &state.Rlimit{Soft: u64p(limit), Hard: u64p(limit), Unit: "bytes"}
			c.IBDevices = ib
		})
		n.Slurm.Host.IBDevices = nil
		return n
	}
	// cuda puts the image's CUDA_VERSION, the host driver and GPU name
	// (all GPUs), and compat libraries into a step's node.
	cuda := func(rt, v, driver, driverCUDA, gpu string, compat ...state.NVMLLibrary) *state.Node {
		n := inContainer(rt, []string{"CUDA_VERSION=" + v}, func(c *state.Container) { c.CompatLibraries = compat })
		n.Slurm.Host.CUDARuntime = &slurmstate.CUDARuntime{Version: v, From: "CUDA_VERSION"}
		n.NVML.DriverVersion, n.NVML.CUDADriverVersion = driver, driverCUDA
		for i := range n.NVML.GPUs {
			n.NVML.GPUs[i].Name = gpu
		}
		return n
	}
	notInContainer := inContainer("", nil, func(c *state.Container) {
		c.Evidence = nil
		c.Memlock = &state.Rlimit{Soft: u64p(8192 << 10), Hard: u64p(8192 << 10), Unit: "bytes"}
	})
	runPublicCases(t, dir, []publicCase{
		// Docker's default --shm-size, 64 MB, on 4 × RTX 2080: NCCL 2.7's
		// SHM transport could not create its 9637888-byte segment.
		{file: "nccl342-docker-cuda10.1-shm.txt", anchor: "By default, the shm size is limited to 64MB under docker",
			run: checkContainerShm, node: shm("docker", 64<<20), want: Fail, summary: "is 64 MiB (size=64 MiB)"},
		// An NGC TensorFlow container started without --shm-size: Docker's
		// 64 MB default again.
		{file: "nccl290-ngc-tf-docker-shm.txt", anchor: "--runtime nvidia nvcr.io/nvidia/tensorflow:20.01-tf1-py3",
			run: checkContainerShm, node: shm("docker", 64<<20), want: Fail, summary: "NCCL fails to initialize"},
		// A CI container with /dev/shm of 16 MB on 8 × H100.
		{file: "torchtitan853-ci-container-shm-16mb.txt", anchor: "defaults /dev/shm to 16MB",
			run: checkContainerShm, node: shm("docker", 16<<20), want: Fail, summary: "is 16 MiB"},
		// A Kubernetes runner pod without a memory emptyDir at /dev/shm:
		// the runtime's 64 MB default (the PR adds the tmpfs mount).
		{file: "ciinfra490-k8s-pod-shm.txt", anchor: "failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes",
			run: checkContainerShm, node: shm("kubernetes", 64<<20), want: Fail, summary: "Kubernetes container"},
		// Docker's default RLIMIT_MEMLOCK, 64 KiB (ulimit -l prints KiB):
		// on an InfiniBand host a warning, without one nothing to judge.
		{file: "gardenlinux128-docker-memlock-64k.txt", anchor: "64Kib is the default for Docker",
			run: checkContainerMemlock, node: memlock("docker", 64<<10, []string{"mlx5_0"}), want: Warn, summary: "RLIMIT_MEMLOCK is 64 KiB (soft)"},
		{file: "gardenlinux128-docker-memlock-64k.txt", anchor: "64Kib is the default for Docker",
			run: checkContainerMemlock, node: memlock("docker", 64<<10, nil), want: Pass, summary: "no InfiniBand device"},
		// A container locking at most 64 MB failed ibv_create_cq on mlx5_0.
		{file: "cudfspark7632-container-memlock-rdma.txt", anchor: "ERROR mlx5_0: ibv_create_cq() failed: Cannot allocate memory.",
			run: checkContainerMemlock, node: memlock("docker", 64<<20, []string{"mlx5_0"}), want: Warn, summary: "64 MiB (soft) / 64 MiB (hard)"},
		// ulimit -l 8192 on a host, no container: the container checks
		// judge nothing (the limit is a node matter there).
		{file: "nccltests206-host-ulimit-8192.txt", anchor: "the result of `ulimit -l ` was only 8192",
			run: checkContainerMemlock, node: notInContainer, want: Skip, summary: "not in a container"},
		// Pyxis, NGC PyTorch 21.08 (CUDA 11.4.1) on driver 470.57.02 (CUDA
		// 11.4) and V100: the driver runs it; the image's compat directory
		// is off LD_LIBRARY_PATH (the NGC entrypoint adds it only when
		// needed).
		{file: "enroot100-pyxis-ngc-pytorch-21.08-470.txt", anchor: "Driver Version: 470.57.02    CUDA Version: 11.4",
			run: checkContainerCUDACompat, node: cuda("enroot", "11.4.1", "470.57.02", "11.4", "Tesla V100-SXM2-16GB",
				state.NVMLLibrary{Path: "/usr/local/cuda/compat/lib/libcuda.so.470.57.02", Version: "470.57.02"}),
			want: Pass, summary: "no forward compatibility needed"},
		// CUDA 11.2 on driver 455.45.01 (CUDA 11.1) on a GeForce: minor
		// version compatibility, no compat library needed, and it ran.
		{file: "libnvidiacontainer138-cuda11.2-on-455.txt", anchor: "I can indeed run a CUDA 11.2 container",
			run: checkContainerCUDACompat, node: cuda("docker", "11.2.2", "455.45.01", "11.1", "GeForce GTX 1060 6GB"),
			want: Pass, summary: "no forward compatibility needed"},
		// The cuda-compat-13-0 libcuda (580.173.02) forced onto
		// LD_LIBRARY_PATH on a 595 host, which runs CUDA 13 by itself:
		// error 803. The report names the branch only; 595.45.04 and CUDA
		// 13.2 stand for it (any 595 version and CUDA >= 13.0 give the same
		// verdict).
		{file: "labsmolt44-compat-580-on-595.txt", anchor: "forcing it on a 595 host gives CUDA error 803",
			run: checkContainerCUDACompat, node: cuda("docker", "13.0.0", "595.45.04", "13.2", "NVIDIA H100 80GB HBM3",
				state.NVMLLibrary{Path: "/usr/local/cuda/compat/libcuda.so.580.173.02", Version: "580.173.02", OnLDLibraryPath: true}),
			want: Fail, summary: "cudaErrorSystemDriverMismatch (803"},
		// The same image and host through the image's own entrypoint: the
		// compat directory is left off LD_LIBRARY_PATH and CUDA runs.
		{file: "labsmolt44-compat-580-on-595.txt", anchor: "auto-mode detects 595, skips compat, native CUDA works",
			run: checkContainerCUDACompat, node: cuda("docker", "13.0.0", "595.45.04", "13.2", "NVIDIA H100 80GB HBM3",
				state.NVMLLibrary{Path: "/usr/local/cuda/compat/libcuda.so.580.173.02", Version: "580.173.02"}),
			want: Pass, summary: "no forward compatibility needed"},
		// Error 804 on a GeForce with driver 525.147.05 (CUDA 12.0): CUDA
		// reports 804 only when a forward-compatibility libcuda is loaded.
		// The report does not name the image or its compat library; a CUDA
		// 12.1 image with the cuda-compat-12-1 libcuda (530.30.02) on
		// LD_LIBRARY_PATH is the configuration that yields it.
		{file: "mistral144-geforce-525-804.txt", anchor: "Error 804: forward compatibility was attempted on non supported HW",
			run: checkContainerCUDACompat, node: cuda("docker", "12.1.0", "525.147.05", "12.0", "NVIDIA GeForce RTX 3060",
				state.NVMLLibrary{Path: "/usr/local/cuda/compat/libcuda.so.530.30.02", Version: "530.30.02", OnLDLibraryPath: true}),
			want: Fail, summary: "cudaErrorCompatNotSupportedOnDevice (804)"},
		// Jetson Thor: the Container Toolkit's enable-cuda-compat hook
		// wrote /etc/ld.so.conf.d/00-compat-888138641.conf and ldconfig put
		// the CUDA 13.0 image's compat libcuda first in the cache, ahead of
		// the host's: error 803, gone once the file was removed. The
		// capture names neither the compat file's version (580.65.06, the
		// cuda-compat-13-0 of CUDA 13.0, stands for it) nor the host
		// driver's, which the PR calls unreliable on such systems; the host
		// runs CUDA 13.0 (the fix compares CUDA versions and then leaves the
		// compat library out). Found through the loader cache; with no host
		// driver version to set against it, the verdict is unknown.
		{file: "ntk1679-thor-compat-ldcache-803.txt", anchor: "libcuda.so.1 (libc6,AArch64) => /usr/local/cuda-13.0/compat/libcuda.so.1",
			run: checkContainerCUDACompat, node: cuda("docker", "13.0.0", "", "13.0", "NVIDIA Thor",
				state.NVMLLibrary{Path: "/usr/local/cuda-13.0/compat/libcuda.so.580.65.06", Version: "580.65.06", LoaderConf: "/etc/ld.so.conf.d/00-compat-888138641.conf"}),
			want: Skip, summary: "libcuda /usr/local/cuda-13.0/compat/libcuda.so.580.65.06 from the loader cache (/etc/ld.so.conf.d/00-compat-888138641.conf) replaces the host's"},
		// Error 803 in a CUDA 12.8.1 image, no compat directory on
		// LD_LIBRARY_PATH, the host driver not posted: unknown.
		{file: "nixl441-docker-803-no-compat.txt", anchor: "CUDA Version 12.8.1.012",
			run: checkContainerCUDACompat, node: cuda("docker", "12.8.1", "", "", "NVIDIA H100 80GB HBM3"),
			want: Skip, summary: "driver's CUDA version is unknown"},
	})
}
