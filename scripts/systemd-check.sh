#!/usr/bin/env bash
# systemd-check.sh: the systemd units in systemd/ must verify cleanly and stay
# hardened. Needs no running systemd (works in a container or CI VM whose PID 1
# is something else); installs systemd's tools if systemd-analyze is missing.
#
#   1. systemd-analyze verify --man=no prints nothing for gpuprobe.service
#      (ExecStart pointed at a freshly built binary: verify fails on a missing
#      one), for gpuprobe.socket, and for the service with the pcie.acs drop-in.
#   2. systemd-analyze security --offline=true: exposure <= 2.5 (threshold 25
#      on the 0-100 scale) for the unit, with and without the drop-in.
#   3. systemd/gpuprobe.default parses as an EnvironmentFile and its
#      GPUPROBE_ARGS are flags `gpuprobe serve` accepts: the daemon is started
#      with them through systemd-socket-activate (as gpuprobe.socket would) with
#      --web.systemd-socket, and /metrics must answer.
#
# One PASS/FAIL line per assertion; exit 1 on any failure. Cleans up after
# itself (temp dir, the daemon it started).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
GO=${GO:-go}
THRESHOLD=${SYSTEMD_CHECK_THRESHOLD:-25} # 0-100 scale: 25 = an exposure of 2.5
# systemd-socket-activate waits for the first connection, then execs the
# daemon in its own place: the PID in PIDS is the daemon's.
# shellcheck source=scripts/e2e-lib.sh
. scripts/e2e-lib.sh
e2e_init systemd-check

if ! command -v systemd-analyze >/dev/null; then
  log "systemd-analyze missing: installing systemd"
  # shellcheck source=scripts/apt.sh
  . scripts/apt.sh
  apt_install systemd || die "could not install systemd (apt_install systemd)"
  command -v systemd-analyze >/dev/null || die "systemd-analyze still missing after installing systemd"
fi
for tool in systemd-socket-activate curl; do
  command -v "$tool" >/dev/null || die "$tool not found (systemd-socket-activate comes with systemd)"
done
log "$(systemd-analyze --version | head -1)"

e2e_binary "$W/bin/gpuprobe"

for f in gpuprobe.service gpuprobe.socket gpuprobe.default gpuprobe-pcie-acs.conf; do
  [ -f "systemd/$f" ] || die "systemd/$f missing"
done
# The unit bounds the daemon's memory and tasks (issue 32): a leak or a
# flood must not take the node's.
for k in MemoryMax TasksMax; do
  grep -Eq "^$k=[0-9]+[KMG]?$" systemd/gpuprobe.service || fail "gpuprobe.service: no $k= (the daemon's $k must be bounded)"
done
grep -q '^ExecStart=/usr/local/bin/gpuprobe serve \$GPUPROBE_ARGS$' systemd/gpuprobe.service ||
  fail "gpuprobe.service: ExecStart is not '/usr/local/bin/gpuprobe serve \$GPUPROBE_ARGS'"

# Temp copies with ExecStart pointing at the built binary (verify checks it exists).
mkunit() { # DIR [DROPIN]
  mkdir -p "$1"
  sed "s#/usr/local/bin/gpuprobe#$W/bin/gpuprobe#" systemd/gpuprobe.service >"$1/gpuprobe.service"
  cp systemd/gpuprobe.socket "$1/"
  if [ -n "${2:-}" ]; then
    mkdir -p "$1/gpuprobe.service.d"
    cp "$2" "$1/gpuprobe.service.d/"
  fi
}
mkunit "$W/plain"
mkunit "$W/acs" systemd/gpuprobe-pcie-acs.conf

# 1. verify: exit 0 is not enough (warnings exit 0), the output must be empty.
verify() { # NAME UNIT...
  local name=$1
  shift
  expect_silent "systemd-analyze verify $name" systemd-analyze verify --man=no "$@"
}
verify "gpuprobe.service" "$W/plain/gpuprobe.service"
verify "gpuprobe.socket" "$W/plain/gpuprobe.socket"
verify "gpuprobe.service + gpuprobe-pcie-acs.conf" "$W/acs/gpuprobe.service"

# 2. security score, gated with --threshold (0-100; the printed score is /10).
security() { # NAME UNIT
  local out rc score
  out=$(systemd-analyze security --offline=true --threshold="$THRESHOLD" "$2" 2>&1)
  rc=$?
  score=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) \(.*\)$/\1 \2/p')
  if [ -z "$score" ]; then
    fail "systemd-analyze security $1: no score in the output (exit $rc)"
    printf '%s\n' "$out" | tail -5 | sed 's/^/    /'
  elif [ $rc -eq 0 ]; then
    pass "systemd-analyze security $1: exposure $score (gate: --threshold=$THRESHOLD, i.e. $(awk -v t="$THRESHOLD" 'BEGIN{printf "%.1f", t/10}'))"
  else
    fail "systemd-analyze security $1: exposure $score, above threshold $THRESHOLD (exit $rc); the exposed items:"
    printf '%s\n' "$out" | grep '✗' | sed 's/^/    /'
  fi
}
security "gpuprobe.service" "$W/plain/gpuprobe.service"
security "gpuprobe.service + gpuprobe-pcie-acs.conf" "$W/acs/gpuprobe.service"

# 3. the default file's arguments, through socket activation.
ARGS=$(env -i bash -c 'set -a; . "$1" >/dev/null 2>&1 || exit 1; printf %s "${GPUPROBE_ARGS:-}"' _ systemd/gpuprobe.default) ||
  fail "systemd/gpuprobe.default does not parse as shell assignments"
if [ -z "$ARGS" ]; then
  fail "systemd/gpuprobe.default sets no GPUPROBE_ARGS"
fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 18495)
# shellcheck disable=SC2086 # GPUPROBE_ARGS is split on whitespace, as systemd does
# TMPDIR: a daemon stopped mid-collection leaves its simulated sysfs tree behind.
mkdir -p "$W/tmp"
TMPDIR="$W/tmp" systemd-socket-activate -E TMPDIR -l "127.0.0.1:$PORT" "$W/bin/gpuprobe" serve $ARGS --web.systemd-socket --simulate dgx-h100 \
  >"$W/activate.log" 2>&1 &
PIDS+=($!)
ok=
for _ in $(seq 1 50); do
  if curl -fsS --max-time 2 "http://127.0.0.1:$PORT/metrics" >"$W/metrics" 2>/dev/null &&
    grep -q '^gpuprobe_node_healthy ' "$W/metrics"; then
    ok=1
    break
  fi
  sleep 0.2
done
if [ -n "$ok" ]; then
  pass "socket activation: 'gpuprobe serve $ARGS --web.systemd-socket --simulate dgx-h100' serves /metrics with gpuprobe_node_healthy $(awk '/^gpuprobe_node_healthy /{print $2}' "$W/metrics")"
else
  fail "socket activation: no gpuprobe_node_healthy on 127.0.0.1:$PORT/metrics within 10 s; log:"
  sed 's/^/    /' "$W/activate.log"
fi
if [ "$FAILS" -ne 0 ]; then
  log "systemd-check: $FAILS FAILED"
  exit 1
fi
log "systemd-check: all passed"
