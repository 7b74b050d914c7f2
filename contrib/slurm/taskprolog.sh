#!/bin/sh
# gpuprobe as Slurm's TaskProlog: judge each task's launch as it starts.
#
#   slurm.conf:  TaskProlog=/etc/slurm/gpuprobe-taskprolog.sh
#
# slurmstepd runs it as the job's user, once per task, with the task's full
# environment (SLURM_STEP_GPUS, SLURM_LOCALID, CUDA_VISIBLE_DEVICES, the
# user's PATH). Its stdout is read by slurmstepd: "print TEXT" lines reach
# the task's stdout, "export NAME=VALUE" lines its environment. So the job
# checks' warnings and failures are printed into the job's own output,
# where the user sees them. It never fails the task: a TaskProlog that
# exits non-zero kills it, and a warning is no reason to.
GPUPROBE=${GPUPROBE:-/usr/local/bin/gpuprobe}
GPUPROBE_TASKPROLOG_ARGS=${GPUPROBE_TASKPROLOG_ARGS:-}
if [ -r /etc/default/gpuprobe ]; then
	. /etc/default/gpuprobe
fi
[ -x "$GPUPROBE" ] || exit 0
# Only the first task of each node reports, unless GPUPROBE_ALL_TASKS=1:
# a 1,000-rank job should not print 1,000 copies.
if [ "${SLURM_LOCALID:-0}" != 0 ] && [ "${GPUPROBE_ALL_TASKS:-0}" != 1 ]; then
	exit 0
fi
# shellcheck disable=SC2086
"$GPUPROBE" check --checks job --color never --timeout 10s $GPUPROBE_TASKPROLOG_ARGS 2>/dev/null |
	while IFS= read -r line; do
		case "$line" in
		"  WARN "* | "  FAIL "* | "  ERROR "* | *" fix: "*)
			printf 'print gpuprobe[%s]: %s\n' "${SLURMD_NODENAME:-?}" "$line"
			;;
		esac
	done
exit 0
