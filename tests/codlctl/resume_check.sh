#!/usr/bin/env bash
# `codlctl resume` after the two ways an embedded `codlctl run` ends early, with real processes
# (embedded controller + agent, a cpu antagonist, a shell victim):
#   kill -9   the experiment is left `running` in the database; `results` says its figures are
#             partial; `resume ID --db FILE` marks it interrupted and finishes it
#   Ctrl-C    the experiment is cancelled (exit 130); `resume` finishes it
# Each time: exit 0, state done, exactly the planned number of trials, trial indexes unique,
# one resumption in the provenance, every pairing present as in an uninterrupted run.
# Usage: resume_check.sh CODLCTL
set -u
codlctl=$1
fails=0
tmp=$(mktemp -d)
run_pid=
cleanup() {
  [[ -n $run_pid ]] && kill -9 "$run_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source=tests/codlctl/run_helpers.sh
source "$(dirname "$0")/run_helpers.sh"

# 4 baselines + 4 trials at cores@0.5, in a drawn (stored) order; ~1 s a trial.
cat >"$tmp/exp.yaml" <<'YAML'
name: resume-check
victim:
  command: [/bin/sh, -c, 'for i in 1 2 3 4 5 6 7 8; do sleep 0.05; echo "{\"step_time_s\": 0.05}"; done']
  warmup_steps: 1
  timeout: 30s
antagonists:
  - name: cores
    injector: cpu
    options: {threads: "1"}
    levels: [0.5]
repetitions: 4
warmup_trials: 0
settle: 0.3s
calibration: {duration: 1s}
YAML


# start_and_wait DB: starts `codlctl run` in the background, waits until 2 trials are committed
start_and_wait() {
  "$codlctl" run "$tmp/exp.yaml" --db "$1" -q >"$tmp/run.out" 2>"$tmp/run.err" &
  run_pid=$!
  for _ in $(seq 600); do
    local n
    n=$(committed "$1" latest)
    [[ -n $n && $n -ge 2 ]] && return 0
    kill -0 "$run_pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "$2: 2 trials were not committed in 60 s: $(head -c 400 "$tmp/run.err")"
  return 1
}

# check_resumed NAME DB ID: resume it, then the checks above
check_resumed() {
  local name=$1 db=$2 id=$3
  if ! "$codlctl" resume "$id" --db "$db" -q -o json >"$tmp/resume.json" 2>"$tmp/resume.err"; then
    fail "$name: resume exited $?: $(head -c 600 "$tmp/resume.err")"
    return
  fi
  "$codlctl" results "$id" --db "$db" --trials -o csv >"$tmp/trials.csv" 2>"$tmp/err" ||
    fail "$name: results --trials: $(head -c 300 "$tmp/err")"
  /usr/bin/python3 - "$tmp/resume.json" "$tmp/trials.csv" "$name" <<'PY' || fails=$((fails + 1))
import csv, json, sys
r = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
name = sys.argv[3]
problems = []
if r["state"] != "done" or not r["complete"]:
    problems.append("state %s, complete %s" % (r["state"], r["complete"]))
if r["trials_planned"] != 8 or r["trials_committed"] != 8:
    problems.append("trials %d of %d" % (r["trials_committed"], r["trials_planned"]))
if r["resumptions"] != 1 or len(r["provenance"].get("resumptions", [])) != 1:
    problems.append("resumptions %s" % r["resumptions"])
pairings = sorted(p["pairing"] for p in r["pairings"])
if pairings != ["baseline", "cores@0.5"]:
    problems.append("pairings %s" % pairings)
indexes = [row["trial"] for row in rows]
if len(indexes) != 8 or len(set(indexes)) != 8:
    problems.append("trial indexes %s" % indexes)
if problems:
    print("FAIL %s: %s" % (name, "; ".join(problems)))
    sys.exit(1)
print("ok   %s: 8 of 8 trials, indexes unique, resumed once" % name)
PY
}

# 1. kill -9 of `codlctl run`.
db=$tmp/kill9.db
if start_and_wait "$db" kill9; then
  kill -9 "$run_pid"
  wait "$run_pid" 2>/dev/null
  run_pid=
  id=$("$codlctl" status latest --db "$db" -o json | sed -n 's/.*"experiment_id":"\([^"]*\)".*/\1/p')
  state=$("$codlctl" status "$id" --db "$db" -o json | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p')
  [[ $state == running ]] || fail "kill9: state after kill -9 is '$state', want running"
  "$codlctl" results "$id" --db "$db" >"$tmp/partial.txt" 2>&1
  head -1 "$tmp/partial.txt" | grep -qF "partial results: experiment running" ||
    fail "kill9: results do not open with 'partial results': $(head -2 "$tmp/partial.txt")"
  check_resumed kill9 "$db" "$id"
  # A done experiment is not resumed again: a clear error, exit 1.
  "$codlctl" resume "$id" --db "$db" -q >/dev/null 2>"$tmp/err"
  rc=$?
  if [[ $rc -ne 1 ]] || ! grep -qF "is done: every planned trial ran; nothing to resume" "$tmp/err"; then
    fail "kill9: resume of a done experiment: exit $rc: $(head -c 300 "$tmp/err")"
  else
    echo "ok   resume-done-refused"
  fi
fi

# 2. Ctrl-C (SIGINT) of `codlctl run`: cancelled, exit 130, then resumed.
db=$tmp/ctrlc.db
if start_and_wait "$db" ctrlc; then
  kill -INT "$run_pid"
  wait "$run_pid"
  rc=$?
  run_pid=
  [[ $rc -eq 130 ]] || fail "ctrlc: run exited $rc, want 130"
  grep -qF "continue it with: codlctl resume" "$tmp/run.err" ||
    fail "ctrlc: run does not say how to resume: $(tail -c 300 "$tmp/run.err")"
  id=$("$codlctl" status latest --db "$db" -o json | sed -n 's/.*"experiment_id":"\([^"]*\)".*/\1/p')
  check_resumed ctrlc "$db" "$id"
fi

# 3. A missing database names the flag to use.
"$codlctl" resume latest --db "$tmp/none.db" >/dev/null 2>"$tmp/err"
rc=$?
if [[ $rc -ne 2 ]] || ! grep -qF "no results database" "$tmp/err"; then
  fail "resume-no-db: exit $rc: $(head -c 300 "$tmp/err")"
else
  echo "ok   resume-no-db"
fi

echo "resume_check: $fails failed"
[[ $fails -eq 0 ]]
