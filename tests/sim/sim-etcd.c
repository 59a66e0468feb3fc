/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/sim/sim-etcd.c: an in-memory model of the etcd v3 semantics the
 * protocol relies on, answering the typed port's requests (etcd-internal.h):
 * one revision per write (a txn is one), keys in byte order, create and mod
 * revisions, ranges (count_only, keys_only), leases with a TTL whose expiry deletes their keys, txn with
 * CREATE/VALUE compares, and a history that watches replay in order. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "preempt.h" /* PREEMPT_MAX_WORKERS */
#include "records/records-internal.h"

struct lease {
    int64_t id;
    unsigned ttl_s;
    uint64_t expires_ms;
};

struct sim_etcd {
    struct preempt_etcd_kv *kvs; /* sorted by key */
    size_t n, cap;
    struct lease *leases;
    size_t n_leases, cap_leases;
    uint64_t exp_min;  /* with exp_valid: at most the earliest expiry (a lease that was
                        * renewed or dropped since only raises it), recomputed after an
                        * expiry pass; so that a job of 10,000 leases does not scan
                        * them all at every event */
    bool exp_valid;
    int64_t rev, next_lease;
    struct sim_ev *hist;
    size_t n_hist, cap_hist;
};

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    *cap = *cap ? *cap * 2 : 16;
    if (*cap < need)
        *cap = need;
    p = realloc(p, *cap * size);
    if (!p)
        abort(); /* the simulation has no use for running on without memory */
    return p;
}

static char *dup(const char *s)
{
    char *d = strdup(s ? s : "");

    if (!d)
        abort();
    return d;
}

struct sim_etcd *sim_etcd_new(void)
{
    struct sim_etcd *m = calloc(1, sizeof(*m));

    if (!m)
        abort();
    m->rev = 1; /* as a new etcd: revision 1 */
    m->next_lease = 7587873683744391000;
    return m;
}

void sim_etcd_free(struct sim_etcd *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        preempt_etcd_kv_clear_(&m->kvs[i]);
    for (size_t i = 0; i < m->n_hist; i++)
        preempt_etcd_kv_clear_(&m->hist[i].kv);
    free(m->kvs);
    free(m->leases);
    free(m->hist);
    free(m);
}

int64_t sim_etcd_rev(const struct sim_etcd *m)
{
    return m->rev;
}

const struct sim_ev *sim_etcd_history(const struct sim_etcd *m, size_t *n)
{
    *n = m->n_hist;
    return m->hist;
}

/* The index of key, or of where it would go (*found says which). */
static size_t find(const struct sim_etcd *m, const char *key, bool *found)
{
    size_t lo = 0, hi = m->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(m->kvs[mid].key, key);

        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static void record(struct sim_etcd *m, enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv)
{
    struct sim_ev *e;

    m->hist = grow(m->hist, &m->cap_hist, m->n_hist + 1, sizeof(*m->hist));
    e = &m->hist[m->n_hist++];
    e->rev = m->rev;
    e->type = type;
    e->kv = (struct preempt_etcd_kv){ .key = dup(kv->key), .value = dup(type == PREEMPT_ETCD_PUT ? kv->value : ""),
                                      .value_len = type == PREEMPT_ETCD_PUT ? kv->value_len : 0,
                                      .create_rev = kv->create_rev, .mod_rev = m->rev, .lease = kv->lease };
}

/* Every value a worker writes reads as its record's grammar
 * (lib/records/keys-internal.h): a writer that drifted from the schema stops the
 * simulation where it wrote. */
static void check_value(const char *key, const char *value)
{
    const char *why;

    if (preempt_record_check_put_(key, value, &why) < 0) { /* the check the real etcd client makes */
        fprintf(stderr, "preempt-sim: %s = \"%s\" is not its record's grammar: not %s\n", key, value, why);
        abort();
    }
}

/* A write within the current revision (the caller has bumped it). */
static void do_put(struct sim_etcd *m, const char *key, const char *value, int64_t lease)
{
    bool found;
    size_t i = find(m, key, &found);
    struct preempt_etcd_kv *kv;

    if (!found) {
        m->kvs = grow(m->kvs, &m->cap, m->n + 1, sizeof(*m->kvs));
        memmove(&m->kvs[i + 1], &m->kvs[i], (m->n - i) * sizeof(*m->kvs));
        m->n++;
        m->kvs[i] = (struct preempt_etcd_kv){ .key = dup(key), .create_rev = m->rev };
    }
    check_value(key, value);
    kv = &m->kvs[i];
    free(kv->value);
    kv->value = dup(value);
    kv->value_len = strlen(value);
    kv->mod_rev = m->rev;
    kv->lease = lease;
    record(m, PREEMPT_ETCD_PUT, kv);
}

static bool in_range(const char *key, const char *from, const char *end)
{
    if (!end)
        return !strcmp(key, from);
    return strcmp(key, from) >= 0 && (end[0] == '\0' || strcmp(key, end) < 0);
}

/* Deletes every key for which doomed() holds, within the current revision. */
static unsigned delete_where(struct sim_etcd *m, bool (*doomed)(const struct preempt_etcd_kv *kv, const void *arg),
                             const void *arg)
{
    unsigned deleted = 0;

    for (size_t i = 0; i < m->n;) {
        if (!doomed(&m->kvs[i], arg)) {
            i++;
            continue;
        }
        record(m, PREEMPT_ETCD_DELETE, &m->kvs[i]);
        preempt_etcd_kv_clear_(&m->kvs[i]);
        memmove(&m->kvs[i], &m->kvs[i + 1], (m->n - i - 1) * sizeof(*m->kvs));
        m->n--;
        deleted++;
    }
    return deleted;
}

static bool doomed_by_lease(const struct preempt_etcd_kv *kv, const void *arg)
{
    return kv->lease == *(const int64_t *)arg;
}

static unsigned do_delete(struct sim_etcd *m, const char *from, const char *end)
{
    bool found;
    size_t lo = find(m, from, &found), hi = lo;

    while (hi < m->n && in_range(m->kvs[hi].key, from, end)) /* keys are sorted: one block */
        hi++;
    for (size_t i = lo; i < hi; i++) {
        record(m, PREEMPT_ETCD_DELETE, &m->kvs[i]);
        preempt_etcd_kv_clear_(&m->kvs[i]);
    }
    memmove(&m->kvs[lo], &m->kvs[hi], (m->n - hi) * sizeof(*m->kvs));
    m->n -= hi - lo;
    return (unsigned)(hi - lo);
}

static struct lease *lease_of(struct sim_etcd *m, int64_t id)
{
    for (size_t i = 0; i < m->n_leases; i++)
        if (m->leases[i].id == id)
            return &m->leases[i];
    return NULL;
}

static void drop_lease(struct sim_etcd *m, struct lease *l)
{
    bool any = false;

    for (size_t i = 0; i < m->n && !any; i++)
        any = m->kvs[i].lease == l->id;
    if (any) {
        m->rev++;
        (void)delete_where(m, doomed_by_lease, &l->id);
    }
    *l = m->leases[--m->n_leases];
}

int64_t sim_etcd_grant(struct sim_etcd *m, unsigned ttl_s, uint64_t now_ms)
{
    struct lease *l;

    m->leases = grow(m->leases, &m->cap_leases, m->n_leases + 1, sizeof(*m->leases));
    l = &m->leases[m->n_leases++];
    *l = (struct lease){ .id = ++m->next_lease, .ttl_s = ttl_s, .expires_ms = now_ms + ttl_s * 1000u };
    if (m->exp_valid && l->expires_ms < m->exp_min)
        m->exp_min = l->expires_ms;
    return l->id;
}

void sim_etcd_expire(struct sim_etcd *m, uint64_t now_ms)
{
    m->exp_valid = false;
    for (size_t i = 0; i < m->n_leases;) {
        if (m->leases[i].expires_ms <= now_ms)
            drop_lease(m, &m->leases[i]);
        else
            i++;
    }
}

void sim_etcd_refresh(struct sim_etcd *m, uint64_t now_ms)
{
    for (size_t i = 0; i < m->n_leases; i++)
        if (m->leases[i].expires_ms < now_ms + m->leases[i].ttl_s * 1000u)
            m->leases[i].expires_ms = now_ms + m->leases[i].ttl_s * 1000u;
}

uint64_t sim_etcd_next_expiry(struct sim_etcd *m)
{
    if (!m->exp_valid) {
        m->exp_min = 0;
        for (size_t i = 0; i < m->n_leases; i++)
            if (!m->exp_min || m->leases[i].expires_ms < m->exp_min)
                m->exp_min = m->leases[i].expires_ms;
        m->exp_valid = true;
    }
    return m->n_leases ? m->exp_min : 0;
}

void sim_etcd_put(struct sim_etcd *m, const char *key, const char *value, int64_t lease, uint64_t now_ms)
{
    (void)now_ms;
    m->rev++;
    do_put(m, key, value, lease);
}

/* ---- the typed port's requests ------------------------------------------------------- */

/* A range [key, end) (end NULL: key alone, or every key under it with prefix). */
static void do_range(struct sim_etcd *m, const char *key, const char *end, bool prefix, bool count_only,
                     bool keys_only, struct preempt_etcd_res *res)
{
    char *pend = NULL;
    bool found;
    size_t lo, hi;

    if (!end && prefix) {
        if (preempt_etcd_prefix_end_(key, &pend) < 0)
            abort();
        end = pend; /* "": to the end of the keys */
    }
    /* the keys are sorted: from the first at or after key, while in range */
    lo = find(m, key, &found);
    hi = lo;
    while (hi < m->n && in_range(m->kvs[hi].key, key, end))
        hi++;
    *res = (struct preempt_etcd_res){ .count = (int64_t)(hi - lo) };
    if (!count_only) {
        if (preempt_etcd_kvs_dup_(hi > lo ? &m->kvs[lo] : NULL, hi - lo, &res->kvs) < 0)
            abort();
        res->n = hi - lo;
        for (size_t i = 0; keys_only && i < res->n; i++) {
            res->kvs[i].value[0] = '\0';
            res->kvs[i].value_len = 0;
        }
    }
    free(pend);
}

/* A put's checks, before any write of its request: the lease, when
 * given, is live. */
static int put_check(struct sim_etcd *m, const char *key, int64_t lease, const char **msg)
{
    if (!key || !key[0]) {
        *msg = "etcdserver: key is not provided";
        return -EINVAL;
    }
    if (lease && !lease_of(m, lease)) {
        *msg = "etcdserver: requested lease not found";
        return -ENOENT;
    }
    return 0;
}

/* Deletes key alone, or every key under it (prefix). */
static unsigned delete_range(struct sim_etcd *m, const char *key, bool prefix)
{
    char *end = NULL;
    unsigned n;

    if (prefix && preempt_etcd_prefix_end_(key, &end) < 0)
        abort();
    n = do_delete(m, key, end);
    free(end);
    return n;
}

static bool compare(struct sim_etcd *m, const struct preempt_etcd_cmp *c)
{
    bool found = false;
    size_t i = find(m, c->key, &found);

    if (c->mod_rev > 0)
        return found && m->kvs[i].mod_rev == c->mod_rev;
    return c->value ? found && !strcmp(m->kvs[i].value, preempt_value_str_(c->value)) : !found;
}

static bool op_writes(const struct preempt_etcd_op *op)
{
    return op->kind == PREEMPT_ETCD_OP_PUT || op->kind == PREEMPT_ETCD_OP_DELETE ||
           op->kind == PREEMPT_ETCD_OP_DELETE_PREFIX;
}

static int do_txn(struct sim_etcd *m, const struct preempt_etcd_req *q, struct preempt_etcd_reply *r, const char **msg)
{
    const struct preempt_etcd_op *ops;
    bool wrote = false;
    size_t n;

    r->succeeded = true;
    for (size_t i = 0; i < q->n_cmp; i++)
        r->succeeded = r->succeeded && compare(m, &q->cmp[i]);
    ops = r->succeeded ? q->ok : q->fail;
    n = r->succeeded ? q->n_ok : q->n_fail;
    for (size_t i = 0; i < n; i++) { /* every put is checked before anything is written */
        int rc = ops[i].kind == PREEMPT_ETCD_OP_PUT ? put_check(m, ops[i].key, ops[i].lease, msg) : 0;

        if (rc < 0)
            return rc;
        wrote = wrote || op_writes(&ops[i]);
    }
    if (wrote)
        m->rev++;
    r->res = calloc(n ? n : 1, sizeof(*r->res));
    if (!r->res)
        abort();
    r->n_res = n;
    for (size_t i = 0; i < n; i++) {
        const struct preempt_etcd_op *op = &ops[i];
        struct preempt_etcd_res *res = &r->res[i];

        switch (op->kind) {
        case PREEMPT_ETCD_OP_PUT:
            do_put(m, op->key, op->value ? preempt_value_str_(op->value) : "", op->lease);
            break;
        case PREEMPT_ETCD_OP_GET:
            do_range(m, op->key, NULL, false, false, false, res);
            break;
        case PREEMPT_ETCD_OP_COUNT_PREFIX:
        case PREEMPT_ETCD_OP_KEYS_PREFIX:
            do_range(m, op->key, NULL, true, op->kind == PREEMPT_ETCD_OP_COUNT_PREFIX,
                     op->kind == PREEMPT_ETCD_OP_KEYS_PREFIX, res);
            break;
        case PREEMPT_ETCD_OP_DELETE:
        case PREEMPT_ETCD_OP_DELETE_PREFIX:
            res->count = delete_range(m, op->key, op->kind == PREEMPT_ETCD_OP_DELETE_PREFIX);
            break;
        }
    }
    return 0;
}

int sim_etcd_do(struct sim_etcd *m, const struct preempt_etcd_req *q, uint64_t now_ms, struct preempt_etcd_reply *r,
                const char **msg)
{
    struct lease *l;
    int rc = 0;

    *r = (struct preempt_etcd_reply){ .cluster = 1 };
    *msg = "ok";
    sim_etcd_expire(m, now_ms);
    switch (q->kind) {
    case PREEMPT_ETCD_RQ_RANGE:
        r->res = calloc(1, sizeof(*r->res));
        if (!r->res)
            abort();
        r->n_res = 1;
        do_range(m, q->key, q->end, q->prefix, false, false, &r->res[0]);
        break;
    case PREEMPT_ETCD_RQ_PUT:
        if ((rc = put_check(m, q->key, q->lease, msg)) < 0)
            break;
        m->rev++;
        do_put(m, q->key, q->value ? preempt_value_str_(q->value) : "", q->lease);
        break;
    case PREEMPT_ETCD_RQ_DELETE: {
        struct preempt_etcd_res probe;

        r->res = calloc(1, sizeof(*r->res));
        if (!r->res)
            abort();
        r->n_res = 1;
        do_range(m, q->key, NULL, q->prefix, true, false, &probe);
        if (probe.count) { /* etcd does not bump the revision for a delete of nothing */
            m->rev++;
            r->res[0].count = delete_range(m, q->key, q->prefix);
        }
        break;
    }
    case PREEMPT_ETCD_RQ_TXN:
        rc = do_txn(m, q, r, msg);
        break;
    case PREEMPT_ETCD_RQ_CREATE: {
        struct preempt_etcd_cmp cmp = { .key = q->key };
        struct preempt_etcd_op put = { PREEMPT_ETCD_OP_PUT, q->key, q->value, q->lease },
                               get = { PREEMPT_ETCD_OP_GET, q->key, NULL, 0 };

        rc = do_txn(m, PREEMPT_RQ_TXN(&cmp, 1, &put, 1, &get, 1), r, msg);
        break;
    }
    case PREEMPT_ETCD_RQ_GRANT:
        if (q->ttl_s <= 0) {
            *msg = "etcdserver: invalid TTL";
            rc = -EINVAL;
            break;
        }
        r->id = sim_etcd_grant(m, (unsigned)q->ttl_s, now_ms);
        r->ttl = q->ttl_s;
        break;
    case PREEMPT_ETCD_RQ_KEEPALIVE:
        if ((l = lease_of(m, q->lease)))
            l->expires_ms = now_ms + l->ttl_s * 1000u;
        r->ttl = l ? l->ttl_s : 0; /* the gateway's keep-alive: an expired lease has no TTL */
        break;
    case PREEMPT_ETCD_RQ_REVOKE:
        if (!(l = lease_of(m, q->lease))) {
            *msg = "etcdserver: requested lease not found";
            rc = -ENOENT;
            break;
        }
        drop_lease(m, l);
        break;
    case PREEMPT_ETCD_RQ_TIMETOLIVE:
        l = lease_of(m, q->lease);
        r->ttl = l ? (int64_t)((l->expires_ms > now_ms ? l->expires_ms - now_ms : 0) / 1000u) : -1;
        r->granted_ttl = l ? l->ttl_s : 0;
        break;
    default:
        *msg = "unknown request";
        rc = -EINVAL;
    }
    r->rev = m->rev;
    if (rc < 0)
        preempt_etcd_reply_clear_(r);
    return rc;
}

int sim_etcd_snapshot(const struct sim_etcd *m, const char *prefix, const char *end, struct preempt_etcd_kv **ret,
                      size_t *n)
{
    bool found;
    size_t len = strlen(prefix), lo = find(m, prefix, &found), hi = lo;

    while (hi < m->n && (end ? strcmp(m->kvs[hi].key, end) < 0 : strncmp(m->kvs[hi].key, prefix, len) == 0))
        hi++;
    if (preempt_etcd_kvs_dup_(hi > lo ? &m->kvs[lo] : NULL, hi - lo, ret) < 0)
        abort();
    *n = hi - lo;
    return 0;
}
