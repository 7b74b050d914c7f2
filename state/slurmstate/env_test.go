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
		{[]string{"SLURM_JOB_ID=3"}, true},
	} {
		if got, why := ParseEnv(tt.env).InJobStep(); got != tt.want || why == "" {
			t.Errorf("%v: InJobStep = %v (%s)", tt.env, got, why)
		}
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
