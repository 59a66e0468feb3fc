#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/bench-smoke.sh: make bench's smoke run (--quick: tiny sizes, N = 1
# and 2, 3 trials) keeps every section working. No time is asserted; what is
# checked are counts and outcomes that do not depend on the machine's speed.
. "$top_srcdir/tests/lib.sh"

export top_srcdir top_builddir
VALGRIND=$(command -v valgrind || true)
STRACE=$(command -v strace || true)
export VALGRIND STRACE
[ -n "$VALGRIND" ] || fail "valgrind is not installed (scripts/setup.sh installs it)"
[ -n "$STRACE" ] || fail "strace is not installed (scripts/setup.sh installs it)"
# A sanitized build (configure --enable-asan/--enable-ubsan): callgrind
# cannot run it, so instructions are counted by the plain build's run only;
# LeakSanitizer cannot run under strace's ptrace.
if [ -n "${SANITIZE:-}" ]; then
    VALGRIND=
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
    export ASAN_OPTIONS
fi

if expect_rc 0 sh "$top_srcdir/bench/run.sh" --quick --json "$TMP/bench.json"; then
    for s in "1. Per-step cost" "2-4. Agreement" "5. Checkpoint commit" "6. Grace-period planning" "7. Memory" \
        "8. In process" "10. Paths" "11. Restart"; do
        expect_output "$s"
    done
fi

# check NAME PYTHON-EXPRESSION: the expression holds on the JSON (as d).
check() {
    if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$TMP/bench.json" \
        2>"$TMP/py.err"; then
        ok
    else
        fail "$1: ($2) does not hold"
        sed 's/^/    /' "$TMP/py.err"
    fi
}

check "every section ran" "all(k in d and not d[k].get('failed') for k in ('step','agree','ckpt','plan','memory','scale','paths','restart'))"
check "11b: in place, only the signalled worker started again and the other rebuilt in its process, training again" \
    "any(r['section'] == '11b' and r['mode'] == 'inplace' and r['relaunched'] == 1 and r['in_place'] == 1 and r['notice_to_training_ms'] > 0 for r in d['restart']['rows'])"
check "11b: the whole job's restart beside it, every worker started again" \
    "any(r['section'] == '11b' and r['mode'] == 'whole' and r['relaunched'] == 2 and r['in_place'] == 0 and r['notice_to_training_ms'] > 0 for r in d['restart']['rows'])"
# The idle asynchronous hook makes no system call; the synchronous call runs
# the loop once per step (one epoll_wait), nothing else.
check "async: no system call per step" "d['step']['async']['syscalls_per_step'] == 0"
# with the progress page a supervising launcher maps (--hang-timeout):
# plain stores at the boundary, still none
check "supervised: no system call per step" "d['step']['supervised']['syscalls_per_step'] == 0"
check "sync: one epoll_wait per step" "abs(d['step']['sync']['syscalls']['epoll_wait'] - 1) < 0.01 and len(d['step']['sync']['syscalls']) == 1"
check "bare: no system call per step" "d['step']['bare']['syscalls_per_step'] == 0"
[ -n "${SANITIZE:-}" ] ||
    check "callgrind counted instructions" "d['step']['async']['overhead_instructions_per_step'] > 0"
# Agreement: local mode and a 2-worker job, every trial saved and exited 42
# (a trial that does not fails the section); etcd saw the preemption.
check "agreement rows" "[r['workers'] for r in d['agree']['rows']] == [1, 2]"
check "every trial measured" "all(r['trials'] == 3 for r in d['agree']['rows'])"
check "the floor was measured" "d['agree']['rows'][1]['floor_ms']['samples'] == 3"
check "etcd traffic counted" "d['agree']['rows'][1]['etcd']['requests'] > 0 and d['agree']['rows'][1]['etcd']['kib'] > 0"
# In process (N handlers on one loop): every trial saved and exited 42, and
# etcd sent at most 4N + 10 messages per preemption in every trial: the
# save step travels with the notice, so a worker gets two watch events and
# writes one report, and at its exit its history record (version 0.1's
# protocol sent 236 at N = 8; the acknowledgements of the next, 45, against
# 35 here, 27 before the history record).
check "in-process rows" "[r['workers'] for r in d['scale']['rows']] == [2, 8] and all(r['trials'] == 3 for r in d['scale']['rows'])"
check "in process: O(N) messages" "all(0 < r['etcd']['messages_sent_max'] <= 4 * r['workers'] + 10 for r in d['scale']['rows'])"
# The claim carries its driver's notice: a preemption sends each worker
# the claim's two events (claim, step) and the decision's one (with the
# driver's notice as a record of its own, the claim's message held three:
# 4N, 32 at N = 8).
check "in process: 3N watch events" "all(0 < r['etcd']['watch_events'] <= 3 * r['workers'] for r in d['scale']['rows'])"
check "in process: both fan-out floors measured" "all(r[k]['samples'] == 3 and r[k]['p50'] > 0 for r in d['scale']['rows'] for k in ('fanout_floor_ms', 'fanout_claim_ms'))"
# Planning on the virtual clock is deterministic: the measured planner
# never misses a deadline it could have kept; TF's rule does.
check "our planner misses none" "d['plan']['libpreempt']['missed'] == 0"
check "TF's rule misses some" "d['plan']['tf']['missed'] > 0"
check "checkpoint and dd both measured" "d['ckpt']['libpreempt_s'] > 0 and d['ckpt']['dd_s'] > 0"
# (Under AddressSanitizer the shadow memory dwarfs what the library adds.)
[ -n "${SANITIZE:-}" ] ||
    check "memory: the library costs something" "d['memory']['local_kib'] > d['memory']['bare_kib'] and d['memory']['etcd_kib'] > 0"

check "persist: every backend's row at both sizes" "sorted(d['persist']) == ['aio', 'aio-4k', 'chunked', 'io_uring'] and all(sorted(r) == ['4_mib', '8_mib'] for r in d['persist'].values())"

# The paths a notice can meet (real jobs of 4, 30 s deadlines): every
# worker exits saved with a termination record, and, whatever the machine's
# speed, none loses a step: each saves the step it stopped at. (A grace
# period's final round may end aborted on a loaded machine, and the job
# then exits with its first save: that path's count is not checked.) Before
# the fix, "two-phase-persisting" lost 41 steps.
check "paths: every path's job ran" "[r['path'] for r in d['paths']['rows']] == ['training', 'agreeing', 'periodic-report', 'two-phase-persisted', 'two-phase-persisting', 'grace-period', 'second-notice']"
check "paths: every worker exits saved, with its record" "all(r['codes'] == [42] * 4 and r['records'] == 4 for r in d['paths']['rows'])"
for p in training agreeing periodic-report two-phase-persisted two-phase-persisting second-notice; do
    check "paths: $p: no step lost" "[r['steps_lost'] for r in d['paths']['rows'] if r['path'] == '$p'] == [0]"
done

# The restart (quick: a job of 2 under preempt-launch): both workers
# trained again from the same restored step, the launch ended 0, and the
# span was measured both ways (the launcher's lines, preemptctl history).
check "restart: a job of 2, both trained again" "[(r['workers'], r['restarted'], r['launch_rc']) for r in d['restart']['rows'] if r['section'] == '11'] == [(2, 2, 0)]"
check "restart: one restored step, past the preemption's" "[len(r['restored_steps']) == 1 and r['restored_steps'][0] > 40 for r in d['restart']['rows'] if r['section'] == '11'] == [True]"
check "restart: measured from the lines and from the history" "all(r['total_ms'] > 0 and r['started_ms'] > 0 and r['history_restart_ms'] > 0 and r['last_join_ms'] > 0 for r in d['restart']['rows'] if r['section'] == '11')"

# --backends runs some of persist's rows (here: one)
if expect_rc 0 "$top_builddir/bench/preempt-bench" --quick --only persist --backends chunked --dir "$TMP" \
    --json "$TMP/bench.json"; then
    check "--backends chunked: its row alone" "list(d['persist']) == ['chunked']"
fi

# Bad usage is refused.
expect_rc 2 "$top_builddir/bench/preempt-bench" --only nothing
expect_output "unknown section 'nothing'"
expect_rc 2 "$top_builddir/bench/preempt-bench" --backends aio,nope
expect_output "unknown backend 'nope'"
expect_rc 2 "$top_builddir/bench/preempt-bench" --trials 0
finish
