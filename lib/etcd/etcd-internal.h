/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/etcd/etcd-internal.h: an etcd v3 client over the JSON gateway, on libcurl's
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
    const char *user, *password; /* both or neither: authenticate for a token; the password is
                                    borrowed, not copied: it must outlive the client (its owner
                                    keeps the one copy, and wipes it) */
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

/* What a watch delivers, in revision order. on_reset hands over the whole
 * current content of the prefix (after a compaction or at the start when
 * start_rev is 0), at the store's revision rev, with its cluster id (0:
 * not said; another id is another store: a new etcd, or one restored from
 * a snapshot), in the keys' order as etcd reads it: the receiver rebuilds
 * its view from it, and may reorder kvs (every reader of the job takes a
 * read in the order its records were written: preempt_etcd_kvs_by_write_).
 * on_link says
 * whether the stream is up (true after "created") or down (reconnecting). */
struct preempt_etcd_watch_ops {
    void (*on_event)(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg);
    void (*on_reset)(struct preempt_etcd_kv *kvs, size_t n, int64_t rev, uint64_t cluster, void *arg);
    void (*on_link)(bool up, const char *why, void *arg);
};

int preempt_etcd_new_(struct event_base *base, const struct preempt_etcd_opts *o, struct preempt_etcd **ret);
void preempt_etcd_free_(struct preempt_etcd *e);

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

/* ---- the typed port: requests and replies as records ------------------------
 *
 * Every request the library makes of etcd is one of these records, and
 * every answer is decoded into one before anyone sees it: JSON, base64 and
 * the gateway's quirks stay in etcd.c. The coordinator reaches etcd only
 * through them (coord-internal.h's io), so that the simulation
 * (tests/sim/) answers the same records from its in-memory store. */

/* A txn's compare: the key was last written at revision mod_rev (> 0:
 * whatever it holds), or else is absent (value NULL) or holds value. */
struct preempt_etcd_cmp {
    const char *key;
    const char *value;
    int64_t mod_rev;
};
/* A txn's operation. */
struct preempt_etcd_op {
    enum preempt_etcd_op_kind {
        PREEMPT_ETCD_OP_PUT,          /* key = value, bound to lease (0: none) */
        PREEMPT_ETCD_OP_GET,          /* key alone */
        PREEMPT_ETCD_OP_DELETE_PREFIX, /* every key under key */
        PREEMPT_ETCD_OP_COUNT_PREFIX, /* how many keys are under key */
        PREEMPT_ETCD_OP_KEYS_PREFIX,  /* the keys under key, without their values */
        PREEMPT_ETCD_OP_DELETE,       /* key alone */
    } kind;
    const char *key, *value;
    int64_t lease;
};

enum preempt_etcd_rq {
    PREEMPT_ETCD_RQ_PUT,        /* key = value, bound to lease (0: none) */
    PREEMPT_ETCD_RQ_RANGE,      /* key alone; with prefix the keys under it; with end [key, end) */
    PREEMPT_ETCD_RQ_DELETE,     /* key alone; with prefix the keys under it */
    PREEMPT_ETCD_RQ_TXN,        /* cmp must all hold for ok to run; else fail runs */
    PREEMPT_ETCD_RQ_CREATE,     /* key = value (lease) if key is absent; else read key: a txn */
    PREEMPT_ETCD_RQ_GRANT,      /* a lease of ttl_s seconds */
    PREEMPT_ETCD_RQ_KEEPALIVE,  /* renews lease */
    PREEMPT_ETCD_RQ_REVOKE,     /* ends lease, deleting its keys */
    PREEMPT_ETCD_RQ_TIMETOLIVE, /* what is left of lease */
};
/* A request. Its strings and arrays are read during the call that sends
 * it and never after (the caller keeps them). */
struct preempt_etcd_req {
    enum preempt_etcd_rq kind;
    const char *key, *value, *end;
    bool prefix;
    int64_t lease;                     /* PUT, CREATE: the lease to bind to; KEEPALIVE, REVOKE, TIMETOLIVE: the lease */
    int64_t ttl_s;                     /* GRANT */
    const struct preempt_etcd_cmp *cmp; /* TXN */
    const struct preempt_etcd_op *ok, *fail;
    size_t n_cmp, n_ok, n_fail;
};

/* Requests as compound literals (for the call they are passed to). */
#define PREEMPT_RQ_(...) (&(struct preempt_etcd_req){ __VA_ARGS__ })
#define PREEMPT_RQ_GET(k) PREEMPT_RQ_(.kind = PREEMPT_ETCD_RQ_RANGE, .key = (k))
#define PREEMPT_RQ_UNDER(k) PREEMPT_RQ_(.kind = PREEMPT_ETCD_RQ_RANGE, .key = (k), .prefix = true)
#define PREEMPT_RQ_SPAN(k, e) PREEMPT_RQ_(.kind = PREEMPT_ETCD_RQ_RANGE, .key = (k), .end = (e))
#define PREEMPT_RQ_PUT(k, v, l) PREEMPT_RQ_(.kind = PREEMPT_ETCD_RQ_PUT, .key = (k), .value = (v), .lease = (l))
#define PREEMPT_RQ_CREATE(k, v) PREEMPT_RQ_(.kind = PREEMPT_ETCD_RQ_CREATE, .key = (k), .value = (v))
#define PREEMPT_RQ_DELETE_UNDER(k) PREEMPT_RQ_(.kind = PREEMPT_ETCD_RQ_DELETE, .key = (k), .prefix = true)
#define PREEMPT_RQ_TXN(c, nc, o, no, f, nf)                                                                        \
    PREEMPT_RQ_(.kind = PREEMPT_ETCD_RQ_TXN, .cmp = (c), .n_cmp = (nc), .ok = (o), .n_ok = (no), .fail = (f),      \
                .n_fail = (nf))
#define PREEMPT_RQ_GRANT(ttl) PREEMPT_RQ_(.kind = PREEMPT_ETCD_RQ_GRANT, .ttl_s = (ttl))
#define PREEMPT_RQ_LEASE(what, id) PREEMPT_RQ_(.kind = PREEMPT_ETCD_RQ_##what, .lease = (id))

/* One operation's result: a range's keys (values empty for KEYS_PREFIX,
 * none for COUNT_PREFIX) and count, a delete's count of deleted keys; a
 * put's is empty. */
struct preempt_etcd_res {
    struct preempt_etcd_kv *kvs;
    size_t n;
    int64_t count;
};
/* A decoded answer. */
struct preempt_etcd_reply {
    int64_t rev;                 /* the store's revision when it answered */
    uint64_t cluster;            /* the store's cluster id (0: not said) */
    bool succeeded;              /* TXN, CREATE: the compares held (CREATE: the key was created) */
    struct preempt_etcd_res *res; /* RANGE, DELETE: one; TXN, CREATE: one per op of the branch that ran */
    size_t n_res;
    int64_t id;                  /* GRANT: the lease */
    int64_t ttl;                 /* GRANT, KEEPALIVE, TIMETOLIVE: seconds left (<= 0: expired or unknown) */
    int64_t granted_ttl;         /* TIMETOLIVE: the TTL it was granted with */
};
/* The first key op i read (NULL: none: out of range, not a read, or it
 * found nothing). For CREATE, op 0 of a failed one is the key that was
 * there. */
const struct preempt_etcd_kv *preempt_etcd_reply_kv_(const struct preempt_etcd_reply *r, size_t i);
/* Op i's count (-1 when there is no op i). */
int64_t preempt_etcd_reply_count_(const struct preempt_etcd_reply *r, size_t i);
void preempt_etcd_reply_clear_(struct preempt_etcd_reply *r);

/* A request's outcome. status 0: r is the decoded answer (valid during the
 * callback only). status < 0 (r NULL): -ETIMEDOUT (gave up), -EACCES
 * (authentication or permission), -ENOENT (etcd's NotFound, e.g. an
 * expired lease), -EPROTO (an answer that does not decode as the
 * request's: not JSON, a grant without a lease), -EINVAL (etcd refused the
 * request) or -ENOMEM. msg says why in words. */
typedef void (*preempt_etcd_reply_cb)(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg);

/* Sends req (POST /v3/<its path> on the gateway); failed attempts are
 * retried with backoff for give_up_ms (0: one attempt only). cb may be
 * NULL. Returns 0 or -EINVAL / -ENOMEM (cb is then not called). */
int preempt_etcd_do_(struct preempt_etcd *e, const struct preempt_etcd_req *req, uint64_t give_up_ms,
                     preempt_etcd_reply_cb cb, void *arg);

/* The gateway's side (pure; unit-tested): the path and body req is sent
 * as (NULL: out of memory, or a request that cannot be), and the answer's
 * body decoded as req's kind. Returns 0, -EPROTO or -ENOMEM. */
json_t *preempt_etcd_req_body_(const struct preempt_etcd_req *req, const char **ret_path);
int preempt_etcd_reply_decode_(enum preempt_etcd_rq kind, const json_t *body, struct preempt_etcd_reply *ret);

/* A request's deep copy (lib/etcd/port.c), for whoever runs or answers it
 * later (the coordinator's shell, after the step; the simulation); NULL:
 * out of memory. Freed with preempt_etcd_req_free_. */
struct preempt_etcd_req *preempt_etcd_req_copy_(const struct preempt_etcd_req *req);
void preempt_etcd_req_free_(struct preempt_etcd_req *req);

/* Decodes a kv object. Returns 0 or -EPROTO. */
int preempt_etcd_kv_(const json_t *kv, struct preempt_etcd_kv *ret);
void preempt_etcd_kv_clear_(struct preempt_etcd_kv *kv);
void preempt_etcd_kvs_free_(struct preempt_etcd_kv *kvs, size_t n);
/* Sorts a read (in place) into the order its records were last written,
 * as a watch's events would have brought them: by mod revision, and the
 * records of one transaction (one revision) in the keys' order. Every
 * reader of a job's records takes a full read in this order (the
 * coordinator, the watcher, preemptctl status). */
void preempt_etcd_kvs_by_write_(struct preempt_etcd_kv *kvs, size_t n);
/* A copy of n kvs (*ret NULL when n is 0). Returns 0 or -ENOMEM. */
int preempt_etcd_kvs_dup_(const struct preempt_etcd_kv *kvs, size_t n, struct preempt_etcd_kv **ret);
/* An int64 field that the gateway writes as a string (missing: 0); one
 * that is there and malformed sets *err to -EPROTO and reads 0. */
int64_t preempt_etcd_i64_(const json_t *obj, const char *name, int *err);

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

/* Shared by the client (lib/etcd/etcd.c) and its codecs (lib/etcd/etcd-codec.c). */
bool preempt_etcd_set_i64(json_t *obj, const char *name, int64_t v);
json_t *preempt_etcd_span_body(const char *key, bool prefix, const char *span_end);
bool preempt_etcd_auth_problem(long http, const char *text);

#endif
