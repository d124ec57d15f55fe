#!/usr/bin/env bash
# deploy/docker/Dockerfile cannot be built here (no Docker daemon), so this checks what can be
# checked without one: every repository path it copies exists, every target it builds is a
# CMake target of this build with an install rule, and the runtime stage's Debian
# packages provide every shared library those binaries load (ldd -> dpkg -S -> the packages the
# runtime list pulls in, with their dependencies).
# Usage: docker_check.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=${1:?source dir}
build=${2:?build dir}
df=${CODL_DOCKERFILE:-$src/deploy/docker/Dockerfile}
fail=0
bad() { echo "FAIL: $*"; fail=1; }

for p in $(grep -oE '(deploy|docs|scripts)/[A-Za-z0-9_./-]+' "$df" | sort -u); do
  [[ -e "$src/$p" ]] || bad "Dockerfile names $p, which does not exist"
done

targets=$(cmake --build "$build" --target help 2>/dev/null | sed -n 's/^\([A-Za-z0-9_.-]*\): .*/\1/p')
built=$(sed -n 's/.*cmake --build \/build --target \(.*\)\\$/\1/p; s/.*cmake --build \/build --target \(.*\) &&.*/\1/p' "$df" | head -1)
[[ -n "$built" ]] || bad "cannot find the build command's targets in the Dockerfile"
for t in $built; do
  [[ "$t" == "&&" || "$t" == "\\" ]] && continue
  grep -qx "$t" <<<"$targets" || bad "Dockerfile builds '$t', which is not a CMake target"
done
# The build stage installs with `cmake --install` (cmake/CodlInstall.cmake holds every rule), so
# each binary it builds must have an install rule there, and the runtime libraries below are
# checked for exactly those binaries.
grep -qE 'cmake --install /build --prefix /out/usr/local' "$df" ||
  bad "the Dockerfile no longer installs with 'cmake --install /build --prefix /out/usr/local'"
install_rules="$src/cmake/CodlInstall.cmake"
grep -q 'install(TARGETS' "$install_rules" || bad "$install_rules has no install(TARGETS ...) rule"
bins=()
for t in $built; do
  [[ "$t" == codl* ]] || continue
  grep -qw -- "$t" "$install_rules" || bad "Dockerfile builds $t, which $install_rules does not install"
  bins+=("$t")
done
# ... and the other way round: cmake --install fails on an installed target that was not built.
for t in $(grep -E '(set|APPEND)\(?\s*codl_binaries|APPEND codl_binaries' "$install_rules" |
           sed 's/#.*//' | grep -oE '\bcodl(-[a-z]+|ctl)\b'); do
  grep -qw -- "$t" <<<"$built" || bad "$install_rules installs $t, which the Dockerfile does not build"
done

# Runtime libraries: the runtime stage's packages (with their dependencies) must provide them.
if ! apt-cache show libc6 >/dev/null 2>&1; then
  echo "note: no apt package lists here (apt-get update): runtime library check skipped"
else
  runtime_pkgs=$(awk '/^FROM .* AS runtime/{r=1} /^FROM runtime AS/{r=0} r' "$df" |
    sed -n '/apt-get install/,/&& if/p' | grep -oE '\b(lib[a-z0-9.+-]+|ca-certificates|procps)\b' | sort -u)
  closure=$( (echo "$runtime_pkgs"; apt-cache depends --recurse --no-recommends --no-suggests \
      --no-conflicts --no-breaks --no-replaces --no-enhances $runtime_pkgs 2>/dev/null) |
    sed 's/^ *\(Depends\|PreDepends\): //; s/[<>]//g' | grep -v '^ ' | sort -u)
  # Every shared library the binaries load (resolved), then one dpkg -S for all of them.
  declare -A users=()
  for b in "${bins[@]}"; do
    [[ -x "$build/bin/$b" ]] || { bad "$build/bin/$b not built"; continue; }
    for lib in $(ldd "$build/bin/$b" | awk '$3 ~ /^\// {print $3}'); do
      real=$(readlink -f "$lib")
      users[$real]+="${users[$real]:+, }$b"
    done
  done
  declare -A owner=()
  while IFS= read -r line; do
    owner[${line#*: }]=${line%%:*}
  done < <(dpkg -S "${!users[@]}" 2>/dev/null)
  for real in "${!users[@]}"; do
    pkg=${owner[$real]:-}
    [[ -z "$pkg" ]] && continue  # not from a Debian package (e.g. CUDA under /usr/local)
    grep -qx "$pkg" <<<"$closure" && continue
    prio=$(apt-cache show "$pkg" 2>/dev/null | sed -n 's/^Priority: //p' | head -1)
    [[ "$prio" == required ]] && continue  # in every Debian image
    bad "${users[$real]} need(s) $real from package $pkg, which the runtime stage does not install"
  done
fi
((fail)) && exit 1
echo "Dockerfile consistent with the build (paths, targets, binaries, runtime libraries)"
