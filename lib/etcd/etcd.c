/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/etcd/etcd.c: the etcd v3 JSON-gateway client on libcurl multi + libevent
 * (see etcd-internal.h; style R13 and docs/stack-notes §2-4). The transfers
 * run on lib/etcd/http.c's multi handle. Requests retry with backoff over the
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
#include "base/base.h"
#include "http-internal.h"
#include "records/records.h"

#define MAX_ENDPOINTS 8
#define MAX_REPLY (4u << 20)    /* a reply larger than this is refused */
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
    char *user, *ca, *cert, *key;
    const char *password; /* the owner's (preempt_etcd_opts): one copy of the secret in memory */
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
    struct preempt_watch_dec dec; /* dec.next_rev: the next revision to deliver; 0: from now, then read */
    unsigned failures;
    bool up, got_bytes;
    /* A stream opened from now (fresh) is read at the revision it was
     * created at; its events that come before that read's answer are held,
     * in order, and delivered after the read (on_reset). */
    bool fresh;
    int64_t fresh_rev; /* the revision the fresh stream was created at (0: not yet) */
    struct held_ev {
        enum preempt_etcd_ev type;
        struct preempt_etcd_kv kv; /* owned copies */
    } *held;
    size_t n_held, cap_held;
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

#define elog(e, ...) preempt_logf_((e)->log, (e)->log_arg, __VA_ARGS__)  /* the client's log */

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
    if (!q->is_auth && e->user && preempt_etcd_auth_problem(http, text) && q->reauth < MAX_REAUTH) {
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
    else if (http == 401 || http == 403 || strstr(text, "authentication failed") || preempt_etcd_auth_problem(http, text))
        status = -EACCES;
    else
        status = -EINVAL;
    if (status == -EACCES && !e->user && preempt_etcd_auth_problem(http, text))
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

/* One value the request would write: a job's record whose value is not its
 * grammar is never sent (a writer that drifted from the schema). */
static bool put_ok(struct preempt_etcd *e, const char *key, const struct preempt_value *v)
{
    const char *why, *value = v ? preempt_value_str_(v) : NULL;

    if (preempt_record_check_put_(key, value, &why) == 0)
        return true;
    elog(e, 3, "etcd: not writing %s = \"%.80s\": not its record's grammar (expected %s)", key, value ? value : "",
         why);
    return false;
}

static bool puts_ok(struct preempt_etcd *e, const struct preempt_etcd_req *req)
{
    if (req->kind == PREEMPT_ETCD_RQ_PUT || req->kind == PREEMPT_ETCD_RQ_CREATE)
        return put_ok(e, req->key, req->value);
    for (size_t i = 0; req->kind == PREEMPT_ETCD_RQ_TXN && i < req->n_ok + req->n_fail; i++) {
        const struct preempt_etcd_op *op = i < req->n_ok ? &req->ok[i] : &req->fail[i - req->n_ok];

        if (op->kind == PREEMPT_ETCD_OP_PUT && !put_ok(e, op->key, op->value))
            return false;
    }
    return true;
}

int preempt_etcd_do_(struct preempt_etcd *e, const struct preempt_etcd_req *req, uint64_t give_up_ms,
                     preempt_etcd_reply_cb cb, void *arg)
{
    int r;

    if (!e || !req)
        return -EINVAL;
    if ((r = preempt_etcd_req_keys_ok_(req)) < 0) {
        elog(e, 3, "etcd: not sending a request with a key that did not fit (a bug: %s)", strerror(-r));
        return r;
    }
    if (!puts_ok(e, req))
        return -EBADMSG;
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

static void held_free(struct preempt_etcd_watch *w)
{
    for (size_t i = 0; i < w->n_held; i++)
        preempt_etcd_kv_clear_(&w->held[i].kv);
    free(w->held);
    w->held = NULL;
    w->n_held = w->cap_held = 0;
}

/* Holds an event of a fresh stream until its read is delivered: false when
 * out of memory (the stream is then opened again). */
static bool hold(struct preempt_etcd_watch *w, enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv)
{
    struct held_ev *h;

    if (w->n_held == w->cap_held) {
        size_t cap = w->cap_held ? 2 * w->cap_held : 8;
        struct held_ev *more = realloc(w->held, cap * sizeof(*more));

        if (!more)
            return false;
        w->held = more;
        w->cap_held = cap;
    }
    h = &w->held[w->n_held];
    *h = (struct held_ev){ .type = type, .kv = *kv };
    h->kv.key = kv->key ? strdup(kv->key) : NULL;
    h->kv.value = kv->value ? malloc(kv->value_len + 1) : NULL;
    if ((kv->key && !h->kv.key) || (kv->value && !h->kv.value)) {
        preempt_etcd_kv_clear_(&h->kv);
        return false;
    }
    if (kv->value)
        memcpy(h->kv.value, kv->value, kv->value_len + 1);
    w->n_held++;
    return true;
}

static void watch_dec_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    struct preempt_etcd_watch *w = arg;

    if (!w->fresh) {
        w->ops.on_event(type, kv, w->arg);
    } else if (!hold(w, type, kv)) {
        elog(w->e, 2, "etcd watch %s: out of memory holding an event; opening it again", w->prefix);
        w->dec.end = PREEMPT_WATCH_REREAD; /* the stream ends (watch_ended) and opens from now again */
        w->dec.next_rev = 0;
    }
}

static void on_watch_read(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg);

/* The stream is there. A fresh one (opened from now, so that etcd serves
 * it at once: a stream opened at a revision the store has passed waits for
 * etcd's next catch-up of such streams, every 100 ms) is read at the
 * revision it was created at, and is up once that read is delivered. */
static void watch_dec_created(int64_t rev, void *arg)
{
    struct preempt_etcd_watch *w = arg;

    w->failures = 0;
    if (!w->fresh) {
        watch_set_link(w, true, "created");
        return;
    }
    if (w->read || w->fresh_rev)
        return; /* read already */
    w->fresh_rev = rev > 0 ? rev : 0;
    w->read = typed_call(w->e, &(struct preempt_etcd_req){ .kind = PREEMPT_ETCD_RQ_RANGE, .key = w->prefix,
                                                           .prefix = true, .end = w->end, .rev = w->fresh_rev },
                         w->e->timeout_ms, on_watch_read, w, false);
    if (!w->read) {
        elog(w->e, 2, "etcd watch %s: could not read the prefix; opening it again", w->prefix);
        w->dec.end = PREEMPT_WATCH_REREAD;
        w->dec.next_rev = 0;
    }
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
    if (w->fresh) { /* its read not delivered: the next stream opens from now again */
        req_free(w->read);
        w->read = NULL;
        held_free(w);
        w->fresh_rev = 0;
        w->dec.next_rev = 0;
    }
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
    json_t *create = preempt_etcd_span_body(w->prefix, true, w->end), *body;
    struct req *q;

    if (!create || !preempt_etcd_set_i64(create, "start_revision", w->dec.next_rev) ||
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

/* The read of a fresh stream's prefix, at the revision the stream was
 * created at: delivered whole (on_reset), then the events the stream
 * brought meanwhile, in order; then the watch is up. */
static void on_watch_read(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_etcd_watch *w = arg;
    int64_t rev;

    w->read = NULL;
    if (status == 0 && r->n_res < 1) {
        status = -EPROTO;
        msg = "a range reply without its result";
    }
    if (status < 0) {
        elog(w->e, 2, "etcd watch %s: reading the prefix failed: %s", w->prefix, msg);
        if (w->stream) {
            req_free(w->stream);
            w->stream = NULL;
            preempt_watch_dec_free_(&w->dec);
        }
        held_free(w);
        w->fresh_rev = 0;
        w->dec.next_rev = 0;
        watch_set_link(w, false, msg);
        watch_schedule(w, false);
        return;
    }
    rev = w->fresh_rev > 0 ? w->fresh_rev : r->rev; /* the store as of the stream's creation */
    if (w->dec.next_rev < rev + 1)
        w->dec.next_rev = rev + 1;
    if (r->cluster)
        w->dec.cluster_id = r->cluster;
    w->fresh = false;
    w->fresh_rev = 0;
    if (w->ops.on_reset)
        w->ops.on_reset(r->res[0].kvs, r->res[0].n, rev, w->dec.cluster_id, w->arg);
    for (size_t i = 0; i < w->n_held; i++) /* after the read, in the order they came */
        w->ops.on_event(w->held[i].type, &w->held[i].kv, w->arg);
    held_free(w);
    watch_set_link(w, true, "created");
}

static void on_watch_reopen(evutil_socket_t fd, short what, void *arg)
{
    struct preempt_etcd_watch *w = arg;

    (void)fd;
    (void)what;
    /* from the next revision to deliver; with none, from now, and read at the revision it is created at */
    w->fresh = w->dec.next_rev == 0;
    w->fresh_rev = 0;
    watch_open_stream(w);
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
    if (preempt_etcd_span_ok_(prefix, end) < 0) { /* a key that did not fit: never a wider watch */
        elog(e, 3, "etcd: not watching a span with a key that did not fit (a bug)");
        return -ENAMETOOLONG;
    }
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
    held_free(w);
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
    e->password = o->password;
    e->ev_tick = event_new(base, -1, EV_PERSIST, on_tick, e);
    r = e->ev_tick && event_add(e->ev_tick, &(struct timeval){ .tv_usec = TICK_MS * 1000 }) == 0 ? 0 : -ENOMEM;
    if (r == 0)
        r = split_endpoints(e, o->endpoints);
    if (r == 0)
        r = dup_opt(o->user, &e->user);
    if (r == 0)
        r = dup_opt(o->ca, &e->ca);
    if (r == 0)
        r = dup_opt(o->cert, &e->cert);
    if (r == 0)
        r = dup_opt(o->key, &e->key);
    if (r == 0 && (r = preempt_http_new_(base, &e->http)) == -ELIBACC)
        elog(e, 3, "etcd: cannot load libcurl, which a job's etcd client needs: %s (Debian: apt-get install libcurl4)",
             preempt_curl_error_());
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
    free(e->user);
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
