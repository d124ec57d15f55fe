#!/usr/bin/env bash
# The cross-talk benchmark (docs/validity.md, "Cross-talk"): every CPU-side injector alone at
# 0.5 and max with no victim, over 5 s idle windows, on this machine with the embedded
# controller + agent — the matrix of what each touches besides its own resource, and the
# independent-counter error of io_uring (diskstats) and net (/proc/net/dev).
# Usage: bench/validity/run_crosstalk_bench.sh [OUT_DIR [INJECTORS]]
#   default OUT_DIR /tmp/codl-crosstalk-bench, injectors memcpy,cpu,llc,io_uring,pagecache,net.
#   ~6 min on 2 cores. Run it on a quiet machine: whatever else runs is in the footprints.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${CODL_BUILD_DIR:-build}
out=${1:-/tmp/codl-crosstalk-bench}
injectors=${2:-memcpy,cpu,llc,io_uring,pagecache,net}
mkdir -p "$out"
ninja -C "$build" codlctl codl-inject >/dev/null
codlctl=$build/bin/codlctl
"$codlctl" crosstalk --injectors "$injectors" --levels 0.5,max --window 5s --repetitions 3 \
  --scratch-root "$out" --db "$out/crosstalk.db" --report "$out/crosstalk.html" -q |
  tee "$out/crosstalk.txt"
"$codlctl" crosstalk --show latest --db "$out/crosstalk.db" -o json >"$out/crosstalk.json"
"$codlctl" crosstalk --show latest --db "$out/crosstalk.db" -o csv >"$out/crosstalk.csv"
echo "matrix: $out/crosstalk.txt; JSON, CSV and the report beside it"
