#!/usr/bin/env bash
# A distributed codl-victim (one rank in each of two network namespaces, ring allreduce over
# TCP) against a `net` flood between the same two namespaces, over a rate-limited veth: the
# comm_s and step slowdowns with CIs (docs/performance.md, "A multi-node victim's network
# phase"). Needs root; bounded by --timeout (default 900 s) plus 60 s; the namespaces are
# removed on exit (bench/netns_cleanup.sh removes a killed run's).
#   bench/multinode/run_multinode_bench.sh [--build-dir build] [--rate 200mbit] [--flood 5MiB/s 15MiB/s] ...
set -euo pipefail
cd "$(dirname "$0")/../.."
ninja -C "${BUILD_DIR:-build}" codl-controller codl-agent codlctl codl-inject codl-victim >/dev/null
exec timeout --kill-after=10 960 python3 bench/multinode/bench.py "$@"
