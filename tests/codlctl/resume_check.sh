#!/usr/bin/env bash
# `codlctl resume` after the two ways an embedded `codlctl run` ends early, with real processes
# (embedded controller + agent, a cpu antagonist, a shell victim):
#   kill -9   the experiment is left `running` in the database; `results` says its figures are
#             partial; `resume ID --db FILE` marks it interrupted and finishes it
#   Ctrl-C    the experiment is cancelled (exit 130); `resume` finishes it
# Each time: exit 0, state done, exactly the planned number of trials, trial indexes unique,
# one resumption in the provenance, every pairing present as in an uninterrupted run, and at
# most the one cut-off trial run again, as its attempt 2 (kind controller_restart or cancelled).
#   --retry-failed  a victim that fails once leaves a done experiment with a failed trial;
#                   `resume` says to add --retry-failed, which runs it again as attempt 2
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

# check_resumed NAME DB ID KIND: resume it, then the checks above (KIND: how the cut-off trial
# was cut off)
check_resumed() {
  local name=$1 db=$2 id=$3 kind=$4
  if ! "$codlctl" resume "$id" --db "$db" -q -o json >"$tmp/resume.json" 2>"$tmp/resume.err"; then
    fail "$name: resume exited $?: $(head -c 600 "$tmp/resume.err")"
    return
  fi
  "$codlctl" results "$id" --db "$db" --trials -o csv >"$tmp/trials.csv" 2>"$tmp/err" ||
    fail "$name: results --trials: $(head -c 300 "$tmp/err")"
  /usr/bin/python3 - "$tmp/resume.json" "$tmp/trials.csv" "$name" "$kind" <<'PY' || fails=$((fails + 1))
import csv, json, sys
r = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
name, kind = sys.argv[3], sys.argv[4]
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
again = [row for row in rows if row["attempt"] != "1"]
if len(again) > 1 or any(row["attempt"] != "2" for row in again):
    problems.append("attempts %s" % [row["attempt"] for row in rows])
if r["trials_retried"] != len(again) or (again and r["retried_for"] != {kind: 1}):
    problems.append("trials_retried %s, retried_for %s" % (r["trials_retried"], r["retried_for"]))
if problems:
    print("FAIL %s: %s" % (name, "; ".join(problems)))
    sys.exit(1)
print("ok   %s: 8 of 8 trials, indexes unique, resumed once, %d cut off and run again (%s)"
      % (name, len(again), kind))
PY
}

# 1. kill -9 of `codlctl run`.
db=$tmp/kill9.db
if start_and_wait "$db" kill9; then
  kill -9 "$run_pid"
  wait "$run_pid" 2>/dev/null
  run_pid=
  id=$("$codlctl" status latest --db "$db" -o json | sed -n 's/.*"experiment_id":"\([^"]*\)".*/\1/p')
  # Its owner is gone: status and results say interrupted, before anything marks it so.
  "$codlctl" status "$id" --db "$db" >"$tmp/status.txt" 2>&1
  grep -qF "interrupted, " "$tmp/status.txt" && grep -qF "its process is gone" "$tmp/status.txt" ||
    fail "kill9: status after kill -9: $(head -c 300 "$tmp/status.txt")"
  "$codlctl" results "$id" --db "$db" >"$tmp/partial.txt" 2>&1
  head -1 "$tmp/partial.txt" |
    grep -qF "partial results: experiment interrupted (its process is gone (it was running))" ||
    fail "kill9: results do not open with 'partial results': $(head -2 "$tmp/partial.txt")"
  check_resumed kill9 "$db" "$id" controller_restart
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
  check_resumed ctrlc "$db" "$id" cancelled
fi

# 3. --retry-failed: the victim fails on its second run only (a counter it keeps), so the
# experiment ends done with one failed trial (a victim's own failure is not retried by default).
db=$tmp/retry.db
chmod 711 "$tmp"  # the victim runs as victim_user (nobody under root): it must reach count/
mkdir -p "$tmp/count" && chmod 777 "$tmp/count"
cat >"$tmp/count/victim.sh" <<SH
#!/bin/sh
n=\$(cat $tmp/count/n 2>/dev/null || echo 0)
echo \$((n + 1)) >$tmp/count/n
[ "\$n" -eq 1 ] && exit 3
for i in 1 2 3 4; do sleep 0.05; echo '{"step_time_s": 0.05}'; done
SH
chmod 755 "$tmp/count/victim.sh"
sed -e "s|^  command: .*|  command: [/bin/sh, $tmp/count/victim.sh]|" "$tmp/exp.yaml" >"$tmp/flaky.yaml"
"$codlctl" run "$tmp/flaky.yaml" --db "$db" -q -o json >"$tmp/flaky.json" 2>"$tmp/flaky.err"
id=$("$codlctl" status latest --db "$db" -o json | sed -n 's/.*"experiment_id":"\([^"]*\)".*/\1/p')
"$codlctl" resume "$id" --db "$db" -q >/dev/null 2>"$tmp/err"
rc=$?
if [[ $rc -ne 1 ]] || ! grep -qF "resume $id --retry-failed" "$tmp/err"; then
  fail "retry-failed: a plain resume of a done experiment with a failed trial: exit $rc: $(head -c 400 "$tmp/err") (run: $(head -c 300 "$tmp/flaky.err"))"
elif ! "$codlctl" resume "$id" --db "$db" --retry-failed -q -o json >"$tmp/retried.json" 2>"$tmp/err"; then
  fail "retry-failed: resume --retry-failed exited $?: $(head -c 400 "$tmp/err")"
else
  /usr/bin/python3 - "$tmp/retried.json" <<'PY' || fails=$((fails + 1))
import json, sys
r = json.load(open(sys.argv[1]))
got = (r["state"], r["trials_committed"], len(r["failed_trials"]), r["trials_retried"], r["retried_for"])
want = ("done", 8, 0, 1, {"victim": 1})
if got != want:
    print("FAIL retry-failed: (state, committed, failed, retried, retried_for) %s, want %s" % (got, want))
    sys.exit(1)
print("ok   retry-failed: the failed trial ran again as attempt 2; 8 of 8 done")
PY
fi

# 4. A missing database names the flag to use.
"$codlctl" resume latest --db "$tmp/none.db" >/dev/null 2>"$tmp/err"
rc=$?
if [[ $rc -ne 2 ]] || ! grep -qF "no results database" "$tmp/err"; then
  fail "resume-no-db: exit $rc: $(head -c 300 "$tmp/err")"
else
  echo "ok   resume-no-db"
fi

echo "resume_check: $fails failed"
[[ $fails -eq 0 ]]
