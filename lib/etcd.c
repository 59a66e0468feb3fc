/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/etcd.c: the etcd v3 JSON-gateway client on libcurl multi + libevent
 * (see etcd-internal.h; style R13 and docs/stack-notes §2-4). The transfers
 * run on lib/http.c's multi handle. Requests retry with backoff over the
 * endpoints until their give-up time; a watch is a streaming request that is
 * re-opened after every kind of end. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "etcd-internal.h"
#include "fault-internal.h"
#include "http-internal.h"
#include "platform-internal.h" /* preempt_tv_ms_ */

#define MAX_ENDPOINTS 8
#define MAX_REPLY (4u << 20)    /* a reply larger than this is refused */
#define MAX_WATCH_LINE (4u << 20)
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 1000
#define WATCH_BACKOFF_MAX_MS 2000
#define MAX_REAUTH 2
/* The client's clock counts only time the loop was there to run it: a tick
 * every TICK_MS advances it, and a gap longer than GAP_MS between two
 * readings (the loop's thread was inside a trainer's step) counts as
 * GAP_MS. Request timeouts, give-up times and the watchdog use it, so a
 * synchronous trainer's 30 s step does not time out a request whose reply
 * waits in the socket buffer. */
#define TICK_MS 250
#define GAP_MS 1000

struct req;

/* A request's outcome with the answer's body (valid during the callback);
 * the statuses of preempt_etcd_reply_cb. */
typedef void (*json_cb)(int status, json_t *reply, const char *msg, void *arg);

struct preempt_etcd {
    struct event_base *base;
    struct preempt_http *http;
    char *endpoints[MAX_ENDPOINTS];
    unsigned n_endpoints, cur;
    char *user, *password, *ca, *cert, *key;
    uint64_t timeout_ms, watch_idle_ms;
    void (*log)(int level, const char *msg, void *arg);
    void *log_arg;
    char *token;
    bool authing;
    struct req *reqs;   /* every request and stream, for cancellation */
    unsigned pending;   /* requests (not streams) not yet answered */
    uint64_t active, last_real; /* the client's clock (TICK_MS) and when it was last read */
    struct event *ev_tick;
};

struct req {
    struct preempt_etcd *e;
    struct req *prev, *next;
    CURL *easy;
    struct curl_slist *hdrs;
    char *path, *body;
    struct preempt_http_body reply;
    char errbuf[CURL_ERROR_SIZE];
    json_cb cb;                       /* the answer's body, as it came */
    preempt_etcd_reply_cb tcb;        /* or decoded as kind's */
    enum preempt_etcd_rq kind;
    void *arg;
    uint64_t give_up_at;              /* on the client's clock */
    uint64_t attempt_end;             /* this attempt's timeout, on the client's clock; 0: none */
    unsigned attempt, reauth;
    struct event *ev_retry;
    bool is_auth, waiting_auth;
    bool counted;                     /* counts as pending (not a watch's own read) */
    struct preempt_etcd_watch *watch; /* a watch stream */
};

struct preempt_etcd_watch {
    struct preempt_etcd *e;
    char *prefix, *end; /* the range [prefix, end); end NULL: every key under prefix */
    struct preempt_etcd_watch_ops ops;
    void *arg;
    struct req *stream, *read;
    struct event *ev_reopen, *ev_dog;
    struct preempt_watch_dec dec; /* dec.next_rev: the next revision to deliver; 0: read the prefix first */
    unsigned failures;
    bool up, got_bytes;
    uint64_t dog_since; /* the watchdog's period began (the client's clock) */
};

uint64_t preempt_clock_ms_(clockid_t clock)
{
    struct timespec ts;

    (void)clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t mono_ms(void)
{
    return preempt_clock_ms_(CLOCK_MONOTONIC);
}

/* Reads the client's clock (see TICK_MS). */
static uint64_t active_ms(struct preempt_etcd *e)
{
    uint64_t now = mono_ms(), gap = e->last_real && now > e->last_real ? now - e->last_real : 0;

    e->active += gap < GAP_MS ? gap : GAP_MS;
    e->last_real = now;
    return e->active;
}

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

#define elog(e, ...) preempt_logf_((e)->log, (e)->log_arg, __VA_ARGS__)  /* the client's log */
#define dlog(d, ...) preempt_logf_((d)->log, (d)->arg, __VA_ARGS__)      /* a watch decoder's log */

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

static bool set_i64(json_t *obj, const char *name, int64_t v)
{
    char buf[24];

    (void)snprintf(buf, sizeof(buf), "%lld", (long long)v);
    return obj && json_object_set_new(obj, name, json_string(buf)) == 0;
}

/* A range [key, end) (end NULL: the key alone, or with prefix every key under it). */
static json_t *span_body(const char *key, bool prefix, const char *span_end)
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
    return span_body(key, prefix, NULL);
}

static json_t *put_body(const char *key, const char *value, int64_t lease)
{
    json_t *b = key_body(key, false);

    if (!set_b64(b, "value", value) || (lease && !set_i64(b, "lease", lease))) {
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
        json_t *req = put ? put_body(ops[i].key, ops[i].value, ops[i].lease)
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
        bool absent = !cmp[i].value;

        if (!c || json_object_set_new(c, "target", json_string(absent ? "CREATE" : "VALUE")) != 0 ||
            json_object_set_new(c, "result", json_string("EQUAL")) != 0 ||
            !(absent ? set_i64(c, "create_revision", 0) : set_b64(c, "value", cmp[i].value)) ||
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

    if (!set_i64(b, name, v)) {
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
        return q->key && q->value ? put_body(q->key, q->value, q->lease) : NULL;
    case PREEMPT_ETCD_RQ_RANGE:
    case PREEMPT_ETCD_RQ_DELETE:
        return q->key ? span_body(q->key, q->prefix, q->end) : NULL;
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

int64_t preempt_etcd_i64_(const json_t *obj, const char *name)
{
    const json_t *v = json_object_get(obj, name);

    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    return 0;
}

static int64_t header_rev(const json_t *reply)
{
    return preempt_etcd_i64_(json_object_get(reply, "header"), "revision");
}

static uint64_t header_cluster(const json_t *reply)
{
    const json_t *v = json_object_get(json_object_get(reply, "header"), "cluster_id");

    if (json_is_string(v))
        return strtoull(json_string_value(v), NULL, 10);
    return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
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
    int r;

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
    ret->create_rev = preempt_etcd_i64_(kv, "create_revision");
    ret->mod_rev = preempt_etcd_i64_(kv, "mod_revision");
    ret->lease = preempt_etcd_i64_(kv, "lease");
    return 0;
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

    *ret = (struct preempt_etcd_res){ .count = preempt_etcd_i64_(rr, "count") };
    if (!json_is_object(rr) || (kvs && !json_is_array(kvs)))
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

    *ret = (struct preempt_etcd_res){ 0 };
    if (rr)
        return range_res(rr, ret);
    if (del) {
        ret->count = preempt_etcd_i64_(del, "deleted");
        return json_is_object(del) ? 0 : -EPROTO;
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
    ret->rev = header_rev(result);
    ret->cluster = header_cluster(result);
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
            ret->res[0].count = preempt_etcd_i64_(body, "deleted");
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
        ret->id = preempt_etcd_i64_(body, "ID");
        ret->ttl = preempt_etcd_i64_(body, "TTL");
        if (ret->id == 0)
            r = -EPROTO;
        break;
    case PREEMPT_ETCD_RQ_KEEPALIVE:
        ret->ttl = preempt_etcd_i64_(result, "TTL"); /* an expired lease: none (0) */
        break;
    case PREEMPT_ETCD_RQ_TIMETOLIVE:
        ret->ttl = preempt_etcd_i64_(body, "TTL"); /* expired: -1, or none (0) */
        ret->granted_ttl = preempt_etcd_i64_(body, "grantedTTL");
        break;
    default:
        r = -EPROTO;
    }
    if (r < 0)
        preempt_etcd_reply_clear_(ret);
    return r;
}

const struct preempt_etcd_kv *preempt_etcd_reply_kv_(const struct preempt_etcd_reply *r, size_t i)
{
    return r && i < r->n_res && r->res[i].n > 0 ? &r->res[i].kvs[0] : NULL;
}

int64_t preempt_etcd_reply_count_(const struct preempt_etcd_reply *r, size_t i)
{
    return r && i < r->n_res ? r->res[i].count : -1;
}

/* ---- a request's copy ---------------------------------------------------------------------- */

struct req_copy {
    struct preempt_etcd_req req;
    char *strs[3];
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

static struct preempt_etcd_op *copy_ops(const struct preempt_etcd_op *ops, size_t n)
{
    struct preempt_etcd_op *c = calloc(n ? n : 1, sizeof(*c));

    for (size_t i = 0; c && i < n; i++) {
        char *k, *v;

        c[i] = ops[i];
        if (!copy_str(ops[i].key, &k, &c[i].key) || !copy_str(ops[i].value, &v, &c[i].value)) {
            free(k);
            c[i].key = c[i].value = NULL;
            for (size_t j = 0; j <= i; j++) {
                free((char *)c[j].key);
                free((char *)c[j].value);
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
        free((char *)ops[i].value);
    }
    free(ops);
}

void preempt_etcd_req_free_(struct preempt_etcd_req *req)
{
    struct req_copy *c = (struct req_copy *)req;

    if (!c)
        return;
    for (size_t i = 0; i < 3; i++)
        free(c->strs[i]);
    for (size_t i = 0; c->cmp && i < c->req.n_cmp; i++) {
        free((char *)c->cmp[i].key);
        free((char *)c->cmp[i].value);
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
    ok = copy_str(req->key, &c->strs[0], &c->req.key) && copy_str(req->value, &c->strs[1], &c->req.value) &&
         copy_str(req->end, &c->strs[2], &c->req.end);
    c->req.cmp = c->cmp = calloc(req->n_cmp ? req->n_cmp : 1, sizeof(*c->cmp));
    ok = ok && c->cmp;
    for (size_t i = 0; ok && i < req->n_cmp; i++) {
        char *k, *v;

        ok = copy_str(req->cmp[i].key, &k, &c->cmp[i].key) && copy_str(req->cmp[i].value, &v, &c->cmp[i].value);
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
    *ret_rev = header_rev(res);
    if (json_is_true(json_object_get(res, "canceled"))) {
        const json_t *why = json_object_get(res, "cancel_reason");

        if (preempt_etcd_i64_(res, "compact_revision") > 0)
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

static bool auth_problem(long http, const char *text)
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
    uint64_t id = header_cluster(json_object_get(msg, "result"));
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
            d->on_created(d->arg);
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
        d->auth_failed = auth_problem(0, reason);
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

/* ---- requests ---------------------------------------------------------------------------------- */

static void req_unlink(struct req *q)
{
    if (q->prev)
        q->prev->next = q->next;
    else
        q->e->reqs = q->next;
    if (q->next)
        q->next->prev = q->prev;
    q->prev = q->next = NULL;
}

static void req_stop_transfer(struct req *q)
{
    preempt_http_drop_(q->e->http, &q->easy, &q->hdrs);
}

static void req_free(struct req *q)
{
    if (!q)
        return;
    req_stop_transfer(q);
    req_unlink(q);
    if (q->counted)
        q->e->pending--;
    if (q->ev_retry)
        event_free(q->ev_retry);
    free(q->path);
    free(q->body);
    free(q->reply.data);
    free(q);
}

static size_t on_stream(char *data, size_t size, size_t n, void *arg);

static int req_start(struct req *q);
static void on_xfer_done(CURL *easy, CURLcode res, void *arg);

static void send_auth(struct preempt_etcd *e);

/* Starts (or queues behind authentication) one attempt of q. */
static int req_start(struct req *q)
{
    struct preempt_etcd *e = q->e;
    char url[1024], auth[1024];
    CURL *c;

    if (e->user && !e->token && !q->is_auth) {
        q->waiting_auth = true;
        if (!e->authing)
            send_auth(e);
        return 0;
    }
    q->waiting_auth = false;
    req_stop_transfer(q);
    q->reply.len = 0; /* a new attempt: a new reply */
    q->reply.max = MAX_REPLY;
    c = curl_easy_init();
    if (!c)
        return -ENOMEM;
    q->easy = c;
    (void)snprintf(url, sizeof(url), "%s/v3/%s", e->endpoints[e->cur], q->path);
    q->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    if (e->token && !q->is_auth) {
        struct curl_slist *h;

        (void)snprintf(auth, sizeof(auth), "Authorization: %s", e->token); /* the raw token, no "Bearer" */
        h = curl_slist_append(q->hdrs, auth);
        if (h)
            q->hdrs = h;
    }
    if (!q->hdrs)
        return -ENOMEM;
    q->errbuf[0] = '\0';
    (void)curl_easy_setopt(c, CURLOPT_URL, url);
    (void)curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    (void)curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    (void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, q->hdrs);
    (void)curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body);
    (void)curl_easy_setopt(c, CURLOPT_ERRORBUFFER, q->errbuf);
    /* no curl timeout: curl counts real time, the step's included; the
     * client's tick ends an attempt (attempt_end) */
    if (e->ca)
        (void)curl_easy_setopt(c, CURLOPT_CAINFO, e->ca);
    if (e->cert)
        (void)curl_easy_setopt(c, CURLOPT_SSLCERT, e->cert);
    if (e->key)
        (void)curl_easy_setopt(c, CURLOPT_SSLKEY, e->key);
    if (q->watch) { /* a stream: no total timeout; the watchdog bounds silence */
        (void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_stream);
        (void)curl_easy_setopt(c, CURLOPT_WRITEDATA, q->watch);
        (void)curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
        /* A connection of its own, closed with the stream: an open one
         * stays for the requests (a claim would otherwise wait for a new
         * connection's handshake), and a stream's end never hands a
         * suspect connection to them. */
        (void)curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
        (void)curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    } else {
        (void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, preempt_http_body_write_);
        (void)curl_easy_setopt(c, CURLOPT_WRITEDATA, &q->reply);
        q->attempt_end = active_ms(e) + e->timeout_ms;
    }
    return preempt_http_add_(e->http, c, on_xfer_done, q);
}

static void req_answer(struct req *q, int status, json_t *reply, const char *msg);

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct req *q = arg;

    (void)fd;
    (void)what;
    if (req_start(q) < 0)
        req_answer(q, -ENOMEM, NULL, "out of memory");
}

/* Answers q's caller and frees q. */
static void req_answer(struct req *q, int status, json_t *reply, const char *msg)
{
    json_cb cb = q->cb;
    preempt_etcd_reply_cb tcb = q->tcb;
    enum preempt_etcd_rq kind = q->kind;
    void *arg = q->arg;
    struct preempt_etcd_reply r;
    char why[256];

    if (tcb && status == 0) {
        status = preempt_etcd_reply_decode_(kind, reply, &r);
        if (status < 0) {
            (void)snprintf(why, sizeof(why), "etcd %s: %s", q->path,
                           status == -ENOMEM ? "out of memory" : "an answer that is not the request's");
            msg = why;
        }
    }
    req_free(q);
    if (cb)
        cb(status, reply, msg, arg);
    if (tcb)
        tcb(status, status == 0 ? &r : NULL, msg, arg);
    if (tcb && status == 0)
        preempt_etcd_reply_clear_(&r);
}

static uint64_t backoff_ms(unsigned attempt)
{
    uint64_t ms = BACKOFF_MIN_MS;

    while (attempt-- > 1 && ms < BACKOFF_MAX_MS)
        ms *= 2;
    return ms < BACKOFF_MAX_MS ? ms : BACKOFF_MAX_MS;
}

/* Schedules another attempt when time allows; returns false when not. */
static bool req_retry(struct req *q, const char *why)
{
    uint64_t wait = backoff_ms(++q->attempt);
    struct timeval tv = preempt_tv_ms_(wait);

    if (active_ms(q->e) + wait >= q->give_up_at)
        return false;
    if (!q->ev_retry)
        q->ev_retry = evtimer_new(q->e->base, on_retry, q);
    if (!q->ev_retry || evtimer_add(q->ev_retry, &tv) < 0)
        return false;
    elog(q->e, 0, "etcd %s: %s; retry %u in %llu ms", q->path, why, q->attempt, (unsigned long long)wait);
    return true;
}

/* The message of an error reply: {"error":..., "message":..., "code":N}. */
static const char *error_text(const json_t *j)
{
    const json_t *m = json_object_get(j, "message");

    if (!json_is_string(m))
        m = json_object_get(j, "error");
    return json_is_string(m) ? json_string_value(m) : "no message";
}

static void req_done(struct req *q, CURLcode res)
{
    struct preempt_etcd *e = q->e;
    long http = 0;
    json_t *j = NULL;
    json_error_t jerr;
    char why[512];
    const char *text;
    int status;

    (void)curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &http);
    req_stop_transfer(q);
    if (res == CURLE_OK && preempt_fault_(PREEMPT_FAULT_ETCD) < 0) { /* a lost reply: etcd may have applied it */
        res = CURLE_COULDNT_CONNECT;
        (void)snprintf(q->errbuf, sizeof(q->errbuf), "fault injected");
    }
    if (res != CURLE_OK || http == 0 || http >= 500 || http == 408) {
        (void)snprintf(why, sizeof(why), "%s: %s", e->endpoints[e->cur],
                       res != CURLE_OK ? (q->errbuf[0] ? q->errbuf : curl_easy_strerror(res)) : "server error");
        if (res != CURLE_OK && e->n_endpoints > 1)
            e->cur = (e->cur + 1) % e->n_endpoints; /* fail over */
        if (!req_retry(q, why))
            req_answer(q, -ETIMEDOUT, NULL, why);
        return;
    }
    if (q->reply.len > 0)
        j = json_loadb(q->reply.data, q->reply.len, 0, &jerr);
    if (!json_is_object(j)) {
        (void)snprintf(why, sizeof(why), "etcd %s: HTTP %ld with a reply that is not a JSON object", q->path, http);
        json_decref(j);
        req_answer(q, -EPROTO, NULL, why);
        return;
    }
    if (http == 200) {
        req_answer(q, 0, j, NULL);
        json_decref(j);
        return;
    }
    text = error_text(j);
    if (!q->is_auth && e->user && auth_problem(http, text) && q->reauth < MAX_REAUTH) {
        q->reauth++;
        free(e->token); /* expired: authenticate again, then resend */
        e->token = NULL;
        json_decref(j);
        if (req_start(q) < 0)
            req_answer(q, -ENOMEM, NULL, "out of memory");
        return;
    }
    if (http == 404)
        status = -ENOENT;
    else if (http == 401 || http == 403 || strstr(text, "authentication failed") || auth_problem(http, text))
        status = -EACCES;
    else
        status = -EINVAL;
    if (status == -EACCES && !e->user && auth_problem(http, text))
        (void)snprintf(why, sizeof(why), "etcd requires authentication (%s): configure a user and password", text);
    else
        (void)snprintf(why, sizeof(why), "etcd %s: HTTP %ld: %s", q->path, http, text);
    json_decref(j);
    req_answer(q, status, NULL, why);
}

/* The client's tick: its clock advances, and an attempt past its time is
 * ended as curl would have ended it (then retried or answered). */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_etcd *e = arg;
    uint64_t now = active_ms(e);

    (void)fd;
    (void)what;
    for (;;) { /* an answer may start or end other requests: scan again after each */
        struct req *q = e->reqs;

        while (q && (q->watch || !q->easy || !q->attempt_end || now < q->attempt_end))
            q = q->next;
        if (!q)
            break;
        q->attempt_end = 0;
        (void)snprintf(q->errbuf, sizeof(q->errbuf), "timed out: no reply within %llu ms", (unsigned long long)e->timeout_ms);
        req_done(q, CURLE_OPERATION_TIMEDOUT);
    }
}

static void watch_ended(struct preempt_etcd_watch *w, CURLcode res);

static void on_xfer_done(CURL *easy, CURLcode res, void *arg)
{
    struct req *q = arg;

    (void)easy;
    if (q->watch)
        watch_ended(q->watch, res);
    else
        req_done(q, res);
}

static struct req *req_new(struct preempt_etcd *e, const char *path, json_t *body, uint64_t give_up_ms)
{
    struct req *q = calloc(1, sizeof(*q));

    if (!q)
        return NULL;
    q->e = e;
    q->path = strdup(path);
    q->body = body ? json_dumps(body, JSON_COMPACT) : strdup("{}");
    q->give_up_at = active_ms(e) + give_up_ms;
    if (!q->path || !q->body) {
        free(q->path);
        free(q->body);
        free(q);
        return NULL;
    }
    q->next = e->reqs;
    if (e->reqs)
        e->reqs->prev = q;
    e->reqs = q;
    return q;
}

/* Sends req, its answer decoded for cb; counted: it counts as pending (see
 * preempt_etcd_flush_; a watch's own read does not). */
static struct req *typed_call(struct preempt_etcd *e, const struct preempt_etcd_req *req, uint64_t give_up_ms,
                              preempt_etcd_reply_cb cb, void *arg, bool counted)
{
    const char *path = NULL;
    json_t *body = preempt_etcd_req_body_(req, &path);
    struct req *q = body ? req_new(e, path, body, give_up_ms) : NULL;

    json_decref(body);
    if (!q)
        return NULL;
    q->tcb = cb;
    q->kind = req->kind;
    q->arg = arg;
    q->counted = counted;
    if (counted)
        e->pending++;
    if (req_start(q) < 0) {
        req_free(q);
        return NULL;
    }
    return q;
}

int preempt_etcd_do_(struct preempt_etcd *e, const struct preempt_etcd_req *req, uint64_t give_up_ms,
                     preempt_etcd_reply_cb cb, void *arg)
{
    if (!e || !req)
        return -EINVAL;
    return typed_call(e, req, give_up_ms, cb, arg, true) ? 0 : -ENOMEM;
}

unsigned preempt_etcd_pending_(const struct preempt_etcd *e)
{
    return e ? e->pending : 0;
}

/* ---- authentication ----------------------------------------------------------------------------- */

static void on_auth(int status, json_t *reply, const char *msg, void *arg)
{
    struct preempt_etcd *e = arg;
    const json_t *tok = json_object_get(reply, "token");
    char why[512];
    struct req *q, *next;

    e->authing = false;
    if (status == 0 && json_is_string(tok) && json_string_length(tok) > 0) {
        e->token = strdup(json_string_value(tok));
        if (e->token) {
            elog(e, 0, "etcd: authenticated as %s", e->user);
            for (q = e->reqs; q; q = next) { /* req_start may prepend: next is taken first */
                next = q->next;
                if (q->waiting_auth && req_start(q) < 0)
                    q->waiting_auth = false; /* left to its watchdog or give-up */
            }
            return;
        }
    }
    (void)snprintf(why, sizeof(why), "etcd authentication as %s failed: %s", e->user,
                   status == 0 ? "no token in the reply" : msg);
    elog(e, 3, "%s", why);
    for (q = e->reqs; q; q = next) {
        next = q->next;
        if (!q->waiting_auth)
            continue;
        q->waiting_auth = false;
        if (q->watch) {
            req_free(q); /* the stream retries on its own schedule */
            continue;
        }
        req_answer(q, status == -ETIMEDOUT ? -ETIMEDOUT : -EACCES, NULL, why);
        next = e->reqs; /* the callback may have changed the list: start over */
    }
}

static void send_auth(struct preempt_etcd *e)
{
    json_t *body = json_pack("{s:s, s:s}", "name", e->user, "password", e->password);
    struct req *q = body ? req_new(e, "auth/authenticate", body, 3 * e->timeout_ms) : NULL;

    json_decref(body);
    if (!q)
        return;
    q->is_auth = true;
    q->cb = on_auth;
    q->arg = e;
    e->authing = true;
    if (req_start(q) < 0) {
        req_free(q);
        e->authing = false;
    }
}

/* ---- watches ---------------------------------------------------------------------------------------- */

static void watch_schedule(struct preempt_etcd_watch *w, bool now);

static void watch_set_link(struct preempt_etcd_watch *w, bool up, const char *why)
{
    if (w->up == up)
        return;
    w->up = up;
    if (w->ops.on_link)
        w->ops.on_link(up, why, w->arg);
}

static void watch_dec_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    struct preempt_etcd_watch *w = arg;

    w->ops.on_event(type, kv, w->arg);
}

static void watch_dec_created(void *arg)
{
    struct preempt_etcd_watch *w = arg;

    w->failures = 0;
    watch_set_link(w, true, "created");
}

static void watch_dec_log(int level, const char *msg, void *arg)
{
    struct preempt_etcd_watch *w = arg;

    elog(w->e, level, "%s", msg);
}

static size_t on_stream(char *data, size_t size, size_t n, void *arg)
{
    struct preempt_etcd_watch *w = arg;
    size_t len = size * n;

    w->got_bytes = true;
    if (preempt_fault_(PREEMPT_FAULT_WATCH) < 0)
        return 0;
    if (preempt_watch_dec_feed_(&w->dec, data, len) == PREEMPT_WATCH_GOING)
        return len;
    if (w->dec.auth_failed && w->e->token) {
        free(w->e->token);
        w->e->token = NULL;
    }
    return 0; /* 0 ends the transfer: the way to cancel from here */
}

static void watch_ended(struct preempt_etcd_watch *w, CURLcode res)
{
    struct req *q = w->stream;
    long http = 0;
    char why[CURL_ERROR_SIZE + 64];
    bool closed = w->dec.end != PREEMPT_WATCH_GOING;
    const char *what = closed ? "closed by the client"
                       : res == CURLE_OK ? "ended by the server"
                       : q->errbuf[0] ? q->errbuf : curl_easy_strerror(res);

    (void)curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &http);
    if (!closed) /* the last line of a graceful stop has no newline */
        preempt_watch_dec_finish_(&w->dec);
    (void)snprintf(why, sizeof(why), "%.*s (curl %d, HTTP %ld)", CURL_ERROR_SIZE, what, (int)res, http);
    if (res != CURLE_OK && !closed && w->e->n_endpoints > 1)
        w->e->cur = (w->e->cur + 1) % w->e->n_endpoints;
    req_free(q);
    w->stream = NULL;
    preempt_watch_dec_free_(&w->dec);
    elog(w->e, 1, "etcd watch %s: %s; re-opening from revision %lld", w->prefix, why, (long long)w->dec.next_rev);
    watch_set_link(w, false, why);
    watch_schedule(w, closed && w->failures == 0);
}

static void watch_open_stream(struct preempt_etcd_watch *w)
{
    json_t *create = span_body(w->prefix, true, w->end), *body;
    struct req *q;

    if (!create || !set_i64(create, "start_revision", w->dec.next_rev) ||
        json_object_set_new(create, "progress_notify", json_true()) != 0) {
        json_decref(create);
        watch_schedule(w, false);
        return;
    }
    body = json_pack("{s:o}", "create_request", create);
    q = req_new(w->e, "watch", body, 0);
    json_decref(body);
    if (!q) {
        watch_schedule(w, false);
        return;
    }
    q->watch = w;
    w->stream = q;
    w->got_bytes = true;
    preempt_watch_dec_init_(&w->dec, w->dec.next_rev);
    if (req_start(q) < 0) {
        req_free(q);
        w->stream = NULL;
        watch_schedule(w, false);
    }
}

static void on_watch_read(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_etcd_watch *w = arg;

    w->read = NULL;
    if (status < 0) {
        elog(w->e, 2, "etcd watch %s: reading the prefix failed: %s", w->prefix, msg);
        watch_set_link(w, false, msg);
        watch_schedule(w, false);
        return;
    }
    w->dec.next_rev = r->rev + 1;
    if (r->cluster)
        w->dec.cluster_id = r->cluster;
    if (w->ops.on_reset)
        w->ops.on_reset(r->res[0].kvs, r->res[0].n, r->rev, w->arg);
    watch_open_stream(w);
}

static void on_watch_reopen(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_etcd_watch *w = arg;

    (void)fd;
    (void)what;
    if (w->dec.next_rev > 0) {
        watch_open_stream(w);
        return;
    }
    w->read = typed_call(w->e, &(struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_RANGE, .key = w->prefix,
                                                           .prefix = true, .end = w->end },
                         w->e->timeout_ms, on_watch_read, w, false);
    if (!w->read)
        watch_schedule(w, false);
}

static void watch_schedule(struct preempt_etcd_watch *w, bool now)
{
    uint64_t ms = 0;
    struct timeval tv;

    if (!now) {
        ms = 100;
        for (unsigned i = 0; i < w->failures && ms < WATCH_BACKOFF_MAX_MS; i++)
            ms *= 2;
        if (ms > WATCH_BACKOFF_MAX_MS)
            ms = WATCH_BACKOFF_MAX_MS;
        w->failures++;
    }
    tv = preempt_tv_ms_(ms);
    (void)evtimer_add(w->ev_reopen, &tv);
}

/* The watchdog: a stream silent for a whole period is re-opened (a peer that
 * vanished without FIN/RST would otherwise take TCP keepalive's ~10 min). */
static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_etcd_watch *w = arg;

    (void)fd;
    (void)what;
    if (active_ms(w->e) - w->dog_since < w->e->watch_idle_ms)
        return; /* the loop was away (a trainer's step): not a whole period yet */
    w->dog_since = w->e->active;
    if (w->stream && w->stream->easy && !w->got_bytes) {
        elog(w->e, 1, "etcd watch %s: silent for %llu ms; re-opening", w->prefix,
             (unsigned long long)w->e->watch_idle_ms);
        req_free(w->stream);
        w->stream = NULL;
        preempt_watch_dec_free_(&w->dec);
        watch_set_link(w, false, "silent");
        watch_schedule(w, true);
    }
    w->got_bytes = false;
}

int preempt_etcd_watch_(struct preempt_etcd *e, const char *prefix, const char *end, int64_t start_rev,
                        const struct preempt_etcd_watch_ops *ops, void *arg, struct preempt_etcd_watch **ret)
{
    struct preempt_etcd_watch *w;
    struct timeval tv;

    if (!e || !prefix || !ops || !ops->on_event || !ret || start_rev < 0)
        return -EINVAL;
    w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->e = e;
    w->prefix = strdup(prefix);
    w->end = end ? strdup(end) : NULL;
    w->ops = *ops;
    w->arg = arg;
    w->dec = (struct preempt_watch_dec){ .next_rev = start_rev, .on_event = watch_dec_event,
                                         .on_created = watch_dec_created, .log = watch_dec_log, .arg = w,
                                         .prefix = w->prefix };
    w->ev_reopen = evtimer_new(e->base, on_watch_reopen, w);
    w->ev_dog = event_new(e->base, -1, EV_PERSIST, on_watchdog, w);
    w->dog_since = active_ms(e);
    tv = preempt_tv_ms_(e->watch_idle_ms);
    if (!w->prefix || (end && !w->end) || !w->ev_reopen || !w->ev_dog || event_add(w->ev_dog, &tv) < 0) {
        preempt_etcd_watch_free_(w);
        return -ENOMEM;
    }
    watch_schedule(w, true);
    *ret = w;
    return 0;
}

void preempt_etcd_watch_free_(struct preempt_etcd_watch *w)
{
    if (!w)
        return;
    if (w->stream)
        req_free(w->stream);
    req_free(w->read);
    preempt_watch_dec_free_(&w->dec);
    if (w->ev_reopen)
        event_free(w->ev_reopen);
    if (w->ev_dog)
        event_free(w->ev_dog);
    free(w->prefix);
    free(w->end);
    free(w);
}

/* ---- the client ------------------------------------------------------------------------------------- */

static int dup_opt(const char *s, char **ret)
{
    *ret = s ? strdup(s) : NULL;
    return !s || *ret ? 0 : -ENOMEM;
}

/* Splits the comma-separated endpoint list; a refusal is logged with its
 * reason at error level (the caller's message then needs no guess). */
static int split_endpoints(struct preempt_etcd *e, const char *list)
{
    const char *p = list;

    while (*p) {
        size_t n = strcspn(p, ",");

        if (n > 0) {
            if (e->n_endpoints == MAX_ENDPOINTS) {
                elog(e, 3, "etcd endpoints: more than %d", MAX_ENDPOINTS);
                return -E2BIG;
            }
            if (!(n > 7 && !strncmp(p, "http://", 7)) && !(n > 8 && !strncmp(p, "https://", 8))) {
                elog(e, 3, "etcd endpoint '%.*s' is not an http:// or https:// URL", (int)(n > 200 ? 200 : n), p);
                return -EINVAL;
            }
            while (n > 0 && p[n - 1] == '/')
                n--;
            e->endpoints[e->n_endpoints] = strndup(p, n);
            if (!e->endpoints[e->n_endpoints])
                return -ENOMEM;
            e->n_endpoints++;
        }
        p += n + (p[n] == ',');
    }
    if (e->n_endpoints == 0)
        elog(e, 3, "etcd endpoints: none given");
    return e->n_endpoints > 0 ? 0 : -EINVAL;
}

int preempt_etcd_new_(struct event_base *base, const struct preempt_etcd_opts *o, struct preempt_etcd **ret)
{
    struct preempt_etcd *e;
    int r;

    if (!base || !o || !o->endpoints || !ret || !o->user != !o->password)
        return -EINVAL;
    e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->base = base;
    e->timeout_ms = o->timeout_ms ? o->timeout_ms : 2000;
    e->watch_idle_ms = o->watch_idle_ms ? o->watch_idle_ms : 30000;
    e->log = o->log;
    e->log_arg = o->log_arg;
    e->ev_tick = event_new(base, -1, EV_PERSIST, on_tick, e);
    r = e->ev_tick && event_add(e->ev_tick, &(struct timeval){ .tv_usec = TICK_MS * 1000 }) == 0 ? 0 : -ENOMEM;
    if (r == 0)
        r = split_endpoints(e, o->endpoints);
    if (r == 0)
        r = dup_opt(o->user, &e->user);
    if (r == 0)
        r = dup_opt(o->password, &e->password);
    if (r == 0)
        r = dup_opt(o->ca, &e->ca);
    if (r == 0)
        r = dup_opt(o->cert, &e->cert);
    if (r == 0)
        r = dup_opt(o->key, &e->key);
    if (r == 0)
        r = preempt_http_new_(base, &e->http);
    if (r < 0) {
        preempt_etcd_free_(e);
        return r;
    }
    *ret = e;
    return 0;
}

void preempt_etcd_free_(struct preempt_etcd *e)
{
    if (!e)
        return;
    while (e->reqs)
        req_free(e->reqs); /* no callbacks: the owner is going away */
    if (e->ev_tick)
        event_free(e->ev_tick);
    preempt_http_free_(e->http);
    for (unsigned i = 0; i < e->n_endpoints; i++)
        free(e->endpoints[i]);
    if (e->password)
        explicit_bzero(e->password, strlen(e->password));
    free(e->user);
    free(e->password);
    free(e->ca);
    free(e->cert);
    free(e->key);
    free(e->token);
    free(e);
}

int preempt_etcd_run_until_(struct preempt_etcd *e, uint64_t bound_ms, bool (*done)(void *arg), void *arg)
{
    return preempt_run_until_(e->base, bound_ms, done, arg);
}

static bool nothing_pending(void *arg)
{
    return ((struct preempt_etcd *)arg)->pending == 0;
}

unsigned preempt_etcd_flush_(struct preempt_etcd *e, uint64_t bound_ms)
{
    if (!e)
        return 0;
    (void)preempt_etcd_run_until_(e, bound_ms, nothing_pending, e);
    return e->pending;
}
