#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/no-sleep.sh: no test sleeps to let something happen. A test waits,
# bounded, for the event (tests/wait-lib.sh: poll; tests/lib.sh:
# wait_until, wait_for, ...); poll()'s period is the one pause of the
# shell tests. Counted here:
#  - shell (every .sh under tests/, the scripts they write included): a
#    sleep command anywhere but in poll();
#  - C and Python test programs: a sleep whose comment does not say what
#    it stands for: a step's own work ("the step": the time a trainer's
#    step computes or blocks in its collective), a fake server's reply
#    ("latency"), or a bounded poll's period ("the poll"). Work and
#    latency are the workload; a pause for another process to act is not.
#  - shell: a wait for a process with no bound (a bare "wait PID" waits
#    forever for a process that hangs: one hung watcher held a CI run for
#    its whole 90 minutes). A test waits through wait-lib.sh's reap
#    SECONDS PID, or says on the line why the wait is bounded ("# bounded:
#    SIGKILL", "# bounded: timeout 120").
. "$top_srcdir/tests/lib.sh"
cd "$top_srcdir" || exit 1

# code LINE: the line without its shell comment (a '#' at the start or
# after a blank; '$#' and '${#' stay)
found=$(find tests -name '*.sh' ! -name no-sleep.sh | sort | while read -r f; do
    sed -n 's/^[[:space:]]*#.*//; s/[[:space:]]#.*//; /\(^\|[^a-z_-]\)sleep[[:space:]]\{1,\}["$0-9]/=' "$f" |
        while read -r n; do
            line=$(sed -n "${n}p" "$f")
            [ "$f" = tests/wait-lib.sh ] && [ "${line#*the poll\'s period}" != "$line" ] && continue
            echo "$f:$n: $line"
        done
done)
if [ -z "$found" ]; then ok; else fail "fixed sleeps in the shell tests:
$found"; fi

# the poll is there, once
eq "poll's pause, once in tests/wait-lib.sh" "$(grep -c "sleep 0.05 # the poll's period" tests/wait-lib.sh)" 1

found=$(grep -nE '(^|[^a-z_.])(usleep|nanosleep|sleep)\(|time\.sleep\(|asyncio\.sleep\((0[^)]|[^0)])' \
    $(find tests -name '*.c' -o -name '*.py' | sort) | grep -vE "the step|the poll|latency" || true)
if [ -z "$found" ]; then ok; else fail "sleeps in the test programs that are no step's work:
$found"; fi

# waits: through reap, or bounded by what the line says
unbounded() { # FILE...: their bare waits for a process
    grep -nE '(^|[;&|(!{"[:space:]])wait([[:space:]]|$|;)' "$@" /dev/null | grep -vE '^[^:]*:[0-9]+:[[:space:]]*#' |
        grep -v '# bounded' || true
}
found=$(unbounded $(find tests -name '*.sh' ! -name no-sleep.sh | sort))
if [ -z "$found" ]; then ok; else fail "waits with no bound in the shell tests (use reap SECONDS PID):
$found"; fi

# the check finds what it looks for (a planted sleep of each kind, a bare wait)
mkdir -p "$TMP/t"
printf 'x=1\nsleep 0.3 # a pause\n' >"$TMP/t/a.sh"
expect "the check sees a shell sleep" test -n "$(sed -n 's/^[[:space:]]*#.*//; s/[[:space:]]#.*//; /\(^\|[^a-z_-]\)sleep[[:space:]]\{1,\}["$0-9]/=' "$TMP/t/a.sh")"
printf '    usleep(1000); /* a pause */\n' >"$TMP/t/a.c"
expect "the check sees a C sleep" test -n "$(grep -nE '(^|[^a-z_.])(usleep|nanosleep|sleep)\(' "$TMP/t/a.c" | grep -vE 'the step|the poll|latency')"
printf 'x &\nwait "$!"\nwait $p # bounded: SIGKILL\neval "wait $p"\n' >"$TMP/t/b.sh"
eq "the check sees a bare wait, and only it" "$(unbounded "$TMP/t/b.sh" | cut -d: -f2 | tr '\n' ' ')" "2 4 "
finish
