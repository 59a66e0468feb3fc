#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/loops.sh: the handler embedded in real event loops through its
# descriptor alone (preempt_handler_get_fd, _get_timeout, _process), as
# their users write it: GLib (g_unix_fd_add, a g_timeout re-armed from
# get_timeout after every step), libuv (uv_poll_t, uv_timer_t, uv_idle_t)
# and a plain poll(); each in two idioms, processing on readiness only and
# on every turn of the loop; and Python's asyncio through the package
# (h.attach() and await h.astep(), or astep alone); steps of 0, 1, 2 and
# 10 ms. Alone and as a
# two-worker job on a real etcd: SIGTERM to one worker, one save at one
# step on every worker, exit 42, and a restart that resumes exactly there;
# a preemption watcher in the same loop, through its own descriptor, sees
# the notice and the exit.
# The GLib readiness-only case with 2 ms steps is the one that starved:
# get_timeout() pushed the due timer forward on every call and the
# descriptor never became readable (its etcd watch never opened).
. "${top_srcdir:-.}/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
. "$top_srcdir/tests/python-lib.sh"

LT="$top_builddir/tests/loops/loop-trainer"
if [ ! -x "$LT" ]; then
    fail "$LT was not built: configure found no GLib or libuv (Debian: apt-get install libglib2.0-dev libuv1-dev; scripts/setup.sh does), run ./configure again"
    finish
fi
trap 'job_kill; etcd_stop; rm -rf "$TMP"' EXIT
etcd_start loops || finish

# lt TAG N I ARGS...: worker I of N of job TAG in the background (N = 1:
# no etcd), output in $TMP/TAG.I.out and .err; its pid is appended to $PIDS.
lt() {
    _tag=$1 _lt_n=$2 _i=$3
    shift 3
    : >"$TMP/$_tag.$_i.out"
    : >"$TMP/$_tag.$_i.err"
    if [ "$_lt_n" -gt 1 ]; then
        set -- "$@" --etcd "$ETCD_URL" --job "$_tag" --worker "$_i" --workers "$_lt_n"
    fi
    if [ "$c_loop" = asyncio ]; then
        "$EXEC" -- $PY "$top_srcdir/tests/loops/loop_trainer.py" --ckpt-dir "$TMP/$_tag.ckpt$_i" "$@" \
            >"$TMP/$_tag.$_i.out" 2>"$TMP/$_tag.$_i.err" &
    else
        "$LT" --ckpt-dir "$TMP/$_tag.ckpt$_i" "$@" >"$TMP/$_tag.$_i.out" 2>"$TMP/$_tag.$_i.err" &
    fi
    PIDS="$PIDS $!"
}

# start_all ARGS...: every worker of the case (one_case's variables).
start_all() {
    PIDS=
    i=0
    while [ "$i" -lt "$c_n" ]; do
        lt "$tag" "$c_n" "$i" --loop "$c_loop" --idiom "$c_idiom" --start "$c_start" --step-ms "$c_ms" "$@"
        i=$((i + 1))
    done
}

# val FILE KEY: the value of KEY= on FILE's last line that has it.
val() { sed -n "s/.*\\<$2=\\([^ ]*\\).*/\\1/p" "$1" | tail -n 1; }

# one_case LOOP IDIOM STEP_MS N SIGNALLED: a run preempted by SIGTERM to
# worker SIGNALLED, then the restart. Start-up is synchronous for steps of
# 0 and 2 ms (the handler then opens its watch on the loop, after
# training started), asynchronous for the others.
one_case() {
    c_loop=$1 c_idiom=$2 c_ms=$3 c_n=$4 c_sig=$5 c_f=$failures
    case $c_ms in 0 | 2) c_start=sync ;; *) c_start=async ;; esac
    tag=$c_loop-$c_idiom-$c_ms-$c_n
    what="$c_loop, $c_idiom, $c_start start, ${c_ms} ms steps, $c_n worker(s), SIGTERM to $c_sig"
    start_all --steps 100000000 --mark 20
    i=0
    while [ "$i" -lt "$c_n" ]; do
        wait_for "$TMP/$tag.$i.out" "started" 30 || break
        i=$((i + 1))
    done
    # a preemption watcher of the job in the same loop and idiom, through
    # its descriptor: it sees the notice and every worker's exit
    WPID=
    if [ "$c_n" -gt 1 ] && [ "$c_loop" != asyncio ]; then
        w=$(etcd_watchers)
        "$LT" --watch --loop "$c_loop" --idiom "$c_idiom" --etcd "$ETCD_URL" --job "$tag" \
            >"$TMP/$tag.watch" 2>&1 &
        WPID=$!
        wait_watchers $((w + 1)) 30 # it has read the job and watches it
    fi
    # training, timers due while steps run: 20 steps on every worker
    i=0
    while [ "$i" -lt "$c_n" ]; do
        wait_for "$TMP/$tag.$i.out" "trained n=20" 30 || break
        i=$((i + 1))
    done
    kill -TERM "$(echo $PIDS | cut -d' ' -f$((c_sig + 1)))"
    job_wait 30
    eq "$what: exit codes" "$RCS" "$(rcs_of "$c_n" 42)"
    if [ -n "$WPID" ]; then
        # it sees every worker's exit and ends
        reap 30 "$WPID"
        eq "$what: the watcher ends when the job has exited" "$?" 0
        expect "$what: the watcher saw the exit" grep -q "^exited incarnation=" "$TMP/$tag.watch"
        eq "$what: the watcher saw the notice" "$(grep '^notice ' "$TMP/$tag.watch" | head -n 1)" \
            "notice worker=$c_sig source=signal withdrawn=0"
    fi
    s0=$(val "$TMP/$tag.0.out" step)
    i=0
    while [ "$i" -lt "$c_n" ]; do
        # (a worker already past the proposed step raises it: a worker that
        # saved at the old step saves again at the new one, the job's one step)
        eq "$what: worker $i's save step" "$(val "$TMP/$tag.$i.out" step)" "$s0"
        i=$((i + 1))
    done
    expect "$what: a save step ($s0)" test -n "$s0"
    [ "$failures" -eq "$c_f" ] || { show_logs "$tag" "$c_n"; return; }
    # the restart: every worker restores the step exactly and trains 5 more
    start_all --more 5
    job_wait 30
    eq "$what: restart's exit codes" "$RCS" "$(rcs_of "$c_n" 0)"
    i=0
    while [ "$i" -lt "$c_n" ]; do
        eq "$what: worker $i restores the saved step exactly" \
            "$(grep '^restored ' "$TMP/$tag.$i.out")" "restored step=$s0 exact=1"
        eq "$what: worker $i trains on from it" "$(val "$TMP/$tag.$i.out" run)" $((s0 + 5))
        i=$((i + 1))
    done
    [ "$failures" -eq "$c_f" ] || show_logs "$tag" "$c_n"
}

# two_phase_case LOOP IDIOM: one worker with two-phase saves: a periodic
# checkpoint at run 5 persists on the loop while steps go on (its
# snapshot released once durable), then SIGTERM's save (awaited) and the
# restart from it. The persist's passes and its io_uring completions reach
# the loop only through the handler's descriptor and timeout.
two_phase_case() {
    c_loop=$1 c_idiom=$2 c_ms=2 c_n=1 c_start=sync c_f=$failures
    tag=tp-$c_loop-$c_idiom-$PREEMPT_PERSIST
    what="two-phase ($PREEMPT_PERSIST), $c_loop, $c_idiom"
    start_all --steps 100000000 --two-phase --checkpoint-at 5
    wait_for "$TMP/$tag.0.out" "released" 30
    grep -q '^persisting' "$TMP/$tag.0.out" && r=$(val "$TMP/$tag.0.out" run)
    expect "$what: the periodic checkpoint persisted while training went on (released at run ${r:-none})" \
        test "${r:-0}" -gt 6
    # shellcheck disable=SC2086 # the pid, unquoted (it has a leading space)
    kill -TERM $PIDS
    job_wait 30
    eq "$what: exit code" "$RCS" 42
    eq "$what: both snapshots released" "$(grep -c '^released' "$TMP/$tag.0.out")" 2
    s0=$(val "$TMP/$tag.0.out" step)
    start_all --more 5 --two-phase
    job_wait 30
    eq "$what: restart" "$RCS" 0
    eq "$what: restores the saved step exactly" "$(grep '^restored ' "$TMP/$tag.0.out")" "restored step=$s0 exact=1"
    [ "$failures" -eq "$c_f" ] || show_logs "$tag" 1
}
for loop in glib uv poll; do
    for idiom in ready every; do
        bes="io_uring chunked"
        [ "$loop" = glib ] && bes="io_uring aio chunked" # aio's completions: an eventfd, as io_uring's
        for be in $bes; do
            export PREEMPT_PERSIST=$be
            two_phase_case "$loop" "$idiom"
        done
    done
done
unset PREEMPT_PERSIST

# The case that starved first, then every loop, idiom and step length.
one_case glib ready 2 2 1
for loop in glib uv poll asyncio; do
    for idiom in ready every; do
        for ms in 0 1 2 10; do
            one_case "$loop" "$idiom" "$ms" 1 0
            [ "$loop.$idiom.$ms" = glib.ready.2 ] && continue
            one_case "$loop" "$idiom" "$ms" 2 $((ms % 3 == 0 ? 0 : 1))
        done
    done
done
finish
