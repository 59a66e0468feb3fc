/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/trace/trace-job.c: a worker's job lines, as its trace holds them
 * (trace-internal.h, "A worker's job lines"): the handler's trace file
 * and the simulator's traces in memory are written by this one code. */
#include "trace-internal.h"

/* The job-view header (once per trace) ahead of the first job line. */
static void header(struct preempt_job_trace *jt, const struct preempt_view *v)
{
    char line[PREEMPT_TRACE_LINE_MAX];

    if (jt->view_header)
        return;
    jt->view_header = true;
    jt->line(line, preempt_trace_format_view_header_(line, sizeof(line), v), jt->arg);
}

void preempt_job_trace_decl_(const struct preempt_decl *m, unsigned instance, unsigned from, unsigned input,
                             unsigned to, unsigned action, void *arg)
{
    struct preempt_job_trace *jt = arg;
    char line[PREEMPT_TRACE_LINE_MAX];

    (jt->decl_line ? jt->decl_line : jt->line)(
        line, preempt_trace_format_decl_(line, sizeof(line), jt->now_ms(jt->arg), m, instance, from, input, to, action),
        jt->arg);
}

void preempt_job_trace_view_(struct preempt_job_trace *jt, const struct preempt_view *v,
                             const struct preempt_view_in *in, const struct preempt_view_ev *ev)
{
    char line[PREEMPT_TRACE_LINE_MAX];

    header(jt, v);
    jt->line(line, preempt_trace_format_view_(line, sizeof(line), jt->now_ms(jt->arg), in, ev), jt->arg);
}

void preempt_job_trace_answer_(struct preempt_job_trace *jt, const struct preempt_view *v,
                               const struct preempt_job_answer *a)
{
    char line[PREEMPT_TRACE_LINE_MAX];

    header(jt, v);
    jt->line(line, preempt_trace_format_answer_(line, sizeof(line), jt->now_ms(jt->arg), v->n, a), jt->arg);
}

void preempt_job_trace_start_(struct preempt_job_trace *jt, const struct preempt_coord *c)
{
    jt->view_header = false; /* a later coordinator (a survivor in place): its view's header before its lines */
    preempt_trace_coord_start_(c, jt->line, jt->arg);
}

void preempt_job_trace_in_(struct preempt_job_trace *jt, const struct preempt_coord_in *in, unsigned depth)
{
    preempt_trace_coord_in_(in, depth, jt->line, jt->arg);
}

void preempt_job_trace_out_(struct preempt_job_trace *jt, const struct preempt_coord_out *out, unsigned depth)
{
    char line[PREEMPT_TRACE_LINE_MAX];
    int n = preempt_trace_format_coord_out_(line, sizeof(line), out, depth);

    if (n != 0) /* 0: an output the trace does not hold */
        jt->line(line, n, jt->arg);
}
