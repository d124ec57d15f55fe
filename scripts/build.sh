#!/usr/bin/env bash
# Configures and builds CoDL into ./build (or $CODL_BUILD_DIR), installing missing Debian
# packages first. Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${CODL_BUILD_DIR:-build}
# ccache (when installed) may reuse objects from another checkout of the same tree.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
jobs=${CODL_JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j "$jobs"
