#!/usr/bin/env bash
# The control plane and codl-victim must start on hosts without CUDA: none of them may have a
# NEEDED entry (readelf -d) for the CUDA runtime/driver, NCCL or cuBLAS, and codl-controller /
# codlctl none for liburing either. GPU libraries are linked statically (cudart) or dlopen'ed
# (lib/gpu). Fails, naming the binary and the library, if someone re-adds one.
# Usage: elf_needed_check.sh BIN_DIR
set -u
bin=${1:?usage: elf_needed_check.sh BIN_DIR}
if ! command -v readelf >/dev/null; then
  echo "SKIP: readelf (binutils) is not installed"
  exit 77
fi

gpu_libs='^(libcudart|libcuda|libnccl|libcublas|libcublasLt|libnvidia-ml)\.so'
uring_libs='^liburing\.so'
failed=0

# check BINARY FORBIDDEN_REGEX WHAT
check() {
  local path="$bin/$1" needed
  if [ ! -x "$path" ]; then
    echo "FAIL: $path is missing (build it first)"
    failed=1
    return
  fi
  needed=$(readelf -d "$path" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  # A NEEDED list without libc means readelf did not read what we think: never pass vacuously.
  if ! grep -q '^libc\.so' <<<"$needed"; then
    echo "FAIL: $1: no NEEDED entries found (readelf output changed?)"
    failed=1
    return
  fi
  local bad
  bad=$(grep -E "$2" <<<"$needed" | tr '\n' ' ')
  if [ -n "$bad" ]; then
    echo "FAIL: $1 needs $bad- $3"
    failed=1
  else
    echo "ok: $1 needs no $3 library ($(tr '\n' ' ' <<<"$needed"))"
  fi
}

for b in codl-controller codlctl codl-agent codl-victim; do
  check "$b" "$gpu_libs" "CUDA/NCCL/cuBLAS"
done
for b in codl-controller codlctl; do
  check "$b" "$uring_libs" "liburing"
done
exit $failed
