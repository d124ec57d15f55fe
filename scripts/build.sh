#!/usr/bin/env bash
# Configures and builds CoDL into ./build (or $CODL_BUILD_DIR), installing missing Debian
# packages first. Usage: scripts/build.sh [extra cmake args]
#   CODL_DEPS=build|dev|test  package set (scripts/install-deps.sh; default dev: tests compile)
#   CODL_TARGETS="a b"        build only these targets (default: all)
#   CODL_JOBS=N               parallel jobs (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh "${CODL_DEPS:-dev}"
build=${CODL_BUILD_DIR:-build}
# ccache (when installed) may reuse objects from another checkout of the same tree.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
jobs=${CODL_JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
targets=()
for t in ${CODL_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
