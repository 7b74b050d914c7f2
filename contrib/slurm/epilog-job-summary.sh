#!/bin/sh
# Slurm Epilog (slurm.conf: Epilog=/etc/slurm/epilog.d/gpuprobe-job-summary.sh, or
# called from the site's Epilog): append gpuprobe's per-GPU summary of the job that
# just ended to the job's output file, e.g.
#
#   gpuprobe: job 4242 GPU 0: 96% busy, memory 61.3/79.6 GiB, 1 process(es) of the job, 3540 s sampled
#   gpuprobe: job 4242 GPU 1: 0% busy, memory 0.5/79.6 GiB, 0 process(es) of the job, 3540 s sampled
#   gpuprobe: job 4242: WARN: perf.gpus_used: the job uses 1 of its 2 GPUs (...)
#
# The job's processes are gone when the Epilog runs, so the figures come from the
# local 'gpuprobe serve', which records every job's GPUs while it runs
# (gpuprobe job --summary --from-daemon local). Without a daemon nothing is printed.
#
# The Epilog runs as root and the output path is the user's: the line is appended
# AS THE JOB'S USER (setpriv), so an output file that is a symlink to /etc/shadow
# cannot make root write there. It never fails: a failing Epilog drains the node.
GPUPROBE=${GPUPROBE:-/usr/local/bin/gpuprobe}
SCONTROL=${SCONTROL:-scontrol}
[ -n "${SLURM_JOB_ID:-}" ] && [ -n "${SLURM_JOB_UID:-}" ] && [ -n "${SLURM_JOB_GID:-}" ] || exit 0
[ "$SLURM_JOB_UID" != 0 ] || exit 0
# Where the job's output goes: SLURM_JOB_STDOUT where slurmd sets it for the
# Epilog, else one scontrol call. That call is the exception to Slurm's "no
# Slurm commands in an Epilog": this script is opt-in, and the output path is
# nowhere else.
out=${SLURM_JOB_STDOUT:-}
[ -n "$out" ] || out=$(timeout 10 "$SCONTROL" show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/^ *StdOut=//p' | head -n 1)
case "$out" in /*) ;; *) exit 0 ;; esac
summary=$(timeout 10 "$GPUPROBE" job --job "$SLURM_JOB_ID" --summary --from-daemon local --duration 1s 2>/dev/null)
[ -n "$summary" ] || exit 0
printf '%s\n' "$summary" | timeout 10 setpriv --reuid="$SLURM_JOB_UID" --regid="$SLURM_JOB_GID" --clear-groups \
	-- sh -c 'cat >>"$1"' sh "$out" 2>/dev/null
exit 0
