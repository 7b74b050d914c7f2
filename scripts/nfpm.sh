#!/usr/bin/env bash
# nfpm.sh build | background | run ARGS...: the pinned packager
# (NFPM_VERSION), a Go tool fetched through the module proxy and built once
# into dist/tools (inside the checkout, never a shared /tmp path: root runs
# it). Its dependencies never enter gpuprobe's go.mod.
#
# Built cold, nfpm is one to two minutes of compiling on two cores, most of
# the package step. `make e2e` starts `nfpm.sh background` while the e2e
# scripts mostly wait on Prometheus and Slurm: the build runs at the lowest
# priority, in a session of its own whose autogroup is niced too (with
# autogroups on, the kernel shares CPUs between sessions before nice applies
# inside one, sched(7)). `run` waits for that build (a lock); before waiting
# it raises the build back to normal priority, so a busy machine cannot
# starve the build the package step is waiting on.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
NFPM_VERSION=${NFPM_VERSION:-v2.45.0}
dir=$PWD/dist/tools/nfpm-$NFPM_VERSION
pidfile=dist/tools/nfpm-build.pid
mkdir -p dist/tools
build() {
  exec 9>dist/tools/nfpm.lock
  flock 9
  if [ ! -x "$dir/nfpm" ]; then
    GOBIN=$dir "$GO" install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"
  fi
  exec 9>&-
}
# boost raises a background build still running to normal priority.
boost() {
  local pid
  pid=$(cat "$pidfile" 2>/dev/null) || return 0
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 0
  echo 0 >"/proc/$pid/autogroup" 2>/dev/null || true
  renice -n 0 -g "$pid" >/dev/null 2>&1 || true
}
case ${1:-} in
  build) build ;;
  background)
    # setsid: its own session and process group (its pid), so boost can
    # renice the whole build, compilers included.
    setsid bash -c 'echo $$ >"$1"; echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 bash "$2" build' \
      _ "$pidfile" "$0" >dist/tools/nfpm-build.log 2>&1 </dev/null &
    ;;
  run)
    shift
    boost
    build
    exec "$dir/nfpm" "$@"
    ;;
  *) echo "usage: nfpm.sh build | background | run ARGS..." >&2; exit 2 ;;
esac
