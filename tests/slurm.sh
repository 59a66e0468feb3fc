# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# The Slurm recipe on a real Slurm (Debian's slurm-wlm and munge): the test
# starts munged, slurmctld and slurmd with a private configuration, state
# and socket (clients find it through SLURM_CONF; daemons and jobs talk over
# 127.0.0.1 only), and stops them by PID.
#
# The cluster is one node with 4 CPUs (config_overrides: this machine may
# have fewer) and three partitions: low (GraceTime 10 s), high, which
# preempts low by partition priority with PreemptMode=REQUEUE, as sites
# configure it, and short, at high's tier (never preempted); KillWait is 5 s
# and slurm.conf has no RequeueExit.
# Jobs run contrib/slurm/preempt.sbatch with the reference trainer, two
# workers coordinated through a real etcd.
#
#   1. Preemption, twice, of a job whose workers block in an all-reduce
#      inside every step: a high-priority job takes the node; Slurm sends
#      SIGTERM to the low job's tasks; they save one agreed step and exit
#      42; the script requeues the job; the next run restores exactly that
#      step; the end has the uninterrupted digest. Each worker's kill delay
#      is KillWait (5 s), read from the real slurm.conf, which also names
#      the partition's GraceTime.
#   2. The time limit (in short): --time=1 --signal=B:USR1@55 sends USR1 to the batch
#      script, which passes it on to the step: a save, exit 42, a requeue,
#      and the next run restores that step. This job's checkpoints are
#      two-phase: the periodic ones persist while it trains, through Linux
#      AIO (PREEMPT_PERSIST=aio, the backend where a seccomp profile
#      forbids io_uring), without falling back.
#   3. The kill-delay warning: in a partition without GraceTime (5 s to
#      SIGKILL), a job whose last checkpoint took 4.7 s to save is warned at
#      start, naming what it read.
#   4. scancel in low: a signal's deadline is KillWait alone (a SIGTERM
#      does not say whether a preemption, with its GraceTime, sent it): a
#      job of two saves within it and exits 42; the warning of 3 in low.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"

SL=$TMP/slurm
MUNGED_PID= CTLD_PID= SLURMD_PID=
no_jobs() { [ -z "$(squeue -h 2>/dev/null)" ]; }
slurm_stop() {
    if [ -n "$CTLD_PID" ]; then # cancel every job (a signal alone leaves a requeued job behind)
        scancel --partition=low,high,short 2>/dev/null
        poll 15 no_jobs
    fi
    # Whatever of the jobs still runs: the step daemons of this cluster (their
    # environment names its slurm.conf) and the processes under $TMP but the
    # daemons, which stop below.
    for _p in $(pgrep -x slurmstepd); do
        tr '\0' '\n' <"/proc/$_p/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$SL/slurm.conf" && kill -KILL "$_p"
    done
    for _p in $(pgrep -f "$TMP/"); do
        case " $SLURMD_PID $CTLD_PID $MUNGED_PID ${ETCD_PID:-} " in *" $_p "*) ;; *) kill -KILL "$_p" 2>/dev/null ;; esac
    done
    for _p in $SLURMD_PID $CTLD_PID $MUNGED_PID; do
        kill_ours TERM "$_p"
        poll 5 none_alive "$_p"
        kill_ours KILL "$_p"
    done
}
trap 'slurm_stop; etcd_stop; rm -rf "$TMP"' EXIT

for c in munged slurmctld slurmd sbatch scontrol squeue scancel; do
    command -v $c >/dev/null || { fail "$c is not installed (scripts/setup.sh installs slurm-wlm and munge)"; finish; }
done

# slurm_start: munged, slurmctld and slurmd on free loopback ports.
node_idle() { [ "$(sinfo -h -n localhost -p low -o %t 2>/dev/null)" = idle ]; }
slurm_start() {
    mkdir -p "$SL/munge" "$SL/state" "$SL/spool" && chmod 700 "$SL/munge"
    head -c 1024 /dev/urandom >"$SL/munge/key" && chmod 400 "$SL/munge/key"
    munged -F -f --socket="$SL/munge/sock" --key-file="$SL/munge/key" --pid-file="$SL/munge/pid" \
        --log-file="$SL/munge/log" --seed-file="$SL/munge/seed" &
    MUNGED_PID=$!
    _port=$(free_port 10000 9950)
    cat >"$SL/slurm.conf" <<EOF
ClusterName=lptest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$_port
SlurmdPort=$((_port + 1))
SrunPortRange=$((_port + 2))-$((_port + 40))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SL/munge/sock,cred_expire=5
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SL/state
SlurmdSpoolDir=$SL/spool
SlurmctldPidFile=$SL/slurmctld.pid
SlurmdPidFile=$SL/slurmd.pid
SlurmctldLogFile=$SL/slurmctld.log
SlurmdLogFile=$SL/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=low Nodes=localhost Default=YES MaxTime=INFINITE State=UP PriorityTier=1 GraceTime=10
PartitionName=short Nodes=localhost MaxTime=INFINITE State=UP PriorityTier=2
PartitionName=high Nodes=localhost MaxTime=INFINITE State=UP PriorityTier=2
EOF
    export SLURM_CONF="$SL/slurm.conf"
    poll 5 test -S "$SL/munge/sock"
    slurmctld -D -c -f "$SLURM_CONF" >>"$SL/slurmctld.out" 2>&1 &
    CTLD_PID=$!
    slurmd -D -f "$SLURM_CONF" -N localhost >>"$SL/slurmd.out" 2>&1 &
    SLURMD_PID=$!
    poll 10 node_idle && return 0
    fail "Slurm did not start; see $SL/*.log"
    tail -n 20 "$SL"/slurmctld.log "$SL"/slurmd.log 2>/dev/null | sed 's/^/    /'
    return 1
}

etcd_start slurm || finish
slurm_start || finish
expect "slurm.conf has no RequeueExit" sh -c "! grep -qi '^RequeueExit' '$SLURM_CONF'"

SBATCH=$(cd "$top_srcdir/contrib/slurm" && pwd)/preempt.sbatch
T=$(cd "$(dirname "$TRAINER")" && pwd)/$(basename "$TRAINER")
# Each task's lines go to $TMP/TAG.<task>.out/.err (appended over the runs).
RUN='exec "$@" >>"$OUT.$SLURM_PROCID.out" 2>>"$OUT.$SLURM_PROCID.err"'
ARGS="--etcd $ETCD_URL --platform none --signal TERM --signal USR1 --verbose"

# submit TAG SBATCH-OPTIONS... -- TRAINER-ARGS...: prints the job id.
submit() {
    _tag=$1
    shift
    _o=
    while [ "$1" != -- ]; do _o="$_o $1"; shift; done
    shift
    sbatch --parsable -o "$TMP/$_tag.job" $_o --export=ALL,OUT="$TMP/$_tag" "$SBATCH" \
        sh -c "$RUN" sh "$T" $ARGS --job "$_tag" --ckpt-dir "$TMP/$_tag" "$@"
}
job_field() { scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# wait_state JOB STATE SECONDS
in_state() { [ "$(job_field "$1" JobState)" = "$2" ]; }
wait_state() {
    poll "$3" in_state "$1" "$2" && { ok; return 0; }
    fail "job $1 not $2 after $3 s (it is $(job_field "$1" JobState))"
    return 1
}
# wait_events FILE EVENT N SECONDS: FILE has N lines of EVENT.
wait_events() { wait_lines "$1" "\"event\":\"$2\"" "$3" "$4"; }
# nth FILE EVENT KEY N: KEY of the Nth EVENT line.
nth() { grep "\"event\":\"$2\"" "$1" | sed -n "$4p" | sed -n "s/.*\"$3\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }
preempt_low() { # JOB: a high-priority job takes the node from JOB
    sbatch --parsable -p high -n 2 -o /dev/null --wrap true >/dev/null
}

# The three run side by side (the node has 4 CPUs: the preempted job 2,
# the others 1 each in a partition high does not preempt); the kill-delay
# job's second run starts when its first has completed.
# ---- 2. the time limit, 3. the kill-delay warning ---------------------------------
# (with two-phase periodic checkpoints of a 16 MiB state: they persist
# while the job trains, and USR1 finds one persisting or committed)
TL=$(export PREEMPT_PERSIST=aio; submit t -p short -n 1 --time=1 --signal=B:USR1@55 -- --steps 1000000 \
    --step-ms 20 --two-phase --state-kb 16384 --save-every-steps 200 --verbose)
KARGS="--steps 40 --step-ms 20 --save-every-steps 30 --save-ms 4700"
K1=$(submit k -p short -n 1 -- $KARGS) # a periodic checkpoint at step 30 that took 4.7 s
K2=$(submit k -p short -n 1 --dependency=afterok:"$K1" -- $KARGS) # restores it, and is warned

# ---- 1. preemption, twice --------------------------------------------------------
STEPS=900
# the reference: the same two workers, uninterrupted, outside Slurm
_p=$(free_port 10000 9950) _r=
for w in 0 1; do
    env -u SLURM_JOB_ID "$TRAINER" --platform none --etcd "$ETCD_URL" --job ref --worker $w --workers 2 \
        --ckpt-dir "$TMP/ref" --steps $STEPS --allreduce "$_p" >"$TMP/ref.$w.out" 2>&1 &
    _r="$_r $!"
done
for _p in $_r; do reap 300 "$_p"; done # only these: the daemons are this shell's children too
REF=$(nth "$TMP/ref.0.out" done state_digest 1)
eq "the reference: both workers agree" "$(nth "$TMP/ref.1.out" done state_digest 1)" "$REF"
# as a data-parallel trainer runs: a blocking all-reduce inside every step.
# Submitted by the guide's sbatch line (docs/guide/operating.md, sample
# "sbatch"), word by word; the test's own: sbatch's output and --parsable,
# 2 tasks (not 8), the etcd, job name and directory, the steps, the trainer
# through $RUN (each task's lines to its files), and the case's flags after.
doc_sample sbatch >"$TMP/sbatch.sample" || fail "the guide has no sample sbatch"
set --
# shellcheck disable=SC2013 # words, not lines
for w in $(sed 's/\\$//' "$TMP/sbatch.sample"); do
    case $w in
    sbatch) set -- sbatch --parsable -o "$TMP/p.job" --export=ALL,OUT="$TMP/p" ;;
    8) set -- "$@" 2 ;;
    contrib/slurm/preempt.sbatch) set -- "$@" "$SBATCH" ;;
    preempt-trainer) set -- "$@" sh -c "$RUN" sh "$T" ;;
    http://etcd:2379) set -- "$@" "$ETCD_URL" ;;
    run-17) set -- "$@" p ;;
    /scratch/run-17) set -- "$@" "$TMP/p" ;;
    100000) set -- "$@" "$STEPS" ;;
    *) set -- "$@" "$w" ;;
    esac
done
eq "the guide's sbatch line: the partition, the tasks, the script, the trainer's signals" \
    "$(echo "$*" | sed "s#$TMP#TMP#g; s#$ETCD_URL#URL#; s#$T#T#")" \
    "sbatch --parsable -o TMP/p.job --export=ALL,OUT=TMP/p -p low -n 2 $SBATCH sh -c $RUN sh T --etcd URL --job p --ckpt-dir TMP/p --steps $STEPS --signal TERM --signal USR1"
J=$("$@" --platform none --verbose --step-ms 20 --allreduce "$(free_port 10000 9950)" --print-steps)
for k in 1 2; do
    wait_events "$TMP/p.0.out" start $k 60 && wait_events "$TMP/p.1.out" start $k 10 || break
    # trained 50 steps in this run (the lines append over the runs)
    wait_events "$TMP/p.0.out" step $(($(count_events "$TMP/p.0.out" step) + 50)) 60 || break
    preempt_low "$J"
    wait_events "$TMP/p.0.out" exit $k 30 && wait_events "$TMP/p.1.out" exit $k 10 || break
done
wait_state "$J" COMPLETED 90
eq "preempted: requeued twice" "$(job_field "$J" Restarts)" 2
for w in 0 1; do
    f=$TMP/p.$w.out
    eq "preempted: worker $w kill delay KillWait (a SIGTERM does not say it is a preemption's)" \
        "$(nth "$f" start kill_delay_ms 1)" 5000
    expect "preempted: worker $w names what it read" grep -qF \
        "Slurm (KillWait 5 s, from $SLURM_CONF: a preemption in partition low gives its GraceTime 10 s more, but scancel" \
        "$TMP/p.$w.err"
    for k in 1 2; do
        s=$(nth "$f" exit saved_step $k)
        eq "preempted: worker $w exit $k with the restart code" "$(nth "$f" exit code $k)" 42
        eq "preempted: worker $w run $((k + 1)) resumes exactly at the step saved ($s)" \
            "$(nth "$f" start restored_step $((k + 1)))" "$s"
    done
    eq "preempted: worker $w the uninterrupted digest" "$(nth "$f" done state_digest 1)" "$REF"
done
eq "preempted: both workers saved the same steps" "$(grep '"event":"exit"' "$TMP/p.0.out" | sed 's/.*saved_step":\([0-9]*\).*/\1/' | tr '\n' ' ')" \
    "$(grep '"event":"exit"' "$TMP/p.1.out" | sed 's/.*saved_step":\([0-9]*\).*/\1/' | tr '\n' ' ')"

# ---- 4. scancel in a partition with GraceTime ------------------------------------
# A preemption there gives GraceTime + KillWait (15 s), scancel and the time
# limit KillWait alone (5 s), and a SIGTERM does not say which: a signal's
# deadline is 5 s. Two workers on their own loops, 1 s steps, 2 s saves:
# the save step is planned so that the save ends within 5 s, and both exit
# 42. Planned against 15 s, the save began 4 steps on and Slurm killed it.
# Then a job there whose checkpoint took 4.7 s to save is warned at its
# restart, the text naming KillWait and GraceTime with their values (it was
# not: 4.7 s fit the 15 s assumed).
SC=$(submit s -p low -n 2 -- --async --steps 1000 --step-ms 1000 --save-ms 2000 --save-every-steps 3)
wait_events "$TMP/s.0.out" saved 1 60 && wait_events "$TMP/s.1.out" saved 1 10
scancel "$SC"
wait_events "$TMP/s.0.out" exit 1 20 && wait_events "$TMP/s.1.out" exit 1 10
for w in 0 1; do
    eq "scancel: worker $w's kill delay is KillWait" "$(nth "$TMP/s.$w.out" start kill_delay_ms 1)" 5000
    eq "scancel: worker $w saved within it and exited 42" "$(nth "$TMP/s.$w.out" exit code 1)" 42
done
KL1=$(submit kl -p low -n 1 -- $KARGS)
KL2=$(submit kl -p low -n 1 --dependency=afterok:"$KL1" -- $KARGS)
wait_state "$KL2" COMPLETED 60
expect "kill delay in low: the restart is warned, naming KillWait and GraceTime" grep -qF \
    "ms but the process is killed 5000 ms after SIGTERM (Slurm (KillWait 5 s, from $SLURM_CONF: a preemption in partition low gives its GraceTime 10 s more" \
    "$TMP/kl.0.err"

wait_state "$K2" COMPLETED 60
f=$TMP/k.0.out
eq "kill delay: the second job restores the slow checkpoint" "$(nth "$f" start restored_step 2)" "$(nth "$f" saved step 1)"
eq "kill delay: KillWait alone in a partition without GraceTime" "$(nth "$f" start kill_delay_ms 1)" 5000
expect "kill delay: the restart is warned, naming what it read" grep -qF \
    "ms but the process is killed 5000 ms after SIGTERM (Slurm (KillWait 5 s; no GraceTime in partition short, from $SLURM_CONF)" "$TMP/k.0.err"
wait_events "$TMP/t.0.out" start 2 90
expect "time limit: the batch script passed USR1 on" grep -qF "SIGUSR1 for job $TL; passed on to the step" "$TMP/t.job"
s=$(nth "$TMP/t.0.out" exit saved_step 1)
eq "time limit: exit with the restart code" "$(nth "$TMP/t.0.out" exit code 1)" 42
expect "time limit: two-phase checkpoints persisted while the job trained" \
    grep -q '"from":"persisting","to":"idle"' "$TMP/t.0.out"
expect "time limit: they persisted through aio" grep -q "persisted with aio on the loop" "$TMP/t.0.err"
expect "time limit: aio did not fall back" sh -c "! grep 'two-phase saves persist .* instead' '$TMP/t.0.err'"
eq "time limit: the requeued run resumes at the step saved ($s)" "$(nth "$TMP/t.0.out" start restored_step 2)" "$s"
scancel "$TL"

if [ "$failures" -ne 0 ]; then
    for f in "$TMP"/*.job "$TMP"/*.err; do echo "== $f"; tail -n 15 "$f"; done
    tail -n 30 "$SL/slurmctld.log"
fi
finish
