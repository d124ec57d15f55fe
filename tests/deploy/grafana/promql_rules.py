#!/usr/bin/env python3
"""Every PromQL expression of a dashboard as a recording rule, for `promtool check rules`.

Grafana's interval variables are replaced by a fixed range first ($__rate_interval -> 5m).
Also prints, one per line on stderr, each codl_* metric name the expressions use, so the caller
can check them against docs/metrics.md.
Usage: promql_rules.py DASHBOARD.json OUT.yaml
"""
import json
import re
import sys

VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}


def exprs(panels):
    for p in panels:
        yield from exprs(p.get("panels", []))
        for t in p.get("targets", []):
            if "expr" in t:
                yield p.get("title", "?"), t["expr"]


with open(sys.argv[1], encoding="utf-8") as f:
    dashboard = json.load(f)
found = list(exprs(dashboard.get("panels", [])))
if not found:
    sys.exit("no PromQL expressions found in " + sys.argv[1])
names = set()
with open(sys.argv[2], "w", encoding="utf-8") as out:
    out.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, (title, e) in enumerate(found):
        for k, v in VARIABLES.items():
            e = e.replace(k, v)
        names.update(re.findall(r"\bcodl_[a-z_]+", e))
        out.write(f"      - record: codl:dashboard_panel_{i}\n")
        out.write(f"        expr: {json.dumps(e)}\n")
for n in sorted(names):
    print(n, file=sys.stderr)
