# Shared by the tests/codlctl shell checks (sourced; needs $codlctl and $fails).
# fail MESSAGE: count and print a failure.
fail() {
  echo "FAIL $1"
  fails=$((fails + 1))
}
# committed DB ID: trials committed so far (status reads the file; empty before the row exists)
committed() {
  "$codlctl" status "$2" --db "$1" -o json 2>/dev/null |
    sed -n 's/.*"completed_trials":\([0-9]*\).*/\1/p' | head -1
}
# in_private_mount_namespace SCRIPT ARGS...: runs SCRIPT again inside a private mount namespace
# (what it mounts there is seen nowhere else) and exits with its status; returns at once when
# already inside. Exits 77 (skipped) where one cannot be made.
in_private_mount_namespace() {
  [[ ${CODL_PRIVATE_MOUNT_NS:-} == 1 ]] && return 0
  if ! unshare -m --propagation private true 2>/dev/null; then
    echo "SKIP: cannot create a mount namespace (unshare -m needs CAP_SYS_ADMIN)"
    exit 77
  fi
  exec env CODL_PRIVATE_MOUNT_NS=1 unshare -m --propagation private bash "$@"
}
# mount_tmpfs DIR OPTIONS NAME: a tmpfs at DIR (made here), or exits 77 saying why not.
mount_tmpfs() {
  mkdir -p "$1"
  local err
  if ! err=$(mount -t tmpfs -o "$2" "$3" "$1" 2>&1); then
    echo "SKIP: cannot mount a tmpfs: $err"
    exit 77
  fi
}
