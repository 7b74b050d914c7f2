#!/bin/bash
# Second capture: verdicts on a busy GPU, a CPU-starved loader, a running process.
set -u
D=$(cd "$(dirname "$0")" && pwd); GP=$D/gpuprobe
O=${OUT:-/tmp/out}/real2; mkdir -p "$O"; cd "$O"
t() { local n=$1; shift; timeout 60 "$@" >"$n" 2>&1; echo "rc=$?" > "$n.rc"; }
CG=/sys/fs/cgroup/system.slice/slurmstepd.scope/job_2/step_0; mkdir -p $CG
cat /sys/fs/cgroup/system.slice/cgroup.subtree_control > cg-subtree.txt 2>&1
# busy GPU: healthy training loop
STARVE=0 SECS=70 python3 $D/train.py > train-busy.txt 2>&1 & TP=$!
echo $TP > $CG/cgroup.procs
sleep 15
t busy-nvsmi-q.txt nvidia-smi -q
t busy-nvsmi-q.xml nvidia-smi -q -x
t busy-snap.txt $GP snapshot -o "$O/busy-snap.json"
t busy-check-v.txt $GP check --color=never -v
t busy-check.json $GP check --format json
t busy-check-expect-idle.txt $GP check --color=never --expect-idle --checks gpu.processes
t busy-nvsmi-perf.txt nvidia-smi -q -d PERFORMANCE,CLOCK,POWER
$GP serve --web.listen-address=127.0.0.1:19496 --collect.interval=5s > serve.log 2>&1 & SP=$!
sleep 32
curl -s -m 10 127.0.0.1:19496/metrics > busy-metrics.txt; curl -s -m 10 127.0.0.1:19496/report > busy-report.json
grep -E 'VmRSS|VmHWM|Threads|RssAnon|RssFile|RssShmem' /proc/$SP/status > serve-status.txt
awk '/^[0-9a-f]+-[0-9a-f]+ /{name=($6==""?"[anon]":$6)} /^Rss:/{rss[name]+=$2} END{for(n in rss) print rss[n], n}' /proc/$SP/smaps | sort -rn | head -15 > serve-smaps-top.txt
for i in 1 2 3 4 5; do a=$(date +%s%N); $GP check >/dev/null 2>&1; b=$(date +%s%N); nvidia-smi -q >/dev/null 2>&1; c=$(date +%s%N); echo "busy check_ms=$(( (b-a)/1000000 )) nvsmi_ms=$(( (c-b)/1000000 ))" >> timing.txt; done
wait $TP
sleep 6; curl -s -m 10 127.0.0.1:19496/report > after-busy-report.json; curl -s -m 10 127.0.0.1:19496/metrics > after-busy-metrics.txt
kill $SP; wait $SP 2>/dev/null
t idle-after-check-v.txt $GP check --color=never -v
# CPU-starved data loader under gpuprobe job
SECS=35 python3 $D/cpustarve.py > train-cpustarve.txt 2>&1 & TP=$!
echo $TP > $CG/cgroup.procs; sleep 12
ps -eLo pid,ppid,psr,pcpu,comm --sort=-pcpu | head -12 > cpustarve-ps.txt
{ timeout 40 $GP job --job 2 --gpus 0 --duration 10s --color=never -v; echo rc=$?; } > gp-job-cpustarve.txt 2>&1
{ timeout 40 $GP job --job 2 --gpus 0 --duration 5s --format json; echo rc=$?; } > gp-job-cpustarve.json 2>&1
wait $TP
cd .. && tar czf real2.tgz real2 && rm -rf real2; ls -la
