/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/port/port.c: the pure side of the typed port (port-internal.h) that the
 * coordinator sees: a reply's accessors, a read's order, the log formatter and a
 * request's copy (the shell keeps a step's requests until the step
 * returns; the simulation answers them later). The job core (lib/job/)
 * calls these, never the etcd client, libevent or libcurl:
 * tests/fsm-purity.sh checks it from the objects' symbols. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "port-internal.h"

void preempt_logf_(void (*log)(int level, const char *msg, void *arg), void *arg, int level, const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    if (!log)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    log(level, buf, arg);
}

const struct preempt_etcd_kv *preempt_etcd_reply_kv_(const struct preempt_etcd_reply *r, size_t i)
{
    return r && i < r->n_res && r->res[i].n > 0 ? &r->res[i].kvs[0] : NULL;
}

int64_t preempt_etcd_reply_count_(const struct preempt_etcd_reply *r, size_t i)
{
    return r && i < r->n_res ? r->res[i].count : -1;
}

static int by_write(const void *a, const void *b)
{
    const struct preempt_etcd_kv *x = a, *y = b;

    return x->mod_rev != y->mod_rev ? (x->mod_rev < y->mod_rev ? -1 : 1) : strcmp(x->key, y->key);
}

void preempt_etcd_kvs_by_write_(struct preempt_etcd_kv *kvs, size_t n)
{
    if (n > 1)
        qsort(kvs, n, sizeof(*kvs), by_write);
}

/* ---- a request's copy ---------------------------------------------------------------------- */

struct req_copy {
    struct preempt_etcd_req req;
    char *strs[2];
    struct preempt_value *value;
    struct preempt_etcd_cmp *cmp;
    struct preempt_etcd_op *ok, *fail;
};

static bool copy_str(const char *s, char **keep, const char **ret)
{
    *keep = NULL;
    *ret = NULL;
    if (!s)
        return true;
    *keep = strdup(s);
    *ret = *keep;
    return *keep != NULL;
}

static bool copy_val(const struct preempt_value *v, struct preempt_value **keep, const struct preempt_value **ret)
{
    *keep = NULL;
    *ret = NULL;
    if (!v)
        return true;
    *keep = malloc(sizeof(**keep));
    if (*keep)
        **keep = *v;
    *ret = *keep;
    return *keep != NULL;
}

static struct preempt_etcd_op *copy_ops(const struct preempt_etcd_op *ops, size_t n)
{
    struct preempt_etcd_op *c = calloc(n ? n : 1, sizeof(*c));

    for (size_t i = 0; c && i < n; i++) {
        char *k;
        struct preempt_value *v;

        c[i] = ops[i];
        if (!copy_str(ops[i].key, &k, &c[i].key) || !copy_val(ops[i].value, &v, &c[i].value)) {
            free(k);
            c[i].key = NULL;
            c[i].value = NULL;
            for (size_t j = 0; j <= i; j++) {
                free((char *)c[j].key);
                free((void *)c[j].value);
            }
            free(c);
            return NULL;
        }
    }
    return c;
}

static void free_ops(struct preempt_etcd_op *ops, size_t n)
{
    for (size_t i = 0; ops && i < n; i++) {
        free((char *)ops[i].key);
        free((void *)ops[i].value);
    }
    free(ops);
}

static bool named(const char *key)
{
    return key && key[0];
}

int preempt_etcd_span_ok_(const char *key, const char *end)
{
    return named(key) && (!end || end[0]) ? 0 : -ENAMETOOLONG;
}

int preempt_etcd_req_keys_ok_(const struct preempt_etcd_req *req)
{
    switch (req->kind) {
    case PREEMPT_ETCD_RQ_PUT:
    case PREEMPT_ETCD_RQ_RANGE:
    case PREEMPT_ETCD_RQ_DELETE:
    case PREEMPT_ETCD_RQ_CREATE:
        return preempt_etcd_span_ok_(req->key, req->end);
    case PREEMPT_ETCD_RQ_TXN:
        for (size_t i = 0; i < req->n_cmp; i++)
            if (!named(req->cmp[i].key))
                return -ENAMETOOLONG;
        for (size_t i = 0; i < req->n_ok + req->n_fail; i++)
            if (!named(i < req->n_ok ? req->ok[i].key : req->fail[i - req->n_ok].key))
                return -ENAMETOOLONG;
        return 0;
    case PREEMPT_ETCD_RQ_GRANT:
    case PREEMPT_ETCD_RQ_KEEPALIVE:
    case PREEMPT_ETCD_RQ_REVOKE:
    case PREEMPT_ETCD_RQ_TIMETOLIVE:
        return 0;
    }
    return -EINVAL;
}

void preempt_etcd_req_free_(struct preempt_etcd_req *req)
{
    struct req_copy *c = (struct req_copy *)req;

    if (!c)
        return;
    for (size_t i = 0; i < 2; i++)
        free(c->strs[i]);
    free(c->value);
    for (size_t i = 0; c->cmp && i < c->req.n_cmp; i++) {
        free((char *)c->cmp[i].key);
        free((void *)c->cmp[i].value);
    }
    free(c->cmp);
    free_ops(c->ok, c->req.n_ok);
    free_ops(c->fail, c->req.n_fail);
    free(c);
}

struct preempt_etcd_req *preempt_etcd_req_copy_(const struct preempt_etcd_req *req)
{
    struct req_copy *c = calloc(1, sizeof(*c));
    bool ok;

    if (!c)
        return NULL;
    c->req = *req;
    ok = copy_str(req->key, &c->strs[0], &c->req.key) && copy_val(req->value, &c->value, &c->req.value) &&
         copy_str(req->end, &c->strs[1], &c->req.end);
    c->req.cmp = c->cmp = calloc(req->n_cmp ? req->n_cmp : 1, sizeof(*c->cmp));
    ok = ok && c->cmp;
    for (size_t i = 0; ok && i < req->n_cmp; i++) {
        char *k;
        struct preempt_value *v;

        c->cmp[i].mod_rev = req->cmp[i].mod_rev;
        ok = copy_str(req->cmp[i].key, &k, &c->cmp[i].key) && copy_val(req->cmp[i].value, &v, &c->cmp[i].value);
        if (!ok) { /* what was copied of it is freed here; the rest with the copy */
            free(k);
            c->cmp[i] = (struct preempt_etcd_cmp){ 0 };
        }
    }
    c->req.ok = c->ok = ok ? copy_ops(req->ok, req->n_ok) : NULL;
    c->req.fail = c->fail = c->ok ? copy_ops(req->fail, req->n_fail) : NULL;
    if (!c->fail) {
        if (!c->ok)
            c->req.n_ok = 0;
        c->req.n_fail = 0;
        preempt_etcd_req_free_(&c->req);
        return NULL;
    }
    return &c->req;
}
