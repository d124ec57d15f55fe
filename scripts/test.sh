#!/usr/bin/env bash
# Builds CoDL with warnings as errors and runs every test (unit, integration with real processes,
# browser, promtool). Tests that need a GPU or privileges this machine lacks skip with a stated
# reason.
set -euo pipefail
cd "$(dirname "$0")/.."
# The README's first command, end to end (its own unity build in build/quickstart and a real
# experiment): a fresh clone must run it. Its table goes to a log; a failure prints it.
qs_log=$(mktemp)
if ! env -u CODL_BUILD_DIR bash scripts/quickstart.sh >"$qs_log" 2>&1; then
  cat "$qs_log"; echo "test.sh: scripts/quickstart.sh failed" >&2; exit 1
fi
echo "scripts/quickstart.sh: ok ($(grep -c '^membw' "$qs_log") interference pairings reported)"
rm -f "$qs_log"
CODL_DEPS=test bash scripts/build.sh -DCODL_BUILD_TESTS=ON -DCODL_WERROR=ON
build=${CODL_BUILD_DIR:-build}
# Integration tests start real processes and time leases: run them one at a time on small boxes.
ctest --test-dir "$build" --output-on-failure -j "${CODL_TEST_JOBS:-2}" -LE integration
ctest --test-dir "$build" --output-on-failure -j 1 -L integration
# The sanitizer stage (ASan+UBSan on unit and integration tests, TSan on the rpc/agent/controller
# tests, each fuzz target for a bounded time): on by default, as CI runs it; CODL_SANITIZERS=0
# skips it while developing. Times: docs/development.md#sanitizers.
if [[ "${CODL_SANITIZERS:-1}" != 0 ]]; then
  bash scripts/sanitize.sh
fi
