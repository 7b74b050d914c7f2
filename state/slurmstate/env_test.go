package slurmstate

import (
	"strings"
	"testing"
)

func TestParseEnvSrun(t *testing.T) {
	// What srun -n 2 --gpus-per-task=1 gave task 1 on the reference cluster.
	e := ParseEnv([]string{
		"SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_LOCALID=1", "SLURM_NTASKS=2",
		"SLURM_STEP_TASKS_PER_NODE=2", "SLURM_TASKS_PER_NODE=2", "SLURM_JOB_NODELIST=vm", "SLURM_STEP_NODELIST=vm",
		"SLURMD_NODENAME=vm", "SLURM_STEP_GPUS=1", "SLURM_GPUS_ON_NODE=2", "CUDA_VISIBLE_DEVICES=1",
		"GPU_DEVICE_ORDINAL=1", "SLURM_CPUS_ON_NODE=2", "NCCL_IB_HCA=mlx5_0", "NCCL_DEBUG=INFO", "PATH=/usr/bin",
		"WEIRD", // no '=': ignored
	})
	if in, why := e.InJobStep(); !in || !strings.Contains(why, "job 42 step 0 task 1") {
		t.Errorf("InJobStep = %v %q", in, why)
	}
	if e.StepGPUs == nil || !equalInts(e.StepGPUs.Indexes, []int{1}) || e.JobGPUs != nil {
		t.Errorf("step gpus %+v job gpus %+v", e.StepGPUs, e.JobGPUs)
	}
	if g, from := e.AllocatedGPUs(); !equalInts(g, []int{1}) || from != "SLURM_STEP_GPUS" {
		t.Errorf("AllocatedGPUs = %v %s", g, from)
	}
	if n, from := e.LocalTasks(); n != 2 || from != "SLURM_STEP_TASKS_PER_NODE=2" {
		t.Errorf("LocalTasks = %d %s", n, from)
	}
	if *e.LocalID != 1 || *e.GPUsOnNode != 2 || len(e.NCCL) != 2 || e.NCCL["NCCL_IB_HCA"] != "mlx5_0" || len(e.Errors) != 0 {
		t.Errorf("env = %+v", e)
	}
}

func TestParseEnvBatchAndErrors(t *testing.T) {
	e := ParseEnv([]string{"SLURM_JOBID=7", "SLURM_JOB_GPUS=0,1", "SLURM_TASKS_PER_NODE=4(x2),1",
		"SLURM_JOB_NODELIST=gpu[01-03]", "SLURMD_NODENAME=gpu03", "SLURM_LOCALID=x", "SLURM_STEP_GPUS=0-", "SLURM_NTASKS=-3",
		"LOCAL_WORLD_SIZE=4", "TORCHELASTIC_RUN_ID=abc", "OMPI_COMM_WORLD_LOCAL_SIZE=4", "SLURM_STEP_NODELIST=gpu[01"})
	if e.JobID != "7" || e.StepID != "" {
		t.Errorf("job %q step %q", e.JobID, e.StepID)
	}
	if g, from := e.AllocatedGPUs(); !equalInts(g, []int{0, 1}) || from != "SLURM_JOB_GPUS" {
		t.Errorf("AllocatedGPUs = %v %s (SLURM_STEP_GPUS is malformed and must not count)", g, from)
	}
	if n, _ := e.LocalTasks(); n != 1 {
		t.Errorf("LocalTasks on gpu03 with SLURM_TASKS_PER_NODE=4(x2),1 = %d, want 1 (the job's counts follow the job's node list)", n)
	}
	var vars []string
	for _, er := range e.Errors {
		vars = append(vars, er.Var)
	}
	want := "SLURM_LOCALID,SLURM_NTASKS,SLURM_STEP_GPUS,SLURM_STEP_NODELIST"
	if strings.Join(vars, ",") != want {
		t.Errorf("errors on %v, want %s", vars, want)
	}
	if !e.TorchElastic || *e.LocalWorldSize != 4 || *e.OMPILocalSize != 4 {
		t.Errorf("launcher vars %+v", e)
	}
}

func TestLocalTasksUsesThisNode(t *testing.T) {
	e := ParseEnv([]string{"SLURM_JOB_ID=1", "SLURM_TASKS_PER_NODE=4(x2),1", "SLURM_JOB_NODELIST=gpu[01-03]", "SLURMD_NODENAME=gpu03"})
	if n, _ := e.LocalTasks(); n != 1 {
		t.Errorf("gpu03 is the third node: want 1 task, got %d", n)
	}
}

func TestInJobStepContexts(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want bool
	}{
		{nil, false},
		{[]string{"SLURMD_NODENAME=vm"}, false}, // HealthCheckProgram
		{[]string{"SLURM_JOB_ID=3", "SLURM_SCRIPT_CONTEXT=prolog_slurmd"}, false},
		{[]string{"SLURM_JOB_ID=3", "SLURM_SCRIPT_CONTEXT=epilog_slurmd"}, false},
		{[]string{"SLURM_JOB_ID=3", "SLURM_SCRIPT_CONTEXT=prolog_task"}, true},
		{[]string{"SLURM_JOB_ID=3", "SLURM_SCRIPT_CONTEXT=epilog_task", "SLURMD_NODENAME=vm"}, true},
		// srun --prolog/--epilog (SrunProlog/SrunEpilog) run by srun on the
		// node srun runs on (prolog_epilog.shtml), with the step's
		// variables: not a task of the step.
		{[]string{"SLURM_JOB_ID=3", "SLURM_STEP_ID=0", "SLURM_SCRIPT_CONTEXT=prolog_srun"}, false},
		{[]string{"SLURM_JOB_ID=3", "SLURM_STEP_ID=0", "SLURMD_NODENAME=vm", "SLURM_SCRIPT_CONTEXT=epilog_srun"}, false},
		{[]string{"SLURM_JOB_ID=3", "SLURMD_NODENAME=vm"}, true},
		{[]string{"SLURM_JOB_ID=3", "SLURM_PROCID=0"}, true},
		{[]string{"SLURM_JOB_ID=3", "SLURM_STEP_ID=0"}, true},
		// salloc's shell (issue 33): SLURM_JOB_ID and no variable only
		// slurmd or slurmstepd sets.
		{[]string{"SLURM_JOB_ID=3"}, false},
	} {
		if got, why := ParseEnv(tt.env).InJobStep(); got != tt.want || why == "" {
			t.Errorf("%v: InJobStep = %v (%s)", tt.env, got, why)
		}
	}
}

// SLURM_JOB_ID alone, as a real report had it (testdata/realenv/
// chimera-vscode-jobid-only.env: an editor's terminal on a GPU node), is
// not salloc's shell, which has the job's node list too (salloc(1)).
func TestJobIDAloneIsNotSallocsShell(t *testing.T) {
	_, why := ParseEnv([]string{"SLURM_JOB_ID=2308582"}).InJobStep()
	if !strings.Contains(why, "not a task Slurm started") || strings.Contains(why, "runs where salloc was started") {
		t.Errorf("SLURM_JOB_ID alone: %q", why)
	}
	_, why = ParseEnv([]string{"SLURM_JOB_ID=3", "SLURM_JOB_NODELIST=gpu001", "SLURM_NNODES=1"}).InJobStep()
	if !strings.Contains(why, "salloc's shell") {
		t.Errorf("salloc's shell: %q", why)
	}
}

func FuzzParseEnv(f *testing.F) {
	f.Add("SLURM_TASKS_PER_NODE", "2(x3),1", "CUDA_VISIBLE_DEVICES", "0,GPU-12")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		e := ParseEnv([]string{k1 + "=" + v1, k2 + "=" + v2, "SLURM_JOB_NODELIST=" + v1, "SLURMD_NODENAME=" + v2})
		e.LocalTasks()
		e.AllocatedGPUs()
		e.InJobStep()
	})
}

// The forms Slurm writes: slurm_opt.c's "<name>=<count>" (23.02+), with a
// type "gres/gpu:h100=1", and proc_args.c xfmt_tres's "gres/gpu:1" (22.05).
func TestParseTRESPerTask(t *testing.T) {
	for in, want := range map[string]int{"gres/gpu:1": 1, "cpu=2,gres/gpu=1": 1, "gres/gpu:h100=2": 2, "gres/gpu:h100:4": 4,
		"cpu=8": 0, "gres/gpu=1,gres/gpu:a100=1": 2,
		// Issue 33: Slurm's own "...per_task:h100:1" form was reported as
		// "does not parse".
		"gres/gpu:per_task:h100:1": 1, "cpu=2,gres/gpu:per_task:h100:1": 1} {
		e := ParseEnv([]string{"SLURM_JOB_ID=1", "SLURM_TRES_PER_TASK=" + in})
		n, from := e.GPUsPerTaskCount()
		if n != want || len(e.Errors) != 0 || (want > 0) != strings.HasPrefix(from, "SLURM_TRES_PER_TASK=") {
			t.Errorf("%q: %d GPUs per task from %q, errors %v; want %d", in, n, from, e.Errors, want)
		}
	}
	for _, bad := range []string{"gres/gpu", "gres/gpu:x", "cpu=-1", "gres/gpu:a:b:1", "=1"} {
		if _, err := ParseTRESPerTask(bad); err == nil {
			t.Errorf("ParseTRESPerTask(%q) accepted", bad)
		}
	}
	e := ParseEnv([]string{"SLURM_GPUS_PER_TASK=h100:2", "SLURM_TRES_PER_TASK=gres/gpu:h100=2"})
	if n, from := e.GPUsPerTaskCount(); n != 2 || from != "SLURM_GPUS_PER_TASK=h100:2" {
		t.Errorf("SLURM_GPUS_PER_TASK=h100:2: %d from %s", n, from)
	}
	if e := ParseEnv([]string{"SLURM_GPUS_PER_TASK=one"}); len(e.Errors) != 1 || e.Errors[0].Var != "SLURM_GPUS_PER_TASK" {
		t.Errorf("SLURM_GPUS_PER_TASK=one: %v", e.Errors)
	}
}

// srun(1) --tres-bind's types for gres; --gpu-bind is the same list
// (map_gpu/mask_gpu are the older names of map/mask).
func TestParseGPUBind(t *testing.T) {
	for in, want := range map[string]GPUBind{
		"closest":              {Type: "closest"},
		"verbose,closest":      {Type: "closest", Verbose: true},
		"single:2":             {Type: "single", Arg: "2", N: 2},
		"per_task:1":           {Type: "per_task", Arg: "1", N: 1},
		"map_gpu:0,1,2,3":      {Type: "map", Arg: "0,1,2,3"},
		"mask_gpu:0x0f*4,0xf0": {Type: "mask", Arg: "0x0f*4,0xf0"},
		"none":                 {Type: "none"},
	} {
		if got, err := ParseGPUBind(in); err != nil || got != want {
			t.Errorf("ParseGPUBind(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "nearest", "single:0", "single:", "map_gpu:", "closest:1"} {
		if _, err := ParseGPUBind(bad); err == nil {
			t.Errorf("ParseGPUBind(%q) accepted", bad)
		}
	}
	// What real slurmd 22.05 gave the tasks of srun --gpu-bind=map_gpu:0,0
	// (scripts/slurm-e2e.sh prints it): no SLURM_GPU_BIND, slurmstepd's
	// SLURMD_TRES_BIND in the "gpu:" form. It is the step's own and wins
	// over a SLURM_GPU_BIND inherited from the batch script.
	if e := ParseEnv([]string{"SLURMD_TRES_BIND=gpu:map_gpu:0,0"}); e.GPUBind != "map_gpu:0,0" || e.GPUBindVar != "SLURMD_TRES_BIND" {
		t.Errorf("SLURMD_TRES_BIND: %q from %q", e.GPUBind, e.GPUBindVar)
	}
	if e := ParseEnv([]string{"SLURM_GPU_BIND=closest", "SLURMD_TRES_BIND=gpu:single:1"}); e.GPUBind != "single:1" {
		t.Errorf("the step's own binding lost to the inherited one: %q from %q", e.GPUBind, e.GPUBindVar)
	}
	e := ParseEnv([]string{"SLURM_TRES_BIND=gres/nic:closest+gres/gpu:single:2"})
	if e.GPUBind != "single:2" || e.GPUBindVar != "SLURM_TRES_BIND" {
		t.Errorf("SLURM_TRES_BIND: %q from %q", e.GPUBind, e.GPUBindVar)
	}
	e = ParseEnv([]string{"SLURM_GPU_BIND=bogus", "SLURM_NTASKS_PER_GPU=2", "SLURM_SHARDS_ON_NODE=3", "MPI_LOCALNRANKS=8"})
	if len(e.Errors) != 1 || e.Errors[0].Var != "SLURM_GPU_BIND" || *e.NTasksPerGPU != 2 || e.NTasksPerGPUVar != "SLURM_NTASKS_PER_GPU" || *e.ShardsOnNode != 3 || *e.MPILocalNRanks != 8 {
		t.Errorf("env %+v errors %v", e, e.Errors)
	}
	// What real slurmd 22.05 gave a task of srun -n 2 --ntasks-per-gpu=2 (scripts/slurm-e2e.sh).
	e = ParseEnv([]string{"SLURM_JOB_ID=64", "SLURM_STEP_ID=0", "SLURM_NTASKS_PER_TRES=2", "SLURM_STEP_GPUS=0", "SLURM_GPUS_ON_NODE=1", "CUDA_VISIBLE_DEVICES=0"})
	if e.NTasksPerGPU == nil || *e.NTasksPerGPU != 2 || e.NTasksPerGPUVar != "SLURM_NTASKS_PER_TRES" {
		t.Errorf("SLURM_NTASKS_PER_TRES: %v %q", e.NTasksPerGPU, e.NTasksPerGPUVar)
	}
}

func TestSingleProcessStep(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want bool
	}{
		{[]string{"SLURM_JOB_ID=5"}, true},                             // sbatch script, Slurm 20.11+
		{[]string{"SLURM_JOB_ID=5", "SLURM_STEP_ID=4294967294"}, true}, // SLURM_BATCH_SCRIPT before 20.11
		{[]string{"SLURM_JOB_ID=5", "SLURM_STEP_ID=4294967291"}, true}, // SLURM_BATCH_SCRIPT since 20.11
		{[]string{"SLURM_JOB_ID=5", "SLURM_STEP_ID=batch"}, true},
		{[]string{"SLURM_JOB_ID=5", "SLURM_STEP_ID=4294967290"}, true}, // salloc's interactive step
		{[]string{"SLURM_JOB_ID=5", "SLURM_STEP_ID=0"}, false},
		{[]string{"SLURM_JOB_ID=5", "SLURM_STEPID=3"}, false},
		{nil, false},
	} {
		if got, why := ParseEnv(tt.env).SingleProcessStep(); got != tt.want || got != (why != "") {
			t.Errorf("%v: %v %q", tt.env, got, why)
		}
	}
}

func FuzzParseTRESPerTask(f *testing.F) {
	f.Add("cpu=2,gres/gpu:h100=1")
	f.Add("gres/gpu:1")
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := ParseTRESPerTask(s)
		for _, x := range ts {
			if x.Count < 0 || x.Name == "" {
				t.Fatalf("%q: %+v", s, x)
			}
		}
		if err == nil {
			ParseEnv([]string{"SLURM_TRES_PER_TASK=" + s}).GPUsPerTaskCount()
		}
	})
}

func FuzzParseGPUBind(f *testing.F) {
	f.Add("verbose,single:2")
	f.Add("map_gpu:0*4,1")
	f.Add("mask_gpu:0x3,c*2")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseGPUBind(s)
		if err == nil && (b.Type == "single" || b.Type == "per_task") && b.N < 1 {
			t.Fatalf("%q: %+v", s, b)
		}
		// The busiest GPU holds no more tasks than there are, and only a
		// map or a mask puts several on one.
		for _, tasks := range []int{1, 7, 64} {
			per := b.TasksPerGPU(tasks)
			if per < 0 || per > tasks || per > 0 && b.Type != "map" && b.Type != "mask" {
				t.Fatalf("%q with %d tasks: %d per GPU", s, tasks, per)
			}
		}
	})
}

// srun(1) --gpu-bind map_gpu/mask_gpu: entries per task, "*count" repeats,
// a short list is reused from its start, masks are hexadecimal.
func TestGPUBindTasksPerGPU(t *testing.T) {
	for _, c := range []struct {
		bind  string
		tasks int
		want  int
	}{
		{"map_gpu:0,1,2,3", 4, 1},
		{"map_gpu:0*4,1*4", 8, 4}, // srun(1)'s own example
		{"map_gpu:0,1", 4, 2},     // the list is reused: 0,1,0,1
		{"map_gpu:0,0,1,1", 4, 2},
		{"map_gpu:0x1,0xa", 2, 1},  // IDs 1 and 10
		{"map_gpu:3,2,1,0", 2, 1},  // only the first two tasks are on this node
		{"mask_gpu:0x3,0xC", 2, 1}, // disjoint masks
		{"mask_gpu:3,6", 2, 2},     // hexadecimal without 0x; overlap on GPU 1
		{"mask_gpu:0xff", 8, 8},
		{"verbose,map_gpu:0*2", 2, 2},
		{"closest", 8, 0},
		{"single:2", 8, 0},
		{"map_gpu:zero", 2, 0},
		{"map_gpu:64", 2, 0}, // beyond any node
		{"map_gpu:0*0", 2, 0},
		{"mask_gpu:0", 2, 0},
		{"map_gpu:0*1e3", 3, 0}, // not a count
		{"map_gpu:0*1000000", 3, 3},
	} {
		b, err := ParseGPUBind(c.bind)
		if err != nil && c.want != 0 {
			t.Fatalf("%s: %v", c.bind, err)
		}
		if got := b.TasksPerGPU(c.tasks); got != c.want {
			t.Errorf("%s with %d tasks: %d tasks on the busiest GPU, want %d", c.bind, c.tasks, got, c.want)
		}
	}
}

// Ray's variables and SHARP's are kept apart from the rest; a worker is
// marked by the raylet's internal flags, not by RAY_ADDRESS.
func TestParseEnvRayAndSharp(t *testing.T) {
	e := ParseEnv([]string{"RAY_ADDRESS=10.0.0.1:6379", "RAY_USAGE_STATS_ENABLED=0", "SHARP_COLL_ENABLE_SAT=1", "NCCL_COLLNET_ENABLE=1"})
	if len(e.Ray) != 1 || e.Ray["RAY_ADDRESS"] != "10.0.0.1:6379" || e.RayWorker() {
		t.Errorf("driver: Ray %v worker %v", e.Ray, e.RayWorker())
	}
	if e.Sharp["SHARP_COLL_ENABLE_SAT"] != "1" || e.NCCL["NCCL_COLLNET_ENABLE"] != "1" {
		t.Errorf("Sharp %v NCCL %v", e.Sharp, e.NCCL)
	}
	if w := ParseEnv([]string{"RAY_RAYLET_PID=81234"}); !w.RayWorker() {
		t.Errorf("worker: %v", w.Ray)
	}
	var none *Env
	if none.RayWorker() || ParseEnv(nil).Ray != nil {
		t.Error("no Ray")
	}
}
