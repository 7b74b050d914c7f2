package check

import (
	"bufio"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// The real-environment corpus: environments of real Slurm job steps that
// people posted in public (state/slurmstate/testdata/realenv, each with a
// .source naming where it was posted, what ran and what the poster said
// happened). Every job-scope check runs on every dump, and each verdict is
// the one a careful admin gives for that dump: a healthy step must not be
// alarmed on, a reported fault must be caught, and where the dump cannot
// decide, the check must say so rather than guess.
//
// The node around a dump is what the dump and its report say, else a
// plausible 8-GPU node; what neither says stays unknown: the GPUs' NUMA
// locality (no CPU affinity, no topology, so job.numa_affinity skips) and
// the task's CPU mask unless SLURM_CPU_BIND_LIST gives it (srun(1): "the
// CPU mask used for binding").
const realEnvDir = "../state/slurmstate/testdata/realenv"

// realEnvNode describes the machine a dump ran on.
type realEnvNode struct {
	model string
	gpus  int // GPUs NVML sees from inside the step
	// cgroupGPUs are the GPUs (global indexes) a device cgroup lets the
	// step open, renumbered from 0 inside it (ConstrainDevices); nil for
	// no device cgroup.
	cgroupGPUs []int
	nodeGPUs   int // device files on the node
	// devFiles, when set, are the only /dev/nvidiaN the task has (a
	// container that exposes the allocated GPUs alone); nil: 0..nodeGPUs-1.
	devFiles   []int
	memoryGiB  uint64
	driverCUDA string
	// procs are the compute processes NVML lists on the node's GPUs, as
	// the report names them (owner, command, memory, cgroup's job).
	procs []realEnvProc
	// localCPUs are the CPUs local to each GPU (global index), where the
	// report shows them (nvidia-smi topo -m's CPU Affinity); nil: unknown,
	// and job.numa_affinity skips.
	localCPUs map[int][]int
	// mig, when set, are the MIG instance UUIDs of each GPU NVML sees
	// (NVML index), which is then in MIG mode.
	mig [][]string
}

var (
	// Sherlock's reports say "GPU: 1x NVIDIA H200" (or H100) from inside
	// the step: ConstrainDevices lets the step open only its GPU, which
	// NVML and CUDA number 0. How many the node has is not in the report;
	// 8 device files is plausible and changes no verdict (the others are
	// denied).
	sherlockH200 = func(global int) realEnvNode {
		return realEnvNode{model: "NVIDIA H200", gpus: 1, cgroupGPUs: []int{global}, nodeGPUs: 8, memoryGiB: 141, driverCUDA: "12.4"}
	}
	sherlockH100 = func(global int) realEnvNode {
		return realEnvNode{model: "NVIDIA H100 80GB HBM3", gpus: 1, cgroupGPUs: []int{global}, nodeGPUs: 8, memoryGiB: 80, driverCUDA: "12.4"}
	}
	// awslabs #71 does not name the instance; its --gres=gpu:a100:4 on a
	// node with more than four A100s reads as a p4d (8 × A100), and
	// nothing says the GPUs were constrained.
	p4d = realEnvNode{model: "NVIDIA A100-SXM4-40GB", gpus: 8, nodeGPUs: 8, memoryGiB: 40, driverCUDA: "12.2"}
	// Chimera's report: "GPU: 1x NVIDIA H100 80GB HBM3" seen by the
	// process; the node's other GPUs (if any) are not in the report.
	chimeraH100 = realEnvNode{model: "NVIDIA H100 80GB HBM3", gpus: 1, nodeGPUs: 1, memoryGiB: 80, driverCUDA: "12.6"}
	// The same cluster's GPUC960 report: "1x NVIDIA H100 80GB HBM3",
	// CUDA 12.2 (driver 535); the node's other GPUs are not in it.
	chimeraGPUC960 = realEnvNode{model: "NVIDIA H100 80GB HBM3", gpus: 1, nodeGPUs: 1, memoryGiB: 80, driverCUDA: "12.2"}
	// NCHC Nano4's 25a-hgpn026: eight H200s (the guide's topo -m), the
	// step's two (global 1 and 3) behind a device cgroup (its salloc +
	// ssh nvidia-smi lists one GPU of the node's eight).
	// pyxis#47: an A100 node without ConstrainDevices whose container
	// had /dev/nvidia2 alone for a 1-GPU step: NVML there sees one GPU,
	// numbered 0. How many the node has the thread does not say; the
	// maintainer asked for /dev/nvidia{0..7}.
	pyxis47 = realEnvNode{model: "NVIDIA A100-SXM4-40GB", gpus: 1, devFiles: []int{2}, nodeGPUs: 8, memoryGiB: 40, driverCUDA: "11.2"}
	// Mila's batch job: four GPUs (NVML's 0-3 are the node's 1,2,3,5
	// behind ConstrainDevices). The note names no model and no device
	// files: none are collected here, so Slurm's numbering decides.
	milaNode = realEnvNode{model: "NVIDIA A100-SXM4-80GB", gpus: 4, cgroupGPUs: []int{1, 2, 3, 5}, memoryGiB: 80, driverCUDA: "12.2"}
	// UVA's udc-an38-13: RTX A6000s, the job's behind ConstrainDevices
	// (SLURM_JOB_GPUS=0,4 read as CUDA_VISIBLE_DEVICES=0,1); eight is
	// plausible, the report does not count them.
	uvaA6000 = func(global ...int) realEnvNode {
		return realEnvNode{model: "NVIDIA RTX A6000", gpus: len(global), cgroupGPUs: global, nodeGPUs: 8, memoryGiB: 48, driverCUDA: "12.4"}
	}
	// ACCRE's dgx03: eight A100-80GB, ConstrainDevices (one GPU opens in
	// the job), and on the job's GPU 3 a PyTorch process of another user
	// from an SSH session, outside any job.
	accreDGX03 = realEnvNode{model: "NVIDIA A100-SXM4-80GB", gpus: 1, cgroupGPUs: []int{3}, nodeGPUs: 8, memoryGiB: 80, driverCUDA: "12.4",
		procs: []realEnvProc{{gpu: 3, pid: 930652, uid: 934717, user: "wut18", comm: "pt_main_thread", memMiB: 50846}}}
	// dorado#1586: two H200 NVL in MIG mode, as the report's nvidia-smi
	// -L lists them: one 1g.18gb instance on GPU 0, three on GPU 1 (two of
	// those UUIDs are cut in the report: placeholders). Whether a device
	// cgroup confines the step the report does not say; none here.
	dorado1586 = realEnvNode{model: "NVIDIA H200 NVL", gpus: 2, nodeGPUs: 2, memoryGiB: 141, driverCUDA: "12.8",
		mig: [][]string{{"MIG-8210e6aa-6e55-5fcc-b76a-18069cb47525"},
			{"MIG-69119060-baa9-56cb-8d2a-a144214426ae", "MIG-00000000-0000-0000-0000-000000000002", "MIG-00000000-0000-0000-0000-000000000003"}}}
	// Perlmutter's GPU node: four A100-SXM4-40GB, all the job's (salloc
	// --gpus-per-node=4). Whether a device cgroup confines the step does
	// not matter here: every GPU is allocated.
	perlmutter = realEnvNode{model: "NVIDIA A100-SXM4-40GB", gpus: 4, nodeGPUs: 4, memoryGiB: 40, driverCUDA: "12.2"}
	// lightning#16236's vesta7: the thread names no model and no count;
	// eight GPUs (the job's are 5 and 6) and no device cgroup is what the
	// dump leaves open: read literally, as the filtered dumps are.
	vesta7 = realEnvNode{model: "NVIDIA GPU", gpus: 8, nodeGPUs: 8, memoryGiB: 24, driverCUDA: "12.0"}
	nano4  = realEnvNode{model: "NVIDIA H200", gpus: 2, cgroupGPUs: []int{1, 3}, nodeGPUs: 8, memoryGiB: 141, driverCUDA: "13.0"}
)

// realEnvProc is a process a report saw on a GPU (global index).
type realEnvProc struct {
	gpu    int
	pid    uint32
	uid    int
	user   string
	comm   string
	memMiB uint64
	jobID  string // "" outside any job (its cgroup names none)
}

type realEnvWant struct {
	status Status
	has    []string // substrings the summary must hold
	hasNot []string // substrings it must not hold (a wrong fact, stated)
}

type realEnvCase struct {
	file string
	node realEnvNode
	// job runs the checks as --job does: for a dump filtered by grep,
	// which drops SLURM_JOB_ID and every identity variable, but whose
	// GPU variables come from a real step.
	job  bool
	want map[string]realEnvWant
}

func TestRealEnvCorpus(t *testing.T) {
	sherlock := func(step string, cpus string, cpg string) map[string]realEnvWant {
		return map[string]realEnvWant{
			"job.visible_devices": {Pass, []string{"sees GPU 0, as allocated (SLURM_STEP_GPUS=" + step + ")", "device cgroup"}, nil},
			"job.gpu_sharing":     {Pass, []string{"1 task(s) on this node (SLURM_STEP_TASKS_PER_NODE=1) = 1 GPU processes on 1 GPU(s) (SLURM_GPUS_ON_NODE); this task sees 1"}, nil},
			"job.numa_affinity":   {Skip, nil, []string{"another NUMA node"}},
			"job.cpus_per_gpu":    {Pass, []string{cpg + " CPUs per GPU (SLURM_CPUS_ON_NODE=" + cpus + " / SLURM_GPUS_ON_NODE=1)"}, nil},
			"job.exclusive":       {Pass, []string{"no other job's processes on GPU 0"}, nil},
			"job.master_addr":     {Skip, []string{"MASTER_ADDR is not set"}, nil},
			"job.nccl_env":        {Pass, []string{"no NCCL_* variables set"}, nil},
			"job.cuda_compat":     {Skip, nil, nil},
			"job.gpu_memory":      {Skip, []string{"no minimum set"}, nil},
		}
	}
	// A grep GPU dump: Slurm gave GPUs 0-3 (SLURM_STEP_GPUS,
	// SLURM_GPUS_ON_NODE=4, GPU_DEVICE_ORDINAL), and the dump has no
	// CUDA_VISIBLE_DEVICES. Read literally (the environment gpuprobe would
	// be handed), CUDA can use all eight GPUs of an unconstrained node: a
	// FAIL. Why CUDA_VISIBLE_DEVICES is missing is not --gpu-bind=none,
	// which leaves GPU_DEVICE_ORDINAL unset too (gres_common.c sets and
	// unsets both from one list): the site's gres.conf lacks nvidia_gpu_env,
	// or the job unset it; here it was the poster's grep, which the
	// verdict cannot know, and must not blame on a binding option.
	awsFiltered := map[string]realEnvWant{
		"job.visible_devices": {Fail, []string{"visible to this task but not allocated to it (SLURM_STEP_GPUS=0-3)", "GPU_DEVICE_ORDINAL=0,1,2,3"}, []string{"--gpu-bind=none"}},
		"job.gpu_sharing":     {Pass, []string{"one task assumed", "on 4 GPU(s) (SLURM_GPUS_ON_NODE); this task sees 8"}, nil},
		"job.numa_affinity":   {Skip, []string{"CPU mask was not collected"}, nil},
		"job.cpus_per_gpu":    {Skip, []string{"CPU count is unknown"}, nil},
		"job.exclusive":       {Pass, nil, nil},
		"job.master_addr":     {Skip, nil, nil},
		"job.nccl_env":        {Pass, nil, nil},
		"job.cuda_compat":     {Skip, nil, nil},
		"job.gpu_memory":      {Skip, nil, nil},
	}
	// Chimera: SLURM_JOB_ID and nothing else from Slurm, on a GPU node.
	// Not a task slurmd started, so the job checks skip; but "salloc's
	// shell, which runs where salloc was started" is a guess the dump
	// contradicts (the process saw an H100): salloc(1) exports the job's
	// node list and counts too, and none of them is here.
	chimera := map[string]realEnvWant{}
	for _, id := range []string{"job.visible_devices", "job.gpu_sharing", "job.numa_affinity", "job.cpus_per_gpu", "job.exclusive", "job.master_addr", "job.nccl_env", "job.cuda_compat", "job.gpu_memory"} {
		chimera[id] = realEnvWant{Skip, []string{"not a task Slurm started", "SLURM_JOB_ID=2308582"}, []string{"salloc's shell, which runs where salloc was started", "allocated no GPUs"}}
	}

	// NCHC Nano4: srun -n 1 --gres=gpu:2 printenv | grep SLURM. The grep
	// hides CUDA_VISIBLE_DEVICES; read literally (unset), CUDA sees what
	// the device cgroup lets through, the two allocated GPUs. One CPU for
	// two GPUs is below the 4 per GPU the default asks.
	nano4Want := map[string]realEnvWant{
		"job.visible_devices": {Pass, []string{"sees GPU 0,1, as allocated (SLURM_STEP_GPUS=1,3)", "device cgroup"}, nil},
		"job.gpu_sharing":     {Pass, []string{"1 task(s) on this node (SLURM_STEP_TASKS_PER_NODE=1) = 1 GPU processes on 2 GPU(s) (SLURM_GPUS_ON_NODE)"}, nil},
		"job.numa_affinity":   {Skip, []string{"NUMA locality unknown"}, nil},
		"job.cpus_per_gpu":    {Warn, []string{"0.5 CPUs per GPU (SLURM_CPUS_ON_NODE=1 / SLURM_GPUS_ON_NODE=2)"}, nil},
		"job.exclusive":       {Pass, nil, nil},
		"job.master_addr":     {Skip, nil, nil},
		"job.nccl_env":        {Pass, nil, nil},
		"job.cuda_compat":     {Skip, nil, nil},
		"job.gpu_memory":      {Skip, nil, nil},
	}
	// Chimera GPUC960: salloc's interactive step, which Slurm gives the
	// job's GPU as SLURM_JOB_GPUS (no SLURM_STEP_GPUS) and one task,
	// though the job's SLURM_TASKS_PER_NODE is 8.
	gpuc960 := map[string]realEnvWant{
		"job.visible_devices": {Pass, []string{"sees GPU 0, as allocated (SLURM_JOB_GPUS=0)"}, nil},
		"job.gpu_sharing":     {Pass, []string{"the interactive step (SLURM_STEP_ID=4294967290) is one process", "on 1 GPU(s) (SLURM_GPUS_ON_NODE); this task sees 1"}, []string{"8 task"}},
		"job.numa_affinity":   {Skip, []string{"CPU mask was not collected"}, nil},
		"job.cpus_per_gpu":    {Pass, []string{"8.0 CPUs per GPU (SLURM_CPUS_ON_NODE=8 / SLURM_GPUS_ON_NODE=1)"}, nil},
		"job.exclusive":       {Pass, nil, nil},
		"job.master_addr":     {Skip, nil, nil},
		"job.nccl_env":        {Pass, nil, nil},
		"job.cuda_compat":     {Skip, nil, nil},
		"job.gpu_memory":      {Skip, nil, nil},
	}

	// pyxis#47: CUDA_VISIBLE_DEVICES=2, the node's number, in a container
	// that shows only /dev/nvidia2, which NVML and CUDA number 0: "no
	// CUDA-capable device is detected", fixed by ConstrainDevices=yes
	// (Slurm then writes indexes from 0). It used to blame the job script
	// ("fix CUDA_VISIBLE_DEVICES or the job script that sets it") and call
	// the indexes global.
	noGPU := realEnvWant{Skip, nil, nil}
	pyxis47Want := map[string]realEnvWant{
		"job.visible_devices": {Fail, []string{"entry 2 is the node's number of /dev/nvidia2", "CUDA has no device 2 here", "renumbered: this task has only /dev/nvidia2", "ConstrainDevices=yes"},
			[]string{"the job script that sets it", "indexes are global"}},
		"job.gpu_sharing": noGPU, "job.numa_affinity": noGPU, "job.cpus_per_gpu": noGPU, "job.exclusive": noGPU,
		"job.master_addr": noGPU, "job.nccl_env": {Pass, nil, nil}, "job.cuda_compat": noGPU, "job.gpu_memory": noGPU,
	}

	// Mila: SLURM_JOB_GPUS=1,2,3,5 with CUDA_VISIBLE_DEVICES and
	// GPU_DEVICE_ORDINAL 0,1,2,3, no device files collected. It used to
	// take the indexes as global and fail "GPU 0 visible but not
	// allocated" and "Slurm allocated GPU 5, NVML sees only 4 GPUs".
	milaWant := map[string]realEnvWant{
		"job.visible_devices": {Pass, []string{"sees GPU 0-3, as allocated (SLURM_JOB_GPUS=1-3,5)", "Slurm numbered CUDA_VISIBLE_DEVICES from 0 (0,1,2,3, as GPU_DEVICE_ORDINAL)"}, []string{"not allocated", "indexes taken as global"}},
		"job.gpu_sharing":     {Pass, []string{"one task assumed", "on 4 GPU(s)"}, nil},
		"job.numa_affinity":   noGPU, "job.cpus_per_gpu": {Skip, []string{"CPU count is unknown"}, nil},
		"job.exclusive": {Pass, nil, nil}, "job.master_addr": noGPU, "job.nccl_env": {Pass, nil, nil}, "job.cuda_compat": noGPU, "job.gpu_memory": noGPU,
	}

	// UVA: grep'd environments of a batch script and of an srun step.
	uvaWant := func(seen string) map[string]realEnvWant {
		return map[string]realEnvWant{
			"job.visible_devices": {Pass, []string{seen, "device cgroup"}, nil},
			"job.gpu_sharing":     {Pass, []string{"one task assumed"}, nil},
			"job.numa_affinity":   noGPU, "job.cpus_per_gpu": {Skip, []string{"CPU count is unknown"}, nil},
			"job.exclusive": {Pass, nil, nil}, "job.master_addr": noGPU, "job.nccl_env": {Pass, nil, nil}, "job.cuda_compat": noGPU, "job.gpu_memory": noGPU,
		}
	}

	// ACCRE dgx03: another user's process outside Slurm on this job's GPU.
	accreWant := map[string]realEnvWant{
		"job.visible_devices": {Pass, []string{"sees GPU 0, as allocated (SLURM_JOB_GPUS=3)", "device cgroup"}, nil},
		"job.gpu_sharing":     {Pass, []string{"the batch script (no SLURM_STEP_ID) is one process"}, nil},
		"job.numa_affinity":   noGPU, "job.cpus_per_gpu": {Skip, []string{"CPU count is unknown"}, nil},
		"job.exclusive":   {Fail, []string{"pid 930652 (wut18, pt_main_thread) is not part of job 12450379"}, nil},
		"job.master_addr": noGPU, "job.nccl_env": {Pass, nil, nil}, "job.cuda_compat": noGPU, "job.gpu_memory": noGPU,
	}

	// Perlmutter (redrock#321): salloc's shell on the GPU node, whose
	// SLURM_STEP_ID the stored copy cuts off; SLURM_PTY_PORT says it is an
	// interactive step, and it used to be called "the batch script".
	// SLURM_JOB_GPUS=0-3 is the whole node; one shell on four GPUs.
	perlmutterWant := map[string]realEnvWant{
		"job.visible_devices": {Pass, []string{"sees GPU 0-3, as allocated (SLURM_JOB_GPUS=0-3)"}, nil},
		"job.gpu_sharing": {Pass, []string{"the batch script or an interactive shell (no SLURM_STEP_ID; SLURM_PTY_PORT", "on 4 GPU(s) (SLURM_GPUS_ON_NODE); this task sees 4"},
			[]string{"the batch script (no SLURM_STEP_ID) is one process"}},
		"job.numa_affinity": noGPU, "job.cpus_per_gpu": {Pass, []string{"32.0 CPUs per GPU (SLURM_CPUS_ON_NODE=128 / SLURM_GPUS_ON_NODE=4)"}, nil},
		"job.exclusive": {Pass, nil, nil}, "job.master_addr": noGPU, "job.nccl_env": {Pass, nil, nil}, "job.cuda_compat": noGPU, "job.gpu_memory": noGPU,
	}

	// lightning#16236: rank 1 of a 2-task step on GPUs 5 and 6; the
	// stored copy starts after CUDA_VISIBLE_DEVICES. Read literally (as
	// awsFiltered): unset, so both tasks can use all eight GPUs, and the
	// Slurm allocation (SLURM_STEP_GPUS=5,6) is what the verdict names.
	lightningWant := map[string]realEnvWant{
		"job.visible_devices": {Fail, []string{"visible to this task but not allocated to it (SLURM_STEP_GPUS=5,6)", "CUDA_VISIBLE_DEVICES is unset"}, nil},
		"job.gpu_sharing":     {Warn, []string{"2 tasks on this node each see all 8 GPUs"}, nil},
		"job.numa_affinity":   {Skip, []string{"CPU mask was not collected"}, nil},
		"job.cpus_per_gpu":    {Skip, []string{"CPU count is unknown"}, nil},
		"job.exclusive":       {Pass, nil, nil}, "job.master_addr": noGPU, "job.nccl_env": {Pass, nil, nil}, "job.cuda_compat": noGPU, "job.gpu_memory": noGPU,
	}

	// dorado#1586: CUDA_VISIBLE_DEVICES=0,1,2,3 on two GPUs in MIG mode
	// with four instances. CUDA numbers MIG devices there, not NVML's
	// GPUs; it used to fail "index 2, but NVML sees only 2 GPUs". Which
	// GPU each index is cannot be told: the checks that need it say so.
	// No Slurm variable was quoted: "no GPUs allocated" is the dump's.
	migUnknown := realEnvWant{Skip, []string{"which GPUs this task uses is unknown", "4 CUDA_VISIBLE_DEVICES entries name MIG devices"}, []string{"no GPUs visible"}}
	doradoWant := map[string]realEnvWant{
		"job.visible_devices": {Pass, []string{"sees 4 CUDA device(s) by MIG instance, not mapped to NVML's GPUs", "in MIG mode CUDA_VISIBLE_DEVICES indexes count CUDA devices"}, []string{"NVML sees only 2 GPUs", "sees GPU none", "global"}},
		"job.gpu_sharing":     migUnknown, "job.cpus_per_gpu": migUnknown, "job.exclusive": migUnknown,
		"job.numa_affinity": {Skip, []string{"CPU mask was not collected"}, nil},
		"job.master_addr":   noGPU, "job.nccl_env": {Pass, nil, nil}, "job.cuda_compat": noGPU, "job.gpu_memory": noGPU,
	}

	// JADE (jade-hpc-gpu.github.io#13): `srun --gres=gpu:2 printenv |
	// grep CUDA_VISIBLE_DEVICES` on a DGX-1 without a device cgroup (the
	// same step in a container saw all 8). Read literally, as the other
	// grep dumps: CUDA_VISIBLE_DEVICES with no Slurm GPU variable is one
	// the job set (Slurm sets it beside SLURM_STEP_GPUS / SLURM_JOB_GPUS,
	// gres_common.c gres_common_gpu_set_env), so a warning, never a
	// failure: the GPUs may be another job's, or (as here) the grep hid
	// Slurm's variables.
	jadeWant := map[string]realEnvWant{
		"job.visible_devices": {Warn, []string{"Slurm allocated no GPUs to this step, yet CUDA_VISIBLE_DEVICES=2,3 gives this task GPU 2,3", "another job's, maybe"}, nil},
		"job.gpu_sharing":     {Pass, []string{"one task assumed", "this task sees 2"}, nil},
		"job.numa_affinity":   {Skip, []string{"CPU mask was not collected"}, nil},
		"job.cpus_per_gpu":    {Skip, []string{"CPU count is unknown"}, nil},
		"job.exclusive":       {Pass, []string{"no other job's processes on GPU 2,3"}, nil},
		"job.master_addr":     noGPU, "job.nccl_env": {Pass, nil, nil}, "job.cuda_compat": noGPU, "job.gpu_memory": noGPU,
	}

	cases := []realEnvCase{
		{file: "jade13-dgx1-srun-gres2-grep-cvd.env", node: realEnvNode{model: "Tesla P100-SXM2-16GB", gpus: 8, nodeGPUs: 8, memoryGiB: 16, driverCUDA: "9.0"}, job: true, want: jadeWant},
		{file: "perlmutter-redrock321-salloc-interactive-jobgpus-0-3.env", node: perlmutter, want: perlmutterWant},
		{file: "lightning16236-ddp-2tasks-stepgpus-56-rank1.env", node: vesta7, want: lightningWant},
		{file: "dorado1586-mig-h200nvl-4inst-cvd-0-3.env", node: dorado1586, job: true, want: doradoWant},
		{file: "accre-dgx03-rogue-ssh-process.env", node: accreDGX03, want: accreWant},
		{file: "uva-batch-gres-a6000x2-grep.env", node: uvaA6000(0, 4), job: true, want: uvaWant("sees GPU 0,1, as allocated (SLURM_JOB_GPUS=0,4)")},
		{file: "uva-srun-gpus-per-task-grep-gpu.env", node: uvaA6000(0), job: true, want: uvaWant("sees GPU 0, as allocated (SLURM_STEP_GPUS=0)")},
		{file: "mila-batch-jobgpus-1235-local.env", node: milaNode, job: true, want: milaWant},
		{file: "pyxis47-container-one-devfile-cvd2.env", node: pyxis47, job: true, want: pyxis47Want},
		{file: "nchc-nano4-srun-gres2-printenv.env", node: nano4, want: nano4Want},
		{file: "chimera-gpuc960-interactive-step.env", node: chimeraGPUC960, want: gpuc960},
		{file: "sherlock-h200-step-gpu7.env", node: sherlockH200(7), want: sherlock("7", "4", "4.0")},
		{file: "sherlock-h200-step-gpu1.env", node: sherlockH200(1), want: sherlock("1", "4", "4.0")},
		{file: "sherlock-h200-step-gpu4-nohup.env", node: sherlockH200(4), want: sherlock("4", "4", "4.0")},
		{file: "sherlock-h100-step-gpu4.env", node: sherlockH100(4), want: sherlock("4", "8", "8.0")},
		{file: "awslabs71-srun-gres-a100x4.env", node: p4d, job: true, want: awsFiltered},
		{file: "awslabs71-srun-gpus-per-node-a100x4.env", node: p4d, job: true, want: awsFiltered},
		{file: "awslabs71-srun-gpus-per-node-4.env", node: p4d, job: true, want: awsFiltered},
		{file: "chimera-vscode-jobid-only.env", node: chimeraH100, want: chimera},
	}

	files, _ := filepath.Glob(filepath.Join(realEnvDir, "*.env"))
	if len(files) != len(cases) {
		t.Errorf("%d fixtures in %s, %d cases: every dump needs its verdicts", len(files), realEnvDir, len(cases))
	}
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.file, ".env"), func(t *testing.T) {
			env := readRealEnv(t, filepath.Join(realEnvDir, tc.file))
			if _, err := os.Stat(filepath.Join(realEnvDir, tc.file+".source")); err != nil {
				t.Errorf("no .source for %s: %v", tc.file, err)
			}
			n := realEnvStateNode(env, tc.node)
			cfg := DefaultConfig()
			if tc.job {
				cfg.Job.Mode = "always"
			}
			for _, c := range All() {
				if c.Scope != JobScope {
					continue
				}
				r := c.Run(n, cfg)
				t.Logf("%s: %s: %s", c.ID, r.Status, r.Summary)
				w, ok := tc.want[c.ID]
				if !ok && strings.HasPrefix(c.ID, "container.") {
					// The container checks judge facts the container
					// collector records, not the environment: here none.
					w, ok = realEnvWant{Skip, nil, nil}, true
					if tc.want["job.visible_devices"].status == Skip {
						w = tc.want["job.visible_devices"]
					}
				}
				if !ok {
					t.Errorf("%s: no expected verdict (got %s %q)", c.ID, r.Status, r.Summary)
					continue
				}
				wantResult(t, c.ID, r, w.status, w.has, w.hasNot)
			}
		})
	}
}

// wantResult holds r to a status and to texts its summary, details and
// remedy must (has) and must not (hasNot) contain.
func wantResult(t *testing.T, name string, r Result, status Status, has, hasNot []string) {
	t.Helper()
	text := r.Summary + " | " + strings.Join(r.Details, " | ") + " | " + r.Remedy
	if r.Status != status {
		t.Errorf("%s: %s %q, want %s", name, r.Status, text, status)
	}
	for _, s := range has {
		if !strings.Contains(text, s) {
			t.Errorf("%s: %q lacks %q", name, text, s)
		}
	}
	for _, s := range hasNot {
		if strings.Contains(text, s) {
			t.Errorf("%s: %q states %q", name, text, s)
		}
	}
}

// readRealEnv reads a fixture: KEY=value lines, as env(1) prints them.
func readRealEnv(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var env []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.Contains(line, "=") {
			t.Fatalf("%s: %q is not KEY=value", path, line)
		}
		env = append(env, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return env
}

// realEnvStateNode builds the node state the collector would record for a
// task with environment env on machine m.
func realEnvStateNode(env []string, m realEnvNode) *state.Node {
	n := &state.Node{SchemaVersion: state.SchemaVersion, NVML: &state.NVML{Available: true, DriverVersion: "550.54.15", CUDADriverVersion: m.driverCUDA}}
	global := func(i int) int {
		if m.cgroupGPUs != nil {
			return m.cgroupGPUs[i]
		}
		if m.devFiles != nil {
			return m.devFiles[i]
		}
		return i
	}
	for i := 0; i < m.gpus; i++ {
		g := global(i)
		n.NVML.GPUs = append(n.NVML.GPUs, state.GPU{
			Index: i, UUID: fmt.Sprintf("GPU-%d%d%d%d0000-1111-2222-3333-444444444444", g, g, g, g), Name: m.model,
			PCIBusID: fmt.Sprintf("00000000:%02x:00.0", 0x19+g*0x20), Minor: ptr(g),
			Memory:         &state.Memory{TotalBytes: m.memoryGiB << 30},
			ProcessesKnown: true,
		})
		if i < len(m.mig) {
			g := &n.NVML.GPUs[len(n.NVML.GPUs)-1]
			g.MIG = &state.MIG{Current: true, Pending: true}
			for k, u := range m.mig[i] {
				g.MIGDevices = append(g.MIGDevices, state.MIGDevice{UUID: u, GPUInstanceID: k + 1})
			}
		}
	}
	var procs []slurmstate.Process
	for i := range n.NVML.GPUs {
		g := &n.NVML.GPUs[i]
		for _, p := range m.procs {
			if p.gpu != *g.Minor {
				continue
			}
			g.Processes = append(g.Processes, state.Process{PID: p.pid, UsedMemoryBytes: p.memMiB << 20, User: p.user, Command: p.comm})
			g.Memory.UsedBytes += p.memMiB << 20
			uid := p.uid
			procs = append(procs, slurmstate.Process{GPU: g.Index, PID: p.pid, UsedMemoryBytes: p.memMiB << 20, UID: &uid, User: p.user, Command: p.comm, JobID: p.jobID, JobFrom: "cgroup"})
		}
	}
	var gpuCPUs []slurmstate.GPUCPUs
	for _, g := range n.NVML.GPUs {
		if cpus, ok := m.localCPUs[*g.Minor]; ok {
			gpuCPUs = append(gpuCPUs, slurmstate.GPUCPUs{PCIBusID: g.PCIBusID, CPUs: cpus})
		}
	}
	n.NVML.DeviceCount = m.gpus
	e := slurmstate.ParseEnv(env)
	in, why := e.InJobStep()
	node := e.NodeName
	n.Slurm = &slurmstate.State{NodeName: node, NodeNameFrom: "SLURMD_NODENAME", InJob: in, JobReason: why, Env: e,
		Task: &slurmstate.Task{PID: 4242, UID: 1000, CPUs: bindListCPUs(env)},
		Host: &slurmstate.Host{NetInterfaces: []string{"lo", "eth0"}}, GPUCPUs: gpuCPUs, Processes: procs}
	files := m.devFiles
	if files == nil {
		for i := 0; i < m.nodeGPUs; i++ {
			files = append(files, i)
		}
	}
	for _, i := range files {
		d := slurmstate.DeviceFile{Path: fmt.Sprintf("/dev/nvidia%d", i), Exist: true, Char: true, Major: 195, Minor: i, Access: "ok"}
		if m.cgroupGPUs != nil && !slices.Contains(m.cgroupGPUs, i) {
			d.Access, d.Error = "denied", "operation not permitted (device cgroup)"
		}
		n.Slurm.Devices = append(n.Slurm.Devices, d)
	}
	return n
}

// bindListCPUs reads SLURM_CPU_BIND_LIST's one mask (a task's
// mask_cpu binding, hexadecimal); nil when absent or not one mask.
func bindListCPUs(env []string) []int {
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, "SLURM_CPU_BIND_LIST=")
		if !ok || strings.Contains(v, ",") {
			continue
		}
		mask, ok := new(big.Int).SetString(strings.TrimPrefix(strings.ToLower(v), "0x"), 16)
		if !ok {
			return nil
		}
		var cpus []int
		for i := 0; i < mask.BitLen(); i++ {
			if mask.Bit(i) == 1 {
				cpus = append(cpus, i)
			}
		}
		return cpus
	}
	return nil
}
