#!/usr/bin/env bash
# Start-skew benchmark: >= 4 agent "hosts" made of network namespaces (veth + bridge), mTLS,
# many short trials with a `noop` antagonist on every agent; reports the per-antagonist start
# skew (trial_antagonists.start_skew_s) p50/p99 and the per-trial spread. Not a test: it prints
# a table and writes JSON (figures go to docs/performance.md, "Control plane: skew and scale").
#
# usage: bench/run_skew_bench.sh [--build-dir DIR] [--out FILE] [--agents N] [--trials N]
#                                [--netem DELAY] [--delay MS] [--netem-trials N] [--keep]
#                                [--stub-injector] [--io-uring] [--io-rate R] [--io-file-size S]
#                                [--settle S] [--inject-binary PATH]
#   --build-dir   CMake build tree (default: ./build); the binaries are built when stale
#   --out         JSON results (default: bench/results/skew.json)
#   --agents      agent namespaces (default 4)
#   --trials      interference trials (as many baselines interleave; default 100)
#   --netem       e.g. 1ms: also measure with this delay on h2's link, both ways, then one way
#                 (tc netem; skipped with the reason when the kernel lacks sch_netem)
#   --delay       e.g. 1 (ms): the same with a user-space delaying relay on h2's controller link
#                 (bench/skew/delay_proxy.py; works without netem)
#   --netem-trials  trials per netem / relay phase (default 40)
#   --keep        keep the work dir (logs, results database)
#   --stub-injector  ablation: agents run bench/skew/stub_inject.c (starts in ~0.3 ms) instead of
#                 codl-inject (~4.5 ms of CPU to start), to separate CPU contention from the protocol
#   --io-uring    a real io_uring read flood on every agent instead of noop: each agent writes
#                 its file set (2 x --io-file-size, default 32MiB) at setup, which the common start
#                 waits for (setup estimates), then reads at --io-rate (default 20MiB/s)
#   --settle      settle window of the trials (default 0s); with one, the table adds the time
#                 from "all antagonists at target" to the victim's start (p50/p99)
#   --inject-binary  A/B: the agents run this codl-inject (e.g. a build from before a change)
# Every phase also prints its start account (controller/settle.h, FormatStartAccount): when
# each codl-inject's wait ended, when its preparation was done, setup measured vs estimated,
# io_uring's first submit and completion; late starts split into setup overruns and late
# wake-ups; plus the box's own wake-up lateness (a probe thread) and the load average.
# Needs root (ip netns, veth, bridge, tc), openssl and python3. Names: codl-b-<pid>-*; a killed
# run's leftovers are removed by bench/netns_cleanup.sh. About 4 minutes with --delay 1.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build"
out="$repo/bench/results/skew.json"
extra=()
while (($#)); do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --agents|--trials|--netem|--netem-trials|--delay|--io-rate|--io-file-size|--settle|--inject-binary)
      extra+=("$1" "$2"); shift 2 ;;
    --keep|--stub-injector|--io-uring) extra+=("$1"); shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v openssl >/dev/null || { echo "openssl not found" >&2; exit 1; }
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$repo" -B "$build" -G Ninja >/dev/null
fi
cmake --build "$build" --target codl-controller codl-agent codlctl codl-inject >/dev/null
exec python3 "$repo/bench/skew/bench.py" --build-dir "$build" --out "$out" "${extra[@]}"
