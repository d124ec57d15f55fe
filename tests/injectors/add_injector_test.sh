#!/usr/bin/env bash
# Proves docs/injectors.md's promise: adding an injector = one new file + one registry line.
# In a scratch copy of the source tree (git ls-files), generate a throw-away injector from
# noop.cc, add its line to core/registry.cc's CODL_INJECTORS list and NOTHING else, build codl-inject
# tools-only, and check the new injector is listed, has --help and passes a smoke run.
# Usage: add_injector_test.sh SOURCE_DIR WORK_DIR   (exit 77 = skipped, reason on stdout)
set -euo pipefail
src=${1:?usage: add_injector_test.sh SOURCE_DIR WORK_DIR}
work=${2:?usage: add_injector_test.sh SOURCE_DIR WORK_DIR}
if ! git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "SKIP: $src is not a git checkout (the copy is made with git ls-files)"
  exit 77
fi

# A fixed WORK_DIR keeps compile paths stable, so ccache makes every run after the first cheap.
tree="$work/src"
rm -rf "$tree"
mkdir -p "$tree"
# Tracked and new (not ignored) files: what a contributor's commit would contain.
(cd "$src" && git ls-files -z --cached --others --exclude-standard) |
  (cd "$src" && xargs -0 cp --parents -t "$tree" 2>/dev/null || true)

# The new file: noop.cc under another name.
sed -e 's/"noop"/"scratch_probe"/' -e 's/NoopInjector/ScratchProbeInjector/g' \
  -e 's/MakeNoopInjector/MakeScratchProbeInjector/' \
  "$tree/injectors/noop.cc" >"$tree/injectors/scratch_probe.cc"
# The one registry line.
sed -i '/add new injectors above this line/i\  X("scratch_probe", MakeScratchProbeInjector) \\' \
  "$tree/injectors/core/registry.cc"
grep -q 'X("scratch_probe"' "$tree/injectors/core/registry.cc" || { echo "FAIL: registry line not added"; exit 1; }

export CCACHE_BASEDIR="$tree" CCACHE_NOHASHDIR=1
cmake -S "$tree" -B "$work/build" -G Ninja -DCODL_TOOLS_ONLY=ON -DCODL_BUILD_TESTS=OFF \
  -DCODL_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log"; echo "FAIL: configure"; exit 1; }
ninja -C "$work/build" -j2 codl-inject >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; echo "FAIL: build"; exit 1; }
inject="$work/build/bin/codl-inject"

list=$("$inject" --list --json)
grep -q '^{"name":"scratch_probe",.*"available":true' <<<"$list" ||
  { echo "$list"; echo "FAIL: scratch_probe is not listed as available"; exit 1; }
"$inject" scratch_probe --help | grep -q '^scratch_probe: ' || { echo "FAIL: --help"; exit 1; }
out=$("$inject" scratch_probe --max --duration 1s --json) || { echo "$out"; echo "FAIL: smoke run"; exit 1; }
grep -q '"summary":true.*"injector":"scratch_probe"\|"injector":"scratch_probe".*"summary":true' <<<"$out" ||
  { echo "$out"; echo "FAIL: no summary line for scratch_probe"; exit 1; }
echo "ok: scratch_probe added with one file and one registry line; listed, --help, smoke run"
