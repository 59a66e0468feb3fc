#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# bench/restart.sh TOOLS ETCD_URL DIR JSON [quick]: make bench's section 11
# (run by preempt-bench, bench/restart.c), what a restart costs. A job of N
# preempt-trainer workers under preempt-launch (10 ms steps) is preempted
# at step 40 (SIGTERM on every worker), exits 42, and the launcher starts
# each worker again; they restore the committed step and train to step 80.
# From the launcher's lines (each with "t_ms") and the trainer's (its exit
# line, printed when its handler exits; its start line: main_ms, main() to
# the handler's creation; handler_ms, the creation: a job's joining and
# barriers and the restore; restore_ms, the restore callback reading the
# checkpoint), the time from the last worker's exit to every worker
# training again (its first step's end), beside preemptctl history's
# restart (from the workers' records: the last exit to every worker's
# start), and the last worker's path split into
#   exiting: its exit to its process's end (the last writes, teardown)
#   start:   its process's end to its handler's creation: the launcher's
#            restart, process start, the model's memory
#   join:    joining the job and its barriers, waiting for the workers
#            that arrive later, and the checkpoint's verification
#            (handler_ms - restore_ms)
#   restore: the restore callback (the checkpoint's bytes)
#   first:   its start line to its first step's end (a collective's setup). N = 2, 8, 32 with 64 KiB of
# state; then N = 2 with 1 GiB each, beside dd's read of one worker's
# checkpoint file (the floor: the same bytes, warm as the restore found
# them). quick: N = 2 only.
set -u
TOOLS=$1 ETCD_URL=$2 TMP=$3 JSON=$4 QUICK=${5:-}
here=$(dirname "$0")
# shellcheck source=tests/wait-lib.sh
. "$here/../tests/wait-lib.sh"

# restart_run N STATE_KB: one job; its row on stdout and in $JSON
restart_run() {
    _n=$1 _kb=$2
    _job=restart-$_n-$_kb
    _dir=$TMP/restart/$_job
    mkdir -p "$_dir"
    "$TOOLS/preempt-launch" --workers "$_n" -- "$TOOLS/preempt-trainer" --etcd "$ETCD_URL" --job "$_job" \
        --ckpt-dir "$_dir/ckpt" --steps 80 --step-ms 10 --state-kb "$_kb" --max-to-keep 1 --print-steps \
        --raise-at 40 >"$_dir/launch.out" 2>"$_dir/launch.err" &
    _pid=$!
    reap 600 "$_pid"
    _rc=$?
    "$TOOLS/preemptctl" --etcd "$ETCD_URL" history "$_job" --json >"$_dir/history.json" 2>/dev/null
    _dd=
    if [ "$_kb" -ge 1048576 ]; then
        _f=$(find "$_dir/ckpt/worker-0" -name model -type f | head -n 1)
        _t0=$(now_ms)
        dd if="$_f" of=/dev/null bs=1M 2>/dev/null
        _dd=$(($(now_ms) - _t0))
    fi
    python3 - "$_n" "$_kb" "$_rc" "$_dir" "$JSON" "${_dd:--1}" <<'EOF'
import json, os, sys
n, kb, rc, d, out, dd = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
decided, ended, starts, firsts, launched = {}, {}, {}, {}, set()
for line in open(os.path.join(d, "launch.out")):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    w, ev = e.get("worker"), e.get("event")
    if ev == "exit" and e.get("code") == 42 and w not in launched:
        decided[w] = e["t_ms"]          # the handler's exit: training stopped
    elif ev == "exited" and e.get("code") == 42:
        ended[w] = e["t_ms"]            # the process ended (the launcher saw it)
    elif ev == "launch" and e.get("attempt", 1) >= 2:
        launched.add(w)
    elif ev == "start" and w in launched:
        starts[w] = e
    elif ev == "step" and w in starts and w not in firsts:
        firsts[w] = e["t_ms"]
row = {"workers": n, "state_kib": kb, "launch_rc": rc, "restarted": len(firsts)}
hist = [json.loads(l) for l in open(os.path.join(d, "history.json")) if l.strip()]
restarts = [h["restart_ms"] for h in hist if "restart_ms" in h]
if len(decided) == n and len(ended) == n and len(firsts) == n:
    last = max(decided, key=decided.get)  # the last worker to stop training: the critical path
    s = starts[last]
    row.update({"total_ms": max(firsts.values()) - decided[last],
                "started_ms": max(x["t_ms"] for x in starts.values()) - decided[last],
                "exiting_ms": ended[last] - decided[last],
                "start_ms": s["t_ms"] - s["handler_ms"] - ended[last],
                "join_ms": s["handler_ms"] - s["restore_ms"], "restore_ms": s["restore_ms"],
                "first_step_ms": firsts[last] - s["t_ms"],
                "history_restart_ms": restarts[-1] if restarts else -1,
                # the worker whose handler creation began last waits for no
                # one to arrive: its joining and barriers are the protocol's own
                "last_join_ms": min((x["handler_ms"] - x["restore_ms"] for x in starts.values()
                                     if x["t_ms"] - x["handler_ms"] == max(y["t_ms"] - y["handler_ms"]
                                                                           for y in starts.values()))),
                "restored_steps": sorted({x["restored_step"] for x in starts.values()})})
if dd >= 0:
    row["dd_read_ms"] = dd
rows = json.load(open(out)) if os.path.exists(out) else []
rows.append(row)
json.dump(rows, open(out, "w"))
size = "%d MiB" % (kb // 1024) if kb >= 1024 else "%d KiB" % kb
if "total_ms" in row:
    print("  %3d %9s %7d %8d %8d %7.0f %7.1f %8.1f %6d %8d %9.1f%s" % (
        n, size, row["total_ms"], row["started_ms"], row["history_restart_ms"], row["exiting_ms"], row["start_ms"],
        row["join_ms"], row["restore_ms"], row["first_step_ms"], row["last_join_ms"],
        ("   dd %d ms" % dd) if dd >= 0 else ""))
else:
    print("  %3d %9s  the restart did not complete (launch exit %d, %d of %d workers trained again)" % (
        n, size, rc, len(firsts), n))
EOF
}

rm -f "$JSON"
echo "11. Restart: a job of N under preempt-launch, SIGTERM to every worker at step 40 (10 ms steps)"
echo "  ms from the last worker's exit (its handler's) to every worker training again (total: the first"
echo "  step's end) and to every start line (started), beside preemptctl history's restart (the same"
echo "  span from the workers' records); then that last worker's path: its process ending after the"
echo "  exit (exiting), the launcher's restart, process start and model memory up to the handler's"
echo "  creation (start), joining and barriers (join), the restore callback (restore), the start line"
echo "  to its first step's end (first); and the joining and barriers of the worker that began its"
echo "  handler's creation last, who waits for no one to arrive (lastjoin: the protocol's own share)"
printf '  %3s %9s %7s %8s %8s %7s %7s %8s %6s %8s %9s\n' N state total started history exiting start join restore \
    first lastjoin
if [ -n "$QUICK" ]; then
    restart_run 2 64
else
    for n in 2 8 32; do restart_run "$n" 64; done
    restart_run 2 1048576
fi
