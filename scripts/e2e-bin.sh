#!/usr/bin/env bash
# Sourced by the e2e scripts (after they define log and die).
# e2e_binary DEST: puts gpuprobe at DEST. `make e2e` builds the binary once
# and passes it in GPUPROBE_BIN, so the scripts share one build; run by hand,
# a script builds its own from the checkout.
e2e_binary() {
  local dest=$1 repo
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  mkdir -p "$(dirname "$dest")"
  if [ -n "${GPUPROBE_BIN:-}" ]; then
    [ -x "$GPUPROBE_BIN" ] || die "GPUPROBE_BIN=$GPUPROBE_BIN is not an executable"
    cp "$GPUPROBE_BIN" "$dest" || die "copy $GPUPROBE_BIN to $dest"
    log "gpuprobe: the shared build $GPUPROBE_BIN"
  else
    log "building gpuprobe"
    (cd "$repo" && "${GO:-go}" build -o "$dest" ./cmd/gpuprobe) || die "go build ./cmd/gpuprobe"
  fi
}
