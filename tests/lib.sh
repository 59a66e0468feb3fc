# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/lib.sh: shared helpers for the shell tests (sourced).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
FSMDUMP="$top_builddir/tools/fsmdump"
REPLAY="$top_builddir/tools/preempt-replay"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/preempt-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# a test stopped from outside (make's Ctrl-C, a CI timeout) still runs its
# EXIT trap, which stops the daemons it started
trap 'exit 130' INT
trap 'exit 143' TERM
failures=0
checks=0
started_at=$(date +%s)

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

# struct_fields NAME: the field names of struct NAME in the public header.
struct_fields() {
    sed -n "/^struct $1 {/,/^};/p" "$top_srcdir/include/libpreempt/preempt.h" |
        sed -n 's/^    [a-z][a-z0-9_ ]*[ *(]\{1,\}\([a-z_0-9]*\)[])]*\(\[[A-Z_]*\]\)\{0,1\}[;(].*/\1/p'
}

finish() {
    echo "took $(($(date +%s) - started_at)) s"
    echo "$checks checks, $failures failures"
    [ "$failures" -eq 0 ]
    exit $?
}

# ---- helpers for tests that run the reference trainer -----------------------
TRAINER="$top_builddir/tools/preempt-trainer"

. "$top_srcdir/scripts/jsonl.sh" # field, count_events

# wait_for FILE TEXT SECONDS: waits until FILE contains TEXT (bounded).
wait_for() {
    _n=0
    while ! grep -qF -- "$2" "$1" 2>/dev/null; do
        _n=$((_n + 1))
        [ "$_n" -gt $(($3 * 20)) ] && { fail "no '$2' in $1 after $3 s"; return 1; }
        sleep 0.05
    done
    return 0
}

# eq WHAT GOT WANT: one check of a value.
eq() {
    if [ "$2" = "$3" ]; then ok; else fail "$1: got '$2', want '$3'"; fi
}

# expect WHAT COMMAND...: one check of a condition.
expect() {
    _what=$1
    shift
    if "$@"; then ok; else fail "$_what"; fi
}
