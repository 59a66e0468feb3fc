#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/fuzz.sh: the libFuzzer harnesses (tests/fuzz/*.c). For each: every
# seed (tests/fuzz/corpus/NAME) and every regression input of a fixed
# finding (tests/fuzz/regress/NAME) runs once and must pass; then the
# harness fuzzes from the seeds for FUZZ_SECONDS (10 in make check; make
# fuzz: 600) and must find nothing. A finding is left in the build tree as
# tests/fuzz/NAME-crash-* (or -leak-, -timeout-, -oom-), with the command
# that reproduces it.
#   FUZZ="watch trace"   only these harnesses
#   FUZZ_WORK=DIR        keep the corpus each run grows in DIR/NAME
. "$top_srcdir/tests/lib.sh"

if [ "${HAVE_LIBFUZZER:-yes}" != yes ]; then
    fail "clang with libFuzzer was not found at configure time: install clang and libclang-rt-14-dev (scripts/setup.sh does) and configure again"
    finish
fi
seconds=${FUZZ_SECONDS:-10}
names=${FUZZ:-watch manifest trace scenario}
art="$top_builddir/tests/fuzz"
# A finding must stop the run: UBSan aborts, ASan reports leaks too.
UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1
export UBSAN_OPTIONS

for name in $names; do
    prog="$top_builddir/tests/fuzz/fuzz-$name"
    seeds="$top_srcdir/tests/fuzz/corpus/$name"
    regress="$top_srcdir/tests/fuzz/regress/$name"
    [ -x "$prog" ] || { fail "$prog is not built"; continue; }
    n=$(ls "$seeds" 2>/dev/null | wc -l)
    [ "$n" -gt 0 ] && ok || fail "$name: no seed corpus in $seeds"

    # 1. Every seed and regression input, once.
    set -- "$seeds"/*
    [ -d "$regress" ] && set -- "$@" "$regress"/*
    n_inputs=$#
    if expect_rc 0 "$prog" -runs=1 "$@"; then
        ran=$(grep -c '^Running: ' "$TMP/out")
        eq "$name: inputs replayed" "$ran" "$n_inputs"
    fi

    # 2. Fuzz from the seeds.
    work=${FUZZ_WORK:+$FUZZ_WORK/$name}
    work=${work:-$TMP/work-$name}
    mkdir -p "$work"
    rm -f "$art/$name-"*
    echo "fuzzing $name for $seconds s (corpus $work)"
    "$prog" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$art/$name-" "$work" "$seeds" >"$TMP/fuzz-$name.log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/fuzz-$name.log")
    if [ "$rc" -ne 0 ]; then
        fail "$name: the fuzzer found a defect (exit $rc)"
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written|Assertion' "$TMP/fuzz-$name.log" | sed 's/^/    /'
        for f in "$art/$name-"*; do
            [ -f "$f" ] && echo "    reproduce: $prog $f   (after the fix: copy it into tests/fuzz/regress/$name/)"
        done
    else
        ok
        echo "    $name: ${execs:-?} inputs in $seconds s, corpus $(ls "$work" | wc -l) files"
        [ "${execs:-0}" -gt 0 ] && ok || fail "$name: the fuzzer ran no input"
    fi
done
finish
