#!/usr/bin/env bash
# Validates deploy/k8s offline against the Kubernetes schemas (validate_k8s.mjs), then checks
# that the validator rejects each broken manifest in k8s_bad/ with the findings its `# expect:`
# lines name (so a validator that passes everything cannot pass this test).
# The npm packages (package.json, pinned by package-lock.json) are installed with `npm ci` into
# WORK_DIR on first use and whenever the lock file changes; nothing is vendored.
# Usage: k8s_validate.sh SOURCE_DIR WORK_DIR. Exit 77 (skipped) without node/npm.
set -uo pipefail
src=${1:?source dir}
work=${2:?work dir}
here="$src/tests/deploy"
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not found (Debian packages nodejs and npm; Node >= 18)"
    exit 77
  fi
done
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here/validate_k8s.mjs" "$work/"
stamp="$work/node_modules/.codl-package-lock.json"
if ! cmp -s "$here/package-lock.json" "$stamp"; then
  echo "npm ci in $work"
  if ! (cd "$work" && timeout 300 npm ci --no-audit --no-fund --loglevel=error); then
    echo "FAIL: npm ci could not install the validator's packages (is the npm registry reachable?)"
    exit 1
  fi
  cp "$here/package-lock.json" "$stamp"
fi

fail=0
echo "== deploy/k8s"
if ! (cd "$work" && timeout 120 node validate_k8s.mjs "$src/deploy/k8s"); then
  echo "FAIL: deploy/k8s does not validate"
  fail=1
fi

# The overlays (deploy/k8s-overlays: CPU-only, GPU runtimeClass, MPS root), each rendered with
# kubectl kustomize and validated like the base.
if command -v kubectl >/dev/null; then
  for overlay in "$src"/deploy/k8s-overlays/*/; do
    name=$(basename "$overlay")
    echo "== deploy/k8s-overlays/$name"
    if ! kubectl kustomize "$overlay" >"$work/overlay-$name.yaml" 2>"$work/overlay-$name.err"; then
      echo "FAIL: kubectl kustomize deploy/k8s-overlays/$name:"; cat "$work/overlay-$name.err"; fail=1
    elif ! (cd "$work" && timeout 120 node validate_k8s.mjs "$work/overlay-$name.yaml"); then
      echo "FAIL: deploy/k8s-overlays/$name does not validate"; fail=1
    fi
  done
else
  echo "note: kubectl not found: the overlays in deploy/k8s-overlays are not rendered"
fi

for bad in "$here"/k8s_bad/*.yaml; do
  name=$(basename "$bad")
  out=$(cd "$work" && timeout 120 node validate_k8s.mjs "$bad" 2>&1)
  rc=$?
  if [[ $rc -ne 1 ]]; then
    echo "FAIL: $name: expected the validator to reject it (exit 1), got exit $rc:"
    printf '%s\n' "$out"
    fail=1
    continue
  fi
  missed=0
  while IFS= read -r want; do
    if [[ "$out" != *"$want"* ]]; then
      echo "FAIL: $name: expected a finding containing: $want"
      missed=1
    fi
  done < <(sed -n 's/^# expect: //p' "$bad")
  if ((missed)); then
    printf '%s\n' "$out" | sed 's/^/    /'
    fail=1
  else
    echo "ok: $name rejected with the $(grep -c '^# expect: ' "$bad") expected finding(s)"
  fi
done
((fail)) && exit 1
echo "Kubernetes manifests valid; broken manifests rejected"
