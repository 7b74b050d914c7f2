#!/bin/sh
# gpuprobe as Slurm's Epilog: is the node clean after the job?
#
#   slurm.conf:  Epilog=/etc/slurm/gpuprobe-epilog.sh
#
# Same environment as the Prolog (root, SLURM_JOB_GPUS, no PATH). After the
# job its GPUs should be idle: --expect-idle turns a process or memory left
# on a GPU into a failure, and --slurm-drain drains the node with the reason
# (for instance "gpuprobe: gpu.processes: GPU 3: 1 compute process(es): pid
# 4242 (alice, python train.py)") so the next job does not land on it.
GPUPROBE=${GPUPROBE:-/usr/local/bin/gpuprobe}
GPUPROBE_EPILOG_ARGS=${GPUPROBE_EPILOG_ARGS:---checks gpu --expect-idle --timeout 20s}
if [ -r /etc/default/gpuprobe ]; then
	. /etc/default/gpuprobe
fi
# shellcheck disable=SC2086
exec "$GPUPROBE" check --slurm-drain --slurm-deadline 25s --color never $GPUPROBE_EPILOG_ARGS
