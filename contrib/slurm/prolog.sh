#!/bin/sh
# gpuprobe as Slurm's Prolog: a quick look at the node before a job starts.
#
#   slurm.conf:  Prolog=/etc/slurm/gpuprobe-prolog.sh
#                PrologFlags=Alloc        (run at allocation, not at the first step)
#
# slurmd runs it as root, outside the job's cgroup, with SLURM_JOB_ID,
# SLURM_JOB_GPUS (global indexes) and CUDA_VISIBLE_DEVICES, SLURM_CONF and
# SLURMD_NODENAME, but no PATH and no SLURM_STEP_GPUS. Job checks therefore
# do not apply here (gpuprobe sees SLURM_SCRIPT_CONTEXT=prolog_slurmd and
# skips them); the node checks do.
#
# A failing Prolog makes Slurm drain the node with Reason="Prolog error" and
# requeue the job. --slurm-drain sets gpuprobe's own reason first, so the
# admin sees which check failed. Keep it fast: it delays every job start.
GPUPROBE=${GPUPROBE:-/usr/local/bin/gpuprobe}
GPUPROBE_PROLOG_ARGS=${GPUPROBE_PROLOG_ARGS:---checks gpu --timeout 20s}
if [ -r /etc/default/gpuprobe ]; then
	. /etc/default/gpuprobe
fi
# shellcheck disable=SC2086
exec "$GPUPROBE" check --slurm-drain --slurm-deadline 25s --color never $GPUPROBE_PROLOG_ARGS
