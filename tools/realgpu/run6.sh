#!/bin/bash
# Smoke on the real driver with the merged binary: the texts fixed after the H200 capture.
set -u
D=$(cd "$(dirname "$0")" && pwd); GP=$D/gpuprobe
O=${OUT:-/tmp/out}/real6; mkdir -p "$O"; cd "$O"
t() { local n=$1; shift; timeout 60 "$@" >"$n" 2>&1; echo "rc=$?" >> "$n"; }
{ nvidia-smi -L; date -u; } > date.txt 2>&1
t version.txt $GP --version
t check-v.txt $GP check --color=never -v
t check.json $GP check --format json
t check-user.txt setpriv --reuid=65534 --regid=65534 --clear-groups $GP check --color=never
t snap.txt $GP snapshot -o "$O/snap.json"
# job whose cgroup has no memory controller (the capture's case)
CG=/sys/fs/cgroup/system.slice/slurmstepd.scope/job_6/step_0; mkdir -p $CG
SECS=16 python3 $D/cpustarve.py > train.txt 2>&1 & TP=$!
echo $TP > $CG/cgroup.procs; sleep 8
{ timeout 30 $GP job --job 6 --gpus 0 --duration 5s --color=never; echo rc=$?; } > job.txt 2>&1
{ timeout 30 $GP job --job 6 --gpus 0 --duration 3s --format json; echo rc=$?; } > job.json 2>&1
wait $TP
# NCCL on this GPU, analyzed by the merged analyzer
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout 60 python3 $D/nccl1.py > nccl.log 2>&1
t nccl.txt $GP nccl analyze nccl.log
cd .. && tar czf real6.tgz real6 && rm -rf real6; ls -la
