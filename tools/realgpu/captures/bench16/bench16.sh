#!/bin/bash
# make bench-nccl's comparison on a 16-CPU machine: grep -c vs gpuprobe nccl analyze --format json,
# both writing to a file, page cache warm, interleaved best of 7; all CPUs, then pinned to 2 CPUs.
set -u
D=$(cd "$(dirname "$0")" && pwd); O=${OUT:-/tmp/out}; mkdir -p $O
[ -f /tmp/train.log ] || for mix in init train; do $D/ncclgen -mix $mix -size 400MB -o /tmp/$mix.log; done
ls -la /tmp/*.log > $O/bench16.txt; nproc >> $O/bench16.txt
ms() { local a b; a=$(date +%s%N); "$@" > /tmp/cmd.out; b=$(date +%s%N); echo $(( (b-a)/1000000 )); }
for mix in init train; do
  L=/tmp/$mix.log; cat $L > /dev/null
  for cpus in all 0-1; do
    P=""; [ $cpus != all ] && P="taskset -c $cpus"
    bg=99999; bn=99999; bo=99999
    for i in 1 2 3 4 5 6 7; do
      t=$(ms $P grep -c 'NCCL INFO' $L); [ $t -lt $bg ] && bg=$t
      t=$(ms $P $D/gpuprobe nccl analyze --format json $L); [ $t -lt $bn ] && bn=$t
      t=$(ms $P $D/gp-base nccl analyze --format json $L); [ $t -lt $bo ] && bo=$t
    done
    echo "$mix cpus=$cpus grep=${bg}ms gpuprobe=${bn}ms ($(awk -v a=$bn -v g=$bg 'BEGIN{printf "%.2f", a/g}')x) session-start=${bo}ms ($(awk -v a=$bo -v g=$bg 'BEGIN{printf "%.2f", a/g}')x)" | tee -a $O/bench16.txt
  done
done
/usr/bin/time -v $D/gpuprobe nccl analyze --format json /tmp/init.log 2>&1 >/dev/null | grep -E "Maximum resident|Elapsed" >> $O/bench16.txt
