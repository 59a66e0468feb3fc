#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# scripts/stress.sh [RUNS]: the job tests under load (make check-stress).
# Runs make check's job and field tests ($STRESS_TESTS, which make
# check-stress passes) RUNS times in a row (default 5), TEST_JOBS of them
# at a time (default 2), with two CPU-bound loops beside them the whole
# time, and stops at the first run that fails. A test that fails here
# waits on time somewhere, or asserts a schedule instead of what holds at
# any speed (docs/development.md, "Tests and time"): fix it there, never
# with a retry. Each run's time and result is printed; the last line is
# "stress: N of N runs passed"; run I's make output is in stress-I.log.
set -u
# in the build tree (make check-stress runs it there)
runs=${1:-5}
jobs=${TEST_JOBS:-2}
# every shell test that starts real processes on a real etcd (or Slurm,
# torch, node_exporter); the static checks and unit tests are left out
tests=${STRESS_TESTS:-}
[ -n "$tests" ] || { echo "stress: STRESS_TESTS is empty: run it as make check-stress" >&2; exit 2; }

busy() { while :; do :; done; }
busy & b1=$!
busy & b2=$!
trap 'kill "$b1" "$b2" 2>/dev/null' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

passed=0
i=1
while [ "$i" -le "$runs" ]; do
    s=$(date +%s)
    make -j"$jobs" check TESTS="$tests" >"stress-$i.log" 2>&1
    rc=$?
    t=$(($(date +%s) - s))
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        echo "stress run $i (TEST_JOBS=$jobs, two busy loops): passed in $t s"
    else
        echo "stress run $i (TEST_JOBS=$jobs, two busy loops): FAILED after $t s"
        grep -h '^FAIL' stress-$i.log tests/*.log 2>/dev/null | sort -u | head -n 40
        break
    fi
    i=$((i + 1))
done
echo "stress: $passed of $runs runs passed"
[ "$passed" -eq "$runs" ]
