#!/usr/bin/env bash
# `cmake --install` into a temp prefix must produce the layout deploy/docker/Dockerfile,
# docs/deploy.md and the systemd units rely on (cmake/CodlInstall.cmake has the rules):
# every binary in bin/ and runnable from there, the units, the example configs, the docs; and
# every /usr/local/... path that the Dockerfile, docs/deploy.md or a unit names exists under the
# prefix.
# Usage: install_check.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=${1:?source dir}
build=${2:?build dir}
fail=0
bad() { echo "FAIL: $*"; fail=1; }
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT

if ! out=$(cmake --install "$build" --prefix "$prefix" 2>&1); then
  echo "$out"
  echo "FAIL: cmake --install $build --prefix $prefix failed (are all binaries built?)"
  exit 1
fi

for b in codl-controller codl-agent codlctl codl-inject codl-victim codl-slurm-agents.sh; do
  [[ -x "$prefix/bin/$b" ]] || bad "bin/$b not installed (or not executable)"
done
for f in lib/systemd/system/codl-controller.service lib/systemd/system/codl-agent.service \
         share/codl/config/agent.yaml share/codl/config/controller.yaml share/doc/codl/README.md; do
  [[ -f "$prefix/$f" ]] || bad "$f not installed"
done
for d in "$src"/docs/*.md; do
  [[ -f "$prefix/share/doc/codl/${d##*/}" ]] || bad "share/doc/codl/${d##*/} not installed"
done

# Installed binaries run from the prefix (no build-tree paths needed at run time), and the agent
# finds codl-inject beside itself there.
"$prefix/bin/codl-inject" --list >/dev/null 2>&1 || bad "installed codl-inject --list failed"
"$prefix/bin/codlctl" --help >/dev/null 2>&1 || bad "installed codlctl --help failed"
"$prefix/bin/codl-victim" --help >/dev/null 2>&1 || bad "installed codl-victim --help failed"

# Paths the Dockerfile, the deploy guide and the units name, relative to the default prefix.
for p in $(grep -ohE '/usr/local/(bin|lib|share)/[A-Za-z0-9_./-]*[A-Za-z0-9_]' \
             "$src/deploy/docker/Dockerfile" "$src/docs/deploy.md" "$src"/deploy/systemd/*.service |
           sort -u); do
  rel=${p#/usr/local/}
  [[ "$rel" == bin/codl ]] && continue  # from "/usr/local/bin/codl-*" in prose
  [[ -e "$prefix/$rel" ]] || bad "$p is named in deploy/ or docs/deploy.md but not installed"
done

((fail)) && exit 1
echo "cmake --install layout OK ($(find "$prefix" -type f | wc -l) files)"
