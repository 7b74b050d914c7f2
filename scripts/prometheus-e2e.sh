#!/usr/bin/env bash
# prometheus-e2e.sh: gpuprobe's metrics, alert rules and dashboard against a
# real Prometheus (Debian's prometheus package, which brings promtool; it is
# installed if missing). Everything listens on 127.0.0.1 only.
#
#   (a) promtool check metrics on real scrapes of `gpuprobe serve --simulate`
#       (dgx-h100; with --collector.nvlink.per-link; with faults, which add the
#       XID series) prints nothing and exits 0; the series counts are printed
#       and the default exposition must stay <= 1000 series.
#   (b) promtool check rules / test rules / check config on contrib/prometheus;
#       the dashboard is well-formed JSON and uses only declared metrics.
#   (c) a real Prometheus scrapes `gpuprobe serve --simulate-file F
#       --collect.interval 2s` (PROM_E2E_COLLECT_INTERVAL) every second with
#       the rules loaded: the node is
#       healthy, every dashboard expression evaluates, then faults written
#       into F (row-remap-pending=3, then also xid=79@2) turn
#       gpuprobe_node_healthy to 0 and fire GpuprobeRowRemapPending and
#       GpuprobeXIDCritical in /api/v1/alerts; clearing F makes it healthy again.
#       Prometheus loads a copy of the rules with every `for:` set to 0s (the
#       real ones wait minutes; the two availability alerts keep 30s, see
#       below), so this part tests the expressions and the wiring, and the
#       `for:` durations are covered by promtool test rules.
#
# One PASS/FAIL line per assertion; exit 1 on any failure. Stops what it
# started (by PID) and removes its temp dir on exit. Takes 20-30 s warm.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
GO=${GO:-go}
MAX_SERIES=${PROM_E2E_MAX_SERIES:-1000}
# The daemon's cycle deadline is its interval. The simulated topology
# collector alone takes 0.5-1.2 s a cycle on a loaded 2-core machine, so with
# 1s many cycles overrun and the daemon (rightly) serves the previous, stale
# data, which makes fault detection slow and flaky; 2s leaves room.
INTERVAL=${PROM_E2E_COLLECT_INTERVAL:-2s}
# shellcheck source=scripts/e2e-lib.sh
. scripts/e2e-lib.sh
e2e_init prom-e2e

# --- tools -------------------------------------------------------------------
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  log "prometheus/promtool missing: installing the prometheus package"
  # shellcheck source=scripts/apt.sh
  . scripts/apt.sh
  apt_install prometheus || die "could not install prometheus (apt_install prometheus)"
  if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
    die "prometheus or promtool still missing after installing the prometheus package"
  fi
fi
for tool in curl python3; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
# The interpreter itself, not a version-manager shim (pyenv's costs ~1 s a call).
PY=$(python3 -c 'import sys; print(sys.executable)') || die "python3 does not run"
log "$(promtool --version 2>&1 | head -1)"

e2e_binary "$W/gpuprobe"

freeport() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_gpuprobe VAR LOGNAME ARGS...: starts `gpuprobe serve ARGS` on a free
# loopback port and stores the port in VAR (no subshell: PIDS must see it).
start_gpuprobe() {
  local var=$1 name=$2 port
  shift 2
  port=$(freeport) || die "no free port"
  # TMPDIR: a daemon stopped mid-collection leaves its simulated sysfs tree
  # (gpuprobe-sim-sysfs-*) behind; keep it inside $W.
  mkdir -p "$W/tmp"
  TMPDIR="$W/tmp" "$W/gpuprobe" serve --web.listen-address "127.0.0.1:$port" "$@" >"$W/$name.log" 2>&1 &
  PIDS+=($!)
  printf -v "$var" %s "$port"
}

# scrape PORT FILE: waits (10 s at most) until /metrics holds a judged
# collection, then saves it.
scrape() {
  local _
  for _ in $(seq 1 50); do
    if curl -fsS --max-time 2 "http://127.0.0.1:$1/metrics" >"$2" 2>/dev/null &&
      grep -q '^gpuprobe_node_healthy ' "$2"; then
      return 0
    fi
    sleep 0.2
  done
  return 1
}

series() { grep -vc '^#' "$1"; }
gseries() { grep -c '^gpuprobe_' "$1"; }

# --- (a) promtool check metrics on real scrapes -------------------------------
# lint_metrics FILE WHAT FIGURES: promtool check metrics must say nothing.
lint_metrics() {
  expect_silent "promtool check metrics, $2 ($3)" promtool check metrics <"$1"
}
FAULTS="dgx-h100:xid=79@2,row-remap-pending=3,nvlink-down=1,gpu-lost=5,fabric-incomplete"
start_gpuprobe P_DEF default --simulate dgx-h100
start_gpuprobe P_LINK perlink --simulate dgx-h100 --collector.nvlink.per-link
start_gpuprobe P_FAULT faults --simulate "$FAULTS"
for v in "default:$P_DEF:--simulate dgx-h100" \
  "perlink:$P_LINK:--simulate dgx-h100 --collector.nvlink.per-link" \
  "faults:$P_FAULT:--simulate $FAULTS"; do
  name=${v%%:*}
  rest=${v#*:}
  port=${rest%%:*}
  desc=${rest#*:}
  if ! scrape "$port" "$W/$name.prom"; then
    fail "scrape of 'gpuprobe serve $desc': no judged /metrics within 10 s; log:"
    sed 's/^/    /' "$W/$name.log"
    continue
  fi
  lint_metrics "$W/$name.prom" "'gpuprobe serve $desc'" "$(series "$W/$name.prom") series, $(gseries "$W/$name.prom") gpuprobe_*"
done
# The exposition a real H100 (driver 580) produced, captured on the lent GPU
# (its first line names the source and is not exposition).
grep -v '^# source:' exporter/testdata/realgpu-h100-580-metrics.prom >"$W/realgpu.prom"
lint_metrics "$W/realgpu.prom" "a real H100's exposition (exporter/testdata/realgpu-h100-580-metrics.prom)" "$(series "$W/realgpu.prom") series"
if [ -s "$W/default.prom" ]; then
  n=$(series "$W/default.prom")
  if [ "$n" -le "$MAX_SERIES" ]; then
    pass "default exposition of a simulated 8x H100 node: $n series ($(gseries "$W/default.prom") gpuprobe_*, the rest go_/process_), <= $MAX_SERIES"
  else
    fail "default exposition of a simulated 8x H100 node: $n series, more than $MAX_SERIES"
  fi
fi
if [ -s "$W/faults.prom" ]; then
  if grep -q '^gpuprobe_gpu_xid_errors_total{.*severity="critical".*xid="79"} ' "$W/faults.prom"; then
    pass "faulted scrape carries gpuprobe_gpu_xid_errors_total{severity=\"critical\",xid=\"79\"}"
  else
    fail "faulted scrape has no gpuprobe_gpu_xid_errors_total{severity=\"critical\",xid=\"79\"}"
  fi
fi

# --- (b) rules, config, dashboard ---------------------------------------------
RULES=contrib/prometheus/gpuprobe.rules.yml
# expect_ok DESCRIPTION CMD...: PASS with the SUCCESS lines of CMD's output,
# or FAIL with all of it.
expect_ok() {
  local desc=$1 out
  shift
  if out=$("$@" 2>&1); then
    pass "$desc: $(printf '%s\n' "$out" | grep -o 'SUCCESS.*' | paste -sd';' | sed 's/;/; /g')"
  else
    fail "$desc:"
    printf '%s\n' "$out" | sed 's/^/    /'
  fi
}
expect_ok "promtool check rules $RULES" promtool check rules "$RULES"
expect_ok "promtool test rules contrib/prometheus/gpuprobe.rules.test.yml" \
  promtool test rules contrib/prometheus/gpuprobe.rules.test.yml
# The fleet rules (several nodes: share failing per check and partition, a
# fleet-wide regression, suppressed drains) are judged by their unit tests;
# the single simulated node below cannot exercise them.
FLEET=contrib/prometheus/gpuprobe-fleet.rules.yml
expect_ok "promtool check rules $FLEET" promtool check rules "$FLEET"
expect_ok "promtool test rules contrib/prometheus/gpuprobe-fleet.rules.test.yml" \
  promtool test rules contrib/prometheus/gpuprobe-fleet.rules.test.yml
expect_ok "promtool check config contrib/prometheus/prometheus.yml" \
  promtool check config contrib/prometheus/prometheus.yml

# --- (c) a real Prometheus scraping a real daemon -----------------------------
F=$W/simulate
echo dgx-h100 >"$F"
start_gpuprobe P_E2E e2e --simulate-file "$F" --collect.interval "$INTERVAL"
PPORT=$(freeport) || die "no free port"

out=$("$PY" scripts/dashboard-check.py contrib/grafana/gpuprobe-dashboard.json exporter \
  --exprs-out "$W/exprs" --instance "127.0.0.1:$P_E2E" --job gpuprobe 2>&1)
rc=$?
printf '%s\n' "$out" | while IFS= read -r l; do log "$l"; done
[ $rc -eq 0 ] || fail "dashboard check (above)"

# Test-only copy of the rules: every for: set to 0s, so alerts fire within a
# few seconds; except the two about gpuprobe's own availability
# (GpuprobeCollectionFailing, GpuprobeTargetDown), which keep 30s: on a loaded
# CI machine an occasional cycle overruns its deadline (see INTERVAL) or a
# scrape is late, and one late cycle or scrape is exactly what those alerts'
# `for:` exists to ignore.
awk '/^[[:space:]]*- alert:/ { name = $3 }
     /^[[:space:]]*for:/ { sub(/for:.*/, name ~ /^Gpuprobe(CollectionFailing|TargetDown)$/ ? "for: 30s" : "for: 0s") }
     { print }' "$RULES" >"$W/rules.yml"
if [ "$(grep -c 'for: 0s' "$W/rules.yml")" -ne "$(($(grep -c '^[[:space:]]*for:' "$RULES") - 2))" ] ||
  [ "$(grep -c 'for: 30s' "$W/rules.yml")" -ne 2 ]; then
  die "could not make the test copy of the rules (for: 0s / 30s)"
fi
cat >"$W/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $W/rules.yml
scrape_configs:
  - job_name: gpuprobe
    static_configs:
      - targets: ["127.0.0.1:$P_E2E"]
EOF
prometheus --config.file="$W/prometheus.yml" --storage.tsdb.path="$W/data" \
  --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$W/prometheus.log" 2>&1 &
PIDS+=($!)
PROM=http://127.0.0.1:$PPORT

# query EXPR: prints "status<TAB>n<TAB>first value" of an instant query.
query() {
  curl -fsS --max-time 5 -G "$PROM/api/v1/query" --data-urlencode "query=$1" 2>/dev/null |
    "$PY" -c 'import json,sys
d=json.load(sys.stdin); r=d.get("data",{}).get("result",[])
v=r[0]["value"][1] if r and isinstance(r,list) and "value" in r[0] else ""
print(d.get("status","?"), len(r) if isinstance(r,list) else 1, v, sep="\t")' 2>/dev/null || printf 'error\t0\t\n'
}
value() { query "$1" | cut -f3; }
# firing NAME [LABEL=VALUE]: prints the firing alerts named NAME (and LABEL=VALUE).
firing() {
  curl -fsS --max-time 5 "$PROM/api/v1/alerts" 2>/dev/null | "$PY" -c 'import json,sys
name=sys.argv[1]; lv=sys.argv[2] if len(sys.argv)>2 else ""
for a in json.load(sys.stdin)["data"]["alerts"]:
    l=a["labels"]
    if a["state"]!="firing" or (name!="*" and l.get("alertname")!=name): continue
    if lv and l.get(lv.split("=")[0])!=lv.split("=",1)[1]: continue
    print(l["alertname"]+"{"+",".join(k+"="+l[k] for k in sorted(l) if k!="alertname")+"}")' "$@" 2>/dev/null
}
# wait_for SECONDS CMD...: retries CMD every 0.25 s until it succeeds.
wait_for() {
  local end
  end=$(awk -v t="$(date +%s.%N)" -v s="$1" 'BEGIN{printf "%.2f", t+s}')
  shift
  while ! "$@"; do
    if awk -v t="$(date +%s.%N)" -v e="$end" 'BEGIN{exit !(t>e)}'; then
      return 1
    fi
    sleep 0.25
  done
}
is_ready() { curl -fsS --max-time 1 "$PROM/-/ready" >/dev/null 2>&1; }
healthy_is() { [ "$(value "gpuprobe_node_healthy")" = "$1" ]; }
alert_fires() { [ -n "$(firing "$@")" ]; }

if wait_for 20 is_ready; then
  pass "prometheus ready on $PROM, scraping gpuprobe on 127.0.0.1:$P_E2E"
else
  log "prometheus log:"
  sed 's/^/    /' "$W/prometheus.log"
  die "prometheus not ready on $PROM within 20 s"
fi
if wait_for 20 healthy_is 1; then
  pass "gpuprobe_node_healthy = 1 through /api/v1/query (dgx-h100, no fault)"
else
  fail "gpuprobe_node_healthy never became 1 within 20 s (now: '$(value gpuprobe_node_healthy)'; up: '$(value 'up{job="gpuprobe"}')')"
  sed 's/^/    /' "$W/e2e.log" "$W/prometheus.log"
  exit 1
fi
n=$(value 'scrape_samples_scraped{job="gpuprobe"}')
g=$(value 'count({job="gpuprobe", __name__=~"gpuprobe_.+"})')
if [ -n "$n" ] && [ "$n" -le "$MAX_SERIES" ]; then
  pass "one scrape = $n series (scrape_samples_scraped; $g gpuprobe_*), <= $MAX_SERIES"
else
  fail "one scrape = '$n' series (scrape_samples_scraped), want <= $MAX_SERIES"
fi
if alert_fires '*'; then
  fail "alerts firing on a healthy node: $(firing '*' | tr '\n' ' ')"
else
  pass "no alert firing on the healthy node"
fi

# Every dashboard expression must evaluate on the live server.
sleep 2 # two more samples for rate()/increase() windows
out=$("$PY" - "$PROM" "$W/exprs" <<'PYEOF'
import json, sys, urllib.parse, urllib.request
prom, path = sys.argv[1], sys.argv[2]
exprs = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
bad, empty = [], []
for e in exprs:
    try:
        url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": e})
        d = json.load(urllib.request.urlopen(url, timeout=5))
        ok = d.get("status") == "success"
    except Exception as err:  # HTTP 400 for a parse error, and the like
        ok, d = False, {"error": str(err)}
    if not ok:
        bad.append(f"{e}: {d.get('error', d)}")
    elif not d["data"]["result"]:
        empty.append(e)
for b in bad:
    print("BAD\t" + b)
print(f"SUMMARY\t{len(exprs)}\t{len(exprs) - len(empty) - len(bad)}\t{len(empty)}")
for e in empty:
    print("EMPTY\t" + e)
PYEOF
)
summary=$(grep '^SUMMARY' <<<"$out")
if [ -z "$summary" ]; then
  fail "could not evaluate the dashboard expressions: $out"
elif grep -q '^BAD' <<<"$out"; then
  while IFS= read -r l; do fail "dashboard expression does not evaluate: ${l#BAD?}"; done < <(grep '^BAD' <<<"$out")
else
  IFS=$'\t' read -r _ total withdata nempty <<<"$summary"
  pass "all $total dashboard expressions evaluate on the live Prometheus ($withdata with data, $nempty empty on a healthy simulated H100 node: per-link, XID and pre-Ampere panels, the not-passing table)"
  grep '^EMPTY' <<<"$out" | while IFS= read -r l; do log "  empty: ${l#EMPTY?}"; done
fi

# Fault 1: a pending row remap on GPU 3.
echo "dgx-h100:row-remap-pending=3" >"$F"
if wait_for 20 healthy_is 0; then
  pass "after writing dgx-h100:row-remap-pending=3: gpuprobe_node_healthy = 0"
else
  fail "gpuprobe_node_healthy did not become 0 within 20 s of the fault (now: '$(value gpuprobe_node_healthy)')"
fi
if wait_for 20 alert_fires GpuprobeRowRemapPending gpu=3; then
  pass "/api/v1/alerts: $(firing GpuprobeRowRemapPending gpu=3) firing"
else
  fail "GpuprobeRowRemapPending{gpu=\"3\"} not firing within 20 s; firing: $(firing '*' | tr '\n' ' ')"
fi
if wait_for 10 alert_fires GpuprobeNodeUnhealthy; then
  pass "/api/v1/alerts: $(firing GpuprobeNodeUnhealthy) firing"
else
  fail "GpuprobeNodeUnhealthy not firing; firing: $(firing '*' | tr '\n' ' ')"
fi
others=$(firing '*' | grep -v -e '^GpuprobeRowRemapPending{' -e '^GpuprobeNodeUnhealthy{')
if [ -z "$others" ]; then
  pass "no other alert firing for a row-remap fault"
else
  fail "unexpected alerts firing: $(tr '\n' ' ' <<<"$others")"
fi

# Fault 2: plus a critical XID 79 on GPU 2 (a counter series that is new).
echo "dgx-h100:row-remap-pending=3,xid=79@2" >"$F"
if wait_for 20 alert_fires GpuprobeXIDCritical gpu=2; then
  pass "after adding xid=79@2: $(firing GpuprobeXIDCritical gpu=2) firing"
else
  fail "GpuprobeXIDCritical{gpu=\"2\"} not firing within 20 s; firing: $(firing '*' | tr '\n' ' ')"
fi

# Clear the faults: healthy again.
echo "dgx-h100" >"$F"
if wait_for 20 healthy_is 1; then
  pass "after clearing the faults: gpuprobe_node_healthy = 1 again"
else
  fail "gpuprobe_node_healthy did not return to 1 within 20 s (now: '$(value gpuprobe_node_healthy)')"
fi

# A running Slurm job: the simulated job 4242 (alice) with a rank on each of
# GPUs 0-3 at 96-98% (sim/spec/job.go, job-healthy). The per-job recording
# rules, evaluated by the live Prometheus over live scrapes, attribute those
# four GPUs and their utilisation to the job, and nothing to GPUs 4-7.
echo "dgx-h100:job-healthy" >"$F"
job_gpus_are() { [ "$(value 'slurm_job:gpuprobe_gpus:count{job_id="4242",user="alice"}')" = "$1" ]; }
if wait_for 20 job_gpus_are 4; then
  pass "after writing dgx-h100:job-healthy: slurm_job:gpuprobe_gpus:count{job_id=\"4242\",user=\"alice\"} = 4"
else
  fail "slurm_job:gpuprobe_gpus:count for job 4242 not 4 within 20 s (now: '$(value 'slurm_job:gpuprobe_gpus:count{job_id="4242"}')'; job_info series: '$(query 'gpuprobe_gpu_job_info' | cut -f2)')"
fi
avg=$(value 'slurm_job:gpuprobe_gpu_utilization_ratio:avg{job_id="4242"}')
if awk -v v="$avg" 'BEGIN{exit !(v != "" && v >= 0.94 && v <= 1)}'; then
  pass "slurm_job:gpuprobe_gpu_utilization_ratio:avg{job_id=\"4242\"} = $avg (the scenario's 96-98%, jitter +-2)"
else
  fail "slurm_job:gpuprobe_gpu_utilization_ratio:avg{job_id=\"4242\"} = '$avg', want 0.94..1"
fi
n=$(query 'job_gpu:gpuprobe_gpu_utilization_ratio{gpu=~"[4-7]"}' | cut -f2)
if [ "$n" = 0 ]; then
  pass "no GPU outside the job is attributed to it (job_gpu:...{gpu=~\"[4-7]\"}: none)"
else
  fail "job_gpu:gpuprobe_gpu_utilization_ratio has $n series for GPUs 4-7, which run no job"
fi
echo "dgx-h100" >"$F"

log "collection cycles that overran their $INTERVAL deadline during the run: $(value 'gpuprobe_collect_failures_total') of $(value 'gpuprobe_collections_total')"
if [ -s "$W/prometheus.log" ] && grep -qi 'level=error' "$W/prometheus.log"; then
  fail "prometheus logged errors:"
  grep -i 'level=error' "$W/prometheus.log" | sed 's/^/    /'
fi
if [ "$FAILS" -ne 0 ]; then
  log "prometheus-e2e: $FAILS FAILED"
  exit 1
fi
log "prometheus-e2e: all passed"
