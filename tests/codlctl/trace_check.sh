#!/usr/bin/env bash
# victim.trace end to end, with real processes: an embedded `codlctl run` of an unmodified
# PyTorch script (experiments/victims/plain_train.py under `python3 -m codl.run`) beside a cpu
# antagonist. The first trial of each pairing keeps a profiler trace; `codlctl trace` writes it
# as Chrome-trace JSON with codl.step#K ranges and, for the interfered trial, the antagonist's
# achieved rate as a counter track; a trial without a trace says so and exits 1.
# Usage: trace_check.sh CODLCTL REPO   (exit 77: no torch for /usr/bin/python3)
set -u
codlctl=$1
repo=$2
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/codlctl/run_helpers.sh
source "$(dirname "$0")/run_helpers.sh"
py=/usr/bin/python3
if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "SKIP: $py cannot import torch (Debian's python3-torch)"
  exit 77
fi

cat >"$tmp/exp.yaml" <<YAML
name: trace-check
victim:
  command: [$py, -m, codl.run, --warmup-steps, "2", $repo/experiments/victims/plain_train.py,
            --steps, "10", --workers, "0", --width, "8"]
  trace: {steps: 3}
  timeout: 120s
antagonists:
  - name: cores
    injector: cpu
    options: {threads: "1"}
    levels: [0.5]
repetitions: 2
warmup_trials: 0
settle: 0.3s
calibration: {duration: 1s}
YAML
db=$tmp/t.db
if ! "$codlctl" run "$tmp/exp.yaml" --db "$db" --scratch-root "$tmp" -q >"$tmp/run.out" 2>"$tmp/run.err"; then
  fail "run: $(tail -c 800 "$tmp/run.err")"
fi
"$codlctl" results latest --db "$db" --trials -o csv >"$tmp/trials.csv"
# The first trial of each pairing (numbered from 1, as --trials numbers them).
first_base=$(awk -F, 'NR > 1 && $6 == "baseline" { print $3; exit }' "$tmp/trials.csv")
first_cores=$(awk -F, 'NR > 1 && $6 == "cores@0.5" { print $3; exit }' "$tmp/trials.csv")
second_cores=$(awk -F, 'NR > 1 && $6 == "cores@0.5" { n++; if (n == 2) { print $3; exit } }' "$tmp/trials.csv")
if [[ -z $first_base || -z $first_cores || -z $second_cores ]]; then
  fail "plan: $(head -c 600 "$tmp/trials.csv")"
fi

check_trace() {  # NAME TRIAL WANT_COUNTERS
  local name=$1 trial=$2 counters=$3
  if ! "$codlctl" trace latest --db "$db" --trial "$trial" -o "$tmp/$name.json" 2>"$tmp/$name.err"; then
    fail "$name: trace --trial $trial: $(head -c 400 "$tmp/$name.err")"
    return
  fi
  if "$py" - "$tmp/$name.json" "$counters" <<'PY'; then
import json, sys
trace = json.load(open(sys.argv[1]))
events = trace["traceEvents"]
steps = sorted(e["name"] for e in events if e.get("ph") == "X" and e.get("name", "").startswith("codl.step#"))
assert steps == ["codl.step#2", "codl.step#3", "codl.step#4"], steps
assert any(e.get("name") == "ai.compute.forward" for e in events), "no forward ranges"
counters = [e for e in events if e.get("ph") == "C"]
if sys.argv[2] == "yes":
    assert counters and all(e["name"].startswith("cores achieved (core-s/s)") for e in counters), counters[:3]
    first = min(e["ts"] for e in events if e.get("name") == "codl.step#2")
    last = max(e["ts"] + e["dur"] for e in events if e.get("name") == "codl.step#4")
    inside = [e for e in counters if first - 2e6 <= e["ts"] <= last + 2e6]
    assert inside, "no antagonist sample near the traced steps: clocks not aligned"
else:
    assert not counters, counters[:3]
print(len(events), "events,", len(counters), "counter samples")
PY
    echo "ok   $name ($(grep -o 'aligned[^;]*' "$tmp/$name.err" | head -1))"
  else
    fail "$name: $(head -c 300 "$tmp/$name.json")"
  fi
}
check_trace baseline-trace "$first_base" no
check_trace interfered-trace "$first_cores" yes

# The other trials run untraced: said, exit 1.
"$codlctl" trace latest --db "$db" --trial "$second_cores" -o "$tmp/none.json" 2>"$tmp/none.err"
rc=$?
if [[ $rc -eq 1 ]] && grep -qF "has no profiler trace" "$tmp/none.err"; then
  echo "ok   untraced-trial-says-so"
else
  fail "untraced-trial-says-so: exit $rc: $(head -c 300 "$tmp/none.err")"
fi
# A trial number the experiment does not have: bad input (2), said.
"$codlctl" trace latest --db "$db" --trial 99 -o "$tmp/x.json" 2>"$tmp/x.err"
if [[ $? -eq 2 ]] && grep -qF "has no trial 99" "$tmp/x.err"; then
  echo "ok   unknown-trial"
else
  fail "unknown-trial: $(head -c 300 "$tmp/x.err")"
fi

echo "$((5 - fails)) passed, $fails failed"
[[ $fails -eq 0 ]]
