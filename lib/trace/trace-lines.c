/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/trace/trace-lines.c: the job's lines in text traces, formatted
 * (trace-internal.h): the view's inputs and meanings, the claim's, the
 * lost workers', the requests' answers, the declared machines'
 * transitions. What reads them again is the replay's (view-replay.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "job/job.h"
#include "trace-internal.h"

int preempt_trace_format_view_header_(char *buf, size_t size, const struct preempt_view *v)
{
    return snprintf(buf, size, "job-view job=%s inc=%" PRIu64 " workers=%u me=%u", v->jobp, v->inc, v->n, v->me);
}

int preempt_trace_format_view_(char *buf, size_t size, uint64_t t_ms, const struct preempt_view_in *in,
                               const struct preempt_view_ev *ev)
{
    char key[PREEMPT_KEY_MAX + 65], value[PREEMPT_TRACE_VALUE_MAX + 1], meaning[PREEMPT_VIEW_MEANING_MAX];

    (void)preempt_view_format_(meaning, sizeof(meaning), ev);
    switch (in->kind) {
    case PREEMPT_VIEW_IN_RECORD:
        (void)preempt_trace_encode_(key, sizeof(key), in->key ? in->key : "", PREEMPT_KEY_MAX + 64);
        if (!in->put)
            return snprintf(buf, size, "job t=%" PRIu64 " del k=%s => %s", t_ms, key, meaning);
        (void)preempt_trace_encode_(value, sizeof(value), in->value ? in->value : "", PREEMPT_TRACE_VALUE_MAX);
        return snprintf(buf, size, "job t=%" PRIu64 " put k=%s v=%s => %s", t_ms, key, value, meaning);
    case PREEMPT_VIEW_IN_EPISODE:
        return snprintf(buf, size, "job t=%" PRIu64 " episode ep=%" PRIu64 " => %s", t_ms, in->ep, meaning);
    case PREEMPT_VIEW_IN_REPORTS:
        if (in->wall) /* older traces lack it */
            return snprintf(buf, size, "job t=%" PRIu64 " reports round=%u step=%" PRIu64 " wall=%" PRIu64 " => %s",
                            t_ms, in->round, in->step, in->wall, meaning);
        return snprintf(buf, size, "job t=%" PRIu64 " reports round=%u step=%" PRIu64 " => %s", t_ms, in->round,
                        in->step, meaning);
    case PREEMPT_VIEW_IN_MEMBERS:
        return snprintf(buf, size, "job t=%" PRIu64 " members => %s", t_ms, meaning);
    case PREEMPT_VIEW_IN_MEMBERS_END:
        return snprintf(buf, size, "job t=%" PRIu64 " members-end => %s", t_ms, meaning);
    case PREEMPT_VIEW_IN_REREAD:
        break;
    }
    return snprintf(buf, size, "job t=%" PRIu64 " reread => %s", t_ms, meaning);
}

int preempt_trace_format_claim_(char *buf, size_t size, uint64_t t_ms, const struct preempt_claim_answer *a,
                                const struct preempt_claim_says *says)
{
    char held[PREEMPT_TRACE_VALUE_MAX + 1], meaning[PREEMPT_VIEW_MEANING_MAX];

    (void)preempt_trace_encode_(held, sizeof(held), a->held ? a->held : "", PREEMPT_TRACE_VALUE_MAX);
    (void)preempt_claim_says_format_(meaning, sizeof(meaning), says);
    return snprintf(buf, size, "answer t=%" PRIu64 " claim status=%d succeeded=%d read=%d held=%s left=%d => %s",
                    t_ms, a->status, a->succeeded, a->read, held, a->left, meaning);
}

int preempt_trace_format_lost_(char *buf, size_t size, uint64_t t_ms, unsigned n, const struct preempt_lost_read *r,
                               const struct preempt_lost_says *says)
{
    char absent[PREEMPT_TRACE_VALUE_MAX + 1], meaning[PREEMPT_VIEW_MEANING_MAX];

    if (!r->complete)
        (void)snprintf(absent, sizeof(absent), "-"); /* nothing was read */
    else if (preempt_lost_absent_format_(absent, sizeof(absent), r->absent, n) < 0)
        (void)snprintf(absent, sizeof(absent), "cut");
    (void)preempt_lost_says_format_(meaning, sizeof(meaning), says);
    return snprintf(buf, size,
                    "answer t=%" PRIu64 " members status=%d complete=%d known=%d absent=%s grace=%" PRIu64 " => %s",
                    t_ms, r->status, r->complete, r->known, absent, r->grace_ms, meaning);
}

int preempt_trace_format_write_(char *buf, size_t size, uint64_t t_ms, int status)
{
    return snprintf(buf, size, "answer t=%" PRIu64 " write status=%d => failed", t_ms, status);
}

/* What a grant's answer says: the meaning the replay computes again. */
int preempt_trace_grant_says_(char *buf, size_t size, int status, uint64_t ttl_s)
{
    return status < 0 ? snprintf(buf, size, "failed") : snprintf(buf, size, "granted ttl=%" PRIu64, ttl_s);
}

int preempt_trace_format_grant_(char *buf, size_t size, uint64_t t_ms, int status, int64_t ttl_s)
{
    char says[32];
    uint64_t ttl = ttl_s > 0 ? (uint64_t)ttl_s : 0;

    (void)preempt_trace_grant_says_(says, sizeof(says), status, ttl);
    return snprintf(buf, size, "answer t=%" PRIu64 " grant status=%d ttl=%" PRIu64 " => %s", t_ms, status, ttl, says);
}

/* What the answer to the notice's put says (the notice record machine's
 * input), and what a read of the records says (the watch machine's): one
 * text for the trace line and for its replay. */
const char *preempt_trace_put_says_(int status)
{
    return preempt_decl_input_(&preempt_pub_decl_, preempt_pub_of_put_(status));
}

const char *preempt_trace_records_says_(int status)
{
    return preempt_decl_input_(&preempt_watch_decl_, preempt_watch_of_read_(status));
}

int preempt_trace_format_put_(char *buf, size_t size, uint64_t t_ms, int status)
{
    return snprintf(buf, size, "answer t=%" PRIu64 " put status=%d => %s", t_ms, status, preempt_trace_put_says_(status));
}

int preempt_trace_format_keep_(char *buf, size_t size, uint64_t t_ms, int status, int64_t ttl_s)
{
    uint64_t ttl = ttl_s > 0 ? (uint64_t)ttl_s : 0;

    return snprintf(buf, size, "answer t=%" PRIu64 " keep status=%d ttl=%" PRIu64 " => %s", t_ms, status, ttl,
                    preempt_keep_says_name_(preempt_keep_answer_(status, ttl_s)));
}

int preempt_trace_format_records_(char *buf, size_t size, uint64_t t_ms, int status)
{
    return snprintf(buf, size, "answer t=%" PRIu64 " records status=%d => %s", t_ms, status, preempt_trace_records_says_(status));
}

int preempt_trace_format_answer_(char *buf, size_t size, uint64_t now_ms, unsigned n,
                                 const struct preempt_job_answer *a)
{
    switch (a->kind) {
    case PREEMPT_JOB_ANSWER_CLAIM:
        return preempt_trace_format_claim_(buf, size, now_ms, a->claim, a->claim_says);
    case PREEMPT_JOB_ANSWER_MEMBERS:
        return preempt_trace_format_lost_(buf, size, a->read->now_ms, n, a->read, a->lost_says);
    case PREEMPT_JOB_ANSWER_WRITE:
        return preempt_trace_format_write_(buf, size, now_ms, a->status);
    case PREEMPT_JOB_ANSWER_GRANT:
        return preempt_trace_format_grant_(buf, size, now_ms, a->status, a->ttl_s);
    case PREEMPT_JOB_ANSWER_PUT:
        return preempt_trace_format_put_(buf, size, now_ms, a->status);
    case PREEMPT_JOB_ANSWER_KEEP:
        return preempt_trace_format_keep_(buf, size, now_ms, a->status, a->ttl_s);
    case PREEMPT_JOB_ANSWER_RECORDS:
        return preempt_trace_format_records_(buf, size, now_ms, a->status);
    }
    return -1;
}

/* ---- the declared machines' lines ---------------------------------------------------- */

int preempt_trace_format_decl_(char *buf, size_t size, uint64_t t_ms, const struct preempt_decl *m,
                               unsigned instance, unsigned from, unsigned input, unsigned to, unsigned action)
{
    char inst[16] = "";

    if (instance)
        (void)snprintf(inst, sizeof(inst), "#%u", instance);
    return snprintf(buf, size, "decl t=%" PRIu64 " m=%s%s %s --%s--> %s (%s)", t_ms, m->name, inst,
                    preempt_decl_state_(m, from), preempt_decl_input_(m, input), preempt_decl_state_(m, to),
                    preempt_decl_action_(m, action));
}
