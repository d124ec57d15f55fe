#!/usr/bin/env bash
# run_gpu_checks.sh — the GPU injectors end to end on a real GPU box, in about 10 minutes.
#
# Sized for a first run with little device time: one call must bring back as much evidence as
# possible. So it
#   * captures the machine first ($OUT/env/: nvidia-smi -q, topo -m, PCIe generation/width,
#     clocks, compute/MIG mode, NUMA) and records a 250 ms nvidia-smi time series for the whole
#     run ($OUT/env/smi_250ms.csv);
#   * builds codl-inject (tools-only: no gRPC/yaml-cpp/SQLite/gtest) and two nvcc helpers
#     (memcpy_baseline.cu, gemm_victim.cu) with the library paths set so the dlopen'ed cuBLAS
#     and NCCL load;
#   * runs the checks in priority order under a time budget (STEPS below: the most important
#     first; a step that would not fit is recorded as skipped, with the reason);
#   * writes every step's log to $OUT/logs/, every injector run's samples to
#     $OUT/steps/<name>.csv (t_s,achieved,target), NCCL_DEBUG=INFO output to
#     $OUT/logs/nccl/, and a summary to $OUT/gpu_summary.json plus a table on stdout.
#
# Exit status: 0 every check passed; 1 a check failed (including a GPU that nvidia-smi sees but
# the injectors cannot use: that is a failure with the reason, never a skip); 3 no GPU here
# (nvidia-smi missing or listing none): the environment is captured, nothing is built or run,
# and the summary says so; 130 interrupted.
#
# --sim runs the very same steps on gpusim, the CPU stand-in for a CUDA node (docs/gpu.md#gpusim-
# the-gpu-code-without-a-gpu), so CI exercises this script: the build is -DCODL_GPU_SIM=ON, the
# CUDA libraries and nvidia-cuda-mps-control are gpusim's, nvidia-smi is not asked, and the
# summary says "simulated":true (its figures are the model's, not a GPU's).
# --out DIR is OUT=DIR.
#
# Environment: OUT (default ./out), CODL_GPU_BUILD_DIR (default <repo>/build-gpu-check, with
# --sim <repo>/build-gpu-check-sim),
# CODL_GPU_SKIP_BUILD=1 (reuse that build), JOBS (default nproc), CODL_GPU_BUDGET_S (default
# 540: the whole run, build included), CODL_GPU_DEVICE (default 0).
# shellcheck disable=SC2317  # the step functions are called through the STEPS table
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SIM=0
while (($#)); do
  case $1 in
    --sim) SIM=1 ;;
    --out)
      [[ $# -ge 2 ]] || { echo "run_gpu_checks.sh: --out needs a folder" >&2; exit 2; }
      OUT=$2
      shift
      ;;
    --out=*) OUT=${1#--out=} ;;
    -h | --help)
      sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "run_gpu_checks.sh: unknown argument '$1' (--sim, --out DIR, --help)" >&2
      exit 2
      ;;
  esac
  shift
done
OUT=${OUT:-./out}
mkdir -p "$OUT/logs/nccl" "$OUT/steps" "$OUT/env"
OUT=$(cd "$OUT" && pwd)
LOGS=$OUT/logs
BUILD=${CODL_GPU_BUILD_DIR:-$ROOT/build-gpu-check$( ((SIM)) && echo -sim)}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
BUDGET_S=${CODL_GPU_BUDGET_S:-540}
DEV=${CODL_GPU_DEVICE:-0}
START=$(date +%s)
INJECT=$BUILD/bin/codl-inject
VICTIM=$BUILD/bin/codl-victim
TOOLS=$BUILD/gpu-check-tools
MPS_ROOT=/tmp/codl-gpu-check.$$  # short: MPS socket paths are limited
SCRIPT_DAEMON_PIPE=""            # set while this script's own MPS daemon runs
BG_PIDS=()                       # background processes this script started (by PID)
SMI_PID=""
# The GPU's compute capability ("90"). Not CC: an exported CC is the C compiler CMake uses.
GPU_ARCH=""
# GEMM size of the victim and of the kernel=gemm co-tenant. gpusim computes every SGEMM's result
# on the host, at a modeled 2 GFLOP/s: its n is the co-tenant's smallest.
GEMM_N=4096
((SIM)) && GEMM_N=256
# Bytes per copy of the memcpy steps. gpusim's links are ~12x slower than an H100's PCIe, so its
# copies are smaller by as much: a copy lasts what it lasts on a GPU (~3 ms), which is what the
# level checks' control loop is tuned for (64 MiB copies of 33 ms under-deliver at level 0.25:
# docs/gpu.md#gpusim-the-gpu-code-without-a-gpu, "found, not yet fixed").
MEMCPY_BYTES=67108864
((SIM)) && MEMCPY_BYTES=4194304

CHECKS=()  # JSON objects, one per check
ROWS=()    # "name|status|value|detail" for the table

# ---- helpers ---------------------------------------------------------------------------------

elapsed() { echo $(($(date +%s) - START)); }

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
  CHECKS+=("{\"check\":$(json_str "$name"),\"status\":\"$status\",\"value\":$v,\"elapsed_s\":$(elapsed),\"detail\":$(json_str "$detail")}")
  ROWS+=("$name|$status|$value|$detail")
  printf '[%4ss] %-30s %-5s %s %s\n' "$(elapsed)" "$name" "$status" "$value" "$detail"
}

# run_logged NAME TIMEOUT_S CMD... — stdout+stderr to $LOGS/NAME.log; returns the exit code
# (124 = timed out). Injector runs (codl-inject ... --json) also leave $OUT/steps/NAME.csv.
LAST_RC=0
LAST_LIMIT=0
run_logged() {
  local name=$1 limit=$2
  shift 2
  timeout -k 5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  LAST_RC=$?
  LAST_LIMIT=$limit
  samples_csv "$LOGS/$name.log" "$OUT/steps/$name.csv"
  return "$LAST_RC"
}

# The per-report sample lines of a codl-inject --json log as CSV (nothing when there are none).
samples_csv() {
  grep -q '^{"t_s":' "$1" 2>/dev/null || return 0
  {
    echo "t_s,achieved,target"
    sed -n 's/^{"t_s":\([^,]*\),"achieved":\([^,]*\),"target":\([^,]*\),.*/\1,\2,\3/p' "$1"
  } >"$2"
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

# Why the last run_logged step failed: its timeout, or the last non-JSON lines of its log.
last_error() {
  local why=""
  [[ $LAST_RC == 124 || $LAST_RC == 137 ]] && why="timed out after ${LAST_LIMIT}s; "
  echo "$why exit $LAST_RC: $(grep -v '^{' "$1" 2>/dev/null | tail -3 | tr '\n' ' ' | cut -c1-300)"
}

# achieved/target of a level run, recorded as pass within 3%.
record_level() {
  local name=$1 log=$2 a t r st
  a=$(summary_num "$log" achieved_rate)
  t=$(summary_num "$log" target_rate)
  if [[ -z $a || -z $t ]]; then
    record "$name" fail "" "no summary line"
    return
  fi
  r=$(calc "$a / $t")
  if check "$r >= 0.97 && $r <= 1.03"; then st=pass; else st=fail; fi
  record "$name" "$st" "$r" "achieved/target (goal within 3%), cov $(summary_num "$log" cov)"
}

stop_bg() {
  local pid
  for pid in "${BG_PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null
      sleep 2
      kill -KILL "$pid" 2>/dev/null
    fi
  done
  BG_PIDS=()
}

cleanup() {
  stop_bg
  if [[ -n $SCRIPT_DAEMON_PIPE ]]; then
    echo quit | timeout 20 env CUDA_MPS_PIPE_DIRECTORY="$SCRIPT_DAEMON_PIPE" \
      nvidia-cuda-mps-control >/dev/null 2>&1
    SCRIPT_DAEMON_PIPE=""
  fi
  if [[ -n $SMI_PID ]]; then
    kill -TERM "$SMI_PID" 2>/dev/null
    SMI_PID=""
  fi
}
trap cleanup EXIT
trap 'echo "interrupted"; write_summary; exit 130' INT TERM

write_summary() {
  local pass=0 fail=0 skip=0 row status joined
  for row in "${ROWS[@]}"; do
    status=$(cut -d'|' -f2 <<<"$row")
    case $status in pass) ((pass++)) ;; fail) ((fail++)) ;; skip) ((skip++)) ;; esac
  done
  joined=$(
    IFS=,
    echo "${CHECKS[*]}"
  )
  {
    printf '{"script":"tests/gpu/run_gpu_checks.sh","elapsed_s":%s,"budget_s":%s,' "$(elapsed)" "$BUDGET_S"
    printf '"device":%s,"gpu_present":%s,"simulated":%s,"passed":%d,"failed":%d,"skipped":%d,"checks":[%s]}\n' \
      "$(json_str "${DEVICE_DESC:-none}")" "${GPU_PRESENT:-false}" "$( ((SIM)) && echo true || echo false)" \
      "$pass" "$fail" "$skip" "$joined"
  } >"$OUT/gpu_summary.json"
  echo
  printf '%-30s %-5s %-14s %s\n' CHECK STATUS VALUE DETAIL
  printf '%-30s %-5s %-14s %s\n' ----- ------ ----- ------
  for row in "${ROWS[@]}"; do
    IFS='|' read -r n s v d <<<"$row"
    printf '%-30s %-5s %-14s %s\n' "$n" "$s" "$v" "$d"
  done
  echo
  echo "passed $pass, failed $fail, skipped $skip in $(elapsed)s; summary: $OUT/gpu_summary.json"
}

# ---- 0. environment (always, GPU or not) -------------------------------------------------------

capture_env() {
  local e=$OUT/env
  {
    date -u
    uname -a
    cat /etc/os-release 2>/dev/null
  } >"$e/host.txt" 2>&1
  timeout 30 nvidia-smi -q >"$e/nvidia-smi-q.txt" 2>&1
  timeout 20 nvidia-smi topo -m >"$e/topo-m.txt" 2>&1
  timeout 20 nvidia-smi --query-gpu=index,name,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,compute_mode,mig.mode.current,memory.total,power.limit,driver_version,compute_cap \
    --format=csv >"$e/gpu.csv" 2>&1
  timeout 20 nvidia-smi -q -d CLOCK >"$e/clocks.txt" 2>&1
  timeout 20 nvidia-smi -q -d PERFORMANCE >"$e/performance.txt" 2>&1
  {
    timeout 10 numactl -H 2>&1 || echo "numactl not available"
    lscpu 2>&1
    local bus
    for bus in $(timeout 20 nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null); do
      echo "GPU $bus numa_node: $(cat "$(sysfs_node "$bus")" 2>/dev/null || echo unknown)"
    done
  } >"$e/numa.txt" 2>&1
  {
    env | grep -E '^(CUDA|NCCL|LD_LIBRARY_PATH|PATH|CC|CXX)=' | sort
    echo "--- nvcc"
    "$NVCC" --version 2>&1
    echo "--- libraries"
    ldconfig -p 2>/dev/null | grep -E 'libcuda\.|libnccl|libcublas' | head -20
  } >"$e/toolchain.txt" 2>&1
}

# nvidia-smi's bus id (00000000:19:00.0) -> the sysfs numa_node file (0000:19:00.0).
sysfs_node() {
  local bus
  bus=$(tr 'A-F' 'a-f' <<<"$1")
  echo "/sys/bus/pci/devices/${bus: -12}/numa_node"
}

# The GPU's NUMA node ("" when unknown: -1 or no sysfs entry).
gpu_numa_node() {
  local bus node=""
  bus=$(timeout 20 nvidia-smi -i "$DEV" --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null | head -1)
  [[ -n $bus ]] || return 0
  node=$(cat "$(sysfs_node "$bus")" 2>/dev/null)
  if [[ -n $node && $node != -1 ]]; then echo "$node"; fi
}

NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
capture_env
GPU_PRESENT=false
DEVICE_DESC=""
if ((SIM)); then
  # gpusim's node: its config, its MPS control first on PATH, a node of this run's own.
  export CODL_GPUSIM_CONFIG=${CODL_GPUSIM_CONFIG:-$ROOT/tests/gpu/gpusim_ci.yaml}
  export CODL_GPUSIM_NODE=${CODL_GPUSIM_NODE:-gpu-checks-$$}
  export PATH=$BUILD/gpusim/bin:$PATH
  DEVICE_DESC="simulated (gpusim): $CODL_GPUSIM_CONFIG"
elif command -v nvidia-smi >/dev/null 2>&1; then
  DEVICE_DESC=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode \
    --format=csv,noheader 2>/dev/null | grep -v -i 'no devices' | head -8 | tr '\n' ';')
fi
if [[ -z $DEVICE_DESC ]]; then
  echo "NO GPU: nvidia-smi is missing or lists no GPU; environment captured in $OUT/env, nothing run"
  record env.gpu skip "" "no GPU: $(command -v nvidia-smi >/dev/null && echo 'nvidia-smi lists none' || echo 'nvidia-smi not found') (exit 3)"
  write_summary
  exit 3
fi
GPU_PRESENT=true
record env.gpu info "" "$DEVICE_DESC"
if ((!SIM)); then
record env.pcie info "" "$(timeout 20 nvidia-smi -i "$DEV" --query-gpu=pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max --format=csv,noheader 2>&1 | head -1) (gen cur,max, width cur,max)"
record env.modes info "" "compute/MIG: $(timeout 20 nvidia-smi -i "$DEV" --query-gpu=compute_mode,mig.mode.current --format=csv,noheader 2>&1 | head -1); NUMA node: $(gpu_numa_node)"
GPU_ARCH=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
# 250 ms samples for the whole run, to line up with every step's elapsed_s.
nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,power.draw,clocks.sm,clocks.mem,temperature.gpu,pcie.link.gen.current,clocks_throttle_reasons.active \
  --format=csv -lms 250 >"$OUT/env/smi_250ms.csv" 2>&1 &
SMI_PID=$!
fi
echo "$START" >"$OUT/env/script_start_unix_s"

# ---- 1. library paths, then the build ----------------------------------------------------------

# codl-inject dlopen()s libnccl.so.2 and libcublas.so.13/12 at first use: put the toolkit's and
# (when the toolkit has none) PyTorch's wheel copies on LD_LIBRARY_PATH.
lib_dirs=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib)
NCCL_INC=""
NCCL_LIB=""
if [[ ! -f /usr/local/cuda/include/nccl.h ]] && command -v python3 >/dev/null; then
  for pkg in nccl cublas; do
    d=$(timeout 30 python3 -c "import nvidia.$pkg, os; print(list(nvidia.$pkg.__path__)[0])" 2>/dev/null)
    [[ -n $d && -d $d/lib ]] && lib_dirs+=("$d/lib")
    if [[ $pkg == nccl && -n $d && -f $d/include/nccl.h ]]; then
      NCCL_INC=$d/include
      for f in "$d"/lib/libnccl.so*; do [[ -e $f ]] && NCCL_LIB=$f && break; done
    fi
  done
fi
((SIM)) && lib_dirs=("$BUILD/gpusim/lib")  # gpusim's, and never the toolkit's real ones
for d in "${lib_dirs[@]}"; do
  [[ -d $d ]] || ((SIM)) && LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
done
export LD_LIBRARY_PATH
record env.libraries info "" "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

cmake_args=(-S "$ROOT" -B "$BUILD" -G Ninja -DCODL_TOOLS_ONLY=ON -DCODL_BUILD_TESTS=OFF
  -DCMAKE_BUILD_TYPE=Release)
[[ -n $GPU_ARCH ]] && cmake_args+=(-DCMAKE_CUDA_ARCHITECTURES="${GPU_ARCH}-real")
((SIM)) && cmake_args+=(-DCODL_GPU_SIM=ON)
build_targets=(codl-inject codl-victim)
((SIM)) && build_targets+=(codl_gpusim_all)
if [[ -n $NCCL_INC ]]; then
  cmake_args+=(-DNCCL_INCLUDE_DIR="$NCCL_INC" -DNCCL_LIBRARY="$NCCL_LIB")
  record env.nccl info "" "NCCL headers from $NCCL_INC"
fi
mkdir -p "$TOOLS"
arch=${GPU_ARCH:+sm_$GPU_ARCH}
arch=${arch:-sm_90}
# The two helper programs compile while CMake builds (kept when reusing a build).
build_tools() {
  if [[ ${CODL_GPU_SKIP_BUILD:-0} == 1 && -x $TOOLS/memcpy_baseline && -x $TOOLS/gemm_victim ]]; then
    return 0
  fi
  local link=()
  # gpusim: its runtime instead of cudart, its cuBLAS, found through RUNPATH.
  ((SIM)) && link=(-cudart none -L"$BUILD/gpusim" -L"$BUILD/gpusim/lib" -lcodl_gpusim
    -Xlinker "-rpath,$BUILD/gpusim:$BUILD/gpusim/lib")
  timeout -k 5 180 "$NVCC" -O2 -std=c++17 -arch="$arch" -o "$TOOLS/memcpy_baseline" \
    "$ROOT/tests/gpu/memcpy_baseline.cu" "${link[@]}" &&
    timeout -k 5 180 "$NVCC" -O2 -std=c++17 -arch="$arch" -o "$TOOLS/gemm_victim" \
      "$ROOT/tests/gpu/gemm_victim.cu" -lcublas "${link[@]}"
}
if ((SIM)); then
  tools_pid=""  # after the build: they link gpusim's libraries
else
  build_tools >"$LOGS/nvcc_tools.log" 2>&1 &
  tools_pid=$!
fi
if [[ ${CODL_GPU_SKIP_BUILD:-0} == 1 && -x $INJECT ]]; then
  record build skip "" "CODL_GPU_SKIP_BUILD=1: reusing $INJECT"
else
  if run_logged cmake_configure 120 cmake "${cmake_args[@]}" &&
    run_logged cmake_build 300 cmake --build "$BUILD" --target "${build_targets[@]}" -j "$JOBS"; then
    record build pass "" "codl-inject, codl-victim in $BUILD ($(grep -o 'CUDA [A-Z]*, NCCL [A-Z]*' "$LOGS/cmake_configure.log" | head -1))"
  else
    record build fail "" "$(grep -m3 -E 'error|Error' "$LOGS"/cmake_*.log | cut -c1-300 | tr '\n' ' ')"
    # codl-inject alone, should codl-victim be what failed.
    run_logged cmake_build_inject 200 cmake --build "$BUILD" --target codl-inject -j "$JOBS"
  fi
fi
if [[ -z $tools_pid ]]; then
  build_tools >"$LOGS/nvcc_tools.log" 2>&1 &
  tools_pid=$!
fi
if wait "$tools_pid"; then
  record build.nvcc_tools pass "" "memcpy_baseline, gemm_victim"
else
  record build.nvcc_tools fail "" "$(tail -2 "$LOGS/nvcc_tools.log" | tr '\n' ' ')"
fi

if [[ ! -x $INJECT ]]; then
  record device fail "" "a GPU is present but codl-inject was not built; nothing ran"
  write_summary
  exit 1
fi

# ---- 2. availability: a GPU nvidia-smi sees must be usable ---------------------------------------

timeout 60 "$INJECT" --list --json >"$LOGS/list.json" 2>&1
avail() { grep "\"name\":\"$1\"" "$LOGS/list.json" | grep -q '"available":true'; }
reason() { grep "\"name\":\"$1\"" "$LOGS/list.json" | sed -n 's/.*"reason":"\([^"]*\)".*/\1/p'; }
for inj in cuda_memcpy nccl mps_cotenant; do
  if avail "$inj"; then
    record "list.$inj" pass "" "available"
  else
    record "list.$inj" fail "" "$( ((SIM)) && echo gpusim || echo nvidia-smi) sees a GPU but $inj is unavailable: $(reason "$inj")"
  fi
done
if ! avail cuda_memcpy; then
  write_summary
  exit 1
fi

# ---- 3. the checks, in priority order ------------------------------------------------------------

declare -A PEAK

# memcpy DIR: calibrate, then compare with the bare loop (goal >= 0.97x).
memcpy_peak() {
  local dir=$1 log=memcpy_${1}_calibrate base ratio st
  if ! run_logged "$log" 40 "$INJECT" cuda_memcpy --set device="$DEV" --set direction="$dir" --set size="$MEMCPY_BYTES" --calibrate --duration 3s --json; then
    record "memcpy.$dir.calibrate" fail "" "$(last_error "$LOGS/$log.log")"
    return
  fi
  PEAK[$dir]=$(summary_num "$LOGS/$log.log" achieved_rate)
  record "memcpy.$dir.peak_GBps" info "$(calc "${PEAK[$dir]} / 1e9")" "cov $(summary_num "$LOGS/$log.log" cov); h2d half $(summary_num "$LOGS/$log.log" h2d)"
  [[ $dir == bidir ]] && return
  if [[ ! -x $TOOLS/memcpy_baseline ]]; then
    record "memcpy.$dir.vs_baseline" fail "" "memcpy_baseline not built"
    return
  fi
  if run_logged "memcpy_${dir}_baseline" 40 "$TOOLS/memcpy_baseline" "$dir" "$MEMCPY_BYTES" 3 "$DEV" 32; then
    base=$(json_num "$LOGS/memcpy_${dir}_baseline.log" bytes_per_s)
    ratio=$(calc "${PEAK[$dir]} / $base")
    if check "$ratio >= 0.97"; then st=pass; else st=fail; fi
    record "memcpy.$dir.vs_baseline" "$st" "$ratio" "injector $(calc "${PEAK[$dir]}/1e9") GB/s vs a 32-deep cudaMemcpyAsync loop $(calc "$base/1e9") GB/s (goal >= 0.97)"
  else
    record "memcpy.$dir.vs_baseline" fail "" "baseline: $(last_error "$LOGS/memcpy_${dir}_baseline.log")"
  fi
}

memcpy_levels() {
  local dir=$1 level log
  [[ -n ${PEAK[$dir]:-} ]] || {
    record "memcpy.$dir.levels" skip "" "no peak"
    return
  }
  for level in 0.25 0.5 0.75; do
    log=memcpy_${dir}_level_$level
    if run_logged "$log" 40 "$INJECT" cuda_memcpy --set device="$DEV" --set direction="$dir" --set size="$MEMCPY_BYTES" --level "$level" \
      --peak "${PEAK[$dir]}" --duration 4s --json; then
      record_level "memcpy.$dir.level_$level" "$LOGS/$log.log"
    else
      record "memcpy.$dir.level_$level" fail "" "$(last_error "$LOGS/$log.log")"
    fi
  done
}

# NCCL steps log NCCL_DEBUG=INFO into their own files (NCCL expands %h and %p).
nccl_env=(env NCCL_DEBUG=INFO "NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH" NCCL_DEBUG_FILE="$LOGS/nccl/%h.%p.log")

step_nccl_allreduce() {
  local peak algbw
  avail nccl || return 0
  if ! run_logged nccl_allreduce_calibrate 60 "${nccl_env[@]}" "$INJECT" nccl --set device="$DEV" --set op=allreduce --set size=64MiB --calibrate --duration 3s --json; then
    record nccl.allreduce_1rank fail "" "$(last_error "$LOGS/nccl_allreduce_calibrate.log")"
    return
  fi
  peak=$(summary_num "$LOGS/nccl_allreduce_calibrate.log" achieved_rate)
  algbw=$(summary_num "$LOGS/nccl_allreduce_calibrate.log" algbw)
  PEAK[nccl]=$peak
  record nccl.allreduce_1rank_peak_GBps info "$(calc "$peak/1e9")" "busbw (= algbw $(calc "$algbw/1e9") GB/s with 1 rank); $(grep -o 'memory free[^"]*' "$LOGS/nccl_allreduce_calibrate.log" | head -1)"
  if run_logged nccl_allreduce_level 60 "${nccl_env[@]}" "$INJECT" nccl --set device="$DEV" --set op=allreduce --set size=64MiB --level 0.5 \
    --peak "$peak" --duration 4s --json; then
    record_level nccl.allreduce_level_0.5 "$LOGS/nccl_allreduce_level.log"
  else
    record nccl.allreduce_level_0.5 fail "" "$(last_error "$LOGS/nccl_allreduce_level.log")"
  fi
}

step_nccl_ops() {
  local op log
  avail nccl || return 0
  for op in allgather reducescatter alltoall broadcast; do
    log=nccl_${op}_calibrate
    if run_logged "$log" 40 "${nccl_env[@]}" "$INJECT" nccl --set device="$DEV" --set op="$op" --set size=64MiB --calibrate --duration 2s --json; then
      record "nccl.${op}_1rank_GBps" pass "$(calc "$(summary_num "$LOGS/$log.log" achieved_rate)/1e9")" "1-rank busbw"
    else
      record "nccl.${op}_1rank" fail "" "$(last_error "$LOGS/$log.log")"
    fi
  done
  # CTA limit accepted by NCCL (ncclConfig_t maxCTAs).
  if run_logged nccl_max_ctas 40 "${nccl_env[@]}" "$INJECT" nccl --set device="$DEV" --set max_ctas=2 --set size=64MiB --calibrate --duration 2s --json; then
    record nccl.max_ctas_2_GBps pass "$(calc "$(summary_num "$LOGS/nccl_max_ctas.log" achieved_rate)/1e9")" "allreduce with maxCTAs=2 (compare with the unlimited peak)"
  else
    record nccl.max_ctas fail "" "$(last_error "$LOGS/nccl_max_ctas.log")"
  fi
}

step_nccl_rendezvous() {
  local rc first
  avail nccl || return 0
  # Rank 0 of 2 must print the publish line first; with no rank 1 it then times out cleanly.
  run_logged nccl_rendezvous 40 "${nccl_env[@]}" "$INJECT" nccl --set device="$DEV" --set ranks=2 --set rank=0 \
    --set rendezvous_key=gpu-check/nccl --set init_timeout=5s --max --duration 2s --json
  rc=$LAST_RC
  first=$(grep -m1 '^{' "$LOGS/nccl_rendezvous.log")
  if [[ $first =~ ^\{\"rendezvous_publish\":\{\"key\":\"gpu-check/nccl\",\"value_hex\":\"[0-9a-f]{256}\"\}\}$ ]] &&
    [[ $rc == 1 ]] && grep -q "not all ranks joined within" "$LOGS/nccl_rendezvous.log"; then
    record nccl.rendezvous_publish pass "" "publish line is the first JSON line, then a clean init timeout (exit 1)"
  else
    record nccl.rendezvous_publish fail "" "exit $rc; first line: ${first:0:120}"
  fi
}

# The MPS client list, every second, while the shared-victim check runs.
log_mps_clients() {
  local pipe=$1 out=$2 s
  while :; do
    {
      echo "--- $(date -u +%T.%N)"
      for s in $(echo get_server_list | timeout 5 env CUDA_MPS_PIPE_DIRECTORY="$pipe" nvidia-cuda-mps-control 2>&1); do
        echo "server $s clients: $(echo "get_client_list $s" | timeout 5 env CUDA_MPS_PIPE_DIRECTORY="$pipe" nvidia-cuda-mps-control 2>&1 | tr '\n' ' ')"
      done
    } >>"$out"
    sleep 1
  done
}

step_mps_own() {
  local own=$MPS_ROOT/own
  avail mps_cotenant || return 0
  mkdir -p "$MPS_ROOT"
  # The injector starts its own daemon, calibrates, and quits it.
  if ! run_logged mps_calibrate 90 "$INJECT" mps_cotenant --set device="$DEV" --set sm_percent=50 \
    --set pipe_dir="$own/pipe" --set log_dir="$own/log" --calibrate --duration 3s --json; then
    record mps.calibrate fail "" "$(last_error "$LOGS/mps_calibrate.log") (logs: $own/log)"
    return
  fi
  PEAK[mps]=$(summary_num "$LOGS/mps_calibrate.log" achieved_rate)
  SM_SHARE_FULL=$(summary_num "$LOGS/mps_calibrate.log" sm_share)
  record mps.cotenant_peak_TFLOPs info "$(calc "${PEAK[mps]}/1e12")" "sm_share $SM_SHARE_FULL at sm_percent=50"
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
}

step_mps_victim() {
  local shared=$MPS_ROOT/shared base inter drop st cot logger
  avail mps_cotenant || return 0
  [[ -x $TOOLS/gemm_victim ]] || {
    record mps.victim_drop fail "" "gemm_victim not built"
    return
  }
  mkdir -p "$shared/pipe" "$shared/log"
  local SHARED_ENV=(env CUDA_MPS_PIPE_DIRECTORY="$shared/pipe" CUDA_MPS_LOG_DIRECTORY="$shared/log")
  if ! timeout 30 "${SHARED_ENV[@]}" nvidia-cuda-mps-control -d >"$LOGS/mps_daemon.log" 2>&1; then
    record mps.daemon_start fail "" "$(tail -2 "$LOGS/mps_daemon.log" | tr '\n' ' ')"
    return
  fi
  SCRIPT_DAEMON_PIPE=$shared/pipe
  log_mps_clients "$shared/pipe" "$LOGS/mps_clients.log" &
  logger=$!
  BG_PIDS+=("$logger")
  if run_logged victim_alone 60 "${SHARED_ENV[@]}" "$TOOLS/gemm_victim" 5 "$GEMM_N" "$DEV"; then
    base=$(json_num "$LOGS/victim_alone.log" tflops)
    "$INJECT" mps_cotenant --set device="$DEV" --set sm_percent=50 --set pipe_dir="$shared/pipe" \
      --set log_dir="$shared/log" --max --duration 40s --json >"$LOGS/mps_cotenant.log" 2>&1 &
    cot=$!
    BG_PIDS+=("$cot")
    for _ in $(seq 1 600); do
      grep -q '^{"mps":' "$LOGS/mps_cotenant.log" && break
      kill -0 "$cot" 2>/dev/null || break
      sleep 0.1
    done
    if grep -q '^{"mps":{.*"started":false}}$' "$LOGS/mps_cotenant.log"; then
      sleep 1 # let the co-tenant reach its steady state
      if run_logged victim_shared 60 "${SHARED_ENV[@]}" "$TOOLS/gemm_victim" 5 "$GEMM_N" "$DEV"; then
        inter=$(json_num "$LOGS/victim_shared.log" tflops)
        drop=$(calc "1 - $inter / $base")
        if check "$drop >= 0.10"; then st=pass; else st=fail; fi
        record mps.victim_drop "$st" "$drop" "GEMM victim $(calc "$base") -> $(calc "$inter") TFLOP/s beside a 50%-SM FMA co-tenant (goal: drop >= 10%; clients in logs/mps_clients.log)"
      else
        record mps.victim_drop fail "" "victim: $(last_error "$LOGS/victim_shared.log")"
      fi
    else
      record mps.cotenant fail "" "no mps line with started:false: $(last_error "$LOGS/mps_cotenant.log")"
    fi
    kill -TERM "$cot" 2>/dev/null
    for _ in $(seq 1 100); do
      kill -0 "$cot" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$cot" 2>/dev/null
    wait "$cot" 2>/dev/null
    samples_csv "$LOGS/mps_cotenant.log" "$OUT/steps/mps_cotenant.csv"
    if grep -q '"summary":true' "$LOGS/mps_cotenant.log"; then
      record mps.cotenant_stop pass "" "co-tenant stopped on SIGTERM with a summary; sm_share $(summary_num "$LOGS/mps_cotenant.log" sm_share)"
    else
      record mps.cotenant_stop fail "" "no summary after SIGTERM"
    fi
  else
    record mps.victim_alone fail "" "$(last_error "$LOGS/victim_alone.log")"
  fi
  kill -TERM "$logger" 2>/dev/null
  wait "$logger" 2>/dev/null
  if echo quit | timeout 20 "${SHARED_ENV[@]}" nvidia-cuda-mps-control >>"$LOGS/mps_daemon.log" 2>&1; then
    record mps.daemon_quit pass "" "the script's daemon quit"
  else
    record mps.daemon_quit fail "" "quit failed: $(tail -1 "$LOGS/mps_daemon.log")"
  fi
  SCRIPT_DAEMON_PIPE=""
}

# SIGTERM at steady state; the process must end (with its summary) within 2 s.
stop_latency() {
  local name=$1 log=$LOGS/stop_$1.log pid t0 t1 ms
  shift
  "$@" >"$log" 2>&1 &
  pid=$!
  BG_PIDS+=("$pid")
  for _ in $(seq 1 300); do
    grep -q '^{"t_s":' "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  sleep 0.5
  t0=$(date +%s%N)
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 1000); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  t1=$(date +%s%N)
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  ms=$(((t1 - t0) / 1000000))
  samples_csv "$log" "$OUT/steps/stop_$name.csv"
  if ((ms <= 2000)) && grep -q '"summary":true' "$log"; then
    record "stop.$name" pass "$ms" "ms from SIGTERM to exit, summary printed (goal <= 2000)"
  else
    record "stop.$name" fail "$ms" "ms from SIGTERM to exit; summary: $(grep -c '"summary":true' "$log"); $(grep -v '^{' "$log" | tail -2 | tr '\n' ' ' | cut -c1-200)"
  fi
}

step_stop_latency() {
  stop_latency cuda_memcpy "$INJECT" cuda_memcpy --set device="$DEV" --set direction=h2d --set size=1GiB --max --duration 60s --json
  avail nccl && stop_latency nccl "${nccl_env[@]}" "$INJECT" nccl --set device="$DEV" --set size=1GiB --max --duration 60s --json
  avail mps_cotenant && stop_latency mps_cotenant "$INJECT" mps_cotenant --set device="$DEV" \
    --set pipe_dir="$MPS_ROOT/stop/pipe" --set log_dir="$MPS_ROOT/stop/log" --set kernel_time=50ms --max --duration 60s --json
  stop_bg
}

# Duty cycle: at duty 0.5 the co-tenant's sm_share must be half the duty-1 value (before the fix
# queued kernels ran past each window: 10 ms periods gave ~0.9 instead of 0.5); and a period too
# short for the kernels must be refused.
step_duty() {
  local log=mps_duty_0.5 share r st
  avail mps_cotenant || return 0
  if run_logged "$log" 60 "$INJECT" mps_cotenant --set device="$DEV" --set sm_percent=50 --set duty=0.5 --set period=10ms \
    --set kernel_time=1ms --set pipe_dir="$MPS_ROOT/duty/pipe" --set log_dir="$MPS_ROOT/duty/log" --max --duration 4s --json; then
    share=$(summary_num "$LOGS/$log.log" sm_share)
    if [[ -n ${SM_SHARE_FULL:-} && -n $share ]]; then
      r=$(calc "$share / $SM_SHARE_FULL")
      # Only kernels that end inside a window are issued, so a 5 ms on-window of 1 ms kernels
      # holds 4 or 5: the ratio's floor is 0.5 x (1 - 1/5) = 0.4 before any jitter (gpusim, whose
      # kernels are sized to exactly 1 ms, sits there: 0.39-0.40).
      if check "$r >= 0.35 && $r <= 0.55"; then st=pass; else st=fail; fi
      record mps.duty_0.5_period_10ms "$st" "$r" "sm_share ratio to duty 1 (goal 0.35..0.55; was ~0.9 before the fix)"
    else
      record mps.duty_0.5_period_10ms info "$share" "sm_share (no duty-1 reference)"
    fi
  else
    record mps.duty_0.5_period_10ms fail "" "$(last_error "$LOGS/$log.log")"
  fi
  run_logged mps_duty_too_short 60 "$INJECT" mps_cotenant --set device="$DEV" --set duty=0.5 --set period=2ms \
    --set kernel_time=2ms --set pipe_dir="$MPS_ROOT/duty/pipe" --set log_dir="$MPS_ROOT/duty/log" --max --duration 3s --json
  if [[ $LAST_RC != 0 ]] && grep -q "too short for operations" "$LOGS/mps_duty_too_short.log"; then
    record mps.duty_period_too_short pass "" "refused: $(grep -o "option 'period'[^\"]*" "$LOGS/mps_duty_too_short.log" | head -1 | cut -c1-120)"
  else
    record mps.duty_period_too_short fail "" "exit $LAST_RC, no 'too short' error"
  fi
}

step_mps_variants() {
  local v log
  avail mps_cotenant || return 0
  for v in "kernel=gemm gemm_n=$GEMM_N sm_percent=50" "kernel=fma sm_percent=25" "kernel=fma sm_percent=100"; do
    log=mps_$(tr ' =' '__' <<<"$v")
    # shellcheck disable=SC2046,SC2086  # word splitting into --set pairs is the point
    if run_logged "$log" 60 "$INJECT" mps_cotenant --set device="$DEV" $(printf -- '--set %s ' $v) \
      --set pipe_dir="$MPS_ROOT/var/pipe" --set log_dir="$MPS_ROOT/var/log" --calibrate --duration 3s --json; then
      record "mps.${v// /,}" pass "$(calc "$(summary_num "$LOGS/$log.log" achieved_rate)/1e12")" "TFLOP/s peak, sm_share $(summary_num "$LOGS/$log.log" sm_share)"
    else
      record "mps.${v// /,}" fail "" "$(last_error "$LOGS/$log.log")"
    fi
  done
}

step_h2d_numa() {
  local node log=memcpy_h2d_numa r
  node=$(gpu_numa_node)
  if [[ -z $node ]] || ! command -v numactl >/dev/null; then
    record memcpy.h2d_numa info "" "GPU NUMA node unknown or numactl missing: not run"
    return
  fi
  if run_logged "$log" 40 numactl --cpunodebind="$node" --membind="$node" "$INJECT" cuda_memcpy --set device="$DEV" \
    --set direction=h2d --calibrate --duration 3s --json; then
    r=$(summary_num "$LOGS/$log.log" achieved_rate)
    record memcpy.h2d_numa_GBps info "$(calc "$r/1e9")" "bound to NUMA node $node (unbound: $(calc "${PEAK[h2d]:-0}/1e9") GB/s)"
  else
    record memcpy.h2d_numa fail "" "$(last_error "$LOGS/$log.log")"
  fi
}

step_victim_smoke() {
  local d=$MPS_ROOT/victim-data
  [[ -x $VICTIM ]] || {
    record victim.cuda_smoke fail "" "codl-victim not built"
    return
  }
  if run_logged victim_gen 60 "$VICTIM" gen-data --dir "$d" --samples 64 &&
    run_logged victim_cuda 90 "$VICTIM" run --dir "$d" --device cuda --steps 20 --profile compute-bound; then
    record victim.cuda_smoke pass "$(grep '"summary":true' "$LOGS/victim_cuda.log" | sed -n 's/.*"median_step_time_s":\([0-9.eE+-]*\).*/\1/p')" \
      "median step s; $(grep -o '"device":"[^"]*"' "$LOGS/victim_cuda.log" | head -1), $(grep -o '"gemm":"[^"]*"' "$LOGS/victim_cuda.log" | head -1)"
  else
    record victim.cuda_smoke fail "" "$(last_error "$LOGS/victim_cuda.log")"
  fi
  rm -rf "$d"
}

# The agent's GPU telemetry (agent/gpu_telemetry.cc through the node's NVML) while
# memcpy_baseline copies host to device: the device's PCIe bytes (or, on a driver without PCIe
# byte counters, its utilization) must be > 0. Built here with g++: it needs no CUDA.
step_nvml_telemetry() {
  local log=nvml_telemetry
  if ! timeout -k 5 120 g++ -O2 -std=c++17 -I"$ROOT" -o "$TOOLS/nvml_telemetry_check" \
    "$ROOT/tests/gpu/nvml_telemetry_check.cc" "$ROOT/agent/gpu_telemetry.cc" \
    "$ROOT/agent/nvml_api.cc" "$ROOT/lib/common/gpu_clock_reasons.cc" -ldl \
    >"$LOGS/nvml_telemetry_build.log" 2>&1; then
    record nvml.telemetry fail "" "build: $(tail -3 "$LOGS/nvml_telemetry_build.log" | tr '\n' ' ' | cut -c1-300)"
    return
  fi
  if [[ ! -x $TOOLS/memcpy_baseline ]]; then
    record nvml.telemetry fail "" "memcpy_baseline not built"
    return
  fi
  run_logged "$log" 40 "$TOOLS/nvml_telemetry_check" --device "$DEV" --seconds 3 \
    --load "$TOOLS/memcpy_baseline h2d 67108864 4 $DEV 32"
  case $LAST_RC in
    0) record nvml.telemetry pass "$(json_num "$LOGS/$log.log" pcie_rx_bytes)" \
      "PCIe rx bytes of GPU $DEV over 3 s of h2d copies; $(grep '^PASS' "$LOGS/$log.log" | cut -c1-200)" ;;
    77) record nvml.telemetry fail "" "a GPU node whose NVML does not load: $(grep '^SKIP' "$LOGS/$log.log" | cut -c1-200)" ;;
    *) record nvml.telemetry fail "" "$(last_error "$LOGS/$log.log")" ;;
  esac
}

# Ordered: what a first run must answer comes first. "function estimated_seconds".
STEPS=(
  "memcpy_peak h2d 10"
  "memcpy_peak d2d 10"
  "step_nvml_telemetry 10"
  "step_nccl_allreduce 15"
  "step_mps_own 15"
  "step_mps_victim 30"
  "step_stop_latency 25"
  "step_duty 15"
  "memcpy_levels h2d 15"
  "memcpy_levels d2d 15"
  "step_nccl_ops 20"
  "step_mps_variants 20"
  "step_victim_smoke 20"
  "step_h2d_numa 8"
  "memcpy_peak d2h 10"
  "memcpy_peak bidir 6"
  "step_nccl_rendezvous 10"
)
mkdir -p "$MPS_ROOT"
for entry in "${STEPS[@]}"; do
  read -r -a words <<<"$entry"
  est=${words[-1]}
  unset 'words[-1]'
  if (($(elapsed) + est > BUDGET_S)); then
    step_name="${words[*]}"
    record "budget.${step_name// /.}" skip "" "time budget: $(elapsed)s of ${BUDGET_S}s used, step needs ~${est}s"
    continue
  fi
  "${words[@]}"
done

# Keep the MPS logs with the results; drop the sockets.
cp -r "$MPS_ROOT" "$OUT/mps-logs" 2>/dev/null
find "$OUT/mps-logs" -type s -delete 2>/dev/null
find "$OUT/mps-logs" -name '.codl-mps-start.lock' -delete 2>/dev/null
rm -rf "$MPS_ROOT"

write_summary
grep -q '"status":"fail"' "$OUT/gpu_summary.json" && exit 1
exit 0
