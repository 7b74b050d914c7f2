#!/bin/sh
# gpuprobe as Slurm's HealthCheckProgram.
#
#   slurm.conf:  HealthCheckProgram=/etc/slurm/gpuprobe-healthcheck.sh
#                HealthCheckInterval=300
#                HealthCheckNodeState=ANY,CYCLE
#
# slurmd runs this as root with ONLY SLURMD_NODENAME in the environment: no
# PATH, no SLURM_CONF, cwd = the slurmd log directory. So every path here is
# absolute, and gpuprobe finds scontrol by absolute path itself (/usr/bin,
# /usr/local/bin, /opt/slurm/bin, or --scontrol). slurmd kills the program at
# 60 s; gpuprobe's own hard deadline (--slurm-deadline, default 45 s) ends it
# first, hung driver included.
#
# On a failed node check gpuprobe drains the node with
#   Reason="gpuprobe: <check>: <summary>"
# and resumes it once every check passes again, but only if the reason is
# still its own (NHC's rules: an admin's reason is never touched, and down,
# maint and reserved nodes are left alone). What it did goes to stderr.
#
# Site settings (extra flags, a config file) go in /etc/default/gpuprobe:
#   GPUPROBE=/usr/local/bin/gpuprobe
#   GPUPROBE_HEALTHCHECK_ARGS="--config /etc/gpuprobe/checks.yaml --slurm-conf /etc/slurm/slurm.conf"
GPUPROBE=${GPUPROBE:-/usr/local/bin/gpuprobe}
GPUPROBE_HEALTHCHECK_ARGS=${GPUPROBE_HEALTHCHECK_ARGS:-}
if [ -r /etc/default/gpuprobe ]; then
	. /etc/default/gpuprobe
fi
# The arguments are the admin's own configuration, split on blanks on purpose.
# shellcheck disable=SC2086
exec "$GPUPROBE" check --slurm-drain --color never $GPUPROBE_HEALTHCHECK_ARGS
