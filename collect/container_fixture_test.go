package collect

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// TestContainerFixtures reads the Enroot/Pyxis and Apptainer fixtures
// (testdata/container/*/: a task's /proc/self/mountinfo, /proc/self/limits
// and environment, laid out as each runtime's documented mounts and hooks
// make them; README.md there gives the source of each) through the
// collector, judges them with the container checks on an 8-GPU H100 node
// with two HCAs (driver 550.54.15, CUDA 12.4), and wants each failure found
// with its fix in that runtime's own terms.
func TestContainerFixtures(t *testing.T) {
	type want struct {
		id, status, summary, remedy string
	}
	dir := &fstest.MapFile{Mode: os.ModeDir | 0o755}
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, c := range []struct {
		fixture string
		runtime string
		files   map[string]*fstest.MapFile // beyond /proc/self and the host's sysfs
		want    []want
	}{
		{fixture: "enroot-pyxis-restrict-dev", runtime: "enroot",
			// ENROOT_RESTRICT_DEV: a fresh /dev (conf/hooks/10-devices.sh), no
			// Mellanox hook (MELLANOX_VISIBLE_DEVICES unset), so no verbs
			// devices and no mount at /dev/shm.
			want: []want{
				{"container.rdma_devices", "fail", "Enroot/Pyxis container (env ENROOT_RESTRICT_DEV=y)", "MELLANOX_VISIBLE_DEVICES=all"},
				{"container.rdma_devices", "fail", "no /dev/infiniband/uverbs*", "99-mellanox.sh"},
				{"container.rdma_devices", "fail", "", "unset ENROOT_RESTRICT_DEV"},
				{"container.memlock", "warn", "RLIMIT_MEMLOCK is 64 KiB", "PropagateResourceLimitsExcept=MEMLOCK"},
				{"container.visible_devices", "fail", `NVIDIA_VISIBLE_DEVICES="void"`, "NVIDIA_VISIBLE_DEVICES=$SLURM_STEP_GPUS"},
				{"container.cuda_compat", "fail", "CUDA 13.0.1 in this Enroot/Pyxis container", "srun --container-image=<older tag>"},
				{"container.shm", "skip", "no mount at /dev/shm", ""},
			}},
		{fixture: "enroot-pyxis-default", runtime: "enroot",
			// Enroot's defaults (conf/mounts/10-system.fstab): the host's /dev
			// and /dev/shm bound in; this node's /dev/shm is 64 MiB.
			files: map[string]*fstest.MapFile{"dev/infiniband/uverbs0": file(""), "dev/infiniband/uverbs1": file(""), "dev/infiniband/rdma_cm": file("")},
			want: []want{
				{"container.shm", "fail", "Pyxis srun option)) is 64 MiB", "set ENROOT_UNSHARE_IPC=y"},
				{"container.rdma_devices", "pass", "2 verbs device(s)", ""},
				{"container.memlock", "warn", "RLIMIT_MEMLOCK is 8 MiB", "LimitMEMLOCK=infinity"},
				{"container.visible_devices", "pass", "agrees with Slurm's GPUs", ""},
				{"container.cuda_compat", "pass", "no forward compatibility needed", ""},
			}},
		{fixture: "apptainer-contain", runtime: "apptainer",
			// apptainer exec --contain without --nv: a session /dev with its
			// own tmpfs /dev/shm (mode=1777, no size=: half of RAM), the
			// image's own libnvidia-ml, no forward-compatibility libcuda.
			files: map[string]*fstest.MapFile{
				".singularity.d/env/91-environment.sh":                file("#!/bin/sh\n"),
				"usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.183.01": file("ELF"),
			},
			want: []want{
				{"container.rdma_devices", "fail", "Apptainer container (env APPTAINER_CONTAINER=/scratch/alice/pytorch-25.01.sif)", "--bind /dev/infiniband"},
				{"container.rdma_devices", "fail", "", "--contain"},
				{"container.memlock", "warn", "RLIMIT_MEMLOCK is 64 KiB", "Apptainer keeps the step's limits"},
				{"container.driver_libs", "fail", "libnvidia-ml.so.535.183.01 (NVML 535.183.01)", "apptainer exec --nv"},
				{"container.cuda_compat", "fail", "CUDA 13.0.1 in this Apptainer container", "build the .sif"},
				{"container.shm", "pass", "tmpfs default, half of MemTotal", ""},
			}},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			read := func(name string) string { return mustRead(t, filepath.Join("testdata/container", c.fixture, name)) }
			env := strings.Split(strings.TrimSpace(read("environ")), "\n")
			view := fstest.MapFS{
				"proc/self/mountinfo":         file(read("mountinfo")),
				"proc/self/limits":            file(read("limits")),
				"proc/meminfo":                file("MemTotal:       2113155272 kB\n"),
				"proc/1/cgroup":               file("0::/\n"),
				"sys/class/infiniband/mlx5_0": dir,
				"sys/class/infiniband/mlx5_1": dir,
				"sys/module/nvidia/version":   file("550.54.15\n"),
			}
			for p, f := range c.files {
				view[p] = f
			}
			ct := readContainer(view, view, "/proc", "/sys", env)
			if ct.Runtime != c.runtime || len(ct.Errors) > 0 {
				t.Fatalf("runtime %q (want %q), errors %v, evidence %+v", ct.Runtime, c.runtime, ct.Errors, ct.Evidence)
			}
			e := slurmstate.ParseEnv(env)
			in, why := e.InJobStep()
			n := &state.Node{SchemaVersion: state.SchemaVersion, Container: ct,
				NVML: &state.NVML{Available: true, DriverVersion: "550.54.15", CUDADriverVersion: "12.4", DeviceCount: 8},
				Slurm: &slurmstate.State{NodeName: "gpu001", InJob: in, JobReason: why, Env: e,
					Host: &slurmstate.Host{IBDevices: []string{"mlx5_0", "mlx5_1"}, CUDARuntime: &slurmstate.CUDARuntime{Version: e.CUDAVersion, From: "CUDA_VERSION"}}}}
			for i := 0; i < 8; i++ {
				n.NVML.GPUs = append(n.NVML.GPUs, state.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3"})
			}
			checks, err := check.Select([]string{"container"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]check.Result{}
			for _, r := range check.Run(context.Background(), n, check.DefaultConfig(), checks) {
				got[r.ID] = r
			}
			for _, w := range c.want {
				r := got[w.id]
				if string(r.Status) != w.status || !strings.Contains(r.Summary, w.summary) || !strings.Contains(r.Remedy, w.remedy) {
					t.Errorf("%s: got %s %q\n  fix %q\nwant %s %q fix %q", w.id, r.Status, r.Summary, r.Remedy, w.status, w.summary, w.remedy)
				}
			}
		})
	}
}
