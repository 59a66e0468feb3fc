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

#include "port/port.h" /* the requests, answers and records this client carries */

void preempt_etcd_reply_clear_(struct preempt_etcd_reply *r);

struct preempt_etcd;
struct preempt_etcd_watch;

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
void preempt_etcd_reply_clear_(struct preempt_etcd_reply *r);

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

/* Decodes a kv object. Returns 0 or -EPROTO. */
int preempt_etcd_kv_(const json_t *kv, struct preempt_etcd_kv *ret);
void preempt_etcd_kv_clear_(struct preempt_etcd_kv *kv);
void preempt_etcd_kvs_free_(struct preempt_etcd_kv *kvs, size_t n);
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
    void (*on_created)(int64_t rev, void *arg); /* the stream is there, at the store's revision rev */
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
