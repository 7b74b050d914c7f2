#!/usr/bin/env bash
# End-to-end test of gpuprobe's multi-node verdicts against a real two-node
# Slurm on one machine: munged, slurmctld and two slurmd, each Slurm daemon
# in a network namespace of its own (ip netns) with its own host name
# (unshare --uts) and /etc/hosts (a bind mount in its own mount namespace):
#
#   netns <P>-ctl  gp2n-ctl 10.213.0.1/24 on bridge br0: slurmctld, and every
#                  client command (srun, sinfo, scontrol)
#   netns <P>-n1   gp2n1    10.213.0.2/24 eth0 (veth to br0): slurmd
#   netns <P>-n2   gp2n2    10.213.0.3/24 eth0 (veth to br0): slurmd
#
# munged stays in the host's namespace: its socket is a path, which works
# across network namespaces. Nothing is added to the host's own network
# namespace, and all traffic goes between the three namespaces. Each node has
# eight fake GPUs (character devices 195:N made with mknod, per node); the
# NVML side is simulated (--simulate dgx-h100). The job environment every
# verdict is judged on is the one slurmd produced (SLURM_JOB_NODELIST,
# SLURM_NNODES, SLURMD_NODENAME, the namespace's interfaces and /etc/hosts).
# Asserts:
#   - srun -N 2 runs one task on each node, with Slurm's multi-node variables;
#   - job.master_addr on a two-node job: the first node (by name, as the job
#     derives it with scontrol show hostnames, and by address) passes, the
#     second node warns, a node outside the job, a name that does not resolve,
#     and localhost fail;
#   - job.nccl_env: NCCL_SOCKET_IFNAME=lo fails on two nodes and not on one,
#     eth0 passes, ib0 warns (no such interface in the namespace);
#     NCCL_IB_DISABLE=1 warns on two nodes (the simulated HCAs), not on one;
#   - srun -N 2 --label ... | gpuprobe summarize: one row per node, the node
#     with a fault first, exit 1;
#   - HealthCheckProgram: a simulated fault on one node drains that node only
#     (sinfo -R, scontrol show node), jobs then land on the other, and the
#     node resumes when the fault is gone;
#   - fleet safety (issue 31): an admin's drain is neither lifted nor
#     overwritten; with the breaker at 50% a fault on both nodes drains one
#     and suppresses the other (gpuprobe_drain_suppressed 1); a transient
#     drain is lifted by the first run that no longer finds its cause; with
#     drain.resume_verify a node-class drain stays while verify --quick
#     (simulated h2d-slow) fails and is lifted once it passes;
#   - restarted with task/cgroup and ConstrainDevices=yes (cgroup v1): the
#     renumbered CUDA_VISIBLE_DEVICES against SLURM_STEP_GPUS on two nodes, and
#     job.visible_devices on the device cgroup it finds;
#   - restarted with two declared sockets per node: --gpu-bind=closest gives
#     each task its socket's four GPUs, with and without ConstrainDevices.
#
# Skips (exit 0, with a SKIP line) only when network or UTS namespaces cannot
# be made here; anything else that goes wrong fails. Needs root. Knobs:
# SLURM_2NODE_NS (namespace name prefix, default gp2n), SLURM_2NODE_INTERVAL
# (health check interval, s), SLURM_2NODE_KEEP=1 (leave everything running).
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/e2e-lib.sh
. "$REPO/scripts/e2e-lib.sh"

P=${SLURM_2NODE_NS:-gp2n}
NS_CTL=$P-ctl
NS_N1=$P-n1
NS_N2=$P-n2
NET=10.213.0
INTERVAL=${SLURM_2NODE_INTERVAL:-5}
NGPUS=8 # the dgx-h100 simulation's count
N1=gp2n1
N2=gp2n2
PASSED=0

[ "$(id -u)" = 0 ] || { echo "slurm-2node-e2e: FAIL: needs root (ip netns, mknod, slurmd)" >&2; exit 1; }

# ns_pids NS: the processes in a namespace this script (or an earlier run of
# it) made; only this script names namespaces $P-*.
ns_pids() { ip netns pids "$1" 2>/dev/null; }
# stop_ns NS: stop what runs in NS (slurmd, slurmctld, their steps) by PID,
# TERM then KILL, and delete NS.
stop_ns() {
	local ns=$1 pid i
	ip netns list 2>/dev/null | grep -q "^$ns\b" || return 0
	for pid in $(ns_pids "$ns"); do kill -TERM "$pid" 2>/dev/null; done
	for i in $(seq 1 50); do
		[ -z "$(ns_pids "$ns")" ] && break
		sleep 0.1
	done
	for pid in $(ns_pids "$ns"); do
		log "$ns: pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-60)) needed SIGKILL"
		kill -KILL "$pid" 2>/dev/null
	done
	ip netns del "$ns" 2>/dev/null || log "ip netns del $ns failed"
}
# rm_cgroups removes the cgroup v1 directories task/cgroup made for our
# nodes (slurm_gp2n1, slurm_gp2n2 in each controller): slurmd leaves them.
rm_cgroups() {
	local d
	for d in /sys/fs/cgroup/*/slurm_"$N1" /sys/fs/cgroup/*/slurm_"$N2"; do
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	return 0
}
stop_all() {
	# slurmd first while slurmctld and munged are up, then slurmctld, then
	# munged (by its PID file, in this run's directory).
	if [ -n "${SLURM_CONF:-}" ] && [ -n "$(ns_pids "$NS_CTL")" ]; then
		timeout 5 "$W/bin/inns" "$NS_CTL" gp2n-ctl scancel --quiet --partition=debug 2>/dev/null
	fi
	stop_ns "$NS_N1"
	stop_ns "$NS_N2"
	stop_ns "$NS_CTL"
	rm_cgroups
	local pid
	pid=$(cat "$W/run/munged.pid" 2>/dev/null)
	if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$W/"; then
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
	fi
}
finish() {
	local rc=$?
	if [ "${SLURM_2NODE_KEEP:-0}" = 1 ]; then
		log "SLURM_2NODE_KEEP=1: left running; clients: $W/bin/inns $NS_CTL gp2n-ctl env SLURM_CONF=$W/etc/slurm.conf sinfo"
		trap - EXIT
		exit "$rc"
	fi
	stop_all
	if [ "$FAILS" -gt 0 ] || [ "$rc" -ne 0 ]; then
		for f in "$W"/log/*.log; do
			[ -s "$f" ] && { echo "--- tail $f"; tail -n 12 "$f"; }
		done
		log "slurm-2node-e2e: FAIL: $PASSED passed, $FAILS failed (rc $rc)"
		e2e_cleanup
		exit 1
	fi
	if [ -n "$SKIPPED" ]; then
		log "slurm-2node-e2e: SKIP: $SKIPPED (it needs network and UTS namespaces; nothing was tested)"
	else
		log "slurm-2node-e2e: PASS: $PASSED passed, 0 failed"
	fi
	e2e_cleanup
}
SKIPPED=
skip() {
	SKIPPED=$*
	exit 0
}

e2e_init slurm-2node
trap finish EXIT
pass() { log "PASS: $*"; PASSED=$((PASSED + 1)); }
chmod 755 "$W"

# --- install ---------------------------------------------------------------
missing=""
for b in slurmctld slurmd srun sbatch sinfo scontrol scancel munged; do
	command -v "$b" >/dev/null 2>&1 || missing="$missing $b"
done
pkgs=""
[ -n "$missing" ] && pkgs="slurm-wlm munge"
command -v ip >/dev/null 2>&1 || pkgs="$pkgs iproute2"
if [ -n "$pkgs" ]; then
	log "missing:$missing -> apt-get install $pkgs"
	made_policy=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		# Keep the packages' postinst from starting system daemons.
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made_policy=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	{ apt-get update -qq && apt-get install -y -qq --no-install-recommends $pkgs; } >"$W/apt.log" 2>&1 || die "apt-get install $pkgs failed: $(tail -n 3 "$W/apt.log")"
	[ "$made_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
fi

# --- namespaces -------------------------------------------------------------
for ns in "$NS_N1" "$NS_N2" "$NS_CTL"; do
	if ip netns list 2>/dev/null | grep -q "^$ns\b"; then
		log "namespace $ns left by an earlier run: stopping its processes and deleting it"
		stop_ns "$ns"
	fi
done
# Can this machine make them at all? (A container without CAP_SYS_ADMIN or
# with a read-only /run cannot: that, and only that, is a skip.)
ip netns add "$NS_CTL" 2>"$W/netns.err" || skip "ip netns add $NS_CTL: $(cat "$W/netns.err")"
ip netns exec "$NS_CTL" unshare --uts --mount sh -c 'hostname gp2n-probe' 2>"$W/netns.err" ||
	skip "unshare --uts --mount in a network namespace: $(cat "$W/netns.err")"
ip netns add "$NS_N1" && ip netns add "$NS_N2" || die "ip netns add $NS_N1/$NS_N2 failed"
ip -n "$NS_CTL" link set lo up &&
	ip -n "$NS_CTL" link add br0 type bridge &&
	ip -n "$NS_CTL" addr add "$NET.1/24" dev br0 &&
	ip -n "$NS_CTL" link set br0 up || die "bridge in $NS_CTL"
i=2
for ns in "$NS_N1" "$NS_N2"; do
	ip -n "$NS_CTL" link add "v-$ns" type veth peer name eth0 netns "$ns" &&
		ip -n "$NS_CTL" link set "v-$ns" master br0 &&
		ip -n "$NS_CTL" link set "v-$ns" up &&
		ip -n "$ns" link set lo up &&
		ip -n "$ns" addr add "$NET.$i/24" dev eth0 &&
		ip -n "$ns" link set eth0 up || die "veth $ns"
	i=$((i + 1))
done
mkdir -p "$W"/{bin,etc,run,log,state,munge,out} "$W/dev/$N1" "$W/dev/$N2" "$W/spool/$N1" "$W/spool/$N2" || die "mkdir $W"
cat >"$W/etc/hosts" <<EOF
127.0.0.1 localhost
$NET.1 gp2n-ctl
$NET.2 $N1
$NET.3 $N2
EOF
# A resolver on the namespace's own loopback (nothing listens): a name not in
# the hosts file fails at once, and no lookup leaves the namespaces.
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$W/etc/resolv.conf"
# inns NETNS HOSTNAME CMD...: CMD in that network namespace, with that host
# name (a UTS namespace) and the cluster's /etc/hosts and /etc/resolv.conf
# (bound in a mount namespace of its own). ip netns exec remounts /sys for the netns, so that
# /sys/class/net is the namespace's, which hides the cgroup file systems under
# /sys/fs/cgroup (slurmd fails without them): they are bound aside first and
# back after. A script, so that timeout can run it.
mkdir -p "$W/cgroup-keep"
cat >"$W/bin/inns" <<EOF
#!/bin/sh
case \${INNS_STAGE:-0} in
0)
	export INNS_NS="\$1" INNS_HOST="\$2"
	shift 2
	INNS_STAGE=1 exec unshare --mount --uts "\$0" "\$@" ;;
1)
	mount --rbind /sys/fs/cgroup "$W/cgroup-keep" || exit 125
	INNS_STAGE=2 exec ip netns exec "\$INNS_NS" "\$0" "\$@" ;;
2)
	mount --rbind "$W/cgroup-keep" /sys/fs/cgroup && umount -l "$W/cgroup-keep" &&
		mount --bind "$W/etc/hosts" /etc/hosts && { [ ! -e /etc/resolv.conf ] || mount --bind "$W/etc/resolv.conf" /etc/resolv.conf; } && hostname "\$INNS_HOST" || exit 125
	unset INNS_STAGE INNS_NS INNS_HOST
	exec "\$@" ;;
esac
EOF
chmod 755 "$W/bin/inns"
INNS=$W/bin/inns
CTL=("$INNS" "$NS_CTL" gp2n-ctl)
reach=$("$INNS" "$NS_N2" "$N2" sh -c "hostname; ip -br -4 addr show eth0; getent hosts $N1" 2>&1)
if [[ "$reach" == "$N2"*"$NET.3/24"*"$NET.2"*"$N1"* ]]; then
	log "namespaces up: $NS_CTL ($NET.1, br0), $NS_N1 ($N1, $NET.2), $NS_N2 ($N2, $NET.3)"
else
	die "namespace $NS_N2 not as made: $reach"
fi

# --- build, configure, start --------------------------------------------------
GP=$W/bin/gpuprobe
e2e_binary "$GP"
NCPU=$(nproc)
for n in "$N1" "$N2"; do
	for i in $(seq 0 $((NGPUS - 1))); do
		mknod "$W/dev/$n/fakegpu$i" c 195 "$i" || die "mknod $W/dev/$n/fakegpu$i"
	done
	echo dgx-h100 >"$W/hc-simulate-$n"
done
dd if=/dev/urandom of="$W/munge/munge.key" bs=1024 count=1 status=none && chmod 400 "$W/munge/munge.key" || die "munge key"
chmod 755 "$W/munge"

cat >"$W/etc/slurm.conf" <<EOF
ClusterName=gp2n
SlurmctldHost=gp2n-ctl($NET.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$W/munge/munge.socket
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool/%n
SlurmctldPidFile=$W/run/slurmctld.pid
SlurmdPidFile=$W/run/slurmd-%n.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd-%n.log
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
HealthCheckProgram=$W/etc/healthcheck.sh
HealthCheckInterval=$INTERVAL
HealthCheckNodeState=ANY
NodeName=$N1 NodeAddr=$NET.2 CPUs=$NCPU Boards=1 SocketsPerBoard=1 CoresPerSocket=$NCPU ThreadsPerCore=1 RealMemory=1024 Gres=gpu:$NGPUS State=UNKNOWN
NodeName=$N2 NodeAddr=$NET.3 CPUs=$NCPU Boards=1 SocketsPerBoard=1 CoresPerSocket=$NCPU ThreadsPerCore=1 RealMemory=1024 Gres=gpu:$NGPUS State=UNKNOWN
PartitionName=debug Nodes=$N1,$N2 Default=YES MaxTime=INFINITE State=UP
EOF
{
	echo "NodeName=$N1 Name=gpu File=$W/dev/$N1/fakegpu[0-$((NGPUS - 1))]"
	echo "NodeName=$N2 Name=gpu File=$W/dev/$N2/fakegpu[0-$((NGPUS - 1))]"
} >"$W/etc/gres.conf"
echo "# gpuprobe two-node e2e: no cgroup constraints" >"$W/etc/cgroup.conf"
# slurmd gives the HealthCheckProgram only SLURMD_NODENAME: each node's run
# reads its own simulate file, so a fault can be put on one node.
cat >"$W/etc/healthcheck.sh" <<EOF
#!/bin/sh
GPUPROBE=$GP GPUPROBE_HEALTHCHECK_ARGS="--slurm-conf $W/etc/slurm.conf --simulate-file $W/hc-simulate-\$SLURMD_NODENAME --checks gpu,slurm --log.level info --config $W/etc/gpuprobe.yml --drain-history $W/run/drain-history-\$SLURMD_NODENAME.json \$(cat $W/hc-args-\$SLURMD_NODENAME 2>/dev/null)" \\
	exec /bin/sh $REPO/contrib/slurm/healthcheck.sh >>$W/log/healthcheck-\$SLURMD_NODENAME.log 2>&1
EOF
chmod 755 "$W/etc/healthcheck.sh"
# The health check's config (section 5b rewrites it) and per-node extra
# arguments: the breaker's defaults exempt a two-node cluster.
echo "# gpuprobe two-node e2e: defaults" >"$W/etc/gpuprobe.yml"

export SLURM_CONF=$W/etc/slurm.conf
munged --socket="$W/munge/munge.socket" --key-file="$W/munge/munge.key" --pid-file="$W/run/munged.pid" \
	--log-file="$W/log/munged.log" --seed-file="$W/munge/munged.seed" || die "munged did not start"
# start_slurm: slurmctld (clean state) and the two slurmd, in the foreground
# in the background: their PIDs are ours to stop. stop_slurm stops them,
# slurmd first, TERM then KILL after 10 s.
start_slurm() {
	"${CTL[@]}" slurmctld -D -c -f "$SLURM_CONF" >>"$W/log/slurmctld.out" 2>&1 &
	PIDS+=($!)
	"$INNS" "$NS_N1" "$N1" slurmd -D -f "$SLURM_CONF" >>"$W/log/slurmd-$N1.out" 2>&1 &
	PIDS+=($!)
	"$INNS" "$NS_N2" "$N2" slurmd -D -f "$SLURM_CONF" >>"$W/log/slurmd-$N2.out" 2>&1 &
	PIDS+=($!)
}
# alive PID: running, not a zombie.
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
stop_slurm() {
	local p i
	timeout 5 "${CTL[@]}" scancel --quiet --partition=debug 2>/dev/null
	for i in 2 1 0; do
		p=${PIDS[$i]}
		kill -TERM "$p" 2>/dev/null
		for _ in $(seq 1 100); do alive "$p" || break; sleep 0.1; done
		alive "$p" && { log "pid $p needed SIGKILL"; kill -KILL "$p"; }
		wait "$p" 2>/dev/null
	done
	PIDS=()
}
start_slurm

# c CMD...: a Slurm client command in the controller's namespace, 30 s at most.
c() { timeout 30 "${CTL[@]}" "$@"; }
SRUN=(timeout 60 "${CTL[@]}" srun --quiet)
node_state() { c sinfo -h -n "$1" -o %T 2>/dev/null; }
node_reason() { c scontrol show node "$1" 2>/dev/null | sed -n 's/^ *Reason=\(.*\) \[[^]]*\]$/\1/p'; }
# wait_for SECONDS CMD...: poll CMD every 0.3 s until it succeeds.
wait_for() {
	local until=$(($(date +%s) + $1))
	shift
	while [ "$(date +%s)" -le "$until" ]; do
		"$@" && return 0
		sleep 0.3
	done
	return 1
}
both_idle() { [ "$(node_state $N1)" = idle ] && [ "$(node_state $N2)" = idle ]; }
daemons_up() {
	local p
	for p in "${PIDS[@]}"; do
		alive "$p" || die "a daemon exited (pid $p): $(tail -n 2 "$W"/log/*.out 2>/dev/null)"
	done
	both_idle
}
wait_for 40 daemons_up || die "nodes not idle after 40 s: $N1 $(node_state $N1), $N2 $(node_state $N2)"
log "two nodes idle: $(c sinfo -h -N -o '%N/%T' | tr '\n' ' ')"

# status_of FILE ID / summary_of FILE ID read a check's status and summary
# from a JSON report (indented; id, status, summary in that order).
status_of() { awk -v id="\"id\": \"$2\"," 'index($0, id) { getline; gsub(/[",]/, ""); print $2; exit }' "$1" 2>/dev/null; }
summary_of() { awk -v id="\"id\": \"$2\"," 'index($0, id) { getline; getline; sub(/^ *"summary": "/, ""); sub(/",$/, ""); print; exit }' "$1" 2>/dev/null; }
CHECK="$GP check --simulate dgx-h100 --format json --checks job"

# --- 1. the allocation: one task per node, Slurm's own variables ---------------
"${SRUN[@]}" -N 2 --ntasks-per-node=1 --output="$W/out/env-%N.txt" sh -c 'echo HOSTNAME=$(hostname); ip -br -4 addr show eth0; env' 2>"$W/out/env.err"
ok=1
for n in "$N1" "$N2"; do
	f=$W/out/env-$n.txt
	grep -qx "HOSTNAME=$n" "$f" && grep -qx "SLURMD_NODENAME=$n" "$f" && grep -qx 'SLURM_JOB_NODELIST=gp2n\[1-2\]' "$f" &&
		grep -qx 'SLURM_NNODES=2' "$f" || ok=0
done
ip1=$(awk '$1 ~ /^eth0(@|$)/ {print $3}' "$W/out/env-$N1.txt" 2>/dev/null)
ip2=$(awk '$1 ~ /^eth0(@|$)/ {print $3}' "$W/out/env-$N2.txt" 2>/dev/null)
if [ "$ok" = 1 ] && [ "$ip1" = "$NET.2/24" ] && [ "$ip2" = "$NET.3/24" ]; then
	pass "srun -N 2: a task on $N1 ($ip1) and one on $N2 ($ip2), $(grep -h -oE '^SLURM_(JOB_NODELIST|NNODES|STEP_NUM_NODES)=.*' "$W/out/env-$N1.txt" | sort | tr '\n' ' ')"
else
	die "srun -N 2 environment not as expected: $(cat "$W"/out/env-*.txt 2>/dev/null | grep -E '^(HOSTNAME|SLURMD_NODENAME|SLURM_JOB_NODELIST|SLURM_NNODES)=|eth0' | tr '\n' ' ') $(head -c 300 "$W/out/env.err")"
fi

# job2 NAME NODES SNIPPET [SRUN-OPTION...]: run gpuprobe's job checks as one
# task per node of an NODES-node job holding all eight GPUs of each node,
# after the shell SNIPPET (which may export variables), into
# $W/out/NAME-<node>.json.
job2() {
	local name=$1 nodes=$2 snippet=$3
	shift 3
	# A one-node job runs on $N1, where expect reads it: left to Slurm, it
	# went to $N2 when $N1 was still completing the job before (seen once
	# under load: an empty status for $N1).
	local pin=()
	[ "$nodes" = 1 ] && pin=(--nodelist="$N1")
	"${SRUN[@]}" -N "$nodes" "${pin[@]}" --ntasks-per-node=1 --gres=gpu:$NGPUS "$@" --output="$W/out/$name-%N.json" \
		bash -c "$snippet"'; exec '"$CHECK" 2>"$W/out/$name.err"
}
# expect NAME ID WANT1 WANT2 [SUBSTR1 [SUBSTR2]]: the check's status on each
# node (WANT2 "-" for a one-node job), and a substring of each summary.
expect() {
	local name=$1 id=$2 w1=$3 w2=$4 sub1=${5:-} sub2=${6:-${5:-}}
	local s1 s2 m1 m2
	[ "$w2" = - ] && sub2=
	s1=$(status_of "$W/out/$name-$N1.json" "$id")
	m1=$(summary_of "$W/out/$name-$N1.json" "$id")
	s2=-
	m2=
	if [ "$w2" != - ]; then
		s2=$(status_of "$W/out/$name-$N2.json" "$id")
		m2=$(summary_of "$W/out/$name-$N2.json" "$id")
	fi
	if [ "$s1" = "$w1" ] && [ "$s2" = "$w2" ] && [[ "$m1" == *"$sub1"* ]] && [[ "$m2" == *"$sub2"* ]]; then
		pass "$name: $id $s1/$s2 ($N1: $m1${m2:+; $N2: $m2})"
	else
		fail "$name: $id '$s1'/'$s2', want $w1/$w2 with '$sub1'/'$sub2' ($N1: $m1; $N2: $m2) $(head -c 300 "$W/out/$name.err")"
	fi
}

# A step that asked for no GPU, without ConstrainDevices: every fake device
# file opens (ENXIO, no driver: not a cgroup's EPERM), so it can use all eight.
job2 nogpu 1 "true" --gres=gpu:0
expect nogpu job.visible_devices warn - "Slurm allocated no GPUs to this step, yet CUDA can use all 8 GPUs"
grep -qF 'mode: no device cgroup: all 8 GPU device files open' "$W/out/nogpu-$N1.json" ||
	fail "nogpu: job.visible_devices does not say it opened all 8 device files: $(grep -o '"mode: [^"]*"' "$W/out/nogpu-$N1.json")"

# --- 2. MASTER_ADDR on a two-node job ------------------------------------------
# As a job script derives it: the first node of SLURM_JOB_NODELIST.
job2 ma-first 2 'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1) MASTER_PORT=29500'
expect ma-first job.master_addr pass pass "MASTER_ADDR=$N1 is the job's first node"
# The same correct launch: each node's step sees its own eight GPUs, one task
# per node of the two (SLURM_STEP_TASKS_PER_NODE=1(x2)).
expect ma-first job.visible_devices pass pass "sees GPU 0-7, as allocated (SLURM_STEP_GPUS=0-7)"
expect ma-first job.gpu_sharing pass pass "1 task(s) on this node (SLURM_STEP_TASKS_PER_NODE=1(x2))"
job2 ma-second 2 "export MASTER_ADDR=$N2"
expect ma-second job.master_addr warn warn "MASTER_ADDR=$N2 is node 2 of the job, not the first ($N1)"
job2 ma-ip 2 "export MASTER_ADDR=$NET.2"
expect ma-ip job.master_addr pass pass "has the address of the job's first node $N1"
# The classic mistake: every task exports its own host name.
job2 ma-hostname 2 'export MASTER_ADDR=$(hostname)'
expect ma-hostname job.master_addr pass warn "MASTER_ADDR=$N1 is the job's first node" "MASTER_ADDR=$N2 is node 2 of the job"
job2 ma-outside 2 "export MASTER_ADDR=gp2n-ctl"
# The first node's own addresses decide: it fails there; the second node
# cannot tell an outside host from another interface of the first node
# (JSC's "<node>i" InfiniBand names), so it says unknown.
expect ma-outside job.master_addr fail skip "MASTER_ADDR=gp2n-ctl ($NET.1) is not a node of this job (gp2n[1-2]), nor an address of its first node" "MASTER_ADDR=gp2n-ctl is not a node name of this job (gp2n[1-2]) and shares no address with its first node"
job2 ma-unresolved 2 "export MASTER_ADDR=gp2n9"
expect ma-unresolved job.master_addr fail fail "MASTER_ADDR=gp2n9 does not resolve"
job2 ma-localhost 2 "export MASTER_ADDR=localhost"
expect ma-localhost job.master_addr fail fail "MASTER_ADDR=localhost is a loopback address"
job2 ma-localhost-1 1 "export MASTER_ADDR=localhost"
expect ma-localhost-1 job.master_addr pass - ""

# --- 3. NCCL variables on two nodes and on one -------------------------------------
job2 ifname-lo 2 "export NCCL_SOCKET_IFNAME=lo"
expect ifname-lo job.nccl_env fail fail "NCCL_SOCKET_IFNAME=lo selects only the loopback interface on a 2-node job"
job2 ifname-lo-1 1 "export NCCL_SOCKET_IFNAME=lo"
expect ifname-lo-1 job.nccl_env pass - "consistent with this node"
job2 ifname-eth0 2 "export NCCL_SOCKET_IFNAME=eth0"
expect ifname-eth0 job.nccl_env pass pass "consistent with this node"
job2 ifname-ib0 2 "export NCCL_SOCKET_IFNAME=ib0"
# No interface selected: NCCL's bootstrap fails ("Bootstrap : no socket
# interface found"), NVIDIA/nccl#1837.
expect ifname-ib0 job.nccl_env fail fail "NCCL_SOCKET_IFNAME=ib0 matches no interface here (have eth0, lo)"
job2 ibdisable 2 "export NCCL_IB_DISABLE=1"
expect ibdisable job.nccl_env warn warn "NCCL_IB_DISABLE=1 on a node with HCAs"
job2 ibdisable-1 1 "export NCCL_IB_DISABLE=1"
expect ibdisable-1 job.nccl_env pass - "consistent with this node"

# --- 4. summarize a labelled two-node srun -------------------------------------------
"${SRUN[@]}" -N 2 --ntasks-per-node=1 --gres=gpu:$NGPUS --label $CHECK 2>/dev/null | "$GP" summarize >"$W/out/summary.txt" 2>&1
rc=$?
# Rows are named "<host> (simulated dgx-h100) [<label>]".
row1="$N1 (simulated dgx-h100) [0]"
row2="$N2 (simulated dgx-h100) [1]"
if [ "$rc" = 0 ] && grep -qF "$row1" "$W/out/summary.txt" && grep -qF "$row2" "$W/out/summary.txt" && grep -q '^2 report(s)' "$W/out/summary.txt"; then
	pass "srun -N 2 --label | gpuprobe summarize: rows $N1 [0] and $N2 [1], exit 0"
else
	fail "srun -N 2 --label | gpuprobe summarize: exit $rc: $(cat "$W/out/summary.txt")"
fi
# A fault on the second node only (each task picks its spec by SLURMD_NODENAME).
"${SRUN[@]}" -N 2 --ntasks-per-node=1 --gres=gpu:$NGPUS --label bash -c \
	'spec=dgx-h100; [ "$SLURMD_NODENAME" = '"$N2"' ] && spec=dgx-h100:row-remap-pending=3; exec '"$GP"' check --simulate "$spec" --format json' 2>/dev/null |
	"$GP" summarize >"$W/out/summary-fault.txt" 2>&1
rc=$?
first=$(sed -n 2p "$W/out/summary-fault.txt")
second=$(sed -n 3p "$W/out/summary-fault.txt")
# gp2n1 may warn (job.cpus_per_gpu: this machine's CPUs against eight GPUs),
# never fail.
if [ "$rc" = 1 ] && [[ "$first" == "$row2"*FAIL* ]] && [[ "$second" =~ ^"$row1"\ +(PASS|WARN) ]] &&
	[ "$(grep -c ': fail ' "$W/out/summary-fault.txt")" = 1 ] && grep -qF "$row2: fail gpu.row_remap: GPU 3" "$W/out/summary-fault.txt"; then
	pass "summarize with a row-remap fault on $N2 only: $N2 first and FAIL, $N1 not failed ($(awk '{print $5}' <<<"$second")), exit 1"
else
	fail "summarize with a fault on $N2: exit $rc: $(cat "$W/out/summary-fault.txt")"
fi

# --- 5. HealthCheckProgram drains one node of two ------------------------------------
hc_runs() {
	local n
	n=$(grep -c 'slurm-drain:' "$W/log/healthcheck-$1.log" 2>/dev/null)
	echo "${n:-0}"
}
ran_on_both() { [ "$(hc_runs $N1)" -ge 1 ] && [ "$(hc_runs $N2)" -ge 1 ]; }
wait_for $((INTERVAL + 15)) ran_on_both || fail "health check did not run on both nodes ($N1: $(hc_runs $N1), $N2: $(hc_runs $N2) runs)"
echo "dgx-h100:row-remap-pending=3" >"$W/hc-simulate-$N2"
drained_n2() { [[ "$(node_state $N2)" == drain* ]] && [[ "$(node_reason $N2)" == gpuprobe:* ]]; }
LIMIT=$((INTERVAL + 6))
t=$(date +%s%N)
if wait_for "$LIMIT" drained_n2; then
	pass "HealthCheckProgram drained $N2 in $((($(date +%s%N) - t) / 1000000)) ms: $(node_state $N2), Reason=$(node_reason $N2)"
else
	fail "$N2 not drained by gpuprobe within ${LIMIT}s: state $(node_state $N2), reason '$(node_reason $N2)'; $(tail -n 3 "$W/log/healthcheck-$N2.log")"
fi
# A further round on both nodes, then look at both.
want1=$(($(hc_runs $N1) + 1))
more_on_n1() { [ "$(hc_runs $N1)" -ge "$want1" ]; }
wait_for $((INTERVAL + 10)) more_on_n1 || fail "health check stopped on $N1"
sinfo_r=$(c sinfo -h -R -o '%n|%E' 2>&1)
show1=$(c scontrol show node $N1 2>&1)
if [ "$(node_state $N1)" = idle ] && [[ "$show1" != *"Reason="* ]] &&
	[ "$(wc -l <<<"$sinfo_r")" = 1 ] && [[ "$sinfo_r" == "$N2|gpuprobe: gpu.row_remap node gpu=3 GPU 3"* ]]; then
	pass "one node of two drained: sinfo -R lists only $N2 ($sinfo_r); $N1 idle, no Reason"
else
	fail "after the fault on $N2: $N1 $(node_state $N1) ($(grep -o 'State=[^ ]*\|Reason=.*' <<<"$show1" | tr '\n' ' ')); sinfo -R: $sinfo_r"
fi
out=$("${SRUN[@]}" -N 1 hostname 2>&1)
if [ "$out" = "$N1" ]; then
	pass "with $N2 drained, srun -N 1 runs on $N1"
else
	fail "with $N2 drained, srun -N 1 hostname: $out"
fi
out=$("${SRUN[@]}" -N 2 --immediate=3 hostname 2>&1)
rc=$?
if [ "$rc" != 0 ]; then
	pass "with $N2 drained, srun -N 2 --immediate is refused (exit $rc: $(head -n 1 <<<"$out"))"
else
	fail "with $N2 drained, srun -N 2 ran: $out"
fi
echo dgx-h100 >"$W/hc-simulate-$N2"
t=$(date +%s%N)
if wait_for "$LIMIT" both_idle; then
	pass "HealthCheckProgram resumed $N2 in $((($(date +%s%N) - t) / 1000000)) ms once its fault was gone; $N1 untouched"
else
	fail "$N2 not resumed within ${LIMIT}s: $(node_state $N2), reason '$(node_reason $N2)'"
fi
for n in "$N1" "$N2"; do
	if grep -q 'hard deadline\|panic' "$W/log/healthcheck-$n.log"; then
		fail "health check log of $n has a panic or a deadline overrun: $(grep -m1 'hard deadline\|panic' "$W/log/healthcheck-$n.log")"
	fi
done
log "health check ran $(hc_runs $N1) times on $N1, $(hc_runs $N2) on $N2"

# --- 5b. Fleet safety: an admin's drain, the circuit breaker, a transient drain ------
# hc_round: wait for one more health check run on both nodes.
hc_round() {
	local w1=$(($(hc_runs $N1) + 1)) w2=$(($(hc_runs $N2) + 1))
	ran() { [ "$(hc_runs $N1)" -ge "$w1" ] && [ "$(hc_runs $N2)" -ge "$w2" ]; }
	wait_for $((INTERVAL * 2 + 15)) ran || fail "health check stopped ($N1: $(hc_runs $N1), $N2: $(hc_runs $N2) runs)"
}
# An admin's drain is never touched: not lifted while the node is healthy,
# not overwritten while it fails.
c scontrol update nodename=$N1 state=drain reason="admin: cable swap (ticket 42)" || fail "scontrol drain $N1 by hand"
hc_round
hc_round
r1=$(node_reason $N1)
echo "dgx-h100:ecc-uncorrectable=5" >"$W/hc-simulate-$N1"
hc_round
hc_round
r2=$(node_reason $N1)
if [ "$r1" = "admin: cable swap (ticket 42)" ] && [ "$r2" = "$r1" ] && [[ "$(node_state $N1)" == drain* ]] &&
	grep -q 'already drained by someone else' "$W/log/healthcheck-$N1.log"; then
	pass "an admin's drain on $N1 is neither lifted while healthy nor overwritten while failing: Reason=$r2"
else
	fail "admin drain on $N1: healthy run left '$r1', failing run left '$r2' ($(node_state $N1))"
fi
echo dgx-h100 >"$W/hc-simulate-$N1"
c scontrol update nodename=$N1 state=resume || fail "scontrol resume $N1 by hand"
wait_for "$LIMIT" both_idle || fail "nodes not idle after the admin drain: $N1 $(node_state $N1), $N2 $(node_state $N2)"

# The breaker at 50% on a two-node cluster (min_cluster_nodes 1): a fault on
# both nodes drains the first and suppresses the second, with the metric set
# and the reason in the log. The faults go in one after the other: two nodes
# whose health checks run at the same instant both see no drain yet (docs/
# slurm.md: HealthCheckNodeState=CYCLE spreads the runs over the interval).
cat >"$W/etc/gpuprobe.yml" <<'YML'
drain:
  breaker:
    max_percent: 50
    min_cluster_nodes: 1
YML
echo "dgx-h100:row-remap-pending=6" >"$W/hc-simulate-$N1"
drained_n1() { [[ "$(node_state $N1)" == drain* ]] && [[ "$(node_reason $N1)" == "gpuprobe: gpu.row_remap node"* ]]; }
wait_for "$LIMIT" drained_n1 || fail "$N1 not drained with the 50% breaker: $(node_state $N1) '$(node_reason $N1)'"
echo "dgx-h100:ecc-uncorrectable=2" >"$W/hc-simulate-$N2"
sup_before=$(grep -c 'drain suppressed by the circuit breaker' "$W/log/healthcheck-$N2.log")
hc_round
hc_round
sup_after=$(grep -c 'drain suppressed by the circuit breaker' "$W/log/healthcheck-$N2.log")
# The health check runs a subset of the checks, which cannot write the
# textfile; one run of every check on $N2, as its health check would run
# with a textfile, sets the metric.
SLURMD_NODENAME=$N2 timeout 60 "$INNS" "$NS_N2" "$N2" "$GP" check --slurm-drain --slurm-conf "$W/etc/slurm.conf" \
	--simulate-file "$W/hc-simulate-$N2" --config "$W/etc/gpuprobe.yml" --drain-history "$W/run/drain-history-$N2.json" \
	--textfile "$W/out/hc-$N2.prom" >"$W/out/breaker-$N2.txt" 2>&1
metric=$(grep '^gpuprobe_drain_suppressed' "$W/out/hc-$N2.prom" 2>/dev/null)
if drained_n1 && [ "$(node_state $N2)" = idle ] && [ "$sup_after" -gt "$sup_before" ] && [[ "$metric" == *" 1" ]]; then
	pass "breaker at 50%: $N1 drained, $N2 failing but kept in service ($((sup_after - sup_before)) suppressed runs; $metric)"
else
	fail "breaker at 50%: $N1 $(node_state $N1) '$(node_reason $N1)', $N2 $(node_state $N2) '$(node_reason $N2)', suppressed $sup_before -> $sup_after, metric '$metric'"
fi
echo dgx-h100 >"$W/hc-simulate-$N1"
echo dgx-h100 >"$W/hc-simulate-$N2"
wait_for "$LIMIT" both_idle || fail "nodes not idle after the breaker case: $N1 $(node_state $N1) '$(node_reason $N1)', $N2 $(node_state $N2)"
echo "# gpuprobe two-node e2e: defaults" >"$W/etc/gpuprobe.yml"

# A transient drain (a leftover process under --strict: gpu.processes is of
# the transient class) is lifted by the first run that no longer finds it.
echo "--strict" >"$W/hc-args-$N2"
echo "dgx-h100:leftover-process=3" >"$W/hc-simulate-$N2"
drained_tr() { [[ "$(node_state $N2)" == drain* ]] && [[ "$(node_reason $N2)" == "gpuprobe: gpu.processes transient gpu=3"* ]]; }
if wait_for "$LIMIT" drained_tr; then
	pass "a transient finding drains $N2 with its class: $(node_reason $N2)"
else
	fail "$N2 not drained as transient: $(node_state $N2) '$(node_reason $N2)'; $(tail -n 2 "$W/log/healthcheck-$N2.log")"
fi
echo dgx-h100 >"$W/hc-simulate-$N2"
t=$(date +%s%N)
if wait_for "$LIMIT" both_idle; then
	pass "the transient drain on $N2 was lifted $((($(date +%s%N) - t) / 1000000)) ms after the process left"
else
	fail "transient drain on $N2 not lifted: $(node_state $N2) '$(node_reason $N2)'"
fi
rm -f "$W/hc-args-$N2"

# Quarantine -> verify -> resume (drain.resume_verify): a node-class drain
# on $N1 (a PCIe link at x8) stays while the health checks pass but verify
# --quick, run by the same health check, finds GPU 1's host link slow (the
# simulated CUDA driver's h2d-slow); it is lifted once verify passes too.
cat >"$W/etc/gpuprobe.yml" <<'YML'
drain:
  resume_verify: true
YML
echo "dgx-h100:pcie-x8=1" >"$W/hc-simulate-$N1"
drained_pcie() { [[ "$(node_state $N1)" == drain* ]] && [[ "$(node_reason $N1)" == "gpuprobe: gpu.pcie_link node gpu=1"* ]]; }
wait_for "$LIMIT" drained_pcie || fail "$N1 not drained for its x8 link: $(node_state $N1) '$(node_reason $N1)'"
echo "dgx-h100:h2d-slow=1" >"$W/hc-simulate-$N1"
gate_before=$(grep -c 'the checks pass but verify does not' "$W/log/healthcheck-$N1.log")
hc_round
hc_round
gate_after=$(grep -c 'the checks pass but verify does not' "$W/log/healthcheck-$N1.log")
if drained_pcie && [ "$gate_after" -gt "$gate_before" ] && grep 'the checks pass but verify does not' "$W/log/healthcheck-$N1.log" | tail -n 1 | grep -q 'verify.h2d'; then
	pass "node-class drain on $N1 kept while verify --quick fails ($((gate_after - gate_before)) runs: $(grep -o 'verify.h2d fail[^"]*' "$W/log/healthcheck-$N1.log" | tail -n 1 | cut -c1-90))"
else
	fail "verify gate on $N1: $(node_state $N1) '$(node_reason $N1)', gate lines $gate_before -> $gate_after; $(tail -n 2 "$W/log/healthcheck-$N1.log")"
fi
echo dgx-h100 >"$W/hc-simulate-$N1"
t=$(date +%s%N)
if wait_for "$LIMIT" both_idle; then
	pass "the node-class drain on $N1 was lifted $((($(date +%s%N) - t) / 1000000)) ms after verify passed too"
else
	fail "$N1 not resumed after verify passed: $(node_state $N1) '$(node_reason $N1)'; $(tail -n 2 "$W/log/healthcheck-$N1.log")"
fi
echo "# gpuprobe two-node e2e: defaults" >"$W/etc/gpuprobe.yml"

# --- 6. ConstrainDevices=yes (task/cgroup): what slurmd sets, what gpuprobe says ---
# Restarted with TaskPlugin=task/cgroup and ConstrainDevices=yes, steps get a
# device cgroup: the fake GPUs not allocated answer open() with EPERM, and
# CUDA_VISIBLE_DEVICES is renumbered from 0 while SLURM_STEP_GPUS keeps the
# node's indexes. The simulated NVML is told which GPUs the task's real
# cgroup lets through (cgroup-gpu=N, from open() on the fake devices inside
# the task, not from Slurm's variables), as the driver would enumerate them.
# Needs the cgroup v1 devices controller; not tried on cgroup v2 (where Slurm
# 22.05 makes its scope through systemd's dbus unless cgroup.conf says
# IgnoreSystemd=yes, and two slurmd on one host may not share it).
if [ ! -d /sys/fs/cgroup/devices ]; then
	log "NOT RUN: ConstrainDevices part: no cgroup v1 devices controller here ($(stat -fc %T /sys/fs/cgroup 2>&1) at /sys/fs/cgroup; see docs/slurm.md)"
	[ "${SLURM_2NODE_CGROUP:-}" = require ] && fail "SLURM_2NODE_CGROUP=require, and there is no /sys/fs/cgroup/devices"
else
	stop_slurm
	log "stopped slurmctld and slurmd for the restart"
	rm_cgroups
	sed -i 's|^ProctrackType=.*|ProctrackType=proctrack/cgroup|; s|^TaskPlugin=.*|TaskPlugin=task/cgroup|' "$SLURM_CONF"
	printf 'CgroupPlugin=cgroup/v1\nConstrainDevices=yes\n' >"$W/etc/cgroup.conf"
	start_slurm
	wait_for 40 daemons_up || die "not idle after the restart with task/cgroup: $N1 $(node_state $N1), $N2 $(node_state $N2)"
	log "restarted with TaskPlugin=task/cgroup, ConstrainDevices=yes: $(c sinfo -h -N -o '%N/%T' | tr '\n' ' ')"
	# cgtask OUT [NAME=VALUE...]: in a task, note Slurm's variables and the
	# fake GPUs the device cgroup lets through into OUT-<node>-<local id>.txt,
	# then run the job checks ($CGCHECKS) on an NVML that enumerates just those.
	cat >"$W/bin/cgtask" <<EOF
#!/bin/sh
out=\$1-\$SLURMD_NODENAME-\$SLURM_LOCALID.txt
shift
allowed=
faults=
for f in $W/dev/\$SLURMD_NODENAME/fakegpu?; do
	err=\$(LC_ALL=C sh -c 'exec 3<"\$1"' sh "\$f" 2>&1)
	case \$err in
	"" | *"No such device"*) allowed=\$allowed\${allowed:+,}\${f##*fakegpu}; faults=\$faults,cgroup-gpu=\${f##*fakegpu} ;;
	esac
done
{ echo "ALLOWED=\$allowed"; env | grep -E '^(CUDA_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL|SLURM_STEP_GPUS|SLURM_JOB_GPUS)='; } >"\$out"
faults=\${faults#,}
exec env "\$@" $GP check --simulate "dgx-h100:\${faults:-cgroup-gpu=none}" --format json --checks "\${CGCHECKS:-job}"
EOF
	chmod 755 "$W/bin/cgtask"
	cgvars() { tr '\n' ' ' <"$W/out/$1-$2-${3:-0}.txt" 2>/dev/null; }
	# Hold GPUs 0-2 of gp2n1: the next step there gets 3,4, and the
	# renumbering shows; gp2n2's step gets 0,1.
	c sbatch --quiet -J gp-hold -w "$N1" -N 1 --gres=gpu:3 -o /dev/null --wrap 'sleep 300' >/dev/null 2>"$W/out/hold.err"
	held() { [ "$(c squeue -h -n gp-hold -t R -o %N)" = "$N1" ]; }
	wait_for 20 held || fail "holding job not running on $N1: $(c squeue -h -n gp-hold -o '%i %T %R') $(cat "$W/out/hold.err")"
	log "GPUs 0-2 of $N1 held by job $(c squeue -h -n gp-hold -o %i)"

	"${SRUN[@]}" -N 2 --ntasks-per-node=1 --gres=gpu:2 --output="$W/out/cg-%N.json" "$W/bin/cgtask" "$W/out/cg" 2>"$W/out/cg.err"
	v1=$(cgvars cg $N1)
	v2=$(cgvars cg $N2)
	if [[ "$v1" == *"ALLOWED=3,4 "* && "$v1" == *"CUDA_VISIBLE_DEVICES=0,1 "* && "$v1" == *"SLURM_STEP_GPUS=3,4 "* &&
		"$v2" == *"ALLOWED=0,1 "* && "$v2" == *"CUDA_VISIBLE_DEVICES=0,1 "* && "$v2" == *"SLURM_STEP_GPUS=0,1 "* ]]; then
		pass "ConstrainDevices, srun -N 2 --gres=gpu:2 with GPUs 0-2 of $N1 held: slurmd renumbers ($N1: $v1; $N2: $v2)"
	else
		fail "ConstrainDevices, srun -N 2 --gres=gpu:2: $N1: $v1; $N2: $v2 $(head -c 300 "$W/out/cg.err")"
	fi
	expect cg job.visible_devices pass pass "sees GPU 0,1, as allocated (SLURM_STEP_GPUS=3,4)" "sees GPU 0,1, as allocated (SLURM_STEP_GPUS=0,1)"
	for n in "$N1" "$N2"; do
		[[ "$(summary_of "$W/out/cg-$n.json" job.visible_devices)" =~ "; device cgroup: $W/dev/$n/fakegpu"[0-9]" is blocked (EPERM)"$ ]] ||
			fail "cg on $n: job.visible_devices did not see the device cgroup: $(summary_of "$W/out/cg-$n.json" job.visible_devices)"
	done
	# The job widens CUDA_VISIBLE_DEVICES beyond what the cgroup lets through.
	"${SRUN[@]}" -N 1 -w "$N1" --gres=gpu:2 --output="$W/out/cgwide-%N.json" "$W/bin/cgtask" "$W/out/cgwide" CUDA_VISIBLE_DEVICES=0,1,2,3 2>"$W/out/cgwide.err"
	expect cgwide job.visible_devices fail - "CUDA_VISIBLE_DEVICES entry 2"
	# A step with no GPU: the cgroup lets none through; nothing to warn about.
	"${SRUN[@]}" -N 1 -w "$N1" --output="$W/out/cgnone-%N.json" "$W/bin/cgtask" "$W/out/cgnone" 2>"$W/out/cgnone.err"
	st=$(status_of "$W/out/cgnone-$N1.json" job.visible_devices)
	if [[ "$(cgvars cgnone $N1)" == "ALLOWED= "* ]] && { [ "$st" = pass ] || [ "$st" = skip ]; }; then
		pass "ConstrainDevices, a step with no GPU: the cgroup lets no fake GPU through, job.visible_devices $st ($(summary_of "$W/out/cgnone-$N1.json" job.visible_devices))"
	else
		fail "ConstrainDevices, a step with no GPU: $(cgvars cgnone $N1); job.visible_devices '$st' ($(summary_of "$W/out/cgnone-$N1.json" job.visible_devices)) $(head -c 300 "$W/out/cgnone.err")"
	fi
	c scancel --quiet -n gp-hold
fi

# --- 7. --gpu-bind=closest across two declared sockets ---------------------------
# Each node declared as two sockets of one core (SlurmdParameters=
# config_overrides: the machine's own layout differs), gres.conf putting GPUs
# 0-3 on core 0 and 4-7 on core 1, task/affinity binding each task to a core.
# Two tasks per node with --gpu-bind=closest: each gets the four GPUs of its
# socket. Only job.visible_devices and job.gpu_sharing are judged: the task's
# real CPU against the simulated node's NUMA layout would mean nothing.
if [ ! -d /sys/fs/cgroup/devices ] || [ "$NCPU" -lt 2 ]; then
	log "NOT RUN: --gpu-bind=closest part: needs the cgroup v1 devices controller and two CPUs (have $NCPU)"
else
	stop_slurm
	rm_cgroups
	sed -i 's|^TaskPlugin=.*|TaskPlugin=task/affinity,task/cgroup|; s|CPUs=[0-9]* Boards=1 SocketsPerBoard=1 CoresPerSocket=[0-9]*|CPUs=2 Boards=1 SocketsPerBoard=2 CoresPerSocket=1|' "$SLURM_CONF"
	echo "SlurmdParameters=config_overrides" >>"$SLURM_CONF"
	for n in "$N1" "$N2"; do
		echo "NodeName=$n Name=gpu File=$W/dev/$n/fakegpu[0-3] Cores=0"
		echo "NodeName=$n Name=gpu File=$W/dev/$n/fakegpu[4-7] Cores=1"
	done >"$W/etc/gres.conf"
	start_slurm
	wait_for 40 daemons_up || die "not idle after the restart with two sockets: $N1 $(node_state $N1), $N2 $(node_state $N2)"
	log "restarted with two sockets per node, gres.conf Cores=, task/affinity,task/cgroup"
	export CGCHECKS=job.visible_devices,job.gpu_sharing
	# closest NAME: two tasks per node, --gpu-bind=closest; then, per node,
	# local task 0 must hold GPUs 0-3 and local task 1 GPUs 4-7 (by its
	# cgroup or, unconstrained, by CUDA_VISIBLE_DEVICES), and both pass.
	closest() {
		local name=$1 n t v ok=1 all=""
		"${SRUN[@]}" -N 2 --ntasks-per-node=2 --gres=gpu:$NGPUS --gpu-bind=closest --cpu-bind=cores \
			--output="$W/out/$name-%N-%t.json" "$W/bin/cgtask" "$W/out/$name" 2>"$W/out/$name.err"
		for n in "$N1" "$N2"; do
			for t in 0 1; do
				v=$(cgvars "$name" "$n" "$t")
				all="$all $n/$t: $v;"
				case $2/$t in
				constrained/0) [[ "$v" == *"ALLOWED=0,1,2,3 "*"CUDA_VISIBLE_DEVICES=0,1,2,3 "* ]] || ok=0 ;;
				constrained/1) [[ "$v" == *"ALLOWED=4,5,6,7 "*"CUDA_VISIBLE_DEVICES=0,1,2,3 "* ]] || ok=0 ;;
				global/0) [[ "$v" == *"CUDA_VISIBLE_DEVICES=0,1,2,3 "*"SLURM_STEP_GPUS=0,1,2,3 "* ]] || ok=0 ;;
				global/1) [[ "$v" == *"CUDA_VISIBLE_DEVICES=4,5,6,7 "*"SLURM_STEP_GPUS=4,5,6,7 "* ]] || ok=0 ;;
				esac
			done
		done
		if [ "$ok" = 1 ]; then
			pass "$name: --gpu-bind=closest, 2 tasks on each of 2 nodes, each its socket's four GPUs:$all"
		else
			fail "$name: --gpu-bind=closest:$all $(head -c 300 "$W/out/$name.err")"
		fi
		local f st1 st2 bad=""
		for f in "$W/out/$name"-*.json; do
			st1=$(status_of "$f" job.visible_devices)
			st2=$(status_of "$f" job.gpu_sharing)
			[ "$st1" = pass ] && [ "$st2" = pass ] || bad="$bad ${f##*/}: visible_devices $st1 ($(summary_of "$f" job.visible_devices)), gpu_sharing $st2 ($(summary_of "$f" job.gpu_sharing));"
		done
		if [ -z "$bad" ] && [ "$(ls "$W/out/$name"-*.json | wc -l)" = 4 ]; then
			pass "$name: job.visible_devices and job.gpu_sharing pass on all 4 tasks ($(summary_of "$W/out/$name-$N2-3.json" job.visible_devices); $(summary_of "$W/out/$name-$N2-3.json" job.gpu_sharing))"
		else
			fail "$name: $bad"
		fi
	}
	# With ConstrainDevices each task's cgroup holds its four GPUs, renumbered
	# 0-3; slurmd 22.05 then sets SLURM_STEP_GPUS to the renumbered list too
	# (0,1,2,3 on the task that holds GPUs 4-7).
	closest closest-cg constrained
	# Without it the indexes are the node's.
	printf 'CgroupPlugin=cgroup/v1\nConstrainDevices=no\n' >"$W/etc/cgroup.conf"
	c scontrol reconfigure || fail "scontrol reconfigure"
	sleep 2
	closest closest-global global
	unset CGCHECKS
fi
