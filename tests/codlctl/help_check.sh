#!/usr/bin/env bash
# Every --help as a user reads it: no CLI11 internals (composed validator type names such as
# FLOAT:DURATION or "in [1 - 1e+07]", "Excludes:"/"Needs:" lists) in codlctl, each of its
# commands, codl-controller and codl-agent.
# Usage: help_check.sh CODLCTL CODL_CONTROLLER CODL_AGENT
set -u
codlctl=$1 controller=$2 agent=$3
fails=0 checked=0
check() {
  local name=$1
  shift
  local out
  out=$("$@" --help 2>&1)
  local rc=$?
  checked=$((checked + 1))
  if [[ $rc -ne 0 ]]; then
    echo "FAIL $name: --help exited $rc"
    fails=$((fails + 1))
    return
  fi
  local bad
  bad=$(grep -nE 'Excludes:|Needs:|FLOAT:|:FLOAT|INT:|TEXT:|:DURATION| in \[' <<<"$out")
  if [[ -n $bad ]]; then
    echo "FAIL $name: CLI11 internals in --help:"
    echo "$bad"
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}
check codlctl "$codlctl"
for cmd in validate run resume submit status watch results compare predict report agents cancel \
  calibrate trace; do
  check "codlctl $cmd" "$codlctl" "$cmd"
done
check codl-controller "$controller"
check codl-agent "$agent"
# The kind of value is still shown: a duration, with its default.
grep -qE -- '--lease DURATION=10s' <<<"$("$controller" --help 2>&1)" || {
  echo "FAIL codl-controller: --lease does not read 'DURATION=10s'"
  fails=$((fails + 1))
}
echo "$((checked - fails)) passed, $fails failed"
[[ $fails -eq 0 ]]
