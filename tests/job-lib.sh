# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/job-lib.sh: a job of reference trainers on the test etcd (sourced
# after tests/lib.sh and tests/etcd-lib.sh; the caller's EXIT trap should
# call job_kill).
#
#   job_start TAG N ARGS...   workers 0..N-1 of job TAG on $ETCD_URL
#   job_trained K [SECONDS]   every worker has trained K steps since it started
#   job_wait SECONDS          bounded wait; exit statuses in $RCS
#   same TAG N EVENT KEY      one value for every worker, or "differs: ..."
#   one_step V                V (what same printed) is one value
#   show_logs TAG N           what the workers said (on a failure)
PIDS=
# shellcheck disable=SC2086 # the pids, split
job_kill() { kill_ours KILL $PIDS; }

# job_start TAG N ARGS...: starts workers 0..N-1 of job TAG (checkpoints in
# $TMP/TAG). Worker i writes $TMP/TAG.i.out and .err; pids in $PIDS. Worker
# i also gets the words of $JOB_ARGS_i, when set (one slow disk, ...).
job_start() {
    _tag=$1 _n=$2
    JOB_TAG=$1 JOB_N=$2 JOB_TRACES= # job_wait replays the workers' traces
    shift 2
    PIDS=
    _i=0
    while [ "$_i" -lt "$_n" ]; do
        eval "_own=\${JOB_ARGS_$_i-}"
        # emptied here, before the worker starts: its own redirections run in
        # the child, later, and a wait_for meanwhile would read the output of
        # the tag's previous job
        : >"$TMP/$_tag.$_i.out"
        : >"$TMP/$_tag.$_i.err"
        # shellcheck disable=SC2086 # the worker's own words
        "$TRAINER" --etcd "$ETCD_URL" --job "$_tag" --worker "$_i" --workers "$_n" --ckpt-dir "$TMP/$_tag" \
            --verbose --print-steps --trace "$TMP/$_tag.$_i.trace" "$@" $_own >"$TMP/$_tag.$_i.out" 2>"$TMP/$_tag.$_i.err" &
        PIDS="$PIDS $!"
        _i=$((_i + 1))
    done
}

# job_trained K [SECONDS]: waits (bounded, 60 s by default) until every
# worker of the last job_start has trained K steps in this process (its
# "step" lines): a notice then comes while the job trains, whatever the
# machine's speed.
job_trained() {
    _jt=0
    while [ "$_jt" -lt "$JOB_N" ]; do
        wait_lines "$TMP/$JOB_TAG.$_jt.out" '"event":"step"' "$1" "${2:-60}" || return 1
        _jt=$((_jt + 1))
    done
}

# job_wait SECONDS: waits for every worker (bounded); their statuses in $RCS.
# Then every worker's trace of the job must replay (preempt-replay: the
# machine's records, the job's records through the view, the declared
# machines' transitions, and each event the job told the machine against
# the record behind it), whatever the case did to the job, and no worker
# logged an input posted by a link that does not declare it.
job_wait() {
    # shellcheck disable=SC2086 # the pids, split
    if ! poll "$1" none_alive $PIDS; then
        fail "workers still running after $1 s; their C stacks, then killed"
        show_stacks $PIDS 2>&1 | sed 's/^/    /' # where each waits (gdb, where installed)
        job_kill
    fi
    RCS=
    for _p in $PIDS; do
        wait "$_p" # bounded: the poll above, or SIGKILL
        RCS="$RCS $?"
    done
    RCS=${RCS# }
    _i=0
    while [ "$_i" -lt "${JOB_N:-0}" ]; do
        # JOB_TRACES: the traces' prefix when they are PREFIX.<worker> (the
        # PyTorch example's --trace), else $TMP/TAG.<worker>.trace
        _tr=${JOB_TRACES:+$JOB_TRACES.$_i}
        _tr=${_tr:-$TMP/$JOB_TAG.$_i.trace}
        if [ ! -s "$_tr" ]; then
            : # a worker that did not start writes none
        elif "$REPLAY" --quiet "$_tr" >"$TMP/job-replay.out" 2>&1; then
            ok
        else
            fail "job $JOB_TAG: worker $_i's trace does not replay: $(head -c 1500 "$TMP/job-replay.out")"
        fi
        # and the coordinator posted no input that its link does not declare
        # (lib/job/links-internal.h: the drawing of fsmdump --machine job is the wiring)
        ! grep -s "bug: link " "$TMP/$JOB_TAG.$_i.err" || fail "job $JOB_TAG: worker $_i posted an undeclared link"
        _i=$((_i + 1))
    done
}

# same TAG N EVENT KEY: prints the value when every worker's last EVENT
# line has the same KEY, else "differs: ...".
same() {
    _v= _all=
    _i=0
    while [ "$_i" -lt "$2" ]; do
        _x=$(field "$TMP/$1.$_i.out" "$3" "$4")
        _all="$_all $_x"
        [ "$_i" -eq 0 ] && _v=$_x
        [ "$_x" = "$_v" ] || _v=differs
        _i=$((_i + 1))
    done
    [ "$_v" = differs ] && echo "differs:$_all" || echo "$_v"
}

one_step() { [ -n "$1" ] && [ "${1#differs}" = "$1" ]; } # V: what same printed is one value

# saved_one_step TAG N LABEL: after job_wait, every worker exited 42 and
# saved one step, which is left in $step.
saved_one_step() {
    eq "$3: every worker exits 42" "$RCS" "$(rcs_of "$2" 42)"
    step=$(same "$1" "$2" exit saved_step)
    expect "$3: one save step ($step)" one_step "$step"
}

rcs_of() { # N CODE: the expected $RCS
    _s= _i=0
    while [ "$_i" -lt "$1" ]; do _s="$_s $2"; _i=$((_i + 1)); done
    echo "${_s# }"
}

rand() { echo $(($1 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % ($2 - $1 + 1))); }

show_logs() { # TAG N: on a failure, what the workers said and did
    _i=0
    while [ "$_i" -lt "$2" ]; do
        echo "--- $1 worker $_i"; tail -n 40 "$TMP/$1.$_i.err" | sed 's/^/    /'
        echo "--- $1 worker $_i: the machine's trace (last records)"
        tail -n 25 "$TMP/$1.$_i.trace" 2>/dev/null | sed 's/^/    /'
        _i=$((_i + 1))
    done
}

