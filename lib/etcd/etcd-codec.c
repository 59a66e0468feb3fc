/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/etcd/etcd-codec.c: the etcd v3 JSON gateway's codecs (etcd-internal.h):
 * base64, the request bodies, the replies decoded into typed records, a
 * request's copy, and the watch stream's line framing. No I/O: the client
 * (lib/etcd/etcd.c) sends what these make and feeds them what comes back. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd-internal.h"
#include "base/base.h"

#define MAX_WATCH_LINE (4u << 20)
#define dlog(d, ...) preempt_logf_((d)->log, (d)->arg, __VA_ARGS__) /* a watch decoder's log */

/* Makes room for need bytes in a growing buffer (doubling from first). */
static int reserve(char **buf, size_t *cap, size_t need, size_t first)
{
    size_t n = *cap ? *cap : first;
    char *p;

    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    p = realloc(*buf, n);
    if (!p)
        return -ENOMEM;
    *buf = p;
    *cap = n;
    return 0;
}

/* ---- base64 (RFC 4648, standard alphabet, padded) ----------------------------- */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int preempt_b64_encode_(const void *data, size_t len, char **ret)
{
    const unsigned char *p = data;
    char *out = malloc(4 * ((len + 2) / 3) + 1), *o = out;

    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < len ? p[i + 2] : 0);

        *o++ = b64chars[v >> 18 & 63];
        *o++ = b64chars[v >> 12 & 63];
        *o++ = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
        *o++ = i + 2 < len ? b64chars[v & 63] : '=';
    }
    *o = '\0';
    *ret = out;
    return 0;
}

static int b64val(char c)
{
    const char *p = c ? strchr(b64chars, c) : NULL;

    return p ? (int)(p - b64chars) : -1;
}

int preempt_b64_decode_(const char *s, char **ret, size_t *ret_len)
{
    size_t n = strlen(s), o = 0;
    char *out;

    if (n % 4 != 0)
        return -EPROTO;
    out = malloc(n / 4 * 3 + 1);
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i += 4) {
        int a = b64val(s[i]), b = b64val(s[i + 1]), c = b64val(s[i + 2]), d = b64val(s[i + 3]);
        bool last = i + 4 == n;

        if (a < 0 || b < 0 || (c < 0 && !(last && s[i + 2] == '=' && s[i + 3] == '=')) ||
            (d < 0 && !(last && s[i + 3] == '='))) {
            free(out);
            return -EPROTO;
        }
        out[o++] = (char)(a << 2 | b >> 4);
        if (c >= 0)
            out[o++] = (char)((b & 15) << 4 | c >> 2);
        if (c >= 0 && d >= 0)
            out[o++] = (char)((c & 3) << 6 | d);
    }
    out[o] = '\0';
    *ret = out;
    if (ret_len)
        *ret_len = o;
    return 0;
}

/* ---- request bodies ----------------------------------------------------------------- */

int preempt_etcd_prefix_end_(const char *prefix, char **ret)
{
    size_t n = strlen(prefix);
    char *end = strdup(prefix);

    if (!end)
        return -ENOMEM;
    while (n > 0 && (unsigned char)end[n - 1] == 0xff)
        n--;
    if (n == 0) { /* every key: the empty range end "\0" */
        end[0] = '\0';
    } else {
        end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
        end[n] = '\0';
    }
    *ret = end;
    return 0;
}

/* Sets obj[name] = base64(s); returns false on allocation failure. */
static bool set_b64(json_t *obj, const char *name, const char *s)
{
    char *b;

    bool ok;

    if (!obj || preempt_b64_encode_(s, strlen(s), &b) < 0)
        return false;
    ok = json_object_set_new(obj, name, json_string(b)) == 0;
    free(b);
    return ok;
}

bool preempt_etcd_set_i64(json_t *obj, const char *name, int64_t v)
{
    char buf[24];

    (void)snprintf(buf, sizeof(buf), "%lld", (long long)v);
    return obj && json_object_set_new(obj, name, json_string(buf)) == 0;
}

/* A range [key, end) (end NULL: the key alone, or with prefix every key under it). */
json_t *preempt_etcd_span_body(const char *key, bool prefix, const char *span_end)
{
    json_t *b = json_object();
    char *end = NULL;

    if (!set_b64(b, "key", key))
        goto fail;
    if (span_end) {
        if (!set_b64(b, "range_end", span_end))
            goto fail;
    } else if (prefix) {
        if (preempt_etcd_prefix_end_(key, &end) < 0)
            goto fail;
        if (!end[0] ? json_object_set_new(b, "range_end", json_string("AA==")) != 0 : !set_b64(b, "range_end", end))
            goto fail;
        free(end);
    }
    return b;
fail:
    free(end);
    json_decref(b);
    return NULL;
}

static json_t *key_body(const char *key, bool prefix)
{
    return preempt_etcd_span_body(key, prefix, NULL);
}

static json_t *put_body(const char *key, const char *value, int64_t lease)
{
    json_t *b = key_body(key, false);

    if (!set_b64(b, "value", value) || (lease && !preempt_etcd_set_i64(b, "lease", lease))) {
        json_decref(b);
        return NULL;
    }
    return b;
}

static json_t *txn_ops(const struct preempt_etcd_op *ops, size_t n)
{
    json_t *arr = json_array();

    static const char *const names[] = { "request_put",   "request_range", "request_delete_range",
                                         "request_range", "request_range", "request_delete_range" };

    for (size_t i = 0; arr && i < n; i++) {
        enum preempt_etcd_op_kind k = ops[i].kind;
        bool put = k == PREEMPT_ETCD_OP_PUT, count = k == PREEMPT_ETCD_OP_COUNT_PREFIX,
             keys = k == PREEMPT_ETCD_OP_KEYS_PREFIX;
        json_t *req = put ? put_body(ops[i].key, preempt_value_str_(ops[i].value), ops[i].lease)
                          : key_body(ops[i].key, k == PREEMPT_ETCD_OP_DELETE_PREFIX || count || keys);

        if (req && (count || keys) && json_object_set_new(req, count ? "count_only" : "keys_only", json_true()) != 0) {
            json_decref(req);
            req = NULL;
        }
        if (!req || json_array_append_new(arr, json_pack("{s:o}", names[ops[i].kind], req)) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *txn_body(const struct preempt_etcd_cmp *cmp, size_t n_cmp, const struct preempt_etcd_op *ok,
                        size_t n_ok, const struct preempt_etcd_op *fail, size_t n_fail)
{
    json_t *cmps = json_array();

    for (size_t i = 0; cmps && i < n_cmp; i++) {
        json_t *c = key_body(cmp[i].key, false);
        bool mod = cmp[i].mod_rev > 0, absent = !mod && !cmp[i].value;
        const char *target = mod ? "MOD" : absent ? "CREATE" : "VALUE";

        if (!c || json_object_set_new(c, "target", json_string(target)) != 0 ||
            json_object_set_new(c, "result", json_string("EQUAL")) != 0 ||
            !(mod      ? preempt_etcd_set_i64(c, "mod_revision", cmp[i].mod_rev)
              : absent ? preempt_etcd_set_i64(c, "create_revision", 0)
                       : set_b64(c, "value", preempt_value_str_(cmp[i].value))) ||
            json_array_append_new(cmps, c) != 0) {
            json_decref(c);
            json_decref(cmps);
            return NULL;
        }
    }
    return cmps ? json_pack("{s:o, s:o, s:o}", "compare", cmps, "success", txn_ops(ok, n_ok), "failure",
                            txn_ops(fail, n_fail))
                : NULL;
}

static json_t *lease_body(const char *name, int64_t v)
{
    json_t *b = json_object();

    if (!preempt_etcd_set_i64(b, name, v)) {
        json_decref(b);
        return NULL;
    }
    return b;
}

json_t *preempt_etcd_req_body_(const struct preempt_etcd_req *q, const char **ret_path)
{
    static const char *const paths[] = { [PREEMPT_ETCD_RQ_PUT] = "kv/put",
                                         [PREEMPT_ETCD_RQ_RANGE] = "kv/range",
                                         [PREEMPT_ETCD_RQ_DELETE] = "kv/deleterange",
                                         [PREEMPT_ETCD_RQ_TXN] = "kv/txn",
                                         [PREEMPT_ETCD_RQ_CREATE] = "kv/txn",
                                         [PREEMPT_ETCD_RQ_GRANT] = "lease/grant",
                                         [PREEMPT_ETCD_RQ_KEEPALIVE] = "lease/keepalive",
                                         [PREEMPT_ETCD_RQ_REVOKE] = "lease/revoke",
                                         [PREEMPT_ETCD_RQ_TIMETOLIVE] = "lease/timetolive" };

    if (!q || (unsigned)q->kind >= sizeof(paths) / sizeof(paths[0]))
        return NULL;
    *ret_path = paths[q->kind];
    switch (q->kind) {
    case PREEMPT_ETCD_RQ_PUT:
        return q->key && q->value ? put_body(q->key, preempt_value_str_(q->value), q->lease) : NULL;
    case PREEMPT_ETCD_RQ_RANGE: {
        json_t *b = q->key ? preempt_etcd_span_body(q->key, q->prefix, q->end) : NULL;

        if (b && q->rev > 0 && !preempt_etcd_set_i64(b, "revision", q->rev)) {
            json_decref(b);
            return NULL;
        }
        return b;
    }
    case PREEMPT_ETCD_RQ_DELETE:
        return q->key ? preempt_etcd_span_body(q->key, q->prefix, q->end) : NULL;
    case PREEMPT_ETCD_RQ_TXN:
        return txn_body(q->cmp, q->n_cmp, q->ok, q->n_ok, q->fail, q->n_fail);
    case PREEMPT_ETCD_RQ_CREATE: {
        struct preempt_etcd_cmp cmp = { .key = q->key };
        struct preempt_etcd_op put = { PREEMPT_ETCD_OP_PUT, q->key, q->value, q->lease },
                               get = { PREEMPT_ETCD_OP_GET, q->key, NULL, 0 };

        return q->key && q->value ? txn_body(&cmp, 1, &put, 1, &get, 1) : NULL;
    }
    case PREEMPT_ETCD_RQ_GRANT:
        return lease_body("TTL", q->ttl_s);
    case PREEMPT_ETCD_RQ_KEEPALIVE:
    case PREEMPT_ETCD_RQ_REVOKE:
    case PREEMPT_ETCD_RQ_TIMETOLIVE:
        return lease_body("ID", q->lease);
    }
    return NULL;
}

/* ---- reply decoding --------------------------------------------------------------------- */

/* The numbers of a reply (revisions, lease and cluster ids, counts,
 * TTLs). The gateway writes an int64 or uint64 field as a JSON string of
 * decimal digits ('-' first for a negative one) and leaves out a field
 * whose value is 0. Absent, a number is 0; there and not such a number
 * (garbage, "007", "+7", " 7", out of range, another JSON type), the whole
 * reply is malformed: *err becomes -EPROTO (and stays so), the value 0,
 * which no caller then reads. A garbage revision read as 0 would decide
 * whether a whole read is applied. */
static bool decimal(const char *s, uint64_t max, uint64_t *ret)
{
    uint64_t v = 0;

    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1]))
        return false; /* empty, a sign or a blank, or a leading zero */
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (max - (uint64_t)(*s - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *ret = v;
    return *s == '\0';
}

int64_t preempt_etcd_i64_(const json_t *obj, const char *name, int *err)
{
    const json_t *v = json_object_get(obj, name);
    uint64_t u;

    if (!v)
        return 0;
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    if (json_is_string(v)) {
        const char *s = json_string_value(v);

        if (s[0] == '-' && decimal(s + 1, (uint64_t)INT64_MAX + 1, &u) && u > 0)
            return u > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)u;
        if (decimal(s, INT64_MAX, &u))
            return (int64_t)u;
    }
    *err = -EPROTO;
    return 0;
}

static uint64_t u64_of(const json_t *obj, const char *name, int *err)
{
    const json_t *v = json_object_get(obj, name);
    uint64_t u;

    if (!v)
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0)
        return (uint64_t)json_integer_value(v);
    if (json_is_string(v) && decimal(json_string_value(v), UINT64_MAX, &u))
        return u;
    *err = -EPROTO;
    return 0;
}

static int64_t header_rev(const json_t *reply, int *err)
{
    return preempt_etcd_i64_(json_object_get(reply, "header"), "revision", err);
}

static uint64_t header_cluster(const json_t *reply, int *err)
{
    return u64_of(json_object_get(reply, "header"), "cluster_id", err);
}

void preempt_etcd_kv_clear_(struct preempt_etcd_kv *kv)
{
    free(kv->key);
    free(kv->value);
    *kv = (struct preempt_etcd_kv){ 0 };
}

int preempt_etcd_kv_(const json_t *kv, struct preempt_etcd_kv *ret)
{
    const json_t *k = json_object_get(kv, "key"), *v = json_object_get(kv, "value");
    int r, err = 0;

    *ret = (struct preempt_etcd_kv){ 0 };
    if (!json_is_object(kv) || !json_is_string(k) || (v && !json_is_string(v)))
        return -EPROTO;
    r = preempt_b64_decode_(json_string_value(k), &ret->key, NULL);
    if (r == 0)
        r = preempt_b64_decode_(v ? json_string_value(v) : "", &ret->value, &ret->value_len);
    if (r < 0) {
        preempt_etcd_kv_clear_(ret);
        return r;
    }
    ret->create_rev = preempt_etcd_i64_(kv, "create_revision", &err);
    ret->mod_rev = preempt_etcd_i64_(kv, "mod_revision", &err);
    ret->lease = preempt_etcd_i64_(kv, "lease", &err);
    if (err < 0)
        preempt_etcd_kv_clear_(ret);
    return err;
}

void preempt_etcd_kvs_free_(struct preempt_etcd_kv *kvs, size_t n)
{
    for (size_t i = 0; kvs && i < n; i++)
        preempt_etcd_kv_clear_(&kvs[i]);
    free(kvs);
}

int preempt_etcd_kvs_dup_(const struct preempt_etcd_kv *kvs, size_t n, struct preempt_etcd_kv **ret)
{
    struct preempt_etcd_kv *d = n ? calloc(n, sizeof(*d)) : NULL;

    *ret = NULL;
    if (n && !d)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        d[i] = kvs[i];
        d[i].key = strdup(kvs[i].key ? kvs[i].key : "");
        d[i].value = malloc(kvs[i].value_len + 1);
        if (!d[i].key || !d[i].value) {
            preempt_etcd_kvs_free_(d, i + 1);
            return -ENOMEM;
        }
        if (kvs[i].value_len)
            memcpy(d[i].value, kvs[i].value, kvs[i].value_len);
        d[i].value[kvs[i].value_len] = '\0';
    }
    *ret = d;
    return 0;
}

/* A range's answer (the reply's own, or a txn's response_range). */
static int range_res(const json_t *rr, struct preempt_etcd_res *ret)
{
    const json_t *kvs = json_object_get(rr, "kvs");
    size_t n = json_array_size(kvs);
    int err = 0;

    *ret = (struct preempt_etcd_res){ .count = preempt_etcd_i64_(rr, "count", &err) };
    if (err < 0 || !json_is_object(rr) || (kvs && !json_is_array(kvs)))
        return -EPROTO;
    if (n == 0)
        return 0;
    ret->kvs = calloc(n, sizeof(*ret->kvs));
    if (!ret->kvs)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int r = preempt_etcd_kv_(json_array_get(kvs, i), &ret->kvs[i]);

        if (r < 0) {
            preempt_etcd_kvs_free_(ret->kvs, i);
            ret->kvs = NULL;
            return r;
        }
    }
    ret->n = n;
    return 0;
}

/* One txn response: {"response_range": {...}}, {"response_put": {...}} or
 * {"response_delete_range": {..., "deleted": n}}. */
static int txn_res(const json_t *resp, struct preempt_etcd_res *ret)
{
    const json_t *rr = json_object_get(resp, "response_range"), *del = json_object_get(resp, "response_delete_range");
    int err = 0;

    *ret = (struct preempt_etcd_res){ 0 };
    if (rr)
        return range_res(rr, ret);
    if (del) {
        ret->count = preempt_etcd_i64_(del, "deleted", &err);
        return json_is_object(del) && err == 0 ? 0 : -EPROTO;
    }
    return json_is_object(json_object_get(resp, "response_put")) ? 0 : -EPROTO;
}

void preempt_etcd_reply_clear_(struct preempt_etcd_reply *r)
{
    for (size_t i = 0; r->res && i < r->n_res; i++)
        preempt_etcd_kvs_free_(r->res[i].kvs, r->res[i].n);
    free(r->res);
    *r = (struct preempt_etcd_reply){ 0 };
}

static int reply_res(struct preempt_etcd_reply *r, size_t n)
{
    r->res = calloc(n ? n : 1, sizeof(*r->res));
    if (!r->res)
        return -ENOMEM;
    r->n_res = n;
    return 0;
}

int preempt_etcd_reply_decode_(enum preempt_etcd_rq kind, const json_t *body, struct preempt_etcd_reply *ret)
{
    const json_t *resps, *result;
    int r = 0;

    *ret = (struct preempt_etcd_reply){ 0 };
    if (!json_is_object(body))
        return -EPROTO;
    /* the gateway's keep-alive is a stream: its one message wraps the answer in "result" */
    result = kind == PREEMPT_ETCD_RQ_KEEPALIVE && json_is_object(json_object_get(body, "result"))
                 ? json_object_get(body, "result")
                 : body;
    ret->rev = header_rev(result, &r);
    ret->cluster = header_cluster(result, &r);
    if (r < 0)
        return r;
    switch (kind) {
    case PREEMPT_ETCD_RQ_PUT:
    case PREEMPT_ETCD_RQ_REVOKE:
        break;
    case PREEMPT_ETCD_RQ_RANGE:
        if ((r = reply_res(ret, 1)) == 0)
            r = range_res(body, &ret->res[0]);
        if (r == 0 && ret->rev <= 0)
            r = -EPROTO; /* a range's revision is what a watch goes on from */
        break;
    case PREEMPT_ETCD_RQ_DELETE:
        if ((r = reply_res(ret, 1)) == 0)
            ret->res[0].count = preempt_etcd_i64_(body, "deleted", &r);
        break;
    case PREEMPT_ETCD_RQ_TXN:
    case PREEMPT_ETCD_RQ_CREATE:
        resps = json_object_get(body, "responses");
        if (!json_is_object(json_object_get(body, "header")) || (resps && !json_is_array(resps))) {
            r = -EPROTO;
            break;
        }
        ret->succeeded = json_is_true(json_object_get(body, "succeeded")); /* absent on failure */
        if ((r = reply_res(ret, json_array_size(resps))) < 0)
            break;
        for (size_t i = 0; r == 0 && i < ret->n_res; i++)
            r = txn_res(json_array_get(resps, i), &ret->res[i]);
        break;
    case PREEMPT_ETCD_RQ_GRANT:
        ret->id = preempt_etcd_i64_(body, "ID", &r);
        ret->ttl = preempt_etcd_i64_(body, "TTL", &r);
        if (ret->id == 0)
            r = -EPROTO;
        break;
    case PREEMPT_ETCD_RQ_KEEPALIVE:
        ret->ttl = preempt_etcd_i64_(result, "TTL", &r); /* an expired lease: none (0) */
        break;
    case PREEMPT_ETCD_RQ_TIMETOLIVE:
        ret->ttl = preempt_etcd_i64_(body, "TTL", &r); /* expired: -1, or none (0) */
        ret->granted_ttl = preempt_etcd_i64_(body, "grantedTTL", &r);
        break;
    default:
        r = -EPROTO;
    }
    if (r < 0)
        preempt_etcd_reply_clear_(ret);
    return r;
}

/* ---- line framing --------------------------------------------------------------------------- */

void preempt_linebuf_init_(struct preempt_linebuf *lb, size_t max_line)
{
    *lb = (struct preempt_linebuf){ .max_line = max_line };
}

void preempt_linebuf_free_(struct preempt_linebuf *lb)
{
    free(lb->buf);
    *lb = (struct preempt_linebuf){ .max_line = lb->max_line };
}

int preempt_linebuf_feed_(struct preempt_linebuf *lb, const char *data, size_t len,
                          void (*line)(const char *s, size_t len, void *arg), void *arg)
{
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;

        if (!lb->overflow && lb->len + take > lb->max_line) {
            lb->overflow = true;
            lb->len = 0;
        }
        if (!lb->overflow) {
            if (reserve(&lb->buf, &lb->cap, lb->len + take + 1, 256) < 0)
                return -ENOMEM;
            memcpy(lb->buf + lb->len, data, take);
            lb->len += take;
        }
        if (!nl)
            break;
        if (lb->overflow)
            line("", 0, arg); /* too long: reported empty */
        else if (lb->len > 0) {
            lb->buf[lb->len] = '\0';
            line(lb->buf, lb->len, arg);
        }
        lb->len = 0;
        lb->overflow = false;
        data = nl + 1;
        len -= take + 1;
    }
    return 0;
}

void preempt_linebuf_flush_(struct preempt_linebuf *lb, void (*line)(const char *s, size_t len, void *arg), void *arg)
{
    if (lb->len > 0 && !lb->overflow) {
        lb->buf[lb->len] = '\0';
        line(lb->buf, lb->len, arg);
    }
    lb->len = 0;
    lb->overflow = false;
}

enum preempt_watch_msg preempt_watch_classify_(const json_t *msg, int64_t *ret_rev, const json_t **ret_events,
                                               const char **ret_reason)
{
    const json_t *res = json_object_get(msg, "result"), *err = json_object_get(msg, "error"), *ev;
    int64_t compacted;
    int bad = 0;

    *ret_rev = 0;
    *ret_events = NULL;
    *ret_reason = NULL;
    if (json_is_object(err)) {
        const json_t *m = json_object_get(err, "message");

        *ret_reason = json_is_string(m) ? json_string_value(m) : "error";
        return PREEMPT_WATCH_ERROR;
    }
    if (!json_is_object(res) || !json_is_object(json_object_get(res, "header")))
        return PREEMPT_WATCH_BAD;
    *ret_rev = header_rev(res, &bad);
    (void)header_cluster(res, &bad); /* read again where the store's identity matters: store_moved() */
    compacted = preempt_etcd_i64_(res, "compact_revision", &bad);
    if (bad < 0) {
        *ret_rev = 0;
        return PREEMPT_WATCH_BAD;
    }
    if (json_is_true(json_object_get(res, "canceled"))) {
        const json_t *why = json_object_get(res, "cancel_reason");

        if (compacted > 0)
            return PREEMPT_WATCH_COMPACTED;
        *ret_reason = json_is_string(why) ? json_string_value(why) : "canceled";
        return PREEMPT_WATCH_CANCELED;
    }
    if (json_is_true(json_object_get(res, "created")))
        return PREEMPT_WATCH_CREATED;
    ev = json_object_get(res, "events");
    if (ev && !json_is_array(ev))
        return PREEMPT_WATCH_BAD;
    if (json_array_size(ev) > 0) {
        *ret_events = ev;
        return PREEMPT_WATCH_EVENTS;
    }
    return PREEMPT_WATCH_PROGRESS;
}

bool preempt_etcd_auth_problem(long http, const char *text)
{
    return http == 401 || strstr(text, "user name is empty") || strstr(text, "invalid auth token");
}

void preempt_watch_dec_init_(struct preempt_watch_dec *d, int64_t next_rev)
{
    preempt_linebuf_init_(&d->lb, MAX_WATCH_LINE);
    d->next_rev = next_rev;
    d->end = PREEMPT_WATCH_GOING;
    d->auth_failed = false;
}

void preempt_watch_dec_free_(struct preempt_watch_dec *d)
{
    preempt_linebuf_free_(&d->lb);
}

static void dec_event(struct preempt_watch_dec *d, const json_t *ev)
{
    const json_t *type = json_object_get(ev, "type");
    struct preempt_etcd_kv kv;

    if (preempt_etcd_kv_(json_object_get(ev, "kv"), &kv) < 0 || kv.mod_rev <= 0 || kv.mod_rev == INT64_MAX) {
        preempt_etcd_kv_clear_(&kv);
        dlog(d, 2, "etcd watch %s: an event without a decodable kv; re-reading", d->prefix);
        d->next_rev = 0;
        d->end = PREEMPT_WATCH_REREAD;
        return;
    }
    /* Never deliver a revision twice, but every event of one: a txn writes
     * several keys in one revision, and one message carries them all. */
    if (kv.mod_rev >= d->next_rev || kv.mod_rev == d->cur_rev) {
        enum preempt_etcd_ev t = json_is_string(type) && !strcmp(json_string_value(type), "DELETE")
                                     ? PREEMPT_ETCD_DELETE : PREEMPT_ETCD_PUT;

        d->cur_rev = kv.mod_rev;
        d->next_rev = kv.mod_rev + 1;
        if (d->on_event)
            d->on_event(t, &kv, d->arg);
    }
    preempt_etcd_kv_clear_(&kv);
}

/* A store that is not the one this watch read: another cluster (a new
 * etcd, or one restored from a snapshot, gets a new cluster id), or one
 * whose revision is behind what this watch already delivered (restored
 * from an older snapshot, or wiped). A watch re-opened at the old revision
 * + 1 would wait for revisions that never come, silently: the prefix is
 * read again instead, and the receiver rebuilds its view from it. */
static bool store_moved(struct preempt_watch_dec *d, const json_t *msg, int64_t rev, enum preempt_watch_msg kind)
{
    int err = 0;
    uint64_t id = header_cluster(json_object_get(msg, "result"), &err); /* well-formed: classified */
    bool header = kind == PREEMPT_WATCH_CREATED || kind == PREEMPT_WATCH_PROGRESS;
    bool other = id && d->cluster_id && id != d->cluster_id;
    bool behind = !other && header && rev > 0 && d->next_rev > 0 && rev < d->next_rev - 1;

    if (other)
        dlog(d, 2, "etcd watch %s: another etcd cluster (id %llx, was %llx): re-reading the prefix", d->prefix,
             (unsigned long long)id, (unsigned long long)d->cluster_id);
    else if (behind)
        dlog(d, 2, "etcd watch %s: the store is at revision %lld, behind revision %lld already seen: it went back "
             "in time (restored or wiped); re-reading the prefix", d->prefix, (long long)rev,
             (long long)(d->next_rev - 1));
    if (id)
        d->cluster_id = id;
    if (!other && !behind)
        return false;
    d->next_rev = 0;
    d->end = PREEMPT_WATCH_REREAD;
    return true;
}

static void dec_line(const char *s, size_t len, void *arg)
{
    struct preempt_watch_dec *d = arg;
    const json_t *events;
    const char *reason;
    enum preempt_watch_msg kind;
    json_error_t jerr;
    json_t *j;
    int64_t rev;

    if (d->end != PREEMPT_WATCH_GOING)
        return;
    j = len ? json_loadb(s, len, 0, &jerr) : NULL;
    kind = preempt_watch_classify_(j, &rev, &events, &reason);
    if (kind != PREEMPT_WATCH_BAD && kind != PREEMPT_WATCH_ERROR && store_moved(d, j, rev, kind)) {
        json_decref(j);
        return;
    }
    switch (kind) {
    case PREEMPT_WATCH_CREATED:
        if (d->on_created)
            d->on_created(rev, d->arg);
        break;
    case PREEMPT_WATCH_EVENTS:
        d->cur_rev = 0;
        for (size_t i = 0; i < json_array_size(events) && d->end == PREEMPT_WATCH_GOING; i++)
            dec_event(d, json_array_get(events, i));
        break;
    case PREEMPT_WATCH_PROGRESS:
        if (rev < 0 || rev == INT64_MAX) { /* no store gets there: a damaged message */
            dlog(d, 2, "etcd watch %s: a progress notice at revision %lld; reconnecting", d->prefix, (long long)rev);
            d->end = PREEMPT_WATCH_RECONNECT;
        } else if (rev + 1 > d->next_rev) {
            d->next_rev = rev + 1;
        }
        break;
    case PREEMPT_WATCH_COMPACTED:
        dlog(d, 1, "etcd watch %s: revision %lld compacted; re-reading the prefix", d->prefix,
             (long long)d->next_rev);
        d->next_rev = 0;
        d->end = PREEMPT_WATCH_REREAD;
        break;
    case PREEMPT_WATCH_CANCELED:
        dlog(d, 2, "etcd watch %s canceled by the server: %s", d->prefix, reason);
        d->auth_failed = preempt_etcd_auth_problem(0, reason);
        d->end = PREEMPT_WATCH_RECONNECT;
        break;
    case PREEMPT_WATCH_ERROR:
        dlog(d, 1, "etcd watch %s ended by the server: %s", d->prefix, reason);
        d->end = PREEMPT_WATCH_RECONNECT;
        break;
    case PREEMPT_WATCH_BAD:
        dlog(d, 2, "etcd watch %s: a malformed message; reconnecting from revision %lld", d->prefix,
             (long long)d->next_rev);
        d->end = PREEMPT_WATCH_RECONNECT;
        break;
    }
    json_decref(j);
}

enum preempt_watch_end preempt_watch_dec_feed_(struct preempt_watch_dec *d, const char *data, size_t len)
{
    if (d->end == PREEMPT_WATCH_GOING && preempt_linebuf_feed_(&d->lb, data, len, dec_line, d) < 0)
        d->end = PREEMPT_WATCH_RECONNECT;
    return d->end;
}

void preempt_watch_dec_finish_(struct preempt_watch_dec *d)
{
    if (d->end == PREEMPT_WATCH_GOING)
        preempt_linebuf_flush_(&d->lb, dec_line, d);
}
