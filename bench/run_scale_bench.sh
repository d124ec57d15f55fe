#!/usr/bin/env bash
# Control-plane scale benchmark: one real codl-controller and N emulated agents
# (codl-load-agents: the real register/heartbeat protocol and Agent service, nothing spawned).
# Reports controller CPU (utime+stime over a window) and RSS at each N, and the latency of
# fanning a start command out to 256 agents (p50/p99). Not a test: prints a table and writes
# JSON (figures go to docs/performance.md, "Control plane: skew and scale").
#
# usage: bench/run_scale_bench.sh [--build-dir DIR] [--out FILE] [--agents 100,1000]
#                                 [--window S] [--fanout N] [--fanout-trials N] [--tls] [--keep]
#                                 [--register-spread S] [--min-connect-timeout-ms MS]
#                                 [--agent-footprint S] [--restart-storm] [--storm-wait S]
#                                 [--setup-estimate S] [--concurrent K [--concurrent-nodes M]]
#   --build-dir      CMake build tree (default: ./build); the binaries are built when stale
#   --out            JSON results (default: bench/results/scale.json)
#   --agents         comma-separated agent counts (default 100,1000); the fan-out runs at the largest
#   --window         seconds of the CPU/RSS window per N (default 30)
#   --fanout         agents a start command fans out to (default 256)
#   --fanout-trials  trials of the fan-out experiment (default 20)
#   --tls            mTLS everywhere (throwaway CA made with openssl; default plaintext on loopback)
#   --register-spread  seconds over which the N agents register (default 2)
#   --register-timeout seconds for all N to register before the run is recorded as failed (default 90)
#   --min-connect-timeout-ms  the agents' GRPC_ARG_MIN_RECONNECT_BACKOFF_MS (default 2000, as
#                    rpc::MakeChannel; 0 = gRPC's 20 s). See docs/performance.md on TLS storms.
#   --agent-footprint S  also run one real, idle codl-agent against a real controller and report
#                    its RSS and CPU over S seconds (goal < 30 MiB, < 1 % of a core)
#   --restart-storm  after the window (and fan-out), kill the controller and start it again on the
#                    same address under the N agents; report how long until all re-registered,
#                    failed attempts and both processes' CPU (the mTLS storm of docs/performance.md)
#   --storm-wait S   seconds the restart storm is watched (default 15)
#   --setup-estimate S  what the emulated agents answer to EstimateSetup (default 0, as for noop)
#   --concurrent K   at the largest N, also submit K experiments at once, each on `count: M`
#                    agents (--concurrent-nodes, default 50; --concurrent-trials R, default 5
#                    repetitions): node reservations must run them side by side on disjoint agents;
#                    reports how many ran at once, agents shared (goal 0), controller CPU and RSS
#   --keep           keep the work dir (logs, databases, the load tool's JSON)
# Loopback only (plaintext is allowed there). About 2 minutes with the defaults.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build"
out="$repo/bench/results/scale.json"
extra=()
while (($#)); do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --agents|--window|--fanout|--fanout-trials|--warmup|--register-spread|--register-timeout|--min-connect-timeout-ms|--agent-footprint|--storm-wait|--setup-estimate|--concurrent|--concurrent-nodes|--concurrent-trials)
      extra+=("$1" "$2"); shift 2 ;;
    --keep|--tls|--restart-storm) extra+=("$1"); shift ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$repo" -B "$build" -G Ninja >/dev/null
fi
cmake --build "$build" --target codl-controller codl-agent codlctl codl-load-agents >/dev/null
# N agents need ~4N descriptors in the load tool and ~2N in the controller.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
exec python3 "$repo/bench/scale/bench.py" --build-dir "$build" --out "$out" "${extra[@]}"
