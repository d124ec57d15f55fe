#!/usr/bin/env bash
# The long coverage run (docs/validity.md, "Ground truth"): simulated experiments with a known
# true slowdown through the real Summarize; prints CSV (coverage of the 95% CI, A/A false
# positives) for repetitions 3, 5, 10, 20. Usage: bench/validity/run_validity_bench.sh [N [SEED]]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${CODL_BUILD_DIR:-build}
ninja -C "$build" codl-validity-bench >/dev/null
exec "$build/bin/codl-validity-bench" "${1:-2000}" "${2:-1}"
