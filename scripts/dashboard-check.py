#!/usr/bin/env python3
"""Static check of the Grafana dashboard (called by scripts/prometheus-e2e.sh).

    dashboard-check.py DASHBOARD.json EXPORTER_DIR [--exprs-out FILE --instance I --job J]

Fails (exit 1) when the dashboard is not well-formed JSON, lacks the
template variables instance and gpu, repeats a panel id, or when any
expression (panel targets and variable queries) names a metric other than
`up` and the gpuprobe_* metrics the exporter declares: every desc("name", ...)
in the non-test Go files of EXPORTER_DIR (exporter/metrics.go and its
siblings, such as exporter/topology.go), prefixed with the `ns` constant.
With --exprs-out it also writes every panel expression, with the dashboard
variables replaced by concrete values, one per line, for a live Prometheus
to evaluate.
"""
import argparse
import glob
import json
import os
import re
import sys

KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "offset", "and", "or", "unless", "atan2", "inf", "nan", "start", "end",
}


def declared_metrics(exporter_dir):
    """The metric names the exporter package declares: desc("name", ...) under ns."""
    files = sorted(f for f in glob.glob(os.path.join(exporter_dir, "*.go")) if not f.endswith("_test.go"))
    src = "\n".join(open(f, encoding="utf-8").read() for f in files)
    m = re.search(r'const\s+ns\s*=\s*"([a-z_]+)"', src)
    if not m:
        sys.exit(f"dashboard-check: no `const ns = \"...\"` in {exporter_dir}/*.go")
    ns = m.group(1)
    names = {f"{ns}_{n}" for n in re.findall(r'\bdesc\(\s*"([a-z0-9_]+)"', src)}
    if not names:
        sys.exit(f"dashboard-check: no desc(\"...\") declarations in {exporter_dir}/*.go")
    return names


def metric_names(expr):
    """Metric names an expression selects (a PromQL skim, enough for dashboards)."""
    s = expr
    m = re.fullmatch(r"\s*label_values\((.*),\s*[A-Za-z_]\w*\s*\)\s*", s, re.S)
    if m:  # Grafana's label_values(SELECTOR, LABEL): LABEL is no metric
        s = m.group(1)
    s = re.sub(r"\$\{[^}]*\}|\$\w+", " ", s)  # Grafana variables
    s = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`', '""', s)  # strings
    s = re.sub(r"\{[^{}]*\}", " ", s)  # label matchers
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)  # ranges and subqueries
    s = re.sub(r"\boffset\s+-?[0-9a-z]+", " ", s)
    names = set()
    for t in re.finditer(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|0x[0-9a-fA-F]+|[A-Za-z_:][A-Za-z0-9_:]*", s):
        tok = t.group(0)
        if tok[0].isdigit() or tok.lower() in KEYWORDS:
            continue
        if re.match(r"\s*\(", s[t.end():]):  # a function or aggregation
            continue
        names.add(tok)
    return names


def walk_panels(panels):
    for p in panels:
        yield p
        yield from walk_panels(p.get("panels", []))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dashboard")
    ap.add_argument("exporter_dir")
    ap.add_argument("--exprs-out")
    ap.add_argument("--instance", default="localhost:10495")
    ap.add_argument("--job", default="gpuprobe")
    a = ap.parse_args()

    problems = []
    try:
        with open(a.dashboard, encoding="utf-8") as f:
            dash = json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL: {a.dashboard} is not well-formed JSON: {e}")
        return 1
    allowed = declared_metrics(a.exporter_dir) | {"up"}

    variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    for want in ("instance", "gpu"):
        if want not in variables:
            problems.append(f"no template variable ${want}")

    exprs = []  # (where, expr)
    for name, v in variables.items():
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query") if isinstance(q, dict) else q
            exprs.append((f"variable ${name}", q or ""))
    ids = {}
    panel_exprs = []
    for p in walk_panels(dash.get("panels", [])):
        if p.get("id") in ids:
            problems.append(f"panel id {p.get('id')} used by {ids[p['id']]!r} and {p.get('title')!r}")
        ids[p.get("id")] = p.get("title")
        for t in p.get("targets", []):
            e = t.get("expr", "")
            if not e.strip():
                problems.append(f"panel {p.get('title')!r} target {t.get('refId')} has no expression")
                continue
            exprs.append((f"panel {p.get('title')!r}", e))
            panel_exprs.append(e)

    used = set()
    for where, e in exprs:
        for n in sorted(metric_names(e)):
            used.add(n)
            if n not in allowed:
                problems.append(f"{where}: metric {n!r} is not declared in {a.exporter_dir} (expr: {e})")
    unused = sorted(allowed - used - {"up"})

    for p in problems:
        print(f"FAIL: {p}")
    if problems:
        return 1
    print(f"PASS: {a.dashboard} is well-formed JSON; {len(panel_exprs)} panel expressions and "
          f"{len(exprs) - len(panel_exprs)} variable queries use {len(used)} metrics, all declared in "
          f"{a.exporter_dir.rstrip('/')}/*.go (or up)")
    if unused:
        print(f"  declared metrics no panel uses: {', '.join(unused)}")

    if a.exprs_out:
        subst = {
            "$job": a.job, "$instance": a.instance, "$gpu": ".*",
            "$__rate_interval": "1m", "$__interval": "15s", "$__range": "1h",
        }
        with open(a.exprs_out, "w", encoding="utf-8") as f:
            for e in panel_exprs:
                for k in sorted(subst, key=len, reverse=True):
                    e = e.replace(k, subst[k])
                if "$" in e:
                    print(f"FAIL: unreplaced variable in {e}")
                    return 1
                f.write(json.dumps(e) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
