#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded time each (FUZZTIME:
# `make test` gives a few seconds a target, `make fuzz` a long run).
#
# Go allows -fuzz on one target per `go test` run, and each `go test -fuzz`
# builds its own instrumented test binary: with ~50 targets that build, not
# the fuzzing, was most of the time. So each package's instrumented binary
# is built once (`go test -c -fuzz=.`) and run once per target, in the
# package's folder (its testdata/fuzz seed corpus is read, and a failing
# input is written, there), with the corpus cache where `go test -fuzz`
# keeps it ($GOCACHE/fuzz/PKG).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
work=$(mktemp -d /tmp/gpuprobe-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
log=$work/log
cache=$(go env GOCACHE)/fuzz
status=0 targets=0 start=$SECONDS

# fuzz_once BIN DIR CACHEDIR TARGET: 0 pass, 1 a finding, 2 the toolchain's
# own "context deadline exceeded" when stopping its workers at -fuzztime
# with no failing input written (a Go fuzzing flake, not a finding).
fuzz_once() {
  if (cd "$2" && "$1" -test.run '^$' -test.fuzz "^$4\$" -test.fuzztime "$fuzztime" -test.fuzzcachedir "$3") >"$log" 2>&1; then
    return 0
  fi
  if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
    return 2
  fi
  return 1
}

# Packages with a Fuzz function in a test file, found without building.
pkgs=$(grep -rlE '^func Fuzz[A-Z0-9_]' --include='*_test.go' . | grep -v '^./\.' | xargs -r -n1 dirname | sort -u)
for dir in $pkgs; do
  pkg=$(go list "$dir")
  bin=$work/$(echo "$pkg" | tr / _).test
  if ! go test -c -fuzz=. -o "$bin" "$dir" >"$log" 2>&1; then
    echo "fuzz: $pkg: build failed"; cat "$log"; status=1; continue
  fi
  for target in $("$bin" -test.list '^Fuzz' | grep '^Fuzz' || true); do
    targets=$((targets + 1))
    echo "fuzz: $pkg $target ($fuzztime)"
    rc=0
    fuzz_once "$bin" "$dir" "$cache/$pkg" "$target" || rc=$?
    if [ "$rc" = 2 ]; then
      echo "fuzz: $target: toolchain deadline while stopping workers (no failing input); running it once more"
      rc=0
      fuzz_once "$bin" "$dir" "$cache/$pkg" "$target" || rc=$?
    fi
    if [ "$rc" != 0 ]; then
      cat "$log"
      status=1
    fi
  done
done
# A listing that found nothing would pass in silence: there are dozens.
if [ "$targets" -lt 20 ]; then
  echo "fuzz: only $targets targets found: the listing is broken" >&2
  status=1
fi
echo "fuzz: $targets targets, ${fuzztime} each, in $((SECONDS - start)) s"
exit $status
