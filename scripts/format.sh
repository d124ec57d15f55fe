#!/usr/bin/env bash
# clang-format with the repository's .clang-format.
# Usage: scripts/format.sh [--check] [FILE...]
#   no FILE: the C++ files changed against origin/main (or HEAD when there is no origin/main)
#   --check: change nothing; print the differences and exit 1 if there are any
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [[ "${1:-}" == --check ]]; then check=1; shift; fi
files=("$@")
if ((${#files[@]} == 0)); then
  base=origin/main; git rev-parse -q --verify "$base" >/dev/null || base=HEAD
  mapfile -t files < <(git diff --name-only --diff-filter=d "$base" -- '*.cc' '*.h' '*.cu' '*.c')
fi
((${#files[@]})) || { echo "format.sh: no C++ files to format"; exit 0; }
command -v clang-format >/dev/null || { echo "format.sh: clang-format not found (apt-get install clang-format)" >&2; exit 2; }
if ((check)); then
  exec clang-format --dry-run -Werror "${files[@]}"
fi
exec clang-format -i "${files[@]}"
