#!/usr/bin/env bash
# Benchmarks `gpuprobe nccl analyze --format json` (the whole command a user
# runs) against `grep -c 'NCCL INFO'` on three logs (tools/ncclgen):
#   train  synthetic, 512 ranks on 64 nodes, mostly per-operation opCount
#          lines (the shape of a training log)
#   init   synthetic, mostly distinct connection lines, one fixed
#          host:pid:tid per rank, interleaved (a job that sets up many
#          connections)
#   real   the real logs of NCCL_BENCH_CORPUS replicated (8 replicas at a
#          time, each a distinct process, interleaved in runs of 1-16
#          lines; every byte but the renamed pids kept), so it has the line
#          mix of real logs; the mix (share of connection lines among the
#          NCCL INFO lines) is printed with the figures.
# Each tool runs NCCL_BENCH_RUNS times on the same file with the page cache
# warm, both writing their output to a file (GNU grep stops at the first
# match when its stdout is /dev/null); the best wall time of each counts. The
# script fails when the analyzer takes more than NCCL_BENCH_MAX_RATIO times
# grep's wall time or NCCL_BENCH_MAX_RSS_MB of peak RSS on any shape.
#
#   scripts/bench-nccl.sh                 # all shapes, 400 MB each, deleted afterwards
#   NCCL_BENCH_MIX=real scripts/bench-nccl.sh
#
# Knobs (environment): NCCL_BENCH_MIX (any of train, init, real),
# NCCL_BENCH_CORPUS (default nccl/testdata/logs, the repository's verbatim
# copy of ../shared/nccl-logs; the real shape is skipped, loudly, when it
# holds no *.log),
# NCCL_BENCH_SIZE (default 400MB), NCCL_BENCH_DIR (default /tmp),
# NCCL_BENCH_KEEP=1 (keep the logs), NCCL_BENCH_RUNS (default 5),
# NCCL_BENCH_MAX_RATIO (default 2), NCCL_BENCH_MAX_RSS_MB (default 64).
set -euo pipefail
cd "$(dirname "$0")/.."

mixes=${NCCL_BENCH_MIX:-train init real}
corpus=${NCCL_BENCH_CORPUS:-nccl/testdata/logs}
size=${NCCL_BENCH_SIZE:-400MB}
dir=${NCCL_BENCH_DIR:-/tmp}
runs=${NCCL_BENCH_RUNS:-5}
max_ratio=${NCCL_BENCH_MAX_RATIO:-2}
max_rss_mb=${NCCL_BENCH_MAX_RSS_MB:-64}
work=$(mktemp -d)
bin=$work/gpuprobe
logs=()
cleanup() {
	rm -rf "$work"
	if [ "${NCCL_BENCH_KEEP:-0}" != 1 ] && [ ${#logs[@]} -gt 0 ]; then
		rm -f "${logs[@]}"
	fi
}
trap cleanup EXIT

if [ ! -x /usr/bin/time ]; then
	echo "bench-nccl: installing GNU time for peak RSS" >&2
	# shellcheck source=scripts/apt.sh
	. scripts/apt.sh
	apt_install time
fi

export CGO_CFLAGS=${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}
go build -o "$bin" ./cmd/gpuprobe
go build -o "$work/ncclgen" ./tools/ncclgen

now() { date +%s%N; }

# run CMD... : wall seconds and peak RSS (KB) of one run, as "secs kb".
run() {
	local t0 t1
	t0=$(now)
	# The analyzer exits 1 when the verdict has a problem: still a run.
	/usr/bin/time -f '%M' -o "$work/rss" "$@" >"$work/out" || true
	t1=$(now)
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $(tail -n 1 "$work/rss")"
}

fail=0
for mix in $mixes; do
	log=$dir/gpuprobe-nccl-bench-$mix-$size.log
	linemix=
	if [ "$mix" = real ]; then
		if ! compgen -G "$corpus/*.log" >/dev/null; then
			echo "bench-nccl: SKIPPED the real shape: no *.log in $corpus (NCCL_BENCH_CORPUS)" >&2
			echo "shape:     real SKIPPED (no corpus in $corpus)"
			echo
			continue
		fi
		log=$dir/gpuprobe-nccl-bench-real-$(cat "$corpus"/*.log | cksum | cut -d' ' -f1)-$size.log
	fi
	logs+=("$log")
	if [ ! -s "$log" ]; then
		echo "bench-nccl: writing a $size '$mix' log to $log" >&2
		"$work/ncclgen" -mix "$mix" -corpus "$corpus" -size "$size" -o "$log.tmp" 2>"$work/genmix" || { cat "$work/genmix" >&2; exit 1; }
		cat "$work/genmix" >&2
		mv "$log.tmp" "$log"
	fi
	if [ "$mix" = real ]; then
		# The line mix of the log as it is (it may have been kept from an
		# earlier run): NCCL INFO lines, and those that are connection lines.
		linemix=$(awk '/NCCL INFO / { n++; m = substr($0, index($0, "NCCL INFO ") + 10); if (m ~ /^(Channel|Ring) / && m ~ / via /) c++ }
			END { printf "%d NCCL INFO lines, %.1f%% of them connection lines", n, 100 * c / n }' "$log")
	fi
	cat "$log" >/dev/null # both tools read from the page cache, not the disk

	best_grep=999999 best_ana=999999 rss_ana=0 rss_grep=0
	for ((i = 1; i <= runs; i++)); do
		read -r g gr < <(run grep -c 'NCCL INFO' "$log")
		read -r a ar < <(run "$bin" nccl analyze --format json "$log")
		best_grep=$(awk -v x="$g" -v y="$best_grep" 'BEGIN { print (x < y) ? x : y }')
		best_ana=$(awk -v x="$a" -v y="$best_ana" 'BEGIN { print (x < y) ? x : y }')
		rss_ana=$((ar > rss_ana ? ar : rss_ana))
		rss_grep=$((gr > rss_grep ? gr : rss_grep))
		echo "$mix run $i: grep ${g}s, analyzer ${a}s" >&2
	done
	if ! grep -q '"inter_node"' "$work/out"; then
		echo "bench-nccl: the analyzer printed no verdict" >&2
		exit 1
	fi
	bytes=$(stat -c %s "$log")
	ratio=$(awk -v a="$best_ana" -v g="$best_grep" 'BEGIN { printf "%.2f", a / g }')
	rss_mb=$(awk -v k="$rss_ana" 'BEGIN { printf "%.1f", k / 1024 }')
	cat <<EOF
shape:     $mix
log:       $log ($(awk -v b="$bytes" 'BEGIN { printf "%.2f GB", b / 1e9 }'), $(grep -c '' "$log") lines)
cpus:      $(nproc)
grep -c:   ${best_grep}s wall (best of $runs), peak RSS $((rss_grep / 1024)) MB
gpuprobe:  ${best_ana}s wall (best of $runs), peak RSS ${rss_mb} MB, $(awk -v b="$bytes" -v s="$best_ana" 'BEGIN { printf "%.0f MB/s", b / 1e6 / s }')
ratio:     ${ratio} (limit ${max_ratio})
load:      $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)
${linemix:+line mix:  $linemix
}verdict:   $(sed -n 's/.*"summary": *"\([^"]*\)".*/\1/p' "$work/out")

EOF
	if awk -v r="$ratio" -v m="$max_ratio" 'BEGIN { exit !(r > m) }'; then
		echo "FAIL ($mix): the analyzer took ${ratio}x grep's time" >&2
		fail=1
	fi
	if [ "$rss_ana" -ge $((max_rss_mb * 1024)) ]; then
		echo "FAIL ($mix): peak RSS ${rss_mb} MB is not under ${max_rss_mb} MB" >&2
		fail=1
	fi
done
exit $fail
