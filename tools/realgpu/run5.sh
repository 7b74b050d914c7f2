#!/bin/bash
# Capture on a real H200 (../shared/REAL-GPU.md): the driver's view, gpuprobe's view idle and busy,
# serve RSS under collections, timing, NCCL logs, a CPU-starved loader. Everything bounded.
set -u
D=$(cd "$(dirname "$0")" && pwd); GP=$D/gpuprobe
O=${OUT:-/tmp/out}/h200; mkdir -p "$O"; cd "$O"
t() { local n=$1; shift; { echo "\$ $*"; timeout 60 "$@"; echo "rc=$?"; } >"$n" 2>&1; }
date -u > date.txt; uname -a >> date.txt; cat /etc/os-release >> date.txt 2>&1; id >> date.txt; nproc >> date.txt
# serve runs during the whole capture (collections every 3 s)
$GP serve --web.listen-address=127.0.0.1:19495 --collect.interval=3s > serve.log 2>&1 & SP=$!
t nvsmi-q.txt nvidia-smi -q
t nvsmi-q.xml nvidia-smi -q -x
t nvsmi-topo.txt nvidia-smi topo -m
t nvsmi-nvlink-s.txt nvidia-smi nvlink -s
t nvsmi-nvlink-e.txt nvidia-smi nvlink -e
t nvsmi-q-d.txt nvidia-smi -q -d PERFORMANCE,CLOCK,ECC,PAGE_RETIREMENT,ROW_REMAPPER,POWER,TEMPERATURE,MEMORY,PIDS
t nvsmi-fabric.txt nvidia-smi -q -d FABRIC
t nvsmi-L.txt nvidia-smi -L
t nvsmi.txt nvidia-smi
t driver-version.txt cat /proc/driver/nvidia/version
t dmesg.txt sh -c "dmesg | grep -iE 'nvrm|xid|nvidia'"
t dmesg-restrict.txt sh -c "sysctl kernel.dmesg_restrict; setpriv --reuid=65534 --regid=65534 --clear-groups dmesg | head -3; echo user-rc=\$?"
t lspci.txt lspci -vvv -d 10de:
t lspci-nn.txt lspci -nn
t sys-pci.txt ls -l /sys/bus/pci/devices/
t cpuflags.txt sh -c "grep -m1 '^flags' /proc/cpuinfo; lscpu; cat /sys/devices/system/node/online"
t mods.txt sh -c "lsmod | grep -iE 'nvidia|ib_|mlx|peer'; ls /sys/class/infiniband 2>&1; grep -H . /sys/module/nvidia/parameters/* 2>/dev/null | head -60"
for dev in /sys/bus/pci/devices/*; do
  [ "$(cat $dev/vendor 2>/dev/null)" = 0x10de ] || continue
  b=$(basename $dev); real=$(readlink -f $dev); echo "$b -> $real" >> sysfs-gpu.txt
  p=$real; while [ "$p" != / ] && [ "$p" != /sys/devices ]; do
    for a in vendor device class subsystem_vendor subsystem_device current_link_speed current_link_width max_link_speed max_link_width numa_node local_cpulist enable power_state aer_dev_correctable aer_dev_fatal aer_dev_nonfatal revision; do
      [ -r "$p/$a" ] && echo "$p/$a: $(timeout 2 cat $p/$a 2>&1 | tr '\n' '|')" >> sysfs-gpu.txt; done
    p=$(dirname $p); done
done
t gp-version.txt $GP --version
t gp-snapshot.txt $GP snapshot -o "$O/snap-idle.json"
t gp-check-v.txt $GP check --color=never -v
t gp-check.json $GP check --format json
t gp-topo.txt $GP topo
t gp-check-user.txt setpriv --reuid=65534 --regid=65534 --clear-groups $GP check --color=never -v
t gp-nvsmi-import.txt $GP snapshot --from-nvidia-smi "$O/nvsmi-q.xml" -o "$O/snap-from-nvsmi.json"
for i in 1 2 3 4 5 6 7 8 9 10; do
  a=$(date +%s%N); $GP check >/dev/null 2>&1; b=$(date +%s%N); nvidia-smi -q >/dev/null 2>&1; c=$(date +%s%N)
  echo "idle check_ms=$(( (b-a)/1000000 )) nvsmi_ms=$(( (c-b)/1000000 ))" >> timing.txt
done
# busy GPU
SECS=35 python3 $D/busy.py > busy.txt 2>&1 & TP=$!
sleep 12
t busy-nvsmi-q.txt nvidia-smi -q
t busy-nvsmi-q.xml nvidia-smi -q -x
t busy-snap.txt $GP snapshot -o "$O/snap-busy.json"
t busy-check-v.txt $GP check --color=never -v
t busy-check.json $GP check --format json
for i in 1 2 3 4 5; do a=$(date +%s%N); $GP check >/dev/null 2>&1; b=$(date +%s%N); nvidia-smi -q >/dev/null 2>&1; c=$(date +%s%N); echo "busy check_ms=$(( (b-a)/1000000 )) nvsmi_ms=$(( (c-b)/1000000 ))" >> timing.txt; done
curl -s -m 10 127.0.0.1:19495/metrics > busy-metrics.txt
wait $TP
# serve's footprint after ~2 min of collections and a busy phase
curl -s -m 10 127.0.0.1:19495/metrics > metrics.txt; curl -s -m 10 127.0.0.1:19495/report > report.json
{ grep -E 'VmRSS|VmHWM|RssAnon|RssFile|RssShmem|Threads' /proc/$SP/status
  awk '/^[0-9a-f]+-[0-9a-f]+ /{name=($6==""?"[anon]":$6)} /^Rss:/{rss[name]+=$2} END{for(n in rss) print rss[n], n}' /proc/$SP/smaps | sort -rn | head -12; } > serve-status.txt
kill $SP; wait $SP 2>/dev/null
# NCCL logs
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
timeout 90 python3 $D/nccl1.py > nccl-1proc.log 2>&1; echo rc=$? >> nccl-1proc.log
( RANK=0 WORLD_SIZE=2 MASTER_PORT=29512 timeout 60 python3 $D/nccl1.py > nccl-dup-r0.log 2>&1; echo rc=$? >> nccl-dup-r0.log ) &
( RANK=1 WORLD_SIZE=2 MASTER_PORT=29512 timeout 60 python3 $D/nccl1.py > nccl-dup-r1.log 2>&1; echo rc=$? >> nccl-dup-r1.log ) & wait
unset NCCL_DEBUG NCCL_DEBUG_SUBSYS
t gp-nccl-1proc.txt $GP nccl analyze nccl-1proc.log
t gp-nccl-1proc.json $GP nccl analyze --format json nccl-1proc.log
t gp-nccl-dup.txt $GP nccl analyze nccl-dup-r0.log nccl-dup-r1.log
# CPU-starved loader under gpuprobe job
CG=/sys/fs/cgroup/system.slice/slurmstepd.scope/job_5/step_0; mkdir -p $CG 2>cg-err.txt
SECS=24 python3 $D/cpustarve.py > train-cpustarve.txt 2>&1 & TP=$!
echo $TP > $CG/cgroup.procs 2>>cg-err.txt; sleep 11
{ timeout 30 $GP job --job 5 --gpus 0 --duration 8s --color=never -v; echo rc=$?; } > gp-job-cpustarve.txt 2>&1
wait $TP
dmesg | grep -iE 'nvrm|xid' > dmesg-after.txt 2>&1
cd .. && ls -la h200 > h200-files.txt && tar czf h200.tgz h200 && rm -rf h200; ls -la
