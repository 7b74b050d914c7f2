#!/usr/bin/env bash
# landing-e2e.sh: the daemon's landing page in a real browser. Debian's
# headless Chromium (installed if missing) loads `/` of
# `gpuprobe serve --simulate dgx-h100:row-remap-pending=3`:
#   - the DOM Chromium built (--dump-dom) names the failing check
#     (gpu.row_remap), its finding and fix, the per-GPU table, the topology
#     matrix and the time of the last collection;
#   - a screenshot is taken and must be a PNG of the window's size with more
#     than a hundred distinct pixel rows (a page that failed to render is
#     blank); LANDING_SCREENSHOT=FILE keeps it for a person to look at;
#   - the DOM has no script, image or link element (nothing external to load).
# One PASS/FAIL line per assertion; exit 1 on any failure. Stops what it
# started (by PID) and removes its temp dir on exit.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
GO=${GO:-go}
# shellcheck source=scripts/e2e-lib.sh
. scripts/e2e-lib.sh
e2e_init landing-e2e

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  log "chromium missing: installing Debian's chromium package"
  # shellcheck source=scripts/apt.sh
  . scripts/apt.sh
  apt_install chromium fonts-dejavu-core || die "could not install chromium (apt_install chromium)"
  CHROMIUM=$(command -v chromium) || die "chromium still missing after installing it"
fi
command -v python3 >/dev/null || die "python3 not found"
log "$("$CHROMIUM" --version 2>/dev/null | head -1)"

e2e_binary "$W/gpuprobe"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$W/gpuprobe" serve --simulate dgx-h100:row-remap-pending=3 --web.listen-address "127.0.0.1:$PORT" \
  --collect.interval 1h 2>"$W/serve.log" &
PIDS+=($!)
URL="http://127.0.0.1:$PORT/"
for _ in $(seq 100); do
  curl -fs -o /dev/null "http://127.0.0.1:$PORT/report" && break
  sleep 0.1
done
curl -fs -o /dev/null "http://127.0.0.1:$PORT/report" || die "the daemon published no report (log: $(tail -3 "$W/serve.log"))"

# Chromium as root needs --no-sandbox; a private profile keeps it off $HOME.
chrome() {
  timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
    --user-data-dir="$W/profile" --window-size=1400,1200 "$@" 2>>"$W/chromium.log"
}

chrome --dump-dom "$URL" >"$W/dom.html" || die "chromium --dump-dom failed ($(tail -3 "$W/chromium.log"))"
for want in 'gpuprobe on ' 'class="status fail">FAIL<' 'gpu.row_remap' 'GPU 3 (0000:5d:00.0): row remap pending' \
  'fix:</b> drain the node and reset the GPU' '<h2>GPUs</h2>' '<h2>Topology</h2>' '<th>GPU7</th>' 'Last collection: 20'; do
  if grep -qF -- "$want" "$W/dom.html"; then pass "rendered DOM has: $want"; else fail "rendered DOM lacks: $want"; fi
done
if grep -qiE '<script|<img|<link' "$W/dom.html"; then fail "the page has a script, image or link element"; else pass "no script, image or external link in the DOM"; fi

(cd "$W" && chrome --screenshot="$W/landing.png" "$URL" >/dev/null) || fail "chromium --screenshot failed"
if [ -s "$W/landing.png" ]; then
  python3 - "$W/landing.png" <<'PY' && pass "screenshot: a 1400x1200 PNG with content ($(stat -c %s "$W/landing.png") bytes)" || fail "screenshot is not a rendered page"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1400, 1200), f"size {w}x{h}"
# Decompress the image data: a blank page is one colour and compresses to
# almost nothing; the report's tables and text make many distinct rows.
idat, i = b"", 8
while i < len(data):
    n, = struct.unpack(">I", data[i:i+4]); kind = data[i+4:i+8]
    if kind == b"IDAT": idat += data[i+8:i+8+n]
    i += 12 + n
raw = zlib.decompress(idat)
stride = len(raw) // h
rows = {raw[r*stride+1:(r+1)*stride] for r in range(h)}
assert len(rows) > 100, f"only {len(rows)} distinct pixel rows: blank page?"
PY
else
  fail "no screenshot written"
fi
if [ -n "${LANDING_SCREENSHOT:-}" ]; then cp "$W/landing.png" "$LANDING_SCREENSHOT" && log "screenshot kept at $LANDING_SCREENSHOT"; fi

[ "$FAILS" -eq 0 ] || exit 1
log "all landing-page checks passed"
