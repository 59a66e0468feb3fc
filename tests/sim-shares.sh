# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# The simulator runs the handler's start-up and trace wiring; it copies
# neither. A worker's start-up in a job (which input each answer is, the
# restore machine's step, the error a failure carries, the set-aside and
# the join again) is lib/job/start.c's driver, and the job's lines of a
# worker's trace (the header once, the machines' transitions, the view's,
# the coordinator's) are lib/trace/trace-job.c's. The handler's start-up
# (lib/handler/handler-start.c) and the simulator (tests/sim/sim.c) both
# call them, and neither steps the restore machine, chooses its inputs or
# formats a job line itself: a copy in either (as sim.c held until now,
# a 9-way switch over the machine's actions and the handler's trace
# wiring) fails here.
. "$top_srcdir/tests/lib.sh"
NM=${NM:-nm}
b=$(cd "$top_builddir" && pwd)

sim=$(find "$b/tests/sim" -name '*-sim.o' | head -n 1)
hstart="$b/lib/handler/.libs/libpreempt_la-handler-start.o"
handler="$b/lib/handler/.libs/libpreempt_la-handler.o"
for o in "$sim" "$hstart" "$handler"; do
    [ -n "$o" ] && [ -f "$o" ] && ok || fail "${o:-sim.o} is not built (the test cannot see)"
done
mkdir "$TMP/job" "$TMP/trace"
(cd "$TMP/job" && ar x "$b/lib/job/.libs/libpreempt-job.a") || fail "ar x libpreempt-job.a"
(cd "$TMP/trace" && ar x "$b/lib/trace/.libs/libpreempt-trace.a") || fail "ar x libpreempt-trace.a"

# defined once, where the test says
defines() { # OBJ-PATTERN DIR SYMBOL...
    pat=$1 dir=$2
    shift 2
    o=$(find "$dir" -name "$pat" | head -n 1)
    [ -n "$o" ] || { fail "no $pat in $dir"; return; }
    for s in "$@"; do
        $NM --defined-only "$o" | grep -q " T $s\$" && ok || fail "$(basename "$o") does not define $s"
    done
}
defines '*-start.o' "$TMP/job" preempt_start_joined_ preempt_start_barrier_
defines '*-trace-job.o' "$TMP/trace" preempt_job_trace_decl_ preempt_job_trace_view_ preempt_job_trace_answer_ \
    preempt_job_trace_start_ preempt_job_trace_in_ preempt_job_trace_out_

# both shells call them
calls() { # WHO OBJ SYMBOL...
    who=$1 o=$2
    shift 2
    for s in "$@"; do
        $NM -u "$o" | awk '{ print $2 }' | grep -qx "$s" && ok || fail "$who does not call $s"
    done
}
calls "the handler's start-up" "$hstart" preempt_start_joined_ preempt_start_barrier_ preempt_job_trace_start_
calls "the simulator" "$sim" preempt_start_joined_ preempt_start_barrier_ preempt_job_trace_start_ \
    preempt_job_trace_view_ preempt_job_trace_answer_ preempt_job_trace_in_ preempt_job_trace_out_
calls "the handler" "$handler" preempt_job_trace_view_ preempt_job_trace_answer_ preempt_job_trace_in_ \
    preempt_job_trace_out_

# and neither does the driver's or the wiring's work itself
own='^(preempt_decl_step_|preempt_decl_step_traced_|preempt_rst_decl_|preempt_rst_restored_|preempt_rst_job_|preempt_rst_report_|preempt_trace_format_decl_|preempt_trace_format_view_|preempt_trace_format_view_header_|preempt_trace_format_answer_|preempt_trace_format_coord_out_|preempt_trace_coord_in_|preempt_trace_coord_start_)$'
: >"$TMP/bad"
for o in "$sim" "$b"/lib/handler/.libs/*.o; do
    [ -f "$o" ] || continue
    $NM -u "$o" | awk '{ print $2 }' | grep -E "$own" | sed "s|^|$(basename "$o"): |" >>"$TMP/bad"
done
# the check can see: the driver steps the machine, the wiring formats lines
$NM -u "$TMP"/job/*-start.o | grep -q ' preempt_decl_step_traced_$' && ok ||
    fail "nm sees no step of the restore machine in start.o (the test cannot see)"
$NM -u "$TMP"/trace/*-trace-job.o | grep -q ' preempt_trace_format_view_$' && ok ||
    fail "nm sees no view line formatted in trace-job.o (the test cannot see)"
if [ -s "$TMP/bad" ]; then
    fail "a shell does the start-up driver's or the trace wiring's work itself:
$(sed 's/^/    /' "$TMP/bad")"
else
    ok
fi
# in the source too: the simulator names none of the restore machine's
# inputs or actions
if grep -n 'PREEMPT_RST_\|preempt_rst_' "$top_srcdir"/tests/sim/*.c >"$TMP/src"; then
    fail "tests/sim/ steps start-up's machine itself:
$(sed 's/^/    /' "$TMP/src")"
else
    ok
fi
finish
