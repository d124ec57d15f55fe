#!/usr/bin/env python3
"""Writes a TypeScript module that assigns a dashboard JSON to Grafana's `Dashboard` type.

tsc then rejects unknown fields (excess-property checks on object literals) and wrong types,
which is what Grafana's own schema package can check offline.
Usage: dashboard_to_ts.py DASHBOARD.json OUT.ts
"""
import json
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    dashboard = json.load(f)
with open(sys.argv[2], "w", encoding="utf-8") as out:
    out.write("import type { Dashboard } from '@grafana/schema';\n")
    out.write("export const dashboard: Dashboard = " + json.dumps(dashboard, indent=1) + ";\n")
