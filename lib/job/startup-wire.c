/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/startup-wire.c: start-up's asks as etcd requests, and their
 * replies as answers (startup-state.h). What each transaction holds, and
 * where in its reply each record comes back, is written here and nowhere
 * else: the core (lib/job/startup.c) asks in the protocol's words and
 * reads typed records. Pure. */
#include <errno.h>
#include <string.h>

#include "startup-state.h"

/* Key number i of w: id's key in incarnation inc (worker w). */
static const char *key(struct preempt_su_wire *w, unsigned i, const char *jobp, enum preempt_key_id id, uint64_t inc,
                       unsigned worker)
{
    (void)preempt_key_(w->keys[i], sizeof(w->keys[i]), jobp, id, &(struct preempt_key){ .inc = inc, .worker = worker });
    return w->keys[i]; /* "" when it does not fit: the port refuses the request */
}

/* Key number i of w: the range of every worker's id records in inc. */
static const char *range(struct preempt_su_wire *w, unsigned i, const char *jobp, enum preempt_key_id id, uint64_t inc)
{
    (void)preempt_key_range_(w->keys[i], sizeof(w->keys[i]), jobp, id, 'w', &(struct preempt_key){ .inc = inc });
    return w->keys[i];
}

static void op(struct preempt_etcd_op *o, enum preempt_etcd_op_kind kind, const char *k,
               const struct preempt_value *v, int64_t lease)
{
    *o = (struct preempt_etcd_op){ .kind = kind, .key = k, .value = v, .lease = lease };
}

/* A write if absent of k (the port's create: else it reads k). */
static void create(struct preempt_su_wire *w, const char *k, const struct preempt_value *v)
{
    w->req = (struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_CREATE, .key = k, .value = v };
}

static void txn(struct preempt_su_wire *w, size_t n_cmp, size_t n_ok, size_t n_fail)
{
    w->req = (struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_TXN, .cmp = w->cmp, .n_cmp = n_cmp, .ok = w->ok,
                                        .n_ok = n_ok, .fail = w->fail, .n_fail = n_fail };
}

int preempt_su_request_(const char *jobp, const struct preempt_su_ask *a, struct preempt_su_wire *w)
{
    const char *k;

    memset(&w->req, 0, sizeof(w->req));
    switch (a->kind) {
    case PREEMPT_SU_GRANT:
        w->req = (struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_GRANT, .ttl_s = a->ttl_s };
        return 0;
    case PREEMPT_SU_HOLDER:
    case PREEMPT_SU_KEEP:
    case PREEMPT_SU_REVOKE:
        w->req = (struct preempt_etcd_req){ .kind = a->kind == PREEMPT_SU_HOLDER ? PREEMPT_ETCD_RQ_TIMETOLIVE
                                                    : a->kind == PREEMPT_SU_KEEP ? PREEMPT_ETCD_RQ_KEEPALIVE
                                                                                 : PREEMPT_ETCD_RQ_REVOKE,
                                            .lease = a->lease };
        return 0;
    case PREEMPT_SU_COUNTER:
    case PREEMPT_SU_START_OVER:
    case PREEMPT_SU_AWAITED:
        k = key(w, 0, jobp,
                a->kind == PREEMPT_SU_COUNTER      ? PREEMPT_KEY_INCARNATION
                : a->kind == PREEMPT_SU_START_OVER ? PREEMPT_KEY_START_OVER
                                                   : a->awaited,
                a->inc, 0);
        w->req = (struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_RANGE, .key = k };
        return 0;
    case PREEMPT_SU_MEMBERS:
        w->req = (struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_RANGE,
                                            .key = range(w, 0, jobp, PREEMPT_KEY_ALIVE, a->inc), .prefix = true };
        return 0;
    case PREEMPT_SU_OPEN: /* moves the counter and clears P/inc/ (left there while the counter was lost) */
        w->cmp[0] = (struct preempt_etcd_cmp){ .key = key(w, 0, jobp, PREEMPT_KEY_INCARNATION, 0, 0),
                                               .value = a->counter };
        op(&w->ok[0], PREEMPT_ETCD_OP_PUT, w->keys[0], a->value, 0);
        (void)preempt_key_range_(w->keys[1], sizeof(w->keys[1]), jobp, PREEMPT_KEY_INC, 0,
                                 &(struct preempt_key){ .inc = a->inc });
        op(&w->ok[1], PREEMPT_ETCD_OP_DELETE_PREFIX, w->keys[1], NULL, 0);
        txn(w, 1, 2, 0);
        return 0;
    case PREEMPT_SU_RESOLVE:
        create(w, a->key, a->value);
        return 0;
    case PREEMPT_SU_SHAPE:
        create(w, key(w, 0, jobp, PREEMPT_KEY_SHAPE, a->inc, 0), a->value);
        return 0;
    case PREEMPT_SU_RESTORED:
        create(w, key(w, 0, jobp, PREEMPT_KEY_RESTORED, a->inc, 0), a->value);
        return 0;
    case PREEMPT_SU_JOIN: {
        const char *counter = key(w, 0, jobp, PREEMPT_KEY_INCARNATION, 0, 0),
                   *joined = key(w, 1, jobp, PREEMPT_KEY_JOINED, a->inc, a->worker),
                   *alive = key(w, 2, jobp, PREEMPT_KEY_ALIVE, a->inc, a->worker),
                   *ready = key(w, 3, jobp, PREEMPT_KEY_READY, a->inc, 0),
                   *members = range(w, 4, jobp, PREEMPT_KEY_ALIVE, a->inc),
                   *shape = key(w, 5, jobp, PREEMPT_KEY_SHAPE, a->inc, 0),
                   *restored = key(w, 6, jobp, PREEMPT_KEY_RESTORED, a->inc, 0);

        w->cmp[0] = (struct preempt_etcd_cmp){ .key = counter, .value = a->counter };
        w->cmp[1] = (struct preempt_etcd_cmp){ .key = a->rejoin ? alive : joined }; /* absent */
        op(&w->ok[0], PREEMPT_ETCD_OP_PUT, joined, a->value, 0);
        op(&w->ok[1], PREEMPT_ETCD_OP_PUT, alive, a->value, a->lease);
        op(&w->ok[2], PREEMPT_ETCD_OP_GET, ready, NULL, 0);
        op(&w->ok[3], PREEMPT_ETCD_OP_COUNT_PREFIX, members, NULL, 0);
        op(&w->ok[4], PREEMPT_ETCD_OP_GET, shape, NULL, 0);
        op(&w->fail[0], PREEMPT_ETCD_OP_GET, counter, NULL, 0);
        op(&w->fail[1], PREEMPT_ETCD_OP_GET, alive, NULL, 0);
        op(&w->fail[2], PREEMPT_ETCD_OP_GET, ready, NULL, 0);
        op(&w->fail[3], PREEMPT_ETCD_OP_GET, restored, NULL, 0);
        txn(w, 2, 5, 4);
        return 0;
    }
    case PREEMPT_SU_RECOUNT:
        op(&w->ok[0], PREEMPT_ETCD_OP_GET, key(w, 0, jobp, PREEMPT_KEY_READY, a->inc, 0), NULL, 0);
        op(&w->ok[1], PREEMPT_ETCD_OP_COUNT_PREFIX, range(w, 1, jobp, PREEMPT_KEY_ALIVE, a->inc), NULL, 0);
        op(&w->ok[2], PREEMPT_ETCD_OP_GET, key(w, 2, jobp, PREEMPT_KEY_SHAPE, a->inc, 0), NULL, 0);
        txn(w, 0, 3, 0);
        return 0;
    case PREEMPT_SU_READY: /* create-if-absent, and the start-over request it consumed goes with it */
        k = key(w, 0, jobp, PREEMPT_KEY_READY, a->inc, 0);
        w->cmp[0] = (struct preempt_etcd_cmp){ .key = k };
        op(&w->ok[0], PREEMPT_ETCD_OP_PUT, k, a->value, 0);
        op(&w->ok[1], PREEMPT_ETCD_OP_DELETE, key(w, 1, jobp, PREEMPT_KEY_START_OVER, 0, 0), NULL, 0);
        op(&w->fail[0], PREEMPT_ETCD_OP_GET, k, NULL, 0);
        txn(w, 1, a->consume ? 2 : 1, 1);
        return 0;
    case PREEMPT_SU_REPORT:
        op(&w->ok[0], PREEMPT_ETCD_OP_PUT, key(w, 0, jobp, PREEMPT_KEY_W_RESTORED, a->inc, a->worker), a->value, 0);
        op(&w->ok[1], PREEMPT_ETCD_OP_COUNT_PREFIX, range(w, 1, jobp, PREEMPT_KEY_W_RESTORED, a->inc), NULL, 0);
        txn(w, 0, 2, 0);
        return 0;
    }
    return -EINVAL;
}

/* An absent record: no value. */
static const struct preempt_etcd_kv none;

/* What read number i of r found; an empty record (value NULL) when none. */
static const struct preempt_etcd_kv *read_kv(const struct preempt_etcd_reply *r, size_t i)
{
    const struct preempt_etcd_kv *kv = preempt_etcd_reply_kv_(r, i);

    return kv ? kv : &none;
}

int preempt_su_answer_(enum preempt_startup_in_kind k, const struct preempt_etcd_reply *r,
                       struct preempt_su_answer *a, const char **why)
{
    *a = (struct preempt_su_answer){ .found = &none, .ready = &none, .shape = &none, .counter = &none,
                                     .mine = &none, .restored = &none, .kvs = &none, .rev = r->rev };
    *why = "a txn reply without the reads it was asked for";
    switch (k) {
    case PREEMPT_STARTUP_IN_GRANTED:
        a->lease = r->id; /* never 0: a grant without one does not decode */
        return 0;
    case PREEMPT_STARTUP_IN_HOLDER_TTL:
        a->ttl = r->ttl;
        a->granted_ttl = r->granted_ttl;
        return 0;
    case PREEMPT_STARTUP_IN_INC:
    case PREEMPT_STARTUP_IN_MEMBERS:
    case PREEMPT_STARTUP_IN_START_OVER:
    case PREEMPT_STARTUP_IN_AWAIT_READ:
        if (r->n_res < 1)
            return -EPROTO;
        a->kvs = r->res[0].kvs;
        a->n = r->res[0].n;
        a->found = read_kv(r, 0);
        return 0;
    case PREEMPT_STARTUP_IN_RESOLVED:
    case PREEMPT_STARTUP_IN_SHAPED:
    case PREEMPT_STARTUP_IN_WRITTEN: /* created, or the record there (the failure branch's read) */
        a->done = r->succeeded;
        a->found = read_kv(r, r->succeeded ? SIZE_MAX : 0);
        return 0;
    case PREEMPT_STARTUP_IN_JOINED:
        a->done = r->succeeded;
        if (r->succeeded) { /* the ops after the two puts */
            if (r->n_res < 5)
                return -EPROTO;
            a->ready = read_kv(r, 2);
            a->count = preempt_etcd_reply_count_(r, 3);
            a->shape = read_kv(r, 4);
        } else {
            a->counter = read_kv(r, 0);
            a->mine = read_kv(r, 1);
            a->ready = read_kv(r, 2);
            a->restored = read_kv(r, 3);
        }
        return 0;
    case PREEMPT_STARTUP_IN_RECOUNTED:
        if (r->n_res < 3)
            return -EPROTO;
        a->ready = read_kv(r, 0);
        a->count = preempt_etcd_reply_count_(r, 1);
        a->shape = read_kv(r, 2);
        return 0;
    case PREEMPT_STARTUP_IN_COUNTED:
        a->count = preempt_etcd_reply_count_(r, 1);
        return 0;
    case PREEMPT_STARTUP_IN_OPENED:
    case PREEMPT_STARTUP_IN_REVOKED:
        return 0;
    case PREEMPT_STARTUP_IN_BEGIN:
    case PREEMPT_STARTUP_IN_AWAIT_EVENT:
    case PREEMPT_STARTUP_IN_AWAIT_RESET:
    case PREEMPT_STARTUP_IN_AWAIT_LINK:
    case PREEMPT_STARTUP_IN_UNWATCHED:
    case PREEMPT_STARTUP_IN_LOST:
    case PREEMPT_STARTUP_IN_TICK:
    case PREEMPT_STARTUP_IN_CANCEL:
    case PREEMPT_STARTUP_IN__COUNT:
        break;
    }
    *why = "an answer to no request";
    return -EPROTO;
}
