#!/usr/bin/env bash
# cpu / llc / pagecache injectors vs stress-ng, and their level accuracy (resource_bench.py).
# usage: bench/injectors/run_resource_bench.sh [--build-dir DIR] [--out FILE] [--seconds S]
#                                              [--cpus LIST] [--net] [--net-only]
#   --build-dir  CMake build tree with bin/codl-inject (default: ./build; built when stale)
#   --out        JSON results (default: bench/results/resource_injectors.json)
#   --seconds    seconds per run (default 4)
#   --cpus       CPUs both sides are pinned to (default: all online)
#   --net        then a net pair vs iperf3 over veth in two network namespaces it creates
#                (net_bench.py; root; JSON next to --out as *_net.json); --net-only: just that
# Needs stress-ng (Debian: apt-get install stress-ng) and python3; --net also iperf3 and root.
# About 2 minutes (+3 for --net); holds at most 512 MiB of memory.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
build="$repo/build"
out="$repo/bench/results/resource_injectors.json"
extra=()
net=0
resource=1
while (($#)); do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --seconds|--cpus) extra+=("$1" "$2"); shift 2 ;;
    --net) net=1; shift ;;
    --net-only) net=1; resource=0; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
if ((resource)); then
  command -v stress-ng >/dev/null || { echo "stress-ng not found (apt-get install stress-ng)" >&2; exit 1; }
fi
if ((net)); then
  command -v iperf3 >/dev/null || { echo "iperf3 not found (apt-get install iperf3)" >&2; exit 1; }
fi
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCODL_TOOLS_ONLY=ON >/dev/null
fi
cmake --build "$build" --target codl-inject >/dev/null
scratch="$build/bench-scratch"
mkdir -p "$scratch" "$(dirname "$out")"
if ((resource)); then
  python3 "$repo/bench/injectors/resource_bench.py" --codl "$build/bin/codl-inject" \
    --scratch "$scratch" --out "$out" "${extra[@]}"
fi
if ((net)); then
  seconds=4
  for ((i = 0; i < ${#extra[@]}; i += 2)); do
    [[ "${extra[i]}" == --seconds ]] && seconds="${extra[i + 1]}"
  done
  python3 "$repo/bench/injectors/net_bench.py" --codl "$build/bin/codl-inject" \
    --out "${out%.json}_net.json" --seconds "$seconds"
fi
