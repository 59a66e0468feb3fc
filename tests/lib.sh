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

# doc_sample ID: the shell block the README or the guide marks with
# "<!-- sample:ID -->" (its first), as the user copies it. The test that
# calls it runs it (tests/samples.sh checks that every shell block is some
# test's, and that blocks of one ID are alike).
doc_sample() {
    _ds=$(awk -v m="<!-- sample:$1 -->" '$0 == m { on = 1; next } on == 1 && /^```/ { on = 2; next }
        on == 2 && /^```$/ { exit } on == 2 { print }' "$top_srcdir/README.md" "$top_srcdir"/docs/guide/*.md)
    [ -n "$_ds" ] || { echo "doc_sample: no block is marked sample:$1" >&2; return 1; }
    printf '%s\n' "$_ds"
}

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
    # scripts/test.sh's tally of a build whose logs go (make distcheck
    # removes its build when it passes): the test, its time and its counts
    [ -z "${PREEMPT_TEST_TALLY:-}" ] ||
        echo "${0##*/} $(($(date +%s) - started_at)) $checks $failures" >>"$PREEMPT_TEST_TALLY"
    [ "$failures" -eq 0 ]
    exit $?
}

# bg_start NAME FUNCTION ARGS...: runs one case of the test beside the rest
# of it, in a subshell with its own directory (its $TMP is $TMP/NAME), its
# output kept and its checks counted apart; bg_join NAME waits for it,
# prints its output and adds its counts. For cases that mostly wait (long
# steps, a deadline); a test that uses it stops them in its EXIT trap
# (bg_kill), and a case stopped so stops its workers (job_kill).
bg_start() {
    _name=$1
    shift
    mkdir -p "$TMP/$_name"
    (
        TMP=$TMP/$_name checks=0 failures=0
        trap 'exit 143' TERM
        trap '! type job_kill >/dev/null 2>&1 || job_kill' EXIT
        "$@" >"$TMP/log" 2>&1
        echo "$checks $failures" >"$TMP/counts"
    ) &
    eval "BG_$_name=\$!"
    BG_PIDS="${BG_PIDS:-} $!"
}
bg_join() {
    eval "wait \"\$BG_$1\"" # bounded: the case's own waits are
    cat "$TMP/$1/log"
    if read -r _c _f <"$TMP/$1/counts"; then
        checks=$((checks + _c))
        failures=$((failures + _f))
    else
        fail "$1: the case ended without its counts"
    fi
}
# shellcheck disable=SC2086 # the pids, split
bg_kill() { kill_ours TERM ${BG_PIDS:-}; }

# ---- helpers for tests that run the reference trainer -----------------------
TRAINER="$top_builddir/tools/preempt-trainer"

. "$top_srcdir/scripts/jsonl.sh" # field, count_events

# ---- bounded waits for events (tests/wait-lib.sh: poll, spin, and the
# conditions; here the waits that fail a check when their bound passes) ----
#   wait_until SECONDS WHAT CMD... poll; a failed check "WHAT" on time-out
#   wait_for FILE TEXT SECONDS     FILE contains TEXT (fixed string)
#   wait_lines FILE TEXT N SECONDS FILE has N lines containing TEXT
#   wait_handler PID SECONDS       PID has a signalfd open: its handler was
#                                  made (start-up and restore done) and it
#                                  reads its notice signals
. "$top_srcdir/tests/wait-lib.sh"
wait_until() {
    _wu_s=$1 _wu_what=$2
    shift 2
    poll "$_wu_s" "$@" && return 0
    fail "$_wu_what: not within $_wu_s s"
    return 1
}
wait_for() {
    poll "$3" has_text "$1" "$2" && return 0
    fail "no '$2' in $1 after $3 s"
    return 1
}
wait_lines() {
    poll "$4" has_lines "$1" "$2" "$3" && return 0
    fail "fewer than $3 lines with '$2' in $1 after $4 s"
    return 1
}
wait_handler() {
    poll "$2" has_signalfd "$1" && return 0
    fail "process $1 has no signalfd after $2 s"
    return 1
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
