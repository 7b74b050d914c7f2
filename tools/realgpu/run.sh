#!/bin/bash
# One scripted capture on a real GPU (../shared/REAL-GPU.md). Everything bounded by timeout.
set -u
D=$(cd "$(dirname "$0")" && pwd); GP=$D/gpuprobe
O=${OUT:-/tmp/out}/real; mkdir -p "$O"; cd "$O"
t() { local n=$1; shift; { echo "\$ $*"; timeout 60 "$@"; echo "rc=$?"; } >"$n" 2>&1; }
date -u > date.txt; uname -a >> date.txt; cat /etc/os-release >> date.txt 2>&1; id >> date.txt
t nvsmi-q.txt nvidia-smi -q
t nvsmi-q.xml nvidia-smi -q -x
t nvsmi-topo.txt nvidia-smi topo -m
t nvsmi-nvlink-s.txt nvidia-smi nvlink -s
t nvsmi-nvlink-status.txt nvidia-smi nvlink --status
t nvsmi-nvlink-e.txt nvidia-smi nvlink -e
t nvsmi-q-d.txt nvidia-smi -q -d PERFORMANCE,CLOCK,ECC,PAGE_RETIREMENT,ROW_REMAPPER,POWER,TEMPERATURE,MEMORY,PIDS
t nvsmi-fabric.txt nvidia-smi -q -d FABRIC
t nvsmi-L.txt nvidia-smi -L
t nvsmi.txt nvidia-smi
t driver-version.txt cat /proc/driver/nvidia/version
t dmesg.txt sh -c "dmesg | grep -iE 'nvrm|xid|nvidia'"
t dmesg-all.txt sh -c "dmesg | tail -400"
t dmesg-restrict.txt sh -c "sysctl kernel.dmesg_restrict; setpriv --reuid=65534 --regid=65534 --clear-groups dmesg | head -3; echo user-rc=\$?"
t lspci.txt lspci -vvv -d 10de:
t lspci-tree.txt lspci -tv
t lspci-nn.txt lspci -nn
t sys-pci.txt ls -l /sys/bus/pci/devices/
t cpuflags.txt sh -c "grep -m1 '^flags' /proc/cpuinfo; lscpu; numactl -H 2>&1; cat /sys/devices/system/node/online"
t mods.txt sh -c "lsmod | grep -iE 'nvidia|ib_|mlx|peer'; ls /sys/class/infiniband 2>&1; cat /sys/module/nvidia/parameters/* 2>/dev/null | head -50"
t cgroups.txt sh -c "cat /proc/self/cgroup; grep cgroup /proc/self/mountinfo; ls /sys/fs/cgroup | head -50"
# sysfs attributes of every NVIDIA function and its bridges
for dev in /sys/bus/pci/devices/*; do
  [ "$(cat $dev/vendor 2>/dev/null)" = 0x10de ] || continue
  b=$(basename $dev); real=$(readlink -f $dev); echo "$b -> $real" >> sysfs-gpu.txt
  p=$real; while [ "$p" != / ] && [ "$p" != /sys/devices ]; do
    for a in vendor device class subsystem_vendor subsystem_device current_link_speed current_link_width max_link_speed max_link_width numa_node local_cpulist local_cpus enable power_state d3cold_allowed aer_dev_correctable aer_dev_fatal aer_dev_nonfatal revision; do
      [ -r "$p/$a" ] && echo "$p/$a: $(timeout 2 cat $p/$a 2>&1 | tr '\n' '|')" >> sysfs-gpu.txt; done
    p=$(dirname $p); done
done
# gpuprobe's own view
t gp-version.txt $GP --version
t gp-snapshot.txt $GP snapshot -o "$O/snap.json"
t gp-check.txt $GP check --color=never
t gp-check-v.txt $GP check --color=never -v
t gp-check.json $GP check --format json
t gp-topo.txt $GP topo
t gp-checks-list.txt $GP checks
t gp-check-user.txt setpriv --reuid=65534 --regid=65534 --clear-groups $GP check --color=never -v
t gp-nvsmi-import.txt $GP snapshot --from-nvidia-smi "$O/nvsmi-q.xml" -o "$O/snap-from-nvsmi.json"
# serve for 60 s
$GP serve --web.listen-address=127.0.0.1:19495 > serve.log 2>&1 & SP=$!
sleep 50
curl -s -m 10 127.0.0.1:19495/metrics > metrics.txt; curl -s -m 10 127.0.0.1:19495/report > report.json
curl -s -m 10 127.0.0.1:19495/ > landing.html
grep -E 'VmRSS|VmHWM|Threads|RssAnon|RssFile' /proc/$SP/status > serve-status.txt
sleep 10; curl -s -m 10 127.0.0.1:19495/metrics > metrics2.txt; grep -E 'VmRSS|VmHWM|Threads' /proc/$SP/status >> serve-status.txt
kill $SP; wait $SP 2>/dev/null
# timing: gpuprobe check vs nvidia-smi -q, interleaved
for i in 1 2 3 4 5 6 7 8 9 10; do
  a=$(date +%s%N); $GP check >/dev/null 2>&1; b=$(date +%s%N); nvidia-smi -q >/dev/null 2>&1; c=$(date +%s%N)
  echo "check_ms=$(( (b-a)/1000000 )) nvsmi_ms=$(( (c-b)/1000000 ))" >> timing.txt
done
# NCCL logs
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
timeout 90 python3 $D/nccl1.py > nccl-1proc.log 2>&1; echo rc=$? >> nccl-1proc.log
( RANK=0 WORLD_SIZE=2 MASTER_PORT=29512 timeout 60 python3 $D/nccl1.py > nccl-dup-r0.log 2>&1; echo rc=$? >> nccl-dup-r0.log ) &
( RANK=1 WORLD_SIZE=2 MASTER_PORT=29512 timeout 60 python3 $D/nccl1.py > nccl-dup-r1.log 2>&1; echo rc=$? >> nccl-dup-r1.log ) & wait
NCCL_DEBUG=INFO timeout 90 python3 $D/nccl1.py > nccl-1proc-all.log 2>&1
unset NCCL_DEBUG NCCL_DEBUG_SUBSYS
t gp-nccl-1proc.txt $GP nccl analyze nccl-1proc.log
t gp-nccl-1proc.json $GP nccl analyze --format json nccl-1proc.log
t gp-nccl-dup.txt $GP nccl analyze nccl-dup-r0.log nccl-dup-r1.log
t gp-nccl-dup.json $GP nccl analyze --format json nccl-dup-r0.log nccl-dup-r1.log
# gpuprobe job on a real cgroup v2 job_1 (healthy, then starved loader)
CG=/sys/fs/cgroup/system.slice/slurmstepd.scope/job_1/step_0
mkdir -p $CG 2>cg-err.txt
for mode in healthy starve; do
  S=0; [ $mode = starve ] && S=1
  STARVE=$S SECS=30 python3 $D/train.py > train-$mode.txt 2>&1 & TP=$!
  echo $TP > $CG/cgroup.procs 2>>cg-err.txt
  sleep 12
  { timeout 40 $GP job --job 1 --gpus 0 --duration 10s --color=never; echo rc=$?; } > gp-job-$mode.txt 2>&1
  { timeout 40 $GP job --job 1 --gpus 0 --duration 5s --format json; echo rc=$?; } > gp-job-$mode.json 2>&1
  wait $TP
done
dmesg | grep -iE 'nvrm|xid' > dmesg-after.txt 2>&1
t gp-check-after.txt $GP check --color=never -v
cd .. && ls -la real > real-files.txt && tar czf real.tgz real && rm -rf real; ls -la
