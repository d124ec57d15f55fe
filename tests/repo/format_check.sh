#!/usr/bin/env bash
# The tree follows .clang-format: every tracked C++ file is already formatted, so a newcomer's
# `scripts/format.sh` touches only their own lines. Formatting differs between clang-format
# releases; the .clang-format was tuned with 14 (Debian 12), so other versions skip.
# Usage: format_check.sh SOURCE_DIR   (exit 77 = skipped, reason on stdout)
set -euo pipefail
src=${1:?usage: format_check.sh SOURCE_DIR}
command -v clang-format >/dev/null || { echo "SKIP: clang-format not installed"; exit 77; }
version=$(clang-format --version | grep -oE '[0-9]+\.[0-9]+' | head -1)
[[ "${version%%.*}" == 14 ]] || { echo "SKIP: clang-format $version (the style is pinned to 14)"; exit 77; }
git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "SKIP: $src is not a git checkout"; exit 77; }
cd "$src"
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu')
if ! out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1); then
  echo "$out" | grep 'error:' | head -20
  echo "FAIL: files above are not formatted; run scripts/format.sh FILE... (or on all: git ls-files '*.cc' '*.h' '*.cu' | xargs clang-format -i)"
  exit 1
fi
echo "ok: ${#files[@]} C++ files follow .clang-format"
