#!/usr/bin/env bash
# The results database failing in the ways other than a full disk (that one:
# full_disk_check.sh), with the real `codlctl run`. No case may end in a signal death; each exits
# 1 and says what failed:
#   read-only  the database's file system is mounted read-only (a tmpfs in a private mount
#              namespace this test creates): three times
#   corrupt    the file is not a SQLite database: three times, the file left byte for byte
#   locked     another process holds an exclusive lock past the store's busy timeout (set to
#              2 s here with CODL_STORE_BUSY_TIMEOUT_MS; 10 s by default), at start (4 s) and
#              after 2 committed trials (8 s: past the trial's save and the final state's,
#              2 s each); after the mid-run one, once the lock is gone,
#              `codlctl resume` completes the experiment (8 of 8 trials)
# Skipped (77) where a mount namespace or tmpfs cannot be made.
# Usage: store_failure_check.sh CODLCTL
set -u
codlctl=$1
export CODL_STORE_BUSY_TIMEOUT_MS=2000
# shellcheck source=tests/codlctl/run_helpers.sh
source "$(dirname "$0")/run_helpers.sh"
in_private_mount_namespace "$0" "$@"

fails=0
tmp=$(mktemp -d)
ro=$tmp/ro
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  umount "$ro" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mount_tmpfs "$ro" size=4m,mode=0700,ro codl-read-only

cat >"$tmp/exp.yaml" <<'YAML'
name: store-failure
victim:
  command: [/bin/sh, -c, 'for i in $(seq 40); do sleep 0.01; echo "{\"step_time_s\": 0.01}"; done']
  warmup_steps: 1
  timeout: 30s
repetitions: 8
warmup_trials: 0
YAML

# expect NAME RC PATTERN: exit 1 (not a signal, not success) and stderr matching PATTERN.
expect() {
  local name=$1 rc=$2 pattern=$3
  if [[ $rc -ne 1 ]] || ! grep -qiE "$pattern" "$tmp/err"; then
    fail "$name: exit $rc (want 1, matching '$pattern'): $(head -c 400 "$tmp/err")"
    return 1
  fi
  echo "ok   $name: exit 1: $(grep -iE -m1 "$pattern" "$tmp/err" | head -c 160)"
}

# lock DB SECONDS: an exclusive lock on DB for SECONDS (in the background; waits until it holds).
lock() {
  rm -f "$tmp/locked"
  /usr/bin/python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
time.sleep(float(sys.argv[3]))
c.execute("ROLLBACK")' "$1" "$tmp/locked" "$2" &
  lock_pid=$!
  pids+=("$lock_pid")
  for _ in $(seq 200); do
    [[ -e $tmp/locked ]] && return 0
    sleep 0.05
  done
  return 1
}

for round in 1 2 3; do
  "$codlctl" run "$tmp/exp.yaml" --db "$ro/results.db" -q >"$tmp/out" 2>"$tmp/err"
  expect "read-only-$round" $? "read-only"

  head -c 65536 /dev/urandom >"$tmp/corrupt.db"
  sum=$(sha256sum <"$tmp/corrupt.db")
  "$codlctl" run "$tmp/exp.yaml" --db "$tmp/corrupt.db" -q >"$tmp/out" 2>"$tmp/err"
  expect "corrupt-$round" $? "not a database|corrupt|malformed" &&
    [[ $(sha256sum <"$tmp/corrupt.db") != "$sum" ]] &&
    fail "corrupt-$round: the file was changed"
done

# Locked at start: the lock outlasts the busy timeout.
db=$tmp/locked.db
"$codlctl" run "$tmp/exp.yaml" --db "$db" -q >/dev/null 2>&1 || fail "locked: first run"
if lock "$db" 4; then
  "$codlctl" run "$tmp/exp.yaml" --db "$db" -q >"$tmp/out" 2>"$tmp/err"
  expect "locked-at-start" $? "locked|busy"
  wait "$lock_pid"
else
  fail "locked-at-start: the lock was not taken"
fi

# Locked mid-run, after 2 committed trials of the new experiment; then resumed once the lock is
# gone.
latest_id() {
  "$codlctl" status latest --db "$db" -o json 2>/dev/null |
    sed -n 's/.*"experiment_id":"\([^"]*\)".*/\1/p'
}
before=$(latest_id)
"$codlctl" run "$tmp/exp.yaml" --db "$db" -q >"$tmp/out" 2>"$tmp/err" &
run_pid=$!
pids+=("$run_pid")
id=
for _ in $(seq 600); do
  id=$(latest_id)
  if [[ -n $id && $id != "$before" ]]; then
    n=$(committed "$db" "$id")
    [[ -n $n && $n -ge 2 ]] && break
  fi
  kill -0 "$run_pid" 2>/dev/null || break
  sleep 0.05
done
if [[ -z $id || $id == "$before" ]]; then
  fail "locked-mid-run: the run made no experiment: $(head -c 400 "$tmp/err")"
elif lock "$db" 8; then  # past the trial's save (2 s) and the final state's (2 s more)
  wait "$run_pid"
  expect "locked-mid-run" $? "locked|busy"
  wait "$lock_pid"
  if "$codlctl" resume "$id" --db "$db" -q -o json >"$tmp/resume.json" 2>"$tmp/err"; then
    /usr/bin/python3 - "$tmp/resume.json" <<'PY' || fails=$((fails + 1))
import json, sys
r = json.load(open(sys.argv[1]))
if r["state"] != "done" or r["trials_committed"] != 8:
    print("FAIL locked-mid-run resume: state %s, %d of %d trials" % (r["state"], r["trials_committed"], r["trials_planned"]))
    sys.exit(1)
print("ok   locked-mid-run resume: done, 8 of 8 trials")
PY
  else
    fail "locked-mid-run: resume after the lock: $(tail -c 400 "$tmp/err")"
  fi
else
  fail "locked-mid-run: the lock was not taken"
fi

if [[ $fails -gt 0 ]]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "all store failure cases ok"
