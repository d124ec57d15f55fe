#!/usr/bin/env bash
# Builds CoDL with warnings as errors and runs every test (unit, integration with real processes,
# browser, promtool). Tests that need a GPU or privileges this machine lacks skip with a stated
# reason.
set -euo pipefail
cd "$(dirname "$0")/.."
CODL_DEPS=test bash scripts/build.sh -DCODL_BUILD_TESTS=ON -DCODL_WERROR=ON
build=${CODL_BUILD_DIR:-build}
# Integration tests start real processes and time leases: run them one at a time on small boxes.
ctest --test-dir "$build" --output-on-failure -j "${CODL_TEST_JOBS:-2}" -LE integration
ctest --test-dir "$build" --output-on-failure -j 1 -L integration
