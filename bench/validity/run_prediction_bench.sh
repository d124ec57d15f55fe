#!/usr/bin/env bash
# The prediction benchmark (docs/validity.md, "Interaction and prediction").
#  1. Known by construction: codl-prediction-bench simulates victims whose singles and pairs
#     follow known curves and a known combination rule, and scores `codlctl predict`'s model.
#  2. Measured: codl-victim's built-in profiles against membw + cores (prediction-host.yaml,
#     pairings: pairs), run here by the embedded controller; then `codlctl predict` per run.
# Usage: bench/validity/run_prediction_bench.sh [OUT_DIR [PROFILE...]]
#   default OUT_DIR /tmp/codl-prediction-bench, PROFILE balanced compute-bound
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${CODL_BUILD_DIR:-build}
out=${1:-/tmp/codl-prediction-bench}
shift || true
profiles=("$@")
[ ${#profiles[@]} -gt 0 ] || profiles=(balanced compute-bound)
mkdir -p "$out"
ninja -C "$build" codl-prediction-bench codlctl >/dev/null
"$build/bin/codl-prediction-bench" | tee "$out/simulated.csv"
for p in "${profiles[@]}"; do
  sed "s/PROFILE/$p/g" bench/validity/prediction-host.yaml >"$out/$p.yaml"
  "$build/bin/codlctl" run "$out/$p.yaml" --db "$out/$p.db" -q >"$out/$p.results.txt"
  "$build/bin/codlctl" predict latest --db "$out/$p.db" | tee "$out/$p.predict.txt"
  "$build/bin/codlctl" predict latest --db "$out/$p.db" -o csv >"$out/$p.predict.csv"
done
