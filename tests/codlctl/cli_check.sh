#!/usr/bin/env bash
# codlctl's command line as a user meets it: global options after the subcommand, "did you
# mean" for a mistyped command, the distinct exit status for an unreachable controller.
# Usage: cli_check.sh CODLCTL EXPERIMENT_YAML
set -u
codlctl=$1
exp=$2
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect NAME WANT_RC WANT_STDERR_SUBSTRING -- ARGS...
expect() {
  local name=$1 want_rc=$2 want_err=$3
  shift 4
  "$codlctl" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [[ $rc -ne $want_rc ]]; then
    echo "FAIL $name: exit $rc, want $want_rc; stderr: $(head -c 400 "$tmp/err")"
    fails=$((fails + 1))
  elif [[ -n $want_err ]] && ! grep -qF -- "$want_err" "$tmp/err"; then
    echo "FAIL $name: stderr lacks '$want_err': $(head -c 400 "$tmp/err")"
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}

# Port 1 on loopback: nothing listens there, so a connection is refused at once.
dead=127.0.0.1:1
expect global-after-subcommand 3 "cannot reach the controller at $dead" -- status latest --controller "$dead"
expect global-before-subcommand 3 "cannot reach the controller at $dead" -- --controller "$dead" status latest
expect global-equals-form 3 "cannot reach the controller" -- results latest --controller="$dead"
expect log-level-after 0 "" -- validate "$exp" --log-level info
expect typo-suggests 2 "unknown command 'reslts' (did you mean 'results'?)" -- reslts latest
expect typo-after-global 2 "did you mean 'status'" -- --controller "$dead" statsu
expect unrelated-word 2 "unknown command 'frobnicate'; see codlctl --help" -- frobnicate
expect predict-unreachable 3 "cannot reach the controller" -- predict latest --controller "$dead"
expect predict-bad-model 2 "--model: model 'x': multiplicative | additive" -- predict --model x
expect predict-no-db 2 "no database file" -- predict latest --db "$tmp/none.db"
expect help-lists-exit-3 0 "" -- --help
grep -qF "3 controller or agent unreachable" "$tmp/out" || {
  echo "FAIL help-lists-exit-3: --help does not document exit status 3"
  fails=$((fails + 1))
}

# Small-n honesty: a plan that cannot reach significance says so before anything runs.
sed 's/^repetitions: .*/repetitions: 1/' "$exp" >"$tmp/one.yaml"
expect validate-warns-small-n 0 "" -- validate "$tmp/one.yaml"
grep -qF "p cannot fall below 1: no slowdown can be significant" "$tmp/out" || {
  echo "FAIL validate-warns-small-n: no significance warning for repetitions: 1"
  fails=$((fails + 1))
}

# victim.cache as-is over a dataset smaller than this machine's memory: the plan says the cache
# decides I/O figures and how to set it.
mkdir -p "$tmp/data" && head -c 4096 /dev/zero >"$tmp/data/f"
cat >"$tmp/cache.yaml" <<YAML
name: cache-as-is
victim:
  command: [cat, $tmp/data/f]
  cache: {mode: as-is, paths: [$tmp/data]}
YAML
expect validate-cache-as-is 0 "" -- validate "$tmp/cache.yaml" --plan
grep -qF "4.00 KiB under victim.cache.paths could sit in this machine's" "$tmp/out" || {
  echo "FAIL validate-cache-as-is: no page-cache warning: $(grep -n cache "$tmp/out" | head -c 300)"
  fails=$((fails + 1))
}

# Exit statuses a script can trust (embedded controller + agent, baseline-only experiments).
cat >"$tmp/fails.yaml" <<YAML
name: all-fail
victim:
  command: [/bin/sh, -c, "echo 'no module named torch' >&2; exit 1"]
  timeout: 20s
repetitions: 2
warmup_trials: 0
YAML
expect nothing-measured-exits-1 1 "measured nothing: none of its 2 trials was measured (2 failed)" \
  -- run "$tmp/fails.yaml" --db "$tmp/fails.db" -q
# Who runs the victim is said at start (embedded: this user, and how a cluster agent differs).
expect run-says-victim-user 1 "victims run as $(id -un) on " -- run "$tmp/fails.yaml" --db "$tmp/fails2.db"
grep -qF "a cluster agent started as root runs them as its victim_user" "$tmp/err" || {
  echo "FAIL run-says-victim-user: no word on how a cluster agent differs: $(head -c 400 "$tmp/err")"
  fails=$((fails + 1))
}
# A regex that captures the step index, not a step time: every trial is flagged, said once.
cat >"$tmp/regex.yaml" <<YAML
name: wrong-regex
victim:
  command: [/bin/sh, -c, "for i in 1 2 3 4 5 6 7 8; do echo step \$i loss 0.5; done"]
  progress: {format: regex, pattern: 'step (\\d+) loss'}
  warmup_steps: 0
  timeout: 20s
repetitions: 2
warmup_trials: 0
YAML
expect metric-looks-wrong-exits-1 1 "measured nothing: none of its 2 trials was measured (2 flagged)" \
  -- run "$tmp/regex.yaml" --db "$tmp/regex.db" -q
grep -qF "cannot be step times (first: metric looks wrong: the 8 measured steps add up to 36 s" \
  "$tmp/out" || {
  echo "FAIL metric-looks-wrong-exits-1: no metric warning in the table: $(head -c 600 "$tmp/out")"
  fails=$((fails + 1))
}

cat >"$tmp/long.yaml" <<YAML
name: long
victim:
  command: [/bin/sleep, "30"]
  timeout: 60s
repetitions: 1
warmup_trials: 0
YAML
"$codlctl" run "$tmp/long.yaml" --db "$tmp/long.db" -q >"$tmp/out" 2>"$tmp/err" &
run_pid=$!
# Interrupt once the victim runs (its sleep is a descendant of the embedded agent).
for _ in $(seq 1 100); do
  pgrep -P "$run_pid" >/dev/null 2>&1 && grep -q . "$tmp/long.db" 2>/dev/null && break
  sleep 0.2
done
sleep 2
kill -INT "$run_pid"
wait "$run_pid"
rc=$?
# 130 alone would also be a shell's status for codlctl killed by the signal: the handler must
# have run (cancelled the experiment) and chosen it.
if [[ $rc -eq 130 ]] && grep -qF "interrupted — cancelling the experiment" "$tmp/err"; then
  echo "ok   ctrl-c-exits-130"
else
  echo "FAIL ctrl-c-exits-130: exit $rc; stderr: $(head -c 400 "$tmp/err")"
  fails=$((fails + 1))
fi

# One hostile name through every verb: OSC title, clear-screen, CR/LF and a fake line. No raw
# ESC or CR may reach the terminal from run's progress, status (list and one), results (table,
# --trials, --phases, csv), compare, predict, validate, or the log; JSON output stays valid JSON
# and the HTML report holds no raw control byte (issue: a reader's terminal is not the
# submitter's to drive). The victim adds a hostile phase name (dropped: phase names are
# restricted), and a second, failing victim a hostile stderr line, which run's failure message
# quotes.
# It spends the step it reports: a step longer than the victim's whole run is flagged (metric
# looks wrong), and a shell can start and exit in 4 ms.
cat >"$tmp/evil.sh" <<'SH'
sleep 0.05
printf '{"step_time_s": 0.01, "phases": {"ok_s": 0.003, "x\\u001b]0;ph\\u0007\\r\\nFAKE_s": 0.004}}\n'
SH
cat >"$tmp/evil.yaml" <<YAML
name: "evil\e]0;pwned\a\e[2J\r\nFAKE done"
victim:
  command: [/bin/sh, $tmp/evil.sh]
  warmup_steps: 0
  timeout: 20s
repetitions: 1
warmup_trials: 0
YAML
cat >"$tmp/evil-fails.sh" <<'SH'
printf 'boom\033]0;title\007\033[2J\rFAKE line\n' >&2
exit 1
SH
cat >"$tmp/evil-fails.yaml" <<YAML
name: evil-fails
victim:
  command: [/bin/sh, $tmp/evil-fails.sh]
  timeout: 20s
repetitions: 1
warmup_trials: 0
YAML
"$codlctl" run "$tmp/evil.yaml" --db "$tmp/evil.db" --log-level info >"$tmp/evil.out" 2>"$tmp/evil.err"
"$codlctl" run "$tmp/evil-fails.yaml" --db "$tmp/evil-fails.db" --log-level info \
  >>"$tmp/evil.out" 2>>"$tmp/evil.err"
for args in "status --db $tmp/evil.db" "status latest --db $tmp/evil.db" \
  "results latest --db $tmp/evil.db" "results latest --db $tmp/evil.db --trials" \
  "results latest --db $tmp/evil.db --phases" "results latest --db $tmp/evil.db -o csv" \
  "compare latest latest --db $tmp/evil.db" "predict latest --db $tmp/evil.db" \
  "results latest --db $tmp/evil-fails.db --trials" "validate $tmp/evil.yaml"; do
  # shellcheck disable=SC2086
  "$codlctl" $args >>"$tmp/evil.out" 2>>"$tmp/evil.err"
done
"$codlctl" results latest --db "$tmp/evil.db" -o json >"$tmp/evil.json" 2>>"$tmp/evil.err"
"$codlctl" report latest --db "$tmp/evil.db" --output "$tmp/evil.html" >>"$tmp/evil.out" 2>>"$tmp/evil.err"
if grep -q $'\e\|\r' "$tmp/evil.out" "$tmp/evil.err" "$tmp/evil.json" "$tmp/evil.html"; then
  echo "FAIL hostile-name-escaped: a raw ESC or CR reached the terminal: $(grep -n $'\e\|\r' "$tmp/evil.out" "$tmp/evil.err" "$tmp/evil.json" "$tmp/evil.html" | cat -v | head -c 400)"
  fails=$((fails + 1))
elif ! grep -qF 'evil\x1B]0;pwned\x07\x1B[2J\x0D\x0AFAKE done' "$tmp/evil.out"; then
  echo "FAIL hostile-name-escaped: the name is not shown escaped: $(head -c 600 "$tmp/evil.out" | cat -v)"
  fails=$((fails + 1))
elif grep -q 'FAKE_s' "$tmp/evil.out" "$tmp/evil.json" || ! grep -q 'ok_s' "$tmp/evil.json"; then
  # Phase names outside [A-Za-z0-9_.-] are dropped where the agent parses the victim's output.
  echo "FAIL hostile-name-escaped: a hostile phase name was kept, or the plain one lost: $(grep -n 'FAKE\|ok' "$tmp/evil.out" | cat -v | head -c 600)"
  fails=$((fails + 1))
elif ! grep -qF 'victim exited with status 1 (0 steps reported): FAKE line' "$tmp/evil.out" "$tmp/evil.err"; then
  # The quoted line is what follows the last CR or LF, as a terminal would have shown it.
  echo "FAIL hostile-name-escaped: the victim's stderr is not quoted: $(grep -n 'FAKE' "$tmp/evil.out" "$tmp/evil.err" | cat -v | head -c 600)"
  fails=$((fails + 1))
elif ! /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/evil.json"; then
  echo "FAIL hostile-name-escaped: results -o json is not valid JSON: $(head -c 400 "$tmp/evil.json" | cat -v)"
  fails=$((fails + 1))
else
  echo "ok   hostile-name-escaped"
fi

echo "$((17 - fails)) passed, $fails failed"
[[ $fails -eq 0 ]]
