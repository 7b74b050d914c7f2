#!/bin/bash
# Captures on a real GPU (../shared/REAL-GPU.md), one named step at a time:
#   realgpu.sh capture | train-starved | nccl | bench | verify | hang | all
# Each step writes under $OUT/<step>/ and packs it into $OUT/<step>.tgz.
# Everything is bounded by timeout. Run beside a CGO_ENABLED=1 build of
# gpuprobe (./gpuprobe); see README.md for what each step captures and why.
set -u
D=$(cd "$(dirname "$0")" && pwd)
GP=$D/gpuprobe
OUTDIR=${OUT:-/tmp/out}
PORT=19495

# t FILE CMD...: the command, its output and its exit status in FILE.
t() { local n=$1; shift; { echo "\$ $*"; timeout 60 "$@"; echo "rc=$?"; } >"$n" 2>&1; }

# timing LABEL N: gpuprobe check against nvidia-smi -q, interleaved, N times.
timing() {
  local i a b c
  for ((i = 0; i < $2; i++)); do
    a=$(date +%s%N); "$GP" check >/dev/null 2>&1; b=$(date +%s%N); nvidia-smi -q >/dev/null 2>&1; c=$(date +%s%N)
    echo "$1 check_ms=$(((b - a) / 1000000)) nvsmi_ms=$(((c - b) / 1000000))" >>timing.txt
  done
}

# rss PID: a process's memory and its largest mappings by resident size.
rss() {
  grep -E 'VmRSS|VmHWM|RssAnon|RssFile|RssShmem|Threads' "/proc/$1/status"
  awk '/^[0-9a-f]+-[0-9a-f]+ /{name=($6==""?"[anon]":$6)} /^Rss:/{rss[name]+=$2} END{for(n in rss) print rss[n], n}' "/proc/$1/smaps" | sort -rn | head -12
}

# jobcg N: a cgroup v2 directory shaped like slurmstepd's job N, step 0.
jobcg() {
  local cg=/sys/fs/cgroup/system.slice/slurmstepd.scope/job_$1/step_0
  mkdir -p "$cg" 2>>cg-err.txt
  echo "$cg"
}

begin() { O=$OUTDIR/$1; mkdir -p "$O"; cd "$O" || exit 1
  { date -u; uname -a; cat /etc/os-release; id; nproc; nvidia-smi -L; } >date.txt 2>&1; }
finish() { cd "$OUTDIR" && ls -la "$1" >"$1-files.txt" && tar czf "$1.tgz" "$1" && rm -rf "$1"; }

# capture: the driver's own view, gpuprobe's view idle and busy, the
# daemon's footprint and gpuprobe check's time against nvidia-smi -q.
step_capture() {
  begin capture
  "$GP" serve --web.listen-address=127.0.0.1:$PORT --collect.interval=3s >serve.log 2>&1 &
  local sp=$!
  t nvsmi-q.txt nvidia-smi -q
  t nvsmi-q.xml nvidia-smi -q -x
  t nvsmi-topo.txt nvidia-smi topo -m
  t nvsmi-nvlink-s.txt nvidia-smi nvlink -s
  t nvsmi-nvlink-status.txt nvidia-smi nvlink --status
  t nvsmi-nvlink-e.txt nvidia-smi nvlink -e
  t nvsmi-q-d.txt nvidia-smi -q -d PERFORMANCE,CLOCK,ECC,PAGE_RETIREMENT,ROW_REMAPPER,POWER,TEMPERATURE,MEMORY,PIDS
  t nvsmi-fabric.txt nvidia-smi -q -d FABRIC
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
  t mods.txt sh -c "lsmod | grep -iE 'nvidia|ib_|mlx|peer'; ls /sys/class/infiniband 2>&1; grep -H . /sys/module/nvidia/parameters/* 2>/dev/null | head -60"
  t cgroups.txt sh -c "cat /proc/self/cgroup; grep cgroup /proc/self/mountinfo; ls /sys/fs/cgroup | head -50; cat /sys/fs/cgroup/system.slice/cgroup.subtree_control"
  # sysfs attributes of every NVIDIA function and the bridges above it
  local dev p a
  for dev in /sys/bus/pci/devices/*; do
    [ "$(cat "$dev/vendor" 2>/dev/null)" = 0x10de ] || continue
    p=$(readlink -f "$dev"); echo "$(basename "$dev") -> $p" >>sysfs-gpu.txt
    while [ "$p" != / ] && [ "$p" != /sys/devices ]; do
      for a in vendor device class subsystem_vendor subsystem_device current_link_speed current_link_width max_link_speed max_link_width numa_node local_cpulist local_cpus enable power_state d3cold_allowed aer_dev_correctable aer_dev_fatal aer_dev_nonfatal revision; do
        [ -r "$p/$a" ] && echo "$p/$a: $(timeout 2 cat "$p/$a" 2>&1 | tr '\n' '|')" >>sysfs-gpu.txt
      done
      p=$(dirname "$p")
    done
  done
  # raw NVML field values behind T.Limit (nvprobe/, if built there)
  [ -x "$D/nvprobe/nvprobe" ] && t nvprobe.txt "$D/nvprobe/nvprobe"
  t gp-version.txt "$GP" --version
  t gp-snapshot.txt "$GP" snapshot -o "$O/snap-idle.json"
  t gp-check-v.txt "$GP" check --color=never -v
  t gp-check.json "$GP" check --format json
  t gp-topo.txt "$GP" topo
  t gp-checks-list.txt "$GP" checks
  t gp-check-user.txt setpriv --reuid=65534 --regid=65534 --clear-groups "$GP" check --color=never -v
  t gp-nvsmi-import.txt "$GP" snapshot --from-nvidia-smi "$O/nvsmi-q.xml" -o "$O/snap-from-nvsmi.json"
  timing idle 10
  # busy: a bf16 matmul loop at the power cap
  SECS=35 python3 "$D/busy.py" >busy.txt 2>&1 &
  local tp=$!
  sleep 12
  t busy-nvsmi-q.txt nvidia-smi -q
  t busy-nvsmi-q.xml nvidia-smi -q -x
  t busy-snap.txt "$GP" snapshot -o "$O/snap-busy.json"
  t busy-check-v.txt "$GP" check --color=never -v
  t busy-check.json "$GP" check --format json
  t busy-check-expect-idle.txt "$GP" check --color=never --expect-idle --checks gpu.processes
  timing busy 5
  curl -s -m 10 127.0.0.1:$PORT/metrics >busy-metrics.txt
  wait $tp
  curl -s -m 10 127.0.0.1:$PORT/metrics >metrics.txt
  curl -s -m 10 127.0.0.1:$PORT/report >report.json
  curl -s -m 10 127.0.0.1:$PORT/ >landing.html
  rss $sp >serve-status.txt
  kill $sp; wait $sp 2>/dev/null
  # the same daemon under GOMAXPROCS=2
  GOMAXPROCS=2 "$GP" serve --web.listen-address=127.0.0.1:$((PORT + 1)) --collect.interval=3s >serve-gomaxprocs2.log 2>&1 &
  sp=$!
  sleep 30
  curl -s -m 10 127.0.0.1:$((PORT + 1))/metrics >metrics-gomaxprocs2.txt
  rss $sp >serve-status-gomaxprocs2.txt
  kill $sp; wait $sp 2>/dev/null
  dmesg | grep -iE 'nvrm|xid' >dmesg-after.txt 2>&1
  finish capture
}

# train-starved: gpuprobe job on training loops in a hand-made job cgroup:
# healthy, sleep-starved, and a loader starved of CPU (cpustarve.py).
step_train_starved() {
  begin train-starved
  local cg mode tp
  cg=$(jobcg 1)
  for mode in healthy starve; do
    STARVE=$([ $mode = starve ] && echo 1 || echo 0) SECS=30 python3 "$D/train.py" >train-$mode.txt 2>&1 &
    tp=$!
    echo $tp >"$cg/cgroup.procs" 2>>cg-err.txt
    sleep 12
    { timeout 40 "$GP" job --job 1 --gpus 0 --duration 10s --color=never -v; echo rc=$?; } >gp-job-$mode.txt 2>&1
    { timeout 40 "$GP" job --job 1 --gpus 0 --duration 5s --format json; echo rc=$?; } >gp-job-$mode.json 2>&1
    wait $tp
  done
  SECS=35 python3 "$D/cpustarve.py" >train-cpustarve.txt 2>&1 &
  tp=$!
  echo $tp >"$cg/cgroup.procs" 2>>cg-err.txt
  sleep 12
  ps -eLo pid,tid,ppid,psr,pcpu,comm --sort=-pcpu | head -12 >cpustarve-ps.txt
  { timeout 40 "$GP" job --job 1 --gpus 0 --duration 10s --color=never -v; echo rc=$?; } >gp-job-cpustarve.txt 2>&1
  { timeout 40 "$GP" job --job 1 --gpus 0 --duration 5s --format json; echo rc=$?; } >gp-job-cpustarve.json 2>&1
  wait $tp
  finish train-starved
}

# nccl: NCCL logs from real runs (one rank; two ranks on one GPU; every
# subsystem) and gpuprobe nccl analyze on them.
step_nccl() {
  begin nccl
  export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
  { timeout 90 python3 "$D/nccl1.py"; echo rc=$?; } >nccl-1proc.log 2>&1
  ( { RANK=0 WORLD_SIZE=2 MASTER_PORT=29512 timeout 60 python3 "$D/nccl1.py"; echo rc=$?; } >nccl-dup-r0.log 2>&1 ) &
  ( { RANK=1 WORLD_SIZE=2 MASTER_PORT=29512 timeout 60 python3 "$D/nccl1.py"; echo rc=$?; } >nccl-dup-r1.log 2>&1 ) &
  wait
  unset NCCL_DEBUG_SUBSYS
  { timeout 90 python3 "$D/nccl1.py"; echo rc=$?; } >nccl-1proc-all.log 2>&1
  unset NCCL_DEBUG
  t gp-nccl-1proc.txt "$GP" nccl analyze nccl-1proc.log
  t gp-nccl-1proc.json "$GP" nccl analyze --format json nccl-1proc.log
  t gp-nccl-dup.txt "$GP" nccl analyze nccl-dup-r0.log nccl-dup-r1.log
  t gp-nccl-dup.json "$GP" nccl analyze --format json nccl-dup-r0.log nccl-dup-r1.log
  t gp-nccl-all.txt "$GP" nccl analyze nccl-1proc-all.log
  finish nccl
}

# bench: make bench-nccl's comparison on this machine's CPUs: grep -c
# against gpuprobe nccl analyze --format json (and ./gp-base, an older
# build, when present) on 400 MB logs from ./ncclgen (train, init, and real:
# the repository's corpus nccl/testdata/logs replicated), best of 7, all
# CPUs and pinned to two; then the real shape under GOMAXPROCS 1..16 (how
# far more cores carry the analyzer, whose merge runs on one at a time).
step_bench() {
  begin bench
  local mix cpus l i v bg bn bo P g corpus=${NCCL_BENCH_CORPUS:-$D/../nccl/testdata/logs}
  local mixes=${NCCL_BENCH_MIXES:-init train real} runs=${NCCL_BENCH_RUNS:-7}
  for mix in $mixes; do
    [ -f "$OUTDIR/$mix.log" ] || "$D/ncclgen" -mix $mix -corpus "$corpus" -size "${NCCL_BENCH_SIZE:-400MB}" -o "$OUTDIR/$mix.log" 2>>bench.txt
  done
  ms() { local a b; a=$(date +%s%N); "$@" >"$OUTDIR/bench-out"; b=$(date +%s%N); echo $(((b - a) / 1000000)); }
  for mix in $mixes; do
    l=$OUTDIR/$mix.log; cat "$l" >/dev/null
    for cpus in all 0-1; do
      P=(); [ $cpus != all ] && P=(taskset -c "$cpus")
      bg=99999; bn=99999; bo=-
      for ((i = 0; i < runs; i++)); do
        v=$(ms "${P[@]}" grep -c 'NCCL INFO' "$l"); [ "$v" -lt "$bg" ] && bg=$v
        v=$(ms "${P[@]}" "$GP" nccl analyze --format json "$l"); [ "$v" -lt "$bn" ] && bn=$v
        if [ -x "$D/gp-base" ]; then
          v=$(ms "${P[@]}" "$D/gp-base" nccl analyze --format json "$l"); { [ "$bo" = - ] || [ "$v" -lt "$bo" ]; } && bo=$v
        fi
      done
      echo "$mix cpus=$cpus grep=${bg}ms gpuprobe=${bn}ms base=${bo}ms" | tee -a bench.txt
    done
  done
  for g in ${NCCL_BENCH_SWEEP:-1 2 4 8 16}; do
    bn=99999
    for i in 1 2 3; do v=$(ms env GOMAXPROCS=$g "$GP" nccl analyze --format json "$OUTDIR/real.log"); [ "$v" -lt "$bn" ] && bn=$v; done
    echo "real GOMAXPROCS=$g gpuprobe=${bn}ms" | tee -a bench.txt
  done
  # collections in one run at the default GOMAXPROCS (this build, and the base)
  echo "real collections: gpuprobe=$(GODEBUG=gctrace=1 "$GP" nccl analyze --format json "$OUTDIR/real.log" 2>&1 >/dev/null | grep -c '^gc ') base=$([ -x "$D/gp-base" ] && GODEBUG=gctrace=1 "$D/gp-base" nccl analyze --format json "$OUTDIR/real.log" 2>&1 >/dev/null | grep -c '^gc ')" | tee -a bench.txt
  for mix in $mixes; do
    /usr/bin/time -v "$GP" nccl analyze --format json "$OUTDIR/$mix.log" 2>&1 >/dev/null | grep -E "Maximum resident|Elapsed|User time|System time" | sed "s/^/$mix /" >>bench.txt
  done
  rm -f "$OUTDIR/init.log" "$OUTDIR/train.log" "$OUTDIR/real.log" "$OUTDIR/bench-out"
  finish bench
}

# verify: gpuprobe verify on the real driver (the PTX JIT, the figures),
# cuda's TestRealDriver (./cuda.test, built with go test -c), and the same
# measurements through PyTorch (oracle.py) in the same run; a smoke of
# check on this build first.
step_verify() {
  begin verify
  t gp-version.txt "$GP" --version
  t gp-check-v.txt "$GP" check --color=never -v
  t gp-check.json "$GP" check --format json
  t nvsmi-q.txt nvidia-smi -q
  { echo "\$ cuda.test -test.run TestRealDriver -test.v"; GPUPROBE_REAL_CUDA=1 timeout 120 "$D/cuda.test" -test.run TestRealDriver -test.v -test.count=1; echo rc=$?; } >cuda-test.txt 2>&1
  { echo "\$ gpuprobe verify --quick -v"; timeout 60 "$GP" verify --quick -v --color=never; echo rc=$?; } >verify-quick.txt 2>&1
  { timeout 60 "$GP" verify --quick --format json; echo rc=$?; } >verify-quick.json 2>verify-quick-json.err
  { echo "\$ gpuprobe verify -v --textfile"; timeout 170 "$GP" verify -v --color=never --textfile "$O/verify.prom"; echo rc=$?; } >verify-default.txt 2>&1
  { echo "\$ python3 oracle.py"; timeout 150 python3 "$D/oracle.py"; echo rc=$?; } >oracle.txt 2>&1
  { timeout 60 "$GP" verify --quick --format json; echo rc=$?; } >verify-quick-after.json 2>&1
  dmesg | grep -iE 'nvrm|xid' >dmesg-after.txt 2>&1
  finish verify
}

# hang: what NVML and gpuprobe job --hang see of a rank that is idle,
# spinning in a kernel, or computing (hang.py in a job-shaped cgroup), and
# NCCL's RAS on a one-rank job: its answer verbatim (rasq.py) and job --hang,
# running and stopped (SIGSTOP).
step_hang() {
  begin hang
  local cg mode tp sp i
  cg=$(jobcg 2)
  for mode in idle spin busy; do
    rm -f ready
    READY=$O/ready MODE=$mode SECS=22 python3 "$D/hang.py" >hang-$mode.txt 2>&1 &
    tp=$!
    echo $tp >"$cg/cgroup.procs" 2>>cg-err.txt
    i=0; while [ $i -lt 60 ] && [ ! -e ready ]; do sleep 0.5; i=$((i + 1)); done
    sleep 2
    # Which libnccl the rank maps (perf.hang's nccl_library): a PyTorch
    # process maps libnccl.so.2 at import, before any communicator.
    { echo "\$ grep libnccl /proc/$tp/maps"; grep libnccl "/proc/$tp/maps"; echo "rc=$?"; } >maps-nccl-$mode.txt 2>&1
    nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory,clocks.sm,power.draw,pstate,clocks_event_reasons.active --format=csv -lms 250 >smi-$mode.csv 2>&1 &
    sp=$!
    { timeout 40 "$GP" job --hang --job 2 --gpus 0 --duration 6s --color=never -v; echo rc=$?; } >gp-hang-$mode.txt 2>&1
    { timeout 40 "$GP" job --hang --job 2 --gpus 0 --duration 4s --format json; echo rc=$?; } >gp-hang-$mode.json 2>&1
    kill $sp; wait $tp
  done
  rm -f ready
  cg=$(jobcg 3)
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,RAS READY=$O/ready MODE=nccl SECS=45 python3 "$D/hang.py" >nccl-ras.log 2>&1 &
  tp=$!
  echo $tp >"$cg/cgroup.procs" 2>>cg-err.txt
  i=0; while [ $i -lt 90 ] && [ ! -e ready ]; do sleep 0.5; i=$((i + 1)); done
  sleep 2
  { echo "\$ grep libnccl /proc/$tp/maps"; grep libnccl "/proc/$tp/maps"; echo "rc=$?"; } >maps-nccl-nccl.txt 2>&1
  t ss.txt sh -c "ss -ltnp | head -40"
  t ras-status.txt timeout 20 python3 "$D/rasq.py"
  t ras-verbose.txt timeout 20 python3 "$D/rasq.py" verbose
  { timeout 40 "$GP" job --hang --job 3 --gpus 0 --duration 5s --color=never -v; echo rc=$?; } >gp-hang-nccl-running.txt 2>&1
  { timeout 40 "$GP" job --hang --job 3 --gpus 0 --duration 4s --format json; echo rc=$?; } >gp-hang-nccl-running.json 2>&1
  kill -STOP $tp
  sleep 2
  t ras-status-stopped.txt timeout 20 python3 "$D/rasq.py"
  { timeout 40 "$GP" job --hang --job 3 --gpus 0 --duration 5s --color=never -v; echo rc=$?; } >gp-hang-nccl-stopped.txt 2>&1
  { timeout 40 "$GP" job --hang --job 3 --gpus 0 --duration 4s --format json; echo rc=$?; } >gp-hang-nccl-stopped.json 2>&1
  kill -CONT $tp; kill $tp; wait $tp
  finish hang
}

usage() { echo "usage: $0 capture|train-starved|nccl|bench|verify|hang|all ..." >&2; exit 2; }
[ $# -gt 0 ] || usage
[ -x "$GP" ] || { echo "$GP: build gpuprobe with CGO_ENABLED=1 and put it beside this script" >&2; exit 2; }
mkdir -p "$OUTDIR"
for s in "$@"; do
  case $s in
  capture) step_capture ;;
  train-starved) step_train_starved ;;
  nccl) step_nccl ;;
  bench) step_bench ;;
  verify) step_verify ;;
  hang) step_hang ;;
  all) step_capture; step_train_starved; step_nccl; step_bench ;;
  *) usage ;;
  esac
done
ls -la "$OUTDIR"
