# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# One decision per round, on a real etcd with real processes and a real
# failing write. A job keeps one checkpoint (--max-to-keep 1); in its second
# preemption one worker's save fails (its file size limit is below the
# checkpoint's size: write() returns EFBIG, as on a full volume). The round
# must abort for every worker: each exits 75 ("not saved: the previous
# checkpoint is intact"), and that must be true: every worker still holds
# the first preemption's checkpoint and the restart resumes there. A worker
# that commits its copy locally before the job decides (each worker by its
# own view) removes the previous checkpoint to keep one, and the restart
# begins at step 0.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
trap 'job_kill; etcd_stop; rm -rf "$TMP"' EXIT

etcd_start decision || finish
N=3
ARGS="--step-ms 5 --state-kb 1024 --max-to-keep 1 --lease-ttl 2 --agree-timeout-ms 5000"

# run TAG STEPS LIMITED RAISE_AT: one incarnation of the job, to STEPS;
# worker LIMITED (none: -1) may write files of at most 256 blocks; worker 0
# raises SIGTERM during step RAISE_AT (none: 0).
run() {
    tag=$1 steps=$2 limited=$3 raise=$4
    PIDS=
    for i in $(seq 0 $((N - 1))); do
        extra=
        [ "$i" -eq 0 ] && [ "$raise" -gt 0 ] && extra="--raise-at $raise"
        lim=unlimited
        [ "$i" -eq "$limited" ] && lim=256
        # SIGXFSZ ignored (it stays ignored across exec): the write fails
        # with EFBIG instead of killing the process.
        sh -c 'trap "" XFSZ; ulimit -f "$0"; exec "$@"' "$lim" \
            "$TRAINER" --etcd "$ETCD_URL" --job "$tag" --worker "$i" --workers "$N" --ckpt-dir "$TMP/$tag" --verbose \
            --steps "$steps" $ARGS $extra >"$TMP/$tag.$i.out" 2>"$TMP/$tag.$i.err" &
        PIDS="$PIDS $!"
    done
    job_wait 120
}

ckpts() { ls "$TMP/j/worker-$1" | grep '^ckpt-' | tr '\n' ' '; }

# 1. The first preemption: every worker saves one step.
run j 100000 -1 20
eq "first preemption: every worker exits 42" "$RCS" "$(rcs_of $N 42)"
S1=$(same j $N exit saved_step)
expect "first preemption: one saved step ($S1)" one_step "$S1"
[ "$failures" -eq 0 ] || { show_logs j $N; finish; }
first=$(printf 'ckpt-%020d ' "$S1")

# 2. The second: worker 2 cannot write its shard. Every worker follows the
# job's one decision.
run j 100000 2 $((S1 + 20))
eq "failed save: every worker exits 75" "$RCS" "$(rcs_of $N 75)"
expect "worker 2's save failed for its reason" grep -q "File too large" "$TMP/j.2.err"
expect "worker 0 followed the job's decision" grep -q 'the job.s decision is "aborted' "$TMP/j.0.err"
for i in $(seq 0 $((N - 1))); do
    eq "worker $i still holds the previous checkpoint, and only it" "$(ckpts "$i")" "$first"
    expect "worker $i: nothing pending left behind" test -z "$(ls -A "$TMP/j/worker-$i" | grep -v '^ckpt-' | grep -v '^\.lock$')"
done
[ "$failures" -eq 0 ] || show_logs j $N

# 3. The restart resumes at the first preemption's step on every worker.
run j $((S1 + 10)) -1 0
eq "the restart trains to the end" "$RCS" "$(rcs_of $N 0)"
eq "the restart restores the previous checkpoint" "$(same j $N start restored_step)" "$S1"
finish
