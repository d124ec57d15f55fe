#!/usr/bin/env bash
# deploy/prometheus/codl-alerts.yaml: syntax (promtool check rules) and behaviour (promtool test
# rules on codl-alerts_test.yaml, which also proves each alert can fire).
# Usage: rules_check.sh SOURCE_DIR. Exit 77 (skipped) without promtool.
set -euo pipefail
src=${1:?source dir}
command -v promtool >/dev/null || { echo "SKIP: promtool not found (Debian package prometheus)"; exit 77; }
promtool check rules "$src/deploy/prometheus/codl-alerts.yaml"
cd "$src/tests/deploy/prometheus"
promtool test rules codl-alerts_test.yaml
