#!/usr/bin/env bash
# attack-serve.sh: the daemon under the three floods of issue 32, on
# loopback only, bounded (~27 s): `gpuprobe serve --simulate dgx-h100` on a
# free 127.0.0.1 port, then tools/attackserve runs 2,000 idle keep-alive
# clients, 2,000 concurrent scrapers and 300 slowloris clients (from
# 127.0.0.2 and up), one flood at a time, while a probe scrapes /metrics on
# fresh connections from 127.0.0.1. Per flood it prints the probe's p99 and
# failures and the daemon's peak RSS and anonymous memory; it fails if a
# probe scrape fails or the p99 reaches max(1 s, 10x the unloaded p99 of the
# same run). The descriptor limit is raised for the idle clients (fewer are
# used, and the number said, where the hard limit is lower). Stops what it
# started (by PID) and removes its temp dir on exit.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
GO=${GO:-go}
# shellcheck source=scripts/e2e-lib.sh
. scripts/e2e-lib.sh
e2e_init attack-serve

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
log "descriptor limit $(ulimit -n)"
e2e_binary "$W/gpuprobe"
"$GO" build -o "$W/attackserve" ./tools/attackserve || die "go build ./tools/attackserve"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$W/gpuprobe" serve --simulate dgx-h100 --web.listen-address "127.0.0.1:$PORT" 2>"$W/serve.log" &
DPID=$!
PIDS+=("$DPID")
for _ in $(seq 100); do
  curl -fs -o /dev/null "http://127.0.0.1:$PORT/report" && break
  sleep 0.1
done
curl -fs -o /dev/null "http://127.0.0.1:$PORT/report" || { cat "$W/serve.log"; die "the daemon did not come up"; }
log "daemon pid $DPID on 127.0.0.1:$PORT; load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"

if timeout 60 "$W/attackserve" -addr "127.0.0.1:$PORT" -pid "$DPID" | while IFS= read -r l; do log "$l"; done; [ "${PIPESTATUS[0]}" -eq 0 ]; then
  pass "every probe scrape got through each flood in time"
else
  fail "a probe scrape failed or was too slow under a flood (lines above)"
fi
if kill -0 "$DPID" 2>/dev/null; then
  pass "the daemon is still running"
else
  fail "the daemon died under the floods"
fi
log "done: $FAILS failure(s)"
[ "$FAILS" -eq 0 ]
