#!/usr/bin/env bash
# The first thing to run: builds what the quickstart needs (installing missing packages) and runs
# the quickstart experiment on the embedded controller + agent. Prints the slowdown table;
# results land in ./codl-results.db, ./quickstart-report.html, ./quickstart.csv and
# ./quickstart.json. scripts/test.sh builds the rest (tests, with their packages).
set -euo pipefail
cd "$(dirname "$0")/.."
# `codlctl run` starts the controller and agent in-process and spawns codl-inject (antagonists)
# and codl-victim (the experiment's victim) from beside itself; codlctl's build also brings
# codl-controller and codl-agent. No tests: they need the test package set.
CODL_DEPS=build CODL_TARGETS="codlctl codl-inject codl-victim" bash scripts/build.sh \
  -DCODL_BUILD_TESTS=OFF
build=${CODL_BUILD_DIR:-build}
exec "$build/bin/codlctl" run experiments/quickstart.yaml --report quickstart-report.html \
  --csv quickstart.csv --json quickstart.json "$@"
