# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Survivors stay in place (stay_in_place): a job of reference trainers
# with a blocking all-reduce in every step (--allreduce: every worker's
# state depends on every worker's steps), under preempt-launch, on a real
# etcd. SIGTERM to one worker: it saves with the others and exits 42, the
# launcher starts its replacement, which restores the committed step; the
# others keep their processes and their state, rejoin the job's next
# incarnation without restoring, make their all-reduce again, and the run
# ends in the uninterrupted run's state. Without a replacement the
# survivors wait (bounded by join_timeout_ms) and exit 42 as before; a
# notice to a survivor while it waits ends its wait at once. Every wait
# here is bounded and waits for an event; nothing asserts a duration.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
LAUNCH="$top_builddir/tools/preempt-launch"
LPID=
trap 'kill_ours KILL $LPID; job_kill; etcd_stop; rm -rf "$TMP"' EXIT

etcd_start in-place || finish
port() { free_port 10000 10000; } # below the ephemeral range and the etcd fixtures' ports

N=4
STEPS=1500

# The uninterrupted run's state.
job_start ref "$N" --steps "$STEPS" --allreduce "$(port)"
job_wait 120
eq "reference: every worker finishes" "$RCS" "$(rcs_of "$N" 0)"
REF=$(same ref "$N" done state_digest)
expect "reference: one digest ($REF)" one_step "$REF"

# pid_of OUT I: the pid of worker I's first launch (the launcher's line).
pid_of() { grep -F "\"event\":\"launch\",\"worker\":$2,\"attempt\":1," "$1" | sed 's/.*"pid":\([0-9]*\).*/\1/'; }

# ---- in place under preempt-launch: one worker terminated, three stay ----
OUT=$TMP/launch.out
# the launcher's worker: the reference trainer, tracing to a file of its index
cat >"$TMP/w.sh" <<WEOF
#!/bin/sh
for a; do [ "\$prev" = --worker ] && i=\$a; prev=\$a; done
exec "$TRAINER" --trace "$TMP/inplace.\$i.trace" "\$@"
WEOF
chmod +x "$TMP/w.sh"
"$LAUNCH" --workers "$N" -- "$TMP/w.sh" --etcd "$ETCD_URL" --job inplace --ckpt-dir "$TMP/inplace" \
    --steps "$STEPS" --step-ms 2 --allreduce "$(port)" --stay-in-place --print-steps \
    >"$OUT" 2>"$TMP/launch.err" &
LPID=$!
for i in $(seq 0 $((N - 1))); do wait_for "$OUT" "\"event\":\"step\",\"worker\":$i,\"step\":20}" 60; done
victim=2
kill -TERM "$(pid_of "$OUT" $victim)"
reap 120 "$LPID"
eq "in place: the launch ends well" "$?" 0
LPID=
eq "in place: only the terminated worker exited 42, once" \
    "$(grep -c '"event":"exited".*"code":42' "$OUT") $(grep -c '"event":"exited","worker":'$victim',"code":42' "$OUT")" "1 1"
eq "in place: the launcher started only its replacement" "$(grep -c '"event":"launch"' "$OUT")" $((N + 1))
eq "in place: every worker finishes, once" "$(grep -c '"event":"exited".*"code":0' "$OUT")" "$N"
saved=$(grep -F '"event":"saved"' "$OUT" | sed 's/.*"step":\([0-9]*\).*/\1/' | sort -u)
expect "in place: every worker saved one step ($saved)" test "$(echo "$saved" | wc -l)" -eq 1 -a -n "$saved"
for i in $(seq 0 $((N - 1))); do
    [ "$i" = "$victim" ] && continue
    line=$(grep -F "\"event\":\"rebuild\",\"worker\":$i," "$OUT")
    eq "in place: worker $i rebuilt once, at the saved step, in its first process" \
        "$(echo "$line" | grep -c .) $(echo "$line" | sed 's/.*"step":\([0-9]*\).*"pid":\([0-9]*\).*/\1 \2/')" \
        "1 $saved $(pid_of "$OUT" "$i")"
    expect "in place: worker $i made its all-reduce again" grep -qF '"allreduce":0' <<EOF
$line
EOF
done
eq "in place: the replacement restored the saved step" \
    "$(grep -F "\"event\":\"start\",\"worker\":$victim," "$OUT" | tail -1 | sed 's/.*"restored_step":\([0-9]*\).*/\1/')" \
    "$saved"
expect "in place: the survivors restored nothing (no restore line)" \
    test "$(grep -c '"event":"start"' "$OUT")" -eq $((N + 1))
eq "in place: all finish with the uninterrupted digest" \
    "$(grep -F '"event":"done"' "$OUT" | grep -c "\"state_digest\":\"$REF\"")" "$N"
# a survivor's trace holds both incarnations: its rejoin, and the new
# coordinator from its start; each replays (the machine, the job's
# records, the declared machines' instances)
for i in $(seq 0 $((N - 1))); do
    expect_rc 0 "$REPLAY" "$TMP/inplace.$i.trace"
done
expect "in place: a survivor's trace has the rejoin" \
    grep -q 'ev=rejoined inc=2 step=[0-9]* => rejoining -> idle fx=resume' "$TMP/inplace.0.trace"
[ "$failures" -eq 0 ] || { cat "$OUT" "$TMP/launch.err" >&2; }

# ---- no replacement: the survivors wait (bounded), then exit 42 as before ----
# Workers started alone (no launcher): the terminated one is not replaced.
p=$(port)
# Workers 0 and 3 wait 4 s in rejoining, then give up. Worker 2 gets its
# notice while it waits, whenever this script sends it (after all three
# say they wait): its own bound, 60 s, is the job's, so how far the script
# lags behind it decides nothing. (The notice is not sent earlier: a
# survivor still before the commit would see worker 2's lease go first.)
JOB_ARGS_2="--join-timeout-ms 60000"
job_start alone "$N" --steps 100000 --step-ms 2 --allreduce "$p" --stay-in-place --join-timeout-ms 4000
JOB_ARGS_2=
job_trained 20 60
# shellcheck disable=SC2086 # the pids, split
set -- $PIDS
kill -TERM "$2"
for i in 0 2 3; do wait_for "$TMP/alone.$i.out" '"to":"rejoining"' 60; done
# A notice to a survivor while it waits: it exits at once, saved.
kill -TERM "$3"
job_wait 120
eq "no replacement: every worker exits 42 (the survivors after their bound)" "$RCS" "$(rcs_of "$N" 42)"
step=$(same alone "$N" exit saved_step)
expect "no replacement: one saved step ($step)" one_step "$step"
expect "no replacement: worker 2 exited on its own notice, not at the bound" \
    grep -q 'a notice came while this worker rejoined the job in place' "$TMP/alone.2.err"
for i in 0 3; do
    expect "no replacement: worker $i gave up at its bound" \
        grep -q "next incarnation could not be joined" "$TMP/alone.$i.err"
done
[ "$failures" -eq 0 ] || show_logs alone "$N"
job_start alone "$N" --steps "$STEPS" --allreduce "$p"
job_wait 120
eq "no replacement: the restart finishes" "$RCS" "$(rcs_of "$N" 0)"
eq "no replacement: the restart restored the saved step" "$(same alone "$N" start restored_step)" "$step"
eq "no replacement: the uninterrupted run's state" "$(same alone "$N" done state_digest)" "$REF"
[ "$failures" -eq 0 ] || show_logs alone "$N"

# ---- etcd stopped and started again while the survivors wait ------------
# The survivors' rejoin rides it out (start-up's requests and watch retry
# within join_timeout_ms); the replacement comes after it, and the run
# ends exact with every survivor in its first process.
p=$(port)
job_start estop "$N" --steps "$STEPS" --step-ms 2 --allreduce "$p" --stay-in-place
job_trained 20 60
# shellcheck disable=SC2086 # the pids, split
set -- $PIDS
kill -TERM "$2"
reap 60 "$2"
eq "etcd restarted: worker 1 saved and exits 42" "$?" 42
for i in 0 2 3; do wait_for "$TMP/estop.$i.out" '"to":"rejoining"' 60; done
etcd_stop
etcd_restart
"$TRAINER" --etcd "$ETCD_URL" --job estop --worker 1 --workers "$N" --ckpt-dir "$TMP/estop" --verbose \
    --print-steps --trace "$TMP/estop.1.trace" --steps "$STEPS" --allreduce "$p" --stay-in-place \
    >"$TMP/estop.1.out" 2>"$TMP/estop.1.err" &
PIDS="$1 $! $3 $4"
job_wait 120
eq "etcd restarted: every worker finishes" "$RCS" "$(rcs_of "$N" 0)"
eq "etcd restarted: the uninterrupted run's state" "$(same estop "$N" done state_digest)" "$REF"
for i in 0 2 3; do
    expect "etcd restarted: worker $i stayed in place" grep -q '"event":"rebuild"' "$TMP/estop.$i.out"
done
[ "$failures" -eq 0 ] || show_logs estop "$N"
finish
