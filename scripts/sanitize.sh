#!/usr/bin/env bash
# The sanitizer stage of CI (scripts/test.sh runs it unless CODL_SANITIZERS=0):
#   asan  ASan+UBSan build (build-asan/, gcc -O1, unity) of everything the tests need; unit and
#         integration tests; every process a test starts is instrumented too, and its reports
#         are collected in build-asan/sanitizer-logs/ (a daemon's stderr is often not shown).
#   tsan  TSan build (build-tsan/) of the rpc, agent and controller test binaries only; run.
#   fuzz  the libFuzzer targets (scripts/fuzz.sh, clang, build-fuzz/) for CODL_FUZZ_SECONDS each.
# Usage: scripts/sanitize.sh [asan] [tsan] [fuzz]        (default: all three, in that order)
# Environment: CODL_JOBS (ninja -j, default 2), CODL_FUZZ_SECONDS (default 20),
#   CODL_TEST_JOBS (ctest -j for unit tests, default 2), CODL_INTEGRATION_JOBS (ctest -j for the
#   integration tests, default 3). Timings go to stdout ("sanitize.sh:").
# Figures (build and run times, cold and warm) are in docs/development.md#what-ci-runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
jobs=${CODL_JOBS:-2}
stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(asan tsan fuzz)

timed() {  # timed LABEL COMMAND...: runs it, prints how long it took
  local label=$1 start=$SECONDS
  shift
  "$@"
  echo "sanitize.sh: $label: $((SECONDS - start)) s"
}

# Fails when any instrumented process (test or child) wrote a report into $1.
check_reports() {
  local dir=$1 f found=0
  compgen -G "$dir/*" >/dev/null || return 0
  for f in "$dir"/*; do
    # A finding always says ERROR/SUMMARY (ASan, LSan, TSan) or "runtime error" (UBSan). A log
    # without one is the sanitizer's own trouble, e.g. LeakSanitizer's "Unable to get registers
    # from thread N" when a test kills a process during its exit-time leak check: shown, not
    # failed on.
    if ! grep -qE 'ERROR: |SUMMARY: |runtime error|WARNING: ThreadSanitizer' "$f"; then
      echo "sanitize.sh: no finding in $f (shown, not failed on):" >&2
      head -20 "$f" >&2
      continue
    fi
    if ((found == 0)); then echo "sanitize.sh: sanitizer reports in $dir:" >&2; fi
    found=1
    echo "== $f" >&2
    head -60 "$f" >&2
  done
  ((found == 0))
}

configure() {  # configure DIR CMAKE-ARGS...: no CUDA and no bench/ binaries (the plain stage of
  # scripts/test.sh builds both, optimized)
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None -DCODL_WITH_CUDA=OFF \
    -DCODL_BUILD_TESTS=ON -DCODL_BUILD_BENCH=OFF -DCMAKE_UNITY_BUILD=ON "$@" >/dev/null
}

# Unit and integration tests, but not the checks of deploy files and of the repository itself
# (shell, node and packaging checks: no CoDL code to instrument).
asan() {
  local dir=build-asan logs=$root/build-asan/sanitizer-logs
  # -Werror: the tests compile only here (scripts/test.sh), so their warnings are caught here.
  timed "asan configure" configure "$dir" -DCODL_SANITIZE=address,undefined -DCODL_WERROR=ON \
    "-DCMAKE_C_FLAGS=-O1 -g1 -fno-omit-frame-pointer -fno-sanitize-recover=all" \
    "-DCMAKE_CXX_FLAGS=-O1 -g1 -fno-omit-frame-pointer -fno-sanitize-recover=all"
  timed "asan build" ninja -C "$dir" -j"$jobs"
  rm -rf "$logs" && mkdir -p "$logs"
  # detect_leaks: on; lsan.supp lists the leaks of uninstrumented libraries, each with why.
  export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:log_path=$logs/asan"
  export LSAN_OPTIONS="suppressions=$root/tests/security/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
  timed "asan unit tests" ctest --test-dir "$dir" --output-on-failure -j "${CODL_TEST_JOBS:-2}" \
    -LE 'integration|deploy|repo|gpu'
  # Three at a time on two cores (most of them wait on processes, leases and sleeps), except the
  # binaries whose tests assert timing or rates (codl_add_gtest SERIAL, and python_ddp): ctest
  # runs those alone (RUN_SERIAL). CODL_INTEGRATION_JOBS=1: all alone. Warm, 2026-12-07: 717 s
  # at -j1, 520 s at -j2, 423-431 s at -j3 (docs/development.md#what-ci-runs).
  timed "asan integration tests" ctest --test-dir "$dir" --output-on-failure \
    -j "${CODL_INTEGRATION_JOBS:-3}" -L integration -LE 'deploy|gpu'
  unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
  check_reports "$logs"
}

# security_bounds_test and security_authz_test are left out: they run a gRPC server and clients
# in one process, and Debian's gRPC is not instrumented, so TSan cannot see the hand-over of data
# through it (arena-allocated messages reused across gRPC threads, settings written before a
# call) and reports each one (docs/security.md, "Sanitizers and fuzzing in CI").
tsan_targets=(rpc_test agent_test controller_test security_subreaper_test)
tsan() {
  local dir=build-tsan logs=$root/build-tsan/sanitizer-logs t status=0
  timed "tsan configure" configure "$dir" -DCODL_SANITIZE=thread \
    "-DCMAKE_C_FLAGS=-O1 -g1" "-DCMAKE_CXX_FLAGS=-O1 -g1"
  timed "tsan build" ninja -C "$dir" -j"$jobs" "${tsan_targets[@]}"
  rm -rf "$logs" && mkdir -p "$logs"
  # The binaries directly, not ctest: ctest would also list the tests this build leaves out.
  export CODL_BIN_DIR=$root/$dir/bin
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$logs/tsan"
  TSAN_OPTIONS+=":suppressions=$root/tests/security/tsan.supp"
  for t in "${tsan_targets[@]}"; do
    timed "tsan $t" "$dir/bin/$t" --gtest_brief=1 || status=1
  done
  unset TSAN_OPTIONS CODL_BIN_DIR
  check_reports "$logs" && return $status
}

fuzz() {
  timed "fuzz build and runs" bash scripts/fuzz.sh "${CODL_FUZZ_SECONDS:-20}"
}

for s in "${stages[@]}"; do
  case $s in
    asan | tsan | fuzz) "$s" ;;
    *) echo "sanitize.sh: unknown stage '$s' (asan, tsan, fuzz)" >&2; exit 2 ;;
  esac
done
