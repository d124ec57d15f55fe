#!/usr/bin/env bash
# The profile benchmark (docs/validity.md, "Profiles, two-way pairs and prediction from
# profiles"), on this machine's CPU injectors with the embedded controller + agent:
#  1. `codlctl profile` of codl-victim's PROFILE_A and PROFILE_B presets (profile-host.yaml)
#     against memcpy, cpu, llc, io_uring and pagecache: sweep 0.25, 0.5, max and a tolerance
#     search each (--max-trials 8);
#  2. each preset measured beside the other as a workload antagonist (pair-host.yaml): both
#     directions, two-way table;
#  3. `codlctl predict --victim-profile A --neighbour B --measured pair(A beside B)` and the
#     reverse: the predicted slowdown from the profiles against the measured one, and the MAPE.
# Usage: bench/validity/run_profile_bench.sh [OUT_DIR [PROFILE_A PROFILE_B]]
#   default OUT_DIR /tmp/codl-profile-bench, presets balanced compute-bound. ~30 min on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${CODL_BUILD_DIR:-build}
out=${1:-/tmp/codl-profile-bench}
a=${2:-balanced}
b=${3:-compute-bound}
db=$out/profile-bench.db
mkdir -p "$out"
ninja -C "$build" codlctl codl-inject codl-victim >/dev/null
codlctl=$build/bin/codlctl
injectors=memcpy,cpu,llc,io_uring,pagecache
declare -A profile_id pair_id
latest() {  # the newest experiment's id (status lists them newest first, one JSON line each)
  "$codlctl" status --db "$db" -o json | head -n 1 |
    /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["experiment_id"])'
}
for p in "$a" "$b"; do
  sed "s/NAME/$p/; s/PROFILE/$p/g" bench/validity/profile-host.yaml >"$out/$p.yaml"
  "$codlctl" profile "$out/$p.yaml" --injectors "$injectors" --max-trials 8 --db "$db" \
    --report "$out/$p-profile.html" -q | tee "$out/$p.profile.txt"
  profile_id[$p]=$(latest)
done
for pair in "$a $b" "$b $a"; do
  read -r v n <<<"$pair"
  sed "s/VICTIM/$v/g; s/NEIGHBOUR/$n/g" bench/validity/pair-host.yaml >"$out/pair-$v.yaml"
  "$codlctl" run "$out/pair-$v.yaml" --db "$db" --report "$out/pair-$v.html" -q |
    tee "$out/pair-$v.results.txt"
  pair_id[$v]=$(latest)
done
for pair in "$a $b" "$b $a"; do
  read -r v n <<<"$pair"
  "$codlctl" predict --victim-profile "${profile_id[$v]}" --neighbour "${profile_id[$n]}" \
    --measured "${pair_id[$v]}" --db "$db" | tee "$out/predict-$v.txt"
done
