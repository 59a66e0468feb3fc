#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# bench/paths.sh TOOLS ETCD_URL DIR JSON: make bench's section 10 (run by
# preempt-bench, bench/paths.c), the paths a notice can meet. A job of 4
# preempt-trainer workers in lockstep (a blocking all-reduce inside every
# step, as data-parallel training does), 10 ms steps, gets one notice (or
# two) at each moment of the machine's life: while it trains, while a round
# agrees, at a periodic checkpoint's report, as a two-phase one's persist
# ends and while it persists, in a grace period, a second notice. Each
# worker's termination record says where it stopped (run), what the job
# saved there (committed_step) and what the restart will train again
# (steps_lost); the table gives, per path, the exit codes, the highest of
# those steps and the notice-to-exit time, and JSON gets the same. The
# goal: 0 lost wherever the deadline (30 s here: bound_ms) leaves room for
# a save.
set -u
TRAINER=$1/preempt-trainer ETCD_URL=$2 TMP=$3 PATHS_JSON=$4
here=$(dirname "$0")
# shellcheck source=tests/wait-lib.sh
. "$here/../tests/wait-lib.sh"
# shellcheck source=tests/etcd-lib.sh
. "$here/../tests/etcd-lib.sh"

# paths_run NAME ARGS0 ARGS1 ARGS2 ARGS3 -- COMMON...: one path's job.
paths_run() {
    _name=$1
    _a0=$2 _a1=$3 _a2=$4 _a3=$5
    shift 6
    _dir=$TMP/paths/$_name
    mkdir -p "$_dir"
    _port=$(free_port 10000 10000)
    _pids=
    for _w in 0 1 2 3; do
        _own=
        eval "_own=\$_a$_w"
        # shellcheck disable=SC2086 # the worker's own words
        PREEMPT_TERMINATION_LOG="$_dir/term.$_w.json" "$TRAINER" --etcd "$ETCD_URL" \
            --job "paths-$_name" --worker $_w --workers 4 --ckpt-dir "$_dir/ckpt" --steps 100000 --step-ms 10 \
            --max-to-keep 0 --allreduce "$_port" --trace "$_dir/trace.$_w" "$@" $_own \
            >"$_dir/out.$_w" 2>"$_dir/err.$_w" &
        _pids="$_pids $!"
    done
    _rcs=
    for _p in $_pids; do
        reap 120 "$_p"
        _rcs="$_rcs $?"
    done
    # shellcheck disable=SC2086 # the statuses, split
    python3 - "$_name" "$_dir" "$PATHS_JSON" $_rcs <<'EOF'
import json, os, sys
name, d, out = sys.argv[1:4]
rcs = [int(x) for x in sys.argv[4:]]
recs = []
for w in range(4):
    p = os.path.join(d, "term.%d.json" % w)
    recs.append(json.load(open(p)) if os.path.exists(p) else None)
ok = [r for r in recs if r]
row = {
    "path": name,
    "codes": rcs,
    "records": len(ok),
    "committed_step": max((r["committed_step"] for r in ok), default=0),
    "run": max((r["run"] for r in ok), default=0),
    "steps_lost": max((r["steps_lost"] for r in ok), default=-1),
    "grace_steps": max((r["grace_steps"] for r in ok), default=0),
    "notice_to_exit_ms": max((r["notice_to_exit_ms"] for r in ok), default=0),
}
rows = json.load(open(out)) if os.path.exists(out) else []
rows.append(row)
json.dump(rows, open(out, "w"))
print("  %-34s %-12s %8d %8d %6d %7d %9d" % (name, " ".join(map(str, rcs)), row["committed_step"], row["run"],
      row["steps_lost"], row["grace_steps"], row["notice_to_exit_ms"]))
EOF
}

rm -f "$PATHS_JSON"
echo "10. Paths: a notice at each moment, a job of 4 in lockstep (10 ms steps, 30 s deadline)"
echo "  the highest over the workers: the step saved, the step stopped at (run), the steps the restart"
echo "  trains again (lost), those trained after the first save that a later one kept (grace), notice to exit"
printf '  %-34s %-12s %8s %8s %6s %7s %9s\n' path codes saved run lost grace exit_ms
paths_run training "--raise-at 30" "" "" "" -- --state-kb 64
paths_run agreeing "--raise-at 30" "" "" "--raise-at 31" -- --state-kb 64
paths_run periodic-report "--raise-at-save-end 1 --save-ms 300" "" "" "" -- --state-kb 64 --save-every-steps 20
paths_run two-phase-persisted "--raise-at-save-end 1 --state-kb 32768" "" "" "" -- --state-kb 64 \
    --save-every-steps 20 --two-phase
export PREEMPT_PERSIST=chunked
paths_run two-phase-persisting "--raise-after-save 1:1" "" "" "" -- --state-kb 65536 --step-kb 64 \
    --save-every-steps 20 --two-phase
unset PREEMPT_PERSIST
paths_run grace-period "--raise-at 30" "" "" "" -- --state-kb 64 --grace-ms 2000
paths_run second-notice "--raise-at 30 --raise-at 33" "" "" "" -- --state-kb 64
