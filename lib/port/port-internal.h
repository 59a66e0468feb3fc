/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/port/port-internal.h: the typed port between the job core and etcd:
 * requests, answers, records and a watch's deliveries as plain data, and
 * their pure helpers. The job core (lib/job/) speaks only these; the etcd
 * client (lib/etcd/) carries them over the JSON gateway on libevent and
 * libcurl, and the simulation (tests/sim/) answers them from its own
 * store. Nothing here needs libevent, libcurl or jansson. */
#ifndef PREEMPT_PORT_INTERNAL_H
#define PREEMPT_PORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "records/records.h" /* struct preempt_value: what a write may carry */

/* How to reach etcd (the client's options: the job's configuration carries
 * them to whichever shell makes the client). */
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
 * whatever it holds), or else is absent (value NULL) or holds value.
 * Values written or compared are the records' writer's
 * (records-internal.h's struct preempt_value): nothing else makes one. */
struct preempt_etcd_cmp {
    const char *key;
    const struct preempt_value *value;
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
    const char *key;
    const struct preempt_value *value;
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
    const char *key, *end;
    const struct preempt_value *value; /* PUT, CREATE */
    bool prefix;
    int64_t lease;                     /* PUT, CREATE: the lease to bind to; KEEPALIVE, REVOKE, TIMETOLIVE: the lease */
    int64_t ttl_s;                     /* GRANT */
    int64_t rev;                       /* RANGE: the store as it was at this revision (0: as it is) */
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

/* A request's outcome. status 0: r is the decoded answer (valid during the
 * callback only). status < 0 (r NULL): -ETIMEDOUT (gave up), -EACCES
 * (authentication or permission), -ENOENT (etcd's NotFound, e.g. an
 * expired lease), -EPROTO (an answer that does not decode as the
 * request's: not JSON, a grant without a lease), -EINVAL (etcd refused the
 * request) or -ENOMEM. msg says why in words. */
typedef void (*preempt_etcd_reply_cb)(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg);

/* Whether every key req names is one: its key (and a range's end), each
 * compare's and each operation's, none empty. The key builders leave an
 * empty key where a key did not fit (keys-internal.h), so a request made
 * with one is refused whole, never sent with a cut key (a cut prefix
 * would read or delete more than asked). 0, or -ENAMETOOLONG. Every port
 * checks it before it sends (the etcd client, the simulation's). */
int preempt_etcd_req_keys_ok_(const struct preempt_etcd_req *req);
/* The same for a span a read or a watch names: key, and end unless NULL.
 * Every port's watch checks it too (a cut prefix would watch more). */
int preempt_etcd_span_ok_(const char *key, const char *end);

/* A request's deep copy (lib/port/port.c), for whoever runs or answers it
 * later (the coordinator's shell, after the step; the simulation); NULL:
 * out of memory. Freed with preempt_etcd_req_free_. */
struct preempt_etcd_req *preempt_etcd_req_copy_(const struct preempt_etcd_req *req);
void preempt_etcd_req_free_(struct preempt_etcd_req *req);

/* Sorts a read (in place) into the order its records were last written,
 * as a watch's events would have brought them: by mod revision, and the
 * records of one transaction (one revision) in the keys' order. Every
 * reader of a job's records takes a full read in this order (the
 * coordinator, the watcher, preemptctl status). */
void preempt_etcd_kvs_by_write_(struct preempt_etcd_kv *kvs, size_t n);
#endif
