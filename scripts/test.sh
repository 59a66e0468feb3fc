#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# scripts/test.sh: the whole test suite, as the README and CI run it.
# Installs what is missing, builds with warnings as errors, and runs side
# by side make check (the field tests, the static checks, the unit tests),
# make check-valgrind (the unit tests and the reference trainer under
# valgrind) and make distcheck, whose build from the tarball runs the job
# tests, the tools' tests and
# the unit tests under AddressSanitizer (with LeakSanitizer) and
# UndefinedBehaviorSanitizer, with the fault points compiled in
# (tests/faults.sh then sweeps them), and then builds the examples against
# its installed prefix with pkg-config alone (make installcheck). Every
# test runs once (Makefile.am's FIELD_TESTS and JOB_TESTS say where).
#
# On every path, failures included, it ends with one line
# "tests: N passed, N failed", counting every check of every test program,
# preceded by the names of the failed tests or the stage that failed.
set -eu
cd "$(dirname "$0")/.."

passed=0
failed=0
failures=""
stage=setup
temps=
tally=

# count DIR LABEL: adds the checks of the test logs in DIR (Check's "Checks:
# N, Failures: F, Errors: E" lines and the shell tests' "N checks, F failures"
# lines) and names each failed test (its .trs result).
count() {
    dir=$1 label=$2
    for log in "$dir"/tests/unit/*.log "$dir"/tests/*.log; do
        [ -f "$log" ] || continue
        name=${log#"$dir"/}
        set -- $(sed -n 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p;
                        s/^\([0-9]*\) checks, \([0-9]*\) failures$/\1 \2 0/p' "$log" | tail -n 1)
        bad=0
        if [ $# -eq 3 ]; then
            bad=$(($2 + $3))
            passed=$((passed + $1 - bad))
            failed=$((failed + bad))
        fi
        if [ $# -ne 3 ] || [ "$bad" -ne 0 ] || grep -qE '^:test-result: (FAIL|ERROR|XPASS)' "${log%.log}.trs" 2>/dev/null; then
            # A test that failed without a count (a crash, a timeout) counts once.
            [ "$bad" -ne 0 ] || failed=$((failed + 1))
            failures="$failures
FAIL: ${name%.log}$label (log: $log)"
        fi
    done
}

# slowest DIR LABEL: the six longest shell tests in DIR (their "took N s"
# lines), to keep the suite's time in view.
slowest() {
    for log in "$1"/tests/*.log; do
        t=$(sed -n 's/^took \([0-9]*\) s$/\1/p' "$log" 2>/dev/null | tail -n 1)
        [ -n "$t" ] && { name=${log#"$1"/}; echo "$t ${name%.log}"; }
    done | sort -rn | head -n 6 | awk -v l="$2" 'NR == 1 { printf "slowest tests%s:", l } { printf " %s %d s,", $2, $1 } END { if (NR) print "" }'
}

# tallied FILE LABEL: adds the checks of a build whose logs are gone (make
# distcheck removes its build when it passes) from its tally, a line
# "NAME SECONDS|- CHECKS FAILURES" per test (tests/lib.sh's finish,
# tests/unit/check-main.h), and prints its six longest shell tests.
tallied() {
    while read -r name _ n bad; do
        passed=$((passed + n - bad))
        failed=$((failed + bad))
        [ "$bad" -eq 0 ] || failures="$failures
FAIL: $name$2"
    done <"$1"
    awk '$2 != "-" { print $2, $1 }' "$1" | sort -rn | head -n 6 |
        awk -v l="$2" 'NR == 1 { printf "slowest tests%s:", l } { printf " %s %d s,", $2, $1 } END { if (NR) print "" }'
}

# stage_done NAME: the time since the last stage ended.
stage_clock=$(date +%s)
stage_done() {
    now=$(date +%s)
    echo "== $1: $((now - stage_clock)) s"
    stage_clock=$now
}

summary() {
    status=$?
    trap - EXIT
    count . ""
    slowest . ""
    kept=
    for d in libpreempt-*/_build/sub; do
        [ -d "$d" ] && { kept=1; count "$d" " (sanitized build, make distcheck)"; slowest "$d" " (sanitized)"; }
    done
    [ -n "$kept" ] || [ ! -s "${tally:-}" ] || tallied "$tally" " (sanitized build, make distcheck)"
    # shellcheck disable=SC2086 # the temporary files, split
    [ -z "$temps" ] || rm -f $temps
    if [ "$status" -ne 0 ] && [ -z "$failures" ]; then
        failed=$((failed + 1))
        failures="
FAIL: $stage"
    fi
    [ -z "$failures" ] || printf '%s\n' "$failures" | sed '1d'
    echo "tests: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] || [ "$status" -ne 0 ] || status=1
    exit "$status"
}
trap summary EXIT

# show_logs DIR: the logs of the failed tests in DIR.
show_logs() {
    [ -f "$1/test-suite.log" ] && cat "$1/test-suite.log"
    return 0
}

# tree_state: what git sees changed or untracked, to compare after the run
# (the suite leaves no file behind that git would show); empty outside git.
tree_state() {
    if [ -d .git ] && command -v git >/dev/null; then git status --porcelain; fi
}
before=$(tree_state)

scripts/setup.sh
stage_done setup
stage="the build (make)"
make -j2
make -j2 check TESTS= # the test programs: the two runs below build nothing
stage_done "$stage"
# The three runs go side by side: make check in the main build (the
# field tests, the static checks and the unit tests, TEST_JOBS at a time:
# 2), make check-valgrind (the unit tests and the reference trainer under
# memcheck, one process) and make distcheck, whose sanitized build runs the
# job tests (JOB_TESTS), the tools' tests (TOOL_TESTS: the tree's checks
# tell the same in any build, and run in the main build alone) and the
# unit tests, TEST_JOBS at a time. Each test runs once; make check alone
# runs every test in one build. Apart, the field tests wait more than they
# compute (long steps, grace periods, leases: about 60% of two cores) and
# so does distcheck (its configure, its archive); side by side they keep
# both cores busy, as make check-stress's load does (docs/development.md,
# "Tests and time"). make dist reads what the build above made; make check
# builds nothing more, so the two makes in this tree never make one file.
jobs=${TEST_JOBS:-2}
stage="make check, make check-valgrind and make distcheck, side by side"
vglog=$(mktemp)
dclog=$(mktemp)
# the sanitized build's counts: distcheck removes its build, logs and all,
# when it passes (tests/lib.sh's finish and check-main.h write the tally)
tally=$(mktemp)
temps="$vglog $dclog $tally"
timed() { # NAME CMD...: CMD, then "== NAME: N s" (its own time)
    _n=$1 _s=$(date +%s)
    shift
    _rc=0
    "$@" || _rc=$?
    echo "== $_n: $(($(date +%s) - _s)) s"
    return "$_rc"
}
timed "make check-valgrind" make check-valgrind >"$vglog" 2>&1 &
vg=$!
PREEMPT_TEST_TALLY=$tally timed "make distcheck (sanitized build)" make -j"$jobs" distcheck \
    DISTCHECK_CONFIGURE_FLAGS="--enable-werror --enable-asan --enable-ubsan --enable-faults" >"$dclog" 2>&1 &
dc=$!
check_rc=0 vg_rc=0 dc_rc=0
timed "make check" make -j"$jobs" check JOB_TESTS= || check_rc=$?
# bounded: every test of both runs has TEST_BOUND (timeout(1))
wait "$vg" || vg_rc=$?
wait "$dc" || dc_rc=$?
cat "$vglog"
cat "$dclog"
stage_done "$stage"
[ "$check_rc" -eq 0 ] || show_logs .
# distcheck leaves its build behind on failure: show why.
[ "$dc_rc" -eq 0 ] || for d in libpreempt-*/_build/sub; do show_logs "$d"; done
stage="make check"
[ "$check_rc" -eq 0 ]
stage="make check-valgrind"
[ "$vg_rc" -eq 0 ]
stage="make distcheck (sanitized build)"
[ "$dc_rc" -eq 0 ]
stage="the tree after the tests: they left files that git shows (git status)"
[ "$(tree_state)" = "$before" ]
