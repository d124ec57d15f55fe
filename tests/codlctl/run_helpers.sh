# Shared by resume_check.sh and full_disk_check.sh (sourced; needs $codlctl and $fails).
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
