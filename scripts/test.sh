#!/usr/bin/env bash
# Builds CoDL with warnings as errors and runs every test: CI's command (.ci/run) and the
# README's. The tree is compiled twice for the tests, not four and a half times:
#   deps        the `test` package set (scripts/install-deps.sh test)
#   quickstart  the README's first command end to end, in build/quickstart (unity, -O2), with
#               -Werror; its table goes to a log, printed when it fails
#   plain       the rest of that optimized tree (controller, agent, bench binaries, CUDA code)
#               and the checks that need uninstrumented binaries or CUDA: the labels deploy, repo
#               and gpu, and the GPU host tests with CUDA built in
#   gpusim      the GPU code on gpusim, the CPU stand-in for a CUDA node (build/gpusim,
#               -DCODL_GPU_SIM=ON; docs/gpu.md#gpusim-the-gpu-code-without-a-gpu): label gpusim,
#               then tests/gpu/run_gpu_checks.sh --sim
#   asan        every unit and integration test, built with ASan+UBSan and -Werror
#   tsan        the rpc/agent/controller tests under TSan
#   fuzz        every libFuzzer target for CODL_FUZZ_SECONDS (default 20)
# Each stage prints "test.sh: stage NAME: N s"; a table of all of them closes the run.
# Environment:
#   CODL_STAGES="quickstart asan"  run only these stages (default: all, in the order above)
#   CODL_SANITIZERS=0              while developing: deps, quickstart, plain, then the unit and
#                                  integration tests in an uninstrumented build (build/, stage
#                                  `dev`) instead of asan/tsan/fuzz
#   CODL_JOBS, CODL_TEST_JOBS      ninja -j, and ctest -j for the unit tests and the plain
#                                  stage's checks (default 2)
#   CODL_INTEGRATION_JOBS          ctest -j for the ASan integration tests (default 3)
# Figures (cold and warm): docs/development.md#what-ci-runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
jobs=${CODL_JOBS:-2}
test_jobs=${CODL_TEST_JOBS:-2}
qs_build=build/quickstart

if [[ -n "${CODL_STAGES:-}" ]]; then
  read -r -a stages <<<"$CODL_STAGES"
elif [[ "${CODL_SANITIZERS:-1}" == 0 ]]; then
  stages=(deps quickstart plain gpusim dev)
else
  stages=(deps quickstart plain gpusim asan tsan fuzz)
fi

deps() { bash scripts/install-deps.sh test; }

quickstart() {
  local log
  log=$(mktemp)
  # Tests are configured (not built: CODL_TESTS_IN_ALL=OFF) so that the plain stage reuses this
  # folder without a second configure; neither option changes how the binaries compile.
  if ! env -u CODL_BUILD_DIR CODL_JOBS="$jobs" \
    CODL_QUICKSTART_CMAKE_ARGS="-DCODL_WERROR=ON -DCODL_BUILD_TESTS=ON -DCODL_TESTS_IN_ALL=OFF" \
    bash scripts/quickstart.sh >"$log" 2>&1; then
    cat "$log"
    echo "test.sh: scripts/quickstart.sh failed" >&2
    return 1
  fi
  # Not just printed: at least one interference pairing must have a slowdown (n >= 3 measured
  # trials). A victim too short for its antagonists' samples flags every trial and shows none.
  local measured
  measured=$(awk '$1 ~ /^membw@/ && $2 + 0 >= 3' "$log" | wc -l)
  if ((measured == 0)); then
    cat "$log"
    echo "test.sh: the quickstart measured no interference pairing (every one has n < 3)" >&2
    return 1
  fi
  echo "scripts/quickstart.sh: ok ($(grep -c '^membw' "$log") interference pairings reported," \
    "$measured with a slowdown)"
  rm -f "$log"
}

# What needs optimized, uninstrumented binaries: the deployment checks (ELF dependencies, the
# install layout, systemd, Slurm, Kubernetes, Prometheus, Grafana), the repository checks and
# the GPU tests, whose CUDA code the sanitizer builds leave out, and the controller's RSS bound.
plain() {
  cmake --build "$qs_build" -j "$jobs"
  cmake --build "$qs_build" -j "$jobs" --target codl_plain_tests
  ctest --test-dir "$qs_build" --output-on-failure -j "$test_jobs" -L 'deploy|repo|gpu'
  # Their expectations follow the build's CUDA (the asan stage runs them without it).
  local t
  for t in gpu_injectors_test gpu_cli_test; do
    CODL_BIN_DIR=$root/$qs_build/bin "$qs_build/bin/$t" --gtest_brief=1
  done
  # Skipped under the sanitizers (their allocators keep freed memory): measured here.
  CODL_BIN_DIR=$root/$qs_build/bin "$qs_build/bin/security_plan_memory_test" --gtest_brief=1
}

# The GPU injectors, the CUDA victim and the NVML telemetry on the stand-in. Only what those
# tests need is built (codl_gpusim_tests); the sources compile as in the dev build (ccache).
gpusim() {
  local build=build/gpusim
  if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
    echo "test.sh: stage gpusim skipped: no CUDA toolkit (nvcc) to compile the GPU code against"
    return 0
  fi
  cmake -S . -B "$build" -G Ninja -DCODL_GPU_SIM=ON -DCODL_WERROR=ON -DCODL_BUILD_TESTS=ON \
    -DCODL_TESTS_IN_ALL=OFF -DCODL_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" -j "$jobs" --target codl_gpusim_tests
  ctest --test-dir "$build" --output-on-failure -j "$test_jobs" -L gpusim
  # The hardware check script itself, every step on the stand-in, reusing this build.
  if ! CODL_GPU_BUILD_DIR=$root/$build CODL_GPU_SKIP_BUILD=1 CODL_GPU_BUDGET_S=300 JOBS=$jobs \
    bash tests/gpu/run_gpu_checks.sh --sim --out "$build/gpu-checks" >"$build/gpu-checks.log" 2>&1; then
    cat "$build/gpu-checks.log"
    echo "test.sh: tests/gpu/run_gpu_checks.sh --sim failed (summary: $build/gpu-checks/gpu_summary.json)" >&2
    return 1
  fi
  tail -1 "$build/gpu-checks.log"
  # Nothing of the stand-in outlives its tests: no node or communicator in /dev/shm.
  local left
  left=$(find /dev/shm -maxdepth 1 -user "$(id -u)" -name 'codl-gpusim-*' -newer "$build/CMakeCache.txt" | head -5)
  if [[ -n "$left" ]]; then
    echo "test.sh: gpusim left shared memory behind: $left" >&2
    return 1
  fi
}

# The developer's loop without sanitizers (CODL_SANITIZERS=0).
dev() {
  CODL_DEPS=test CODL_JOBS="$jobs" bash scripts/build.sh -DCODL_BUILD_TESTS=ON -DCODL_WERROR=ON
  local build=${CODL_BUILD_DIR:-build}
  ctest --test-dir "$build" --output-on-failure -j "$test_jobs" -LE 'integration|deploy|repo|gpu'
  ctest --test-dir "$build" --output-on-failure -j 1 -L integration -LE 'deploy|gpu'
}

asan() { CODL_JOBS=$jobs bash scripts/sanitize.sh asan; }
tsan() { CODL_JOBS=$jobs bash scripts/sanitize.sh tsan; }
fuzz() { CODL_JOBS=$jobs bash scripts/sanitize.sh fuzz; }

names=()
times=()
current=""
total_start=$SECONDS
# The table is printed however the run ends; a failing stage is named. (Stages are called
# plainly, not under `||`, so that `set -e` still stops them at their first failing command.)
summary() {
  local status=$?
  echo "test.sh: stage times"
  for i in "${!names[@]}"; do printf 'test.sh:   %-10s %6d s\n' "${names[$i]}" "${times[$i]}"; done
  printf 'test.sh:   %-10s %6d s\n' total "$((SECONDS - total_start))"
  [[ -z "$current" ]] || echo "test.sh: stage $current failed (exit $status)" >&2
}
for s in "${stages[@]}"; do
  case $s in
    deps | quickstart | plain | gpusim | dev | asan | tsan | fuzz) ;;
    *) echo "test.sh: unknown stage '$s' (deps quickstart plain gpusim dev asan tsan fuzz)" >&2; exit 2 ;;
  esac
done
trap summary EXIT
for s in "${stages[@]}"; do
  current=$s
  start=$SECONDS
  "$s"
  names+=("$s")
  times+=("$((SECONDS - start))")
  echo "test.sh: stage $s: $((SECONDS - start)) s"
  current=""
done
