# Shared by the tools' shell tests (source it): a scratch folder $tmp removed on exit, and
#   check NAME EXPECTED_RC STDERR_REGEX -- command...   (the command's stdout/stderr land in
#                                                         $tmp/out and $tmp/err)
#   expect NAME CONDITION...
# counting into $passed / $failed; finish with `report`, which exits non-zero on a failure.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

check() {
  local name="$1" want_rc="$2" pattern="$3"
  shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -eq "$want_rc" ] && { [ -z "$pattern" ] || grep -Eq -- "$pattern" "$tmp/err"; }; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: exit $rc (want $want_rc), stderr: $(head -c 400 "$tmp/err")"
  fi
}

expect() {
  local name="$1"
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name"; fi
}

report() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
