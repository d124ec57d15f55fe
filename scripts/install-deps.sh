#!/usr/bin/env bash
# Installs the Debian 12 packages CoDL needs to build and test. Safe to re-run: it only
# installs what is missing. Set CODL_DEPS_EXTRA="..." to add packages.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
      liburing-dev libyaml-cpp-dev libsqlite3-dev sqlite3 libgtest-dev libgmock-dev
      libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev ccache prometheus-cpp-dev libsystemd-dev
      fio iproute2 procps python3
      systemd munge slurmctld slurmd slurm-client)  # deploy tests: systemd-analyze, a local Slurm
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
