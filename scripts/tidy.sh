#!/usr/bin/env bash
# clang-tidy with the repository's .clang-tidy, on the compile commands of a configured build
# (CMAKE_EXPORT_COMPILE_COMMANDS is always on).
# Usage: scripts/tidy.sh [FILE.cc...]   (default: the .cc files changed against origin/main)
#   CODL_BUILD_DIR: the build folder (default build); CODL_JOBS: parallel runs (default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${CODL_BUILD_DIR:-build}
[[ -f "$build/compile_commands.json" ]] ||
  { echo "tidy.sh: no $build/compile_commands.json: configure first (scripts/build.sh)" >&2; exit 2; }
command -v clang-tidy >/dev/null || { echo "tidy.sh: clang-tidy not found (apt-get install clang-tidy)" >&2; exit 2; }
files=("$@")
if ((${#files[@]} == 0)); then
  base=origin/main; git rev-parse -q --verify "$base" >/dev/null || base=HEAD
  mapfile -t files < <(git diff --name-only --diff-filter=d "$base" -- '*.cc')
fi
((${#files[@]})) || { echo "tidy.sh: no .cc files to check"; exit 0; }
# Generated protobuf headers must exist for the files that include them.
cmake --build "$build" --target codl_proto >/dev/null 2>&1 || true
printf '%s\n' "${files[@]}" | xargs -P "${CODL_JOBS:-$(nproc)}" -n 1 clang-tidy -p "$build" --quiet
