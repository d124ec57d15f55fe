#!/usr/bin/env bash
# Removes what the multi-host test (codl-t-*) and the control-plane and net benchmarks (codl-b-*)
# create, should a run be killed before its own teardown: their network namespaces (deleting one removes
# the bridge and veth ends inside it) and any interface of those names in the root namespace
# (they create none there; this is belt and braces). Processes still running inside a namespace
# are listed (it lives on until they exit) and killed only with --kill.
#
# usage: bench/netns_cleanup.sh [--kill] [--dry-run]
set -uo pipefail
kill_procs=0
dry=0
for a in "$@"; do
  case "$a" in
    --kill) kill_procs=1 ;;
    --dry-run) dry=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "unknown argument $a" >&2; exit 2 ;;
  esac
done
# do_run MESSAGE CMD...: runs CMD (only prints it with --dry-run); prints MESSAGE on success.
do_run() {
  local what="$1"; shift
  if ((dry)); then echo "would run: $*"; return 0; fi
  "$@" && echo "$what"
}
command -v ip >/dev/null || { echo "ip (iproute2) not found" >&2; exit 1; }
removed=0
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^codl-[tb]-' || true); do
  pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
  if [[ -n "$pids" ]]; then
    echo "namespace $ns still has processes: $pids"
    if ((kill_procs)); then
      for p in $pids; do do_run "killed $p" kill -KILL "$p"; done
    fi
  fi
  do_run "deleted namespace $ns" ip netns del "$ns"
  removed=$((removed + 1))
done
for dev in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^codl-[tb]-' || true); do
  do_run "deleted interface $dev" ip link del "$dev"
  removed=$((removed + 1))
done
echo "netns_cleanup: $removed item(s) $( ((dry)) && echo found || echo removed)"
