#!/usr/bin/env bash
# The first thing to run: builds CoDL (installing what is missing) and runs the quickstart
# experiment on the embedded controller + agent. Prints the slowdown table; results land in
# ./codl-results.db, ./quickstart-report.html, ./quickstart.csv and ./quickstart.json.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build=${CODL_BUILD_DIR:-build}
exec "$build/bin/codlctl" run experiments/quickstart.yaml --report quickstart-report.html \
  --csv quickstart.csv --json quickstart.json "$@"
