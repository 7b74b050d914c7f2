#!/usr/bin/env bash
# Counts the instructions `gpuprobe nccl analyze --format json` executes on
# the first NCCL_IR_MB (default 40) MB of the bench's real shape, for each
# git revision given (default: HEAD), with valgrind's cachegrind, next to
# grep -c 'NCCL INFO' on the same bytes:
#
#   scripts/bench-nccl-ir.sh main HEAD
#
# Why: wall times on a shared 2-core VM moved by a quarter between runs of
# one build in one session (docs/nccl.md, "Measuring"), more than most
# changes to the analyzer; an instruction count of one build on one input
# is the same on every run to 0.1%. It runs with GOMAXPROCS=1 and GOGC=off
# (GOMEMLIMIT large) so that the count is the analyzer's own work: the
# collector's share depends on timing and is measured by the wall-time
# bench (scripts/bench-nccl.sh), which stays the figure the issue's limit
# is judged on. A count is not a time: a change that copies more memory can
# take longer with fewer instructions, so a kept change is confirmed with
# the wall-time bench.
set -euo pipefail
cd "$(dirname "$0")/.."

revs=("$@")
[ ${#revs[@]} -gt 0 ] || revs=(HEAD)
mb=${NCCL_IR_MB:-40}
corpus=${NCCL_BENCH_CORPUS:-nccl/testdata/logs}
work=$(mktemp -d)
cleanup() {
	for r in "$work"/tree-*; do
		[ -d "$r" ] && git worktree remove --force "$r" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

if ! command -v valgrind >/dev/null; then
	echo "bench-nccl-ir: installing valgrind" >&2
	# shellcheck source=scripts/apt.sh
	. scripts/apt.sh
	apt_install valgrind
fi

export CGO_CFLAGS=${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}
go build -o "$work/ncclgen" ./tools/ncclgen
"$work/ncclgen" -mix real -corpus "$corpus" -size "${mb}MB" -o "$work/real.log" 2>"$work/genmix"
cat "$work/genmix" >&2

ir() { # ir CMD... : cachegrind's instruction count of one run
	# The analyzer exits 1 when the verdict has a problem: still a run.
	GOGC=off GOMEMLIMIT=64GiB GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no \
		--cachegrind-out-file=/dev/null "$@" 2>"$work/vg" >"$work/out" || true
	sed -n 's/.*I *refs: *//p' "$work/vg" | tr -d ,
}

g=$(ir grep -c 'NCCL INFO' "$work/real.log")
echo "input:    first ${mb} MB of the real shape ($(wc -l <"$work/real.log") lines)"
echo "grep -c:  $g instructions"
i=0
for rev in "${revs[@]}"; do
	i=$((i + 1))
	tree=$work/tree-$i
	git worktree add --detach -q "$tree" "$rev"
	(cd "$tree" && go build -o "$work/gpuprobe-$i" ./cmd/gpuprobe)
	n=$(ir "$work/gpuprobe-$i" nccl analyze --format json "$work/real.log")
	echo "$rev ($(git rev-parse --short "$rev")): $n instructions, $(awk -v a="$n" -v b="$g" 'BEGIN { printf "%.2f", a / b }')x grep's"
done
