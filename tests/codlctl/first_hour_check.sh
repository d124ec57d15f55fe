#!/usr/bin/env bash
# What a new user reads, from one real embedded run (controller + agent in codlctl, a cpu
# antagonist, a shell victim with two phases): the default table fits 120 columns and -o wide
# has the rest; the progress names the experiment's metric; trials are numbered from 1 in the
# CSV (with a 0-based trial_index) and tables show ISO times; the summary CSV has one value per
# cell (intensity_kind, no packed phases) and --phases-summary one row per pairing x phase;
# report --output (and the deprecated -o) write the file; validate --plan --db estimates from the
# last run; -q is accepted by submit --watch and watch; agents takes -o wide.
# CSV files are read back with python3's csv module. Usage: first_hour_check.sh CODLCTL
set -u
codlctl=$1
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/codlctl/run_helpers.sh
source "$(dirname "$0")/run_helpers.sh"
ok() { echo "ok   $1"; }
py=/usr/bin/python3
[[ -x $py ]] || py=python3

cat >"$tmp/exp.yaml" <<'YAML'
name: first-hour
victim:
  command: [/bin/sh, -c, 'for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.1; echo "{\"step_time_s\": 0.1, \"phases\": {\"read_s\": 0.02, \"compute_s\": 0.08}}"; done']
  warmup_steps: 1
  timeout: 30s
antagonists:
  - name: cores
    injector: cpu
    options: {threads: "1"}
    levels: [0.5]
repetitions: 3
warmup_trials: 0
settle: 0.3s
calibration: {duration: 1s}
YAML
db=$tmp/r.db

# validate before any run: says it guesses, and "1 antagonist" (not "1 antagonists").
"$codlctl" validate "$tmp/exp.yaml" --plan --db "$db" >"$tmp/plan0" 2>&1
if grep -qF "1 antagonist, 6 trials (3 baselines)" "$tmp/plan0" &&
  grep -qF "a guess: no earlier run of it in $db" "$tmp/plan0" && [[ ! -e $db ]]; then
  ok validate-plan-guesses
else
  fail "validate-plan-guesses: $(head -c 600 "$tmp/plan0")"
fi

# stderr is a file, so the progress is one line per event.
if ! "$codlctl" run "$tmp/exp.yaml" --db "$db" --scratch-root "$tmp" >"$tmp/run.out" 2>"$tmp/run.err"; then
  fail "run: exit $?: $(tail -c 600 "$tmp/run.err")"
fi
if grep -qE 'trial 1/6 [a-z@.0-9]+: (done|flagged), elapsed [0-9.]+ ms' "$tmp/run.err"; then
  ok progress-names-the-metric
else
  fail "progress-names-the-metric: $(grep -m3 'trial ' "$tmp/run.err")"
fi
widest=$(awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' "$tmp/run.out")
if [[ $widest -le 120 ]] && grep -qF "achieved (% of target)" "$tmp/run.out" &&
  ! grep -qE '^pairing .*levels' "$tmp/run.out"; then
  ok narrow-table
else
  fail "narrow-table: widest line $widest: $(head -c 900 "$tmp/run.out")"
fi
"$codlctl" results latest --db "$db" -o wide >"$tmp/wide.out" 2>&1
if grep -qE '^pairing +levels +n +elapsed .* cores +mde$' "$tmp/wide.out" &&
  grep -qF "% of target)" "$tmp/wide.out"; then
  ok wide-table
else
  fail "wide-table: $(head -c 900 "$tmp/wide.out")"
fi

# Trials from 1, with the 0-based index beside; read back as a user would.
"$codlctl" results latest --db "$db" --trials -o csv >"$tmp/trials.csv"
if "$py" - "$tmp/trials.csv" <<'PY'; then
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert [int(r["trial"]) for r in rows] == list(range(1, 7)), [r["trial"] for r in rows]
assert [int(r["trial_index"]) for r in rows] == list(range(0, 6))
assert all(int(r["started_unix_ms"]) > 1.7e12 for r in rows)
PY
  ok trials-from-1
else
  fail "trials-from-1: $(head -c 600 "$tmp/trials.csv")"
fi
"$codlctl" results latest --db "$db" --trials -o table >"$tmp/trials.table"
if grep -qE ' 20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z' "$tmp/trials.table" &&
  ! grep -qF "_unix_ms" "$tmp/trials.table" && grep -qE '^experiment_id .* started +finished' "$tmp/trials.table"; then
  ok table-times-are-iso8601
else
  fail "table-times-are-iso8601: $(head -c 600 "$tmp/trials.table")"
fi

# The summary CSV: one value per cell; phases in a table of their own.
"$codlctl" results latest --db "$db" -o csv >"$tmp/summary.csv"
"$codlctl" results latest --db "$db" --phases-summary >"$tmp/phases.csv"
if "$py" - "$tmp/summary.csv" "$tmp/phases.csv" <<'PY'; then
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
cols = rows[0].keys()
assert "median_metric_s" not in cols and "phase_slowdowns" not in cols, list(cols)
cores = [r for r in rows if r["antagonist"] == "cores"]
assert cores and all(r["intensity_kind"] == "level" and float(r["level"]) == 0.5 for r in cores)
base = [r for r in rows if r["baseline"] == "1"]
assert len(base) == 1 and base[0]["intensity_kind"] == "" and base[0]["level"] == ""
assert not any(";" in v for r in rows for v in r.values() if v), "a packed cell"
phases = list(csv.DictReader(open(sys.argv[2], newline="")))
# One row per measured pairing x phase (a pairing whose trials were all flagged has none).
measured = sorted({r["pairing"] for r in rows if int(r["n"]) > 0})
assert "baseline" in measured, rows
want = sorted((p, ph) for p in measured for ph in ("compute_s", "read_s"))
assert sorted((r["pairing"], r["phase"]) for r in phases) == want, (want, phases)
for r in phases:
    assert float(r["median_s"]) > 0 and float(r["baseline_median_s"]) > 0
    assert abs(float(r["slowdown"]) - float(r["median_s"]) / float(r["baseline_median_s"])) < 1e-9
PY
  ok tidy-summary
else
  fail "tidy-summary: $(head -c 400 "$tmp/summary.csv") / $(head -c 400 "$tmp/phases.csv")"
fi

# report: --output FILE; -o FILE still works, and says it is deprecated.
"$codlctl" report latest --db "$db" --output "$tmp/a.html" 2>"$tmp/rep.err"
"$codlctl" report latest --db "$db" -o "$tmp/b.html" 2>"$tmp/rep_o.err"
if [[ -s $tmp/a.html && -s $tmp/b.html ]] && ! grep -q deprecated "$tmp/rep.err" &&
  grep -qF "note: -o FILE is deprecated" "$tmp/rep_o.err"; then
  ok report-output
else
  fail "report-output: $(cat "$tmp/rep.err" "$tmp/rep_o.err" | head -c 400)"
fi

# validate --plan after the run: the last run's victim time, from --db.
"$codlctl" validate "$tmp/exp.yaml" --plan --db "$db" >"$tmp/plan1" 2>&1
if grep -qF "as in the last run in $db" "$tmp/plan1"; then
  ok validate-plan-uses-last-run
else
  fail "validate-plan-uses-last-run: $(head -c 600 "$tmp/plan1")"
fi

# -q and -o wide where they belong: parsed (then the controller is unreachable: exit 3, not 2).
dead=127.0.0.1:1
for args in "submit $tmp/exp.yaml --watch -q" "watch latest -q" "agents -o wide"; do
  # shellcheck disable=SC2086
  "$codlctl" $args --controller "$dead" >/dev/null 2>"$tmp/q.err"
  rc=$?
  if [[ $rc -eq 3 ]]; then ok "accepted: $args"; else fail "accepted: $args: exit $rc: $(head -c 300 "$tmp/q.err")"; fi
done
"$codlctl" results latest --db "$db" --trials -o wide >/dev/null 2>"$tmp/w.err"
if [[ $? -eq 2 ]] && grep -qF -- "-o wide is a view of the summary table" "$tmp/w.err"; then
  ok wide-refused-for-long-formats
else
  fail "wide-refused-for-long-formats: $(head -c 300 "$tmp/w.err")"
fi

echo "$((13 - fails)) passed, $fails failed"
[[ $fails -eq 0 ]]
