#!/usr/bin/env bash
# nfpm.sh build | run ARGS...: the pinned packager (NFPM_VERSION), a Go tool
# fetched through the module proxy and built once into dist/tools (inside
# the checkout, never a shared /tmp path: root runs it). Its dependencies
# never enter gpuprobe's go.mod.
#
# Built cold, nfpm is about two minutes of compiling on two cores, most of
# the package step. `make e2e` starts `nfpm.sh build` at low priority in the
# background while the e2e scripts wait on Prometheus and Slurm, and `run`
# waits for that build (a lock) instead of starting its own.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
NFPM_VERSION=${NFPM_VERSION:-v2.45.0}
dir=$PWD/dist/tools/nfpm-$NFPM_VERSION
mkdir -p dist/tools
build() {
  exec 9>dist/tools/nfpm.lock
  flock 9
  if [ ! -x "$dir/nfpm" ]; then
    GOBIN=$dir nice -n 19 "$GO" install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"
  fi
  exec 9>&-
}
case ${1:-} in
  build) build ;;
  run)
    shift
    build
    exec "$dir/nfpm" "$@"
    ;;
  *) echo "usage: nfpm.sh build | run ARGS..." >&2; exit 2 ;;
esac
