# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Who the members of a job are, on a real etcd with real processes, as
# operators get it wrong: a second job with the same name (another launch,
# or no launch id at all), a duplicate worker index, a different worker
# count, a worker that gave up joining, and an etcd restored from an older
# snapshot or wiped while the job runs. Each mistake is a clear error on the
# newcomer, within a few seconds, with nothing of the running job touched;
# the running job still saves and resumes; a lone worker never completes
# the start-up barrier against a ghost; after etcd went back in time, the
# next notice still reaches every worker.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
trap 'job_kill; kill_ours KILL $NEWPID; etcd_stop; rm -rf "$TMP"' EXIT
unset PREEMPT_LAUNCH_ID SLURM_JOB_ID TORCHELASTIC_RUN_ID
NEWPID=

etcd_start identity || finish
ARGS="--step-ms 20 --lease-ttl 2 --agree-timeout-ms 5000"

# newcomer TAG ARGS...: one more worker of job "a", in the foreground
# (bounded), its checkpoints in $TMP/TAG; status in $rc, time in $secs.
newcomer() {
    _t=$1
    shift
    _s=$(date +%s)
    "$TRAINER" --etcd "$ETCD_URL" --job a --ckpt-dir "$TMP/$_t" --steps 1000000 --join-timeout-ms 20000 \
        --verbose $ARGS "$@" >"$TMP/$_t.out" 2>"$TMP/$_t.err" &
    NEWPID=$!
    reap 15 "$NEWPID"
    rc=$?
    secs=$(($(date +%s) - _s))
}

# refused TAG TEXT: the newcomer TAG was refused at creation, quickly, for
# its reason, and created nothing in its checkpoint directory.
refused() {
    eq "$1: refused at creation (exit 2)" "$rc" 2
    expect "$1: refused within 15 s (took $secs s)" test "$secs" -lt 15
    expect "$1: says why ('$2')" grep -q "$2" "$TMP/$1.err"
    expect "$1: wrote no checkpoint" test -z "$(ls "$TMP/$1/worker-0" 2>/dev/null | grep '^ckpt-')"
    [ "$failures" -eq 0 ] || sed 's/^/    /' "$TMP/$1.err" | grep -v debug | tail -5
}

# 1. Job "a", launch A, two workers, training.
job_start a 2 --launch-id A --steps 1000000 $ARGS
for i in 0 1; do wait_for "$TMP/a.$i.err" "joined job a" 20 || { show_logs a 2; finish; }; done
APIDS=$PIDS

# 2. A second job with the same name, of another launch: both of its
# workers are refused at once. (Before: its worker 0 took the name over
# with a new incarnation, and both trained beside job a.)
newcomer b0 --launch-id B --worker 0 --workers 2
refused b0 "in use by another launch"

# 3. The same without launch ids: the index is held by a live process.
newcomer c0 --worker 0 --workers 2
refused c0 "taken by a live process"

# 4. A duplicate worker index in the same launch.
newcomer d1 --launch-id A --worker 1 --workers 2
refused d1 "taken by a live process"

# 5. A different worker count.
newcomer e2 --launch-id A --worker 2 --workers 3
refused e2 "this worker has workers=3"

# 5b. A job whose shape record (its worker count) holds no worker count,
# as a hand edit leaves it: the worker says what the record holds (before:
# "workers=, but this worker has workers=2", a count it did not hold).
etcdctl --endpoints="$ETCD_URL" put /preempt/h/incarnation 4 >/dev/null
etcdctl --endpoints="$ETCD_URL" put /preempt/h/4/shape workers=abc >/dev/null
"$TRAINER" --etcd "$ETCD_URL" --job h --ckpt-dir "$TMP/h" --steps 1000000 --join-timeout-ms 20000 --verbose $ARGS \
    --worker 0 --workers 2 >"$TMP/h.out" 2>"$TMP/h.err" &
NEWPID=$!
reap 15 "$NEWPID"
eq "h: a shape record of garbage: refused (exit 2)" "$?" 2
expect "h: says what the record holds" grep -q 'incarnation 4.s record (it has) holds "workers=abc"' "$TMP/h.err"
eq "h: the record stays as it was" "$(etcdctl --endpoints="$ETCD_URL" get --print-value-only /preempt/h/4/shape)" \
    workers=abc
[ "$failures" -eq 0 ] || sed 's/^/    /' "$TMP/h.err" | grep -v debug | tail -5

# 6. Job a noticed none of it: a preemption saves one step on both workers.
kill -TERM $(echo $APIDS | cut -d' ' -f1)
PIDS=$APIDS
job_wait 60
eq "job a: both workers exit 42 after all that" "$RCS" "42 42"
S=$(same a 2 exit saved_step)
expect "job a: one saved step ($S)" one_step "$S"
[ "$failures" -eq 0 ] || { show_logs a 2; finish; }

# 7. A worker that gave up joining leaves no member behind: a lone worker
# never completes the barrier against it (before: worker 1 trained alone
# from the ghost's offer).
job_start_one() { # I TIMEOUT STEPS
    "$TRAINER" --etcd "$ETCD_URL" --job a --launch-id A --worker "$1" --workers 2 --ckpt-dir "$TMP/a" \
        --join-timeout-ms "$2" --steps "$3" --verbose $ARGS >"$TMP/a.$1.out" 2>"$TMP/a.$1.err" &
    PIDS=$!
}
job_start_one 0 1500 $((S + 50))
job_wait 20
eq "a lone worker 0 gives up joining" "$RCS" 2
job_start_one 1 3000 $((S + 50))
job_wait 20
eq "a lone worker 1 does not train against worker 0's ghost" "$RCS" 2
expect "it says so" grep -q "not every worker (2) joined" "$TMP/a.1.err"
eq "worker 1 still holds the saved step" "$(ls "$TMP/a/worker-1" | grep -c "ckpt-0*$S\$")" 1
[ "$failures" -eq 0 ] || show_logs a 2

# 8. Both together: they join, restore the saved step and train on.
job_start a 2 --launch-id A --steps $((S + 50)) $ARGS
job_wait 60
eq "together: both train to the end" "$RCS" "0 0"
eq "together: both restore the saved step" "$(same a 2 start restored_step)" "$S"
[ "$failures" -eq 0 ] || show_logs a 2

# 8b. A worker killed after it joined, before its incarnation started (as
# preempt-launch's regroup kills one it had just started again): its lease
# outlives it, the barrier counts it with the other two (a checkpoint to
# restore), and they wait in the restore barrier for its restore. Its
# replacement, of the same launch, takes its place there; the job trains
# to its end. (Before: it found its own joined record in a started
# incarnation, opened the next one, and every worker timed out, exit 2:
# seen in a fresh-clone CI run of collective.sh's crash case.)
KARGS="--launch-id K --step-ms 1 --lease-ttl 8 --join-timeout-ms 30000 --save-every-steps 100"
job_start k 3 --steps 300 $KARGS
job_wait 60
eq "k: the first life trains to its end" "$RCS" "0 0 0"
"$TRAINER" --etcd "$ETCD_URL" --job k --worker 0 --workers 3 --ckpt-dir "$TMP/k" --steps 600 $KARGS \
    >"$TMP/k.ghost.out" 2>"$TMP/k.ghost.err" &
NEWPID=$!
k_key() { etcdctl --endpoints="$ETCD_URL" get --print-value-only "/preempt/k/2/$1" | grep -q .; }
wait_until 20 "k: worker 0 joined incarnation 2" k_key w/alive/0
kill -KILL "$NEWPID"
reap 10 "$NEWPID"
_w12() { # workers 1 and 2 of job k, while worker 0's lease outlives it
    PIDS=
    for i in 1 2; do
        "$TRAINER" --etcd "$ETCD_URL" --job k --worker $i --workers 3 --ckpt-dir "$TMP/k" --steps 600 --verbose \
            --print-steps $KARGS >"$TMP/k.$i.out" 2>"$TMP/k.$i.err" &
        PIDS="$PIDS $!"
    done
}
_w12
wait_until 20 "k: workers 1 and 2 pass the barrier counting worker 0's dead process" k_key ready
"$TRAINER" --etcd "$ETCD_URL" --job k --worker 0 --workers 3 --ckpt-dir "$TMP/k" --steps 600 --verbose --print-steps \
    $KARGS >"$TMP/k.0.out" 2>"$TMP/k.0.err" &
PIDS="$! $PIDS"
JOB_TAG=k JOB_N=3
job_wait 90
eq "k: the replacement takes the dead process's place: the job trains to its end" "$RCS" "0 0 0"
expect "k: every worker joined incarnation 2" sh -c "grep -h 'joined job k' $TMP/k.0.err $TMP/k.1.err $TMP/k.2.err | grep -c 'incarnation 2;' | grep -qx 3"
[ "$failures" -eq 0 ] || show_logs k 3

# 9. etcd goes back in time while a job trains: restored from an older
# snapshot, then wiped. Each time, the next notice reaches both workers
# (before: the watches re-opened at a revision the store had not reached
# and stayed silent; worker 0 exited 75 and worker 1 trained on).
back_in_time() { # HOW: snapshot | wipe
    job_start g 2 --launch-id G --steps 1000000 $ARGS
    for i in 0 1; do wait_for "$TMP/g.$i.err" "joined job g" 20 || return; done
    if [ "$1" = snapshot ]; then
        etcdctl --endpoints="$ETCD_URL" snapshot save "$TMP/snap.db" >/dev/null 2>&1 || fail "snapshot save"
    fi
    # Later writes that the workers see (their watch's revision moves past
    # the snapshot's): records of the job that no worker acts on.
    inc=$(etcdctl --endpoints="$ETCD_URL" get /preempt/g/incarnation --print-value-only)
    for k in $(seq 1 40); do etcdctl --endpoints="$ETCD_URL" put "/preempt/g/$inc/noise" "$k" >/dev/null; done
    # every worker has seen the later revisions (its trace has the last)
    for i in 0 1; do wait_for "$TMP/g.$i.trace" "k=/preempt/g/$inc/noise v=40 " 30; done
    ups0=$(grep -c 'up (created)' "$TMP/g.0.err") ups1=$(grep -c 'up (created)' "$TMP/g.1.err")
    etcd_stop
    rm -rf "$ETCD_DIR/data"
    if [ "$1" = snapshot ]; then
        _p=$((ETCD_CPORT + ETCD_PEER_OFFSET))
        etcdctl snapshot restore "$TMP/snap.db" --name "$ETCD_NAME" --data-dir "$ETCD_DIR/data" \
            --initial-cluster "$ETCD_NAME=http://127.0.0.1:$_p" \
            --initial-advertise-peer-urls "http://127.0.0.1:$_p" >/dev/null 2>&1 || fail "snapshot restore"
    fi
    etcd_restart
    # Both watches are up again (while one is down, the worker reads the
    # records on every keep-alive tick instead, which would hide the bug).
    wait_lines "$TMP/g.0.err" 'up (created)' $((ups0 + 1)) 20
    wait_lines "$TMP/g.1.err" 'up (created)' $((ups1 + 1)) 20
    # and trained on past it
    for i in 0 1; do wait_lines "$TMP/g.$i.out" '"event":"step"' $(($(count_events "$TMP/g.$i.out" step) + 10)) 30; done
    kill -TERM $(echo $PIDS | cut -d' ' -f1)
    job_wait 60
    eq "etcd $1: both workers exit 42" "$RCS" "42 42"
    s=$(same g 2 exit saved_step)
    expect "etcd $1: one saved step ($s)" one_step "$s"
    [ "$failures" -eq 0 ] || show_logs g 2
    rm -rf "$TMP/g"
}
back_in_time snapshot
back_in_time wipe

# 10. A crash and an immediate restart, on a busy etcd. SIGKILL leaves each
# worker's alive/<w> behind under its lease until etcd revokes it; etcd
# revokes expired leases at 1000 a second, here behind 6000 other leases
# that expire with them (thousands of clients, one server). The restarted
# workers wait their predecessors out and join (before: a holder's lease
# still there after one wait of its TTL was taken for a live duplicate,
# and the restart failed with 'taken by a live process').
job_start h 2 --launch-id H --steps 1000000 --save-every-steps 50 $ARGS
for i in 0 1; do wait_for "$TMP/h.$i.out" '"event":"saved"' 30 || { show_logs h 2; finish; }; done
i=0
while [ $i -lt 6000 ]; do
    printf 'url = "%s/v3/lease/grant"\ndata = "{\\"TTL\\":2}"\noutput = "/dev/null"\n' "$ETCD_URL"
    i=$((i + 1))
    [ $i -lt 6000 ] && echo next
done >"$TMP/grants"
curl -s --max-time 120 -Z --parallel-max 32 -K "$TMP/grants" || fail "granting 6000 leases"
job_kill
job_wait 20
# What both workers committed: the checkpoints in both directories. A
# "saved" line is printed after its commit, so SIGKILL can fall between the
# two (seen in CI: 204 committed by both, the lines up to 154); the restart
# must restore one both committed, and nothing older than both reported.
committed() { ls "$TMP/h/worker-$1" | sed -n 's/^ckpt-0*\([0-9][0-9]*\)$/\1/p' | tr '\n' ' '; }
saved() { sed -n 's/.*"event":"saved".*"step":\([0-9]*\).*/\1/p' "$TMP/h.$1.out" | tr '\n' ' '; }
both=$(for s in $(committed 0); do case " $(committed 1) " in *" $s "*) echo "$s" ;; esac; done | tr '\n' ' ')
reported=$(for s in $(saved 0); do case " $(saved 1) " in *" $s "*) echo "$s" ;; esac; done | tail -n 1)
job_start h 2 --launch-id H --steps 1000 $ARGS
job_wait 60
eq "restart after a crash, busy etcd: both workers complete" "$RCS" "0 0"
r=$(same h 2 start restored_step)
expect "restart after a crash, busy etcd: both restore one step both committed ($r of $both)" \
    sh -c "case ' $both ' in *' $r '*) true;; *) false;; esac"
expect "restart after a crash, busy etcd: no step both reported saved is lost ($r, ${reported:-none})" \
    test "${r:-0}" -ge "${reported:-0}"
[ "$failures" -eq 0 ] || show_logs h 2

# ---- a host name outside the records' word ------------------------------------------------------
# A Linux host name may hold any byte; the member record's host is a word
# (A-Z a-z 0-9 . _ : / -). Each other character is written as '-': before,
# the schema refused the record and the worker could not join. The worker
# runs in a UTS namespace of its own (unshare -u; -r where not root), its
# name set through /proc (hostname(1) refuses such names; the kernel not).
userns=
[ "$(id -u)" -eq 0 ] || userns=-r
if unshare -u $userns true 2>/dev/null; then
    # shellcheck disable=SC2086 # $ARGS: the options, split
    unshare -u $userns sh -c 'printf "node+1@x" >/proc/sys/kernel/hostname && exec "$@"' sh "$TRAINER" --etcd "$ETCD_URL" --job oddhost \
        --ckpt-dir "$TMP/oddhost" --steps 1000000 --verbose $ARGS >"$TMP/oddhost.out" 2>"$TMP/oddhost.err" &
    NEWPID=$!
    if wait_for "$TMP/oddhost.out" '"event":"start"' 30; then
        ok
        expect "odd host name: the member record names it as a word (node-1-x)" \
            sh -c "etcdctl --endpoints='$ETCD_URL' get --prefix /preempt/oddhost/ | grep -q 'host=node-1-x '"
    else
        fail "odd host name: the worker did not start: $(tail -n 3 "$TMP/oddhost.err")"
    fi
    kill -TERM "$NEWPID"
    reap 60 "$NEWPID"
    eq "odd host name: a SIGTERM saves (42)" "$?" 42
    NEWPID=
else
    fail "cannot make a UTS namespace (unshare -u $userns)"
fi

finish
