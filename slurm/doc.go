// Package slurm models what a GPU node learns from Slurm: the job step's
// environment (CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS, the launcher's ranks),
// the node's slurm.conf, gres.conf and cgroup.conf, and the NHC-style
// drain/resume rules of a HealthCheckProgram.
//
// Everything here is pure parsing and deciding, with one exception, the
// scontrol runner. It imports neither NVML nor the node state: the collector
// fills a slurmstate.State, the checks judge it, and both sides stay testable without a
// GPU or a cluster.
package slurm
