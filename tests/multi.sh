# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Multi-worker coordination end to end: a real etcd on loopback, real
# trainer processes, real signals. Every wait is bounded and only guards
# against hangs; nothing here asserts a duration.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
trap 'job_kill; kill_ours TERM $FPID; etcd_stop; rm -rf "$TMP"' EXIT

etcd_start multi || finish
REF=$("$TRAINER" --ckpt-dir "$TMP/ref" --steps 400 | sed -n 's/.*"state_digest":"\([0-9a-f]*\)".*/\1/p')
expect "an uninterrupted run prints a digest" test -n "$REF"

# ---- SIGTERM to a random worker at a random step; restart; same digest ----
for n in 2 4 8; do
    tag=term$n
    job_start "$tag" "$n" --steps 400 --step-ms 10
    for i in $(seq 0 $((n - 1))); do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
    job_trained "$(rand 20 90)" # a random moment into training
    victim=$(rand 0 $((n - 1)))
    kill -TERM "$(echo $PIDS | cut -d' ' -f$((victim + 1)))"
    job_wait 60
    eq "N=$n: every worker exits 42 after SIGTERM to worker $victim" "$RCS" "$(rcs_of "$n" 42)"
    step=$(same "$tag" "$n" exit saved_step)
    expect "N=$n: every worker saved the same step ($step)" one_step "$step"
    expect "N=$n: the save step is after the start ($step)" test "${step:-0}" -gt 0 2>/dev/null
    [ "$failures" -eq 0 ] || show_logs "$tag" "$n"
    job_start "$tag" "$n" --steps 400
    job_wait 60
    eq "N=$n: every worker finishes after the restart" "$RCS" "$(rcs_of "$n" 0)"
    eq "N=$n: every worker restored the saved step" "$(same "$tag" "$n" start restored_step)" "$step"
    eq "N=$n: every worker ends with the uninterrupted digest" "$(same "$tag" "$n" done state_digest)" "$REF"
    eq "N=$n: the restart is the next incarnation" "$(same "$tag" "$n" start incarnation)" 2
done

# ---- signals to several workers at once: one agreement ---------------------
tag=many
job_start "$tag" 4 --steps 400 --step-ms 10
for i in 0 1 2 3; do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
# a job's worker has loaded libcurl for its etcd client (lib/etcd/curl-api.h;
# tests/trainer.sh: a local handler never does)
expect "a job's worker maps libcurl" grep -q libcurl "/proc/$(echo $PIDS | cut -d' ' -f1)/maps"
job_trained 20
kill -TERM $(echo $PIDS | cut -d' ' -f1-3)
job_wait 60
eq "three signals at once: every worker exits 42" "$RCS" "42 42 42 42"
step=$(same "$tag" 4 exit saved_step)
expect "three signals at once: one save step ($step)" one_step "$step"
agreed=$(etcdctl --endpoints="$ETCD_URL" get --prefix --keys-only /preempt/$tag/1/e0/r0/agreed | grep -c agreed)
eq "three signals at once: one agreed step in etcd" "$agreed" 1
job_start "$tag" 4 --steps 400
job_wait 60
eq "three signals at once: same digest after the restart" "$(same "$tag" 4 done state_digest)" "$REF"

# ---- a worker past the proposed step raises it ----------------------------
# skewed TAG STEP0 ARGS0 ARGS1: two workers without a collective, each with
# its own step options, 4000 steps; SIGTERM to worker 1 once worker 0 has
# trained STEP0 steps (its step STEP0 + 1 has begun); both must exit 42 at
# one step ($step).
skewed() {
    JOB_ARGS_0=$3 JOB_ARGS_1=$4
    job_start "$1" 2 --steps 4000
    unset JOB_ARGS_0 JOB_ARGS_1
    for i in 0 1; do wait_for "$TMP/$1.$i.out" '"start"' 30; done
    wait_lines "$TMP/$1.0.out" '"event":"step"' "$2" 60
    kill -TERM "$(echo $PIDS | cut -d' ' -f2)"
    job_wait 60
    saved_one_step "$1" 2 "$1"
}

# restores_step TAG: the job restarted restores $step on both workers and
# finishes 20 steps later.
restores_step() {
    [ "$failures" -eq 0 ] || show_logs "$1" 2
    job_start "$1" 2 --steps $((${step:-0} + 20)) --step-ms 1
    job_wait 60
    eq "$1: both finish after the restart" "$RCS" "0 0"
    eq "$1: both restored the raised step" "$(same "$1" 2 start restored_step)" "$step"
}

# Without a collective, workers drift apart: worker 0 steps every 5 ms,
# worker 1 every 20 ms. SIGTERM to worker 1, far behind: its claim proposes
# its step plus the lead, which worker 0 passed long before it learns it.
# Worker 0 raises the step (a compare-and-put on the round's record),
# worker 1 trains on to it, and both save there.
tag=raise
skewed "$tag" 100 "--step-ms 5" "--step-ms 20"
expect "raise: worker 0 raised the proposed step" grep -q "past the save step .*; raising it to $step" "$TMP/$tag.0.err"
restores_step "$tag"

# The raise comes after a worker saved at the old step. Worker 0 steps
# every 1 ms and has just begun its step 300, which takes 3.5 s, when worker 1
# (10 ms steps, far behind) gets SIGTERM: worker 1 proposes its step plus
# the lead, trains to it and saves there, all while worker 0 cannot read a
# record. When worker 0's long step ends it is past that step and raises
# it; worker 1 drops the copy it saved, trains on to the raised step and
# saves again. Both exit 42 at the raised step, and the restart restores
# it on both.
tag=raise-late
skewed "$tag" 299 "--step-ms 1 --long-step 300:3500" "--step-ms 10 --trace $TMP/$tag.1.trace"
early=$(sed -n 's/.*"event":"saved".*"step":\([0-9]*\).*/\1/p' "$TMP/$tag.1.out" | head -n 1)
expect "raise-late: worker 1 saved at its own proposal first (${early:-none} < 300)" test "${early:-300}" -lt 300
expect "raise-late: worker 0 raised the step past its long step ($step)" test "${step:-0}" -gt 300
expect "raise-late: worker 1 dropped the copy it saved at $early" grep -Eq "discard-shard:$early(,|$)" "$TMP/$tag.1.trace"
restores_step "$tag"

# The raise comes while that save still runs: SIGTERM reaches worker 1 as
# worker 0 begins its long step 300, which ends 3 s later, inside worker
# 1's save at its proposal, an asynchronous one of 6 s (--async --save-ms:
# its loop, and the coordination, run during the save). Sized so that it
# holds on a loaded machine: the save must begin within 3 s of the signal
# (an agreement of milliseconds and the lead's steps of 10 ms) and lasts
# past the long step's end whenever it began. Worker 1's machine keeps
# the raise until the save's end, then drops the copy and trains on to
# the raised step (trace 028 with real processes).
tag=raise-in-save
skewed "$tag" 299 "--step-ms 1 --long-step 300:3000" "--step-ms 10 --async --save-ms 6000 --trace $TMP/$tag.1.trace"
early=$(first_field "$TMP/$tag.1.out" save-begin step)
expect "raise-in-save: worker 1 saved at its own proposal first (${early:-none} < 300)" test "${early:-300}" -lt 300
expect "raise-in-save: worker 0 raised the step past its long step ($step)" test "${step:-0}" -gt 300
expect "raise-in-save: the raise came during worker 1's save at $early, which it dropped at the save's end" \
    grep -Eq "ev=save-done .*=> final-save -> step-agreed fx=discard-shard:$early(,|$)" "$TMP/$tag.1.trace"
restores_step "$tag"

# ---- grace period: two saves, the final one before the deadline -----------
# What holds at any speed: every worker exits 42 with one committed step,
# never older than the first save; when the final round committed (a step
# past the first), every worker saved at least twice (a worker whose copy
# at a step a raise moved saves once more in that round), each save
# before the deadline. The final round may still be aborted when a worker
# ahead by more than the drift allowance raised its step past the
# driver's timer (these workers train without a collective and drift
# apart under load): then every worker exits 42 with the first save, and
# the job restores that. That the final round commits where time is not
# a factor is the simulator's to check (tests/sim.sh, two-phase seeds: no
# final round aborted without a cause) and check_fsm's
# test_final_round_allows_for_drift. Seen under the stress run: all three
# workers saved once, the final round aborted for a raise.
tag=grace
job_start "$tag" 3 --steps 2000 --step-ms 10 --grace-ms 2000
for i in 0 1 2; do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
job_trained 20
kill -TERM "$(echo $PIDS | cut -d' ' -f2)"
job_wait 60
eq "grace: every worker exits 42" "$RCS" "42 42 42"
first=$(grep -F '"saved"' "$TMP/$tag.0.out" | head -n 1 | sed -n 's/.*"step":\([0-9]*\).*/\1/p')
final=$(same "$tag" 3 exit saved_step)
expect "grace: every worker's last committed save is at one step ($first, then $final)" \
    test "${final#differs}" = "$final" -a "${final:-0}" -ge "${first:-1}"
saves=1
if [ "${final:-0}" = "${first:-}" ]; then
    echo "grace: the final round was aborted (a raise past the timer); the first save stands"
else
    saves=2
    echo "grace: the final round committed at $final"
fi
for i in 0 1 2; do
    expect "grace: worker $i saved at least $saves time(s) ($(count_events "$TMP/$tag.$i.out" saved))" \
        test "$(count_events "$TMP/$tag.$i.out" saved)" -ge "$saves"
    left=$(field "$TMP/$tag.$i.out" saved deadline_in_ms)
    expect "grace: worker $i's last save ended before the deadline ($left ms left)" test "${left:--1}" -gt 0
done
job_start "$tag" 3 --steps 2000
job_wait 60
REF2000=$("$TRAINER" --ckpt-dir "$TMP/ref2000" --steps 2000 | sed -n 's/.*"state_digest":"\([0-9a-f]*\)".*/\1/p')
eq "grace: same digest after the restart" "$(same "$tag" 3 done state_digest)" "$REF2000"

# ---- grace period with drift: the final round allows for it ----------------
# Two workers without a collective at different paces (10 and 12 ms a
# step): over the countdown the faster one drifts a fifth of the driver's
# steps ahead. The driver (the slower, told SIGTERM) opens the final round
# earlier by a quarter of its countdown's steps and proposes as many steps
# further, so the faster worker learns the step before it gets there and
# waits at it. Without the allowance it was past the step, raised it, and
# the driver could not reach the raised step before the deadline less the
# margin: the round was aborted and both exited with the first save only.
# pace_run TAG W: the two workers at 10 and 12 ms a step, 3 s of grace,
# SIGTERM to worker W (it drives). What holds at any speed: both exit 42
# with one step; a final round that committed did so at the step the
# driver proposed or a raise of it, after the first save, and both final
# saves ended before the deadline; one that was aborted leaves the first
# save. Which of these happened is the schedule, printed: the drift
# allowance that makes the proposed step the usual one is
# check_fsm's test_final_round_allows_for_drift, and the planning for the
# slowest worker its neighbours'; beside two busy loops (stress run 2 at
# 11da716) the faster worker outran the allowance once, raised the step
# (101 to 120) and the round committed there.
pace_run() {
    tag=$1
    JOB_ARGS_0="--step-ms 10" JOB_ARGS_1="--step-ms 12"
    job_start "$tag" 2 --steps 4000 --grace-ms 3000
    unset JOB_ARGS_0 JOB_ARGS_1
    for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
    job_trained 20
    kill -TERM "$(echo $PIDS | cut -d' ' -f$(($2 + 1)))"
    job_wait 60
    eq "$tag: both exit 42" "$RCS" "42 42"
    final=$(same "$tag" 2 exit saved_step)
    first=$(first_field "$TMP/$tag.$2.out" saved step)
    asked=$(sed -n 's/.*fx=request-final:\([0-9]*\).*/\1/p' "$TMP/$tag.$2.trace" | head -n 1)
    expect "$tag: both exit with one step, not older than the first save ($first, then $final)" \
        test "${final#differs}" = "$final" -a "${final:-0}" -ge "${first:-1}"
    if [ "${final:-0}" -gt "${first:-0}" ]; then
        expect "$tag: the final round committed at the driver's proposal or a raise of it ($final; proposed ${asked:-none})" \
            test "${final:-0}" -ge "${asked:-0}" -a -n "$asked"
        for i in 0 1; do
            left=$(field "$TMP/$tag.$i.out" saved deadline_in_ms)
            expect "$tag: worker $i's final save ended before the deadline ($left ms left)" test "${left:--1}" -gt 0
        done
        [ "$final" = "$asked" ] && echo "$tag: the final round committed at the driver's proposal ($asked)"
        [ "$final" != "$asked" ] && echo "$tag: the final step was raised ($asked to $final) and committed"
    else
        echo "$tag: the final round was aborted; both exited with the first save ($first)"
    fi
}
pace_run grace-drift 1
# (a raise in the first round, where the faster worker may be ahead by
# more than the lead already, is not the case's: the final round's only)
raised=$(sed -n '/ev=final-requested/,$p' "$TMP/$tag.0.trace" | grep -c 'fx=propose-step')
echo "grace-drift: the faster worker raised the final round's step $raised time(s)"
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# ---- grace period, the faster worker drives: planned for the slowest -------
# The same two paces, SIGTERM to the faster worker (10 ms a step): it
# drives, and trains ahead of its peer through the countdown. The first
# round's reports name each worker's step and pace, its commit the lowest
# and the slowest, and the driver opens the final round in time for the
# slower worker to reach the step. Planned for its own pace alone, it
# proposed a step the slower worker reached too late: the round was
# aborted and both exited with the first save only (3 runs of 3).
pace_run grace-pace 0
slow=$(sed -n 's/.* slow-step-ms=\([0-9]*\).*/\1/p' "$TMP/$tag.0.trace" | head -n 1)
expect "grace-pace: the first commit told the driver the slower worker's pace (${slow:-none} ms)" \
    test "${slow:-0}" -ge 12
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# ---- a worker leaves in the countdown: its peers do not wait for it -------
# Worker 1 (second = exit) gets SIGTERM and drives; once the first save is
# committed, a second SIGTERM makes it exit with that save. Its report of
# the first round counted it present in the driver's roll call, so its
# peer trained on, opened a final round it could not complete, and waited
# for that round's bound (most of the 20 s grace period) to exit with the
# same first save. Now the leaving worker's exit writes the job's lost
# record ("1 left"), and worker 0 follows it at once.
# countdown_leave TAG SIGNAL ARGS...: a job of two workers; SIGTERM to
# worker 1 (it drives), and once both have the first commit, SIGNAL to it.
countdown_leave() {
    tag=$1 _sig=$2
    shift 2
    job_start "$tag" 2 --steps 100000 --step-ms 10 "$@"
    for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
    job_trained 20
    w1=$(echo $PIDS | cut -d' ' -f2)
    kill -TERM "$w1"
    for i in 0 1; do wait_for "$TMP/$tag.$i.trace" 'ev=ckpt-committed' 30; done
    kill -"$_sig" "$w1"
    job_wait 60
}
JOB_ARGS_1="--second exit"
countdown_leave left TERM --grace-ms 20000
unset JOB_ARGS_1
eq "left: both exit 42" "$RCS" "42 42"
step=$(same "$tag" 2 exit saved_step)
expect "left: both exit with the first save ($step)" one_step "$step"
eq "left: the job's lost record names the worker that left" \
    "$(etcdctl --endpoints="$ETCD_URL" get --print-value-only /preempt/$tag/1/e0/lost)" "1 left"
expect "left: worker 0 followed it in its countdown" \
    grep -q 'ev=peer-lost worker=1 => countdown -> exit' "$TMP/$tag.0.trace"
finals=$(grep -c 'final-requested\|request-final' "$TMP/$tag.0.trace")
eq "left: worker 0 opened no final round" "$finals" 0
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# ---- a worker dies in the countdown: its peers learn it from the roll call -
# Worker 1 gets SIGTERM and drives; once the first save is committed it is
# killed (SIGKILL: its node went away before the deadline). Its report of
# the first round counted it present in the driver's roll call until the
# final round's bound, so worker 0 trained on through the 30 s grace
# period, opened a final round the dead worker could not report in, and
# exited at that round's bound (31 s). Once the first round is decided its
# reports no longer speak for their workers (a member must be a member):
# worker 0, driving now, finds worker 1's lease gone, writes the lost
# record and exits 42 with the first save (7 s, with a 2 s lease).
countdown_leave killed KILL --grace-ms 30000 --lease-ttl 2
eq "killed: worker 0 exits 42" "$RCS" "42 137"
expect "killed: with the first save" test "$(field "$TMP/$tag.0.out" exit saved_step)" = \
    "$(grep -m1 'ev=ckpt-committed' "$TMP/$tag.0.trace" | sed 's/.* step=\([0-9]*\).*/\1/')"
eq "killed: the job's lost record names worker 1" \
    "$(etcdctl --endpoints="$ETCD_URL" get --print-value-only /preempt/$tag/1/e0/lost)" "1"
expect "killed: worker 0 followed it in its countdown" \
    grep -q 'ev=peer-lost worker=1 => countdown -> exit' "$TMP/$tag.0.trace"
eq "killed: worker 0 opened no final round" "$(grep -c 'final-requested\|request-final' "$TMP/$tag.0.trace")" 0
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# ---- an application error on one worker reaches every worker --------------
tag=apperr
PIDS=
for i in 0 1 2; do
    extra=
    [ "$i" -eq 1 ] && extra="--fail-at 50"
    "$TRAINER" --etcd "$ETCD_URL" --job "$tag" --worker "$i" --workers 3 --ckpt-dir "$TMP/$tag" --verbose \
        --steps 4000 --step-ms 5 $extra >"$TMP/$tag.$i.out" 2>"$TMP/$tag.$i.err" &
    PIDS="$PIDS $!"
done
job_wait 60
eq "app error: every worker exits with the application's code" "$RCS" "3 3 3"
eq "app error: every worker reports the same message" "$(same "$tag" 3 exit message)" \
    "worker 1: step 50 failed with code 3"

# The same with asynchronous trainers on their own libevent loops (a
# borrowed base): the failing worker's error record is one of its last
# writes, which preempt_handler_close() delivers on the loop. Freed at
# once, the handler dropped it, and the peers trained on (3 137 137).
tag=apperr-async
JOB_ARGS_1="--fail-at 50"
job_start "$tag" 3 --async --steps 4000 --step-ms 5
unset JOB_ARGS_1
job_wait 60
eq "app error, async: every worker exits with the application's code" "$RCS" "3 3 3"
eq "app error, async: every worker reports the same message" "$(same "$tag" 3 exit message)" \
    "worker 1: step 50 failed with code 3"

# ---- a worker SIGKILLed during agreement -----------------------------------
# Worker 2 is stopped so that agreement cannot complete, worker 0 gets its
# notice, then worker 2 is killed. Its lease (2 s) ends and the others learn
# that it is lost: they exit "not saved" (75), keeping the previous
# checkpoint, within the lease TTL plus one keep-alive period.
tag=kill
job_start "$tag" 3 --steps 4000 --step-ms 10 --lease-ttl 2
for i in 0 1 2; do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
set -- $PIDS
kill -STOP "$3"
kill -TERM "$1"
wait_for "$TMP/$tag.1.out" '"to":"following"' 20
kill -KILL "$3"
PIDS="$1 $2"
job_wait 30
eq "killed worker: the others exit 75 (not saved)" "$RCS" "75 75"
for i in 0 1; do
    expect "killed worker: worker $i saw worker 2 lost" grep -q 'worker 2 lost its membership' "$TMP/$tag.$i.err"
    expect "killed worker: worker $i says why it exits" grep -q 'the job aborted the round (round-aborted in' \
        "$TMP/$tag.$i.err"
done
eq "killed worker: nothing was committed" "$(same "$tag" 2 exit saved_step)" 0
# The driver found worker 2 missing in its reads of the memberships and,
# a grace later, lost: each read is traced with what it says ("answer ...
# members" lines, lost-internal.h), and the replay reads them again in
# order (job_wait replayed them). A read altered to name nobody missing
# diverges there: the lost worker has no read behind it.
lt=
for _i in 0 1; do grep -q '^answer t=[0-9]* members .* => lost worker=2 ' "$TMP/$tag.$_i.trace" && lt="$TMP/$tag.$_i.trace"; done
expect "killed worker: the driver's read of the memberships says worker 2 is lost" test -n "$lt"
expect "killed worker: a read before it found worker 2 missing" \
    grep -q '^answer t=[0-9]* members status=0 complete=1 known=0 absent=2 grace=[0-9]* => nothing missing=1 newly=1' \
    "${lt:-/}"
sed -E '/^answer t=[0-9]* members .* => lost worker=2 /s/ absent=2 / absent=- /' "${lt:-/}" >"$TMP/ltrace.altered"
expect_rc 1 "$REPLAY" "$TMP/ltrace.altered"
expect_output "diverges"
expect_output "  actual:   nothing missing=0 newly=0 back=1"

# ---- a peer's membership ends: the hook for collectives ----------------------
# preempt_handler_on_peer_lost() (the trainer's --watch-peers) tells the
# others as soon as a hung peer's lease ends, before any preemption; an
# asynchronous trainer would abort its collectives there. Worker 2 is
# stopped (a hang); workers 0 and 1 report it within the lease bound, and
# only it. Then worker 2 is killed and worker 1 gets SIGTERM: the round
# cannot commit without worker 2, and both exit 75, the previous
# checkpoint intact.
tag=peerlost
job_start "$tag" 3 --steps 100000 --step-ms 10 --lease-ttl 2 --async --watch-peers
for i in 0 1 2; do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
set -- $PIDS
kill -STOP "$3"
for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"event":"peer-lost"' 15; done
for i in 0 1; do
    eq "peer lost: worker $i was told of worker 2, once" "$(grep -c '"event":"peer-lost"' "$TMP/$tag.$i.out")" 1
    expect "peer lost: worker $i names worker 2" grep -q '"event":"peer-lost","worker":'$i',"peer":2,' "$TMP/$tag.$i.out"
done
kill -KILL "$3"
kill -TERM "$2"
PIDS="$1 $2"
job_wait 60
eq "peer lost: the others exit 75 (not saved)" "$RCS" "75 75"
[ "$failures" -eq 0 ] || show_logs "$tag" 3

# ---- a membership lease revoked under a running worker ---------------------
# Worker 1's lease ends while it trains (an operator revokes it; etcd
# expires it the same way after a partition longer than its TTL). Its next
# keep-alive's answer says so: the lease machine grants a new one, the
# membership record is put again under it, and a SIGTERM then saves one
# step on both workers. The answer is traced ("answer ... keep" lines,
# lease-internal.h) with the transition it causes, and the replay holds
# the one to the other.
tag=revoked
job_start "$tag" 2 --steps 100000 --step-ms 10 --lease-ttl 2
for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
set -- $PIDS
lease=$(etcdctl --endpoints="$ETCD_URL" get --prefix "/preempt/$tag/" -w json | /usr/bin/python3 -c '
import base64, json, sys
for kv in json.load(sys.stdin).get("kvs", []):
    if base64.b64decode(kv["key"]).decode().endswith("/w/alive/1"):
        print("%x" % kv["lease"])')
expect "revoked lease: worker 1's membership record has a lease" test -n "$lease"
expect_rc 0 etcdctl --endpoints="$ETCD_URL" lease revoke "${lease:-0}"
wait_for "$TMP/$tag.1.err" 'the membership lease expired' 15 && ok
kill -TERM "$1"
job_wait 60
eq "revoked lease: both workers exit 42" "$RCS" "42 42"
step=$(same "$tag" 2 exit saved_step)
expect "revoked lease: both saved one step ($step)" one_step "$step"
expect "revoked lease: worker 1's trace holds the keep-alive that found it ended" \
    grep -q '^answer t=[0-9]* keep status=0 ttl=0 => expired$' "$TMP/$tag.1.trace"
expect "revoked lease: and the lease machine's grant it caused" \
    grep -q '^decl t=[0-9]* m=lease kept --expired--> granting (grant)$' "$TMP/$tag.1.trace"
grep -v '^answer t=[0-9]* keep status=0 ttl=0 => expired$' "$TMP/$tag.1.trace" >"$TMP/$tag.nokeep"
expect_rc 1 "$REPLAY" "$TMP/$tag.nokeep"
expect_output "needs a keep-alive's answer that says the lease expired read just before it"
sed 's/^\(answer t=[0-9]* keep status=0 \)ttl=0 => expired$/\1ttl=2 => expired/' "$TMP/$tag.1.trace" >"$TMP/$tag.ttl"
expect_rc 1 "$REPLAY" "$TMP/$tag.ttl"
expect_output "  actual:   kept"
# the lease machine's transition left out (its grant's answer and granted
# stay): the replay holds the machine from its first state on, and finds
# the granted line starting where the machine is not
grep -v '^decl t=[0-9]* m=lease kept --expired--> granting (grant)$' "$TMP/$tag.1.trace" >"$TMP/$tag.nolease"
expect_rc 1 "$REPLAY" "$TMP/$tag.nolease"
expect_output "lease starts from granting, but its machine is in kept"
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# ---- etcd stopped and restarted during a run --------------------------------
# The notice arrives while etcd is down: the worker keeps training, its
# writes are retried and the watches resume from the last revision seen.
# While its watch is down, each keep-alive tick (a 3 s lease: every
# second) reads the job's records instead: the watch's machine
# (watch-internal.h), traced and replayed.
tag=restart
job_start "$tag" 2 --steps 4000 --step-ms 10 --lease-ttl 3
for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30 && wait_for "$TMP/$tag.$i.err" ' up (created)' 30; done
etcd_stop
kill -TERM "$(echo $PIDS | cut -d' ' -f1)"
# etcd stays down until worker 1 has seen its watch go down and a tick
# has tried to read the records instead (bounded; under sanitizers and
# load that can take longer than any fixed pause).
wait_for "$TMP/$tag.1.err" ' down (' 30 && ok
wait_for "$TMP/$tag.1.trace" 'm=watch blind --tick--> reading (read)' 30 && ok
etcd_restart
job_wait 60
saved_one_step "$tag" 2 "etcd restart"
expect "etcd restart: worker 1 saw the watch go down" grep -q 'watch of .* down' "$TMP/$tag.1.err"
# After that read, worker 1 learnt the round either from the watch, back
# up, or from a later tick's read, applied (the watch re-opens within its
# 2 s back-off, and the job may end before)
expect "etcd restart: its watch machine went blind, read on a tick, and then watched again or applied a read" \
    sh -c "grep -o 'm=watch [a-z-]* --[a-z-]*--> [a-z-]* ([a-z]*)' '$TMP/$tag.1.trace' | tr '\n' ';' |
           grep -qE 'watching --down--> blind \(none\);.*blind --tick--> reading \(read\);.*(--up--> watching \(none\)|reading --read--> blind \(apply\))'"
# the read's answer is traced ("answer ... records"), and what it says is
# read again by the replay: the first one's meaning swapped diverges
expect "etcd restart: the read's answer is traced" grep -qE '^answer t=[0-9]+ records status=' "$TMP/$tag.1.trace"
awk '!d && /^answer t=[0-9]+ records / { if (!sub(/=> read-failed$/, "=> read")) sub(/=> read$/, "=> read-failed"); d = 1 }
     { print }' "$TMP/$tag.1.trace" >"$TMP/$tag.swapped"
expect_rc 1 "$REPLAY" "$TMP/$tag.swapped"
expect_output "diverges"
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# ---- keys of an earlier incarnation never trigger anything ----------------
# Job "term2" left its records (notices, agreed steps, shards) in etcd. A
# new run of the same job name from empty checkpoint directories must not
# see a preemption, also when the incarnation counter itself was deleted
# and when records sit under the number the next incarnation takes.
rm -rf "$TMP/term2"
etcdctl --endpoints="$ETCD_URL" put /preempt/term2/2/e0/notice/0 "1 signal" >/dev/null
etcdctl --endpoints="$ETCD_URL" put /preempt/term2/3/e0/notice/0 "1 signal" >/dev/null
job_start term2 2 --steps 100
job_wait 60
eq "stale keys: the new incarnation finishes without a preemption" "$RCS" "0 0"
eq "stale keys: it is incarnation 3" "$(same term2 2 start incarnation)" 3
etcdctl --endpoints="$ETCD_URL" put /preempt/term2/1/e0/r0/agreed 7 >/dev/null
etcdctl --endpoints="$ETCD_URL" del /preempt/term2/incarnation >/dev/null
rm -rf "$TMP/term2"
job_start term2 2 --steps 100
job_wait 60
eq "stale keys without the counter: finishes without a preemption" "$RCS" "0 0"
expect "stale keys without the counter: no save" test "$(count_events "$TMP/term2.0.out" saved)" -eq 0
eq "stale keys without the counter: incarnation 1 again, emptied first" "$(same term2 2 start incarnation)" 1

# ---- preempt-launch restarts, preemptctl injects, shows and cleans -------
CTL="$top_builddir/tools/preemptctl"
LAUNCH="$top_builddir/tools/preempt-launch"
"$LAUNCH" --workers 3 -- "$TRAINER" --etcd "$ETCD_URL" --job launch --ckpt-dir "$TMP/launch" --steps 400 \
    --step-ms 10 >"$TMP/launch.out" 2>"$TMP/launch.err" &
PIDS=$!
wait_for "$TMP/launch.out" '"worker":2,"restored_step":0' 30
expect_rc 0 "$CTL" --etcd "$ETCD_URL" status launch
expect_output "alive/2"
expect_rc 0 "$CTL" --etcd "$ETCD_URL" notice launch 20000
expect_output "notice injected"
job_wait 60
eq "launch: the launcher ends well" "$RCS" 0
eq "launch: every worker exited 42 once, then 0" \
    "$(grep -c '"event":"exited".*"code":42' "$TMP/launch.out") $(grep -c '"event":"exited".*"code":0' "$TMP/launch.out")" "3 3"
eq "launch: the notice came from the operator" "$(grep -c 'notice/op' "$TMP/launch.out")" 0
eq "launch: all three finish with the uninterrupted digest" \
    "$(grep -F '"event":"done"' "$TMP/launch.out" | grep -c "\"state_digest\":\"$REF\"")" 3
expect "launch: lines carry t_ms" grep -q '"t_ms":[0-9]*,"event":"start"' "$TMP/launch.out"
expect_rc 0 "$CTL" --etcd "$ETCD_URL" status launch
expect_output "incarnation 2"
expect_rc 0 "$CTL" --etcd "$ETCD_URL" clean launch
expect_output "deleted"
expect_rc 3 "$CTL" --etcd "$ETCD_URL" status launch
expect_rc 2 "$CTL" --etcd "$ETCD_URL" status ../etc
expect_rc 1 "$CTL" --etcd "http://127.0.0.1:9" --timeout-ms 300 status launch

# preemptctl status says what the records mean, read as the workers read
# them (the job's view): the newest episode (e10 sorts before e2), its
# notices (a withdrawn one does not stand), driver, round and decision,
# and the job's error
_in=$(($(date +%s) * 1000 + 600000))
for _kv in "incarnation 4" "4/e2/notice/0 $_in signal" "4/e10/notice/1 $((_in + 60000)) gce" \
    "4/e10/notice/1 $((_in + 90000)) gce" "4/e10/notice/0 $_in aws withdrawn" "4/e10/claim 1" "4/e10/r0/agreed 42 last" \
    "4/decision/e10/r0 committed 42" "4/e10/lost 1 left" "4/error -5 1 disk full" "4/w/e10/r0/ack/0 44"; do
    etcdctl --endpoints="$ETCD_URL" put -- "/preempt/view/${_kv%% *}" "${_kv#* }" >/dev/null
done
expect_rc 0 "$CTL" --etcd "$ETCD_URL" status view
expect_output "episode 10: 2 worker notice(s), 1 standing, the earliest deadline in 59"
expect_output "(worker 0's); a driver"
expect_output "a driver holds the claim"
expect_output "round 0: save step 42 (the last save), committed at step 42"
expect_output "the job's error: code -5 from worker 1: disk full"
expect_output "worker 1 left the job (a second notice) in this episode"
etcdctl --endpoints="$ETCD_URL" put -- /preempt/view/4/e10/lost 0 >/dev/null
expect_rc 0 "$CTL" --etcd "$ETCD_URL" status view
expect_output "worker 0's membership was lost in this episode"

# ---- a worker's trace holds the job's records as it read them ------------
# preempt-replay puts each through the job's view again (a pure function)
# and checks the meaning recorded beside it; an altered one is found.
PIDS=
for _i in 0 1; do
    "$TRAINER" --etcd "$ETCD_URL" --job vtrace --worker $_i --workers 2 --ckpt-dir "$TMP/vtrace" --steps 100000 \
        --step-ms 10 --print-steps --trace "$TMP/vtrace.$_i.trace" >"$TMP/vtrace.$_i.out" 2>"$TMP/vtrace.$_i.err" &
    PIDS="$PIDS $!"
done
for _i in 0 1; do wait_lines "$TMP/vtrace.$_i.out" '"event":"step"' 20 30; done
# shellcheck disable=SC2086 # the pids, split
set -- $PIDS
kill -TERM "$1"
job_wait 60
eq "view trace: both saved" "$RCS" "42 42"
for _i in 0 1; do
    expect_rc 0 "$REPLAY" "$TMP/vtrace.$_i.trace"
    expect_output "job view lines match"
    expect "view trace $_i: the agreed step as read" grep -q '^job t=[0-9]* put k=/preempt/vtrace/1/e0/r0/agreed v=[0-9]*%20last => agreed round=0 step=[0-9]* last' "$TMP/vtrace.$_i.trace"
    expect "view trace $_i: the decision as read" grep -q '=> committed round=0 step=' "$TMP/vtrace.$_i.trace"
done
# worker 1 learned worker 0's notice from the claim, which carries it: the
# preemption wrote no notice record (worker 0 departed with its report)
expect "view trace: the claim carries the driver's notice" \
    grep -q '^job t=[0-9]* put k=/preempt/vtrace/1/e0/claim v=0%20[0-9]*%20signal => notice worker=0 wall=[0-9]* news=1' \
    "$TMP/vtrace.1.trace"
expect_rc 1 grep -q 'k=/preempt/vtrace/1/e0/notice/0' "$TMP/vtrace.1.trace"
sed 's/=> agreed round=0 step=[0-9]*/=> agreed round=0 step=999999/' "$TMP/vtrace.1.trace" >"$TMP/vtrace.altered"
expect_rc 1 "$REPLAY" "$TMP/vtrace.altered"
expect_output "diverges"
expect_output "actual:   agreed round=0 step="
# What the job told each machine (its round's step, the decision) is
# checked against the records read before it: every step-agreed and
# ckpt-committed has its record. A decision record altered, consistently,
# into an abort (the view's replay agrees with it, the machine's records
# are untouched) leaves the machine's commit without a cause: found.
for _i in 0 1; do
    expect_rc 0 "$REPLAY" "$TMP/vtrace.$_i.trace"
    expect "cause trace $_i: the round's step and the decision were checked against their records" \
        grep -Eq "; ([2-9]|[1-9][0-9]+) events the job told the machine have their records" "$TMP/out"
done
sed -E 's|(k=/preempt/vtrace/1/decision/e0/r0) v=committed%20([0-9]+)[^ ]* => committed round=0 step=[0-9]+.*|\1 v=aborted%20\2%201 => aborted round=0 step=\2|' \
    "$TMP/vtrace.1.trace" >"$TMP/ctrace.altered"
expect "cause trace: the decision line was altered" grep -q '=> aborted round=0 step=' "$TMP/ctrace.altered"
expect_rc 1 "$REPLAY" "$TMP/ctrace.altered"
expect_output "has no cause: no record the job's view read, nor answer, before it tells ckpt-committed"
# A peer's notice is checked by its worker (its deadline is the machine's
# clock): worker 1's machine learned worker 0's from the claim; the same
# record altered to name worker 1 (the machine's replay agrees: the worker
# changes no transition) has no record behind it
expect "cause trace: worker 1's machine was told worker 0's notice" \
    grep -q 'ev=peer-notice worker=0 ' "$TMP/vtrace.1.trace"
sed 's/ev=peer-notice worker=0 /ev=peer-notice worker=1 /' "$TMP/vtrace.1.trace" >"$TMP/ntrace.altered"
expect_rc 1 "$REPLAY" "$TMP/ntrace.altered"
expect_output "has no cause: no record the job's view read, nor answer, before it tells peer-notice"
# The coordinator's own inputs are traced too ("coord" lines: its start,
# each input with everything it carries, each output), and the replay runs
# the coordinator again over them: each output it makes must be the
# trace's. A record's value altered in its coord line alone (the view's
# job line untouched) makes it post another step; an output dropped from
# the trace is one the coordinator still makes.
for _i in 0 1; do
    expect_rc 0 "$REPLAY" "$TMP/vtrace.$_i.trace"
    expect "coord trace $_i: the coordinator ran again and made the trace's outputs" \
        grep -Eq "the coordinator ran again over [1-9][0-9]* inputs and made the trace's [1-9][0-9]* outputs" "$TMP/out"
    expect "coord trace $_i: its start, its effects and its requests are traced" \
        sh -c "grep -q '^coord start job=/preempt/vtrace/ inc=1 workers=2 me=$_i ' '$TMP/vtrace.$_i.trace' &&
               grep -q '^coord in d=[0-9]* t=[0-9]* wall=[0-9]* effect round=0 fx=report-shard ' '$TMP/vtrace.$_i.trace' &&
               grep -q '^coord out d=[0-9]* request txn ' '$TMP/vtrace.$_i.trace'"
done
expect "coord trace: worker 1 read the agreed step" grep -q '^coord kv k=/preempt/vtrace/1/e0/r0/agreed v=[0-9]' "$TMP/vtrace.1.trace"
sed -E 's|^(coord kv k=/preempt/vtrace/1/e0/r0/agreed v=)[0-9]+|\1999999|' "$TMP/vtrace.1.trace" >"$TMP/otrace.altered"
expect_rc 1 "$REPLAY" "$TMP/otrace.altered"
expect_output "the coordinator diverges: it made"
expect_output "post step-agreed step=999999"
awk '/^coord out .* post step-agreed / && !done { done = 1; next } { print }' "$TMP/vtrace.1.trace" >"$TMP/otrace.dropped"
expect_rc 1 "$REPLAY" "$TMP/otrace.dropped"
expect_output "the coordinator diverges: it made"
# a trace cut inside an input (a worker killed while it wrote: here after
# a read's first line, before its records) is compared up to there, and
# the replay says so
awk '{ print } /^coord in .* records rev=[0-9]* cluster=[0-9]* kvs=[1-9]/ { exit }' "$TMP/vtrace.1.trace" >"$TMP/otrace.cut"
expect "coord trace: the cut trace ends on a read's line" grep -Eq '^coord in .* records rev=[0-9]+ cluster=[0-9]+ kvs=[1-9]' \
    "$TMP/otrace.cut"
expect_rc 0 "$REPLAY" "$TMP/otrace.cut"
expect_output "(compared to the end: the trace ends inside an input)"
# The declared machines' transitions (start-up's and the coordinator's)
# are traced too ("decl" lines), and the replay steps each again through
# its machine's table: start-up's restore machine, worker 0's claim sent
# with its notice; a line altered to a transition the table does not make
# is found, and a machine this build does not have is refused.
for _i in 0 1; do
    expect "decl trace $_i: start-up joined, and trained" \
        grep -q '^decl t=[0-9]* m=restore joining --joined-none--> training (start-fresh)$' "$TMP/vtrace.$_i.trace"
    expect_rc 0 "$REPLAY" "$TMP/vtrace.$_i.trace"
    expect "decl trace $_i: every transition replayed" \
        grep -Eq "; ([1-9][0-9]*) declared machines' transitions match" "$TMP/out"
done
expect "decl trace: worker 0's claim goes with its notice" \
    grep -q '^decl t=[0-9]* m=claim none --send--> sent (send)$' "$TMP/vtrace.0.trace"
sed 's/m=claim none --send--> sent (send)/m=claim none --send--> held (send)/' "$TMP/vtrace.0.trace" \
    >"$TMP/dtrace.altered"
expect_rc 1 "$REPLAY" "$TMP/dtrace.altered"
expect_output ") diverges: claim in none"
expect_output "actual:   sent (send)"
sed 's/m=claim none/m=nonesuch none/' "$TMP/vtrace.0.trace" >"$TMP/dtrace.foreign"
expect_rc 2 "$REPLAY" "$TMP/dtrace.foreign"
expect_output "names machine 'nonesuch', which this build does not have"
# An input that a record causes must follow that record's job line: worker
# 0's episode began with its own notice ("own"); the same line altered to
# "seen" (a row the table has, so the table's replay agrees) has no notice
# record read just before it (check_trace: the same for next-episode).
expect "decl trace: worker 0's episode began with its own notice" \
    grep -q '^decl t=[0-9]* m=episode idle --own--> active (none)$' "$TMP/vtrace.0.trace"
sed 's/m=episode idle --own--> active (none)/m=episode idle --seen--> active (none)/' "$TMP/vtrace.0.trace" \
    >"$TMP/etrace.altered"
expect_rc 1 "$REPLAY" "$TMP/etrace.altered"
expect_output "has no cause: episode idle --seen--> needs a notice record read just before it"

# The worker whose report completed the round read every report through
# the view ("reports" and "shard" lines), and proposed the commit from what
# they say: a report's value altered diverges at its line; the completing
# report removed leaves all-reported without its cause; the decision
# altered, value and meaning alike, to another slowest save is not what the
# reports read before it say (one truth per decision).
rt=
for _i in 0 1; do grep -Eq '=> shard round=0 step=[0-9]+ .*worker=[01] reports=2$' "$TMP/vtrace.$_i.trace" && rt="$TMP/vtrace.$_i.trace"; done
expect "reports trace: a worker read the round's reports and counted both" test -n "$rt"
expect "reports trace: the read began with its step" grep -Eq '^job t=[0-9]* reports round=0 step=[0-9]*( wall=[0-9]*)? => nothing$' "${rt:-/}"
expect "reports trace: and proposed the commit" \
    grep -q 'm=decision#1 open --all-reported--> commit-proposed (propose-commit)$' "${rt:-/}"
sed -E '/ reports=2$/s/ v=([0-9]+)/ v=1\1/' "${rt:-/}" >"$TMP/rtrace.value"
expect_rc 1 "$REPLAY" "$TMP/rtrace.value"
expect_output "diverges"
expect_output "  actual:   shard round=0 step="
sed '/ reports=2$/d' "${rt:-/}" >"$TMP/rtrace.early"
expect_rc 1 "$REPLAY" "$TMP/rtrace.early"
expect_output "has no cause: decision open --all-reported--> needs every worker's shard report read just before it"
sed -E '/decision\/e0\/r0 v=committed/s/save=([0-9]+)/save=9\1/g' "${rt:-/}" >"$TMP/rtrace.commit"
expect "reports trace: the decision was altered" grep -q 'committed round=0 step=[0-9]*.* save=9' "$TMP/rtrace.commit"
expect_rc 1 "$REPLAY" "$TMP/rtrace.commit"
expect_output "the round's decision is not what every worker's reports, read before it, make of it (the slowest save)"

# The answer to worker 0's claim is traced with what it says ("answer"
# lines), and read again by the replay: the claim machine's won, the
# notice record machine's claim-won (the claim carried worker 0's notice)
# and the machine's claim-won each need it before them. Without the
# answer line the declared machines' inputs have no cause; without it and
# those transitions, the machine's claim-won has none.
expect "answer trace: worker 0's claim was answered: won" \
    grep -q '^answer t=[0-9]* claim status=0 succeeded=1 read=0 held= left=0 => won$' "$TMP/vtrace.0.trace"
expect "answer trace: the machine was told" grep -q 'ev=claim-won' "$TMP/vtrace.0.trace"
expect "answer trace: so was the notice record's machine" \
    grep -q '^decl t=[0-9]* m=notice-record carried --claim-won--> in-claim (none)$' "$TMP/vtrace.0.trace"
grep -v '^answer t=[0-9]* claim ' "$TMP/vtrace.0.trace" >"$TMP/atrace.decl"
expect_rc 1 "$REPLAY" "$TMP/atrace.decl"
expect_output "notice-record carried --claim-won--> needs an answer to the claim that says so read just before it"
grep -v -e ' m=notice-record [a-z-]* --claim-won--> ' "$TMP/atrace.decl" >"$TMP/atrace.claim"
expect_rc 1 "$REPLAY" "$TMP/atrace.claim"
expect_output "claim sent --won--> needs an answer to the claim that says so read just before it"
grep -v -e ' m=claim [a-z-]* --won--> ' "$TMP/atrace.claim" >"$TMP/atrace.machine"
expect_rc 1 "$REPLAY" "$TMP/atrace.machine"
expect_output "has no cause: no record the job's view read, nor answer, before it tells claim-won"

# ---- the round's step before the notice --------------------------------------
# A driver's claim and its proposed step are one transaction, its notice
# record may be another request on another connection: the step can land
# first. A worker whose machine is idle then ignores the step (it cannot
# tell it from a late answer of a withdrawn round); when the notice comes
# its machine must still learn the step, or it waits out the round's bound
# and the job exits 75 75 without a checkpoint (seen once in CI with 3 s
# steps). Here the claim and the step of worker 0 are written first, then
# worker 0 gets its SIGTERM: both save one step and exit 42.
# written_then_term TAG VICTIM CLAIM AGREED: a job of two trains; the
# episode's claim and round 0's step are written into its incarnation as
# CLAIM and AGREED, and once both workers have read the step, worker VICTIM
# gets SIGTERM. Both must save one step and exit 42.
written_then_term() {
    tag=$1
    job_start "$tag" 2 --steps 100000 --step-ms 10
    for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30 && wait_for "$TMP/$tag.$i.err" ' up (created)' 30; done
    inc=$(etcdctl --endpoints="$ETCD_URL" get "/preempt/$tag/incarnation" --print-value-only)
    etcdctl --endpoints="$ETCD_URL" put "/preempt/$tag/$inc/e0/claim" "$3" >/dev/null
    etcdctl --endpoints="$ETCD_URL" put "/preempt/$tag/$inc/e0/r0/agreed" "$4" >/dev/null
    for i in 0 1; do wait_for "$TMP/$tag.$i.trace" 'r0/agreed' 30; done
    kill -TERM "$(echo $PIDS | cut -d' ' -f$(($2 + 1)))"
    job_wait 60
    saved_one_step "$tag" 2 "$tag: the records, then SIGTERM"
    [ "$failures" -eq 0 ] || show_logs "$tag" 2
}
written_then_term order 0 "0" "400 last"

# ---- records that do not read as their grammar says -------------------------
# An operator's mistake (a buggy tool, another version, a hand edit) writes
# garbage into a running job's current incarnation: notices whose deadline
# is no number or does not fit, a notice of a worker the job does not have,
# an error whose code is no number. Each worker logs each one and acts on
# none (they were taken as notices due now, and the job went down 75 75 75
# with no notice at all); a real SIGTERM afterwards saves one step on every
# worker.
tag=garbage
job_start "$tag" 3 --steps 100000 --step-ms 10
for i in 0 1 2; do wait_for "$TMP/$tag.$i.out" '"start"' 30 && wait_for "$TMP/$tag.$i.err" ' up (created)' 30; done
inc=$(etcdctl --endpoints="$ETCD_URL" get "/preempt/$tag/incarnation" --print-value-only)
gp=/preempt/$tag/$inc
etcdctl --endpoints="$ETCD_URL" put "$gp/e0/notice/1" "zzz not-a-deadline" >/dev/null
etcdctl --endpoints="$ETCD_URL" put "$gp/e0/notice/2" "18446744073709551615999 signal withdrawn" >/dev/null
etcdctl --endpoints="$ETCD_URL" put "$gp/e0/notice/7" "1 signal" >/dev/null
etcdctl --endpoints="$ETCD_URL" put "$gp/notice/op" "soon inject" >/dev/null
etcdctl --endpoints="$ETCD_URL" put "$gp/error" "boom 1 a message" >/dev/null
for i in 0 1 2; do wait_for "$TMP/$tag.$i.err" "$gp/error" 30; done
# the job trains on, 30 steps past the records (a worker that obeyed one
# exits at once)
for i in 0 1 2; do
    wait_lines "$TMP/$tag.$i.out" '"event":"step"' $(($(count_events "$TMP/$tag.$i.out" step) + 30)) 30
done
for p in $PIDS; do expect "garbage: worker pid $p trains on" kill -0 "$p"; done
for i in 0 1 2; do
    for k in e0/notice/1 e0/notice/2 e0/notice/7 notice/op error; do
        eq "garbage: worker $i reports $k once" "$(grep -c "ignoring $gp/$k = " "$TMP/$tag.$i.err")" 1
    done
    expect "garbage: worker $i says why" grep -q "e0/notice/1 = \"zzz not-a-deadline\": not a number" "$TMP/$tag.$i.err"
    expect "garbage: worker $i took no notice" sh -c "! grep -q 'has a notice\|operator.s notice' '$TMP/$tag.$i.err'"
done
# the operator sees them for what they are
expect_rc 0 "$CTL" --etcd "$ETCD_URL" status "$tag"
expect_output "zzz not-a-deadline  (malformed: not a number; the workers ignore it)"
expect_output "boom 1 a message  (malformed: not an integer; the workers ignore it)"
expect_output "1 signal  (malformed: not a record of a worker of the job; the workers ignore it)"
kill -TERM "$(echo $PIDS | cut -d' ' -f2)" # worker 1
job_wait 60
saved_one_step "$tag" 3 "garbage, then SIGTERM"
[ "$failures" -eq 0 ] || show_logs "$tag" 3

# Garbage in the episode's create-if-absent slots: the claim and round 0's
# step. Every worker ignores it, and the slot is no longer empty: the
# driver's claim and its step used to fail their "absent" compare, and the
# job exited 75 75 at the round's bound with no checkpoint (a documented
# limit). The writes that would create those slots now replace exactly that
# garbage: a SIGTERM saves one step on both.
written_then_term garbage-slots 1 "not a claim" "soon"

# Garbage in the other create-if-absent slots: round 0's decision, the
# episode's lost record, the incarnation's error. The writes that create
# them replace exactly that garbage too: a SIGTERM saves one step on both
# (75 75 before: the garbage decision could not be replaced, and the round
# ended at its bound without one); a worker's error then reaches its peer
# (before, the garbage held the slot and the peer saw only the worker's
# membership end: 3 75).
tag=garbage-decision
job_start "$tag" 2 --steps 100000 --step-ms 10
for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30 && wait_for "$TMP/$tag.$i.err" ' up (created)' 30; done
inc=$(etcdctl --endpoints="$ETCD_URL" get "/preempt/$tag/incarnation" --print-value-only)
gp=/preempt/$tag/$inc
etcdctl --endpoints="$ETCD_URL" put "$gp/decision/e0/r0" "not a decision" >/dev/null
etcdctl --endpoints="$ETCD_URL" put "$gp/e0/lost" "nobody" >/dev/null
for i in 0 1; do wait_for "$TMP/$tag.$i.err" "ignoring $gp/e0/lost" 30; done
kill -TERM "$(echo $PIDS | cut -d' ' -f1)" # worker 0
job_wait 60
saved_one_step "$tag" 2 "garbage decision and lost records, then SIGTERM"
[ "$failures" -eq 0 ] || show_logs "$tag" 2
tag=garbage-error
JOB_ARGS_1="--fail-at 600"
job_start "$tag" 2 --steps 100000 --step-ms 10
unset JOB_ARGS_1
for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
inc=$(etcdctl --endpoints="$ETCD_URL" get "/preempt/$tag/incarnation" --print-value-only)
etcdctl --endpoints="$ETCD_URL" put "/preempt/$tag/$inc/error" "boom 1 a message" >/dev/null
job_wait 60
eq "garbage error, then an application error: both exit with its code" "$RCS" "3 3"
eq "garbage error: both report the worker's message" "$(same "$tag" 2 exit message)" \
    "worker 1: step 600 failed with code 3"
expect "garbage error: the slot held garbage when the error came" grep -q "ignoring /preempt/$tag/$inc/error = " \
    "$TMP/$tag.0.err"
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# A well-formed notice in worker 1's own slot that worker 1 did not write:
# the others cannot tell it from worker 1's, worker 1 can. It reports it and
# withdraws it for the whole job, and follows it as the others do: one
# opportunistic checkpoint, every worker back in idle, training on; a real
# SIGTERM later saves one step on both (75 75 when worker 1 only ignored
# it, and on the previous main, where it took it silently).
tag=foreign
job_start "$tag" 2 --steps 100000 --step-ms 10
for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30 && wait_for "$TMP/$tag.$i.err" ' up (created)' 30; done
inc=$(etcdctl --endpoints="$ETCD_URL" get "/preempt/$tag/incarnation" --print-value-only)
etcdctl --endpoints="$ETCD_URL" put "/preempt/$tag/$inc/e0/notice/1" "$(($(date +%s) * 1000 + 600000)) signal" >/dev/null
for i in 0 1; do wait_for "$TMP/$tag.$i.err" "the job's decision is \"committed" 30; done
expect "foreign notice: worker 1 reports it" grep -q "e0/notice/1 = .* is in this worker's slot, but not its notice (it has none): withdrawing it" "$TMP/$tag.1.err"
for p in $PIDS; do expect "foreign notice: worker pid $p trains on" kill -0 "$p"; done
kill -TERM "$(echo $PIDS | cut -d' ' -f1)" # worker 0
job_wait 60
saved_one_step "$tag" 2 "foreign notice, then SIGTERM"
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# A well-formed notice of worker 7, a worker the job (of 3) does not have:
# every reader of the job judges it as the workers do. The workers ignore
# it (and say so), preemptctl status lists it as malformed and counts no
# notice, and preemptctl watch, watching since before it came, reports
# none; a real SIGTERM afterwards is reported by the watcher and saves one
# step on every worker. (The watcher and status's summary read the records
# for any worker index before: the watcher reported worker 7's notice.)
tag=w7
job_start "$tag" 3 --steps 100000 --step-ms 10
for i in 0 1 2; do wait_for "$TMP/$tag.$i.out" '"start"' 30 && wait_for "$TMP/$tag.$i.err" ' up (created)' 30; done
w=$(etcdctl --endpoints="$ETCD_URL" get "/preempt/$tag/incarnation" --print-value-only)
ww=$(etcd_watchers)
"$CTL" --etcd "$ETCD_URL" --wait-ms 60000 watch "$tag" >"$TMP/w7.watch" 2>"$TMP/w7.watch.err" &
WPID=$!
wait_watchers $((ww + 1)) 30 # the watcher has read the job and watches it
etcdctl --endpoints="$ETCD_URL" put "/preempt/$tag/$w/e0/notice/7" "$(($(date +%s) * 1000 + 600000)) signal" >/dev/null
for i in 0 1 2; do wait_for "$TMP/$tag.$i.err" "ignoring /preempt/$tag/$w/e0/notice/7 = " 30; done
expect_rc 0 "$CTL" --etcd "$ETCD_URL" status "$tag"
expect_output "e0/notice/7"
expect "worker 7: status lists it as malformed" grep -q "e0/notice/7 .*(malformed: " "$TMP/out"
expect_output "episode 0: no notice"
kill -TERM "$(echo $PIDS | cut -d' ' -f1)" # worker 0
job_wait 60
saved_one_step "$tag" 3 "worker 7's notice, then SIGTERM"
reap 60 "$WPID"
eq "worker 7: the watcher ends when every worker has exited" "$?" 0
eq "worker 7: the watcher's first notice is worker 0's signal" \
    "$(first_field "$TMP/w7.watch" notice worker) $(first_field "$TMP/w7.watch" notice source)" "0 signal"
expect "worker 7: the watcher never reported worker 7" sh -c "! grep -q '\"worker\":7' '$TMP/w7.watch'"
[ "$failures" -eq 0 ] || { show_logs "$tag" 3; cat "$TMP/w7.watch" "$TMP/w7.watch.err"; }

# An incarnation counter hand-set to "007": no reader takes it for 7. A
# worker refuses to join (before, its start-up read it as 7 where the
# watcher and preemptctl read no incarnation), and preemptctl says why.
etcdctl --endpoints="$ETCD_URL" put /preempt/inc007/incarnation 007 >/dev/null
expect_rc 2 "$TRAINER" --etcd "$ETCD_URL" --job inc007 --ckpt-dir "$TMP/inc007" --steps 10
expect_output 'the incarnation key holds "007", not a number'
expect_rc 1 "$CTL" --etcd "$ETCD_URL" status inc007
expect_output 'is not an incarnation'

# ---- the preemption watcher; an advisory notice across a job ---------------
# preemptctl watch (the public watcher) sees which worker got a notice and
# when every worker has exited.
job_start watch 3 --steps 100000 --step-ms 10
for _i in 0 1 2; do wait_for "$TMP/watch.$_i.out" '"event":"start"' 30; done
w=$(etcd_watchers)
"$CTL" --etcd "$ETCD_URL" --wait-ms 60000 watch watch >"$TMP/watcher.out" 2>"$TMP/watcher.err" &
WPID=$!
wait_watchers $((w + 1)) 30 # the watcher has read the job and watches it
kill -TERM "$(echo $PIDS | cut -d' ' -f2)" # worker 1
job_wait 60
eq "watch: every worker saved and exited" "$RCS" "42 42 42"
reap 60 "$WPID"
eq "watch: the watcher stops when every worker has exited" "$?" 0
eq "watch: the preempted worker" "$(field "$TMP/watcher.out" notice worker)" 1
eq "watch: the notice's source" "$(field "$TMP/watcher.out" notice source)" signal
expect "watch: a deadline" test "$(field "$TMP/watcher.out" notice deadline_unix_ms)" -gt 1700000000000
expect "watch: the exit is reported" grep -q '"event":"exited"' "$TMP/watcher.out"
expect_rc 1 "$CTL" --etcd "$ETCD_URL" --wait-ms 300 watch nobody
expect_output "did not all exit within 300 ms"

# A watcher that re-read the job (its revision compacted away while etcd
# was down) still sees the notices of the incarnation it re-read: it used
# to read the records against incarnation 0 and report nothing after.
tag=reread
job_start "$tag" 2 --steps 100000 --step-ms 10
for _i in 0 1; do wait_for "$TMP/$tag.$_i.out" '"event":"start"' 30; done
w=$(etcd_watchers)
"$CTL" --etcd "$ETCD_URL" --wait-ms 60000 watch "$tag" >"$TMP/rereadw.out" 2>"$TMP/rereadw.err" &
WPID=$!
wait_watchers $((w + 1)) 30 # the watcher has read the job and watches it
for _i in 1 2 3; do etcdctl --endpoints="$ETCD_URL" put /other/key$_i x >/dev/null; done
rev=$(etcdctl --endpoints="$ETCD_URL" get /other/key3 -w json | sed -n 's/.*"revision":\([0-9]*\).*/\1/p')
etcdctl --endpoints="$ETCD_URL" compact "$rev" >/dev/null
etcd_stop
etcd_restart
# the watcher comes back at a compacted revision and re-reads the job,
# before or after the notice: either way the notice is in what it reads
kill -TERM "$(echo $PIDS | cut -d' ' -f1)" # worker 0
job_wait 60
eq "watch after a re-read: every worker saved and exited" "$RCS" "42 42"
reap 60 "$WPID"
eq "watch after a re-read: the watcher stops when every worker has exited" "$?" 0
eq "watch after a re-read: the preempted worker" "$(field "$TMP/rereadw.out" notice worker)" 0
[ "$failures" -eq 0 ] || { show_logs "$tag" 2; cat "$TMP/rereadw.out" "$TMP/rereadw.err"; }

# An advisory notice on one worker (an AWS rebalance recommendation served
# by the fake metadata service): every worker takes the same opportunistic
# checkpoint, the job returns to idle and training goes on to the end.
FAKE="$top_builddir/tests/fake/fake-metadata"
mkdir -p "$TMP/md/latest/meta-data/events/recommendations"
# fake_start DIR TAG: the fake metadata service serving DIR (pid FPID, its
# URL _murl, its log $TMP/TAG.md.log).
fake_start() {
    "$FAKE" "$1" >"$TMP/$2.md.log" 2>&1 &
    FPID=$!
    wait_for "$TMP/$2.md.log" "port " 5
    _murl="http://127.0.0.1:$(awk '/^port/ { print $2 }' "$TMP/$2.md.log")"
}
# aws_job TAG STEPS: the fake metadata service (FPID) serving $TMP/md, and
# a 3-worker job whose worker 2 runs on "aws" and polls it.
aws_job() {
    fake_start "$TMP/md" "$1"
    PIDS=
    for _i in 0 1 2; do
        _plat=none
        [ "$_i" -eq 2 ] && _plat=aws
        "$TRAINER" --etcd "$ETCD_URL" --job "$1" --worker "$_i" --workers 3 --ckpt-dir "$TMP/$1" --verbose \
            --steps "$2" --step-ms 10 --platform "$_plat" --metadata-url "$_murl" --metadata-poll-ms 100 \
            >"$TMP/$1.$_i.out" 2>"$TMP/$1.$_i.err" &
        PIDS="$PIDS $!"
    done
}
aws_job adv 400
for _i in 0 1 2; do wait_for "$TMP/adv.$_i.out" '"event":"start"' 30; done
w=$(etcd_watchers)
"$CTL" --etcd "$ETCD_URL" --wait-ms 60000 watch adv >"$TMP/advw.out" 2>&1 &
WPID=$!
wait_watchers $((w + 1)) 30 # the watcher has read the job and watches it
printf '{"noticeTime": "2026-11-21T08:22:00Z"}' >"$TMP/md/latest/meta-data/events/recommendations/rebalance"
job_wait 60
kill "$FPID" 2>/dev/null
reap 60 "$WPID"
eq "advisory: every worker finished" "$RCS" "0 0 0"
eq "advisory: one checkpoint each, at one step" "$(same adv 3 saved step)" "$(field "$TMP/adv.0.out" saved step)"
for _i in 0 1 2; do
    eq "advisory: worker $_i saved once" "$(count_events "$TMP/adv.$_i.out" saved)" 1
    expect "advisory: worker $_i back to idle" grep -q '"to":"idle"' "$TMP/adv.$_i.out"
done
eq "advisory: the uninterrupted digest" "$(same adv 3 done state_digest)" "$(same adv 3 done state_digest | grep -v differs)"
expect "advisory: the watcher saw it withdrawn" grep -q '"source":"aws".*"withdrawn":true' "$TMP/advw.out"

# A real preemption after the job returned to idle: the advisory round is
# episode 0 of the incarnation, the SIGTERM's round episode 1. The records
# of episode 0 are cleared and cannot touch episode 1's (sim seeds 3849,
# 4003 and 6702 found a late clear of one round deleting the next one's).
aws_job adv2 100000 # the recommendation is there from the start
for _i in 0 1 2; do wait_for "$TMP/adv2.$_i.out" '"to":"idle"' 60; done
kill "$FPID" 2>/dev/null
kill -TERM "$(echo $PIDS | cut -d' ' -f2)"
job_wait 60
eq "episodes: every worker saved and exited 42" "$RCS" "42 42 42"
# committed ones: a worker past a round's step raises it, and one that had
# saved at the old step saves again (its first copy dropped; docs/guide/limits.md): seen once, 3 saves and 2 commits
for _i in 0 1 2; do
    eq "episodes: worker $_i has two checkpoints committed" \
        "$(grep -c 'the job committed step' "$TMP/adv2.$_i.err")" 2
done
eq "episodes: the second at one step" "$(same adv2 3 saved step)" "$(field "$TMP/adv2.1.out" saved step)"
expect "episodes: episode 1 agreed its step" sh -c \
    "etcdctl --endpoints=$ETCD_URL get --keys-only /preempt/adv2/1/e1/r0/agreed | grep -q agreed"
eq "episodes: episode 0 was cleared" \
    "$(etcdctl --endpoints="$ETCD_URL" get --prefix --keys-only /preempt/adv2/1/e0/ | grep -c e0/)" 0
[ "$failures" -eq 0 ] || show_logs adv2 3

# ---- the notice withdrawn in the final round: every worker gives it up ----
# Worker 1 runs on "azure" (the fake metadata service): a Preempt event for
# its VM is its notice, 8 s of grace; once the driver (worker 1) requested
# the final round, Azure cancels the event. Every worker returns to idle
# without saving in that round (the first checkpoint stands) and trains on
# to the end. The round is given up, as a worker still counting down gives
# it up, so that no worker finishes it alone: a driver whose request landed
# after the withdrawal did (sim seed 6548: it saved alone and exited while
# its peers trained on). Before, every worker here saved again in the round
# (the round's two saves, then idle).
tag=wdfinal
mkdir -p "$TMP/az/metadata/instance/compute"
printf vm-7 >"$TMP/az/metadata/instance/compute/name"
printf '{"DocumentIncarnation": 1, "Events": []}' >"$TMP/az/metadata/scheduledevents"
fake_start "$TMP/az" "$tag"
JOB_ARGS_1="--platform azure --metadata-url $_murl --metadata-poll-ms 50"
job_start "$tag" 2 --steps 60 --step-ms 200 --grace-ms 8000 --platform none
unset JOB_ARGS_1
for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
_nb=$(LC_ALL=C date -u -d "+40 seconds" '+%a, %d %b %Y %H:%M:%S GMT')
_ev='{"EventId": "A1", "EventStatus": "Scheduled", "EventType": "Preempt", "ResourceType": "VirtualMachine", "Resources": ["vm-7"], "NotBefore": "'"$_nb"'", "Description": "", "EventSource": "Platform", "DurationInSeconds": -1}'
printf '{"DocumentIncarnation": 2, "Events": [%s]}' "$_ev" >"$TMP/az/metadata/sched.tmp" &&
    mv "$TMP/az/metadata/sched.tmp" "$TMP/az/metadata/scheduledevents"
wait_for "$TMP/$tag.1.trace" 'fx=request-final' 30
printf '{"DocumentIncarnation": 3, "Events": []}' >"$TMP/az/metadata/sched.tmp" &&
    mv "$TMP/az/metadata/sched.tmp" "$TMP/az/metadata/scheduledevents"
job_wait 60
kill "$FPID" 2>/dev/null
eq "withdrawn final round: both train to the end" "$RCS" "0 0"
for i in 0 1; do
    expect "withdrawn final round: worker $i gave the round up before saving in it" \
        grep -Eq 'ev=notice-withdrawn .*=> (own-signal|following|step-agreed) -> idle' "$TMP/$tag.$i.trace"
    eq "withdrawn final round: worker $i saved once (the first round)" "$(grep -c 'fx=begin-save' "$TMP/$tag.$i.trace")" 1
done
eq "withdrawn final round: no decision of the final round" \
    "$(etcdctl --endpoints="$ETCD_URL" get --prefix --keys-only /preempt/$tag/1/decision/e0/r1 | grep -c r1)" 0
eq "withdrawn final round: the uninterrupted digest" "$(same "$tag" 2 done state_digest)" \
    "$(same "$tag" 2 done state_digest | grep -v differs)"
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# ---- authentication -------------------------------------------------------
EC="etcdctl --endpoints=$ETCD_URL"
$EC user add root:rootpw >/dev/null && $EC user grant-role root root >/dev/null &&
    $EC user add worker:workerpw >/dev/null && $EC role add preempt-rw >/dev/null &&
    $EC role grant-permission preempt-rw --prefix=true readwrite /preempt/ >/dev/null &&
    $EC user grant-role worker preempt-rw >/dev/null && $EC auth enable >/dev/null
expect "auth: enabled on the test etcd" test $? -eq 0
tag=auth
PIDS=
for i in 0 1; do
    PREEMPT_ETCD_PASSWORD=workerpw "$TRAINER" --etcd "$ETCD_URL" --job "$tag" --worker "$i" --workers 2 \
        --ckpt-dir "$TMP/$tag" --steps 100000 --step-ms 5 --etcd-user worker --print-steps \
        >"$TMP/$tag.$i.out" 2>"$TMP/$tag.$i.err" &
    PIDS="$PIDS $!"
done
for i in 0 1; do wait_lines "$TMP/$tag.$i.out" '"event":"step"' 20 30; done
kill -TERM "$(echo $PIDS | cut -d' ' -f1)"
job_wait 60
eq "auth: with credentials the protocol runs (both exit 42)" "$RCS" "42 42"
expect_rc 2 "$TRAINER" --etcd "$ETCD_URL" --job auth2 --ckpt-dir "$TMP/auth2" --steps 10 --verbose
expect_output "etcd requires authentication"
PREEMPT_ETCD_PASSWORD=wrong expect_rc 2 "$TRAINER" --etcd "$ETCD_URL" --job auth2 --ckpt-dir "$TMP/auth2" \
    --steps 10 --etcd-user worker --verbose
expect_output "authentication failed"
expect "auth: no password in the logs" sh -c "! grep -q workerpw $TMP/auth.0.err $TMP/out"

# ---- bad configuration: clear errors ----------------------------------------
expect_rc 2 "$TRAINER" --etcd "$ETCD_URL" --job "../x" --ckpt-dir "$TMP/bad" --steps 10 --verbose
expect_output "job must be"
expect_rc 2 "$TRAINER" --etcd "$ETCD_URL" --worker 3 --workers 2 --ckpt-dir "$TMP/bad" --steps 10 --verbose
expect_output "worker must be between"
expect_rc 2 "$TRAINER" --etcd "ftp://127.0.0.1:1" --ckpt-dir "$TMP/bad" --steps 10 --verbose
expect_rc 2 "$TRAINER" --workers 2 --ckpt-dir "$TMP/bad" --steps 10
expect_output "need --etcd"
# A job whose other worker never comes: start-up gives up at its bound.
PREEMPT_ETCD_PASSWORD=workerpw expect_rc 2 "$TRAINER" --etcd "$ETCD_URL" --job alone --workers 2 \
    --ckpt-dir "$TMP/alone" --steps 10 --join-timeout-ms 500 --etcd-user worker --verbose
expect_output "not every worker (2) joined"
# Nobody listening: bounded, with the reason.
expect_rc 2 "$TRAINER" --etcd "http://127.0.0.1:9" --job down --ckpt-dir "$TMP/down" --steps 10 \
    --join-timeout-ms 1000 --verbose
expect_output "127.0.0.1:9"

finish
