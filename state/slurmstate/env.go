package slurmstate

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/cpulist"
)

// Env is the launch environment of one task: what Slurm, the launcher
// (torchrun, Open MPI) and the user set. Numbers that failed to parse are nil
// and their variable is listed in Errors, so a check can say which variable
// was wrong instead of guessing.
type Env struct {
	JobID         string `json:"job_id,omitempty"`
	JobUID        *int   `json:"job_uid,omitempty"`
	JobUser       string `json:"job_user,omitempty"`
	StepID        string `json:"step_id,omitempty"`
	ScriptContext string `json:"script_context,omitempty"`
	NodeName      string `json:"node_name,omitempty"`
	ProcID        *int   `json:"proc_id,omitempty"`
	LocalID       *int   `json:"local_id,omitempty"`
	NTasks        *int   `json:"ntasks,omitempty"`
	NTasksPerNode *int   `json:"ntasks_per_node,omitempty"`
	// TasksPerNode is the step's SLURM_STEP_TASKS_PER_NODE, else the job's
	// SLURM_TASKS_PER_NODE ("2(x3),1"); TasksPerNodeVar names which.
	TasksPerNode    string `json:"tasks_per_node,omitempty"`
	TasksPerNodeVar string `json:"tasks_per_node_var,omitempty"`
	CPUsPerTask     *int   `json:"cpus_per_task,omitempty"`
	CPUsOnNode      *int   `json:"cpus_on_node,omitempty"`
	JobNodelist     string `json:"job_nodelist,omitempty"`
	StepNodelist    string `json:"step_nodelist,omitempty"`

	StepGPUs         *IndexList `json:"step_gpus,omitempty"`
	JobGPUs          *IndexList `json:"job_gpus,omitempty"`
	GPUsOnNode       *int       `json:"gpus_on_node,omitempty"`
	GPUsPerTask      string     `json:"gpus_per_task,omitempty"`
	GPUDeviceOrdinal string     `json:"gpu_device_ordinal,omitempty"`
	// ROCRVisible is ROCR_VISIBLE_DEVICES, nil when unset: Slurm's gres/gpu
	// sets it (gres.conf Flags=amd_gpu_env, on by default) to the same
	// list as CUDA_VISIBLE_DEVICES.
	ROCRVisible *string `json:"rocr_visible_devices,omitempty"`
	// TRESPerTask is SLURM_TRES_PER_TASK as srun/sbatch set it
	// ("cpu=2,gres/gpu=1"; 22.05 wrote "gres/gpu:1"): --gpus-per-task and
	// --cpus-per-task land there too (srun(1), OUTPUT ENVIRONMENT VARIABLES).
	TRESPerTask string `json:"tres_per_task,omitempty"`
	// GPUBind is the step's GPU binding ("closest", "single:2",
	// "verbose,map_gpu:0,1"): first the gpu part of SLURMD_TRES_BIND, which
	// slurmstepd sets in every task from the step's own tres_bind (mgr.c;
	// real slurmd 22.05 gave the tasks of srun --gpu-bind=map_gpu:0,0
	// SLURMD_TRES_BIND=gpu:map_gpu:0,0 and no SLURM_GPU_BIND), else
	// SLURM_GPU_BIND (srun(1)'s output variable, which a batch script
	// inherits), else the gres/gpu part of SLURM_TRES_BIND ("gres/gpu:closest",
	// srun's since 23.02); GPUBindVar names which.
	GPUBind    string `json:"gpu_bind,omitempty"`
	GPUBindVar string `json:"gpu_bind_var,omitempty"`
	// NTasksPerGPU is --ntasks-per-gpu: N tasks share each GPU on purpose.
	// An srun step's tasks get it as SLURM_NTASKS_PER_TRES (srun/launch.c
	// sends --ntasks-per-gpu as the step's ntasks_per_tres, env.c setup_env
	// exports that; real 22.05 tasks have no SLURM_NTASKS_PER_GPU), the
	// batch script as SLURM_NTASKS_PER_GPU (sbatch(1)). NTasksPerGPUVar
	// names which.
	NTasksPerGPU    *int   `json:"ntasks_per_gpu,omitempty"`
	NTasksPerGPUVar string `json:"ntasks_per_gpu_var,omitempty"`
	// ShardsOnNode is SLURM_SHARDS_ON_NODE, the GPU shards of the step on
	// this node (gres/shard, src/plugins/gres/shard/gres_shard.c).
	ShardsOnNode *int `json:"shards_on_node,omitempty"`
	// MPSThreadPercent is CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: Slurm's
	// gres/mps sets it in every job and step it allocates MPS shares to,
	// the share of the GPU's threads (src/plugins/gres/mps/gres_mps.c,
	// _set_env), and an MPS client set up by hand has it too (NVIDIA's MPS
	// guide, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"). Either way the GPU is
	// shared through MPS on purpose.
	MPSThreadPercent *int `json:"mps_thread_percent,omitempty"`
	// MPSPipeDirectory is CUDA_MPS_PIPE_DIRECTORY: where an MPS client
	// looks for its control daemon (NVIDIA's MPS guide; /tmp/nvidia-mps
	// when unset). Set by hand, by a module or by a site's prolog, it says
	// an MPS daemon was meant, not that one runs: it is the job's own
	// environment. Empty when unset.
	MPSPipeDirectory string          `json:"mps_pipe_directory,omitempty"`
	CUDAVisible      *VisibleDevices `json:"cuda_visible_devices"`
	CUDADeviceOrder  string          `json:"cuda_device_order,omitempty"`

	// Launchers: torchrun (TORCHELASTIC_RUN_ID marks a torchrun worker) and Open MPI.
	Rank           *int `json:"rank,omitempty"`
	LocalRank      *int `json:"local_rank,omitempty"`
	LocalWorldSize *int `json:"local_world_size,omitempty"`
	WorldSize      *int `json:"world_size,omitempty"`
	TorchElastic   bool `json:"torchelastic,omitempty"`
	OMPIRank       *int `json:"ompi_rank,omitempty"`
	OMPILocalRank  *int `json:"ompi_local_rank,omitempty"`
	OMPILocalSize  *int `json:"ompi_local_size,omitempty"`
	// MPILocalNRanks is MPICH/Intel MPI Hydra's MPI_LOCALNRANKS: the ranks
	// its proxy started on this node.
	MPILocalNRanks *int `json:"mpi_local_nranks,omitempty"`

	// PTY: SLURM_PTY_PORT is set, which slurmstepd writes for a step srun
	// launched with --pty (src/common/env.c setup_env, env->pty_port),
	// salloc's interactive step among them; a batch step has no pty.
	PTY bool `json:"pty,omitempty"`

	MasterAddr string `json:"master_addr,omitempty"`
	MasterPort string `json:"master_port,omitempty"`

	CUDAVersion   string `json:"cuda_version,omitempty"`
	CUDAHome      string `json:"cuda_home,omitempty"`
	LDLibraryPath string `json:"ld_library_path,omitempty"`

	// NCCL holds every NCCL_* variable.
	NCCL map[string]string `json:"nccl,omitempty"`
	// Sharp holds every SHARP_COLL_* variable: the SHARP library's own
	// settings, which a job sets to use SHARP through NCCL's CollNet (the
	// nccl-rdma-sharp plugin).
	Sharp map[string]string `json:"sharp,omitempty"`
	// Ray holds the Ray variables that mark a Ray head, worker node or
	// worker process (RayVars); absent when none is set.
	Ray map[string]string `json:"ray,omitempty"`

	Errors []VarError `json:"errors,omitempty"`
}

// IndexList is a GPU index list such as SLURM_STEP_GPUS, raw and parsed.
type IndexList struct {
	Raw     string `json:"raw"`
	Indexes []int  `json:"indexes"`
}

// VarError is an environment variable that did not parse.
type VarError struct {
	Var   string `json:"var"`
	Value string `json:"value"`
	Error string `json:"error"`
}

func (e VarError) String() string { return fmt.Sprintf("%s=%q: %s", e.Var, e.Value, e.Error) }

// ParseEnv reads the launch environment from environ ("KEY=value" entries,
// as os.Environ returns). It never fails: bad values land in Errors.
func ParseEnv(environ []string) *Env {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	e := &Env{}
	get := func(k string) string { return vars[k] }
	num := func(k string) *int {
		v, ok := vars[k]
		if !ok || strings.TrimSpace(v) == "" {
			return nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			e.Errors = append(e.Errors, VarError{Var: k, Value: v, Error: "not a non-negative integer"})
			return nil
		}
		return &n
	}
	list := func(k string) *IndexList {
		v, ok := vars[k]
		if !ok {
			return nil
		}
		l, err := cpulist.Parse(v)
		if err != nil {
			e.Errors = append(e.Errors, VarError{Var: k, Value: v, Error: err.Error()})
			return nil
		}
		if l == nil {
			l = []int{}
		}
		return &IndexList{Raw: v, Indexes: l}
	}

	e.JobID = first(get("SLURM_JOB_ID"), get("SLURM_JOBID"))
	e.JobUID = num("SLURM_JOB_UID")
	e.JobUser = get("SLURM_JOB_USER")
	e.StepID = first(get("SLURM_STEP_ID"), get("SLURM_STEPID"))
	e.ScriptContext = get("SLURM_SCRIPT_CONTEXT")
	_, e.PTY = vars["SLURM_PTY_PORT"]
	e.NodeName = first(get("SLURMD_NODENAME"), get("SLURM_TOPOLOGY_ADDR"))
	e.ProcID = num("SLURM_PROCID")
	e.LocalID = num("SLURM_LOCALID")
	e.NTasks = num("SLURM_NTASKS")
	e.NTasksPerNode = num("SLURM_NTASKS_PER_NODE")
	e.TasksPerNodeVar = "SLURM_STEP_TASKS_PER_NODE"
	if e.TasksPerNode = get(e.TasksPerNodeVar); e.TasksPerNode == "" {
		e.TasksPerNodeVar = "SLURM_TASKS_PER_NODE"
		if e.TasksPerNode = get(e.TasksPerNodeVar); e.TasksPerNode == "" {
			e.TasksPerNodeVar = ""
		}
	}
	if e.TasksPerNode != "" {
		if _, err := ExpandTasksPerNode(e.TasksPerNode); err != nil {
			e.Errors = append(e.Errors, VarError{Var: e.TasksPerNodeVar, Value: e.TasksPerNode, Error: err.Error()})
		}
	}
	e.CPUsPerTask = num("SLURM_CPUS_PER_TASK")
	e.CPUsOnNode = num("SLURM_CPUS_ON_NODE")
	e.JobNodelist = first(get("SLURM_JOB_NODELIST"), get("SLURM_NODELIST"))
	e.StepNodelist = get("SLURM_STEP_NODELIST")
	for _, k := range []string{"SLURM_JOB_NODELIST", "SLURM_STEP_NODELIST"} {
		if v := get(k); v != "" {
			if _, err := ExpandHostlist(v); err != nil {
				e.Errors = append(e.Errors, VarError{Var: k, Value: v, Error: err.Error()})
			}
		}
	}

	e.StepGPUs = list("SLURM_STEP_GPUS")
	e.JobGPUs = list("SLURM_JOB_GPUS")
	e.GPUsOnNode = num("SLURM_GPUS_ON_NODE")
	e.GPUsPerTask = get("SLURM_GPUS_PER_TASK")
	e.GPUDeviceOrdinal = get("GPU_DEVICE_ORDINAL")
	if v, ok := vars["ROCR_VISIBLE_DEVICES"]; ok {
		e.ROCRVisible = &v
	}
	e.TRESPerTask = get("SLURM_TRES_PER_TASK")
	if e.TRESPerTask != "" {
		if _, err := ParseTRESPerTask(e.TRESPerTask); err != nil {
			e.Errors = append(e.Errors, VarError{Var: "SLURM_TRES_PER_TASK", Value: e.TRESPerTask, Error: err.Error()})
		}
	}
	if e.GPUsPerTask != "" {
		if _, err := parseGPUCount(e.GPUsPerTask); err != nil {
			e.Errors = append(e.Errors, VarError{Var: "SLURM_GPUS_PER_TASK", Value: e.GPUsPerTask, Error: err.Error()})
		}
	}
	if v := gpuTRESBind(get("SLURMD_TRES_BIND")); v != "" {
		e.GPUBind, e.GPUBindVar = v, "SLURMD_TRES_BIND"
	} else if v := get("SLURM_GPU_BIND"); v != "" {
		e.GPUBind, e.GPUBindVar = v, "SLURM_GPU_BIND"
	} else if v := gpuTRESBind(get("SLURM_TRES_BIND")); v != "" {
		e.GPUBind, e.GPUBindVar = v, "SLURM_TRES_BIND"
	}
	if e.GPUBind != "" {
		if _, err := ParseGPUBind(e.GPUBind); err != nil {
			e.Errors = append(e.Errors, VarError{Var: e.GPUBindVar, Value: e.GPUBind, Error: err.Error()})
		}
	}
	for _, k := range []string{"SLURM_NTASKS_PER_TRES", "SLURM_NTASKS_PER_GPU"} {
		if n := num(k); n != nil && e.NTasksPerGPU == nil {
			e.NTasksPerGPU, e.NTasksPerGPUVar = n, k
		}
	}
	e.ShardsOnNode = num("SLURM_SHARDS_ON_NODE")
	e.MPSThreadPercent = num("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
	e.MPSPipeDirectory = get("CUDA_MPS_PIPE_DIRECTORY")
	cvd, set := vars["CUDA_VISIBLE_DEVICES"]
	e.CUDAVisible = ParseVisibleDevices(cvd, set)
	e.CUDADeviceOrder = get("CUDA_DEVICE_ORDER")

	e.Rank = num("RANK")
	e.LocalRank = num("LOCAL_RANK")
	e.LocalWorldSize = num("LOCAL_WORLD_SIZE")
	e.WorldSize = num("WORLD_SIZE")
	e.TorchElastic = get("TORCHELASTIC_RUN_ID") != ""
	e.OMPIRank = num("OMPI_COMM_WORLD_RANK")
	e.OMPILocalRank = num("OMPI_COMM_WORLD_LOCAL_RANK")
	e.OMPILocalSize = num("OMPI_COMM_WORLD_LOCAL_SIZE")
	e.MPILocalNRanks = num("MPI_LOCALNRANKS")

	e.MasterAddr = strings.TrimSpace(get("MASTER_ADDR"))
	e.MasterPort = strings.TrimSpace(get("MASTER_PORT"))

	e.CUDAVersion = get("CUDA_VERSION")
	e.CUDAHome = first(get("CUDA_HOME"), get("CUDA_PATH"))
	e.LDLibraryPath = get("LD_LIBRARY_PATH")

	for k, v := range vars {
		switch {
		case strings.HasPrefix(k, "NCCL_"):
			if e.NCCL == nil {
				e.NCCL = map[string]string{}
			}
			e.NCCL[k] = v
		case strings.HasPrefix(k, "SHARP_COLL_"):
			if e.Sharp == nil {
				e.Sharp = map[string]string{}
			}
			e.Sharp[k] = v
		case slices.Contains(RayVars, k):
			if e.Ray == nil {
				e.Ray = map[string]string{}
			}
			e.Ray[k] = v
		}
	}
	sort.Slice(e.Errors, func(i, j int) bool { return e.Errors[i].Var < e.Errors[j].Var })
	return e
}

// RayVars are the variables that mark a Ray process. RAY_ADDRESS is the
// cluster a driver or `ray start --address` joins and RAY_NODE_IP_ADDRESS a
// node's address (the Ray-on-Slurm guide's launch script sets them);
// RAY_RAYLET_PID and RAY_JOB_ID are set by the raylet in every worker
// process it starts (Ray's ray_constants.py, RAY_INTERNAL_FLAGS: "should
// not be set by users"), RAY_NODE_ID in its agents. Ray also sets each
// worker's CUDA_VISIBLE_DEVICES to the GPUs it assigned the worker, unless
// RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES is set.
var RayVars = []string{"RAY_ADDRESS", "RAY_NODE_IP_ADDRESS", "RAY_RAYLET_PID", "RAY_JOB_ID", "RAY_NODE_ID", "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"}

// RayWorker says the process is a Ray worker: one the raylet started, with
// its internal flags.
func (e *Env) RayWorker() bool {
	if e == nil {
		return false
	}
	_, pid := e.Ray["RAY_RAYLET_PID"]
	_, job := e.Ray["RAY_JOB_ID"]
	return pid || job
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// SlurmdScript reports whether the environment is slurmd's or slurmctld's
// Prolog or Epilog (SLURM_SCRIPT_CONTEXT, prolog_epilog.html): it carries
// the job's ID but runs as root outside the job step, in the daemon's
// context, not the job's cgroup.
func (e *Env) SlurmdScript() bool {
	switch e.ScriptContext {
	case "prolog_slurmd", "epilog_slurmd", "prolog_slurmctld", "epilog_slurmctld":
		return true
	}
	return false
}

// InJobStep reports whether the environment is a job step's task (srun, the
// batch script, a TaskProlog), as opposed to no job at all or a Prolog/Epilog,
// which run as root outside the step. It says why, for the report.
func (e *Env) InJobStep() (bool, string) {
	if e.JobID == "" {
		return false, "SLURM_JOB_ID is not set"
	}
	// A task's own environment may still say prolog_task: the real srun
	// steps of testdata/realenv/sherlock-* (Slurm with SLURM_STEPMGR, a
	// TaskProlog) carry SLURM_SCRIPT_CONTEXT=prolog_task into the task.
	// Only the node and controller prologs/epilogs are outside the step.
	if e.SlurmdScript() {
		return false, "running as Slurm " + e.ScriptContext + ", outside the job step"
	}
	switch e.ScriptContext {
	case "prolog_srun", "epilog_srun":
		// SrunProlog/SrunEpilog and srun --prolog/--epilog run on "the srun
		// invocation node", by srun, before the step is launched or after
		// it ends (doc/html/prolog_epilog.shtml; src/srun/srun_job.c,
		// _run_srun_prolog/_run_srun_epilog set the context): not a task
		// of the step, and maybe not on its nodes.
		return false, "running as srun's " + strings.TrimSuffix(e.ScriptContext, "_srun") + " (SLURM_SCRIPT_CONTEXT=" + e.ScriptContext + ") on the node srun runs on, outside the job step: use srun's --task-prolog or run gpuprobe as the step"
	}
	if e.StepID == "" && e.NodeName == "" && e.ProcID == nil && e.ScriptContext == "" {
		// salloc(1) starts the user's shell where salloc runs (a login
		// node), with the job's SLURM_JOB_ID and node list; SLURMD_NODENAME,
		// SLURM_STEP_ID and SLURM_PROCID come only from slurmd/slurmstepd,
		// which set them in every batch script and srun task. A command
		// typed there is not on the allocation.
		//
		// salloc exports the job's node list with its ID (salloc(1),
		// OUTPUT ENVIRONMENT VARIABLES: SLURM_JOB_NODELIST, "List of nodes
		// allocated to the job"). SLURM_JOB_ID alone is not salloc's
		// shell: a real report (testdata/realenv/chimera-vscode-jobid-only)
		// had only SLURM_JOB_ID, in an editor's terminal on a GPU node that
		// saw one H100. Where such a process runs, and what Slurm gave it,
		// the environment does not say.
		if e.JobNodelist == "" {
			return false, "not a task Slurm started: use srun (SLURM_JOB_ID=" + e.JobID +
				" is the only job variable: no SLURMD_NODENAME, SLURM_STEP_ID or SLURM_PROCID, which slurmd sets in every batch script and srun task, and no SLURM_JOB_NODELIST, which salloc's shell has;" +
				" an ssh or editor session on a job's node, or a variable set by hand: what Slurm allocated here is unknown; srun gpuprobe check runs it as a task of the job)"
		}
		return false, "not running on the allocation: use srun (SLURM_JOB_ID=" + e.JobID +
			" without SLURMD_NODENAME, SLURM_STEP_ID or SLURM_PROCID is salloc's shell, which runs where salloc was started: srun gpuprobe check runs it on the job's node)"
	}
	what := "job " + e.JobID
	if e.StepID != "" {
		what += " step " + e.StepID
	}
	if e.ProcID != nil {
		what += fmt.Sprintf(" task %d", *e.ProcID)
	}
	return true, "inside " + what
}

// AllocatedGPUs returns the GPU indexes Slurm allocated to this step on this
// node (SLURM_STEP_GPUS, else SLURM_JOB_GPUS) and the variable they came from.
// Inside an srun step SLURM_JOB_GPUS is not the step's: see InheritedJobGPUs.
func (e *Env) AllocatedGPUs() ([]int, string) {
	if e.StepGPUs != nil {
		return e.StepGPUs.Indexes, "SLURM_STEP_GPUS"
	}
	if e.JobGPUs != nil && !e.InheritedJobGPUs() {
		return e.JobGPUs.Indexes, "SLURM_JOB_GPUS"
	}
	return nil, ""
}

// InheritedJobGPUs reports an srun step (SLURM_STEP_ID set, not the batch or
// interactive step) with SLURM_JOB_GPUS but no SLURM_STEP_GPUS: a step that
// was given no GPU inside a GPU job (srun --gres=none, --gpus=0). sbatch(1)
// and salloc(1) say SLURM_JOB_GPUS is "only set in batch and interactive
// jobs"; an srun step has it only because srun passes the batch script's
// environment on, while slurmstepd sets the step's own GPU variables
// (SLURM_STEP_GPUS, SLURM_GPUS_ON_NODE, CUDA_VISIBLE_DEVICES) from the step's
// allocation. Inside a step the step's variables decide.
func (e *Env) InheritedJobGPUs() bool {
	if e.StepID == "" || e.StepGPUs != nil || e.JobGPUs == nil {
		return false
	}
	single, _ := e.SingleProcessStep()
	return !single
}

// StepGPUsOnNode is SLURM_GPUS_ON_NODE when it is this step's: nil in a
// GPU-less step inside a GPU job (InheritedJobGPUs), where it is the batch
// script's.
func (e *Env) StepGPUsOnNode() *int {
	if e.InheritedJobGPUs() {
		return nil
	}
	return e.GPUsOnNode
}

// NodeIndex returns this node's position in a hostlist, or -1 when it
// cannot tell.
func (e *Env) NodeIndex(hostlist string) int {
	if hostlist == "" || e.NodeName == "" {
		return -1
	}
	hosts, err := ExpandHostlist(hostlist)
	if err != nil {
		return -1
	}
	for i, h := range hosts {
		if h == e.NodeName {
			return i
		}
	}
	return -1
}

// LocalTasks is the number of tasks of this step on this node, and the
// variable it was read from.
func (e *Env) LocalTasks() (int, string) {
	if e.TasksPerNode != "" {
		if counts, err := ExpandTasksPerNode(e.TasksPerNode); err == nil && len(counts) > 0 {
			// The step's counts follow the step's node list, the job's the job's.
			list := e.JobNodelist
			if e.TasksPerNodeVar == "SLURM_STEP_TASKS_PER_NODE" {
				list = e.StepNodelist
			}
			i := e.NodeIndex(list)
			if i < 0 || i >= len(counts) {
				i = 0
			}
			return counts[i], e.TasksPerNodeVar + "=" + e.TasksPerNode
		}
	}
	if e.NTasksPerNode != nil {
		return *e.NTasksPerNode, fmt.Sprintf("SLURM_NTASKS_PER_NODE=%d", *e.NTasksPerNode)
	}
	return 0, ""
}

// TRES is one entry of SLURM_TRES_PER_TASK: "cpu=2", "gres/gpu=1",
// "gres/gpu:h100=1", or the 22.05 form "gres/gpu:1" / "gres/gpu:h100:1"
// (src/common/proc_args.c xfmt_tres writes "<prefix>:<spec>"; slurm_opt.c
// slurm_option_update_tres_per_task writes "<name>=<count>").
type TRES struct {
	Name  string `json:"name"` // "cpu", "gres/gpu", "gres/shard", "license/x"
	Type  string `json:"type,omitempty"`
	Count int    `json:"count"`
}

// ParseTRESPerTask reads SLURM_TRES_PER_TASK: comma-separated
// name[:type](=|:)count entries.
func ParseTRESPerTask(s string) ([]TRES, error) {
	var out []TRES
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		spec, cnt, ok := strings.Cut(part, "=")
		if !ok {
			i := strings.LastIndexByte(part, ':')
			if i < 0 {
				return nil, fmt.Errorf("entry %q has no count", part)
			}
			spec, cnt = part[:i], part[i+1:]
		}
		n, err := strconv.Atoi(cnt)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("entry %q: count %q is not a non-negative integer", part, cnt)
		}
		name, typ, _ := strings.Cut(spec, ":")
		// Slurm's "gres/gpu:per_task:h100:1" marks the entry as per task
		// before the type; the marker is not a type.
		if t, ok := strings.CutPrefix(typ, "per_task"); ok && (t == "" || t[0] == ':') {
			typ = strings.TrimPrefix(t, ":")
		}
		if name == "" || strings.Contains(typ, ":") {
			return nil, fmt.Errorf("entry %q is not name[:type]=count", part)
		}
		out = append(out, TRES{Name: name, Type: typ, Count: n})
	}
	return out, nil
}

// parseGPUCount reads SLURM_GPUS_PER_TASK ("1", "h100:2"; srun(1)
// --gpus-per-task=[type:]<number>, several types comma-separated) as the
// total count.
func parseGPUCount(s string) (int, error) {
	total := 0
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if i := strings.LastIndexByte(part, ':'); i >= 0 {
			part = part[i+1:]
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 || n > 1<<20 {
			return 0, fmt.Errorf("%q is not [type:]count", s)
		}
		total += n
	}
	return total, nil
}

// GPUsPerTaskCount is the GPUs each task of the step asked for
// (--gpus-per-task, or gres/gpu in --tres-per-task), and the variable that
// says so; 0 and "" when neither is set or parses.
func (e *Env) GPUsPerTaskCount() (int, string) {
	if e.GPUsPerTask != "" {
		if n, err := parseGPUCount(e.GPUsPerTask); err == nil {
			return n, "SLURM_GPUS_PER_TASK=" + e.GPUsPerTask
		}
	}
	if e.TRESPerTask != "" {
		if ts, err := ParseTRESPerTask(e.TRESPerTask); err == nil {
			n, found := 0, false
			for _, t := range ts {
				if t.Name == "gres/gpu" {
					n, found = n+t.Count, true
				}
			}
			if found {
				return n, "SLURM_TRES_PER_TASK=" + e.TRESPerTask
			}
		}
	}
	return 0, ""
}

// GPUBind is a parsed --gpu-bind (srun(1) --tres-bind, "Supported binding
// type options for gres"): closest, map/map_gpu:<list>, mask/mask_gpu:<list>,
// none, per_task:<n>, single:<tasks_per_gres>, optionally after "verbose,".
type GPUBind struct {
	Type    string `json:"type"` // closest, map, mask, none, per_task, single
	Arg     string `json:"arg,omitempty"`
	N       int    `json:"n,omitempty"` // per_task's and single's number
	Verbose bool   `json:"verbose,omitempty"`
}

// ParseGPUBind reads SLURM_GPU_BIND's value.
func ParseGPUBind(s string) (GPUBind, error) {
	var b GPUBind
	s = strings.TrimSpace(s)
	if v, ok := strings.CutPrefix(s, "verbose,"); ok {
		b.Verbose, s = true, v
	}
	typ, arg, hasArg := strings.Cut(s, ":")
	switch typ {
	case "closest", "none":
		if hasArg {
			return b, fmt.Errorf("%q takes no argument", typ)
		}
	case "map_gpu", "map", "mask_gpu", "mask":
		if arg == "" {
			return b, fmt.Errorf("%q needs a list", typ)
		}
		typ = strings.TrimSuffix(typ, "_gpu")
	case "single", "per_task":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return b, fmt.Errorf("%s:%q is not a positive count", typ, arg)
		}
		b.N = n
	default:
		return b, fmt.Errorf("unknown binding type %q", typ)
	}
	b.Type, b.Arg = typ, arg
	return b, nil
}

// TasksPerGPU is how many of a node's tasks a map or mask binding puts on
// its busiest GPU, and 0 for the other binding types or a list that does
// not parse. srun(1) --gpu-bind: map_gpu's list is each task's GPU ID
// (decimal, hexadecimal after "0x"), mask_gpu's each task's GPU mask
// (always hexadecimal, "0x" optional); "entry*count" repeats an entry, and
// a list shorter than the tasks is reused from its start. A map that names
// a GPU twice, or masks that overlap, is sharing the user asked for.
func (b GPUBind) TasksPerGPU(tasks int) int {
	if (b.Type != "map" && b.Type != "mask") || tasks < 1 {
		return 0
	}
	tasks = min(tasks, 1<<16) // SLURM_TASKS_PER_NODE is the user's to set
	var list []uint64
	for _, e := range strings.Split(b.Arg, ",") {
		val, rep, hasRep := strings.Cut(strings.TrimSpace(e), "*")
		count := 1
		if hasRep {
			n, err := strconv.Atoi(rep)
			if err != nil || n < 1 {
				return 0
			}
			count = n
		}
		var v uint64
		var err error
		if b.Type == "mask" {
			v, err = strconv.ParseUint(strings.TrimPrefix(strings.ToLower(val), "0x"), 16, 64)
			if v == 0 {
				return 0 // a task bound to no GPU: not a binding we can judge
			}
		} else if h, ok := strings.CutPrefix(strings.ToLower(val), "0x"); ok {
			v, err = strconv.ParseUint(h, 16, 6) // a GPU ID below 64
			v = 1 << v
		} else {
			v, err = strconv.ParseUint(val, 10, 6)
			v = 1 << v
		}
		if err != nil {
			return 0
		}
		for ; count > 0 && len(list) < tasks; count-- {
			list = append(list, v)
		}
		if len(list) == tasks {
			break
		}
	}
	per := [64]int{}
	most := 0
	for i := 0; i < tasks; i++ {
		m := list[i%len(list)]
		for g := 0; g < 64; g++ {
			if m&(1<<g) != 0 {
				per[g]++
				most = max(most, per[g])
			}
		}
	}
	return most
}

// gpuTRESBind returns the GPU entry of a TRES binding
// ("gres/gpu:closest+gres/nic:closest" → "closest"); slurmstepd's
// SLURMD_TRES_BIND names it "gpu:" in 22.05 ("gpu:map_gpu:0,0").
func gpuTRESBind(s string) string {
	for _, part := range strings.Split(s, "+") {
		part = strings.TrimSpace(part)
		if v, ok := strings.CutPrefix(part, "gres/gpu:"); ok {
			return v
		}
		if v, ok := strings.CutPrefix(part, "gpu:"); ok {
			return v
		}
	}
	return ""
}

// SlurmVisible is the list Slurm set CUDA_VISIBLE_DEVICES to, as kept in
// another variable its gres/gpu plugin sets to the same list: first
// GPU_DEVICE_ORDINAL (Flags=opencl_env), else ROCR_VISIBLE_DEVICES
// (amd_gpu_env); "" when neither is set.
func (e *Env) SlurmVisible() (string, string) {
	if v := strings.TrimSpace(e.GPUDeviceOrdinal); v != "" {
		return v, "GPU_DEVICE_ORDINAL"
	}
	if e.ROCRVisible != nil && strings.TrimSpace(*e.ROCRVisible) != "" {
		return strings.TrimSpace(*e.ROCRVisible), "ROCR_VISIBLE_DEVICES"
	}
	return "", ""
}

// Batch step IDs: slurmstepd sets no SLURM_STEP_ID in the batch script
// (batch_stepd_step_rec_create leaves step_id NO_VAL, and env.c setup_env
// sets it only when it is not), Slurm before 20.11 wrote the batch step's
// number, SLURM_BATCH_SCRIPT (0xfffffffe = 4294967294; 0xfffffffb =
// 4294967291 since 20.11, slurm.h), and the interactive step of salloc
// (LaunchParameters=use_interactive_step) is SLURM_INTERACTIVE_STEP
// (0xfffffffa = 4294967290).
var singleProcessSteps = map[string]string{
	"batch": "batch", "4294967294": "batch", "4294967291": "batch",
	"interactive": "interactive", "4294967290": "interactive",
}

// SingleProcessStep reports the batch script (or salloc's interactive
// step): one process, whatever the job's task count, which only the srun
// steps it starts will have. It says which.
func (e *Env) SingleProcessStep() (bool, string) {
	if e.JobID == "" {
		return false, ""
	}
	if e.StepID == "" {
		// SLURM_PTY_PORT is srun --pty's (salloc's interactive step
		// included), never the batch step's: with it, the missing
		// SLURM_STEP_ID does not make this the batch script. A real dump
		// (testdata/realenv/perlmutter-redrock321-*, Perlmutter's salloc
		// shell, its SLURM_STEP_ID cut off) read as "the batch script".
		// Either is one shell; which, the environment does not say.
		if e.PTY {
			return true, "the batch script or an interactive shell (no SLURM_STEP_ID; SLURM_PTY_PORT, which srun --pty and salloc's interactive step set)"
		}
		return true, "the batch script (no SLURM_STEP_ID)"
	}
	if k, ok := singleProcessSteps[strings.ToLower(strings.TrimSpace(e.StepID))]; ok {
		return true, "the " + k + " step (SLURM_STEP_ID=" + e.StepID + ")"
	}
	return false, ""
}
