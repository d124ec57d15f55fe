#!/usr/bin/env python3
"""Reads a long-format export the way a user would: python3's csv module (and pandas when the
Debian package is installed; it is not required). Checks the shape the docs promise and prints
what it found; exit 1 on any mismatch.
Usage: read_tidy.py FILE KIND EXPECTED_ROWS   (KIND: trials | phases)"""
import csv
import sys

path, kind, expected_rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
REQUIRED = {
    "trials": ["experiment_id", "experiment", "trial", "repetition", "pairing", "role",
               "antagonists", "intensities", "state", "metric", "value", "flagged", "flag_reasons",
               "excluded", "exclude_reason"],
    "phases": ["experiment_id", "trial", "pairing", "role", "phase", "seconds"],
}[kind]
NUMERIC = {"trials": ["trial", "repetition", "value", "wall_s"],
           "phases": ["trial", "repetition", "seconds"]}[kind]

with open(path, newline="") as f:
    rows = list(csv.DictReader(f))
errors = []
if len(rows) != expected_rows:
    errors.append(f"{len(rows)} rows, want {expected_rows}")
missing = [c for c in REQUIRED if rows and c not in rows[0]]
if missing:
    errors.append(f"missing columns {missing}")
for i, r in enumerate(rows):
    if None in r or None in r.values():
        errors.append(f"row {i}: column count differs from the header")
    for c in NUMERIC:
        if r.get(c):
            float(r[c])  # raises on a malformed number
    if kind == "trials":
        if r["role"] not in ("baseline", "interfered"):
            errors.append(f"row {i}: role {r['role']!r}")
        if (r["flagged"] == "1") != bool(r["flag_reasons"]):
            errors.append(f"row {i}: flagged {r['flagged']!r} with reasons {r['flag_reasons']!r}")
        if r["excluded"] == "1" and not r["exclude_reason"]:
            errors.append(f"row {i}: excluded without a reason")
        if r["excluded"] == "0" and not r["value"]:
            errors.append(f"row {i}: counted without a value")

try:
    import pandas  # optional: python3-pandas
    frame = pandas.read_csv(path)
    if len(frame) != expected_rows:
        errors.append(f"pandas read {len(frame)} rows")
    print(f"pandas: {len(frame)} rows, dtypes ok")
except ImportError:
    print("pandas not installed: csv module only")

print(f"{kind}: {len(rows)} rows")
for e in errors:
    print("FAIL", e)
sys.exit(1 if errors else 0)
