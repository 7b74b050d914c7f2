# Shared by gpuprobe's contrib Prolog and Epilog (sourced; POSIX sh).
#
# Slurm's guidance for Prolog/Epilog (slurm.conf(5), prolog_epilog.html):
# keep them short, give them no Slurm commands to run (scontrol from
# thousands of nodes at every job start loads slurmctld), and let the exit
# code speak: a non-zero exit drains the node ("Prolog error" / "Epilog
# error") and requeues the job. So gpuprobe runs without --slurm-drain and
# only on this job's GPUs (--gpus job: SLURM_JOB_GPUS), and the reason goes
# to the journal/syslog (tag gpuprobe-prolog / gpuprobe-epilog), where
# `journalctl -t gpuprobe-epilog` finds it. gpuprobe's own failure (exit 2:
# it could not run) is logged but does not drain: a tool problem is not a
# broken node.
gpuprobe_scoped() { # TAG ARGS...: run gpuprobe check on the job's GPUs
	tag=$1
	shift
	if [ -z "${SLURM_JOB_GPUS:-}" ]; then
		exit 0 # a job without GPUs: nothing of its own to judge
	fi
	out=$("$GPUPROBE" check --color never --gpus job "$@" 2>&1)
	rc=$?
	case $rc in
	0) exit 0 ;;
	1)
		printf 'job %s: %s\n' "${SLURM_JOB_ID:-?}" "$out" | /usr/bin/logger -t "$tag" -p daemon.err 2>/dev/null
		exit 1
		;;
	*)
		printf 'job %s: gpuprobe could not run (exit %s): %s\n' "${SLURM_JOB_ID:-?}" "$rc" "$out" | /usr/bin/logger -t "$tag" -p daemon.warning 2>/dev/null
		exit 0
		;;
	esac
}
