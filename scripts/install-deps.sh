#!/usr/bin/env bash
# Installs the Debian 12 packages CoDL needs, only those missing (safe to re-run).
# Usage: scripts/install-deps.sh [build|dev|test]
#   build (default): what compiling the binaries needs (scripts/quickstart.sh).
#   dev:             build + GoogleTest/GoogleMock: the whole tree, tests included, compiles
#                    (scripts/build.sh's default).
#   test:            dev + what the tests run: sqlite3, fio, a local Slurm (munge, slurm*),
#                    systemd-analyze, a headless browser, promtool, PyTorch, SciPy and
#                    statsmodels (the statistics cross-check) (scripts/test.sh).
# CODL_DEPS_EXTRA="..." adds packages.
set -euo pipefail
set_name=${1:-build}
build_pkgs=(build-essential cmake ninja-build pkg-config ccache
            libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev zlib1g-dev
            liburing-dev libyaml-cpp-dev libre2-dev libsqlite3-dev libcli11-dev libspdlog-dev libfmt-dev
            nlohmann-json3-dev prometheus-cpp-dev libsystemd-dev libibverbs-dev)
dev_pkgs=(libgtest-dev libgmock-dev)
test_pkgs=(sqlite3 fio iproute2 procps python3 iperf3 stress-ng
           systemd munge slurmctld slurmd slurm-client
           chromium prometheus python3-torch python3-scipy python3-statsmodels
           python3-pip python3-setuptools python3-venv mypy)
case "$set_name" in
  build) pkgs=("${build_pkgs[@]}") ;;
  dev) pkgs=("${build_pkgs[@]}" "${dev_pkgs[@]}") ;;
  test) pkgs=("${build_pkgs[@]}" "${dev_pkgs[@]}" "${test_pkgs[@]}") ;;
  *) echo "install-deps.sh: unknown package set '$set_name' (build, dev or test)" >&2; exit 2 ;;
esac
pkgs+=(${CODL_DEPS_EXTRA:-})
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "codl: installing missing packages: ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
