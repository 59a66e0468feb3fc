#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# scripts/demo.sh: sets everything up, then shows libpreempt at work on a
# real process: a training run gets SIGTERM at a random moment, saves, exits
# with 42, is restarted, restores, and ends in exactly the state of a run
# that was never interrupted. Then the same with a grace period, and a job of
# four workers coordinated through a private etcd. Writes the state diagrams
# with the path taken as SVG to out/. Exits 0 when every claim it prints held.
#
# The test suite (tests/demo.sh) runs it on a tree it has already built: it
# sets top_builddir (where the tools are) and DEMO_OUT (where to write), and
# the demo then neither installs nor builds anything.
set -eu
cd "$(dirname "$0")/.."
if [ -z "${top_builddir:-}" ]; then
    scripts/setup.sh >/dev/null
    make -j2 >/dev/null
    top_builddir=.
fi
outdir=${DEMO_OUT:-out}
out=$outdir/demo
rm -rf "$out"
mkdir -p "$out"
T=$top_builddir/tools/preempt-trainer
# The demo shows the protocol the same way everywhere: no cloud metadata
# source even on a cloud VM, and no launcher's kill delay.
PREEMPT_PLATFORM=none
export PREEMPT_PLATFORM
unset TORCHELASTIC_RUN_ID KUBERNETES_SERVICE_HOST SLURM_JOB_ID
STEPS=300
STEP_MS=10

. scripts/jsonl.sh # field
die() {
    echo "demo: $*" >&2
    exit 1
}
random_ms() { # MIN MAX
    echo $(($1 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % ($2 - $1)))
}
sleep_ms() {
    sleep "$(awk -v ms="$1" 'BEGIN { printf "%.3f", ms / 1000 }')"
}

echo "libpreempt demo: $STEPS training steps of ${STEP_MS} ms, one worker, local mode"
echo

# 1. The reference: the same training, never interrupted.
$T --ckpt-dir "$out/reference" --steps $STEPS >"$out/reference.jsonl" || die "the reference run failed"
want=$(field "$out/reference.jsonl" done state_digest)
echo "1. Uninterrupted run:            $STEPS steps, state digest $want"

# 2. The same training, preempted by SIGTERM at a random moment.
$T --ckpt-dir "$out/ckpt" --steps $STEPS --step-ms $STEP_MS --trace "$out/preempted.trace" \
    >"$out/preempted.jsonl" &
pid=$!
ms=$(random_ms 300 2500)
sleep_ms "$ms"
kill -TERM "$pid" 2>/dev/null || die "the run ended before the signal; try again"
code=0
wait "$pid" || code=$?
noticed=$(grep -F '"to":"own-signal"' "$out/preempted.jsonl" | sed 's/.*"run":\([0-9]*\).*/\1/')
saved=$(field "$out/preempted.jsonl" saved step)
save_ms=$(field "$out/preempted.jsonl" saved save_ms)
[ "$code" -eq 42 ] || die "the preempted run exited with $code, not 42"
echo "2. Preempted run:                SIGTERM after $ms ms, while step $((noticed + 1)) ran"
echo "   the handler read it at the step boundary (run counter $noticed), agreed on"
echo "   save step $saved, trained to it, committed the checkpoint in $save_ms ms"
echo "   ($out/ckpt/$(ls "$out/ckpt")) and exited with code $code: \"restart me\""

# 3. The restart: restore and finish.
$T --ckpt-dir "$out/ckpt" --steps $STEPS --step-ms $STEP_MS --trace "$out/restarted.trace" \
    >"$out/restarted.jsonl" || die "the restarted run failed"
restored=$(field "$out/restarted.jsonl" start restored_step)
got=$(field "$out/restarted.jsonl" done state_digest)
echo "3. Restarted run:                restored step $restored, trained steps $((restored + 1))-$STEPS, exit 0"
echo "   state digest $got"
[ "$got" = "$want" ] || die "the digests differ: a step was lost or repeated"
echo "   = the uninterrupted run's digest: no step lost, none repeated"

# 4. With a grace period: save, keep training, save again before the deadline.
$T --ckpt-dir "$out/grace" --steps 100000 --step-ms $STEP_MS --grace-ms 2000 --raise-at 50 \
    --trace "$out/grace.trace" >"$out/grace.jsonl" && die "the grace-period run was not preempted"
first=$(grep -F '"event":"saved"' "$out/grace.jsonl" | head -n 1 | sed 's/.*"step":\([0-9]*\).*/\1/')
last=$(field "$out/grace.jsonl" saved step)
left=$(field "$out/grace.jsonl" saved deadline_in_ms)
echo "4. With a 2 s grace period:      SIGTERM during step 50; saved at step $first, trained on"
echo "   to step $last, saved again with $left ms to spare, exited 42"

# 5. The machine: each recorded trace replays through the pure core, and the
#    diagrams show the path each run took.
for t in preempted grace; do
    "$top_builddir/tools/preempt-replay" --quiet "$out/$t.trace" || die "$t.trace does not replay"
    "$top_builddir/tools/fsmdump" --trace "$out/$t.trace" | dot -Tsvg >"$outdir/demo-$t.svg"
done
echo "5. The recorded traces replay exactly through the state machine;"
echo "   the path each run took: $outdir/demo-preempted.svg, $outdir/demo-grace.svg"
echo
echo "Path of the preempted run (from $out/preempted.trace):"
"$top_builddir/tools/preempt-replay" --quiet --print "$out/preempted.trace" | awk '
    /^config/ { next }
    {
        t = ""; ev = ""; out = ""
        for (i = 1; i <= NF; i++) {
            if ($i ~ /^t=/) t = substr($i, 3)
            if ($i ~ /^ev=/) ev = substr($i, 4)
            if ($i == "=>") { for (j = i + 1; j <= NF; j++) out = out " " $j; break }
        }
        printf "   %7s ms  %-15s%s\n", t, ev, out
    }'

# 6. Four workers of one job, coordinated through a private etcd on loopback.
#    One gets SIGTERM; all four agree on one step, save it, exit 42; the
#    launcher restarts them; all restore that step and finish in the state of
#    the uninterrupted run.
TMP=$out
fail() { die "$*"; }
top_srcdir=. # the demo runs in the tree's root (a test's top_srcdir is relative to its build)
. tests/etcd-lib.sh
# The trap stops etcd when the demo fails half-way; on success it is stopped
# below. Either way the demo's own status is kept.
trap 'st=$?; etcd_stop; exit $st' EXIT
etcd_start demo
echo
echo "6. Four workers, one job, a private etcd at $ETCD_URL (tools/preempt-launch"
echo "   restarts every worker that exits with 42):"
: >"$out/multi.jsonl" # the loop below reads it before the background job's redirection may have run
"$top_builddir/tools/preempt-launch" --workers 4 -- $T --etcd "$ETCD_URL" --job demo --ckpt-dir "$out/multi" \
    --steps $STEPS --step-ms $STEP_MS >"$out/multi.jsonl" 2>"$out/multi.err" &
lpid=$!
n=0
while [ "$(grep -c '"event":"start"' "$out/multi.jsonl")" -lt 4 ]; do
    n=$((n + 1))
    [ "$n" -lt 300 ] || die "the workers did not start; see $out/multi.err"
    sleep 0.05
done
sleep_ms "$(random_ms 300 1500)"
victim=$(random_ms 0 4)
vpid=$(grep -F "\"event\":\"launch\",\"worker\":$victim,\"attempt\":1," "$out/multi.jsonl" | sed 's/.*"pid":\([0-9]*\).*/\1/')
kill -TERM "$vpid"
wait "$lpid" || die "the launcher failed; see $out/multi.jsonl and $out/multi.err"
saved=$(grep -F '"event":"exit"' "$out/multi.jsonl" | sed 's/.*"saved_step":\([0-9]*\).*/\1/' | sort -u)
[ "$(echo "$saved" | wc -l)" -eq 1 ] || die "the workers saved different steps: $saved"
[ "$(grep -F '"event":"done"' "$out/multi.jsonl" | grep -cF "\"state_digest\":\"$want\"")" -eq 4 ] ||
    die "not every worker ended with the uninterrupted digest"
echo "   SIGTERM to worker $victim; every worker saved step $saved and exited 42; after the"
echo "   restart all four restored step $saved and ended with digest $want."
echo
echo "   The job's timeline (ms since launch; from $out/multi.jsonl):"
awk -v victim="$victim" '
    function get(k,   r) {
        if (match($0, "\"" k "\":\"?[^\",}]*")) { r = substr($0, RSTART, RLENGTH); sub(/^"[^"]*":"?/, "", r); return r }
        return ""
    }
    {
        ev = get("event"); w = get("worker"); t = get("t_ms"); what = ""
        if (ev == "launch" && get("attempt") > 1) what = "restarted by the launcher"
        else if (ev == "start" && get("incarnation") > 1) what = "restored step " get("restored_step")
        else if (ev == "state") what = get("from") " -> " get("to") " (after step " get("run") ")"
        else if (ev == "saved") what = "checkpoint at step " get("step") " committed by every worker"
        else if (ev == "exited") what = "exited with " get("code")
        else if (ev == "done") what = "done, digest " get("state_digest")
        if (what != "") printf "   %6d  worker %s%s  %s\n", t, w, w == victim && ev == "state" && get("to") == "own-signal" ? " (SIGTERM)" : "", what
    }' "$out/multi.jsonl" | sort -n -s -k1,1
etcd_stop
