#!/bin/bash
# Third capture: verify fixes on the real driver; RSS with and without the CUDA-version call; raw T.Limit fields.
set -u
D=$(cd "$(dirname "$0")" && pwd); GP=$D/gpuprobe
O=${OUT:-/tmp/out}/real3; mkdir -p "$O"; cd "$O"
t() { local n=$1; shift; timeout 60 "$@" >"$n" 2>&1; echo "rc=$?" >> "$n.rc"; }
date -u > date.txt; nvidia-smi -L >> date.txt 2>&1
t nvprobe.txt $D/nvprobe
t nvsmi-q.txt nvidia-smi -q
t nvsmi-q.xml nvidia-smi -q -x
t nvsmi-topo.txt nvidia-smi topo -m
t snap.txt $GP snapshot -o "$O/snap.json"
t check-v.txt $GP check --color=never -v
t topo.txt $GP topo
t version.txt $GP --version
# serve RSS: as built vs without nvmlSystemGetCudaDriverVersion (which loads libcuda)
$GP serve --web.listen-address=127.0.0.1:19497 --collect.interval=5s > serve-a.log 2>&1 & A=$!
$D/gpuprobe-nocuda serve --web.listen-address=127.0.0.1:19498 --collect.interval=5s > serve-b.log 2>&1 & B=$!
sleep 30
for p in 19497 19498; do curl -s -m 10 127.0.0.1:$p/metrics > metrics-$p.txt; done
sleep 2
for x in "asbuilt $A" "nocuda $B"; do set -- $x
  { echo "== $1"; grep -E 'VmRSS|VmHWM|Threads|RssAnon|RssFile' /proc/$2/status
    awk '/^[0-9a-f]+-[0-9a-f]+ /{name=($6==""?"[anon]":$6)} /^Rss:/{rss[name]+=$2} END{for(n in rss) print rss[n], n}' /proc/$2/smaps | sort -rn | head -8; } >> serve-rss.txt
done
kill $A $B; wait $A $B 2>/dev/null
for i in 1 2 3 4 5; do a=$(date +%s%N); $GP check >/dev/null 2>&1; b=$(date +%s%N); nvidia-smi -q >/dev/null 2>&1; c=$(date +%s%N); echo "check_ms=$(( (b-a)/1000000 )) nvsmi_ms=$(( (c-b)/1000000 ))" >> timing.txt; done
# CPU-starved loader under gpuprobe job (new one-process rule)
CG=/sys/fs/cgroup/system.slice/slurmstepd.scope/job_3/step_0; mkdir -p $CG
SECS=30 python3 $D/cpustarve.py > train-cpustarve.txt 2>&1 & TP=$!
echo $TP > $CG/cgroup.procs; sleep 12
ps -eLo pid,tid,ppid,psr,pcpu,comm --sort=-pcpu | head -12 > cpustarve-ps.txt
{ timeout 40 $GP job --job 3 --gpus 0 --duration 10s --color=never -v; echo rc=$?; } > gp-job-cpustarve.txt 2>&1
wait $TP
cd .. && tar czf real3.tgz real3 && rm -rf real3; ls -la
