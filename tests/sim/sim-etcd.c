/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/sim/sim-etcd.c: an in-memory model of the etcd v3 semantics the
 * protocol relies on, behind the JSON gateway's request and reply shapes:
 * one revision per write (a txn is one), keys in byte order, create and mod
 * revisions, ranges (count_only, keys_only), leases with a TTL whose expiry deletes their keys, txn with
 * CREATE/VALUE compares, and a history that watches replay in order. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

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

/* ---- the gateway's JSON ---------------------------------------------------------------- */

static json_t *header(const struct sim_etcd *m)
{
    char rev[24];

    (void)snprintf(rev, sizeof(rev), "%" PRId64, m->rev);
    return json_pack("{s:s, s:s, s:s}", "cluster_id", "1", "member_id", "1", "revision", rev);
}

static json_t *i64s(int64_t v)
{
    char buf[24];

    (void)snprintf(buf, sizeof(buf), "%" PRId64, v);
    return json_string(buf);
}

static json_t *b64(const char *s, size_t len)
{
    char *e;
    json_t *j;

    if (preempt_b64_encode_(s, len, &e) < 0)
        abort();
    j = json_string(e);
    free(e);
    return j;
}

static json_t *kv_json(const struct preempt_etcd_kv *kv)
{
    json_t *j = json_object();

    json_object_set_new(j, "key", b64(kv->key, strlen(kv->key)));
    json_object_set_new(j, "create_revision", i64s(kv->create_rev));
    json_object_set_new(j, "mod_revision", i64s(kv->mod_rev));
    json_object_set_new(j, "version", json_string("1"));
    json_object_set_new(j, "value", b64(kv->value, kv->value_len));
    if (kv->lease)
        json_object_set_new(j, "lease", i64s(kv->lease));
    return j;
}

/* A base64 field decoded (NULL when absent or not base64). */
static char *field(const json_t *body, const char *name)
{
    const json_t *v = json_object_get(body, name);
    char *s = NULL;
    size_t len;

    if (!json_is_string(v) || preempt_b64_decode_(json_string_value(v), &s, &len) < 0)
        return NULL;
    return s;
}

static json_t *do_range(struct sim_etcd *m, const json_t *body)
{
    char *key = field(body, "key"), *end = field(body, "range_end");
    json_t *r = json_pack("{s:o}", "header", header(m)), *kvs = json_array();
    bool count_only = json_is_true(json_object_get(body, "count_only"));
    bool keys_only = json_is_true(json_object_get(body, "keys_only"));
    unsigned count = 0;
    bool found;

    /* the keys are sorted: from the first at or after key, while in range */
    for (size_t i = key ? find(m, key, &found) : m->n; i < m->n && in_range(m->kvs[i].key, key, end); i++) {
        json_t *kv = count_only ? NULL : kv_json(&m->kvs[i]);

        if (kv && keys_only)
            (void)json_object_del(kv, "value");
        if (kv)
            json_array_append_new(kvs, kv);
        count++;
    }
    if (count && !count_only)
        json_object_set_new(r, "kvs", kvs);
    else
        json_decref(kvs);
    json_object_set_new(r, "count", i64s(count));
    free(key);
    free(end);
    return r;
}

/* A put's checks, before any write of its request: the key is there and
 * the lease, when given, is live. */
static int put_check(struct sim_etcd *m, const json_t *body, const char **msg)
{
    char *key = field(body, "key");
    int64_t lease = preempt_etcd_i64_(body, "lease");

    if (!key) {
        *msg = "etcdserver: key is not provided";
        return -EINVAL;
    }
    free(key);
    if (lease && !lease_of(m, lease)) {
        *msg = "etcdserver: requested lease not found";
        return -ENOENT;
    }
    return 0;
}

static void put_body(struct sim_etcd *m, const json_t *body)
{
    char *key = field(body, "key"), *value = field(body, "value");

    do_put(m, key, value ? value : "", preempt_etcd_i64_(body, "lease"));
    free(key);
    free(value);
}

static unsigned delete_body(struct sim_etcd *m, const json_t *body)
{
    char *key = field(body, "key"), *end = field(body, "range_end");
    unsigned n = key ? do_delete(m, key, end) : 0;

    free(key);
    free(end);
    return n;
}

static bool compare(struct sim_etcd *m, const json_t *c)
{
    char *key = field(c, "key");
    const char *target = json_string_value(json_object_get(c, "target"));
    bool found = false, ok = false;
    size_t i = key ? find(m, key, &found) : 0;

    if (target && !strcmp(target, "CREATE")) {
        ok = (found ? m->kvs[i].create_rev : 0) == preempt_etcd_i64_(c, "create_revision");
    } else if (target && !strcmp(target, "VALUE")) {
        char *v = field(c, "value");

        ok = found && v && !strcmp(m->kvs[i].value, v);
        free(v);
    }
    free(key);
    return ok;
}

static int do_txn(struct sim_etcd *m, const json_t *body, json_t **ret, const char **msg)
{
    const json_t *cmps = json_object_get(body, "compare"), *ops, *op;
    bool ok = true, wrote = false;
    json_t *resps = json_array();
    size_t i;

    json_array_foreach(cmps, i, op) ok = ok && compare(m, op);
    ops = json_object_get(body, ok ? "success" : "failure");
    json_array_foreach(ops, i, op) { /* every put is checked before anything is written */
        const json_t *put = json_object_get(op, "request_put");
        int r = put ? put_check(m, put, msg) : 0;

        if (r < 0) {
            json_decref(resps);
            return r;
        }
        wrote = wrote || put || json_object_get(op, "request_delete_range");
    }
    if (wrote)
        m->rev++;
    json_array_foreach(ops, i, op) {
        const json_t *put = json_object_get(op, "request_put"), *rng = json_object_get(op, "request_range"),
                     *del = json_object_get(op, "request_delete_range");

        if (put) {
            put_body(m, put);
            json_array_append_new(resps, json_pack("{s:{s:o}}", "response_put", "header", header(m)));
        } else if (rng) {
            json_array_append_new(resps, json_pack("{s:o}", "response_range", do_range(m, rng)));
        } else if (del) {
            unsigned n = delete_body(m, del);

            json_array_append_new(resps, json_pack("{s:{s:o, s:o}}", "response_delete_range", "header", header(m),
                                                   "deleted", i64s(n)));
        }
    }
    *ret = json_pack("{s:o, s:b, s:o}", "header", header(m), "succeeded", ok, "responses", resps);
    return 0;
}

int sim_etcd_apply(struct sim_etcd *m, const char *path, const json_t *body, uint64_t now_ms, json_t **ret,
                   const char **msg)
{
    int r;

    *ret = NULL;
    *msg = "ok";
    sim_etcd_expire(m, now_ms);
    if (!strcmp(path, "kv/range")) {
        *ret = do_range(m, body);
    } else if (!strcmp(path, "kv/put")) {
        if ((r = put_check(m, body, msg)) < 0)
            return r;
        m->rev++;
        put_body(m, body);
        *ret = json_pack("{s:o}", "header", header(m));
    } else if (!strcmp(path, "kv/deleterange")) {
        char *key = field(body, "key"), *end = field(body, "range_end");
        bool any = false;
        unsigned n = 0;

        for (size_t i = 0; key && i < m->n && !any; i++)
            any = in_range(m->kvs[i].key, key, end);
        if (any) { /* etcd does not bump the revision for a delete of nothing */
            m->rev++;
            n = do_delete(m, key, end);
        }
        free(key);
        free(end);
        *ret = json_pack("{s:o, s:o}", "header", header(m), "deleted", i64s(n));
    } else if (!strcmp(path, "kv/txn")) {
        return do_txn(m, body, ret, msg);
    } else if (!strcmp(path, "lease/grant")) {
        int64_t ttl = preempt_etcd_i64_(body, "TTL");

        if (ttl <= 0) {
            *msg = "etcdserver: invalid TTL";
            return -EINVAL;
        }
        *ret = json_pack("{s:o, s:o, s:o}", "header", header(m), "ID", i64s(sim_etcd_grant(m, (unsigned)ttl, now_ms)),
                         "TTL", i64s(ttl));
    } else if (!strcmp(path, "lease/keepalive")) {
        struct lease *l = lease_of(m, preempt_etcd_i64_(body, "ID"));

        if (l)
            l->expires_ms = now_ms + l->ttl_s * 1000u;
        /* the gateway's keep-alive stream: one result; an expired lease has no TTL */
        *ret = json_pack("{s:{s:o, s:o, s:o}}", "result", "header", header(m), "ID",
                         i64s(preempt_etcd_i64_(body, "ID")), "TTL", i64s(l ? l->ttl_s : 0));
    } else if (!strcmp(path, "lease/revoke")) {
        struct lease *l = lease_of(m, preempt_etcd_i64_(body, "ID"));

        if (!l) {
            *msg = "etcdserver: requested lease not found";
            return -ENOENT;
        }
        drop_lease(m, l);
        *ret = json_pack("{s:o}", "header", header(m));
    } else {
        *msg = "unknown path";
        return -EINVAL;
    }
    return 0;
}

int sim_etcd_snapshot(const struct sim_etcd *m, const char *prefix, const char *end, struct preempt_etcd_kv **ret,
                      size_t *n)
{
    bool found;
    size_t len = strlen(prefix), lo = find(m, prefix, &found), hi = lo, k = 0;
    struct preempt_etcd_kv *kvs;

    while (hi < m->n && (end ? strcmp(m->kvs[hi].key, end) < 0 : strncmp(m->kvs[hi].key, prefix, len) == 0))
        hi++;
    kvs = calloc(hi - lo + 1, sizeof(*kvs));
    if (!kvs)
        abort();
    for (size_t i = lo; i < hi; i++, k++) {
        kvs[k] = m->kvs[i];
        kvs[k].key = dup(m->kvs[i].key);
        kvs[k].value = dup(m->kvs[i].value);
    }
    *ret = kvs;
    *n = k;
    return 0;
}
