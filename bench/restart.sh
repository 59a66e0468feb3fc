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
# them). quick: N = 2 only. Section 11b: a node taken and the others
# surviving (worker 1 alone signalled), the whole job started again
# beside survivors that stay in place (--stay-in-place), from the notice
# to every worker training again.
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
    python3 "$here/restart_rows.py" whole "$_n" "$_kb" "$_rc" "$_dir" "$JSON" "${_dd:--1}"
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

# one_run N STATE_KB MODE: a job of N under preempt-launch whose worker 1
# alone is signalled at step 40 (a node taken, the others surviving);
# MODE inplace (--stay-in-place: only worker 1 exits and is started
# again) or whole (every worker exits and is started again, as without
# it). Its row: the time from worker 1's notice to every worker training
# again (a first step after its restart, or after its rebuild in place),
# and to the last worker's first step after it.
one_run() {
    _n=$1 _kb=$2 _mode=$3
    _job=one-$_mode-$_n-$_kb
    _dir=$TMP/restart/$_job
    mkdir -p "$_dir"
    cat >"$_dir/w.sh" <<WEOF
#!/bin/sh
for a; do [ "\$prev" = --worker ] && i=\$a; prev=\$a; done
[ "\$i" = 1 ] && set -- "\$@" --raise-at 40
exec "$TOOLS/preempt-trainer" "\$@"
WEOF
    chmod +x "$_dir/w.sh"
    _opt=
    [ "$_mode" = inplace ] && _opt=--stay-in-place
    # shellcheck disable=SC2086 # its one word, or none
    "$TOOLS/preempt-launch" --workers "$_n" -- "$_dir/w.sh" --etcd "$ETCD_URL" --job "$_job" \
        --ckpt-dir "$_dir/ckpt" --steps 80 --step-ms 10 --state-kb "$_kb" --max-to-keep 1 --print-steps $_opt \
        >"$_dir/launch.out" 2>"$_dir/launch.err" &
    _pid=$!
    reap 600 "$_pid"
    _rc=$?
    python3 "$here/restart_rows.py" one "$_mode" "$_n" "$_kb" "$_rc" "$_dir" "$JSON"
}

echo "11b. A node taken, the others surviving: worker 1 alone is signalled at step 40, N under preempt-launch;"
echo "  whole: every worker exits 42 and is started again; inplace (--stay-in-place): only worker 1 is, the"
echo "  others rejoin in their processes. ms from worker 1's notice (notice) and from the last worker to stop"
echo "  training (stopped) to every worker training again; processes started again; workers rebuilt in place"
printf '  %3s %9s %8s %9s %9s %10s %8s\n' N state mode notice stopped relaunched inplace
if [ -n "$QUICK" ]; then
    one_run 2 64 whole
    one_run 2 64 inplace
else
    for n in 2 8 32; do
        one_run "$n" 64 whole
        one_run "$n" 64 inplace
    done
    one_run 2 1048576 whole
    one_run 2 1048576 inplace
fi
