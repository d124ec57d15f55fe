#!/usr/bin/env bash
# A results database on a full file system (a small tmpfs in a private mount namespace this
# test creates; nothing outside it is mounted or filled), with the real `codlctl run`:
#   at start   the disk is full before the run: a clear error, exit 1, no signal death
#   mid-run    the disk fills after 2 trials: exit 1 naming the full disk, no signal death,
#              the experiment ends `failed` (its final state written), the database passes
#              `PRAGMA integrity_check`; after freeing the space `codlctl resume` completes it
# Each case three times. Skipped (77) where a mount namespace or tmpfs cannot be made.
# Usage: full_disk_check.sh CODLCTL
set -u
codlctl=$1
# shellcheck source=tests/codlctl/run_helpers.sh
source "$(dirname "$0")/run_helpers.sh"
in_private_mount_namespace "$0" "$@"

fails=0
tmp=$(mktemp -d)
fs=$tmp/fs
run_pid=
cleanup() {
  [[ -n $run_pid ]] && kill -9 "$run_pid" 2>/dev/null
  umount "$fs" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mount_tmpfs "$fs" size=4m,mode=0700 codl-full-disk

cat >"$tmp/exp.yaml" <<'YAML'
name: full-disk
victim:
  command: [/bin/sh, -c, 'for i in $(seq 40); do sleep 0.01; echo "{\"step_time_s\": 0.01}"; done']
  warmup_steps: 1
  timeout: 30s
repetitions: 8
warmup_trials: 0
YAML

fill() { dd if=/dev/zero of="$fs/fill" bs=64k status=none 2>/dev/null; sync; }
integrity() {
  /usr/bin/python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA integrity_check").fetchone()[0])' "$1" 2>&1
}

for round in 1 2 3; do
  rm -f "$fs"/*

  # At start: nothing can be written.
  fill
  "$codlctl" run "$tmp/exp.yaml" --db "$fs/start.db" -q >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [[ $rc -ne 1 ]] || ! grep -qiE "disk is full|no space left" "$tmp/err"; then
    fail "start-$round: exit $rc (want 1, naming the full disk): $(head -c 400 "$tmp/err")"
  else
    echo "ok   start-$round: exit 1: $(grep -iE -m1 'disk is full|no space left' "$tmp/err" | head -c 160)"
  fi
  rm -f "$fs"/*

  # Mid-run: the disk fills after 2 committed trials.
  db=$fs/mid.db
  "$codlctl" run "$tmp/exp.yaml" --db "$db" -q >"$tmp/out" 2>"$tmp/err" &
  run_pid=$!
  started=0
  for _ in $(seq 600); do
    n=$(committed "$db" latest)
    if [[ -n $n && $n -ge 2 ]]; then
      started=1
      break
    fi
    kill -0 "$run_pid" 2>/dev/null || break
    sleep 0.05
  done
  if [[ $started -ne 1 ]]; then
    fail "mid-$round: 2 trials were not committed: $(head -c 400 "$tmp/err")"
    kill -9 "$run_pid" 2>/dev/null
    wait "$run_pid" 2>/dev/null
    run_pid=
    continue
  fi
  id=$("$codlctl" status latest --db "$db" -o json | sed -n 's/.*"experiment_id":"\([^"]*\)".*/\1/p')
  fill
  wait "$run_pid"
  rc=$?
  run_pid=
  state=$("$codlctl" status "$id" --db "$db" -o json 2>/dev/null |
    sed -n 's/.*"state":"\([a-z]*\)".*/\1/p')
  check=$(integrity "$db")
  if [[ $rc -ne 1 ]] || ! grep -qiE "disk is full" "$tmp/err"; then
    fail "mid-$round: exit $rc (want 1, naming the full disk): $(tail -c 400 "$tmp/err")"
  elif [[ $state != failed ]]; then
    fail "mid-$round: state '$state' after the full disk, want failed"
  elif [[ $check != ok ]]; then
    fail "mid-$round: integrity_check: $check"
  else
    echo "ok   mid-$round: exit 1, state failed, integrity ok"
  fi
  rm -f "$fs/fill"
  if ! "$codlctl" resume "$id" --db "$db" -q -o json >"$tmp/resume.json" 2>"$tmp/err"; then
    fail "mid-$round: resume after freeing space: $(tail -c 400 "$tmp/err")"
    continue
  fi
  /usr/bin/python3 - "$tmp/resume.json" "mid-$round" <<'PY' || fails=$((fails + 1))
import json, sys
r = json.load(open(sys.argv[1]))
if r["state"] != "done" or r["trials_committed"] != r["trials_planned"] or r["trials_planned"] != 8:
    print("FAIL %s resume: state %s, %d of %d trials" % (sys.argv[2], r["state"], r["trials_committed"], r["trials_planned"]))
    sys.exit(1)
print("ok   %s resume: done, 8 of 8 trials" % sys.argv[2])
PY
done

echo "full_disk_check: $fails failed"
[[ $fails -eq 0 ]]
