# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Process-level faults with real parts: a 3-member etcd cluster whose leader
# is SIGKILLed during agreement, and whose member a worker watches through is
# SIGKILLed mid-watch; a worker SIGKILLed during its save; a disk (a 1 MiB
# tmpfs) that fills during a save; storage that stalls during a save. Every
# wait is bounded and only guards against hangs; nothing asserts a duration.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
trap 'job_kill; etcd_cluster_stop; etcd_stop; rm -rf "$TMP"' EXIT

ckpt() { printf 'ckpt-%020d' "$1"; }

# ---- a 3-member cluster: the leader killed during agreement ----------------
# Worker 0 gets a signal and the leader is SIGKILLed at once: the writes of
# the agreement fail over to the other members, which elect a new leader,
# and the job saves at one step.
etcd_cluster_start pf 3 || finish
ETCD_URL=$CLUSTER_URLS
tag=leader
job_start "$tag" 2 --steps 100000 --step-ms 5 --agree-timeout-ms 20000
for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30 && wait_for "$TMP/$tag.$i.err" ' up (created)' 30; done
leader=$(etcd_cluster_leader)
expect "cluster: a leader ($leader)" test -n "$leader"
leader=${leader:-0}
lpid=$(etcd_cluster_pid "$leader")
kill -TERM "$(echo $PIDS | cut -d' ' -f1)"
kill -KILL "$lpid"
wait "$lpid" 2>/dev/null # bounded: SIGKILL
job_wait 60
eq "leader killed: both workers saved" "$RCS" "42 42"
step=$(same "$tag" 2 exit saved_step)
expect "leader killed: at one step ($step)" one_step "$step"
for i in 0 1; do
    expect "leader killed: worker $i's checkpoint" test -d "$TMP/$tag/worker-$i/$(ckpt "$step")"
done
newleader=$(etcd_cluster_leader)
expect "leader killed: another member leads ($newleader)" test -n "$newleader" -a "$newleader" != "$leader"
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# ---- the member a worker watches through, SIGKILLed mid-watch ---------------
# The killed leader comes back (same data) first. Worker 1 lists member
# "first" first, so its watch runs through it; that member is SIGKILLed.
# Two of three keep a quorum: worker 1's watch breaks, fails over to the
# next member and comes up again, and the preemption that follows reaches
# it.
etcd_cluster_member "$leader"
etcd_cluster_healthy
expect "cluster: the killed member is back" test $? -eq 0
first=$(((leader + 1) % 3))
ETCD_URL="$(etcd_cluster_url "$first"),$(etcd_cluster_url $(((first + 1) % 3))),$(etcd_cluster_url $(((first + 2) % 3)))"
tag=watchkill
job_start "$tag" 2 --steps 100000 --step-ms 5 --agree-timeout-ms 20000
for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30 && wait_for "$TMP/$tag.$i.err" ' up (created)' 30; done
fpid=$(etcd_cluster_pid "$first")
kill -KILL "$fpid"
wait "$fpid" 2>/dev/null # bounded: SIGKILL
wait_for "$TMP/$tag.1.err" ' down (' 30 && ok
poll 30 has_lines "$TMP/$tag.1.err" ' up (' 2
expect "member killed mid-watch: worker 1's watch is up again" test "$(grep -c ' up (' "$TMP/$tag.1.err")" -ge 2
kill -TERM "$(echo $PIDS | cut -d' ' -f1)"
job_wait 60
eq "member killed mid-watch: both workers saved" "$RCS" "42 42"
step=$(same "$tag" 2 exit saved_step)
expect "member killed mid-watch: at one step ($step)" one_step "$step"
[ "$failures" -eq 0 ] || show_logs "$tag" 2
etcd_cluster_stop

# ---- a single etcd for the rest ----------------------------------------------
etcd_start pf || finish

# ---- etcd unreachable when a notice comes, longer than the agreement's bound ---
# etcd is stopped (SIGSTOP: connections hang, nothing answers) and worker 0
# gets SIGTERM with a 20 s deadline; etcd comes back after 4 s (worker 0's
# second time-out), twice the agreement's bound. The notice's writes retry up to the deadline and the
# round's bound starts when the claim is answered, so the job still agrees
# and saves. (Before, worker 0 gave up after 2 s and exited 75, and worker 1
# never learned of the notice: the simulation found it.)
tag=outage
job_start "$tag" 2 --steps 100000 --step-ms 5 --agree-timeout-ms 2000 --kill-delay-ms 20000
set -- $PIDS
for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"event":"start"' 30; done
kill -STOP "$ETCD_PID"
kill -TERM "$1"
# the outage lasts until worker 0's request has gone unanswered twice
# (2 s each, the agreement's bound: twice the bound)
wait_for "$TMP/$tag.0.err" 'no reply within 2000 ms; retry 2 in' 30
kill -CONT "$ETCD_PID"
job_wait 60
eq "etcd outage across a notice: both save and exit 42" "$RCS" "42 42"
expect "etcd outage: one saved step" test "$(same "$tag" 2 saved step | grep -c differs)" = 0
expect "etcd outage: worker 0 saw etcd unreachable" grep -q 'failed\|unreachable\|timed out' "$TMP/$tag.0.err"
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# ---- a worker SIGKILLed during its save ----------------------------------------
# A first preemption commits step S1. In the second, worker 1 is killed
# while it writes its shard: the job cannot commit, worker 0 exits "not
# saved" once worker 1's lease ends, and the restart resumes both at S1 with
# the half-written shard removed.
tag=savekill
job_start "$tag" 2 --steps 100000 --step-ms 2 --raise-at 20
job_wait 60
eq "save kill: first preemption" "$RCS" "42 42"
s1=$(same "$tag" 2 exit saved_step)
job_start "$tag" 2 --steps 100000 --step-ms 2 --lease-ttl 2 --save-ms 3000 --raise-at 60
set -- $PIDS
wait_for "$TMP/$tag.1.out" '"event":"save-begin"' 30 && kill -KILL "$2"
PIDS=$1
job_wait 60
eq "save kill: worker 0 did not claim a save" "$RCS" 75
expect "save kill: worker 0 saw worker 1 lost" grep -q 'worker 1 lost its membership' "$TMP/$tag.0.err"
expect "save kill: a half-written shard is left" test -n "$(ls -A "$TMP/$tag/worker-1" | grep '^\.staging-')"
[ "$failures" -eq 0 ] || show_logs "$tag" 2 # before the restart writes over them
job_start "$tag" 2 --steps 1
job_wait 60
eq "save kill: restart" "$RCS" "0 0"
eq "save kill: both resume at the first preemption's step" "$(same "$tag" 2 start restored_step)" "$s1"
expect "save kill: leftover removed" test -z "$(ls -A "$TMP/$tag/worker-1" | grep '^\.staging-')"
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# ---- storage that stalls during a save -------------------------------------
# A save blocked in the kernel stops the worker's loop with it (the save runs
# at a step boundary, outside the loop), so to the job a stalled write and a
# stopped worker are the same: worker 1 is SIGSTOPped in its save. Its lease
# ends and worker 0 exits "not saved"; worker 1, resumed, learns that the
# round failed and exits "not saved" too. Nothing is lost either way.
tag=stall
job_start "$tag" 2 --steps 100000 --step-ms 2 --lease-ttl 2 --save-ms 500 --raise-at 40
set -- $PIDS
wait_for "$TMP/$tag.1.out" '"event":"save-begin"' 30 && kill -STOP "$2"
wait_for "$TMP/$tag.0.err" 'worker 1 lost its membership' 30 && ok
kill -CONT "$2"
job_wait 60
eq "stalled save: neither claims a save" "$RCS" "75 75"
# Both shards may have reached the disk meanwhile: the restart restores one
# step on both, one that both hold (or the start).
job_start "$tag" 2 --steps 1
job_wait 60
eq "stalled save: restart" "$RCS" "0 0"
step=$(same "$tag" 2 start restored_step)
expect "stalled save: both restore one step ($step)" one_step "$step"
for i in 0 1; do
    expect "stalled save: worker $i holds it" test "$step" = 0 -o -d "$TMP/$tag/worker-$i/$(ckpt "$step")"
done
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# ---- a disk that fills during a save -------------------------------------------
# Worker 1's checkpoints are on a 1 MiB tmpfs in a private mount namespace
# (unshare; -r maps to root when the test is not run as root). Its first
# save (600 KiB of state) fits, the second does not: it fails with ENOSPC,
# the job commits nothing, both exit "not saved", and a restart in the same
# namespace resumes both at the first save's step.
tag=full
mkdir -p "$TMP/$tag/worker-1"
userns=
[ "$(id -u)" -eq 0 ] || userns=-r
if unshare -m $userns true 2>/dev/null; then
    cat >"$TMP/full-1.sh" <<EOF
mount -t tmpfs -o size=1m,mode=0700 tmpfs "$TMP/$tag/worker-1" || exit 97
for run in 1 2 3; do
    case \$run in 1) extra="--raise-at 20" ;; 2) extra="--raise-at 60" ;; 3) extra="--steps 1" ;; esac
    "$TRAINER" --etcd "$ETCD_URL" --job $tag --worker 1 --workers 2 --ckpt-dir "$TMP/$tag" --verbose \\
        --steps 100000 --step-ms 2 --state-kb 600 \$extra >"$TMP/$tag.1.run\$run.out" 2>"$TMP/$tag.1.run\$run.err"
    echo "\$?" >"$TMP/$tag.1.run\$run.rc"
    df -k "$TMP/$tag/worker-1" | awk 'NR == 2 { print \$4 }' >"$TMP/$tag.1.run\$run.free"
done
EOF
    unshare -m $userns sh "$TMP/full-1.sh" &
    upid=$!
    for run in 1 2 3; do
        case $run in 1) extra="--raise-at 20" ;; 2) extra="--raise-at 60" ;; 3) extra="--steps 1" ;; esac
        timeout 120 "$TRAINER" --etcd "$ETCD_URL" --job $tag --worker 0 --workers 2 --ckpt-dir "$TMP/$tag" --verbose \
            --steps 100000 --step-ms 2 --state-kb 600 $extra >"$TMP/$tag.0.run$run.out" 2>"$TMP/$tag.0.run$run.err"
        echo "$?" >"$TMP/$tag.0.run$run.rc"
        # the two workers run each incarnation together: wait for worker 1's
        poll 120 test -e "$TMP/$tag.1.run$run.rc"
    done
    reap 60 "$upid"
    eq "full disk: the tmpfs was mounted" "$?" 0
    eq "full disk: first save fits" "$(cat "$TMP/$tag.0.run1.rc") $(cat "$TMP/$tag.1.run1.rc")" "42 42"
    s1=$(field "$TMP/$tag.0.run1.out" exit saved_step)
    eq "full disk: the second does not; neither claims it" \
        "$(cat "$TMP/$tag.0.run2.rc") $(cat "$TMP/$tag.1.run2.rc")" "75 75"
    expect "full disk: worker 1 says why" grep -q 'No space left on device' "$TMP/$tag.1.run2.err"
    expect "full disk: the failed save's space is freed" test "$(cat "$TMP/$tag.1.run2.free")" -gt 300
    eq "full disk: restart" "$(cat "$TMP/$tag.0.run3.rc") $(cat "$TMP/$tag.1.run3.rc")" "0 0"
    eq "full disk: worker 0 resumes at the first save" "$(field "$TMP/$tag.0.run3.out" start restored_step)" "$s1"
    eq "full disk: worker 1 resumes at the first save" "$(field "$TMP/$tag.1.run3.out" start restored_step)" "$s1"
    [ "$failures" -eq 0 ] || tail -n 5 "$TMP/$tag".*.err
else
    fail "full disk: cannot make a private mount namespace (unshare -m $userns)"
fi
finish
