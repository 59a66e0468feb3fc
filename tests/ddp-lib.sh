# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/ddp-lib.sh: jobs of examples/pytorch_ddp.py's ranks on the test
# etcd (sourced after tests/lib.sh, etcd-lib.sh and job-lib.sh; the
# caller's EXIT trap calls job_kill), W ranks (4) of STEPS steps (200):
#   ranks TAG ARGS...          the W ranks of job TAG (job-lib's PIDS, a
#                              "step" line each step)
#   reference TAG ARGS...      an uninterrupted run's digest in $REF
#   preempt TAG one|all ARGS...  SIGTERM 20 steps in; the saved step in $S
#   restart TAG ARGS...        the run again, resuming $S
#   logs TAG                   what the ranks said (on a failure)
. "$top_srcdir/tests/python-lib.sh"
DDP="$top_srcdir/examples/pytorch_ddp.py"
W=${W:-4}
STEPS=${STEPS:-200}
export PYTHONFAULTHANDLER=1 # a rank ended by a fatal signal (a watchdog's SIGABRT) prints its threads' stacks

# ranks TAG ARGS...: the W ranks of job TAG, on a fresh gloo port. Each
# rank traces its run (TAG.N.trace.<rank>, N counting the runs), and
# job_wait replays every rank's trace with every rule of preempt-replay.
RUNS=0
ranks() {
    _t=$1
    shift
    _port=$(free_port 10000 9950)
    RUNS=$((RUNS + 1))
    JOB_TAG=$_t JOB_N=$W JOB_TRACES=$TMP/$_t.$RUNS.trace
    PIDS=
    for r in $(seq 0 $((W - 1))); do
        PREEMPT_TERMINATION_LOG="$TMP/$_t.$r.term.json" "$EXEC" -- $PY "$DDP" --ckpt-dir "$TMP/$_t" --etcd "$ETCD_URL" --job "$_t" --rank "$r" --world $W \
            --master-port $_port --trace "$JOB_TRACES" --print-steps "$@" >"$TMP/$_t.$r.out" 2>"$TMP/$_t.$r.err" &
        PIDS="$PIDS $!"
    done
}
logs() {
    for r in $(seq 0 $((W - 1))); do echo "--- $1 rank $r"; tail -n "${LOG_LINES:-6}" "$TMP/$1.$r.err" | sed 's/^/    /'; done
    [ ! -s "$TMP/$1.stacks" ] || { echo "--- $1: the C stacks of the ranks still there"; sed 's/^/    /' "$TMP/$1.stacks"; }
}

# reference TAG ARGS...: an uninterrupted run's digest in $REF.
reference() {
    _t=$1
    shift
    ranks "$_t" --steps $STEPS "$@"
    job_wait 120
    eq "$_t: an uninterrupted run completes" "$RCS" "$(rcs_of $W 0)"
    REF=$(same "$_t" $W done digest)
    expect "$_t: one digest ($REF)" one_step "$REF"
    [ "$failures" -eq 0 ] || { logs "$_t"; finish; }
}

# preempt TAG WHO ARGS...: SIGTERM to rank 1 (WHO=one) or to every rank
# (all) a moment into training; then the restart.
preempt() {
    _t=$1 _who=$2
    shift 2
    ranks "$_t" --steps $STEPS --step-ms 10 "$@"
    for r in $(seq 0 $((W - 1))); do wait_for "$TMP/$_t.$r.out" '"event":"start"' 60 || { logs "$_t"; finish; }; done
    job_trained 20
    # shellcheck disable=SC2086 # the pids, split
    if [ "$_who" = one ]; then set -- $PIDS; kill -TERM "$2"; else kill -TERM $PIDS; fi
    job_wait 120
    eq "$_t: every rank saved and exits 42" "$RCS" "$(rcs_of $W 42)"
    S=$(same "$_t" $W exit saved_step)
    expect "$_t: one saved step ($S)" sh -c "test -n '$S' && test '${S#differs}' = '$S' && test '$S' -gt 0 && test '$S' -lt $STEPS"
    [ "$failures" -eq 0 ] || { logs "$_t"; return; }
}
restart() { # TAG ARGS...
    _t=$1
    shift
    ranks "$_t" --steps $STEPS "$@"
    job_wait 120
    eq "$_t: the restart completes" "$RCS" "$(rcs_of $W 0)"
    eq "$_t: every rank resumed at the saved step" "$(same "$_t" $W start restored_step)" "$S"
}

