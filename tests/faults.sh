# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Fault injection: each named fault point of the shell (lib/base/fault-internal.h)
# is failed in turn, at every hit once and from a hit on persistently, in the
# two main scenarios of the reference trainer: one worker alone, and two
# workers of a job on a real etcd. A run must end with one of the documented
# exit codes (docs/development.md, "Fault injection"), must not crash or trip the
# sanitizers (the CI's fault build is the sanitized distcheck build, where
# LeakSanitizer checks for leaks at every exit), and the armed fault must
# really have fired. Whatever the outcome, nothing is lost: a worker exits 42
# only with the agreed checkpoint committed, and the next start resumes after
# the newest committed checkpoint; a copy whose decision a worker could not
# learn stays pending, and the restart resolves it the same on both workers.
#
# Without --enable-faults the points are compiled out: the test then checks
# that arming one has no effect.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
trap 'bg_kill; etcd_stop; rm -rf "$TMP"' EXIT

run_trainer() { # DIR SPEC LOG ARGS...: the trainer with SPEC armed, bounded
    _d=$1 _spec=$2 _log=$3
    shift 3
    PREEMPT_FAULT=$_spec PREEMPT_FAULT_LOG=$_log timeout 120 "$TRAINER" --ckpt-dir "$_d" --step-ms 2 --verbose "$@"
}

if [ "${FAULTS:-no}" != yes ]; then
    PREEMPT_FAULT=alloc:1+ PREEMPT_FAULT_LOG=$TMP/fired expect_rc 42 "$TRAINER" --ckpt-dir "$TMP/off" --steps 100 \
        --raise-at 10
    expect "compiled out: an armed point does not fire" test ! -e "$TMP/fired"
    finish
fi

# sane FILE...: no sanitizer report and no crash in the workers' stderr
sane() {
    ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|Segmentation|Aborted' "$@"
}

# one_of WORD LIST...: WORD is one of LIST
one_of() {
    _w=$1
    shift
    for _x in "$@"; do [ "$_x" = "$_w" ] && return 0; done
    return 1
}

# ---- one worker alone -------------------------------------------------------
# The directory starts with a committed checkpoint at step 21; the faulted
# run is preempted during step 50 (its save is at 51).
SEED=$TMP/seed
expect_rc 42 "$TRAINER" --ckpt-dir "$SEED" --steps 100000 --step-ms 1 --raise-at 20
eq "seed checkpoint" "$(ls "$SEED")" ckpt-00000000000000000021

K=0
# seeded_run SPEC: the trainer with SPEC armed on a copy of the seed ($_d),
# preempted during step 50; its status in $_rc; 1 when the fault did not fire.
seeded_run() {
    K=$((K + 1))
    _d=$TMP/l$K
    cp -a "$SEED" "$_d"
    # shellcheck disable=SC2086 # $TWO_PHASE: the two-phase runs' option
    run_trainer "$_d" "$1" "$TMP/l$K.fired" --steps 100000 --raise-at 50 $TWO_PHASE >"$TMP/l$K.out" 2>"$TMP/l$K.err"
    _rc=$?
    [ -s "$TMP/l$K.fired" ]
}

# local SPEC ALLOWED...: one faulted run; returns 1 when the fault did not fire.
local_case() {
    _spec=$1
    shift
    seeded_run "$_spec" || return 1
    ok # it fired
    expect "$_spec: exit $_rc is one of $*" one_of "$_rc" "$@"
    expect "$_spec: no crash, leak or undefined behaviour" sane "$TMP/l$K.err"
    _want=21
    [ "$_rc" -eq 42 ] && _want=$(field "$TMP/l$K.out" exit saved_step)
    # the next start resumes after the newest committed checkpoint, and the
    # store has removed what an interrupted save left
    "$TRAINER" --ckpt-dir "$_d" --steps 1 >"$TMP/l$K.next" 2>&1
    eq "$_spec: exit $_rc, then the restart resumes at" "$(field "$TMP/l$K.next" start restored_step)" "$_want"
    eq "$_spec: no leftovers" "$(ls -A "$_d" | grep -v '^ckpt-' | grep -v '^\.lock$' | tr '\n' ' ')" ""
    [ "$failures" -eq 0 ] || { sed 's/^/    /' "$TMP/l$K.err" | tail -n 5; return 0; }
    return 0
}

# hit_of NAME FUNCTION ARGS...: runs it as a hit of a sweep named NAME
# (its runs' tags and jobs carry the name: $TAGP); its status in $TMP/rc
# (a bg_start case's).
hit_of() {
    TAGP=$1
    shift
    "$@"
    echo $? >"$TMP/rc"
}

# sweep SCENARIO POINT[+] ALLOWED...: fails hit 1, 2, ... once (POINT+:
# from that hit on) until the point is no longer reached; prints how many
# hits it took. With BATCH=N, N hits run at once, each a case of its own
# beside the others (bg_start: the job's runs mostly wait, for a bound or a
# lease; one after the other they were most of this test's time).
sweep() {
    _scen=$1 _pt=${2%+} _on=
    [ "$_pt" = "$2" ] || _on=+
    shift 2
    _n=1
    SWEEPS=$((${SWEEPS:-0} + 1))
    while [ "$_n" -le 400 ]; do
        if [ "${BATCH:-1}" -le 1 ]; then
            "${_scen}_case" "$_pt:$_n$_on" "$@" || break
            _n=$((_n + 1))
            continue
        fi
        _first=$_n _b=0
        while [ "$_b" -lt "$BATCH" ]; do
            _h=s${SWEEPS}h$((_first + _b)) # the hit's case: its name, its tag's part
            bg_start "$_h" hit_of "$_h" "${_scen}_case" "$_pt:$((_first + _b))$_on" "$@"
            _b=$((_b + 1))
        done
        _b=0
        while [ "$_b" -lt "$BATCH" ]; do
            _h=s${SWEEPS}h$((_first + _b))
            bg_join "$_h"
            # counted up to the first hit not reached (the later ones are not reached either)
            [ "$(cat "$TMP/$_h/rc" 2>/dev/null)" = 0 ] && [ "$_n" -eq "$((_first + _b))" ] && _n=$((_n + 1))
            _b=$((_b + 1))
        done
        [ "$_n" -eq "$((_first + BATCH))" ] || break
    done
    [ "$_n" -le 400 ] || fail "$_pt: still firing after 400 hits"
    expect "$_scen $_pt: reached at least once" test "$_n" -gt 1
    echo "$_scen: $_pt failed at each of its $((_n - 1)) hits${_on:+, and from each on}"
}

local_all() {
    TWO_PHASE=
    # libcurl cannot be loaded for a cloud metadata source (on loopback:
    # nothing is sent): the handler does not start, and says why
    run_trainer "$TMP/lc" libcurl:1 "$TMP/lc.fired" --steps 10 --platform gce --metadata-url http://127.0.0.1:9 \
        >"$TMP/lc.out" 2>"$TMP/lc.err"
    eq "libcurl:1, a cloud source: exit" "$?" 2
    expect "libcurl:1, a cloud source: it fired" test -s "$TMP/lc.fired"
    expect "libcurl:1, a cloud source: the trainer says why" grep -q 'cannot load libcurl, which a cloud' "$TMP/lc.err"
    expect "libcurl:1, a cloud source: no crash, leak or undefined behaviour" sane "$TMP/lc.err"
    sweep local alloc 2 42 75
    local_case alloc:1+ 2 || fail "alloc:1+ did not fire"
    for p in write fsync rename; do
        sweep local "$p" 75
        local_case "$p:1+" 75 || fail "$p:1+ did not fire"
    done
    local_case signalfd:1 2 || fail "signalfd:1 did not fire"   # creating it: the handler does not start
    local_case signalfd:2 42 || fail "signalfd:2 did not fire"  # reading it: taken as a notice
    local_case signalfd:2+ 42 || fail "signalfd:2+ did not fire"
    sweep local timer 42 75                                       # a timer that cannot be armed fires now
    local_case timer:1+ 42 75 || fail "timer:1+ did not fire"
    two_phase_all
}

# ---- one worker alone, two-phase saves, with each persist backend -------------
# The same faults in the snapshot's files, the persist's writes and data
# fsyncs and the commit; then a SIGKILL at each of those hits (POINT:N!):
# a crash in every phase of a persist. The restart resumes at the seed's
# step or, when the kill came after the rename, at the step being saved;
# never anything else, and nothing of the unfinished save is left.
# kill_case SPEC: one run killed at SPEC's hit; 1 when it was not reached.
kill_case() {
    seeded_run "$1" || return 1
    eq "$1: killed" "$_rc" 137
    _s=$(field "$TMP/l$K.out" save-begin step)
    "$TRAINER" --ckpt-dir "$_d" --steps 1 >"$TMP/l$K.next" 2>&1
    _r=$(field "$TMP/l$K.next" start restored_step)
    expect "$1 (killed while saving $_s): the restart resumes at 21 or $_s ($_r)" one_of "$_r" 21 "$_s"
    eq "$1: no leftovers" "$(ls -A "$_d" | grep -v '^ckpt-' | grep -v '^\.lock$' | tr '\n' ' ')" ""
    return 0
}
two_phase_all() {
    for be in io_uring aio chunked; do
        export PREEMPT_PERSIST=$be
        TWO_PHASE=--two-phase
        for p in write fsync rename; do
            sweep local "$p" 75
            _n=1
            while kill_case "$p:$_n!"; do _n=$((_n + 1)); [ "$_n" -le 100 ] || break; done
            expect "two-phase $be: $p killed at each of its $((_n - 1)) hits" test "$_n" -gt 1
        done
    done
    # io_uring and Linux AIO cannot be set up (a seccomp profile): the
    # persist gives way to the next backend, named or not, and the save
    # commits (it failed, 75, where a backend was named)
    TWO_PHASE=--two-phase
    for be in io_uring aio auto; do
        export PREEMPT_PERSIST=$be
        local_case io-setup:1+ 42 || fail "io-setup:1+ ($be) did not fire"
        expect "io-setup:1+ ($be): the trainer says it persists in chunks instead" \
            grep -q 'two-phase saves persist in chunks from the loop instead' "$TMP/l$K.err"
    done
    unset PREEMPT_PERSIST
    TWO_PHASE=
}

# ---- a chunked persist that waits for its chunks' write-back ------------------
# A final two-phase save of 39 MiB, chunked, while the trainer waits: before
# it drops a chunk two behind from the page cache, the persist waits for its
# write-back. A write-back error is reported to that wait and taken by it
# (the file's fdatasync() would not see it again), so each wait is an fsync
# hit whose failure fails the save: not saved (75), nothing committed, the
# restart resumes at the seed. A wait whose error was dropped committed (42).
big_all() {
    _seed=$TMP/bigseed
    expect_rc 42 "$TRAINER" --ckpt-dir "$_seed" --steps 100000 --step-ms 1 --raise-at 20 --state-kb 40000
    _n=1
    while [ "$_n" -le 40 ]; do
        _d=$TMP/big$_n
        cp -a "$_seed" "$_d"
        PREEMPT_PERSIST=chunked run_trainer "$_d" "fsync:$_n" "$_d.fired" --steps 100000 --raise-at 50 \
            --two-phase --state-kb 40000 >"$_d.out" 2>"$_d.err"
        _rc=$?
        [ -s "$_d.fired" ] || break
        eq "39 MiB chunked, fsync:$_n: not saved" "$_rc" 75
        "$TRAINER" --ckpt-dir "$_d" --steps 1 --state-kb 40000 >"$_d.next" 2>&1
        eq "39 MiB chunked, fsync:$_n: the restart resumes at the seed" \
            "$(field "$_d.next" start restored_step)" 21
        expect "39 MiB chunked, fsync:$_n: no crash, leak or undefined behaviour" sane "$_d.err"
        rm -rf "$_d"
        _n=$((_n + 1))
    done
    # the file's data fsync, the commit's, and the waits (three: chunks 0-2)
    expect "39 MiB chunked: the waits are fsync hits ($((_n - 1)) in all)" test "$_n" -gt 5
}

# ---- two workers of a job on etcd ---------------------------------------------

# ckpts DIR committed|pending: how many checkpoints of the job's workers
# under DIR are committed, or pending (written, the job's decision not
# known to the worker: a .pending marker).
ckpts() {
    _c=0
    for _k in "$1"/worker-*/ckpt-*; do
        [ -d "$_k" ] || continue
        if [ -e "$_k/.pending" ]; then
            [ "$2" = pending ] && _c=$((_c + 1))
        else
            [ "$2" = committed ] && _c=$((_c + 1))
        fi
    done
    echo "$_c"
}

# restart_job TAG: both workers of job TAG start again without a fault and
# restore; with --steps 1 they then end (bounded).
restart_job() {
    for _i in 0 1; do
        timeout 120 "$TRAINER" --ckpt-dir "$TMP/$1" --step-ms 2 --steps 1 --etcd "$ETCD_URL" --job "$1" \
            --worker "$_i" --workers 2 --lease-ttl 2 --join-timeout-ms 30000 >"$TMP/$1.$_i.next" 2>"$TMP/$1.$_i.next-err" &
        eval "_q$_i=\$!"
    done
    wait "$_q0" # bounded: timeout 120
    wait "$_q1" # bounded: timeout 120
}
# etcd SPEC ALLOWED...: both workers armed, worker 0 preempted during step 50
# of 2000 (a worker that never hears of it trains on to the end: 0). The
# notice's deadline is 8 s away (--kill-delay-ms): a worker with a notice
# of its own retries an unreachable etcd up to it (bound_ms' default, 30 s,
# made each of the persistent etcd failures that reach a claim wait 30 s:
# 4 of the sweep's 14 cases, half of this test's time).
etcd_case() {
    _spec=$1
    shift
    K=$((K + 1))
    _tag=e${TAGP:-}$K
    for _i in 0 1; do
        _ra=
        [ "$_i" -eq 0 ] && _ra="--raise-at 50"
        run_trainer "$TMP/$_tag" "$_spec" "$TMP/$_tag.$_i.fired" --steps 2000 --etcd "$ETCD_URL" --job "$_tag" --worker "$_i" \
            --workers 2 --lease-ttl 2 --agree-timeout-ms 3000 --join-timeout-ms 5000 --kill-delay-ms 8000 $_ra \
            >"$TMP/$_tag.$_i.out" 2>"$TMP/$_tag.$_i.err" &
        eval "_p$_i=\$!"
    done
    wait "$_p0" # bounded: run_trainer's timeout
    _r0=$?
    wait "$_p1" # bounded: run_trainer's timeout
    _r1=$?
    [ -s "$TMP/$_tag.0.fired" ] || [ -s "$TMP/$_tag.1.fired" ] || return 1
    ok # it fired
    expect "$_spec: exits $_r0 $_r1 are among $*" one_of "$_r0" "$@"
    expect "$_spec: exits $_r0 $_r1 are among $*" one_of "$_r1" "$@"
    expect "$_spec: no crash, leak or undefined behaviour" sane "$TMP/$_tag.0.err" "$TMP/$_tag.1.err"
    _s0=$(field "$TMP/$_tag.0.out" exit saved_step)
    _s1=$(field "$TMP/$_tag.1.out" exit saved_step)
    if [ "$_r0" -eq 42 ] || [ "$_r1" -eq 42 ]; then
        eq "$_spec: a saved exit only when both saved, at one step" "$_r0 $_r1 $_s1" "42 42 $_s0"
        for _i in 0 1; do
            expect "$_spec: worker $_i's checkpoint at $_s0 is there" \
                test -d "$TMP/$_tag/worker-$_i/$(printf 'ckpt-%020d' "$_s0")"
        done
    elif [ "$_r0" -eq 0 ] || [ "$_r1" -eq 0 ]; then
        # the other did not start, or could not tell the job: it trained on
        expect "$_spec: exits $_r0 $_r1: the one that did not train to the end did not save" \
            one_of "$_r0$_r1" 02 20 075 750
    else
        # Not saved: nothing committed. A worker that reported its shard
        # and could not learn the job's decision (etcd failing) keeps its
        # copy pending; the restart follows the decision record, the same
        # on both workers, and leaves nothing pending.
        eq "$_spec: nothing committed" "$(ckpts "$TMP/$_tag" committed)" 0
        if [ "$(ckpts "$TMP/$_tag" pending)" -gt 0 ]; then
            restart_job "$_tag"
            _s0=$(field "$TMP/$_tag.0.next" start restored_step)
            _s1=$(field "$TMP/$_tag.1.next" start restored_step)
            expect "$_spec: the restart of a pending copy restores one step on both workers ($_s0, $_s1)" \
                test -n "$_s0" -a "$_s0" = "$_s1"
            eq "$_spec: the restart resolved every pending copy" "$(ckpts "$TMP/$_tag" pending)" 0
            echo "$_spec: not saved, a copy left pending; the restart restored step $_s0 on both workers"
        fi
    fi
    [ "$failures" -eq 0 ] || { tail -n 5 "$TMP/$_tag.0.err" "$TMP/$_tag.1.err" | sed 's/^/    /'; }
    return 0
}

# The job's cases, three hits of a sweep at a time, each job its own
# (e<K>, a sweep's hit e<sweep and hit>1), all on the one etcd.
etcd_all() {
    BATCH=3
    sweep etcd etcd 42                # a lost reply is retried (also one that etcd applied)
    sweep etcd etcd+ 0 2 42 75        # persistently: joining or coordination fails within its bound
    sweep etcd watch 42               # a broken stream is re-opened
    BATCH=
    etcd_case watch:1+ 42 || fail "watch:1+ did not fire" # records are read on the keep-alive tick instead
    for p in write fsync rename; do
        etcd_case "$p:1" 75 || fail "$p:1 did not fire"   # one shard fails: nobody commits
        etcd_case "$p:1+" 75 || fail "$p:1+ did not fire"
    done
    etcd_case signalfd:2 42 || fail "signalfd:2 did not fire"
    etcd_case timer:1 75 || fail "timer:1 did not fire"   # the agreement's bound ends at once
    etcd_case timer:1+ 75 || fail "timer:1+ did not fire"
    # libcurl cannot be loaded (not installed): the job does not start, and says why
    etcd_case libcurl:1 2 || fail "libcurl:1 did not fire"
    expect "libcurl:1: the worker says why it cannot start" grep -q 'cannot load libcurl' "$TMP/$_tag.0.err"
    # allocations: a sample of hits (a run makes about 150)
    for n in 1 2 3 5 8 13 21 34 55 89 144; do
        etcd_case "alloc:$n" 0 2 42 75 || break
    done
    etcd_case alloc:30+ 0 2 75 || fail "alloc:30+ did not fire"
}

# The job's cases mostly wait: they run beside one worker's.
etcd_start faults || finish
bg_start job etcd_all
local_all
big_all
bg_join job
finish
