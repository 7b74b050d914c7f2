#!/bin/sh
# gpuprobe as Slurm's Prolog: a quick look at this job's GPUs before it starts.
#
#   slurm.conf:  Prolog=/etc/slurm/gpuprobe-prolog.sh
#                PrologFlags=Alloc        (run at allocation, not at the first step)
#
# slurmd runs it as root, outside the job's cgroup, with SLURM_JOB_ID,
# SLURM_JOB_GPUS (global indexes), SLURM_CONF and SLURMD_NODENAME, but no
# PATH and no SLURM_STEP_GPUS; the job checks skip there
# (SLURM_SCRIPT_CONTEXT=prolog_slurmd). Only the job's GPUs are judged.
# A failure exits 1: Slurm drains the node ("Prolog error") and requeues the
# job; the reason is in `journalctl -t gpuprobe-prolog`. Keep it fast: it
# delays every job start.
GPUPROBE=${GPUPROBE:-/usr/local/bin/gpuprobe}
GPUPROBE_PROLOG_ARGS=${GPUPROBE_PROLOG_ARGS:---checks gpu --timeout 20s}
# The shared part, where the package installs it (or beside this script).
GPUPROBE_CONTRIB=${GPUPROBE_CONTRIB:-/usr/share/gpuprobe/slurm}
[ -r "$GPUPROBE_CONTRIB/prolog-epilog-common.sh" ] || GPUPROBE_CONTRIB=$(dirname "$0")
if [ -r /etc/default/gpuprobe ]; then
	. /etc/default/gpuprobe
fi
. "$GPUPROBE_CONTRIB/prolog-epilog-common.sh"
# shellcheck disable=SC2086
gpuprobe_scoped gpuprobe-prolog $GPUPROBE_PROLOG_ARGS
