#!/bin/sh
# gpuprobe as Slurm's Epilog: are this job's GPUs clean after it?
#
#   slurm.conf:  Epilog=/etc/slurm/gpuprobe-epilog.sh
#
# Root, no PATH, SLURM_JOB_ID and SLURM_JOB_GPUS (global indexes). Only the
# job's own GPUs are judged (--gpus job): another job's process on GPU 5 of
# a shared (MIXED) node is that job's business, not this one's. After the
# job its GPUs should be idle: --expect-idle turns a process or memory left
# on one into a failure, the exit code 1 makes Slurm drain the node
# ("Epilog error"), and the reason ("gpu.processes: GPU 3: 1 compute
# process(es): pid 4242 (alice: python) ...") is in `journalctl -t gpuprobe-epilog`.
GPUPROBE=${GPUPROBE:-/usr/local/bin/gpuprobe}
GPUPROBE_EPILOG_ARGS=${GPUPROBE_EPILOG_ARGS:---checks gpu --expect-idle --timeout 20s}
# The shared part, where the package installs it (or beside this script).
GPUPROBE_CONTRIB=${GPUPROBE_CONTRIB:-/usr/share/gpuprobe/slurm}
[ -r "$GPUPROBE_CONTRIB/prolog-epilog-common.sh" ] || GPUPROBE_CONTRIB=$(dirname "$0")
if [ -r /etc/default/gpuprobe ]; then
	. /etc/default/gpuprobe
fi
. "$GPUPROBE_CONTRIB/prolog-epilog-common.sh"
# shellcheck disable=SC2086
gpuprobe_scoped gpuprobe-epilog $GPUPROBE_EPILOG_ARGS
