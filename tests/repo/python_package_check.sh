#!/usr/bin/env bash
# The Python package as Python people expect (python/pyproject.toml): it builds with Debian's
# pip and setuptools (no network, --no-build-isolation), the wheel carries py.typed and the
# project's one version (VERSION), an editable install into a venv imports from anywhere, and
# `mypy --strict` (the [tool.mypy] settings) finds nothing.
# Usage: python_package_check.sh REPO_ROOT
set -euo pipefail
root=$(cd "$1" && pwd)
py=/usr/bin/python3
[[ -x $py ]] || py=$(command -v python3)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
version=$(head -n1 "$root/VERSION")

echo "== wheel"
# A copy, so that the build's egg-info and build/ never land in the checkout.
cp -rL "$root/python" "$work/src"
"$py" -m pip wheel --no-build-isolation --no-deps --no-index -q -w "$work/dist" "$work/src"
wheel=$(ls "$work"/dist/codl-*.whl)
[[ $(basename "$wheel") == "codl-$version-"* ]] || { echo "wheel $wheel is not version $version"; exit 1; }
"$py" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for need in ("codl/__init__.py", "codl/api.py", "codl/recorder.py", "codl/py.typed"):
    if need not in names:
        sys.exit(f"the wheel lacks {need}: {names}")
print("wheel ok:", len(names), "files")
PY

echo "== editable install in a venv"
"$py" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --no-build-isolation --no-deps --no-index -q -e "$root/python"
got=$(cd / && "$work/venv/bin/python" -c 'import codl, codl.api, codl.recorder; print(codl.__version__)')
[[ $got == "$version" ]] || { echo "codl.__version__ is '$got', VERSION says '$version'"; exit 1; }
echo "editable ok: codl $got"
# The editable install leaves its metadata in the checkout: remove it.
rm -rf "$root"/python/*.egg-info

echo "== mypy --strict"
if ! "$py" -m mypy --version >/dev/null 2>&1; then
  echo "mypy is not installed (Debian: apt-get install mypy; scripts/install-deps.sh test has it)"
  exit 1
fi
cd "$root/python"
"$py" -m mypy --config-file pyproject.toml --cache-dir "$work/mypy-cache"
