/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord-wire.c: the running coordinator's asks as etcd requests,
 * and their replies as answers (coord-state.h). What each transaction
 * holds, and where in its reply each record comes back, is written here
 * and nowhere else: the core (lib/job/coord.c, coord-rounds.c,
 * coord-effects.c) asks in the protocol's words and reads typed records.
 * The shell (coord-shell.c) and the replay (coord-replay.c) run it on
 * each request and each answer. Pure. */
#include <errno.h>
#include <string.h>

#include "coord-state.h"

static struct preempt_etcd_op op(enum preempt_etcd_op_kind kind, const char *key, const struct preempt_value *v,
                                 int64_t lease)
{
    return (struct preempt_etcd_op){ .kind = kind, .key = key, .value = v, .lease = lease };
}

/* Where rec may be created: its key absent, or the garbage seen there. */
static struct preempt_etcd_cmp slot(const struct preempt_co_rec *rec)
{
    return (struct preempt_etcd_cmp){ .key = rec->key, .mod_rev = rec->slot };
}

static void txn(struct preempt_co_wire *w, size_t n_cmp, size_t n_ok, size_t n_fail)
{
    w->req = (struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_TXN, .cmp = w->cmp, .n_cmp = n_cmp, .ok = w->ok,
                                        .n_ok = n_ok, .fail = w->fail, .n_fail = n_fail };
}

int preempt_co_request_(const struct preempt_co_ask *a, struct preempt_co_wire *w)
{
    const struct preempt_co_rec *rec = &a->rec;

    memset(&w->req, 0, sizeof(w->req));
    switch (a->kind) {
    case PREEMPT_CO_PUT:
        w->req = (struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_PUT, .key = rec->key, .value = rec->value,
                                            .lease = a->lease };
        return 0;
    case PREEMPT_CO_CREATE: /* written where the slot is free, else what stands there is read */
        w->cmp[0] = slot(rec);
        w->ok[0] = op(PREEMPT_ETCD_OP_PUT, rec->key, rec->value, 0);
        w->fail[0] = op(PREEMPT_ETCD_OP_GET, rec->key, NULL, 0);
        txn(w, 1, 1, 1);
        return 0;
    case PREEMPT_CO_RAISE: /* a compare on the value seen (or the slot's garbage, or absence) */
        w->cmp[0] = slot(rec);
        w->cmp[0].value = a->seen;
        w->ok[0] = op(PREEMPT_ETCD_OP_PUT, rec->key, rec->value, 0);
        txn(w, 1, 1, 0);
        return 0;
    case PREEMPT_CO_CLAIM: { /* the claim (and the step) where free; else the claim read, the notice put */
        size_t n_ok = 1, n_fail = 1;

        w->cmp[0] = slot(rec);
        w->ok[0] = op(PREEMPT_ETCD_OP_PUT, rec->key, rec->value, a->lease);
        w->fail[0] = op(PREEMPT_ETCD_OP_GET, rec->key, NULL, 0);
        if (a->notice.key)
            w->fail[n_fail++] = op(PREEMPT_ETCD_OP_PUT, a->notice.key, a->notice.value, 0);
        if (a->step.key) {
            w->cmp[1] = slot(&a->step);
            w->ok[n_ok++] = op(PREEMPT_ETCD_OP_PUT, a->step.key, a->step.value, 0);
        }
        txn(w, a->step.key ? 2 : 1, n_ok, n_fail);
        return 0;
    }
    case PREEMPT_CO_FINAL: /* the request, and the round's step where free; else the request alone */
        w->cmp[0] = slot(&a->step);
        w->ok[0] = op(PREEMPT_ETCD_OP_PUT, rec->key, rec->value, 0);
        w->ok[1] = op(PREEMPT_ETCD_OP_PUT, a->step.key, a->step.value, 0);
        w->fail[0] = w->ok[0];
        txn(w, 1, 2, 1);
        return 0;
    case PREEMPT_CO_REPORT: { /* the count is the last operation: the answer reads it there */
        size_t n = 0;

        if (a->ends)
            w->ok[n++] = op(PREEMPT_ETCD_OP_DELETE, a->ends, NULL, 0);
        w->ok[n++] = op(PREEMPT_ETCD_OP_PUT, rec->key, rec->value, 0);
        w->ok[n++] = op(PREEMPT_ETCD_OP_COUNT_PREFIX, a->range[0], NULL, 0);
        txn(w, 0, n, 0);
        return 0;
    }
    case PREEMPT_CO_READ:
        w->req = (struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_RANGE, .key = a->range[0], .end = a->range[1],
                                            .prefix = a->range[1] == NULL };
        return 0;
    case PREEMPT_CO_ROLL:
        for (size_t i = 0; i < 4; i++)
            w->ok[i] = op(PREEMPT_ETCD_OP_KEYS_PREFIX, a->range[i], NULL, 0);
        txn(w, 0, 4, 0);
        return 0;
    case PREEMPT_CO_FORGET:
        if (!a->range[1]) {
            w->req = (struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_DELETE, .key = a->range[0], .prefix = true };
            return 0;
        }
        w->ok[0] = op(PREEMPT_ETCD_OP_DELETE_PREFIX, a->range[0], NULL, 0);
        w->ok[1] = op(PREEMPT_ETCD_OP_DELETE_PREFIX, a->range[1], NULL, 0);
        txn(w, 0, 2, 0);
        return 0;
    case PREEMPT_CO_GRANT:
        w->req = (struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_GRANT, .ttl_s = a->ttl_s };
        return 0;
    case PREEMPT_CO_KEEP:
    case PREEMPT_CO_REVOKE:
        w->req = (struct preempt_etcd_req){
            .kind = a->kind == PREEMPT_CO_KEEP ? PREEMPT_ETCD_RQ_KEEPALIVE : PREEMPT_ETCD_RQ_REVOKE,
            .lease = a->lease };
        return 0;
    }
    return -EINVAL;
}

/* A range's records: result i of r. */
static struct preempt_co_records records(const struct preempt_etcd_reply *r, size_t i)
{
    return (struct preempt_co_records){ .kvs = r->res[i].kvs, .n = r->res[i].n };
}

void preempt_co_answer_(struct preempt_coord_in *in, struct preempt_co_answer *a)
{
    const struct preempt_etcd_reply *r = in->reply;

    *a = (struct preempt_co_answer){ .count = -1 };
    in->answer = a;
    if (in->status != 0 || !r)
        return;
    switch (in->kind) {
    case PREEMPT_COORD_IN_DECIDED:
    case PREEMPT_COORD_IN_CLAIMED: /* created, or what stands there (the failure branch's first read) */
        a->done = r->succeeded;
        a->found = r->succeeded ? NULL : preempt_etcd_reply_kv_(r, 0);
        return;
    case PREEMPT_COORD_IN_GRANTED:
        a->lease = r->id;
        a->ttl_s = r->ttl;
        return;
    case PREEMPT_COORD_IN_KEPT:
        a->ttl_s = r->ttl;
        return;
    case PREEMPT_COORD_IN_READ:
    case PREEMPT_COORD_IN_SHARDS:
    case PREEMPT_COORD_IN_ABORT_SHARDS:
        if (r->n_res < 1)
            break;
        a->read = records(r, 0);
        a->rev = r->rev;
        a->cluster = r->cluster;
        return;
    case PREEMPT_COORD_IN_REPORTED:
        if (r->n_res >= 1)
            a->count = preempt_etcd_reply_count_(r, r->n_res - 1);
        return;
    case PREEMPT_COORD_IN_MEMBERS: /* one that lacks a range is read as unreadable (lost-internal.h) */
        a->complete = r->n_res >= 4;
        for (size_t i = 0; a->complete && i < 4; i++)
            a->roll[i] = records(r, i);
        return;
    case PREEMPT_COORD_IN_WRITTEN: /* nothing read */
    case PREEMPT_COORD_IN_NOTICE_PUT:
    case PREEMPT_COORD_IN_RECORD: /* no answer: the watches' records are typed as they come */
    case PREEMPT_COORD_IN_RECORDS:
    case PREEMPT_COORD_IN_LINK:
    case PREEMPT_COORD_IN_MEMBER:
    case PREEMPT_COORD_IN_MEMBERS_READ:
    case PREEMPT_COORD_IN_MEMBERS_LINK:
    case PREEMPT_COORD_IN_TICK:
    case PREEMPT_COORD_IN_EFFECT:
    case PREEMPT_COORD_IN_STEP:
    case PREEMPT_COORD_IN_WITHDRAW:
    case PREEMPT_COORD_IN_LIVE:
    case PREEMPT_COORD_IN_LEAVE:
    case PREEMPT_COORD_IN_HISTORY:
    case PREEMPT_COORD_IN__COUNT:
        return;
    }
    in->status = -EPROTO;
    in->msg = "a reply without the read it was asked for";
}
