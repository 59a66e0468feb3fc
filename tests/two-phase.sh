# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Two-phase saves in the field, with each backend (io_uring, Linux AIO
# past the page cache, and the chunked fallback): the reference trainer
# hands its model over as a snapshot (--two-phase) and trains on while the
# library persists it. A
# preemption with a grace period, periodic checkpoints, a SIGKILL in each
# phase of a persist, and a job of two workers on a real etcd; every
# restart resumes bitwise. No timed assertions: waits only bound hangs.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
trap 'job_kill; etcd_stop; rm -rf "$TMP"' EXIT
export PREEMPT_PLATFORM=none

ckpt() { printf 'ckpt-%020d' "$1"; }
# digest NAME ARGS...: the trainer's final digest
digest() {
    _n=$1
    shift
    "$TRAINER" "$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err"
    field "$TMP/$_n.out" done state_digest
}
# resume_bitwise LABEL REF ARGS...: job $tag's 2 workers start again with
# ARGS, both resume at $step and end with the digest REF
resume_bitwise() {
    _label=$1 _ref=$2
    shift 2
    job_start "$tag" 2 "$@"
    job_wait 60
    eq "$_label: restart" "$RCS" "0 0"
    eq "$_label: both resume at the saved step" "$(same "$tag" 2 start restored_step)" "$step"
    eq "$_label: bitwise" "$(same "$tag" 2 done state_digest)" "$_ref"
    [ "$failures" -eq 0 ] || show_logs "$tag" 2
}
# persisted FILE: the commits the log reports as persisted on the loop, with which backend
persisted() { grep -o 'persisted with [a-z_]* on the loop' "$1" | sort -u; }

REF=$(digest ref --ckpt-dir "$TMP/ref" --steps 400 --state-kb 16384)
expect "an uninterrupted run prints a digest" test -n "$REF"
etcd_start tp || finish

# ---- long steps, and training that ends while a checkpoint persists ----
# Long steps: 1.5 s steps, a 64 MiB state, a checkpoint requested every 2
# steps. A boundary may also use a twentieth of the mean step time, so the
# first checkpoint commits within a few steps (chunked, 8 MiB per boundary
# alone took 8 steps and more). How many is sized for a loaded machine:
# the three backends' runs go on at once beside the end runs below; within
# 4 steps held alone and beside two busy loops, but took 5 (run 3 to 8) in
# a CI run with a simulator beside it (2026-12-03). Within 6 of 12 steps
# (9 s for 64 MiB) still tells the paced persist from 8 MiB a boundary
# alone. The end: a checkpoint at the last step is
# still persisting when training ends; it is awaited (finishing) and
# committed, never dropped, and the restart restores it.
END_REF=$(digest endref --ckpt-dir "$TMP/endref" --steps 9 --state-kb 65536)
for be in io_uring aio chunked; do
    PREEMPT_PERSIST=$be PREEMPT_METRICS_PATH=$TMP/$be-long.prom "$TRAINER" --ckpt-dir "$TMP/$be-long" --steps 12 \
        --state-kb 65536 --step-ms 1500 --two-phase --save-every-steps 2 --max-to-keep 0 --verbose \
        >"$TMP/$be-long.out" 2>"$TMP/$be-long.err" &
    eval "long_pid_$be=\$!"
    PREEMPT_PERSIST=$be "$TRAINER" --ckpt-dir "$TMP/$be-end" --steps 9 --state-kb 65536 --two-phase \
        --save-every-steps 8 --max-to-keep 0 --verbose >"$TMP/$be-end.out" 2>"$TMP/$be-end.err"
    eq "$be end: done" "$?" 0
    expect "$be end: the last checkpoint was awaited" grep -q '"from":"persisting","to":"finishing"' "$TMP/$be-end.out"
    expect "$be end: then the exit" grep -q '"from":"finishing","to":"exit"' "$TMP/$be-end.out"
    expect "$be end: committed" test -f "$TMP/$be-end/$(ckpt 9)/MANIFEST"
    "$top_builddir/tools/preempt-ckpt" list "$TMP/$be-end" >"$TMP/$be-end.list"
    eq "$be end: it verifies" "$(awk '$4 == "ok"' "$TMP/$be-end.list" | wc -l)" 1
    "$TRAINER" --ckpt-dir "$TMP/$be-end" --steps 9 --state-kb 65536 --two-phase >"$TMP/$be-end2.out" 2>&1
    eq "$be end: restart" "$?" 0
    eq "$be end: restores it" "$(field "$TMP/$be-end2.out" start restored_step)" 9
    eq "$be end: bitwise" "$(field "$TMP/$be-end2.out" done state_digest)" "$END_REF"
done
for be in io_uring aio chunked; do
    eval "reap 120 \$long_pid_$be"
    eq "$be long steps: done" "$?" 0
    # the run of the first save's persist, and of its commit
    started=$(grep -m1 '"to":"persisting"' "$TMP/$be-long.out" | sed 's/.*"run":\([0-9]*\).*/\1/')
    committed=$(grep -m1 '"from":"persisting","to":"idle"' "$TMP/$be-long.out" | sed 's/.*"run":\([0-9]*\).*/\1/')
    expect "$be long steps: the first checkpoint persisted ($started) and committed ($committed)" \
        test -n "$started" -a -n "$committed"
    expect "$be long steps: committed within 6 steps (run $started to ${committed:-none})" \
        test "${committed:-99}" -le $((${started:-0} + 6))
    # The metrics: the stall of a save that persisted while training went on
    # is its snapshot phase, far less than the save (whole steps long)
    m() { awk -v n="$1" '$1 ~ "^"n"[{]" { print $2 }' "$TMP/$be-long.prom"; }
    eq "$be long steps: a stall measured for each save" "$(m preempt_save_stall_seconds_count)" \
        "$(m preempt_save_seconds_count)"
    expect "$be long steps: the stalls ($(m preempt_save_stall_seconds_sum) s) are shorter than the saves ($(m preempt_save_seconds_sum) s)" \
        awk -v a="$(m preempt_save_stall_seconds_sum)" -v b="$(m preempt_save_seconds_sum)" 'BEGIN { exit !(a > 0 && a < b) }'
done

# ---- a notice while a periodic checkpoint persists: finish it or supersede it ----
# No grace period: the checkpoint persisting would be the preemption's
# last. Periodic checkpoints of a 64 MiB state every 20 steps; the first
# (step 21) measures the save, the second (step 41) is persisting when
# SIGTERM comes. The chunked backend writes 8 MiB per step boundary, or
# what fits in a twentieth of the step's time when that is more, so the
# persist, 8 boundaries at the least budget, still runs at step 42 or 44
# whatever the disk (seen in the sanitized build too, whose steps are
# slower). At step 42 the checkpoint is recent (one step behind,
# the lead): it finishes and commits, and, with 30 s of room after it
# (bound_ms), the final round saves the step the worker stopped at, one or
# two steps on: no step is lost (before, the exit saved step 41 and the
# restart trained the steps past it again). At step 44 it would
# lose 3 steps: superseded, it is dropped (no staging left), a new round
# saves step 45, and the restart resumes there bitwise. The traces replay.
export PREEMPT_PERSIST=chunked
SUP_REF=$(digest supref --ckpt-dir "$TMP/supref" --steps 60 --state-kb 65536)
for at in 42 44; do
    d=$TMP/sup-$at
    PREEMPT_TERMINATION_LOG="$TMP/sup-$at.json" "$TRAINER" --ckpt-dir "$d" --steps 60 --state-kb 65536 --step-ms 5 \
        --two-phase --save-every-steps 20 --max-to-keep 0 --raise-at $at --verbose --trace "$TMP/sup-$at.trace" \
        >"$TMP/sup-$at.out" 2>"$TMP/sup-$at.err"
    eq "notice at $at: preempted, saved" "$?" 42
    expect_rc 0 "$REPLAY" --quiet "$TMP/sup-$at.trace"
    expect "notice at $at: the first checkpoint committed" test -f "$d/$(ckpt 21)/MANIFEST"
    expect "notice at $at: no unfinished checkpoint left" test -z "$(ls -A "$d" | grep '^\.staging-')"
    if [ $at = 42 ]; then
        expect "notice at $at: it came while the checkpoint persisted, which finished" \
            grep -q 'ev=notice .* => persisting -> persisting' "$TMP/sup-$at.trace"
        expect "notice at $at: the persisting checkpoint committed" test -f "$d/$(ckpt 41)/MANIFEST"
        expect "notice at $at: it was not the last: its decision named no stop step, a final round followed" \
            grep -q 'ev=ckpt-committed step=41 .* => persisting -> countdown' "$TMP/sup-$at.trace"
        # the exit saved the step the worker stopped at, past 41: the
        # record counts none lost, and the steps the later save kept
        expect "notice at $at: the exit saved the step it stopped at, none lost" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["committed_step"] == r["run"] > 41 and r["steps_lost"] == 0 and r["grace_steps"] == r["run"] - 41, r' \
            "$TMP/sup-$at.json"
    else
        expect "notice at $at: it came while the checkpoint persisted, which it superseded" \
            grep -q 'ev=notice .* => persisting -> following fx=publish-notice:[0-9]*,discard-shard:41,propose-step:45' \
            "$TMP/sup-$at.trace"
        expect "notice at $at: the log says the persist was dropped" \
            grep -q 'checkpoint at step 41 was still persisting: dropped' "$TMP/sup-$at.err"
        eq "notice at $at: the new round's checkpoint is the saved one" "$(field "$TMP/sup-$at.out" exit saved_step)" 45
        expect "notice at $at: the record counts no step lost" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["committed_step"] == r["run"] == 45 and r["steps_lost"] == 0 and r["grace_steps"] == 0, r' \
            "$TMP/sup-$at.json"
        expect "notice at $at: the superseded one never committed" test ! -e "$d/$(ckpt 41)"
    fi
    s=$(field "$TMP/sup-$at.out" exit saved_step)
    "$TRAINER" --ckpt-dir "$d" --steps 60 --state-kb 65536 --two-phase >"$TMP/sup-$at-2.out" 2>&1
    eq "notice at $at: restart" "$?" 0
    eq "notice at $at: restored the saved step" "$(field "$TMP/sup-$at-2.out" start restored_step)" "$s"
    eq "notice at $at: bitwise" "$(field "$TMP/sup-$at-2.out" done state_digest)" "$SUP_REF"
done

# ---- the planner's save time: awaited saves, not paced ones ----
# A preemption's last save is awaited: its persist runs back to back while
# the trainer waits (final-save), and its manifest says so. The restart
# plans with that time from the start; a periodic checkpoint's persist
# then waits for steps (1 s steps, 96 MiB: more than a boundary's budget),
# so its time from snapshot to commit counts them, longer than the awaited
# save's (the check's precondition), and it must not become
# the planner's figure (before: every later final save was planned as if
# it waited for steps too, and a grace period gave up training for it).
d=$TMP/plan
PREEMPT_PERSIST=aio "$TRAINER" --ckpt-dir "$d" --steps 60 --state-kb 98304 --two-phase --raise-at 3 \
    --trace "$TMP/plan-1.trace" >"$TMP/plan-1.out" 2>"$TMP/plan-1.err"
eq "planned saves: preempted, saved" "$?" 42
expect "planned saves: the last save was awaited (no persisting state)" \
    test -z "$(grep -e '-> persisting' "$TMP/plan-1.trace")"
PREEMPT_PERSIST=aio "$TRAINER" --ckpt-dir "$d" --steps 10 --step-ms 1000 --state-kb 98304 --two-phase \
    --save-every-steps 4 --verbose --trace "$TMP/plan-2.trace" >"$TMP/plan-2.out" 2>"$TMP/plan-2.err"
eq "planned saves: the restart is done" "$?" 0
restored=$(grep -m1 -o 'save-ms=[0-9]*' "$TMP/plan-2.trace")
paced=$(sed -n 's/.*checkpoint at step [0-9]* committed in \([0-9]*\) ms (snapshot.*/\1/p' "$TMP/plan-2.err" | head -n 1)
expect "planned saves: the restart knows the awaited save's time (${restored:-none})" test -n "$restored"
expect "planned saves: a periodic checkpoint persisted over steps (${paced:-none} ms, ${restored:-none})" \
    test "${paced:-0}" -gt "${restored#save-ms=}"
eq "planned saves: the planner kept the awaited time" "$(grep -o 'save-ms=[0-9]*' "$TMP/plan-2.trace" | sort -u)" \
    "$restored"
expect_rc 0 "$REPLAY" --quiet "$TMP/plan-2.trace"
# The same in a job of two workers: the job's figure is the slowest save
# its decision record names, and every worker's report names its own
# (awaited, or paced until an awaited one is known). A fresh job's first
# periodic checkpoint is paced on every worker (0.5 s steps, 96 MiB), so its
# decision's figure is; the preemption (SIGTERM to worker 0 four steps
# after it, no grace) saves awaited, and its decision names the awaited
# saves: every worker's planner follows it down. The workers step in
# lockstep (a blocking all-reduce in every step), as data-parallel ones do. Before, the job's figure
# counted as an awaited save of each worker's: the longest forever after,
# carried by every later report (seen: save=3221 in both decisions). The
# signal waits for the periodic checkpoint's commit (a notice while it
# persists would make it the preemption's: seen once with 0.5 s steps
# and the signal four steps after its save began).
tag=planjob
PREEMPT_PERSIST=aio job_start "$tag" 2 --steps 200 --step-ms 500 --state-kb 98304 --two-phase --save-every-steps 4 \
    --max-to-keep 0 --allreduce "$(free_port 10000 10000)"
wait_for "$TMP/$tag.0.out" '"from":"persisting","to":"idle"' 60 && kill -TERM "$(echo $PIDS | cut -d' ' -f1)"
job_wait 90
saved_one_step "$tag" 2 "planned job saves"
# decision_save N: the save figure of worker 0's N-th decision line ("... save=<ms>")
decision_save() { grep 'decision is "committed' "$TMP/$tag.0.err" | sed -n "$1s/.* save=\([0-9]*\).*/\1/p"; }
paced=$(decision_save 1) awaited=$(decision_save 2)
expect "planned job saves: the periodic checkpoint's figure is paced, longer (${paced:-none} ms, ${awaited:-none})" \
    test "${paced:-0}" -gt "${awaited:-99999}"
for i in 0 1; do
    eq "planned job saves: worker $i's planner follows the last decision" \
        "$(grep -o 'save-ms=[0-9]*' "$TMP/$tag.$i.trace" | tail -n 1)" "save-ms=$awaited"
done
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# The same in a job of two workers on etcd that step in lockstep (a
# blocking all-reduce in every step: apart, worker 1 once trained to its
# end while worker 0, slower beside the suite, had not raised yet): a 256
# MiB state of cheap steps (--step-kb: a step updates 64 KiB of it), so
# that a persist takes 32 boundaries unloaded (chunked: 8 MiB a boundary,
# or what a twentieth of the step's time writes when that is more: with
# 30 ms steps slowed to 70 ms by the suite's load, 128 MiB took 14
# boundaries once). Periodic checkpoints every 25 steps, the first
# measuring the save. Worker 0 alone gets SIGTERM 13 steps after the step
# of its second (whichever step the job agreed): that checkpoint still
# persists (unless a twentieth of a step writes 20 MiB), and is more than
# the lead behind (3 steps and an agreement's: under 13 for agreements
# under 300 ms). Worker 0 supersedes it by raising the round's
# one step record; worker 1, which had no notice, follows that record (its
# persist dropped at once); both save the new step, and the restart
# resumes it bitwise.
# the reference: the same job uninterrupted (the all-reduce's sums enter the state)
job_start supjref 2 --steps 100 --state-kb 262144 --step-kb 64 --allreduce "$(free_port 10000 10000)"
job_wait 90
eq "job supersede ref: done" "$RCS" "0 0"
SUPJ_REF=$(same supjref 2 done state_digest)
tag=supjob
JOB_ARGS_0="--raise-after-save 2:13"
PREEMPT_PERSIST=chunked job_start "$tag" 2 --steps 100 --state-kb 262144 --step-kb 64 --step-ms 30 --two-phase \
    --save-every-steps 25 --max-to-keep 0 --allreduce "$(free_port 10000 10000)"
JOB_ARGS_0=
job_wait 120
saved_one_step "$tag" 2 "job supersede"
expect "job supersede: worker 0 superseded the persisting checkpoint" \
    grep -q 'ev=notice .* => persisting -> following fx=publish-notice:[0-9]*,discard-shard:[0-9]*,propose-step' \
    "$TMP/$tag.0.trace"
old=$(grep -o 'ev=notice .* => persisting -> following fx=publish-notice:[0-9]*,discard-shard:[0-9]*' \
    "$TMP/$tag.0.trace" | sed 's/.*discard-shard://')
expect "job supersede: worker 1 followed the raised record, dropping its copy at once" \
    grep -Eq "ev=step-agreed .* => persisting -> (step-agreed|following) fx=discard-shard:$old" "$TMP/$tag.1.trace"
expect "job supersede: the new step ($step) is past the superseded one (${old:-none})" test "${step:-0}" -gt "${old:-99999}"
expect "job supersede: the superseded checkpoint never committed" test ! -e "$TMP/$tag/$(ckpt "${old:-0}")"
# the periodic checkpoint's episode had published worker 0's notice record
# withdrawn (advisory); the signal's makes it live, naming the signal
expect "job supersede: worker 0's notice record names the signal, not the period" \
    grep -Eq "^job t=[0-9]+ put k=/preempt/$tag/1/e[0-9]+/notice/0 v=[0-9]+%20signal => notice worker=0 .* withdrawn=0" \
    "$TMP/$tag.1.trace"
for i in 0 1; do expect_rc 0 "$REPLAY" --quiet "$TMP/$tag.$i.trace"; done
[ "$failures" -eq 0 ] || show_logs "$tag" 2
resume_bitwise "job supersede" "$SUPJ_REF" --steps 100 --state-kb 262144 --step-kb 64 --two-phase \
    --allreduce "$(free_port 10000 10000)"

# ---- the same in a job whose workers step in lockstep (a blocking
# all-reduce inside every step, as data-parallel training does), with each
# backend. The first periodic checkpoint (96 MiB of cheap steps: at least
# 12 boundaries chunked, 3 with io_uring, whose boundary checksums 32 MiB)
# persists when worker 0 gets SIGTERM, the step after its save's. Without
# a measured save it is never superseded: it finishes while both workers
# train on, and commits. It is not the preemption's last: 30 s of room
# (bound_ms) is left after it, so its decision names no stop step, the job
# counts down from the commit, and the final round saves the step both
# workers stop at. Before, it was the last: both stopped at the decision's
# stop step, 10 to 20 steps past it, and the restart trained them again.
# (When no round fits after the commit, the decision still names one stop
# step: check_fsm and the simulator, whose clock is virtual, check that
# path.) The preempted job would train on forever: whatever the persist
# takes (on a busy disk in CI, 40 steps of 15 ms once), the final round
# comes. The reference and the restart train to step 1000: a persist of 15
# s (20 times the slowest seen) would still be inside them. ----
# the reference: the same job uninterrupted (the all-reduce's sums enter the state)
job_start stopref 2 --steps 1000 --state-kb 98304 --step-kb 64 --allreduce "$(free_port 10000 10000)"
job_wait 90
eq "stop ref: done" "$RCS" "0 0"
STOP_REF=$(same stopref 2 done state_digest)
for be in chunked io_uring aio; do
    export PREEMPT_PERSIST=$be
    tag=stop-$be
    JOB_ARGS_0="--raise-after-save 1:1"
    job_start "$tag" 2 --steps 1000000 --state-kb 98304 --step-kb 64 --step-ms 15 --two-phase --save-every-steps 20 \
        --max-to-keep 0 --allreduce "$(free_port 10000 10000)"
    JOB_ARGS_0=
    job_wait 90
    eq "$be stop: both saved" "$RCS" "42 42"
    step=$(same "$tag" 2 exit saved_step)
    first=$(first_field "$TMP/$tag.0.out" save-begin step)
    expect "$be stop: the notice came while the first checkpoint persisted, and it finished" \
        grep -q 'ev=notice .* => persisting -> persisting' "$TMP/$tag.0.trace"
    expect "$be stop: it committed (step ${first:-none})" test -f "$TMP/$tag/worker-0/$(ckpt "${first:-0}")/MANIFEST"
    # the decision: "committed <step>[ last save=<ms> stop=<step>...]": not the last
    expect "$be stop: its decision named no stop step: a final round followed" \
        grep -q "ev=ckpt-committed step=${first:-0} stop=0 => persisting -> countdown" "$TMP/$tag.0.trace"
    expect "$be stop: the saved step ($step) is past it" test "${step:-0}" -gt "${first:-99999}"
    for i in 0 1; do
        ran=$(grep '"to":"exit"' "$TMP/$tag.$i.out" | sed 's/.*"run":\([0-9]*\).*/\1/')
        eq "$be stop: worker $i exited at the saved step, none lost" "$ran" "$step"
        expect_rc 0 "$REPLAY" --quiet "$TMP/$tag.$i.trace"
    done
    eq "$be stop: its backend" "$(persisted "$TMP/$tag.0.err")" "persisted with $be on the loop"
    [ "$failures" -eq 0 ] || show_logs "$tag" 2
    resume_bitwise "$be stop" "$STOP_REF" --steps 1000 --state-kb 98304 --step-kb 64 --two-phase \
        --allreduce "$(free_port 10000 10000)"
done
export PREEMPT_PERSIST=chunked

# ---- a notice after a periodic checkpoint's reports, before its decision ----
# No grace period; each backend, and synchronous saves. Worker 0's shard is
# the job's last to be reported: it persists the larger shard (32 MiB
# beside 64 KiB), or, saving
# synchronously, its saves take 300 ms longer. SIGTERM comes as its save
# ends (--raise-at-save-end: a two-phase one's snapshot released, durable;
# a synchronous one's callback returned), that is as that report goes out,
# saying "not the last save" (the round was periodic, withdrawn). The
# decision then names no stop step. Two-phase, both workers trained on
# while it persisted, and count down from its commit; without a grace
# period there is nothing to count down through: the driver opens the
# final round at the next step, both save one step and exit saved, and
# the restart resumes it bitwise. Before, both trained on towards the 30 s
# bound and exited "done" when training ended (tests/torchrun.sh saw it
# once in five CI runs; here every run). Synchronous, both wait at the
# periodic step for its commit (the round's record said "last": final-save),
# which the notice makes the preemption's: both exit saved there. The
# workers step in lockstep.
# late_run SLOW [ARGS]: job $tag of two workers in lockstep, periodic saves
# every 20 steps; worker 0 (the larger shard, and SLOW) raises SIGTERM as
# its first save ends. Both exit saved; $step is the saved step, $first
# worker 0's first save's, and the notice came after worker 0's report.
# $late is "window" when worker 0's notice record landed before the
# periodic round's decision (the case's window), "episode" when after it:
# its put and the decision go to etcd on two connections, and in a slow
# (sanitized) build the decision landed first once in CI. Then the job
# committed the periodic checkpoint as the withdrawn round's, and worker
# 0's notice opened the next episode (docs/protocol.md, "The last save"):
# both save again at a later step, which the case then checks instead.
late_run() {
    JOB_ARGS_0="--state-kb 32768 --step-kb 64 $1 --raise-at-save-end 1" JOB_ARGS_1="--state-kb 64"
    shift
    job_start "$tag" 2 --steps 300 --step-ms 10 --save-every-steps 20 --max-to-keep 0 "$@" \
        --allreduce "$(free_port 10000 10000)"
    job_wait 90
    eq "$tag: both saved" "$RCS" "42 42"
    step=$(same "$tag" 2 exit saved_step)
    first=$(first_field "$TMP/$tag.0.out" save-begin step)
    rep=$(grep -n -m1 'fx=report-shard:' "$TMP/$tag.0.trace" | cut -d: -f1)
    sig=$(grep -n -m1 'ev=notice source=signal' "$TMP/$tag.0.trace" | cut -d: -f1)
    expect "$tag: the notice came after worker 0's report (lines ${rep:-none}, ${sig:-none})" \
        test "${rep:-0}" -gt 0 -a "${sig:-0}" -gt "${rep:-0}"
    late=window
    if grep -q "notice came after the job withdrew the others: it opens episode" "$TMP/$tag.0.err"; then
        late=episode
        echo "$tag: worker 0's notice landed after the periodic round's decision: it opened the next episode"
        expect "$tag: (a new episode) one step saved, after the periodic one ($step, $first)" \
            test "${step#differs}" = "$step" -a "${step:-0}" -gt "${first:-999}"
    fi
}
# late_resume [MODE]: the restart of $tag resumes $step on both workers,
# bitwise against lateref's uninterrupted run with the same shards.
late_resume() {
    [ "$failures" -eq 0 ] || show_logs "$tag" 2
    JOB_ARGS_0="--state-kb 32768 --step-kb 64"
    job_start "$tag" 2 --steps 300 "$@" --allreduce "$(free_port 10000 10000)"
    job_wait 90
    JOB_ARGS_0= JOB_ARGS_1=
    eq "$tag again: done" "$RCS" "0 0"
    for i in 0 1; do
        eq "$tag again: worker $i resumed at the saved step" "$(field "$TMP/$tag.$i.out" start restored_step)" "$step"
        eq "$tag again: worker $i bitwise" "$(field "$TMP/$tag.$i.out" done state_digest)" \
            "$(field "$TMP/lateref.$i.out" done state_digest)"
    done
}
JOB_ARGS_0="--state-kb 32768 --step-kb 64" JOB_ARGS_1="--state-kb 64"
job_start lateref 2 --steps 300 --allreduce "$(free_port 10000 10000)"
job_wait 90
eq "late ref: done" "$RCS" "0 0"
for tag in late-chunked late-io_uring late-aio late-sync; do
    if [ $tag = late-sync ]; then
        mode= slow="--save-ms 300" ends='"from":"final-save","to":"exit"' how="exited at the periodic commit"
    else
        export PREEMPT_PERSIST="${tag#late-}"
        mode=--two-phase slow= ends='"from":"persisting","to":"countdown"' how="counted down from the periodic commit"
    fi
    late_run "$slow" $mode
    if [ $late = episode ]; then
        :
    elif [ $tag != late-sync ]; then
        eq "$tag: its backend" "$(persisted "$TMP/$tag.0.err")" "persisted with $PREEMPT_PERSIST on the loop"
        expect "$tag: one step saved, after the periodic one ($step, $first)" \
            test "${step#differs}" = "$step" -a "${step:-0}" -gt "${first:-999}"
    else
        eq "$tag: the periodic step saved" "$step" "${first:-none}"
    fi
    for i in 0 1; do
        [ $late = episode ] || expect "$tag: worker $i $how" grep -q "$ends" "$TMP/$tag.$i.out"
    done
    late_resume $mode
done
export PREEMPT_PERSIST=chunked

# The same window with a grace period (2 s), two-phase, chunked: the
# commit of the periodic checkpoint starts the countdown; both train
# through it in lockstep, the driver opens the final round, both save once
# more and exit saved at that step before the deadline; the restart
# resumes it bitwise. What this case asserts holds at any speed: both exit
# saved with one step, never older than the periodic one; a final round
# that committed did so after the periodic step, was each worker's last
# save and ended before the deadline; the restart is exact. Whether the
# final round commits is a schedule: its step is the lead ahead (3 steps
# and the measured agreement), and a worker that learns it only after
# passing it raises it, so worker 0 saves 32 MiB twice, and under load the
# second save can miss the deadline (make check-stress at four jobs: with
# 10 ms steps, then again with 50 ms, round 1 agreed 30, raised to 31,
# given up at the deadline; both exited with the periodic step 24). The
# simulator checks that schedule in virtual time (tests/sim.sh: with
# two-phase saves no final round aborts raised or without a cause; seed 77
# counts down from a persisting commit to a final round that commits).
tag=late-grace
# final_save_in_time I: worker I's last save ended before the deadline
final_save_in_time() {
    left=$(field "$TMP/$tag.$1.out" saved deadline_in_ms)
    expect "$tag: worker $1's final save ended before the deadline ($left ms left)" test "${left:--1}" -gt 0
}
late_run "" --two-phase --grace-ms 2000 --step-ms 50
expect "$tag: one step saved, the periodic one or later ($step, $first)" \
    test "${step#differs}" = "$step" -a "${step:-0}" -ge "${first:-999}"
if [ $late = episode ]; then
    # The notice opened the next episode (late_run checked its later
    # step): its first round's commit may itself be the last, or leave
    # room for a final round; either way a final save ends before the
    # deadline. Seen in make check-stress TEST_JOBS=2 (run 5 at 02c2052):
    # episode 1 committed step 31 "last" and both exited from stopping.
    for i in 0 1; do
        if grep -q '"from":"final-save","to":"exit"' "$TMP/$tag.$i.out"; then
            final_save_in_time $i
        fi
    done
elif [ "${step:-0}" -gt "${first:-999}" ]; then
    echo "$tag: the final round committed step $step (the periodic one: $first)"
    for i in 0 1; do
        expect "$tag: worker $i saved the final round's step last" \
            grep -q '"from":"final-save","to":"exit"' "$TMP/$tag.$i.out"
        final_save_in_time $i
    done
else
    echo "$tag: the final round did not commit in time on this machine: both exited with the periodic step $first"
fi
late_resume --two-phase

# ---- under preempt-launch: two workers, periodic two-phase checkpoints
# persisting while they train, then SIGTERM to the launcher, as a
# scheduler sends it, with a grace period: the launcher passes it on, both
# workers save one step, persisted while they train on in the grace
# period, then one final step (its save awaited); the launch asks to be
# restarted, and a second launch resumes both there, bitwise. The workers
# train through the grace period only if a final save still fits after the
# first one's commit (1.5 saves, the lead, the round trip, the 500 ms margin):
# in the sanitized build on a busy machine a 300 ms save made that about
# 2 s, so 2 s of grace was judged too short (correctly) once; 6 s is not.
# The workers step in lockstep (a blocking all-reduce in every step), as a
# data-parallel job does: without it, one worker starved of CPU fell a
# hundred steps behind the other, never reached the final round's step
# before the deadline, and the round was given up (seen once in CI). ----
LAUNCH="$top_builddir/tools/preempt-launch"
# w_field FILE WORKER EVENT KEY: KEY of WORKER's last EVENT line in the launcher's output
w_field() { grep "\"event\":\"$3\"" "$1" | grep "\"worker\":$2[,}]" | tail -n 1 | sed -n "s/.*\"$4\":\"\{0,1\}\([^\",}]*\).*/\1/p"; }
"$LAUNCH" --workers 2 -- "$TRAINER" --etcd "$ETCD_URL" --job tplaunch --ckpt-dir "$TMP/tplaunch" --steps 100000 \
    --state-kb 16384 --step-ms 5 --two-phase --save-every-steps 30 --max-to-keep 0 --grace-ms 6000 --verbose \
    --allreduce "$(free_port 10000 10000)" >"$TMP/tpl.out" 2>"$TMP/tpl.err" &
lp=$!
wait_for "$TMP/tpl.out" '"from":"persisting","to":"idle"' 60 && kill -TERM "$lp"
reap 180 "$lp"
eq "launch: asks to be restarted" "$?" 42
for i in 0 1; do
    eq "launch: worker $i preempted, saved" "$(w_field "$TMP/tpl.out" $i exit reason) $(w_field "$TMP/tpl.out" $i exit code)" \
        "preempted 42"
done
s=$(w_field "$TMP/tpl.out" 0 exit saved_step)
eq "launch: one step saved by both (${s:-none})" "$(w_field "$TMP/tpl.out" 1 exit saved_step)" "$s"
expect "launch: checkpoints persisted while the workers trained" \
    test "$(grep -c '"from":"persisting","to":"idle"' "$TMP/tpl.out")" -ge 2
for i in 0 1; do
    expect "launch: worker $i's first save persisted while it trained in the grace period" \
        grep -q "\"worker\":$i,\"from\":\"persisting\",\"to\":\"countdown\"" "$TMP/tpl.out"
    expect "launch: worker $i's grace period ended in the final round" \
        grep -Eq "\"worker\":$i,\"from\":\"countdown\",\"to\":\"(own-signal|following|step-agreed)\"" "$TMP/tpl.out"
    # Under the sanitizers beside other tests a worker's 5 ms steps can
    # stall past the final round's budget: the round is then given up at
    # the deadline, and the job exits with the first save (seen once; the
    # exit and the restart's checks above and below hold either way).
    [ -n "${SANITIZE:-}" ] || expect "launch: worker $i's grace period ended in a final save" \
        grep -q "\"worker\":$i,\"from\":\"final-save\",\"to\":\"exit\"" "$TMP/tpl.out"
done
n=$((${s:-0} + 40))
"$LAUNCH" --workers 2 -- "$TRAINER" --etcd "$ETCD_URL" --job tplaunch --ckpt-dir "$TMP/tplaunch" --steps "$n" \
    --state-kb 16384 --two-phase --allreduce "$(free_port 10000 10000)" >"$TMP/tpl2.out" 2>"$TMP/tpl2.err"
eq "launch again: done" "$?" 0
# the reference: the same two workers uninterrupted (the all-reduce's sums enter the state)
job_start lref 2 --steps "$n" --state-kb 16384 --allreduce "$(free_port 10000 10000)"
job_wait 90
eq "launch ref: done" "$RCS" "0 0"
LREF=$(same lref 2 done state_digest)
for i in 0 1; do
    eq "launch again: worker $i resumed at the saved step" "$(w_field "$TMP/tpl2.out" $i start restored_step)" "$s"
    eq "launch again: worker $i bitwise" "$(w_field "$TMP/tpl2.out" $i done state_digest)" "$LREF"
done
[ "$failures" -eq 0 ] || { tail -n 20 "$TMP/tpl.err" "$TMP/tpl2.err"; }

for be in io_uring aio chunked; do
    export PREEMPT_PERSIST=$be

    # ---- a preemption with a grace period: two two-phase saves, the first
    # persisting while training goes on, the last awaited ----
    d=$TMP/$be-grace
    "$TRAINER" --ckpt-dir "$d" --steps 400 --state-kb 16384 --step-ms 3 --two-phase --raise-at 60 \
        --grace-ms 3000 --verbose --trace "$TMP/$be-grace.trace" >"$TMP/$be-grace.out" 2>"$TMP/$be-grace.err"
    eq "$be grace: preempted, saved" "$?" 42
    expect "$be grace: the first checkpoint persisted while training went on" \
        grep -q '"from":"persisting","to":"countdown"' "$TMP/$be-grace.out"
    eq "$be grace: its backend" "$(persisted "$TMP/$be-grace.err")" "persisted with $be on the loop"
    expect_rc 0 "$REPLAY" --quiet "$TMP/$be-grace.trace"
    s=$(field "$TMP/$be-grace.out" exit saved_step)
    "$TRAINER" --ckpt-dir "$d" --steps 400 --state-kb 16384 --two-phase >"$TMP/$be-grace2.out" 2>&1
    eq "$be grace: restart" "$?" 0
    eq "$be grace: restored the last save" "$(field "$TMP/$be-grace2.out" start restored_step)" "$s"
    eq "$be grace: bitwise the uninterrupted run" "$(field "$TMP/$be-grace2.out" done state_digest)" "$REF"

    # ---- periodic checkpoints: each persists while training goes on ----
    d=$TMP/$be-periodic
    "$TRAINER" --ckpt-dir "$d" --steps 400 --state-kb 16384 --step-ms 1 --two-phase --save-every-steps 100 \
        --max-to-keep 0 --verbose >"$TMP/$be-periodic.out" 2>"$TMP/$be-periodic.err"
    eq "$be periodic: done" "$?" 0
    eq "$be periodic: bitwise" "$(field "$TMP/$be-periodic.out" done state_digest)" "$REF"
    eq "$be periodic: three checkpoints persisted" \
        "$(grep -c '"from":"persisting","to":"idle"' "$TMP/$be-periodic.out")" 3
    for s in 101 201 301; do
        expect "$be periodic: checkpoint $s" test -f "$d/$(ckpt "$s")/MANIFEST"
    done
    "$top_builddir/tools/preempt-ckpt" list "$d" >"$TMP/$be-periodic.list"
    eq "$be periodic: every checkpoint verifies (sizes and checksums)" \
        "$(awk '$4 == "ok"' "$TMP/$be-periodic.list" | wc -l)" 3

    # ---- SIGKILL in the snapshot phase, then while persisting ----
    # A first periodic checkpoint commits; the second is cut short. The
    # restart restores the first, removes the unfinished one and ends
    # bitwise.
    # (The snapshot phase ends before a backend is used: killed in it once.)
    phases=persisting
    [ "$be" = io_uring ] && phases="snapshot persisting"
    # staged DIR: a blob is written in DIR's unfinished checkpoint
    staged() { [ -n "$(find "$1" -path '*/.staging-*' -type f 2>/dev/null | head -n 1)" ]; }
    # persisting2 OUT PID: the second checkpoint persists (or PID is gone)
    persisting2() { [ "$(grep -c '"to":"persisting"' "$1")" -ge 2 ] || ! kill -0 "$2" 2>/dev/null; }
    for phase in $phases; do
        d=$TMP/$be-kill-$phase
        extra=
        [ "$phase" = snapshot ] && extra="--save-ms 3000"
        "$TRAINER" --ckpt-dir "$d" --steps 100000 --state-kb 16384 --step-ms 50 --two-phase \
            --save-every-steps 20 --max-to-keep 0 --verbose $extra >"$TMP/$be-kill-$phase.out" \
            2>"$TMP/$be-kill-$phase.err" &
        pid=$!
        if [ "$phase" = snapshot ]; then
            # the first save's snapshot phase takes --save-ms between its
            # blobs: killed in it, once the first blob is staged
            wait_for "$TMP/$be-kill-$phase.out" '"event":"save-begin"' 60 &&
                wait_until 30 "$be: the first blob staged" staged "$d"
        else
            wait_for "$TMP/$be-kill-$phase.out" '"event":"saved"' 60 &&
                wait_for "$TMP/$be-kill-$phase.out" '"from":"idle","to":"own-signal"' 60
            # the second checkpoint: killed once it persists (bounded: 60 s)
            spin 60 persisting2 "$TMP/$be-kill-$phase.out" "$pid"
        fi
        kill -KILL $pid
        wait $pid 2>/dev/null # bounded: SIGKILL
        committed=$(ls "$d" | grep -c '^ckpt-')
        expect "$be kill in $phase: an unfinished checkpoint is left" test -n "$(ls -A "$d" | grep '^\.staging-')"
        if [ "$phase" = snapshot ]; then
            eq "$be kill in $phase: nothing committed" "$committed" 0
        else
            eq "$be kill in $phase: one checkpoint committed" "$committed" 1
        fi
        first=$(ls "$d" | grep '^ckpt-' | sed 's/ckpt-0*//')
        "$TRAINER" --ckpt-dir "$d" --steps 60 --state-kb 16384 --two-phase >"$TMP/$be-kill-$phase-2.out" 2>&1
        eq "$be kill in $phase: restart" "$?" 0
        eq "$be kill in $phase: restored the committed one" \
            "$(field "$TMP/$be-kill-$phase-2.out" start restored_step)" "${first:-0}"
        expect "$be kill in $phase: the unfinished one removed" test -z "$(ls -A "$d" | grep '^\.staging-')"
        "$TRAINER" --ckpt-dir "$TMP/ref60-$be-$phase" --steps 60 --state-kb 16384 >"$TMP/ref60.out" 2>&1
        eq "$be kill in $phase: bitwise" "$(field "$TMP/$be-kill-$phase-2.out" done state_digest)" \
            "$(field "$TMP/ref60.out" done state_digest)"
    done

    # ---- a job of two workers on etcd: a preemption with a grace period
    # and a periodic checkpoint before it ----
    tag=job-$be
    job_start "$tag" 2 --steps 400 --state-kb 16384 --step-ms 3 --two-phase --save-every-steps 40 \
        --grace-ms 3000 --agree-timeout-ms 20000
    for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"event":"start"' 30; done
    wait_for "$TMP/$tag.0.out" '"from":"persisting"' 60 && kill -TERM "$(echo $PIDS | cut -d' ' -f1)"
    job_wait 60
    saved_one_step "$tag" 2 "$be job"
    for i in 0 1; do
        expect "$be job: worker $i persisted while training went on" grep -q '"to":"persisting"' "$TMP/$tag.$i.out"
        # a shard is reported only once it is durable: in the trace, every
        # report-shard follows a save-done of a persist
        expect "$be job: worker $i reports each shard after its persist" awk '
            /persist-started/ { open = 1 }
            /save-done/ { open = 0 }
            /report-shard/ && open { bad = 1 }
            END { exit bad }' "$TMP/$tag.$i.trace"
    done
    [ "$failures" -eq 0 ] || show_logs "$tag" 2
    resume_bitwise "$be job" "$REF" --steps 400 --state-kb 16384 --two-phase
done
finish
