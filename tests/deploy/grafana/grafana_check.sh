#!/usr/bin/env bash
# Checks every dashboard in deploy/grafana offline:
#  1. the JSON against Grafana's dashboard types (@grafana/schema, compiled by typescript);
#  2. every PromQL expression with `promtool check rules`;
#  3. every codl_* metric it queries is documented in docs/metrics.md;
# then checks that the broken dashboards in tests/deploy/grafana/bad/ are rejected (a checker
# that passes everything cannot pass this test).
# npm packages (package.json, pinned by package-lock.json) go into WORK_DIR with `npm ci`.
# Usage: grafana_check.sh SOURCE_DIR WORK_DIR. Exit 77 (skipped) without node/npm/promtool.
set -uo pipefail
src=${1:?source dir}
work=${2:?work dir}
here="$src/tests/deploy/grafana"
for tool in node npm promtool python3; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 77; }
done
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$work/"
stamp="$work/node_modules/.codl-package-lock.json"
if ! cmp -s "$here/package-lock.json" "$stamp"; then
  echo "npm ci in $work"
  (cd "$work" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) ||
    { echo "FAIL: npm ci could not install @grafana/schema (is the npm registry reachable?)"; exit 1; }
  cp "$here/package-lock.json" "$stamp"
fi

# check DASHBOARD: prints what is wrong, returns non-zero when anything is.
check() {
  local dash=$1 name ok=0
  name=$(basename "$dash" .json)
  python3 "$here/dashboard_to_ts.py" "$dash" "$work/$name.ts" || return 1
  (cd "$work" && timeout 120 node_modules/.bin/tsc --noEmit --strict --skipLibCheck \
    --moduleResolution node --module esnext --target es2020 "$name.ts") || ok=1
  python3 "$here/promql_rules.py" "$dash" "$work/$name.rules.yaml" 2>"$work/$name.names" || ok=1
  promtool check rules "$work/$name.rules.yaml" >"$work/$name.promtool" 2>&1 ||
    { cat "$work/$name.promtool"; ok=1; }
  while read -r metric; do
    # Histogram series are documented under their base name; a name ending in _ is the prefix
    # of a __name__ regex (codl_antagonist_achieved_.+): some documented name must start so.
    base=${metric%_bucket}
    pattern="\`$base\`"
    [[ $base == *_ ]] && pattern="\`$base"
    grep -qF "$pattern" "$src/docs/metrics.md" ||
      { echo "$name: $metric is not documented in docs/metrics.md"; ok=1; }
  done <"$work/$name.names"
  return $ok
}

fail=0
for dash in "$src"/deploy/grafana/*.json; do
  echo "== $(basename "$dash")"
  if check "$dash"; then echo "ok"; else echo "FAIL: $(basename "$dash")"; fail=1; fi
done
for bad in "$here"/bad/*.json; do
  echo "== bad/$(basename "$bad") (must be rejected)"
  if check "$bad" >"$work/bad.out" 2>&1; then
    echo "FAIL: the checker accepted bad/$(basename "$bad")"
    fail=1
  else
    echo "ok: rejected ($(grep -m1 -E 'error|FAILED|not documented' "$work/bad.out"))"
  fi
done
exit $fail
