#!/usr/bin/env bash
# Benchmarks the NCCL log analyzer against `grep -c 'NCCL INFO'` on a synthetic
# log of at least 1 GB (512 ranks on 64 hosts, see tools/ncclgen), and fails
# when the analyzer takes more than twice grep's wall time or 64 MB of RSS.
#
#   scripts/bench-nccl.sh            # generates /tmp/gpuprobe-nccl-bench-1g.log once
#
# Knobs (environment): NCCL_BENCH_LOG (path), NCCL_BENCH_SIZE (default 1GB),
# NCCL_BENCH_RUNS (default 5; each tool's best run counts, so that a busy
# machine does not decide the result), NCCL_BENCH_MAX_RATIO (default 2),
# NCCL_BENCH_MAX_RSS_MB (default 64).
set -euo pipefail
cd "$(dirname "$0")/.."

log=${NCCL_BENCH_LOG:-/tmp/gpuprobe-nccl-bench-1g.log}
size=${NCCL_BENCH_SIZE:-1GB}
runs=${NCCL_BENCH_RUNS:-5}
max_ratio=${NCCL_BENCH_MAX_RATIO:-2}
max_rss_mb=${NCCL_BENCH_MAX_RSS_MB:-64}
bin=/tmp/gpuprobe-nccl-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x /usr/bin/time ]; then
	echo "bench-nccl: installing GNU time for peak RSS" >&2
	if [ "$(id -u)" = 0 ]; then
		apt-get install -y -qq time >/dev/null || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
	else
		sudo apt-get install -y -qq time >/dev/null
	fi
fi

if [ ! -s "$log" ] || [ "$(stat -c %s "$log")" -lt $((1000 * 1000 * 1000)) ]; then
	echo "bench-nccl: writing a $size synthetic log to $log" >&2
	go run ./tools/ncclgen -size "$size" -o "$log.tmp"
	mv "$log.tmp" "$log"
fi
go build -o "$bin" ./tools/ncclbench

# Both tools read from the page cache, not the disk.
cat "$log" >/dev/null

now() { date +%s%N; }

# run CMD... : wall seconds and peak RSS (KB) of one run, as "secs kb".
# grep's output must not go to /dev/null: GNU grep then stops at the first
# match.
run() {
	local t0 t1
	t0=$(now)
	/usr/bin/time -f '%M' -o "$work/rss" "$@" >"$work/out"
	t1=$(now)
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $(cat "$work/rss")"
}

best_grep=999999 best_ana=999999 rss_ana=0 rss_grep=0
for ((i = 1; i <= runs; i++)); do
	read -r g gr < <(run grep -c 'NCCL INFO' "$log")
	read -r a ar < <(run "$bin" "$log")
	best_grep=$(awk -v x="$g" -v y="$best_grep" 'BEGIN { print (x < y) ? x : y }')
	best_ana=$(awk -v x="$a" -v y="$best_ana" 'BEGIN { print (x < y) ? x : y }')
	rss_ana=$((ar > rss_ana ? ar : rss_ana))
	rss_grep=$((gr > rss_grep ? gr : rss_grep))
	echo "run $i: grep ${g}s, analyzer ${a}s" >&2
done
if ! grep -q '"inter_node"' "$work/out"; then
	echo "bench-nccl: the analyzer printed no verdict" >&2
	exit 1
fi

bytes=$(stat -c %s "$log")
ratio=$(awk -v a="$best_ana" -v g="$best_grep" 'BEGIN { printf "%.2f", a / g }')
rss_mb=$(awk -v k="$rss_ana" 'BEGIN { printf "%.1f", k / 1024 }')
cat <<EOF
log:       $log ($(awk -v b="$bytes" 'BEGIN { printf "%.2f GB", b / 1e9 }'), $(grep -c '' "$log") lines)
cpus:      $(nproc)
grep -c:   ${best_grep}s wall (best of $runs), peak RSS $((rss_grep / 1024)) MB
analyzer:  ${best_ana}s wall (best of $runs), peak RSS ${rss_mb} MB, $(awk -v b="$bytes" -v s="$best_ana" 'BEGIN { printf "%.0f MB/s", b / 1e6 / s }')
ratio:     ${ratio} (limit ${max_ratio})
verdict:   $(sed -n 's/.*"summary":"\([^"]*\)".*/\1/p' "$work/out")
EOF

fail=0
if awk -v r="$ratio" -v m="$max_ratio" 'BEGIN { exit !(r > m) }'; then
	echo "FAIL: the analyzer took ${ratio}x grep's time" >&2
	fail=1
fi
if [ "$rss_ana" -ge $((max_rss_mb * 1024)) ]; then
	echo "FAIL: peak RSS ${rss_mb} MB is not under ${max_rss_mb} MB" >&2
	fail=1
fi
exit $fail
