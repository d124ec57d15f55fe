#!/usr/bin/env bash
# run_gpu_checks.sh — the GPU injectors end to end on a real GPU box, in under 8 minutes.
#
# Builds codl-inject (tools-only: no gRPC/yaml-cpp/SQLite/gtest needed), compiles two tiny nvcc
# programs from this folder (memcpy_baseline.cu, gemm_victim.cu), then:
#   * calibrates cuda_memcpy (h2d, d2h, d2d, bidir), nccl (1 rank) and mps_cotenant;
#   * compares cuda_memcpy --max with a bare cudaMemcpyAsync loop (goal >= 0.97x);
#   * holds levels 0.25/0.5/0.75 (goal |achieved/target - 1| <= 3%);
#   * runs a 1-rank NCCL allreduce antagonist and the rank-0 rendezvous publish line;
#   * starts MPS, runs a co-tenant, shows a GEMM victim's throughput drop, stops MPS.
# Every step has a timeout; failures are recorded and the script goes on. Results:
# $OUT/gpu_summary.json (OUT defaults to ./out), a table on stdout, logs in $OUT/logs/.
#
# Environment: OUT, CODL_GPU_BUILD_DIR (default <repo>/build-gpu-check), CODL_GPU_SKIP_BUILD=1
# (reuse that build), JOBS (default nproc), CODL_GPU_BUDGET_S (default 450: later device steps
# are skipped once the script has run this long).
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-./out}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
LOGS=$OUT/logs
BUILD=${CODL_GPU_BUILD_DIR:-$ROOT/build-gpu-check}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
BUDGET_S=${CODL_GPU_BUDGET_S:-450}
START=$(date +%s)
INJECT=$BUILD/bin/codl-inject
TOOLS=$BUILD/gpu-check-tools
MPS_ROOT=/tmp/codl-gpu-check.$$  # short: MPS socket paths are limited
SCRIPT_DAEMON_PIPE=""            # set while this script's own MPS daemon runs
COTENANT_PID=""

CHECKS=()  # JSON objects, one per check
ROWS=()    # "name|status|value|detail" for the table

# ---- helpers ---------------------------------------------------------------------------------

elapsed() { echo $(( $(date +%s) - START )); }

json_str() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\t'/\\t}
  s=${s//$'\r'/}
  printf '"%s"' "$s"
}

# record NAME STATUS VALUE DETAIL — STATUS: pass | fail | skip | info; VALUE: a number or "".
record() {
  local name=$1 status=$2 value=$3 detail=$4 v=null
  [[ $value =~ ^-?[0-9.]+([eE][-+]?[0-9]+)?$ ]] && v=$value
  CHECKS+=("{\"check\":$(json_str "$name"),\"status\":\"$status\",\"value\":$v,\"detail\":$(json_str "$detail")}")
  ROWS+=("$name|$status|$value|$detail")
  printf '[%4ss] %-28s %-5s %s %s\n' "$(elapsed)" "$name" "$status" "$value" "$detail"
}

# run_logged NAME TIMEOUT_S CMD... — stdout+stderr to $LOGS/NAME.log; returns the exit code
# (124 = timed out).
LAST_RC=0
LAST_LIMIT=0
run_logged() {
  local name=$1 limit=$2
  shift 2
  timeout -k 5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  LAST_RC=$?
  LAST_LIMIT=$limit
  return "$LAST_RC"
}

# The last value of a numeric field in the summary line of a codl-inject --json log.
summary_num() {
  grep '"summary":true' "$1" 2>/dev/null | tail -1 |
    sed -n "s/.*\"$2\":\(-\{0,1\}[0-9][0-9.eE+-]*\).*/\1/p"
}
json_num() { sed -n "s/.*\"$2\":\(-\{0,1\}[0-9][0-9.eE+-]*\).*/\1/p" "$1" 2>/dev/null | tail -1; }

# awk arithmetic: calc "expr" prints the value; check "expr" succeeds when expr is true.
calc() { awk "BEGIN { printf \"%.6g\", $1 }"; }
check() { awk "BEGIN { exit !($1) }"; }

over_budget() { (( $(elapsed) > BUDGET_S )); }

# Why the last run_logged step failed: its timeout, or the last non-JSON lines of its log.
last_error() {
  local why=""
  [[ $LAST_RC == 124 || $LAST_RC == 137 ]] && why="timed out after ${LAST_LIMIT}s; "
  echo "$why$(grep -v '^{' "$1" 2>/dev/null | tail -3 | tr '\n' ' ' | cut -c1-300)"
}

# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  if [[ -n $COTENANT_PID ]] && kill -0 "$COTENANT_PID" 2>/dev/null; then
    kill -TERM "$COTENANT_PID" 2>/dev/null
    sleep 2
    kill -KILL "$COTENANT_PID" 2>/dev/null
  fi
  if [[ -n $SCRIPT_DAEMON_PIPE ]]; then
    echo quit | timeout 20 env CUDA_MPS_PIPE_DIRECTORY="$SCRIPT_DAEMON_PIPE" \
      nvidia-cuda-mps-control >/dev/null 2>&1
    SCRIPT_DAEMON_PIPE=""
  fi
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

write_summary() {
  local pass=0 fail=0 skip=0 row status joined
  for row in "${ROWS[@]}"; do
    status=$(cut -d'|' -f2 <<<"$row")
    case $status in pass) ((pass++)) ;; fail) ((fail++)) ;; skip) ((skip++)) ;; esac
  done
  joined=$(IFS=,; echo "${CHECKS[*]}")
  {
    printf '{"script":"tests/gpu/run_gpu_checks.sh","elapsed_s":%s,' "$(elapsed)"
    printf '"device":%s,"passed":%d,"failed":%d,"skipped":%d,"checks":[%s]}\n' \
      "$(json_str "${DEVICE_DESC:-unknown}")" "$pass" "$fail" "$skip" "$joined"
  } >"$OUT/gpu_summary.json"
  echo
  printf '%-28s %-5s %-14s %s\n' CHECK STATUS VALUE DETAIL
  printf '%-28s %-5s %-14s %s\n' ----- ------ ----- ------
  for row in "${ROWS[@]}"; do
    IFS='|' read -r n s v d <<<"$row"
    printf '%-28s %-5s %-14s %s\n' "$n" "$s" "$v" "$d"
  done
  echo
  echo "passed $pass, failed $fail, skipped $skip in $(elapsed)s; summary: $OUT/gpu_summary.json"
}

# ---- 0. environment --------------------------------------------------------------------------

DEVICE_DESC=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode \
  --format=csv,noheader 2>/dev/null | head -4 | tr '\n' ';')
CC=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [[ -n $DEVICE_DESC ]]; then
  record env.gpu info "" "$DEVICE_DESC"
else
  record env.gpu info "" "nvidia-smi found no GPU (device checks will skip)"
fi
record env.nvcc info "" "$("$NVCC" --version 2>/dev/null | tail -1)"

# ---- 1. build ----------------------------------------------------------------------------------

cmake_args=(-S "$ROOT" -B "$BUILD" -G Ninja -DCODL_TOOLS_ONLY=ON -DCODL_BUILD_TESTS=OFF
  -DCMAKE_BUILD_TYPE=Release)
[[ -n $CC ]] && cmake_args+=(-DCMAKE_CUDA_ARCHITECTURES="${CC}-real")
# NCCL from PyTorch's wheels (nvidia-nccl-cu*) when the toolkit has none.
if [[ ! -f /usr/local/cuda/include/nccl.h ]] && command -v python3 >/dev/null; then
  nccl_dir=$(timeout 30 python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
  if [[ -n $nccl_dir && -f $nccl_dir/include/nccl.h ]]; then
    nccl_lib=""
    for f in "$nccl_dir"/lib/libnccl.so*; do [[ -e $f ]] && nccl_lib=$f && break; done
    cmake_args+=(-DNCCL_INCLUDE_DIR="$nccl_dir/include" -DNCCL_LIBRARY="$nccl_lib")
    record env.nccl info "" "NCCL from $nccl_dir"
  fi
fi
mkdir -p "$TOOLS"
arch=${CC:+sm_$CC}
arch=${arch:-sm_90}
# The two helper programs compile while CMake builds (kept when reusing a build).
build_tools() {
  if [[ ${CODL_GPU_SKIP_BUILD:-0} == 1 && -x $TOOLS/memcpy_baseline && -x $TOOLS/gemm_victim ]]; then
    return 0
  fi
  timeout -k 5 180 "$NVCC" -O2 -std=c++17 -arch="$arch" -o "$TOOLS/memcpy_baseline" \
    "$ROOT/tests/gpu/memcpy_baseline.cu" &&
    timeout -k 5 180 "$NVCC" -O2 -std=c++17 -arch="$arch" -o "$TOOLS/gemm_victim" \
      "$ROOT/tests/gpu/gemm_victim.cu" -lcublas
}
build_tools >"$LOGS/nvcc_tools.log" 2>&1 &
tools_pid=$!
if [[ ${CODL_GPU_SKIP_BUILD:-0} == 1 && -x $INJECT ]]; then
  record build skip "" "CODL_GPU_SKIP_BUILD=1: reusing $INJECT"
else
  if run_logged cmake_configure 120 cmake "${cmake_args[@]}" &&
     run_logged cmake_build 300 cmake --build "$BUILD" --target codl-inject -j "$JOBS"; then
    record build pass "" "codl-inject built in $BUILD ($(grep -o 'CUDA [A-Z]*, NCCL [A-Z]*' "$LOGS/cmake_configure.log" | head -1))"
    # codl-victim is a bonus here; its failure does not block the injector checks.
    run_logged build_victim 180 cmake --build "$BUILD" --target codl-victim -j "$JOBS" ||
      record build.codl-victim fail "" "see logs/build_victim.log"
  else
    record build fail "" "$(grep -m3 -E 'error|Error' "$LOGS"/cmake_*.log | cut -c1-300 | tr '\n' ' ')"
  fi
fi
if wait "$tools_pid"; then
  record build.nvcc_tools pass "" "memcpy_baseline, gemm_victim"
else
  record build.nvcc_tools fail "" "$(tail -2 "$LOGS/nvcc_tools.log" | tr '\n' ' ')"
fi

if [[ ! -x $INJECT ]]; then
  record device skip "" "codl-inject was not built; nothing to run"
  write_summary
  exit 1
fi

# ---- 2. availability -------------------------------------------------------------------------

timeout 60 "$INJECT" --list --json >"$LOGS/list.json" 2>&1
avail() { grep "\"name\":\"$1\"" "$LOGS/list.json" | grep -q '"available":true'; }
reason() { grep "\"name\":\"$1\"" "$LOGS/list.json" | sed -n 's/.*"reason":"\([^"]*\)".*/\1/p'; }
for inj in cuda_memcpy nccl mps_cotenant; do
  if avail "$inj"; then record "list.$inj" pass "" "available"; else record "list.$inj" info "" "unavailable: $(reason "$inj")"; fi
done
if ! avail cuda_memcpy; then
  echo "SKIPPING all device checks: no usable CUDA device here ($(reason cuda_memcpy))"
  record device skip "" "no usable CUDA device: $(reason cuda_memcpy)"
  write_summary
  exit 0
fi

# ---- 3. cuda_memcpy: peak vs a bare loop, then levels ------------------------------------------

declare -A PEAK
for dir in h2d d2h d2d bidir; do
  over_budget && { record "memcpy.$dir.calibrate" skip "" "time budget"; continue; }
  log=memcpy_${dir}_calibrate
  if run_logged "$log" 40 "$INJECT" cuda_memcpy --set direction=$dir --calibrate --duration 3s --json; then
    PEAK[$dir]=$(summary_num "$LOGS/$log.log" achieved_rate)
    record "memcpy.$dir.peak_GBps" info "$(calc "${PEAK[$dir]} / 1e9")" "cov $(summary_num "$LOGS/$log.log" cov)"
  else
    record "memcpy.$dir.calibrate" fail "" "$(last_error "$LOGS/$log.log")"
    continue
  fi
  [[ $dir == bidir ]] && continue
  if [[ -x $TOOLS/memcpy_baseline ]]; then
    if run_logged "memcpy_${dir}_baseline" 40 "$TOOLS/memcpy_baseline" "$dir" 67108864 3; then
      base=$(json_num "$LOGS/memcpy_${dir}_baseline.log" bytes_per_s)
      ratio=$(calc "${PEAK[$dir]} / $base")
      if check "$ratio >= 0.97"; then st=pass; else st=fail; fi
      record "memcpy.$dir.vs_baseline" "$st" "$ratio" "injector $(calc "${PEAK[$dir]}/1e9") GB/s vs cudaMemcpyAsync loop $(calc "$base/1e9") GB/s (goal >= 0.97)"
    else
      record "memcpy.$dir.vs_baseline" fail "" "baseline: $(last_error "$LOGS/memcpy_${dir}_baseline.log")"
    fi
  else
    record "memcpy.$dir.vs_baseline" skip "" "memcpy_baseline not built"
  fi
done

for dir in h2d d2d; do
  [[ -n ${PEAK[$dir]:-} ]] || continue
  for level in 0.25 0.5 0.75; do
    over_budget && { record "memcpy.$dir.level_$level" skip "" "time budget"; continue; }
    log=memcpy_${dir}_level_$level
    if run_logged "$log" 40 "$INJECT" cuda_memcpy --set direction=$dir --level "$level" \
        --peak "${PEAK[$dir]}" --duration 4s --json; then
      a=$(summary_num "$LOGS/$log.log" achieved_rate)
      t=$(summary_num "$LOGS/$log.log" target_rate)
      r=$(calc "$a / $t")
      if check "$r >= 0.97 && $r <= 1.03"; then st=pass; else st=fail; fi
      record "memcpy.$dir.level_$level" "$st" "$r" "achieved/target (goal within 3%), cov $(summary_num "$LOGS/$log.log" cov)"
    else
      record "memcpy.$dir.level_$level" fail "" "$(last_error "$LOGS/$log.log")"
    fi
  done
done

# ---- 4. nccl: a 1-rank allreduce antagonist, and the rendezvous publish line --------------------

if ! avail nccl; then
  record nccl skip "" "$(reason nccl)"
elif over_budget; then
  record nccl skip "" "time budget"
else
  if run_logged nccl_calibrate 60 "$INJECT" nccl --set op=allreduce --set size=64MiB --calibrate --duration 3s --json; then
    peak=$(summary_num "$LOGS/nccl_calibrate.log" achieved_rate)
    algbw=$(summary_num "$LOGS/nccl_calibrate.log" algbw)
    record nccl.allreduce_1rank_peak_GBps info "$(calc "$peak/1e9")" "busbw (= algbw $(calc "$algbw/1e9") GB/s with 1 rank)"
    if run_logged nccl_level 60 "$INJECT" nccl --set op=allreduce --set size=64MiB --level 0.5 \
        --peak "$peak" --duration 4s --json; then
      r=$(calc "$(summary_num "$LOGS/nccl_level.log" achieved_rate) / $(summary_num "$LOGS/nccl_level.log" target_rate)")
      if check "$r >= 0.97 && $r <= 1.03"; then st=pass; else st=fail; fi
      record nccl.allreduce_level_0.5 "$st" "$r" "achieved/target (goal within 3%)"
    else
      record nccl.allreduce_level_0.5 fail "" "$(last_error "$LOGS/nccl_level.log")"
    fi
  else
    record nccl.allreduce_1rank fail "" "$(last_error "$LOGS/nccl_calibrate.log")"
  fi
  # Rank 0 of 2 must print the publish line first; with no rank 1 it then times out cleanly.
  run_logged nccl_rendezvous 40 "$INJECT" nccl --set ranks=2 --set rank=0 \
    --set rendezvous_key=gpu-check/nccl --set init_timeout=5s --max --duration 2s --json
  rc=$?
  first=$(grep -m1 '^{' "$LOGS/nccl_rendezvous.log")
  if [[ $first =~ ^\{\"rendezvous_publish\":\{\"key\":\"gpu-check/nccl\",\"value_hex\":\"[0-9a-f]{256}\"\}\}$ ]] &&
     [[ $rc == 1 ]] && grep -q "not all ranks joined within" "$LOGS/nccl_rendezvous.log"; then
    record nccl.rendezvous_publish pass "" "publish line is the first JSON line, then a clean init timeout (exit 1)"
  else
    record nccl.rendezvous_publish fail "" "exit $rc; first line: ${first:0:120}"
  fi
fi

# ---- 5. MPS: co-tenant vs a GEMM victim -------------------------------------------------------

if ! avail mps_cotenant; then
  record mps skip "" "$(reason mps_cotenant)"
elif over_budget; then
  record mps skip "" "time budget"
else
  mkdir -p "$MPS_ROOT"
  # a) the injector starts its own daemon, calibrates, and quits it.
  own=$MPS_ROOT/own
  if run_logged mps_calibrate 90 "$INJECT" mps_cotenant --set sm_percent=50 \
      --set pipe_dir="$own/pipe" --set log_dir="$own/log" --calibrate --duration 3s --json; then
    record mps.cotenant_peak_TFLOPs info "$(calc "$(summary_num "$LOGS/mps_calibrate.log" achieved_rate)/1e12")" \
      "sm_share $(summary_num "$LOGS/mps_calibrate.log" sm_share)% at sm_percent=50"
    # After the run nothing may answer on the injector's pipe dir any more.
    if grep -q '^{"mps":{.*"started":true}}$' "$LOGS/mps_calibrate.log" &&
       ! echo get_server_list | timeout 10 env CUDA_MPS_PIPE_DIRECTORY="$own/pipe" \
           nvidia-cuda-mps-control >"$LOGS/mps_own_after.log" 2>&1; then
      record mps.own_daemon pass "" "started, announced, and quit afterwards"
    else
      record mps.own_daemon fail "" "mps line or daemon shutdown not as expected"
    fi
    # The agent acts on the generic victim_env line (exports_victim_env), not on the mps line.
    if grep -q "^{\"victim_env\":{.*\"CUDA_MPS_PIPE_DIRECTORY\":\"$own/pipe\"" "$LOGS/mps_calibrate.log"; then
      record mps.victim_env pass "" "victim_env line names the pipe dir"
    else
      record mps.victim_env fail "" "no victim_env line with CUDA_MPS_PIPE_DIRECTORY=$own/pipe"
    fi
  else
    record mps.calibrate fail "" "$(last_error "$LOGS/mps_calibrate.log") (logs: $own/log)"
  fi

  # b) a daemon this script starts; the victim runs alone, then beside the co-tenant.
  shared=$MPS_ROOT/shared
  mkdir -p "$shared/pipe" "$shared/log"
  # An env prefix rather than a function, so `timeout` can run it.
  SHARED_ENV=(env CUDA_MPS_PIPE_DIRECTORY="$shared/pipe" CUDA_MPS_LOG_DIRECTORY="$shared/log")
  if [[ ! -x $TOOLS/gemm_victim ]]; then
    record mps.victim_drop skip "" "gemm_victim not built"
  elif timeout 30 "${SHARED_ENV[@]}" nvidia-cuda-mps-control -d >"$LOGS/mps_daemon.log" 2>&1; then
    SCRIPT_DAEMON_PIPE=$shared/pipe
    if run_logged victim_alone 60 "${SHARED_ENV[@]}" "$TOOLS/gemm_victim" 5; then
      base=$(json_num "$LOGS/victim_alone.log" tflops)
      "$INJECT" mps_cotenant --set sm_percent=50 --set pipe_dir="$shared/pipe" \
        --set log_dir="$shared/log" --max --duration 40s --json >"$LOGS/mps_cotenant.log" 2>&1 &
      COTENANT_PID=$!
      for _ in $(seq 1 600); do
        grep -q '^{"mps":' "$LOGS/mps_cotenant.log" && break
        kill -0 "$COTENANT_PID" 2>/dev/null || break
        sleep 0.1
      done
      if grep -q '^{"mps":{.*"started":false}}$' "$LOGS/mps_cotenant.log"; then
        sleep 1  # let the co-tenant reach its steady state
        if run_logged victim_shared 60 "${SHARED_ENV[@]}" "$TOOLS/gemm_victim" 5; then
          inter=$(json_num "$LOGS/victim_shared.log" tflops)
          drop=$(calc "1 - $inter / $base")
          if check "$drop >= 0.10"; then st=pass; else st=fail; fi
          record mps.victim_drop "$st" "$drop" "GEMM victim $(calc "$base") -> $(calc "$inter") TFLOP/s beside a 50%-SM FMA co-tenant (goal: drop >= 10%)"
        else
          record mps.victim_drop fail "" "victim: $(last_error "$LOGS/victim_shared.log")"
        fi
      else
        record mps.cotenant fail "" "no mps line with started:false: $(last_error "$LOGS/mps_cotenant.log")"
      fi
      kill -TERM "$COTENANT_PID" 2>/dev/null
      for _ in $(seq 1 100); do kill -0 "$COTENANT_PID" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$COTENANT_PID" 2>/dev/null
      wait "$COTENANT_PID" 2>/dev/null
      COTENANT_PID=""
      if grep -q '"summary":true' "$LOGS/mps_cotenant.log"; then
        record mps.cotenant_stop pass "" "co-tenant stopped on SIGTERM with a summary"
      else
        record mps.cotenant_stop fail "" "no summary after SIGTERM"
      fi
    else
      record mps.victim_alone fail "" "$(last_error "$LOGS/victim_alone.log")"
    fi
    if echo quit | timeout 20 "${SHARED_ENV[@]}" nvidia-cuda-mps-control >>"$LOGS/mps_daemon.log" 2>&1; then
      record mps.daemon_quit pass "" "the script's daemon quit"
    else
      record mps.daemon_quit fail "" "quit failed: $(tail -1 "$LOGS/mps_daemon.log")"
    fi
    SCRIPT_DAEMON_PIPE=""
  else
    record mps.daemon_start fail "" "$(tail -2 "$LOGS/mps_daemon.log" | tr '\n' ' ')"
  fi
  # Keep the MPS logs with the results; drop the sockets.
  cp -r "$MPS_ROOT" "$OUT/mps-logs" 2>/dev/null
  find "$OUT/mps-logs" -type s -delete 2>/dev/null
  rm -rf "$MPS_ROOT"
fi

write_summary
grep -q '"status":"fail"' "$OUT/gpu_summary.json" && exit 1
exit 0
