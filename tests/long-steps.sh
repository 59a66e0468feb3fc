# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Synchronous steps longer than the etcd client's bounds, on a real etcd.
# A synchronous trainer runs the handler's loop only at its step boundaries:
# the time it spends inside a step must not count against a request's
# timeout, and its membership lease must outlive the step.
#
#   - 3 s steps with the default options (etcd_timeout_ms 2 s): version 0.1
#     let worker 0 exit 75 after 12 s while worker 1 never heard of the
#     notice and trained to the end (exit 0).
#   - 8 s steps with a 2 s lease, the shortest etcd keeps (the same ratio as
#     40 s steps with the default 10 s lease): the lease lapsed inside every
#     step.
#
# SIGTERM reaches worker 0 once both train; both must save one step and exit
# 42, and the restart must resume at that step. Slower cases (30 s and
# 120 s steps at the defaults) are `make check-long` (tests/long-steps.sh
# with LONG=1); they take about 4 and 15 minutes. Beside them, 60 s steps
# with two-phase checkpoints through Linux AIO (PREEMPT_PERSIST=aio), one
# at every step of a 64 MiB state: each persists at the boundary after its
# snapshot (a twentieth of a step's time is more than the whole) while the
# job trains on, and SIGTERM comes mid-step once the first has committed
# (about 12 minutes). Before, a periodic round assumed bound_ms (30 s) as
# its deadline: the first ended the run, 75 on both workers.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
trap 'bg_kill; job_kill; etcd_stop; rm -rf "$TMP"' EXIT

etcd_start longsteps || finish

# case TAG STEP_MS BOUND_S ARGS...: a job of 2 whose steps take STEP_MS.
case_run() {
    tag=$1 ms=$2 bound=$3
    shift 3
    # the kill delay: far enough for a save a few steps ahead (Slurm's
    # GraceTime or Kubernetes' terminationGracePeriodSeconds would give it)
    job_start "$tag" 2 --steps 100000 --step-ms "$ms" --kill-delay-ms $((ms * 12 + 20000)) "$@"
    for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
    # one whole step measured first on both (or, with CASE_READY, what
    # worker 0 prints at a boundary), then the signal arrives in the next
    # step: seen a poll (at most 50 ms) after the boundary, inside a step
    # of seconds
    if [ -n "${CASE_READY:-}" ]; then
        wait_for "$TMP/$tag.0.out" "$CASE_READY" "$bound"
    else
        job_trained 1 "$bound"
    fi
    kill -TERM "$(echo $PIDS | cut -d' ' -f1)"
    job_wait "$bound"
    eq "$tag: both workers exit 42" "$RCS" "42 42"
    step=$(same "$tag" 2 exit saved_step)
    expect "$tag: both saved one step ($step)" one_step "$step"
    case " $* " in *" --two-phase "*)
        expect "$tag: a checkpoint persisted while the job trained" grep -q '"to":"persisting"' "$TMP/$tag.0.out"
        expect "$tag: persisted with ${PREEMPT_PERSIST:-auto}, no fallback" \
            test -z "$(grep -l 'two-phase saves persist .* instead' "$TMP/$tag".*.err)" ;;
    esac
    [ "$failures" -eq 0 ] || show_logs "$tag" 2
    [ "$failures" -eq 0 ] || return
    # Steps longer than a third of the lease's TTL: the lease grew, granted
    # anew; the grant's answer is traced before the membership and claim
    # machines take it (job_wait replayed that), and without it they have
    # no cause.
    if [ "$ms" -ge 3000 ] && [ "$*" = "--lease-ttl 2" ]; then
        expect "$tag: worker 0's trace holds the new lease's grant" \
            grep -q '^answer t=[0-9]* grant status=0 ttl=[0-9]* => granted ttl=[0-9]*$' "$TMP/$tag.0.trace"
        expect "$tag: and the membership machine took it" \
            grep -q '^decl t=[0-9]* m=membership member --granted--> ' "$TMP/$tag.0.trace"
        grep -v '^answer t=[0-9]* grant ' "$TMP/$tag.0.trace" >"$TMP/$tag.nogrant"
        expect_rc 1 "$REPLAY" "$TMP/$tag.nogrant"
        expect_output "needs a lease's grant that says so read just before it"
    fi
    job_start "$tag" 2 --steps "$((step + 1))" --step-ms "$ms" "$@"
    job_wait "$bound"
    eq "$tag: the restart finishes" "$RCS" "0 0"
    eq "$tag: the restart resumes at the saved step" "$(same "$tag" 2 start restored_step)" "$step"
}

# The two cases run at once, two jobs on the one etcd (they wait far more
# than they compute): the shorter one beside the longer.
# aio_case ARGS...: case_run with two-phase saves through Linux AIO, the
# signal once the first periodic checkpoint has committed (in a bg_start
# subshell: the variables stay there)
aio_case() {
    PREEMPT_PERSIST=aio CASE_READY='"from":"persisting","to":"idle"'
    export PREEMPT_PERSIST
    case_run "$@" --two-phase --state-kb 65536 --save-every-steps 1
}

if [ "${LONG:-0}" = 1 ]; then
    bg_start s30 case_run s30 30000 600
    bg_start s60tp aio_case s60tp 60000 1200
    case_run s120 120000 1800
    bg_join s30
    bg_join s60tp
else
    bg_start s3 case_run s3 3000 120
    case_run s8 8000 300 --lease-ttl 2
    bg_join s3
fi
finish
