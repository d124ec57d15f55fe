#!/usr/bin/env bash
# The first thing to run: builds what the quickstart needs (installing missing packages) and runs
# the quickstart experiment on the embedded controller + agent. Prints the slowdown table;
# results land in ./codl-results.db, ./quickstart-report.html, ./quickstart.csv and
# ./quickstart.json. scripts/test.sh builds the rest (tests, with their packages).
set -euo pipefail
cd "$(dirname "$0")/.."
# `codlctl run` starts the controller and agent in-process and spawns codl-inject (antagonists)
# and codl-victim (the experiment's victim) from beside itself: only those three are built.
# The quickstart has its own build folder, configured for a short first wait on a small machine
# (docs/development.md, "What CI runs"): no tests, no debug info, unity batches of 16 sources,
# clang (about 40 % faster than GCC on these sources at -O0; installed when missing), and the
# control plane (controller, agent, codlctl) at -O0. codl-inject's injectors and codl-victim,
# whose speed the figures depend on, stay at -O2. CC/CXX in the environment choose another
# compiler. scripts/test.sh reuses the folder for the rest of the optimized tree, passing its own
# options in CODL_QUICKSTART_CMAKE_ARGS (e.g. -DCODL_WERROR=ON).
build=${CODL_BUILD_DIR:-build/quickstart}
read -r -a extra <<<"${CODL_QUICKSTART_CMAKE_ARGS:-}"
export CC=${CC:-clang} CXX=${CXX:-clang++}
deps_extra=${CODL_DEPS_EXTRA:-}
[[ "$CXX" != clang++ ]] || deps_extra+=" clang"
CODL_BUILD_DIR="$build" CODL_DEPS=build CODL_DEPS_EXTRA="$deps_extra" \
  CODL_TARGETS="codlctl codl-inject codl-victim" \
  bash scripts/build.sh -DCODL_BUILD_TESTS=OFF -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
  -DCODL_CONTROL_PLANE_FLAGS=-O0 "${extra[@]}"
exec "$build/bin/codlctl" run experiments/quickstart.yaml --report quickstart-report.html \
  --csv quickstart.csv --json quickstart.json "$@"
