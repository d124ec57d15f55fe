#!/usr/bin/env bash
# Checks deploy/systemd/*.service with `systemd-analyze verify --man=no` and fails on ANY output
# on stderr (systemd only warns about unknown keys and bad values, exit status 0).
# verify also checks that ExecStart= binaries exist, so each unit is copied to a temp dir with
# /usr/local/bin/codl-* rewritten to the build's bin/ (the units themselves name the install
# paths). Then asserts the properties docs/deploy.md promises (Type=notify, watchdog, restart,
# KillMode, and the agent keeping io_uring/O_DIRECT/GPU access).
# Usage: systemd_verify.sh UNIT_DIR BIN_DIR. Exit 77 (skipped) without systemd-analyze.
set -uo pipefail
units=${1:?unit dir}
bin=${2:?bin dir}
if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze not found (Debian package 'systemd'; 'scripts/install-deps.sh test' installs it)"
  exit 77
fi
tmp=$(mktemp -d /tmp/codl-systemd-verify.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

verify() {  # verify UNIT_FILE: prints stderr, returns 1 when there was any
  local err
  err=$(cd "$(dirname "$1")" && SYSTEMD_LOG_COLOR=0 timeout 60 systemd-analyze verify --man=no "./$(basename "$1")" 2>&1 >/dev/null)
  local rc=$?
  if [[ -n "$err" || $rc -ne 0 ]]; then
    printf '%s\n' "$err"
    return 1
  fi
}

# The check must be able to fail: an unknown key only warns, and that warning must be caught.
printf '[Service]\nType=simple\nExecStart=/bin/true\nNoSuchKey=1\n' >"$tmp/codl-canary.service"
if verify "$tmp/codl-canary.service" >/dev/null; then
  bad "systemd-analyze verify printed nothing for a unit with an unknown key; this test would miss errors"
fi

shopt -s nullglob
found=0
for unit in "$units"/*.service; do
  found=1
  name=$(basename "$unit")
  for b in $(grep -o '/usr/local/bin/codl-[a-z-]*' "$unit" | sort -u); do
    [[ -x "$bin/$(basename "$b")" ]] || bad "$name: $bin/$(basename "$b") not built"
  done
  sed "s|/usr/local/bin/\(codl-[a-z-]*\)|$bin/\1|g" "$unit" >"$tmp/$name"
  if out=$(verify "$tmp/$name"); then
    echo "ok: systemd-analyze verify $name"
  else
    bad "systemd-analyze verify $name:"
    printf '%s\n' "$out" | sed "s|$tmp/|deploy/systemd/|g"
  fi
  has() { grep -qE "^$1\$" "$unit" || bad "$name: expected a line matching '$1'"; }
  hasnt() { ! grep -qE "^$1" "$unit" || bad "$name: must not set $1"; }
  has 'Type=notify'
  has 'WatchdogSec=[0-9]+.*'
  has 'Restart=on-failure'
  has 'RestartSec=[0-9]+.*'
  has 'ExecStart=/usr/local/bin/codl-[a-z]+ --config /etc/codl/[a-z]+\.yaml'
  if [[ $name == codl-agent.service ]]; then
    has 'KillMode=control-group'
    has 'LimitMEMLOCK=infinity'
    has 'ProtectSystem=.*'
    has 'ReadWritePaths=.*/var/lib/codl.*'
    # io_uring is in @aio, which @system-service includes.
    has 'SystemCallFilter=@system-service.*'
    has 'CapabilityBoundingSet=.*CAP_SETUID.*'
    for k in PrivateTmp MemoryDenyWriteExecute PrivateDevices DeviceAllow DevicePolicy \
             ProtectClock ProtectControlGroups ProtectProc; do
      hasnt "$k="
    done
  fi
  if [[ $name == codl-controller.service ]]; then
    has 'DynamicUser=yes'
    has 'CapabilityBoundingSet='
  fi
  # Exposure as `systemd-analyze security` scores it (0 = locked down, 10 = exposed); the
  # threshold is ten times the score.
  case $name in
    codl-agent.service) limit=50 ;;
    codl-controller.service) limit=25 ;;
    *) limit=100 ;;
  esac
  score=$(systemd-analyze security --offline=true "$tmp/$name" 2>/dev/null | grep -o 'Overall exposure level for [^:]*: [0-9.]*' | awk '{print $NF}')
  if systemd-analyze security --offline=true --threshold="$limit" "$tmp/$name" >/dev/null 2>&1; then
    echo "ok: $name exposure $score (limit $((limit / 10)).$((limit % 10)))"
  else
    bad "$name: systemd-analyze security exposure ${score:-?} is above $((limit / 10)).$((limit % 10))"
  fi
done
((found)) || bad "no units in $units"
((fail)) && exit 1
echo "systemd units verified"
