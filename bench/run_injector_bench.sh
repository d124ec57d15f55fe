#!/usr/bin/env bash
# Host-injector benchmark: codl-inject io_uring vs fio, memcpy vs a STREAM-style copy, and level
# accuracy. Not a test: it prints a table and writes JSON (figures go to docs/performance.md).
#
# usage: bench/run_injector_bench.sh [--build-dir DIR] [--out FILE] [--scratch DIR]
#                                    [--rounds N] [--seconds S] [--only CONFIG]...
#   --build-dir  CMake build tree holding bin/codl-inject (default: ./build); built with
#                `cmake --build DIR --target codl-inject` when missing or stale
#   --out        JSON results (default: bench/results/injectors.json)
#   --scratch    directory on the filesystem to flood (default: DIR/bench-scratch; NOT tmpfs)
#   --rounds     A/B rounds per pair in ABBA order; verdict from the median ratio's
#                bootstrap CI (default 7)
#   --seconds    measured seconds per run, after 1 s of warm-up (default 5)
#   --only       only this io_uring configuration, e.g. --only 'read 1MiB qd16', or
#                --only memcpy (repeatable; what is not named, and the level accuracy, is skipped)
#   --fio-layout data|zeros
#                fio's file set: overwritten with random data before the measured job, as codl
#                fills its own (default: data), or fio's own layout, which writes zeros (the runs
#                before 2026-12-01; a thin or zero-detecting virtual disk keeps them as holes)
#   --codl-set KEY=VALUE
#                an io_uring option for codl's side of every pair (repeatable), e.g.
#                --codl-set submit_batch=0 for the submission pattern before 2026-12-01
#   --aa         A/A control: fio against itself in the same schedule (the codl column is then
#                fio); the spread of its ratios is the noise a codl-vs-fio verdict is read against
#   --mem-scratch DIR
#                memory-backed directory for the software-cost comparison (default /dev/shm;
#                '' skips it)
#   (a memory-backed comparison also runs on /dev/shm when it accepts O_DIRECT)
# Needs fio and python3. Takes about 15 minutes with the defaults.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build"
out="$repo/bench/results/injectors.json"
scratch=""
extra=()
while (($#)); do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --scratch) scratch="$2"; shift 2 ;;
    --rounds|--seconds|--only|--fio-layout|--codl-set|--mem-scratch) extra+=("$1" "$2"); shift 2 ;;
    --aa) extra+=("$1"); shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v fio >/dev/null || { echo "fio not found (apt-get install fio)" >&2; exit 1; }
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCODL_TOOLS_ONLY=ON >/dev/null
fi
cmake --build "$build" --target codl-inject >/dev/null
# The STREAM-style reference is one self-contained file, compiled like STREAM (-O3, native),
# twice: as gcc builds STREAM (the copy loop becomes a glibc memcpy call) and with that
# transformation off (an explicit vectorized load/store loop). The faster one is the reference.
mkdir -p "$build/bench"
stream="$build/bench/stream_copy"
src="$repo/bench/injectors/stream_copy.cc"
if [[ ! -x "$stream" || "$src" -nt "$stream" || ! -x "$stream-loop" ]]; then
  "${CXX:-c++}" -O3 -march=native -pthread "$src" -o "$stream"
  "${CXX:-c++}" -O3 -march=native -fno-tree-loop-distribute-patterns -pthread "$src" -o "$stream-loop"
fi
scratch="${scratch:-$build/bench-scratch}"
mkdir -p "$scratch"
fstype="$(df -T "$scratch" | awk 'NR==2{print $2}')"
if [[ "$fstype" == tmpfs ]]; then
  echo "warning: $scratch is tmpfs; the io_uring figures will measure memory, not storage" >&2
fi
exec python3 "$repo/bench/injectors/bench.py" --codl "$build/bin/codl-inject" --stream "$stream" --stream-loop "$stream-loop" \
  --scratch "$scratch" --out "$out" "${extra[@]}"
