#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang and runs each for a while.
# Usage: scripts/fuzz.sh [SECONDS]        every target SECONDS (default 30) in build-fuzz/
#        scripts/fuzz.sh --run-one BINARY CORPUS SECONDS
#                                          one target on a scratch copy of CORPUS (the ctest)
# Environment: BUILD_DIR (default build-fuzz), JOBS (ninja -j and targets run at once, default 2).
# New inputs go to a scratch corpus, never into the repository's seed corpus; a crash leaves its
# input as build-fuzz/fuzz-out/<target>/crash-* and makes the script exit non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

run_one() {
  local bin=$1 corpus=$2 seconds=$3 work
  work=$(mktemp -d "${TMPDIR:-/tmp}/codl-fuzz.XXXXXX")
  # A RETURN trap outlives its function in bash: it clears itself, or it would run again when
  # the caller returns (where `work` is unset: "unbound variable" under set -u).
  trap 'rm -rf "$work"; trap - RETURN' RETURN
  cp -r "$corpus/." "$work/"
  local out=${FUZZ_OUT:-$work}
  mkdir -p "$out"
  # A target's dictionary (tests/fuzz/<target>/dict) steers mutations to its syntax: for the
  # YAML readers, anchors and aliases, whose expansion a document must not escape.
  local dict=()
  [[ -f "$corpus/../dict" ]] && dict=(-dict="$corpus/../dict")
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    "${dict[@]}" -artifact_prefix="$out/" -print_final_stats=1 "$work"
}

if [[ "${1:-}" == --run-one ]]; then
  shift
  run_one "$@"
  exit $?
fi

seconds=${1:-30}
build=${BUILD_DIR:-build-fuzz}
targets=(experiment daemon_config inject_args progress_parser phases_json inject_protocol)
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found" >&2; exit 2; }
# -O1 -g1 and unity, as the other instrumented builds: libFuzzer needs line tables for its
# reports, not full debug info, and the targets' libraries compile in a few large units.
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None \
  "-DCMAKE_C_FLAGS=-O1 -g1" "-DCMAKE_CXX_FLAGS=-O1 -g1" -DCMAKE_UNITY_BUILD=ON \
  -DCODL_FUZZ=ON -DCODL_WITH_CUDA=OFF -DCODL_BUILD_TESTS=OFF -DCODL_BUILD_BENCH=OFF >/dev/null
ninja -C "$build" -j"${JOBS:-2}" "${targets[@]/#/fuzz_}"
# The targets run side by side, JOBS at a time (each libFuzzer process uses one core), each
# still for SECONDS; their summaries are printed in order once all have ended.
fuzz_target() {
  local t=$1
  mkdir -p "$build/fuzz-out/$t"
  FUZZ_OUT="$build/fuzz-out/$t" run_one "$build/bin/fuzz_$t" "tests/fuzz/$t/corpus" "$seconds" \
    >"$build/fuzz-out/$t/log.txt" 2>&1 || true
}
running=0
for t in "${targets[@]}"; do
  if ((running >= ${JOBS:-2})); then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_target "$t" &
  running=$((running + 1))
done
wait
status=0
for t in "${targets[@]}"; do
  echo "== fuzz_$t: ${seconds}s"
  grep -E "^(stat::|==|#[0-9]+ +DONE)|ERROR|SUMMARY" "$build/fuzz-out/$t/log.txt" || true
  if ls "$build/fuzz-out/$t"/crash-* "$build/fuzz-out/$t"/timeout-* "$build/fuzz-out/$t"/oom-* \
    >/dev/null 2>&1; then
    echo "fuzz_$t: found a failing input in $build/fuzz-out/$t (log: $build/fuzz-out/$t/log.txt)" >&2
    status=1
  fi
done
exit $status
