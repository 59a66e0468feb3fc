# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Checkpoints survive operators' mistakes, on real files, real processes and
# a real etcd. A 3-worker job is preempted and committed a step; then:
#   - one worker's directory is missing at restart (a volume not mounted):
#     the job refuses to start, naming the worker, and the others'
#     checkpoints stay in place; with the volume back, it resumes there
#     (before: the others deleted theirs and everyone began at step 0);
#   - a worker's directory holds another worker's checkpoint (a swapped
#     volume): skipped with a warning naming whose it is, and refused;
#   - one worker's restore callback rejects the newest step: every worker
#     sets it aside and the job falls back to the older step together;
#   - a worker's checkpoint is corrupt: refused; told to start over, the
#     job restarts from scratch and the others' checkpoints are set aside,
#     listed by preempt-ckpt and restorable;
# and a lone trainer: another job's checkpoint in its directory is skipped;
# a checkpoint its restore callback rejects (another model size) is set
# aside and the next older one restored, with the uninterrupted digest at
# the end; when none can be restored it exits 5, and the next start begins
# at 0; a lock left by a SIGKILLed trainer is no obstacle.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
trap 'job_kill; etcd_stop; rm -rf "$TMP"' EXIT
unset PREEMPT_START_OVER
CKPT="$top_builddir/tools/preempt-ckpt"

etcd_start safety || finish
N=3
STEPS=300
ARGS="--step-ms 5 --lease-ttl 2 --agree-timeout-ms 5000 --join-timeout-ms 20000"
REF=$("$TRAINER" --platform none --ckpt-dir "$TMP/ref" --steps $STEPS | sed -n 's/.*"state_digest":"\([0-9a-f]*\)".*/\1/p')
expect "an uninterrupted run prints a digest" test -n "$REF"

# 1. The job is preempted at about step 100 and saves.
job_start s $N --steps $STEPS --raise-at 100 $ARGS
job_wait 60
eq "first run: every worker saved" "$RCS" "$(rcs_of $N 42)"
S=$(same s $N saved step)
expect "first run: one saved step ($S)" test -n "$S" -a "$S" != differs
CK=$(printf 'ckpt-%020d' "$S")
[ "$failures" -eq 0 ] || { show_logs s $N; finish; }

# 2. Worker 2's volume is not mounted: nobody starts, worker 2 is named,
# nothing is deleted.
mv "$TMP/s/worker-2" "$TMP/w2-away"
job_start s $N --steps $STEPS $ARGS
job_wait 60
eq "missing directory: every worker refuses to start" "$RCS" "$(rcs_of $N 2)"
for i in 0 1 2; do
    expect "missing directory: worker $i names worker 2" grep -q "worker(s) 2 lack the checkpoint at step $S" "$TMP/s.$i.err"
done
expect "missing directory: says how to start over" grep -q "preemptctl start-over s' (or restart once with PREEMPT_START_OVER=1)" "$TMP/s.0.err"
for i in 0 1; do
    expect "missing directory: worker $i still holds $CK" test -f "$TMP/s/worker-$i/$CK/MANIFEST"
done

# 3. The volume is back: the job resumes at the saved step.
rm -rf "$TMP/s/worker-2"
mv "$TMP/w2-away" "$TMP/s/worker-2"
job_start s $N --steps $STEPS $ARGS
job_wait 60
eq "volume back: every worker completes" "$RCS" "$(rcs_of $N 0)"
eq "volume back: resumed at the saved step" "$(same s $N start restored_step)" "$S"
eq "volume back: the uninterrupted digest" "$(same s $N done state_digest)" "$REF"
[ "$failures" -eq 0 ] || { show_logs s $N; finish; }

# 4. Preempted again; then worker 1's volume holds worker 0's checkpoint.
job_start s $N --steps $STEPS --raise-at 200 $ARGS
job_wait 60
eq "second run: every worker saved" "$RCS" "$(rcs_of $N 42)"
S2=$(same s $N saved step)
CK2=$(printf 'ckpt-%020d' "$S2")
mv "$TMP/s/worker-1" "$TMP/w1-away"
mkdir "$TMP/s/worker-1"
cp -a "$TMP/s/worker-0/$CK2" "$TMP/s/worker-1/"
job_start s $N --steps $STEPS $ARGS
job_wait 60
eq "swapped volume: every worker refuses to start" "$RCS" "$(rcs_of $N 2)"
expect "swapped volume: worker 1 says whose checkpoint it found" \
    grep -q "belongs to job s, worker 0 of 3" "$TMP/s.1.err"
expect "swapped volume: worker 1 is named" grep -q "worker(s) 1 lack the checkpoint at step $S2" "$TMP/s.0.err"
rm -rf "$TMP/s/worker-1"
mv "$TMP/w1-away" "$TMP/s/worker-1"

# 5. Worker 1's restore callback rejects step S2 (a model that no longer
# loads): every worker sets S2 aside and the job falls back to S together;
# the run ends with the uninterrupted digest.
PIDS=
for i in 0 1 2; do
    extra=
    [ "$i" -eq 1 ] && extra="--fail-restore-at $S2"
    "$TRAINER" --etcd "$ETCD_URL" --job s --worker "$i" --workers $N --ckpt-dir "$TMP/s" --verbose \
        --steps $STEPS $ARGS $extra >"$TMP/s.$i.out" 2>"$TMP/s.$i.err" &
    PIDS="$PIDS $!"
done
job_wait 60
eq "restore fallback: every worker completes" "$RCS" "$(rcs_of $N 0)"
eq "restore fallback: every worker restored step $S" "$(same s $N start restored_step)" "$S"
eq "restore fallback: one fallback each" "$(same s $N start restore_fallbacks)" 1
eq "restore fallback: the uninterrupted digest" "$(same s $N done state_digest)" "$REF"
for i in 0 1 2; do
    expect "restore fallback: worker $i set $CK2 aside" test -f "$TMP/s/worker-$i/aside/$CK2/MANIFEST"
done
expect "restore fallback: worker 0 says whose restore failed" grep -q "a restore failed (step $S2, worker 1: " "$TMP/s.0.err"
[ "$failures" -eq 0 ] || show_logs s $N

# 6. Worker 2's checkpoint of S is corrupt: no step is common. Refused;
# then started over: every worker begins at step 0, the newer checkpoints
# set aside, listed and restorable.
printf 'garbage' | dd of="$TMP/s/worker-2/$CK/model" bs=1 seek=10 conv=notrunc 2>/dev/null
job_start s $N --steps $STEPS $ARGS
job_wait 60
eq "corrupt checkpoint: every worker refuses to start" "$RCS" "$(rcs_of $N 2)"
expect "corrupt checkpoint: worker 2 is named" grep -q "worker(s) 2 lack the checkpoint at step $S" "$TMP/s.1.err"
expect "corrupt checkpoint: worker 2 says why" grep -q "step $S is corrupt" "$TMP/s.2.err"
CTL="$top_builddir/tools/preemptctl"
"$CTL" --etcd "$ETCD_URL" start-over s >"$TMP/out" 2>&1
eq "preemptctl start-over: exit 0" "$?" 0
job_start s $N --steps $STEPS $ARGS
job_wait 60
eq "start over: every worker completes" "$RCS" "$(rcs_of $N 0)"
eq "start over: the request was used once" "$(etcdctl --endpoints="$ETCD_URL" get --print-value-only /preempt/s/start-over)" ""
eq "start over: from step 0" "$(same s $N start restored_step)" 0
eq "start over: the uninterrupted digest" "$(same s $N done state_digest)" "$REF"
for i in 0 1 2; do
    expect "start over: worker $i set $CK aside" test -f "$TMP/s/worker-$i/aside/$CK/MANIFEST"
done
"$CKPT" list "$TMP/s/worker-0" >"$TMP/list" 2>&1
eq "preempt-ckpt list: exit 0" "$?" 0
expect "preempt-ckpt list: the set-aside checkpoint, its identity and reason" \
    grep -q "aside/$CK .*ok .*job s, worker 0 of 3.*started over" "$TMP/list"
expect "preempt-ckpt list: the rejected one, and why" grep -q "aside/$CK2 .*ok .*restore callback failed" "$TMP/list"
"$CKPT" list "$TMP/s/worker-2" >"$TMP/list2" 2>&1
expect "preempt-ckpt list: the corrupt one, as corrupt" grep -q "aside/$CK .*corrupt" "$TMP/list2"
"$CKPT" restore "$TMP/s/worker-0" "aside/$CK" >"$TMP/out" 2>&1
eq "preempt-ckpt restore: exit 0" "$?" 0
expect "preempt-ckpt restore: back in place" test -f "$TMP/s/worker-0/$CK/MANIFEST"
"$CKPT" restore "$TMP/s/worker-0" "aside/nothing" >"$TMP/out" 2>&1
eq "preempt-ckpt restore of no such checkpoint: exit 1" "$?" 1

# 7. A 2-worker job loses worker 1's volume; worker 1 alone is restarted
# with PREEMPT_START_OVER=1: one worker asking is enough for the job.
job_start t 2 --steps $STEPS --raise-at 100 $ARGS
job_wait 60
eq "job t: every worker saved" "$RCS" "42 42"
T1=$(printf 'ckpt-%020d' "$(same t 2 saved step)")
rm -rf "$TMP/t/worker-1"
PIDS=
for i in 0 1; do
    ( [ "$i" -eq 1 ] && export PREEMPT_START_OVER=1
      exec "$TRAINER" --etcd "$ETCD_URL" --job t --worker "$i" --workers 2 --ckpt-dir "$TMP/t" --verbose \
        --steps $STEPS $ARGS >"$TMP/t.$i.out" 2>"$TMP/t.$i.err" ) &
    PIDS="$PIDS $!"
done
job_wait 60
eq "PREEMPT_START_OVER on one worker: both complete from step 0" "$RCS/$(same t 2 start restored_step)" "0 0/0"
expect "PREEMPT_START_OVER: worker 0 set its checkpoint aside" test -f "$TMP/t/worker-0/aside/$T1/MANIFEST"

# ---- a lone trainer ----------------------------------------------------------
L=$TMP/local
"$TRAINER" --platform none --ckpt-dir "$L" --steps $STEPS --raise-at 50 >"$TMP/l1.out" 2>&1
eq "local: preempted and saved" "$?" 42
L1=$(field "$TMP/l1.out" saved step)
# another job's checkpoint, newer, in this directory
cp -a "$TMP/s/worker-0/aside/$CK2" "$L/"
rm -f "$L/$CK2/.aside"
# and this trainer's own newer one, of another model size (its restore fails)
"$TRAINER" --platform none --ckpt-dir "$TMP/big" --steps $STEPS --raise-at 150 --state-kb 32 >"$TMP/l2.out" 2>&1
L2=$(field "$TMP/l2.out" saved step)
cp -a "$TMP/big/$(printf 'ckpt-%020d' "$L2")" "$L/"
"$TRAINER" --platform none --ckpt-dir "$L" --steps $STEPS --verbose >"$TMP/l3.out" 2>"$TMP/l3.err"
eq "local: completes" "$?" 0
expect "local: another job's checkpoint skipped, naming it" grep -q "belongs to job s, worker 0 of 3" "$TMP/l3.err"
eq "local: fell back once" "$(field "$TMP/l3.out" start restore_fallbacks)" 1
eq "local: restored its own older step" "$(field "$TMP/l3.out" start restored_step)" "$L1"
eq "local: the uninterrupted digest" "$(field "$TMP/l3.out" done state_digest)" "$REF"
expect "local: the rejected checkpoint set aside" test -d "$L/aside/$(printf 'ckpt-%020d' "$L2")"
expect "local: the other job's checkpoint untouched" test -f "$L/$CK2/MANIFEST"

# nothing restorable: exit 5, and the next start begins at step 0
rm -rf "$TMP/only"
mkdir "$TMP/only"
cp -a "$TMP/big/$(printf 'ckpt-%020d' "$L2")" "$TMP/only/"
"$TRAINER" --platform none --ckpt-dir "$TMP/only" --steps $STEPS >"$TMP/l4.out" 2>"$TMP/l4.err"
eq "local: no checkpoint restorable: exit 5" "$?" 5
"$TRAINER" --platform none --ckpt-dir "$TMP/only" --steps $STEPS >"$TMP/l5.out" 2>"$TMP/l5.err"
eq "local: then a fresh start, done" "$?/$(field "$TMP/l5.out" start restored_step)" 0/0

# a lock left by a SIGKILLed trainer
"$TRAINER" --platform none --ckpt-dir "$TMP/killed" --steps 1000000 --step-ms 5 >"$TMP/k.out" 2>&1 &
KPID=$!
wait_for "$TMP/k.out" '"event":"start"' 10
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null # bounded: SIGKILL
expect "SIGKILLed: its lock file stays" test -f "$TMP/killed/.lock"
"$TRAINER" --platform none --ckpt-dir "$TMP/killed" --steps 10 >"$TMP/k2.out" 2>"$TMP/k2.err"
eq "SIGKILLed: the next trainer starts and completes" "$?" 0

finish
