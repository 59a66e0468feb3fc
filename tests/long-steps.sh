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
# with LONG=1); they take about 4 and 15 minutes.
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
    # one whole step measured first, then the signal arrives mid-step
    sleep "$(awk -v ms="$ms" 'BEGIN { printf "%.3f", ms * 1.5 / 1000 }')"
    kill -TERM "$(echo $PIDS | cut -d' ' -f1)"
    job_wait "$bound"
    eq "$tag: both workers exit 42" "$RCS" "42 42"
    step=$(same "$tag" 2 exit saved_step)
    expect "$tag: both saved one step ($step)" one_step "$step"
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
if [ "${LONG:-0}" = 1 ]; then
    bg_start s30 case_run s30 30000 600
    case_run s120 120000 1800
    bg_join s30
else
    bg_start s3 case_run s3 3000 120
    case_run s8 8000 300 --lease-ttl 2
    bg_join s3
fi
finish
