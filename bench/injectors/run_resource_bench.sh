#!/usr/bin/env bash
# cpu / llc / pagecache injectors vs stress-ng, and their level accuracy (resource_bench.py).
# usage: bench/injectors/run_resource_bench.sh [--build-dir DIR] [--out FILE] [--seconds S]
#                                              [--cpus LIST]
#   --build-dir  CMake build tree with bin/codl-inject (default: ./build; built when stale)
#   --out        JSON results (default: bench/results/resource_injectors.json)
#   --seconds    seconds per run (default 4)
#   --cpus       CPUs both sides are pinned to (default: all online)
# Needs stress-ng (Debian: apt-get install stress-ng) and python3. About 2 minutes; holds at most
# 512 MiB of memory.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
build="$repo/build"
out="$repo/bench/results/resource_injectors.json"
extra=()
while (($#)); do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --seconds|--cpus) extra+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v stress-ng >/dev/null || { echo "stress-ng not found (apt-get install stress-ng)" >&2; exit 1; }
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCODL_TOOLS_ONLY=ON >/dev/null
fi
cmake --build "$build" --target codl-inject >/dev/null
scratch="$build/bench-scratch"
mkdir -p "$scratch" "$(dirname "$out")"
exec python3 "$repo/bench/injectors/resource_bench.py" --codl "$build/bin/codl-inject" \
  --scratch "$scratch" --out "$out" "${extra[@]}"
