#!/bin/sh
# scripts/demo.sh: sets everything up and shows the state machine at work on
# recorded preemptions: what happened, step by step, and the state diagram
# with the path taken, written as SVG to out/.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
make -j2 >/dev/null
mkdir -p out

show() { # SCENARIO TITLE
    trace="tests/traces/$1.trace"
    echo
    echo "== $2"
    sed -n 's/^# \{0,1\}//p' "$trace" | sed 's/^/   /'
    echo
    tools/preempt-replay --quiet --print "$trace" | awk '
        /^config/ { next }
        {
            t = ""; ev = ""; out = ""
            for (i = 1; i <= NF; i++) {
                if ($i ~ /^t=/) t = substr($i, 3)
                if ($i ~ /^ev=/) ev = substr($i, 4)
                if ($i == "=>") { for (j = i + 1; j <= NF; j++) out = out " " $j; break }
            }
            printf "   %7s ms  %-16s%s\n", t, ev, out
        }'
    tools/fsmdump --trace "$trace" | dot -Tsvg >"out/$1.svg"
    echo "   diagram with the path taken: out/$1.svg"
}

echo "libpreempt $(sed -n 's/^AC_INIT(\[libpreempt\], \[\([^]]*\)\].*/\1/p' configure.ac): the preemption state machine"
show 001-local-grace0 "One worker, SIGTERM, grace 0: save once and exit 42"
show 002-local-grace-two-saves "One worker, 5 s grace period: save, keep training, save again before the deadline"
show 004-both-signalled-driver "Two workers signalled at once: one driver, one agreement"
echo
echo "Every line above came out of the pure core (fsm/), replayed from tests/traces/."
echo "All states and transitions: tools/fsmdump --format table"
