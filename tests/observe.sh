# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# What operators see of a preemption (docs/guide/operating.md, "Observing preemptions"): each
# worker's termination record, and its Prometheus metrics read through a
# real node_exporter (Debian's prometheus-node-exporter, textfile
# collector) and checked by promtool.
#
#   - one worker, SIGTERM, restart, SIGTERM: the records say what happened;
#     the metrics file's counters carry on over the restart
#   - in a pod (a mount namespace with /dev/termination-log), the record
#     goes there with nothing configured
#   - a job of two on a real etcd, SIGTERM to worker 0: both records name
#     the same agreed and committed step as the machines' traces, worker 0
#     the signal and worker 1 its peer's notice; node_exporter serves both
#     workers' series with those values; preempt-launch's record sums up
#     its workers'; preemptctl history lists three preemptions and a
#     finished run of one job; preempt-launch --timeline draws a launch of
#     4 (and of 64) workers
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
NPID=
trap 'job_kill; kill_ours TERM $NPID; etcd_stop; rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
for t in prometheus-node-exporter promtool "$PY"; do
    command -v "$t" >/dev/null || { fail "$t is missing (scripts/setup.sh installs it)"; finish; }
done

# jf FILE KEY: a field of the JSON object in FILE ("" when absent).
jf() { "$PY" -c 'import json, sys; v = json.load(open(sys.argv[1])).get(sys.argv[2], ""); print(v)' "$1" "$2"; }
# series FILE NAME{LABELS}: the value of one series in a metrics text.
series() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# ---- one worker ----------------------------------------------------------------------------------
d=$TMP/local
mkdir -p "$d/prom"
export PREEMPT_TERMINATION_LOG="$d/term.json" PREEMPT_METRICS_PATH="$d/prom/local-{worker}.prom"
run_local() { # ARGS...: a worker trains until SIGTERM; $rc
    "$TRAINER" --ckpt-dir "$d/ck" --steps 100000 --step-ms 5 --save-every-steps 100 "$@" >"$d/out" 2>"$d/err" &
    _p=$!
    wait_for "$d/out" '"start"' 30
    wait_for "$d/out" '"event":"saved"' 30 # a periodic checkpoint first
    kill -TERM "$_p"
    reap 60 "$_p"
    rc=$?
}
run_local
eq "local: exit 42" "$rc" 42
saved=$(field "$d/out" exit saved_step)
expect "local: the record is under 4 KiB" test "$(wc -c <"$d/term.json")" -lt 4096
eq "local: reason" "$(jf "$d/term.json" reason)" saved
eq "local: code" "$(jf "$d/term.json" code)" 42
eq "local: why" "$(jf "$d/term.json" why)" "the job committed the checkpoint"
eq "local: source" "$(jf "$d/term.json" notice_source)" signal
eq "local: committed step" "$(jf "$d/term.json" committed_step)" "$saved"
eq "local: agreed step" "$(jf "$d/term.json" agreed_step)" "$saved"
eq "local: version" "$(jf "$d/term.json" libpreempt)" "$("$TRAINER" --version | awk '{print $NF}')"
expect "local: notice before exit, deadline after the notice" "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["notice_at_ms"] <= r["exit_at_ms"] < r["deadline_ms"], r
assert r["notice_to_exit_ms"] >= r["agreed_to_commit_ms"] >= 0, r
assert r["bytes_saved"] > 0 and r["saves"] >= 2 and r["steps_lost"] == 0, r
assert r["stall_ms"] == r["save_ms"], r  # a synchronous save stops training whole' "$d/term.json"
[ "$failures" -eq 0 ] || cat "$d/term.json"
m=$d/prom/local-0.prom
eq "local: one preemption, saved" "$(series "$m" 'preempt_preemptions_total{job="",worker="0",source="signal",outcome="saved"}')" 1
eq "local: its checkpoint" "$(series "$m" 'preempt_checkpoints_total{job="",worker="0",kind="preemption",outcome="committed"}')" 1
periodic=$(series "$m" 'preempt_checkpoints_total{job="",worker="0",kind="periodic",outcome="committed"}')
expect "local: periodic checkpoints ($periodic)" test "${periodic:-0}" -ge 1
expect "local: notice to commit observed once" test "$(series "$m" 'preempt_notice_to_commit_seconds_count{job="",worker="0"}')" = 1
expect_rc 0 promtool check metrics <"$m"

# the restart restores it, and the second preemption counts on from the first
run_local
eq "local restart: exit 42" "$rc" 42
eq "local restart: restored step" "$(jf "$d/term.json" restored_step)" "$saved"
expect "local restart: restore time measured" test -n "$(jf "$d/term.json" restore_ms)"
eq "local restart: two preemptions" "$(series "$m" 'preempt_preemptions_total{job="",worker="0",source="signal",outcome="saved"}')" 2
eq "local restart: one restore" "$(series "$m" 'preempt_restore_seconds_count{job="",worker="0"}')" 1
expect "local restart: periodic checkpoints count on" \
    test "$(series "$m" 'preempt_checkpoints_total{job="",worker="0",kind="periodic",outcome="committed"}')" -gt "$periodic"
expect_rc 0 promtool check metrics <"$m"

# ---- in a pod ------------------------------------------------------------------------------------
# Kubernetes gives every container a writable /dev/termination-log: with
# nothing configured, the record goes there. A private mount namespace
# stands in for the pod (a /dev of its own with that file).
unset PREEMPT_TERMINATION_LOG PREEMPT_METRICS_PATH
expect "pod: the record goes to /dev/termination-log by default" unshare -m --propagation private sh -c '
    mount -t tmpfs none /dev && mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/urandom c 1 9 &&
    : >/dev/termination-log && "$1" --ckpt-dir "$2/pod" --steps 30 >"$2/pod.out" 2>"$2/pod.err" &&
    cp /dev/termination-log "$2/pod.json"' sh "$TRAINER" "$TMP"
eq "pod: the record says training is done" "$(jf "$TMP/pod.json" reason)" done
eq "pod: at step 30" "$(jf "$TMP/pod.json" run)" 30
expect "pod: nothing written outside the pod" test ! -e /dev/termination-log

# ---- a job of two, through node_exporter ---------------------------------------------------------
etcd_start observe || finish
export PREEMPT_TERMINATION_LOG="$TMP/obs.{worker}.json" PREEMPT_METRICS_PATH="$TMP/prom/obs-{worker}.prom"
mkdir -p "$TMP/prom"
tag=obs
job_start "$tag" 2 --steps 100000 --step-ms 10
for i in 0 1; do wait_for "$TMP/$tag.$i.out" '"start"' 30; done
job_trained 20
kill -TERM "$(echo $PIDS | cut -d' ' -f1)"
job_wait 60
unset PREEMPT_TERMINATION_LOG PREEMPT_METRICS_PATH
saved_one_step "$tag" 2 "job"
for i in 0 1; do
    r=$TMP/obs.$i.json
    # the job's step: the last the trace was told (a worker past the first
    # proposal raises it; seen beside the suite: 34, raised to 42)
    agreed=$(grep -o 'ev=step-agreed step=[0-9]*' "$TMP/$tag.$i.trace" | tail -n 1 | sed 's/.*=//')
    eq "job: worker $i's record: reason" "$(jf "$r" reason)" saved
    eq "job: worker $i's record: the trace's agreed step" "$(jf "$r" agreed_step)" "$agreed"
    eq "job: worker $i's record: committed step" "$(jf "$r" committed_step)" "$step"
    eq "job: worker $i's record: whose notice" "$(jf "$r" notice_worker)" 0
    eq "job: worker $i's record: workers" "$(jf "$r" workers)" 2
    eq "job: worker $i's record: incarnation" "$(jf "$r" incarnation)" "$(jf "$TMP/obs.0.json" incarnation)"
done
eq "job: worker 0's source" "$(jf "$TMP/obs.0.json" notice_source)" signal
eq "job: worker 1's source" "$(jf "$TMP/obs.1.json" notice_source)" peer
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# A SIGTERM into a periodic round already agreed (a job of two: the step
# stands for a few steps before the save): the round's step is the
# notice's, agreed from the notice on. Measured from the periodic round's
# agreement, the phases did not add up (agreement to commit longer than
# notice to exit; seen once in CI).
export PREEMPT_TERMINATION_LOG="$TMP/per.{worker}.json"
job_start per 2 --steps 100000 --step-ms 50 --save-every-steps 40
wait_for "$TMP/per.0.out" '"to":"step-agreed"' 60
kill -TERM "$(echo $PIDS | cut -d' ' -f1)"
job_wait 60
unset PREEMPT_TERMINATION_LOG
saved_one_step per 2 "a SIGTERM into a periodic round"
expect "a SIGTERM into a periodic round: the phases add up" "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert 0 <= r["notice_to_agreed_ms"] + r["agreed_to_commit_ms"] <= r["notice_to_exit_ms"], r
assert r["notice_source"] == "signal" and r["notice_worker"] == 0, r' "$TMP/per.0.json"
[ "$failures" -eq 0 ] || cat "$TMP/per.0.json"

# A round's step raised (a worker was past it): the record names the step
# saved, not the first one agreed (it said 5 while step ~100 was saved).
# The claim and a step long past are written first, as a driver whose
# notice record landed late would have; then worker 0 gets SIGTERM.
export PREEMPT_TERMINATION_LOG="$TMP/raise.{worker}.json"
job_start raise 2 --steps 100000 --step-ms 10
for i in 0 1; do wait_for "$TMP/raise.$i.out" '"start"' 30 && wait_for "$TMP/raise.$i.err" ' up (created)' 30; done
inc=$(etcdctl --endpoints="$ETCD_URL" get /preempt/raise/incarnation --print-value-only)
etcdctl --endpoints="$ETCD_URL" put "/preempt/raise/$inc/e0/claim" "0" >/dev/null
etcdctl --endpoints="$ETCD_URL" put "/preempt/raise/$inc/e0/r0/agreed" "5 last" >/dev/null
for i in 0 1; do wait_for "$TMP/raise.$i.trace" 'r0/agreed' 30; done
kill -TERM "$(echo $PIDS | cut -d' ' -f1)"
job_wait 60
unset PREEMPT_TERMINATION_LOG
saved_one_step raise 2 "a raised step"
for i in 0 1; do
    eq "a raised step: worker $i's record names the step saved" "$(jf "$TMP/raise.$i.json" agreed_step)" "$step"
done

# preempt-launch's own record aggregates its workers': a SIGTERM to the
# launcher reaches both, both save, and the launch asks to be restarted.
LAUNCH="$top_builddir/tools/preempt-launch"
mkdir -p "$TMP/lt"
TMPDIR="$TMP/lt" PREEMPT_TERMINATION_LOG="$TMP/launch.json" "$LAUNCH" --workers 2 -- "$TRAINER" --etcd "$ETCD_URL" --job lrec \
    --ckpt-dir "$TMP/lrec" --steps 100000 --step-ms 10 --print-steps >"$TMP/launch.out" 2>"$TMP/launch.err" &
lp=$!
for i in 0 1; do wait_for "$TMP/launch.out" "\"event\":\"step\",\"worker\":$i,\"step\":20}" 30; done
kill -TERM "$lp"
reap 120 "$lp"
eq "launch: asks to be restarted" "$?" 42
eq "launch record: code" "$(jf "$TMP/launch.json" code)" 42
eq "launch record: workers" "$(jf "$TMP/launch.json" workers)" 2
expect "launch record: each worker saved the one committed step" "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert [e["worker"] for e in r["each"]] == [0, 1], r
assert all(e["reason"] == "saved" and e["exit"] == 42 and e["attempts"] == 1 for e in r["each"]), r
assert all(e["committed_step"] == r["committed_step"] == r["agreed_step"] > 0 for e in r["each"]), r
assert r["restarts"] == 0 and len(json.dumps(r)) < 4096, r' "$TMP/launch.json"
expect "launch: no worker record left behind" test -z "$(ls -A "$TMP/lt")"

# The job's history in etcd: three preemptions of one job (SIGTERM to
# worker 0, SIGTERM to worker 1, an operator's notice), then a run to the
# end; preemptctl history lists each incarnation with its source, worker,
# steps and exits, and the restarts' times.
CTL="$top_builddir/tools/preemptctl"
hist_run() { # WHAT: one run of job hist ended by WHAT (w0, w1, op, or done)
    job_start hist 2 --steps "$([ "$1" = done ] && echo 300 || echo 100000)" --step-ms 10
    for i in 0 1; do wait_for "$TMP/hist.$i.out" '"start"' 30; done
    job_trained 20
    case $1 in
    w0) kill -TERM "$(echo $PIDS | cut -d' ' -f1)" ;;
    w1) kill -TERM "$(echo $PIDS | cut -d' ' -f2)" ;;
    op) "$CTL" --etcd "$ETCD_URL" notice hist >/dev/null ;;
    esac
    job_wait 60
    steps="$steps $(same hist 2 exit saved_step)"
    for i in 0 1; do cp "$TMP/hist.$i.trace" "$TMP/hist-$1.$i.trace"; done
}
# the bound: the job is at incarnation 20 (the history of 5 and 9 kept);
# its runs 20 to 23 each delete the history 16 before theirs
etcdctl --endpoints="$ETCD_URL" put /preempt/hist/incarnation 20 >/dev/null
# (worker 0 of each not saved, worker 1 saved: the outcome is "saved")
for i in 5 9; do
    etcdctl --endpoints="$ETCD_URL" put "/preempt/hist/history/$i/0" \
        "exit=75 reason=not-saved at=1000 started=500 restore_ms=0 run=12 committed=0 saves=0" >/dev/null
    etcdctl --endpoints="$ETCD_URL" put "/preempt/hist/history/$i/1" \
        "exit=42 reason=saved at=1000 started=500 restore_ms=0 run=10 committed=10 saves=1" >/dev/null
done
steps=
for what in w0 w1 op done; do hist_run "$what"; done
eq "history: bounded (5 is 16 before 21: deleted, 9 is kept)" \
    "$(etcdctl --endpoints="$ETCD_URL" get --prefix /preempt/hist/history/ --keys-only | grep -o 'history/[0-9]*/' | sort -u | tr '\n' ' ')" \
    "history/20/ history/21/ history/22/ history/23/ history/9/ "
expect_rc 0 "$CTL" --etcd "$ETCD_URL" history hist
expect_output "job hist: 5 incarnation(s) in the history"
"$CTL" --etcd "$ETCD_URL" history hist --json >"$TMP/hist.json"
expect "history: the runs as they ended ($steps)" "$PY" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
runs, total = lines[1:-1], lines[-1]
assert lines[0]["incarnation"] == 9 and "restart_ms" not in lines[0], lines[0]
assert lines[0]["outcome"] == "saved" and lines[0]["exits"] == [75, 42], lines[0]
steps = sys.argv[2].split()
assert [r["incarnation"] for r in runs] == [20, 21, 22, 23], runs
assert [r.get("source") for r in runs] == ["signal", "signal", "operator", None], runs
assert [r.get("worker") for r in runs[:2]] == [0, 1], runs
assert [r["exits"] for r in runs] == [[42, 42]] * 3 + [[0, 0]], runs
assert [str(r["committed_step"]) for r in runs[:3]] == steps[:3], (runs, steps)
assert all(r["agreed_step"] == r["committed_step"] for r in runs[:3]), runs
assert all(r["restart_ms"] > 0 for r in runs[1:]) and "restart_ms" not in runs[0], runs
assert total["trained_ms"] > 0 and total["lost_ms"] == sum(r["restart_ms"] for r in runs[1:]), total
' "$TMP/hist.json" "$steps"
[ "$failures" -eq 0 ] || cat "$TMP/hist.json"
# The same runs as a picture (preemptctl timeline): the newest run of
# restarts, incarnations 20 to 23 (9, before the gap, was another run's);
# a lane per worker, a line where each incarnation began, the notices
# where they came, each worker's commits at the steps the job saved and
# its exit codes. rsvg-convert reads it.
expect_rc 0 "$CTL" --etcd "$ETCD_URL" timeline hist -o "$TMP/hist.svg"
expect_rc 0 rsvg-convert -o "$TMP/hist.png" "$TMP/hist.svg"
expect "timeline of the history: its title" grep -q '>job hist, incarnations 20-23: 2 workers, ' "$TMP/hist.svg"
eq "timeline of the history: a line where each incarnation began" \
    "$(grep -o '>incarnation [0-9]*</text>' "$TMP/hist.svg" | sed 's/[^0-9]//g' | tr '\n' ' ')" "20 21 22 23 "
for i in 0 1; do
    expect "timeline of the history: worker $i's lane" grep -q ">worker $i</text>" "$TMP/hist.svg"
    eq "timeline of the history: worker $i's exits" \
        "$(grep -o "<title>worker $i exited [0-9]*</title>" "$TMP/hist.svg" | tr -dc '0-9 \n' | awk '{ printf "%s ", $2 }')" \
        "42 42 42 0 "
    eq "timeline of the history: worker $i's commits" \
        "$(grep -o "<title>worker $i: checkpoint at step [0-9]* committed</title>" "$TMP/hist.svg" | tr -dc '0-9 \n' |
            awk '{ printf "%s ", $2 }')" "$(echo $steps | awk '{ printf "%s %s %s ", $1, $2, $3 }')"
done
eq "timeline of the history: the notices where they came" \
    "$(grep -o '<title>worker [0-9]*: notice ([a-z]*)</title>' "$TMP/hist.svg" | sed 's/<title>worker \([0-9]*\): notice (\([a-z]*\)).*/\1:\2/' | tr '\n' ' ')" \
    "0:signal 1:signal 0:operator 1:operator "
expect_rc 3 "$CTL" --etcd "$ETCD_URL" timeline nohistory
# The operator's notice reaches every worker's machine as a notice of
# source "operator", from the job's record (the one mapping, the view's),
# and preempt-replay checks it against that record; a worker's own signal
# altered to read as the operator's has no record behind it.
for i in 0 1; do
    expect "history: worker $i's machine was told the operator's notice" \
        grep -q ' ev=notice source=operator ' "$TMP/hist-op.$i.trace"
    expect_rc 0 "$REPLAY" "$TMP/hist-op.$i.trace"
    expect_output "events the job told the machine have their records"
done
expect "history: worker 0's machine was told its signal in run w0" \
    grep -q ' ev=notice source=signal ' "$TMP/hist-w0.0.trace"
sed 's/ ev=notice source=signal / ev=notice source=operator /' "$TMP/hist-w0.0.trace" >"$TMP/op.altered"
expect_rc 1 "$REPLAY" "$TMP/op.altered"
expect_output "has no cause: no record the job's view read, nor answer, before it tells notice"

# The launch's timeline: 4 workers with a grace period, SIGTERM to the
# launcher. The picture renders (rsvg-convert), and says who got the
# notice, when each worker saved (twice: the first save and the final one,
# at the steps the workers report) and how each exited. The workers
# all-reduce in every step, as data-parallel ones do: in lockstep, the
# grace period's final round is never raised past the driver's reach (the
# workers' skew: docs/guide/limits.md), and 3 s of grace leave room for
# it under load.
command -v rsvg-convert >/dev/null || fail "rsvg-convert is missing (Debian: librsvg2-bin; scripts/setup.sh installs it)"
PREEMPT_METRICS_PATH="$TMP/prom/tl-{worker}.prom" "$LAUNCH" --workers 4 --timeline "$TMP/tl.svg" -- "$TRAINER" --etcd "$ETCD_URL" --job tl --ckpt-dir "$TMP/tl" \
    --steps 100000 --step-ms 5 --grace-ms 3000 --allreduce "$(free_port 10000 10000)" --print-steps >"$TMP/tl.out" 2>"$TMP/tl.err" &
lp=$!
for i in 0 1 2 3; do wait_for "$TMP/tl.out" "\"event\":\"step\",\"worker\":$i,\"step\":40}" 30; done
kill -TERM "$lp"
reap 120 "$lp"
eq "timeline: the launch asks for a restart" "$?" 42
expect_rc 0 rsvg-convert -o "$TMP/tl.png" "$TMP/tl.svg"
expect "timeline: a picture 1000 pixels wide" "$PY" -c '
import struct, sys
d = open(sys.argv[1], "rb").read(24)
assert d[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">I", d[16:20])[0] == 1000, d' "$TMP/tl.png"
for i in 0 1 2 3; do
    expect "timeline: worker $i's lane" grep -q ">worker $i</text>" "$TMP/tl.svg"
    expect "timeline: worker $i's notice" grep -q "<title>worker $i: notice (signal)</title>" "$TMP/tl.svg"
    expect "timeline: worker $i's grace period" grep -q "<title>worker $i: grace period: training on</title>" "$TMP/tl.svg"
    eq "timeline: worker $i's two commits, at its saved steps" \
        "$(grep -o "<title>worker $i: checkpoint at step [0-9]* committed" "$TMP/tl.svg" | grep -o 'step [0-9]*' | tr '\n' ' ')" \
        "$(grep "\"event\":\"saved\",\"worker\":$i," "$TMP/tl.out" | grep -o '"step":[0-9]*' | sed 's/"step":/step /' | tr '\n' ' ')"
    expect "timeline: worker $i's exit" grep -q "<title>worker $i exited 42</title>" "$TMP/tl.svg"
done
expect "timeline: the signal to the launch" grep -q "SIGTERM to the launch" "$TMP/tl.svg"
for i in 0 1 2 3; do
    for kind in preemption grace; do
        eq "metrics: worker $i's $kind checkpoint" \
            "$(series "$TMP/prom/tl-$i.prom" "preempt_checkpoints_total{job=\"tl\",worker=\"$i\",kind=\"$kind\",outcome=\"committed\"}")" 1
    done
done
# 64 workers (small shell workers printing the trainer's lines): a lane
# each, every fourth labelled, and it renders
printf '%s\n' '#!/bin/sh' 'echo "{\"event\":\"start\",\"worker\":$2}"' \
    'echo "{\"event\":\"state\",\"worker\":$2,\"from\":\"idle\",\"to\":\"saving\"}"' \
    'echo "{\"event\":\"saved\",\"worker\":$2,\"step\":7}"' >"$TMP/fake.sh"
chmod +x "$TMP/fake.sh"
expect_rc 0 "$LAUNCH" --workers 64 --timeline "$TMP/tl64.svg" -- "$TMP/fake.sh"
# (a lane is counted by its marks and spans: under load the launcher read
# a worker's start and its next state together, 200 ms late, and the
# training between them had no width, so no span; seen in the sanitized
# run, 54 training spans of 64)
eq "timeline of 64: a lane each" \
    "$(grep -o '<title>worker [0-9]*: ' "$TMP/tl64.svg" | sort -u | wc -l | tr -d ' ')" 64
eq "timeline of 64: each worker's checkpoint" \
    "$(grep -c '<title>worker [0-9]*: checkpoint at step 7 committed</title>' "$TMP/tl64.svg")" 64
eq "timeline of 64: every fourth labelled" "$(grep -c '>worker [0-9]*</text>' "$TMP/tl64.svg")" 16
expect_rc 0 rsvg-convert -o "$TMP/tl64.png" "$TMP/tl64.svg"

port=$(free_port 10000 9950)
prometheus-node-exporter --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
    --collector.textfile --collector.textfile.directory="$TMP/prom" >"$TMP/node.log" 2>&1 &
NPID=$!
scrape() { curl -sf --max-time 10 "http://127.0.0.1:$port/metrics" >"$TMP/scrape" 2>/dev/null; }
wait_until 10 "node_exporter answers" scrape && ok
eq "node_exporter: no textfile error" "$(series "$TMP/scrape" node_textfile_scrape_error)" 0
eq "node_exporter: worker 0's preemption" \
    "$(series "$TMP/scrape" 'preempt_preemptions_total{job="obs",outcome="saved",source="signal",worker="0"}')" 1
eq "node_exporter: worker 1's preemption" \
    "$(series "$TMP/scrape" 'preempt_preemptions_total{job="obs",outcome="saved",source="peer",worker="1"}')" 1
for i in 0 1; do
    eq "node_exporter: worker $i's checkpoint" \
        "$(series "$TMP/scrape" "preempt_checkpoints_total{job=\"obs\",kind=\"preemption\",outcome=\"committed\",worker=\"$i\"}")" 1
    eq "node_exporter: worker $i lost no step" "$(series "$TMP/scrape" "preempt_steps_lost_total{job=\"obs\",worker=\"$i\"}")" 0
    expect_rc 0 promtool check metrics <"$TMP/prom/obs-$i.prom"
done
expect "node_exporter: the driver's agreement time" \
    test "$(series "$TMP/scrape" 'preempt_agreement_seconds_count{job="obs",worker="0"}')" -ge 1
[ "$failures" -eq 0 ] || sed 's/^/    /' "$TMP/node.log"
finish
