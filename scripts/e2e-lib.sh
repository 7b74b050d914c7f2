#!/usr/bin/env bash
# Sourced by the e2e scripts: timestamped PASS/FAIL lines, a private work
# directory, and background processes stopped by PID on any exit.
#   e2e_init NAME   sets W (work dir), PIDS (append background PIDs), FAILS
e2e_init() {
  E2E_NAME=$1
  T0=$(date +%s.%N)
  FAILS=0
  PIDS=()
  W=$(mktemp -d "/tmp/gpuprobe-$E2E_NAME.XXXXXX") || { echo "$E2E_NAME: mktemp failed" >&2; exit 1; }
  trap e2e_cleanup EXIT
  trap 'exit 130' INT TERM
}

log() { printf '[%s +%ss] %s\n' "$E2E_NAME" "$(awk -v a="$(date +%s.%N)" -v b="$T0" 'BEGIN{printf "%5.1f", a-b}')" "$*"; }
pass() { log "PASS: $*"; }
fail() {
  log "FAIL: $*"
  FAILS=$((FAILS + 1))
}
# expect_silent WHAT CMD...: CMD must exit 0 and print nothing (linters
# and verifiers exit 0 on warnings, so the exit status is not enough).
expect_silent() {
  local what=$1 out rc
  shift
  out=$("$@" 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && [ -z "$out" ]; then
    pass "$what: no output, exit 0"
  else
    fail "$what: exit $rc, output:"
    printf '%s\n' "$out" | sed 's/^/    /'
  fi
}
die() {
  log "FAIL: $*"
  exit 1
}

e2e_cleanup() {
  local p
  for p in "${PIDS[@]}"; do
    kill "$p" 2>/dev/null
  done
  for p in "${PIDS[@]}"; do
    wait "$p" 2>/dev/null
  done
  rm -rf "$W"
}

# shellcheck source=scripts/e2e-bin.sh
. "$(dirname "${BASH_SOURCE[0]}")/e2e-bin.sh"
