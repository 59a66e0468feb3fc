# tests/lib.sh: shared helpers for the shell tests (sourced).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
FSMDUMP="$top_builddir/tools/fsmdump"
REPLAY="$top_builddir/tools/preempt-replay"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/preempt-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
failures=0
checks=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

ok() {
    checks=$((checks + 1))
}

# expect_rc WANT CMD...: runs CMD, output to $TMP/out, and checks its status.
expect_rc() {
    want=$1
    shift
    "$@" >"$TMP/out" 2>&1
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "exit $rc (expected $want): $*"
        sed 's/^/    /' "$TMP/out"
        return 1
    fi
    ok
    return 0
}

# expect_output PATTERN: the last command's output contains PATTERN (fixed string).
expect_output() {
    if grep -qF -- "$1" "$TMP/out"; then
        ok
    else
        fail "output lacks '$1'"
        sed 's/^/    /' "$TMP/out"
    fi
}

finish() {
    echo "$checks checks, $failures failures"
    [ "$failures" -eq 0 ]
    exit $?
}
