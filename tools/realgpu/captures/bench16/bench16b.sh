#!/bin/bash
# train and init: session start (gp-base), fixed table (gp-c1), current (gpuprobe); best of 15 interleaved, all CPUs.
set -u
D0=$(cd "$(dirname "$0")" && pwd); O=${OUT:-/tmp/out}; mkdir -p $O; D=/tmp/bin; mkdir -p $D; for f in gp-base gp-c1 gpuprobe ncclgen; do gunzip -c $D0/$f.gz > $D/$f; chmod +x $D/$f; done
for mix in train init; do [ -f /tmp/$mix.log ] || $D/ncclgen -mix $mix -size 400MB -o /tmp/$mix.log; done
ms() { local a b; a=$(date +%s%N); "$@" > /tmp/cmd.out; b=$(date +%s%N); echo $(( (b-a)/1000000 )); }
for mix in train init; do
  L=/tmp/$mix.log; cat $L > /dev/null
  declare -A best=()
  for i in $(seq 15); do
    for b in grep gp-base gp-c1 gpuprobe; do
      if [ $b = grep ]; then t=$(ms grep -c 'NCCL INFO' $L); else t=$(ms $D/$b nccl analyze --format json $L); fi
      [ -z "${best[$b]:-}" ] || [ $t -lt ${best[$b]} ] && best[$b]=$t
    done
  done
  echo "$mix: grep ${best[grep]} ms, session-start ${best[gp-base]} ms, fixed-table ${best[gp-c1]} ms, current ${best[gpuprobe]} ms" | tee -a $O/bench16b.txt
done
