/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/status.c: a whole read of an incarnation, as preemptctl status shows it (status-internal.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records/records.h"
#include "status-internal.h"

/* What one meaning adds to the status. */
static void said(struct preempt_job_status *st, const struct preempt_view_ev *ev)
{
    if (ev->what == PREEMPT_VIEW_MALFORMED) {
        st->malformed++;
    } else if (ev->what == PREEMPT_VIEW_COMMITTED || ev->what == PREEMPT_VIEW_ABORTED) {
        st->round[ev->round].decided = true;
        st->round[ev->round].committed = ev->what == PREEMPT_VIEW_COMMITTED;
        st->round[ev->round].step = ev->step;
    } else if (ev->what == PREEMPT_VIEW_LOST) {
        st->lost = true;
        st->left = ev->text != NULL;
        st->lost_worker = ev->worker;
    } else if (ev->what == PREEMPT_VIEW_ERROR) {
        st->error = true;
        st->code = ev->code;
        st->error_worker = ev->worker;
        (void)snprintf(st->message, sizeof(st->message), "%s", ev->text ? ev->text : "");
    }
}

int preempt_job_status_read_(const char *jobp, uint64_t inc, const struct preempt_etcd_kv *kvs, size_t n,
                             struct preempt_status_rec *recs, struct preempt_job_status *st)
{
    struct preempt_etcd_kv *byw = n ? malloc(n * sizeof(*byw)) : NULL;
    struct preempt_view v;
    int r;

    *st = (struct preempt_job_status){ .workers = PREEMPT_MAX_WORKERS };
    if (n && !byw)
        return -ENOMEM;
    if ((r = preempt_view_init_(&v, jobp, inc, PREEMPT_MAX_WORKERS, PREEMPT_MAX_WORKERS)) < 0) {
        free(byw);
        return r;
    }
    for (size_t i = 0; i < n; i++) { /* the job's worker count, which bounds the records' worker indexes */
        if (preempt_key_parse_(kvs[i].key, jobp, &(struct preempt_key){ 0 }) == PREEMPT_KEY_SHAPE)
            (void)preempt_view_shape_(kvs[i].value ? kvs[i].value : "", &st->workers);
    }
    (void)preempt_view_workers_(&v, st->workers);
    for (size_t i = 0; i < n; i++) { /* each record as a worker judges it; the newest episode */
        struct preempt_key k;
        union preempt_rv rec;
        int id = preempt_key_parse_(kvs[i].key, jobp, &k);
        const char *w = NULL;

        bool read = id >= 0 && preempt_key_has_(id, 'N') && k.inc == inc &&
                    preempt_rv_read_((enum preempt_key_id)id, &k, kvs[i].value ? kvs[i].value : "", st->workers,
                                     &rec, &w) == 0;

        if (read)
            w = NULL;
        if (recs) {
            recs[i] = (struct preempt_status_rec){ .why = w };
            if (read && kvs[i].value && (id == PREEMPT_KEY_NOTICE || id == PREEMPT_KEY_NOTICE_OP)) {
                bool own = id == PREEMPT_KEY_NOTICE; /* else the operator's */

                recs[i].notice = true;
                recs[i].deadline = own ? rec.notice.deadline : rec.notice_op.deadline;
                recs[i].source = own ? rec.notice.source : rec.notice_op.source;
                recs[i].source_len = own ? rec.notice.source_len : rec.notice_op.source_len;
                recs[i].withdrawn = own && rec.notice.withdrawn;
            }
        }
        if (id >= 0 && preempt_key_has_(id, 'p') && k.inc == inc && k.ep > st->ep)
            st->ep = k.ep;
    }
    memcpy(byw, kvs, n * sizeof(*byw));
    preempt_etcd_kvs_by_write_(byw, n);
    preempt_view_episode_(&v, st->ep);
    preempt_view_members_(&v);
    for (size_t i = 0; i < n; i++) {
        struct preempt_view_ev ev = preempt_view_apply_(&v, true, byw[i].key, byw[i].value ? byw[i].value : "");

        said(st, &ev);
    }
    while (preempt_view_members_end_(&v).what != PREEMPT_VIEW_NOTHING)
        ; /* a whole read: a member it lacks has ended */
    preempt_view_summary_(&v, &st->notices);
    preempt_view_members_sum_(&v, &st->members);
    st->op = v.op_wall != 0;
    st->op_wall = v.op_wall;
    st->claim = v.claim;
    for (unsigned k = 0; k < 2; k++) {
        st->round[k].agreed = v.r[k].have_agreed;
        st->round[k].agreed_step = v.r[k].agreed;
        st->round[k].last = v.r[k].last;
    }
    preempt_view_free_(&v);
    free(byw);
    return 0;
}
