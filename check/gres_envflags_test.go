package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/slurm"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// Issue 33, classes 4 and 6: gres.conf Flags=no_gpu_env, or amd_gpu_env on
// NVIDIA GPUs, make slurmd set no CUDA_VISIBLE_DEVICES (gres.conf(5):
// "no_gpu_env: Set no GPU-specific environment variables"; without
// nvidia_gpu_env CUDA_VISIBLE_DEVICES is not set). Without ConstrainDevices
// every step then sees every GPU.
const envFlagsSlurm = "GresTypes=gpu\nTaskPlugin=task/cgroup\nNodeName=gpu001 Gres=gpu:8 CPUs=224\n"

func envFlagsGres(flags string) string {
	return "NodeName=gpu001 Name=gpu File=/dev/nvidia[0-7] Flags=" + flags + "\n"
}

func TestSlurmGresEnvFlags(t *testing.T) {
	const h100 = "NVIDIA H100 80GB HBM3"
	noCg := "ConstrainDevices=no\n"
	cg := "ConstrainDevices=yes\n"
	runCases(t, checkSlurmGres, []checkCase{
		{name: "no_gpu_env without ConstrainDevices", node: gresNode("gpu001", 8, h100, nil, confs{slurm: envFlagsSlurm, gres: envFlagsGres("no_gpu_env"), cgroup: noCg}, nil),
			status: Fail, summary: "Flags=no_gpu_env (gres.conf:1) sets no CUDA_VISIBLE_DEVICES, and without ConstrainDevices every job step can use every GPU", remedy: "ConstrainDevices=yes"},
		{name: "amd_gpu_env on NVIDIA without ConstrainDevices", node: gresNode("gpu001", 8, h100, nil, confs{slurm: envFlagsSlurm, gres: envFlagsGres("amd_gpu_env"), cgroup: noCg}, nil),
			status: Fail, summary: "Flags=amd_gpu_env (gres.conf:1) sets no CUDA_VISIBLE_DEVICES on these NVIDIA GPUs", remedy: "nvidia_gpu_env"},
		{name: "amd_gpu_env on NVIDIA with ConstrainDevices", node: gresNode("gpu001", 8, h100, nil, confs{slurm: envFlagsSlurm, gres: envFlagsGres("amd_gpu_env"), cgroup: cg}, nil),
			status: Warn, summary: "Flags=amd_gpu_env (gres.conf:1) sets no CUDA_VISIBLE_DEVICES on these NVIDIA GPUs"},
		{name: "no_gpu_env with ConstrainDevices: the cgroup confines", node: gresNode("gpu001", 8, h100, nil, confs{slurm: envFlagsSlurm, gres: envFlagsGres("no_gpu_env"), cgroup: cg}, nil),
			status: Pass},
		{name: "nvidia_gpu_env,amd_gpu_env", node: gresNode("gpu001", 8, h100, nil, confs{slurm: envFlagsSlurm, gres: envFlagsGres("nvidia_gpu_env,amd_gpu_env"), cgroup: noCg}, nil),
			status: Pass},
	})
}

// The step's side: Slurm allocated GPUs 0,1 but set no CUDA_VISIBLE_DEVICES
// (amd_gpu_env left ROCR_VISIBLE_DEVICES=0,1). The FAIL is right, the fix
// is the admin's: it said "request GPUs per task".
func TestVisibleDevicesEnvFlags(t *testing.T) {
	withGres := func(flags string) func(n *state.Node) {
		return func(n *state.Node) {
			n.Slurm.Conf = &slurmstate.Conf{GresConfPath: "/etc/slurm/gres.conf", GresConf: slurm.ParseGresConfData("/etc/slurm/gres.conf", []byte(envFlagsGres(flags)))}
		}
	}
	runCases(t, checkVisibleDevices, []checkCase{
		{name: "no_gpu_env", node: jobNode(oneNode(step(0, 1, "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2")), withGres("no_gpu_env")),
			status: Fail, summary: "gres.conf Flags=no_gpu_env (gres.conf:1) makes Slurm set no CUDA_VISIBLE_DEVICES", remedy: "ask the admins", devices: []int{2, 3, 4, 5, 6, 7}},
		{name: "amd_gpu_env", node: jobNode(oneNode(step(0, 1, "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "ROCR_VISIBLE_DEVICES=0,1")), withGres("amd_gpu_env")),
			status: Fail, summary: "gres.conf Flags=amd_gpu_env (gres.conf:1) makes Slurm set no CUDA_VISIBLE_DEVICES", remedy: "nvidia_gpu_env", devices: []int{2, 3, 4, 5, 6, 7}},
		// gres.conf not readable here: ROCR_VISIBLE_DEVICES without
		// CUDA_VISIBLE_DEVICES is amd_gpu_env's mark.
		{name: "amd_gpu_env seen from the environment only", node: jobNode(oneNode(step(0, 1, "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "ROCR_VISIBLE_DEVICES=0,1")), nil),
			status: Fail, summary: "Slurm set ROCR_VISIBLE_DEVICES=0,1 but no CUDA_VISIBLE_DEVICES", remedy: "nvidia_gpu_env", devices: []int{2, 3, 4, 5, 6, 7}},
		// opencl_env's GPU_DEVICE_ORDINAL, from the same list
		// (gres_common.c gres_common_gpu_set_env): it said "avoid
		// --gpu-bind=none", which sets or clears both alike
		// (testdata/realenv/awslabs71-*).
		{name: "opencl_env seen from the environment only", node: jobNode(oneNode(step(0, 1, "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "GPU_DEVICE_ORDINAL=0,1")), nil),
			status: Fail, summary: "Slurm set GPU_DEVICE_ORDINAL=0,1 but no CUDA_VISIBLE_DEVICES, which it sets from the same list (gres.conf Flags=opencl_env without nvidia_gpu_env, or the job unset CUDA_VISIBLE_DEVICES)", remedy: "nvidia_gpu_env", devices: []int{2, 3, 4, 5, 6, 7}},
	})
	if r := checkVisibleDevices(jobNode(oneNode(step(0, 1, "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2", "GPU_DEVICE_ORDINAL=0,1")), nil), DefaultConfig()); strings.Contains(r.Remedy, "--gpu-bind=none") {
		t.Errorf("remedy blames --gpu-bind=none, which would have unset GPU_DEVICE_ORDINAL too: %q", r.Remedy)
	}
	r := checkVisibleDevices(jobNode(oneNode(step(0, 1, "SLURM_STEP_GPUS=0,1", "SLURM_GPUS_ON_NODE=2")), withGres("no_gpu_env")), DefaultConfig())
	if strings.Contains(r.Remedy, "request GPUs per task") {
		t.Errorf("remedy blames the user: %q", r.Remedy)
	}
}
