# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Asynchronous start-up (async_start), on a real etcd with real processes:
# creation returns at once and joining, the restore and the restore barrier
# run on the trainer's own loop, which keeps serving its events meanwhile
# (the trainer's 50 ms tick counts them: start_ticks). A blocking creation
# on the same loop ticks 0 times. Then the job trains, is preempted, starts
# again asynchronously from the saved step and ends with the uninterrupted
# digest; a worker whose restore rejects the step makes the job fall back
# together (start-up joins again, on the loop); a lone worker's start-up
# fails through on_start, with its reason.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
trap 'job_kill; etcd_stop; rm -rf "$TMP"' EXIT

etcd_start async-start || finish
STEPS=400
ARGS="--async --step-ms 5 --lease-ttl 2 --agree-timeout-ms 5000"
REF=$("$TRAINER" --platform none --ckpt-dir "$TMP/ref" --steps $STEPS | sed -n 's/.*"state_digest":"\([0-9a-f]*\)".*/\1/p')

# start_late TAG UNTIL EXTRA...: worker 0 of job TAG now, worker 1 once
# worker 0's start-up waits for it: UNTIL "joined" (worker 0's member
# record is in etcd) or "ticked" (and its loop has ticked 15 times).
joined0() { etcdctl --endpoints="$ETCD_URL" get --prefix --keys-only "/preempt/$1/" | grep -q '/w/alive/0$'; }
start_late() {
    _t=$1 _until=$2
    shift 2
    PIDS=
    for i in 0 1; do
        "$TRAINER" --etcd "$ETCD_URL" --job "$_t" --worker $i --workers 2 --ckpt-dir "$TMP/$_t" --verbose \
            --print-steps $ARGS "$@" >"$TMP/$_t.$i.out" 2>"$TMP/$_t.$i.err" &
        PIDS="$PIDS $!"
        if [ $i -eq 0 ]; then
            wait_until 30 "$_t: worker 0 joined" joined0 "$_t"
            [ "$_until" = ticked ] && wait_lines "$TMP/$_t.0.out" '"event":"tick"' 15 30
        fi
    done
}

# 1. Blocking creation on the trainer's loop: the loop stands still.
start_late b joined --steps 50
job_wait 60
eq "blocking start-up: both complete" "$RCS" "0 0"
eq "blocking start-up: worker 0's loop did not run meanwhile" "$(field "$TMP/b.0.out" start start_ticks)" 0
[ "$failures" -eq 0 ] || show_logs b 2

# 2. Asynchronous: worker 0's loop ticks while it waits for worker 1.
start_late a ticked --steps 1000000 --async-start
for i in 0 1; do wait_for "$TMP/a.$i.out" '"event":"start"' 30 || { show_logs a 2; finish; }; done
t=$(field "$TMP/a.0.out" start start_ticks)
expect "asynchronous start-up: worker 0's loop ran meanwhile ($t ticks of 50 ms)" test "${t:-0}" -ge 15
for i in 0 1; do wait_lines "$TMP/a.$i.out" '"event":"step"' 20 30; done
kill -TERM $(echo $PIDS | cut -d' ' -f1)
job_wait 60
eq "asynchronous start-up: preempted, both exit 42" "$RCS" "42 42"
S=$(same a 2 exit saved_step)
expect "asynchronous start-up: one saved step ($S)" one_step "$S"
[ "$failures" -eq 0 ] || { show_logs a 2; finish; }

# 3. The restart, asynchronous too: both restore S and end with the
# uninterrupted digest.
job_start a 2 --steps $STEPS $ARGS --async-start
job_wait 60
eq "restart: both complete" "$RCS" "0 0"
eq "restart: both restore the saved step" "$(same a 2 start restored_step)" "$S"
eq "restart: the uninterrupted digest" "$(same a 2 done state_digest)" "$REF"
[ "$failures" -eq 0 ] || show_logs a 2

# 4. Preempted again; at the restart worker 1's restore rejects the newest
# step: both set it aside and fall back to S together, on their loops.
job_start a 2 --steps 1000000 $ARGS --async-start
for i in 0 1; do wait_for "$TMP/a.$i.out" '"event":"start"' 30 || { show_logs a 2; finish; }; done
job_trained 100 # past S: the restart trained from it
kill -TERM $(echo $PIDS | cut -d' ' -f1)
job_wait 60
S2=$(same a 2 exit saved_step)
expect "second preemption: a newer step ($S2 > $S)" test "${S2#differs}" = "$S2" -a "${S2:-0}" -gt "$S"
PIDS=
for i in 0 1; do
    extra=
    [ $i -eq 1 ] && extra="--fail-restore-at $S2"
    "$TRAINER" --etcd "$ETCD_URL" --job a --worker $i --workers 2 --ckpt-dir "$TMP/a" --verbose --steps $STEPS \
        $ARGS --async-start $extra >"$TMP/a.$i.out" 2>"$TMP/a.$i.err" &
    PIDS="$PIDS $!"
done
job_wait 60
eq "restore fallback: both complete" "$RCS" "0 0"
eq "restore fallback: both restored step $S" "$(same a 2 start restored_step)" "$S"
eq "restore fallback: the uninterrupted digest" "$(same a 2 done state_digest)" "$REF"
[ "$failures" -eq 0 ] || show_logs a 2

# 5. A lone worker: start-up fails on the loop (on_start), with its reason.
"$TRAINER" --etcd "$ETCD_URL" --job lone --worker 0 --workers 2 --ckpt-dir "$TMP/lone" --steps 10 \
    --join-timeout-ms 1500 $ARGS --async-start >"$TMP/lone.out" 2>"$TMP/lone.err"
eq "lone worker: exit 2" "$?" 2
expect "lone worker: says why" grep -q "not every worker (2) joined" "$TMP/lone.err"
expect "lone worker: no training" test ! -s "$TMP/lone.out"
finish
