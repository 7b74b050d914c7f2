#!/usr/bin/env bash
# Runs every fuzz target of the module for a short, bounded time each
# (FUZZTIME, default 10s). Go allows -fuzz on one target per run, so each
# target gets its own invocation.
set -euo pipefail
fuzztime=${FUZZTIME:-10s}
status=0
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "fuzz: $pkg $target ($fuzztime)"
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/gpuprobe-fuzz.log 2>&1; then
      cat /tmp/gpuprobe-fuzz.log
      status=1
    fi
  done
done
exit $status
