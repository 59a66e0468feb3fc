/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/etcd-internal.h: an etcd v3 client over the JSON gateway, on libcurl's
 * multi interface driven by a libevent base (style R13). No threads, no
 * blocking call: every request is a transfer on the loop with a per-attempt
 * timeout and an overall give-up time, retried with backoff across the
 * configured endpoints. JSON (jansson), base64 and curl stay in this file's
 * implementation; callers see decoded keys and values.
 *
 * Ownership: the client owns every transfer. Freeing it cancels all of them
 * without calling their callbacks. Callbacks never run inside a call into
 * this API; they run from the loop. */
#ifndef PREEMPT_ETCD_INTERNAL_H
#define PREEMPT_ETCD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <event2/event.h>
#include <jansson.h>

struct preempt_etcd;
struct preempt_etcd_watch;

struct preempt_etcd_opts {
    const char *endpoints;    /* "http://127.0.0.1:2379,http://..." (http or https only) */
    const char *user, *password; /* both or neither: authenticate for a token */
    const char *ca, *cert, *key; /* TLS: CA bundle, client certificate and key (PEM paths) */
    uint64_t timeout_ms;      /* one attempt of one request; 0: 2000 */
    uint64_t watch_idle_ms;   /* a watch silent this long is re-opened; 0: 30000 */
    void (*log)(int level, const char *msg, void *arg); /* 0 debug, 1 info, 2 warning, 3 error */
    void *log_arg;
};

/* A decoded key-value. key and value are NUL-terminated copies owned by
 * whoever holds the struct (preempt_etcd_kv_clear_ frees them). */
struct preempt_etcd_kv {
    char *key, *value;
    size_t value_len;
    int64_t create_rev, mod_rev, lease;
};

enum preempt_etcd_ev { PREEMPT_ETCD_PUT, PREEMPT_ETCD_DELETE };

/* A request's outcome. status 0: reply is the decoded body (valid during the
 * callback only). status < 0: -ETIMEDOUT (gave up), -EACCES (authentication
 * or permission), -ENOENT (etcd's NotFound, e.g. an expired lease), -EPROTO
 * (a reply that is not the expected JSON), -EINVAL (etcd refused the request)
 * or -ECANCELED (the client is being freed; only from preempt_etcd_drain_()).
 * msg says why in words. */
typedef void (*preempt_etcd_cb)(int status, json_t *reply, const char *msg, void *arg);

/* What a watch delivers, in revision order. on_reset hands over the whole
 * current content of the prefix (after a compaction or at the start when
 * start_rev is 0): the receiver rebuilds its view from it. on_link says
 * whether the stream is up (true after "created") or down (reconnecting). */
struct preempt_etcd_watch_ops {
    void (*on_event)(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg);
    void (*on_reset)(const struct preempt_etcd_kv *kvs, size_t n, int64_t rev, void *arg);
    void (*on_link)(bool up, const char *why, void *arg);
};

int preempt_etcd_new_(struct event_base *base, const struct preempt_etcd_opts *o, struct preempt_etcd **ret);
void preempt_etcd_free_(struct preempt_etcd *e);

/* Sends a request: POST /v3/<path> with body (stolen: freed by the client).
 * give_up_ms: retry failed attempts for this long (0: one attempt only). */
int preempt_etcd_call_(struct preempt_etcd *e, const char *path, json_t *body, uint64_t give_up_ms,
                       preempt_etcd_cb cb, void *arg);

/* Requests in flight (not counting watches). */
unsigned preempt_etcd_pending_(const struct preempt_etcd *e);

/* Runs the client's base (EVLOOP_ONCE at a time) until no request is pending
 * or bound_ms passes: for the last writes before a process exits, and for
 * start-up on a private base. Only for a base the caller owns; never from a
 * callback. Returns the number of requests still pending. */
unsigned preempt_etcd_flush_(struct preempt_etcd *e, uint64_t bound_ms);

/* Runs the client's base (EVLOOP_ONCE at a time) until done(arg) holds or
 * bound_ms passes; the same rules as preempt_etcd_flush_. Returns 0 when
 * done, -ETIMEDOUT, or -ENOMEM. */
int preempt_etcd_run_until_(struct preempt_etcd *e, uint64_t bound_ms, bool (*done)(void *arg), void *arg);

/* Watches every key under prefix (end NULL), or the range [prefix, end),
 * from start_rev (0: read the range first and deliver it through on_reset).
 * Re-opens after every kind of end, from the last revision seen, with
 * backoff; re-reads after a compaction. */
int preempt_etcd_watch_(struct preempt_etcd *e, const char *prefix, const char *end, int64_t start_rev,
                        const struct preempt_etcd_watch_ops *ops, void *arg, struct preempt_etcd_watch **ret);
void preempt_etcd_watch_free_(struct preempt_etcd_watch *w);

/* Milliseconds on a clock (CLOCK_MONOTONIC for bounds, CLOCK_REALTIME for
 * deadlines that cross machines). */
uint64_t preempt_clock_ms_(clockid_t clock);
/* Formats a message for a log callback (none: nothing is formatted); the
 * one formatter of the network side (etcd client, coordinator, metadata). */
void preempt_logf_(void (*log)(int level, const char *msg, void *arg), void *arg, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- request bodies and reply decoding (pure; unit-tested) ---------------- */

json_t *preempt_etcd_put_body_(const char *key, const char *value, int64_t lease);
json_t *preempt_etcd_range_body_(const char *key, bool prefix);
json_t *preempt_etcd_delete_body_(const char *key, bool prefix);
/* A range read of [key, end). */
json_t *preempt_etcd_span_body_(const char *key, const char *end);
/* A txn: every compare must hold for the success ops to run; else the
 * failure ops run. */
struct preempt_etcd_cmp {
    const char *key;
    const char *value; /* NULL: the key must not exist; else: its value must equal this */
};
struct preempt_etcd_op {
    enum preempt_etcd_op_kind {
        PREEMPT_ETCD_OP_PUT,
        PREEMPT_ETCD_OP_GET,
        PREEMPT_ETCD_OP_DELETE_PREFIX,
        PREEMPT_ETCD_OP_COUNT_PREFIX, /* how many keys are under key */
        PREEMPT_ETCD_OP_KEYS_PREFIX,  /* the keys under key, without their values */
        PREEMPT_ETCD_OP_DELETE,       /* key alone */
    } kind;
    const char *key, *value;
    int64_t lease;
};
json_t *preempt_etcd_txn_body_(const struct preempt_etcd_cmp *cmp, size_t n_cmp, const struct preempt_etcd_op *ok,
                               size_t n_ok, const struct preempt_etcd_op *fail, size_t n_fail);
/* The common txn: put key=value (with lease) if key does not exist; else read it. */
json_t *preempt_etcd_create_body_(const char *key, const char *value, int64_t lease);

/* Decodes a kv object. Returns 0 or -EPROTO. */
int preempt_etcd_kv_(const json_t *kv, struct preempt_etcd_kv *ret);
void preempt_etcd_kv_clear_(struct preempt_etcd_kv *kv);
/* Decodes the kvs of a range reply into a new array (n may be 0; free with
 * preempt_etcd_kvs_free_). Returns 0 or -EPROTO / -ENOMEM. */
int preempt_etcd_range_kvs_(const json_t *reply, struct preempt_etcd_kv **ret, size_t *ret_n);
void preempt_etcd_kvs_free_(struct preempt_etcd_kv *kvs, size_t n);
/* A txn reply: *ret_ok says whether it succeeded; on failure *ret_kv (when
 * not NULL) receives the key read by the failure branch's first read
 * (zeroed if none). */
int preempt_etcd_txn_result_(const json_t *reply, bool *ret_ok, struct preempt_etcd_kv *ret_kv);
/* The key read by a failed txn's read number i (from 0) into *ret_kv (zeroed
 * if none). Returns 0 or -EPROTO / -ENOMEM. */
int preempt_etcd_txn_read_(const json_t *reply, size_t i, struct preempt_etcd_kv *ret_kv);
/* The kvs a txn's op number i (a range) returned, as preempt_etcd_range_kvs_. */
int preempt_etcd_txn_kvs_(const json_t *reply, size_t i, struct preempt_etcd_kv **ret, size_t *ret_n);
/* The count a txn's op number i (a COUNT_PREFIX op) returned; -EPROTO when
 * that response is not a range's. */
int64_t preempt_etcd_txn_count_(const json_t *reply, size_t i);
/* An int64 field that the gateway writes as a string (missing: 0). */
int64_t preempt_etcd_i64_(const json_t *obj, const char *name);
/* The header's cluster id of a reply (0 when missing). */
uint64_t preempt_etcd_cluster_(const json_t *reply);
/* The header's revision of a reply (0 when missing). */
int64_t preempt_etcd_rev_(const json_t *reply);

int preempt_b64_encode_(const void *data, size_t len, char **ret);
int preempt_b64_decode_(const char *s, char **ret, size_t *ret_len); /* NUL-terminated copy */

/* The end of a prefix range: the prefix with its last byte incremented. */
int preempt_etcd_prefix_end_(const char *prefix, char **ret);

/* ---- the watch stream's framing (pure; unit-tested) ------------------------ */

/* Splits a byte stream into lines; feed() calls line() for each complete
 * line, flush() for a last line without a newline. Lines longer than
 * max_line are reported with len 0 and the rest of the line is dropped. */
struct preempt_linebuf {
    char *buf;
    size_t len, cap, max_line;
    bool overflow;
};
void preempt_linebuf_init_(struct preempt_linebuf *lb, size_t max_line);
void preempt_linebuf_free_(struct preempt_linebuf *lb);
int preempt_linebuf_feed_(struct preempt_linebuf *lb, const char *data, size_t len,
                          void (*line)(const char *s, size_t len, void *arg), void *arg);
void preempt_linebuf_flush_(struct preempt_linebuf *lb, void (*line)(const char *s, size_t len, void *arg),
                            void *arg);

/* One watch message, decoded. */
enum preempt_watch_msg {
    PREEMPT_WATCH_CREATED,   /* the stream is up; rev is the store's revision */
    PREEMPT_WATCH_EVENTS,    /* events follow (rev: the header's) */
    PREEMPT_WATCH_PROGRESS,  /* a progress notification: rev is fully delivered */
    PREEMPT_WATCH_COMPACTED, /* start revision compacted: re-read */
    PREEMPT_WATCH_CANCELED,  /* canceled by the server (reason in msg) */
    PREEMPT_WATCH_ERROR,     /* an in-band error (server stopping) */
    PREEMPT_WATCH_BAD,       /* not a watch message */
};
/* Classifies a parsed line; *ret_events points into msg (may be NULL). */
enum preempt_watch_msg preempt_watch_classify_(const json_t *msg, int64_t *ret_rev, const json_t **ret_events,
                                               const char **ret_reason);

/* The watch stream's decoder: the bytes of one stream in, events out, in
 * revision order and never one twice. Pure (no I/O); the watch runs one per
 * stream, the fuzzer (tests/fuzz/fuzz-watch.c) feeds it anything. */
enum preempt_watch_end {
    PREEMPT_WATCH_GOING,     /* the stream goes on */
    PREEMPT_WATCH_RECONNECT, /* end it and re-open from next_rev (malformed, canceled, server error) */
    PREEMPT_WATCH_REREAD,    /* end it and re-read the prefix (compacted, undecodable event, a store that
                                went back in time or another cluster); next_rev is 0 */
};
struct preempt_watch_dec {
    struct preempt_linebuf lb;
    int64_t next_rev;           /* the next revision to deliver */
    int64_t cur_rev;            /* the revision the message being decoded delivered last (0: none) */
    enum preempt_watch_end end;
    bool auth_failed;           /* canceled for authentication: the token must be renewed */
    uint64_t cluster_id;        /* the store's cluster id (0: not seen yet); kept across streams */
    const char *prefix;         /* for messages */
    void (*on_event)(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg);
    void (*on_created)(void *arg);
    void (*log)(int level, const char *msg, void *arg);
    void *arg;
};
/* Starts decoding a stream from next_rev (the callbacks are set by the caller). */
void preempt_watch_dec_init_(struct preempt_watch_dec *d, int64_t next_rev);
/* Feeds bytes; returns d->end (after an end, further bytes are ignored). */
enum preempt_watch_end preempt_watch_dec_feed_(struct preempt_watch_dec *d, const char *data, size_t len);
/* The stream ended gracefully: decodes a last line without a newline. */
void preempt_watch_dec_finish_(struct preempt_watch_dec *d);
void preempt_watch_dec_free_(struct preempt_watch_dec *d);

#endif
