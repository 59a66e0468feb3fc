#!/bin/sh
# scripts/test.sh: the whole test suite, as the README and CI run it.
# Installs what is missing, builds with warnings as errors, runs make check,
# the unit tests and the reference trainer under valgrind, and make distcheck,
# whose build from the tarball runs the whole suite again under
# AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer, with
# the fault points compiled in (tests/faults.sh then sweeps them); ends
# with one line "tests: N passed, N failed" counting every check of every
# test program of the plain build.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
make -j2
status=0
make -j2 check || status=$?

# Count the checks of every test program: Check's "Checks: N, Failures: F,
# Errors: E" lines and the shell tests' "N checks, F failures" lines.
count() {
    passed=0
    failed=0
    for log in tests/unit/*.log tests/*.log; do
        [ -f "$log" ] || continue
        set -- $(sed -n 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p;
                        s/^\([0-9]*\) checks, \([0-9]*\) failures$/\1 \2 0/p' "$log" | tail -n 1)
        [ $# -eq 3 ] || { failed=$((failed + 1)); continue; }
        passed=$((passed + $1 - $2 - $3))
        failed=$((failed + $2 + $3))
    done
}

if [ "$status" -ne 0 ]; then
    [ -f test-suite.log ] && cat test-suite.log
    count
    echo "tests: $passed passed, $failed failed"
    exit "$status"
fi
count
make check-valgrind
if ! make -j2 distcheck DISTCHECK_CONFIGURE_FLAGS="--enable-werror --enable-asan --enable-ubsan --enable-faults"; then
    # distcheck leaves its build behind on failure: show why.
    for log in libpreempt-*/_build/sub/test-suite.log; do
        [ -f "$log" ] && cat "$log"
    done
    exit 1
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
