#!/usr/bin/env bash
# End-to-end test of gpuprobe's Slurm integration against a real Slurm:
# munged, slurmctld and slurmd on loopback, one node with eight fake GPUs
# (character devices made with mknod; Slurm ignores regular files), private
# state under $SLURM_E2E_DIR, non-default ports. Then:
#   - srun --gres=gpu:2 gpuprobe check sees Slurm's real variables;
#   - srun -n 2 --gres=gpu:2 warns job.gpu_sharing, --gpus-per-task=1 passes;
#   - gpuprobe summarize reads a labelled multi-task srun;
#   - as HealthCheckProgram, gpuprobe drains the node on a simulated fault,
#     resumes it when the fault is gone, and leaves an admin's drain alone;
#   - the contrib TaskProlog prints the job checks into the job's output;
#   - gpuprobe job --hang, run by srun --overlap in a two-task job whose task 1
#     is stopped (kill -STOP) or blocked opening a FIFO (a hung mount's
#     stand-in) while task 0 spins, piped to summarize, names the node and
#     rank 1 (issue 29; no GPU side: the process side alone);
#   - srun --ntasks-per-gpu=2 and --gpu-bind=map_gpu:0,0 are sharing as
#     requested, and gpuprobe in an
#     sbatch batch script is one process, not the job's tasks;
#   - --gpu-bind=single:2 is requested sharing, an srun --gres=none step in a
#     GPU batch job is a GPU-less step, and a command in salloc is not on the
#     allocation (issue 33);
#   - gres.conf variants, each after a restart of slurmctld and slurmd: a Type
#     that differs from slurm.conf's only in case, AutoDetect=nvml on
#     Debian's slurmd (no gpu_nvml.so), Flags=no_gpu_env and
#     Flags=amd_gpu_env (the step gets no CUDA_VISIBLE_DEVICES): slurm.gres
#     and job.visible_devices must say what the real slurmctld and slurmd
#     did (issue 33).
# The GPUs are simulated (--simulate dgx-h100, eight H100s like the fake
# devices); the Slurm side is real. Prints one PASS/FAIL line per assertion
# and exits non-zero if any failed. Every daemon it started is stopped, by
# PID, slurmd first, even when an assertion or the set-up fails.
#
# Needs root (apt-get, mknod, slurmd). Knobs: SLURM_E2E_DIR,
# SLURM_E2E_CTLD_PORT, SLURM_E2E_SLURMD_PORT, SLURM_E2E_INTERVAL (health
# check interval, s), SLURM_E2E_KEEP=1 (leave the daemons running).
set -uo pipefail

D=${SLURM_E2E_DIR:-/tmp/gpuprobe-slurm-e2e}
CTLD_PORT=${SLURM_E2E_CTLD_PORT:-16817}
SLURMD_PORT=${SLURM_E2E_SLURMD_PORT:-16818}
INTERVAL=${SLURM_E2E_INTERVAL:-5}
NGPUS=8 # the dgx-h100 simulation's count: slurm.gres then matches
REPO=$(cd "$(dirname "$0")/.." && pwd)
GP=$D/bin/gpuprobe
T0=$(date +%s%N)
PASSED=0
FAILED=0

elapsed() {
	local t=$((($(date +%s%N) - T0) / 100000000))
	printf '%d.%d' $((t / 10)) $((t % 10))
}
log() { printf '[slurm-e2e %6ss] %s\n' "$(elapsed)" "$*"; }
pass() { printf 'PASS: %s\n' "$*"; PASSED=$((PASSED + 1)); }
fail() { printf 'FAIL: %s\n' "$*"; FAILED=$((FAILED + 1)); }
die() {
	fail "set-up: $*"
	for f in "$D"/log/*.log; do
		[ -f "$f" ] && { echo "--- tail $f"; tail -n 15 "$f"; }
	done
	exit 1
}

# alive PID: running (not a zombie: PID 1 here reaps slowly) and started by us
# (its command line names our state directory).
alive() {
	local pid=$1
	[ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
	[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$D"
}

# stop_daemons stops what an earlier or this run started: slurmd first while
# slurmctld and munged are still up (all at once, slurmd hangs ~60 s), then
# slurmctld, then munged.
stop_daemons() {
	if [ -f "$D/run/slurmctld.pid" ] && alive "$(cat "$D/run/slurmctld.pid")"; then
		SLURM_CONF=$D/etc/slurm.conf timeout 5 scancel --quiet --partition=debug 2>/dev/null || true
	fi
	local name pid i
	for name in slurmd slurmctld munged; do
		pid=$(cat "$D/run/$name.pid" 2>/dev/null || true)
		alive "$pid" || continue
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 100); do
			alive "$pid" || break
			sleep 0.1
		done
		if alive "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
			log "$name (pid $pid) needed SIGKILL"
		fi
		log "$name stopped (pid $pid)"
	done
}

finish() {
	local rc=$?
	if [ "${SLURM_E2E_KEEP:-0}" = 1 ]; then
		log "SLURM_E2E_KEEP=1: daemons left running; export SLURM_CONF=$D/etc/slurm.conf"
	else
		stop_daemons
	fi
	if [ "$FAILED" -gt 0 ] || [ "$rc" -ne 0 ]; then
		printf 'slurm-e2e: FAIL: %d passed, %d failed in %ss (logs in %s/log)\n' "$PASSED" "$FAILED" "$(elapsed)" "$D"
		exit 1
	fi
	printf 'slurm-e2e: PASS: %d passed, 0 failed in %ss\n' "$PASSED" "$(elapsed)"
}
trap finish EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || die "needs root (apt-get, mknod, slurmd)"

# --- install --------------------------------------------------------------
missing=""
for b in slurmctld slurmd srun sbatch sinfo scontrol scancel munged munge; do
	command -v "$b" >/dev/null 2>&1 || missing="$missing $b"
done
if [ -n "$missing" ]; then
	log "missing:$missing -> apt-get install slurm-wlm munge"
	made_policy=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		# Keep the packages' postinst from starting system daemons.
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made_policy=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >"$D.apt.log" 2>&1 || die "apt-get update failed: $(tail -n 3 "$D.apt.log")"
	apt-get install -y -qq --no-install-recommends slurm-wlm munge >>"$D.apt.log" 2>&1 || die "apt-get install failed: $(tail -n 3 "$D.apt.log")"
	[ "$made_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
	log "installed $(dpkg-query -W -f '${Package} ${Version}' slurm-wlm 2>/dev/null)"
fi

# --- build, configure, start ------------------------------------------------
stop_daemons # idempotent: whatever an earlier run left behind goes first
mkdir -p "$D"/{bin,etc,run,log,state,spool,munge,dev,out} && chmod 755 "$D" "$D/munge" || die "mkdir $D"
rm -f "$D"/out/* "$D"/log/*.log
# shellcheck source=scripts/e2e-bin.sh
. "$REPO/scripts/e2e-bin.sh"
e2e_binary "$GP"
# slurmd -G is the oracle for how slurmd reads a gres.conf: every captured
# config's Cores= lines must be refused by slurmd exactly where slurm.gres fails them.
if (cd "$REPO" && GPUPROBE_REQUIRE_SLURMD=1 go test -count=1 -run '^TestSlurmdOracle$' -v ./check/ >"$D.oracle.log" 2>&1); then
	pass "slurmd -G oracle: $(grep -o '[0-9]* Cores= lines judged the same.*' "$D.oracle.log")"
else
	fail "slurmd -G oracle: $(tail -n 20 "$D.oracle.log")"
fi

HOST=$(hostname -s)
NCPU=$(nproc)
for i in $(seq 0 $((NGPUS - 1))); do
	[ -c "$D/dev/fakegpu$i" ] || { rm -f "$D/dev/fakegpu$i"; mknod "$D/dev/fakegpu$i" c 195 "$i"; } || die "mknod $D/dev/fakegpu$i"
done
[ -s "$D/munge/munge.key" ] || { dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none && chmod 400 "$D/munge/munge.key"; } || die "munge key"
echo dgx-h100 >"$D/hc-simulate"

cat >"$D/etc/slurm.conf" <<EOF
ClusterName=gpuprobe
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
GresTypes=gpu
HealthCheckProgram=$D/etc/healthcheck.sh
HealthCheckInterval=$INTERVAL
HealthCheckNodeState=ANY
TaskProlog=$D/etc/taskprolog.sh
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$NCPU Boards=1 SocketsPerBoard=1 CoresPerSocket=$NCPU ThreadsPerCore=1 RealMemory=1024 Gres=gpu:$NGPUS State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
echo "NodeName=$HOST Name=gpu File=$D/dev/fakegpu[0-$((NGPUS - 1))]" >"$D/etc/gres.conf"
echo "# gpuprobe e2e: no cgroup constraints (an empty file makes slurmd complain)" >"$D/etc/cgroup.conf"

# slurmd gives the HealthCheckProgram no arguments and no environment but
# SLURMD_NODENAME: the wrapper sets what the contrib script reads. The fault
# is toggled through the --simulate-file the test rewrites.
cat >"$D/etc/healthcheck.sh" <<EOF
#!/bin/sh
GPUPROBE=$GP GPUPROBE_HEALTHCHECK_ARGS="--slurm-conf $D/etc/slurm.conf --simulate-file $D/hc-simulate --checks gpu,slurm --log.level info" \\
	exec /bin/sh $REPO/contrib/slurm/healthcheck.sh >>$D/log/healthcheck.log 2>&1
EOF
# The TaskProlog is global; only steps that ask for it run the contrib one.
cat >"$D/etc/taskprolog.sh" <<EOF
#!/bin/sh
[ "\${GPUPROBE_E2E_TASKPROLOG:-}" = 1 ] || exit 0
GPUPROBE=$GP GPUPROBE_TASKPROLOG_ARGS="--simulate dgx-h100" exec /bin/sh $REPO/contrib/slurm/taskprolog.sh
EOF
chmod 755 "$D/etc/healthcheck.sh" "$D/etc/taskprolog.sh"

export SLURM_CONF=$D/etc/slurm.conf
munged --socket="$D/munge/munge.socket" --key-file="$D/munge/munge.key" --pid-file="$D/run/munged.pid" \
	--log-file="$D/log/munged.log" --seed-file="$D/munge/munged.seed" || die "munged did not start"
slurmctld -c -f "$D/etc/slurm.conf" || die "slurmctld did not start"
slurmd -f "$D/etc/slurm.conf" || die "slurmd did not start"

node_state() { sinfo -h -n "$HOST" -o %T 2>/dev/null; }
node_reason() { scontrol show node "$HOST" 2>/dev/null | sed -n 's/^ *Reason=\(.*\) \[[^]]*\]$/\1/p'; }
# wait_for SECONDS CMD...: poll CMD every 0.2 s until it succeeds.
wait_for() {
	local until=$(($(date +%s) + $1))
	shift
	while [ "$(date +%s)" -le "$until" ]; do
		"$@" && return 0
		sleep 0.2
	done
	return 1
}
is_idle() { [ "$(node_state)" = idle ]; }
wait_for 30 is_idle || die "node $HOST not idle after 30 s (state: $(node_state))"
log "node $HOST idle: munged $(cat "$D/run/munged.pid"), slurmctld $(cat "$D/run/slurmctld.pid"), slurmd $(cat "$D/run/slurmd.pid")"

# status_of FILE ID / summary_of FILE ID read a check's status and summary
# from a JSON report (indented; id, status, summary in that order).
status_of() { awk -v id="\"id\": \"$2\"," 'index($0, id) { getline; gsub(/[",]/, ""); print $2; exit }' "$1"; }
summary_of() { awk -v id="\"id\": \"$2\"," 'index($0, id) { getline; getline; sub(/^ *"summary": "/, ""); sub(/",$/, ""); print; exit }' "$1"; }
SRUN="timeout 60 srun --quiet"
CHECK="$GP check --simulate dgx-h100 --format json"

# --- 1. srun --gres=gpu:2: Slurm's variables, resolved against NVML ---------
$SRUN --gres=gpu:2 $CHECK >"$D/out/gres2.json" 2>"$D/out/gres2.err"
st=$(status_of "$D/out/gres2.json" job.visible_devices)
sum=$(summary_of "$D/out/gres2.json" job.visible_devices)
if [ "$st" = pass ] && [[ "$sum" == *"SLURM_STEP_GPUS=0,1"* ]]; then
	pass "srun --gres=gpu:2: job.visible_devices pass ($sum)"
else
	fail "srun --gres=gpu:2: job.visible_devices '$st' ($sum) $(head -c 300 "$D/out/gres2.err")"
fi

# The same step with CUDA_VISIBLE_DEVICES widened by the job: must fail.
$SRUN --gres=gpu:2 env CUDA_VISIBLE_DEVICES=0,1,2,3 $CHECK >"$D/out/widened.json" 2>/dev/null
st=$(status_of "$D/out/widened.json" job.visible_devices)
if [ "$st" = fail ]; then
	pass "srun --gres=gpu:2 with CUDA_VISIBLE_DEVICES=0,1,2,3: job.visible_devices fail ($(summary_of "$D/out/widened.json" job.visible_devices))"
else
	fail "srun --gres=gpu:2 with CUDA_VISIBLE_DEVICES=0,1,2,3: job.visible_devices '$st', want fail"
fi

# --- 2. two tasks, with and without per-task binding --------------------------
$SRUN -n 2 --gres=gpu:2 --output="$D/out/shared-%t.json" $CHECK 2>/dev/null
s0=$(status_of "$D/out/shared-0.json" job.gpu_sharing)
s1=$(status_of "$D/out/shared-1.json" job.gpu_sharing)
if [ "$s0" = warn ] && [ "$s1" = warn ]; then
	pass "srun -n 2 --gres=gpu:2: job.gpu_sharing warn on both tasks ($(summary_of "$D/out/shared-0.json" job.gpu_sharing))"
else
	fail "srun -n 2 --gres=gpu:2: job.gpu_sharing '$s0'/'$s1', want warn/warn"
fi
$SRUN -n 2 --gpus-per-task=1 --output="$D/out/bound-%t.json" $CHECK 2>/dev/null
s0=$(status_of "$D/out/bound-0.json" job.gpu_sharing)
s1=$(status_of "$D/out/bound-1.json" job.gpu_sharing)
v0=$(summary_of "$D/out/bound-0.json" job.visible_devices)
v1=$(summary_of "$D/out/bound-1.json" job.visible_devices)
if [ "$s0" = pass ] && [ "$s1" = pass ] && [[ "$v0" == "sees GPU 0,"* ]] && [[ "$v1" == "sees GPU 1,"* ]]; then
	pass "srun -n 2 --gpus-per-task=1: job.gpu_sharing pass on both tasks (task 0: $v0; task 1: $v1)"
else
	fail "srun -n 2 --gpus-per-task=1: job.gpu_sharing '$s0'/'$s1'; visible '$v0' / '$v1'"
fi

# --- 3. summarize a labelled multi-task srun ------------------------------------
$SRUN -n 2 --label --gres=gpu:2 $CHECK 2>/dev/null | "$GP" summarize >"$D/out/summary.txt" 2>&1
rc=$?
if [ "$rc" = 0 ] && grep -q '\[0\]' "$D/out/summary.txt" && grep -q '\[1\]' "$D/out/summary.txt" && grep -q 'job.gpu_sharing' "$D/out/summary.txt" &&
	grep -q '^2 report(s)' "$D/out/summary.txt"; then
	pass "srun -n 2 --label | gpuprobe summarize: 2 rows, exit 0"
else
	fail "srun -n 2 --label | gpuprobe summarize: exit $rc: $(cat "$D/out/summary.txt")"
fi
$SRUN -n 2 --label --gres=gpu:2 $GP check --simulate dgx-h100:row-remap-pending=1 --format json 2>/dev/null | "$GP" summarize >"$D/out/summary-fault.txt" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q 'fail gpu.row_remap: GPU 1' "$D/out/summary-fault.txt"; then
	pass "summarize with a row-remap fault on both tasks: exit 1, gpu.row_remap listed"
else
	fail "summarize with a fault: exit $rc: $(cat "$D/out/summary-fault.txt")"
fi

# --- 4. the contrib TaskProlog prints the job checks into the job's output ------
out=$(GPUPROBE_E2E_TASKPROLOG=1 $SRUN -n 2 --gres=gpu:2 true 2>&1)
if [[ "$out" == *"gpuprobe[$HOST]:   WARN   job.gpu_sharing"* ]] && [ "$(grep -c 'job.gpu_sharing' <<<"$out")" = 1 ]; then
	pass "TaskProlog: job.gpu_sharing warning printed once into the job's output"
else
	fail "TaskProlog output: $out"
fi

# --- 4b. gpuprobe job: a running job judged by its CPU and I/O side -----------
# The job's host side is this machine's (its processes from scontrol listpids:
# proctrack/linuxproc makes no cgroup), the GPU side simulated (a spec with no
# job-* fault simulates only the GPUs, which run nothing of the job).
# job_id_of NAME: the running job of that name.
job_id_of() { squeue -h -n "$1" -t R -o %i 2>/dev/null | head -n 1; }
run_job_probe() { # NAME OUT: sample the job called NAME into OUT.json
	local id=""
	for _ in $(seq 1 50); do
		id=$(job_id_of "$1")
		[ -n "$id" ] && break
		sleep 0.2
	done
	[ -n "$id" ] || { echo "no running job $1" >"$D/out/$2.err"; return 1; }
	sleep 1 # let the step's processes start
	scontrol show job -d "$id" >"$D/out/$2.show-job.txt" 2>&1
	scontrol listpids "$id" >"$D/out/$2.listpids.txt" 2>&1
	"$GP" job --job "$id" --simulate dgx-h100 --duration 4s --interval 1s --format json --slurm-conf "$D/etc/slurm.conf" \
		>"$D/out/$2.json" 2>"$D/out/$2.err"
	echo $? >"$D/out/$2.rc"
	scancel "$id"
}
# A step allocated one CPU that burns eight and never touches its GPUs
# (task/none does not confine it; its allocation, CPU_IDs, is one CPU). Its
# CPU time must be at least its allocation even on a busy machine: a make
# test beside compilers and fuzzers gave four plain loops 68% of one CPU,
# and eight loops at nice -10 still only 38%. The kernel's autogroups share
# the CPUs between sessions before nice applies inside one (sched(7),
# "The autogroup feature"), and slurmstepd starts the step in a session of
# its own: so the step raises its autogroup's priority (root may) and then
# its own.
timeout 60 srun --quiet -J gp-burn -c 1 --gres=gpu:2 bash -c \
	'echo -10 >/proc/self/autogroup 2>/dev/null; renice -n -10 -p $$ >/dev/null 2>&1
	 for i in 1 2 3 4 5 6 7 8; do (while :; do :; done) & done; wait' >/dev/null 2>&1 &
run_job_probe gp-burn burn
wait 2>/dev/null
st=$(status_of "$D/out/burn.json" perf.bottleneck)
sum=$(summary_of "$D/out/burn.json" perf.bottleneck)
if [ "$st" = warn ] && [[ "$sum" == "input pipeline CPU-bound:"* ]]; then
	pass "gpuprobe job on a CPU-burning step: perf.bottleneck warn ($sum)"
else
	fail "gpuprobe job on a CPU-burning step: perf.bottleneck '$st' ($sum); rc $(cat "$D/out/burn.rc" 2>/dev/null): $(head -c 400 "$D/out/burn.err")"
fi
st=$(status_of "$D/out/burn.json" perf.gpus_used)
if [ "$st" = warn ]; then
	pass "gpuprobe job: perf.gpus_used warn on GPUs that run nothing ($(summary_of "$D/out/burn.json" perf.gpus_used))"
else
	fail "gpuprobe job: perf.gpus_used '$st', want warn"
fi
# A step whose one process (cat, given the file 4000 times) reads one file
# over and over, on one of its CPUs.
dd if=/dev/urandom of="$D/out/data.bin" bs=1M count=32 status=none
fstype=$(findmnt -n -o FSTYPE --target "$D/out/data.bin")
timeout 60 srun --quiet -J gp-read -c "$NCPU" --gres=gpu:2 bash -c \
	'exec cat $(yes '"$D/out/data.bin"' | head -n 4000) >/dev/null' >/dev/null 2>&1 &
run_job_probe gp-read read
wait 2>/dev/null
rb=$(sed -n 's/^ *"read_bytes": \([0-9]*\),*$/\1/p' "$D/out/read.json" | head -n 1)
if [ "${rb:-0}" -gt $((64 << 20)) ] && grep -q "\"type\": \"$fstype\"" "$D/out/read.json"; then
	pass "gpuprobe job on a reading step: $((rb >> 20)) MiB read in the window, attributed to its $fstype filesystem"
else
	fail "gpuprobe job on a reading step: read_bytes '${rb:-}' (want > 64 MiB), filesystem $fstype in the report? rc $(cat "$D/out/read.rc" 2>/dev/null): $(head -c 400 "$D/out/read.err")"
fi
# The step's CPUs as a whole are not saturated (one reader on $NCPU CPUs), so
# the job-wide "input pipeline CPU-bound" verdict must not fire. Its one
# process, though, does keep one CPU busy copying page-cached data: naming
# that process (cat) is the one-process rule a real H100 run asked for.
st=$(status_of "$D/out/read.json" perf.bottleneck)
sum=$(summary_of "$D/out/read.json" perf.bottleneck)
if [ "$NCPU" -ge 2 ] && [ "$st" = warn ] && [[ "$sum" != *"input pipeline CPU-bound"* ]] &&
	{ [[ "$sum" != *"CPU-bound"* ]] || [[ "$sum" == *"one process is CPU-bound: pid "*" (cat)"* ]]; }; then
	pass "gpuprobe job on a reading step with $NCPU CPUs: not called job-wide CPU-bound ($sum)"
elif [ "$NCPU" -lt 2 ]; then
	log "one CPU: a reader saturates it, the CPU-bound verdict is right; not asserted"
else
	fail "gpuprobe job on a reading step: perf.bottleneck '$st' ($(summary_of "$D/out/read.json" perf.bottleneck))"
fi

# --- 4b2. gpuprobe job --hang across the allocation (issue 29) ---------------
# A two-task step: task 0 spins, task 1 stops itself (kill -STOP: state T) or
# blocks opening a FIFO nobody writes (state S in the kernel, CPU time
# still: a hung mount's stand-in). gpuprobe runs as one more task of the job
# (srun --overlap, as docs/job.md's one-liner) and summarize must name this
# node and rank 1. The GPUs are simulated and run nothing of the job, so the
# verdict is the process side's alone. Nothing listens on NCCL's RAS port:
# the report must say RAS is not available.
mkfifo "$D/out/hang.fifo"
hang_step() { # NAME HOW: run the two-task step, probe it across the allocation
	timeout 90 srun --quiet -J "$1" -n 2 -c 1 --gres=gpu:2 bash -c \
		'if [ "$SLURM_PROCID" = 1 ]; then '"$2"'; fi; while :; do :; done' >/dev/null 2>&1 &
	local id=""
	for _ in $(seq 1 50); do
		id=$(job_id_of "$1")
		[ -n "$id" ] && break
		sleep 0.2
	done
	[ -n "$id" ] || { echo "no running job $1" >"$D/out/$1.err"; return 1; }
	sleep 1
	timeout 60 srun --quiet --overlap --jobid="$id" -n 1 -c 1 "$GP" job --hang --job "$id" --simulate dgx-h100 \
		--duration 3s --interval 1s --format json --slurm-conf "$D/etc/slurm.conf" 2>"$D/out/$1.err" | tee "$D/out/$1.json" |
		"$GP" summarize >"$D/out/$1.summary.txt" 2>&1
	echo "${PIPESTATUS[0]} ${PIPESTATUS[2]}" >"$D/out/$1.rc"
	scancel "$id"
	wait 2>/dev/null
}
for how in stop fifo; do
	case $how in
	stop) cmd='kill -STOP $$' want='stopped (state T at every tick' ;;
	fifo) cmd="exec 3<$D/out/hang.fifo" want='asleep in ' ;;
	esac
	hang_step "gp-hang-$how" "$cmd"
	sum=$(cat "$D/out/gp-hang-$how.summary.txt" 2>/dev/null)
	if [ "$(cat "$D/out/gp-hang-$how.rc" 2>/dev/null)" = "1 1" ] &&
		grep -q "^  the job waits on $HOST.*: rank 1 (pid [0-9]*) $want" <<<"$sum" &&
		! grep -q "rank 0 (pid [0-9]*) \(stopped\|asleep\)" <<<"$sum" &&
		grep -q '"error": "RAS not available (NCCL ' "$D/out/gp-hang-$how.json"; then
		pass "srun --overlap gpuprobe job --hang | summarize, task 1 $how: names $HOST and rank 1 ($(grep -o 'rank 1 (pid [0-9]*) [^;]*' <<<"$sum" | head -n 1))"
	else
		fail "job --hang, task 1 $how: rc $(cat "$D/out/gp-hang-$how.rc" 2>/dev/null); summary: $(head -c 1200 <<<"$sum"); err: $(head -c 300 "$D/out/gp-hang-$how.err")"
	fi
done

# --- 4c. binding flags Slurm itself turns into variables --------------------
# gpuprobe's verdict on the environment slurmd really produced: --ntasks-per-gpu
# is sharing as requested (the tasks get SLURM_NTASKS_PER_TRES from env.c
# setup_env; 22.05 sets no SLURM_NTASKS_PER_GPU there), and the
# sbatch batch step is one process however many tasks the job has (no
# SLURM_STEP_ID; SLURM_TASKS_PER_NODE is the job's).
slurm_vars() { grep -oE '(SLURM_(STEP_ID|NTASKS_PER_GPU|NTASKS_PER_TRES|GPUS_PER_TASK|TRES_PER_TASK|TASKS_PER_NODE|STEP_GPUS|JOB_GPUS|GPUS_ON_NODE|GPU_BIND)|SLURMD_TRES_BIND|CUDA_VISIBLE_DEVICES)=[^ ]*' "$1" | sort | tr '\n' ' '; }
$SRUN -n 2 --ntasks-per-gpu=2 --output="$D/out/pergpu-%t.json" $CHECK 2>"$D/out/pergpu.err"
$SRUN -n 2 --ntasks-per-gpu=2 --output="$D/out/pergpu-env-%t.txt" env 2>/dev/null
s0=$(status_of "$D/out/pergpu-0.json" job.gpu_sharing)
s1=$(status_of "$D/out/pergpu-1.json" job.gpu_sharing)
sum=$(summary_of "$D/out/pergpu-1.json" job.gpu_sharing)
if [ "$s0" = pass ] && [ "$s1" = pass ] && [[ "$sum" == *"shared as requested (SLURM_NTASKS_PER_"* ]]; then
	pass "srun -n 2 --ntasks-per-gpu=2: job.gpu_sharing pass on both tasks ($sum; env: $(slurm_vars "$D/out/pergpu-env-1.txt"))"
else
	fail "srun -n 2 --ntasks-per-gpu=2: job.gpu_sharing '$s0'/'$s1' ($sum); env: $(slurm_vars "$D/out/pergpu-env-1.txt") $(head -c 300 "$D/out/pergpu.err")"
fi
# --gpu-bind=map_gpu naming one GPU for both tasks is placement the user
# wrote out (srun(1)): two processes on one GPU, shared as requested.
$SRUN -n 2 --gres=gpu:1 --gpu-bind=map_gpu:0,0 --output="$D/out/map-%t.json" $CHECK 2>"$D/out/map.err"
$SRUN -n 2 --gres=gpu:1 --gpu-bind=map_gpu:0,0 --output="$D/out/map-env-%t.txt" env 2>/dev/null
s0=$(status_of "$D/out/map-0.json" job.gpu_sharing)
s1=$(status_of "$D/out/map-1.json" job.gpu_sharing)
sum=$(summary_of "$D/out/map-1.json" job.gpu_sharing)
if [ "$s0" = pass ] && [ "$s1" = pass ] && [[ "$sum" == *"shared as requested (--gpu-bind=map_gpu:0,0, from SLURM"* ]]; then
	pass "srun -n 2 --gres=gpu:1 --gpu-bind=map_gpu:0,0: job.gpu_sharing pass on both tasks ($sum; env: $(slurm_vars "$D/out/map-env-1.txt"))"
else
	fail "srun -n 2 --gres=gpu:1 --gpu-bind=map_gpu:0,0: job.gpu_sharing '$s0'/'$s1' ($sum); env: $(slurm_vars "$D/out/map-env-1.txt") $(head -c 300 "$D/out/map.err")"
fi
timeout 60 sbatch --quiet --wait -n 2 --gpus-per-task=1 -o "$D/out/batch.json" --wrap "env >$D/out/batch-env.txt; exec $CHECK" 2>"$D/out/batch.err"
st=$(status_of "$D/out/batch.json" job.gpu_sharing)
sum=$(summary_of "$D/out/batch.json" job.gpu_sharing)
if [ "$st" = pass ] && [[ "$sum" == *"is one process"* ]]; then
	pass "sbatch -n 2 --gpus-per-task=1, gpuprobe in the batch script: job.gpu_sharing pass ($sum; env: $(slurm_vars "$D/out/batch-env.txt"))"
else
	fail "sbatch -n 2 --gpus-per-task=1 batch step: job.gpu_sharing '$st' ($sum); env: $(slurm_vars "$D/out/batch-env.txt") $(head -c 300 "$D/out/batch.err")"
fi

# --- 4d. issue 33: single:N sharing, a GPU-less step in a GPU job, salloc ------
# --gpu-bind=single:2 binds two tasks to each GPU (srun(1)): sharing as
# requested, read from the step's SLURMD_TRES_BIND / SLURM_GPU_BIND.
$SRUN -n 2 --gres=gpu:1 --gpu-bind=single:2 --output="$D/out/single-%t.json" $CHECK 2>"$D/out/single.err"
$SRUN -n 2 --gres=gpu:1 --gpu-bind=single:2 --output="$D/out/single-env-%t.txt" env 2>/dev/null
s0=$(status_of "$D/out/single-0.json" job.gpu_sharing)
s1=$(status_of "$D/out/single-1.json" job.gpu_sharing)
sum=$(summary_of "$D/out/single-1.json" job.gpu_sharing)
if [ "$s0" = pass ] && [ "$s1" = pass ] && [[ "$sum" == *"shared as requested (--gpu-bind=single:2, from "* ]]; then
	pass "srun -n 2 --gres=gpu:1 --gpu-bind=single:2: job.gpu_sharing pass on both tasks ($sum; env: $(slurm_vars "$D/out/single-env-1.txt"))"
else
	fail "srun -n 2 --gres=gpu:1 --gpu-bind=single:2: job.gpu_sharing '$s0'/'$s1' ($sum); env: $(slurm_vars "$D/out/single-env-1.txt") $(head -c 300 "$D/out/single.err")"
fi
# srun --gres=none inside sbatch --gres=gpu:2: the step inherits the batch
# script's SLURM_JOB_GPUS; its own variables say it has no GPU. Without
# ConstrainDevices that is the GPU-less-step warning, not "not allocated".
timeout 60 sbatch --quiet --wait --gres=gpu:2 -o "$D/out/nogres-batch.txt" \
	--wrap "srun --gres=none env >$D/out/nogres-env.txt; srun --gres=none $CHECK >$D/out/nogres.json" 2>"$D/out/nogres.err"
st=$(status_of "$D/out/nogres.json" job.visible_devices)
sum=$(summary_of "$D/out/nogres.json" job.visible_devices)
if [ "$st" = warn ] && [[ "$sum" == "Slurm allocated no GPUs to this step"* ]]; then
	pass "srun --gres=none in sbatch --gres=gpu:2: job.visible_devices warn ($sum; env: $(slurm_vars "$D/out/nogres-env.txt"))"
else
	fail "srun --gres=none in sbatch --gres=gpu:2: job.visible_devices '$st' ($sum); env: $(slurm_vars "$D/out/nogres-env.txt") $(head -c 300 "$D/out/nogres.err") $(head -c 300 "$D/out/nogres-batch.txt")"
fi
# A command run by salloc itself runs where salloc was started, not on the
# allocation (no SLURMD_NODENAME, SLURM_STEP_ID or SLURM_PROCID).
timeout 60 salloc --quiet --gres=gpu:2 bash -c "env >$D/out/salloc-env.txt; exec $CHECK >$D/out/salloc.json" 2>"$D/out/salloc.err"
st=$(status_of "$D/out/salloc.json" job.visible_devices)
sum=$(summary_of "$D/out/salloc.json" job.visible_devices)
if [ "$st" = skip ] && [[ "$sum" == *"not running on the allocation: use srun"* ]]; then
	pass "a command in salloc --gres=gpu:2: job checks skip ($sum; env: $(slurm_vars "$D/out/salloc-env.txt"))"
else
	fail "a command in salloc --gres=gpu:2: job.visible_devices '$st' ($sum); env: $(slurm_vars "$D/out/salloc-env.txt") $(head -c 300 "$D/out/salloc.err")"
fi

# --- 5. HealthCheckProgram: drain, resume, and an admin's drain ----------------
hc_runs() {
	local n
	n=$(grep -c 'slurm-drain:' "$D/log/healthcheck.log" 2>/dev/null)
	echo "${n:-0}"
}
# wait_runs N: wait until the health check has run N more times.
wait_runs() {
	local want=$(($(hc_runs) + $1))
	check_runs() { [ "$(hc_runs)" -ge "$want" ]; }
	wait_for $((INTERVAL * $1 + 10)) check_runs
}
drained_by_us() { [[ "$(node_state)" == drain* ]] && [[ "$(node_reason)" == gpuprobe:* ]]; }
not_drained() { [ "$(node_state)" = idle ]; }

wait_runs 1 || fail "health check never ran (slurmd.log: $(grep -i health "$D/log/slurmd.log" | tail -n 2))"
echo "dgx-h100:row-remap-pending=3" >"$D/hc-simulate"
# Within one interval, plus the run's own second or so and the polling.
LIMIT=$((INTERVAL + 4))
t=$(date +%s%N)
if wait_for "$LIMIT" drained_by_us; then
	pass "HealthCheckProgram drained the node in $((($(date +%s%N) - t) / 1000000)) ms (interval ${INTERVAL}s, limit ${LIMIT}s): $(node_state), Reason=$(node_reason)"
else
	fail "no gpuprobe drain within ${LIMIT}s: state $(node_state), reason '$(node_reason)'; $(tail -n 3 "$D/log/healthcheck.log")"
fi
echo dgx-h100 >"$D/hc-simulate"
t=$(date +%s%N)
if wait_for "$LIMIT" not_drained; then
	pass "HealthCheckProgram resumed the node in $((($(date +%s%N) - t) / 1000000)) ms once the fault was gone (limit ${LIMIT}s): $(node_state)"
else
	fail "not resumed within ${LIMIT}s: state $(node_state), reason '$(node_reason)'"
fi

scontrol update NodeName="$HOST" State=DRAIN Reason="admin: replacing PSU" || fail "scontrol drain by 'admin' failed"
echo "dgx-h100:ecc-uncorrectable=2" >"$D/hc-simulate"
wait_runs 2 || fail "health check stopped running"
if [ "$(node_reason)" = "admin: replacing PSU" ] && [[ "$(node_state)" == drain* ]]; then
	pass "an admin's drain reason survives a failing health check ($(hc_runs) runs so far)"
else
	fail "admin drain after a failing health check: state $(node_state), reason '$(node_reason)'"
fi
echo dgx-h100 >"$D/hc-simulate"
wait_runs 2 || fail "health check stopped running"
if [ "$(node_reason)" = "admin: replacing PSU" ] && [[ "$(node_state)" == drain* ]]; then
	pass "an admin's drain survives a passing health check (not resumed)"
else
	fail "admin drain after a passing health check: state $(node_state), reason '$(node_reason)'"
fi
scontrol update NodeName="$HOST" State=RESUME
wait_for 10 is_idle || fail "node not idle after the admin's resume: $(node_state)"
if grep -q 'hard deadline\|panic' "$D/log/healthcheck.log"; then
	fail "health check log has a panic or a deadline overrun: $(grep -m1 'hard deadline\|panic' "$D/log/healthcheck.log")"
fi
log "health check ran $(hc_runs) times"

# --- 6. issue 33: gres.conf variants judged against what slurmd/slurmctld did --
# gres.conf(5) on Type=: "A restart of the slurmctld and slurmd daemons is
# required for changes to the Type option to take effect", so each variant
# restarts those two (munged stays up; slurmctld -c: no state to carry). The
# health check is left out: it would drain the node on slurm.gres's verdict
# and hide what Slurm itself did.
restart_slurm() { # GRES_OF_THE_NODE GRES_CONF_TEXT
	local name pid i
	timeout 5 scancel --quiet --partition=debug 2>/dev/null || true
	for name in slurmd slurmctld; do
		pid=$(cat "$D/run/$name.pid" 2>/dev/null || true)
		alive "$pid" || continue
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 100); do
			alive "$pid" || break
			sleep 0.1
		done
		alive "$pid" && kill -KILL "$pid" 2>/dev/null
	done
	sed -i -e '/^HealthCheck/d' -e "s/ Gres=[^ ]* / Gres=$1 /" "$D/etc/slurm.conf"
	printf '%s\n' "$2" >"$D/etc/gres.conf"
	slurmctld -c -f "$D/etc/slurm.conf" || return 1
	slurmd -f "$D/etc/slurm.conf" || return 1
}
node_gres() { scontrol show node "$HOST" 2>/dev/null | sed -n 's/^ *Gres=\([^ (]*\).*/\1/p'; }
settled() { case "$(node_state)" in idle* | inval* | drain* | mix*) return 0 ;; esac; return 1; }
GCHECK="$GP check --simulate dgx-h100 --format json --no-job --checks slurm --slurm-conf $D/etc/slurm.conf"

# 6a. Type=H100 in gres.conf, gpu:h100:8 in slurm.conf: types that differ
# only in case.
restart_slurm "gpu:h100:$NGPUS" "NodeName=$HOST Name=gpu Type=H100 File=$D/dev/fakegpu[0-$((NGPUS - 1))]" || die "restart for the Type case variant"
wait_for 30 settled
st_case=$(node_state)
gres_case=$(node_gres)
timeout 20 srun --quiet --gres=gpu:h100:1 true >/dev/null 2>"$D/out/case-srun.err"
srun_rc=$?
$GCHECK >"$D/out/case.json" 2>"$D/out/case.err"
st=$(status_of "$D/out/case.json" slurm.gres)
sum=$(summary_of "$D/out/case.json" slurm.gres | sed 's/\\u003c/</g')
if [ "$st_case" = idle ] && [ "$srun_rc" != 0 ] && grep -q 'Requested node configuration is not available' "$D/out/case-srun.err" &&
	[ "$st" = fail ] && [[ "$sum" == *"registers the node as $gres_case (gres.conf's spelling) and leaves it IDLE, then refuses --gres=gpu:h100 with \\\"Requested node configuration is not available\\\""* ]]; then
	pass "Type=H100 vs Gres=gpu:h100:$NGPUS: Slurm left the node $st_case as Gres=$gres_case and refused --gres=gpu:h100:1 ($(tr '\n' ' ' <"$D/out/case-srun.err")); slurm.gres fail says the same ($sum)"
else
	fail "Type=H100 vs Gres=gpu:h100:$NGPUS: node $st_case, Gres=$gres_case, srun rc $srun_rc: $(head -c 200 "$D/out/case-srun.err"); slurm.gres '$st' ($sum) $(head -c 200 "$D/out/case.err")"
fi

# 6b. AutoDetect=nvml on Debian's slurmd, built without NVML (no gpu_nvml.so).
restart_slurm "gpu:$NGPUS" "AutoDetect=nvml" || die "restart for the AutoDetect=nvml variant"
is_inval() { [[ "$(node_state)" == inval* ]] || [[ "$(node_reason)" == *"count reported lower than configured"* ]]; }
wait_for 30 is_inval
st_nvml=$(node_state)
reason_nvml=$(node_reason)
$GCHECK >"$D/out/nvml.json" 2>"$D/out/nvml.err"
st=$(status_of "$D/out/nvml.json" slurm.gres)
sum=$(summary_of "$D/out/nvml.json" slurm.gres | sed 's/\\u003c/</g')
if [[ "$st_nvml" == inval* ]] && [[ "$reason_nvml" == *"count reported lower than configured (0 < $NGPUS)"* ]] &&
	grep -q "configured with nvml functionality, but that lib wasn't found" "$D/log/slurmd.log" &&
	[ "$st" = fail ] && [[ "$sum" == *"slurmd has no gpu_nvml.so"*"count reported lower than configured (0 < $NGPUS)"* ]]; then
	pass "AutoDetect=nvml without gpu_nvml.so: node $st_nvml, Reason=$reason_nvml; slurm.gres fail ($sum)"
else
	fail "AutoDetect=nvml: node '$st_nvml', reason '$reason_nvml', slurmd.log nvml line: $(grep -c 'nvml functionality' "$D/log/slurmd.log"); slurm.gres '$st' ($sum) $(head -c 200 "$D/out/nvml.err")"
fi

# 6c. Flags=no_gpu_env and Flags=amd_gpu_env on these NVIDIA GPUs (gres.conf(5):
# no_gpu_env "Set no GPU-specific environment variables"; amd_gpu_env "Set
# environment variable ROCR_VISIBLE_DEVICES"): a step given two GPUs gets no
# CUDA_VISIBLE_DEVICES, and without ConstrainDevices (this node has none) CUDA
# would see every GPU. job.visible_devices must fail naming the flag and the
# admin's fix, and slurm.gres must fail on the flag, against what slurmd set.
check_json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(json.dumps(c) for c in d["checks"] if c["id"]==sys.argv[2]))' "$1" "$2" 2>/dev/null; }
for flags in no_gpu_env amd_gpu_env; do
	restart_slurm "gpu:$NGPUS" "NodeName=$HOST Name=gpu File=$D/dev/fakegpu[0-$((NGPUS - 1))] Flags=$flags" || die "restart for the Flags=$flags variant"
	wait_for 30 is_idle || fail "Flags=$flags: node not idle after the restart: $(node_state) $(node_reason)"
	$SRUN --gres=gpu:2 bash -c "env >$D/out/flags-$flags-env.txt; exec $CHECK" >"$D/out/flags-$flags.json" 2>"$D/out/flags-$flags.err"
	$GCHECK >"$D/out/flags-$flags-gres.json" 2>"$D/out/flags-$flags-gres.err"
	env_cuda=$(grep -c '^CUDA_VISIBLE_DEVICES=' "$D/out/flags-$flags-env.txt")
	env_rocr=$(grep -c '^ROCR_VISIBLE_DEVICES=' "$D/out/flags-$flags-env.txt")
	st=$(status_of "$D/out/flags-$flags.json" job.visible_devices)
	vis=$(check_json "$D/out/flags-$flags.json" job.visible_devices)
	gst=$(status_of "$D/out/flags-$flags-gres.json" slurm.gres)
	gres=$(check_json "$D/out/flags-$flags-gres.json" slurm.gres)
	want_rocr=0
	[ "$flags" = amd_gpu_env ] && want_rocr=1
	if [ "$env_cuda" = 0 ] && [ "$env_rocr" = "$want_rocr" ] && [ "$st" = fail ] && [[ "$vis" == *"Flags=$flags"* ]] &&
		[ "$gst" = fail ] && [[ "$gres" == *"Flags=$flags"*"ConstrainDevices"* ]]; then
		pass "Flags=$flags: slurmd set no CUDA_VISIBLE_DEVICES (ROCR_VISIBLE_DEVICES: $env_rocr); job.visible_devices and slurm.gres fail naming the flag ($(summary_of "$D/out/flags-$flags.json" job.visible_devices))"
	else
		fail "Flags=$flags: CUDA_VISIBLE_DEVICES lines $env_cuda, ROCR_VISIBLE_DEVICES lines $env_rocr (want $want_rocr); job.visible_devices '$st' ($(head -c 400 <<<"$vis")); slurm.gres '$gst' ($(head -c 400 <<<"$gres")) $(head -c 200 "$D/out/flags-$flags.err")"
	fi
done
