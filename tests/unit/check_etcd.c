/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check_etcd.c: the etcd client's pure parts. Base64, prefix
 * ranges, request bodies, reply decoding (including the gateway's omitted
 * zero fields and malformed replies) and the watch stream's framing, fed
 * with lines captured from a real etcd 3.4.23 (docs/stack-notes §2-3). */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-main.h"
#include "job/coord-internal.h"
#include "job/coord-state.h" /* the garbage slots' table (test_junk_slots) */
#include "etcd/etcd-internal.h"
#include "records/keys-internal.h"
#include "records/records-internal.h"
#include "job/claim-internal.h"
#include "job/episode-internal.h"
#include "job/decision-internal.h"
#include "job/membership-internal.h"
#include "job/lease-internal.h"
#include "job/watch-internal.h"
#include "job/outcome-internal.h"
#include "job/joining-internal.h"
#include "job/start-internal.h"
#include "job/phase-internal.h"
#include "job/startup-state.h" /* start-up's step (test_startup_step) */
#include "job/restore-internal.h"
#include "silent-port.h"
#include "job/links-internal.h"
#include "job/pub-internal.h"
#include "job/view-internal.h"

START_TEST(test_b64_round_trip)
{
    static const char *const cases[][2] = {
        { "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
        { "/pc/workers/w1", "L3BjL3dvcmtlcnMvdzE=" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *enc, *dec;
        size_t n;

        ck_assert_int_eq(preempt_b64_encode_(cases[i][0], strlen(cases[i][0]), &enc), 0);
        ck_assert_str_eq(enc, cases[i][1]);
        ck_assert_int_eq(preempt_b64_decode_(enc, &dec, &n), 0);
        ck_assert_uint_eq(n, strlen(cases[i][0]));
        ck_assert_str_eq(dec, cases[i][0]);
        free(enc);
        free(dec);
    }
}
END_TEST

START_TEST(test_b64_rejects_garbage)
{
    static const char *const bad[] = { "Zg=", "Z===", "Zm9*", "====", "Zg==Zg==", "Z\001==" };
    char *dec = NULL;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(preempt_b64_decode_(bad[i], &dec, NULL) == -EPROTO, "accepted '%s'", bad[i]);
        ck_assert_ptr_null(dec);
    }
}
END_TEST

START_TEST(test_prefix_end)
{
    char *end;

    ck_assert_int_eq(preempt_etcd_prefix_end_("/pc/workers/", &end), 0);
    ck_assert_str_eq(end, "/pc/workers0");
    free(end);
    ck_assert_int_eq(preempt_etcd_prefix_end_("a\xff", &end), 0);
    ck_assert_str_eq(end, "b");
    free(end);
}
END_TEST

static char *dump(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

    json_decref(j);
    return s;
}

static char *body(const struct preempt_etcd_req *req, const char *want_path)
{
    const char *path = NULL;
    json_t *j = preempt_etcd_req_body_(req, &path);

    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(path, want_path);
    return dump(j);
}

/* req's body is want, sent to path. */
static void expect_body(const struct preempt_etcd_req *req, const char *path, const char *want)
{
    char *s = body(req, path);

    ck_assert_str_eq(s, want);
    free(s);
}

/* The typed port's requests as the gateway takes them. */
START_TEST(test_bodies)
{
    struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_COUNT_PREFIX, "/pc/w/", NULL, 0 },
                                     { PREEMPT_ETCD_OP_DELETE, "/pc/x", NULL, 0 } };
    struct preempt_etcd_cmp cmp = { .key = "/pc/a", .value = TV("1") };
    const char *path;

    expect_body(PREEMPT_RQ_PUT("/pc/workers/w1", TV("alive"), 7), "kv/put",
                "{\"key\":\"L3BjL3dvcmtlcnMvdzE=\",\"lease\":\"7\",\"value\":\"YWxpdmU=\"}");
    expect_body(PREEMPT_RQ_UNDER("/pc/workers/"), "kv/range",
                "{\"key\":\"L3BjL3dvcmtlcnMv\",\"range_end\":\"L3BjL3dvcmtlcnMw\"}");
    expect_body(PREEMPT_RQ_GET("/pc/a"), "kv/range", "{\"key\":\"L3BjL2E=\"}");
    expect_body(PREEMPT_RQ_SPAN("/pc/", "/pc/w/"), "kv/range",
                "{\"key\":\"L3BjLw==\",\"range_end\":\"L3BjL3cv\"}");
    expect_body(PREEMPT_RQ_DELETE_UNDER("/pc/"), "kv/deleterange",
                "{\"key\":\"L3BjLw==\",\"range_end\":\"L3BjMA==\"}");
    /* create only if absent, else read the holder */
    expect_body(PREEMPT_RQ_CREATE("/pc/leader", TV("worker-1")), "kv/txn",
                "{\"compare\":[{\"create_revision\":\"0\",\"key\":\"L3BjL2xlYWRlcg==\",\"result\":\"EQUAL\","
                "\"target\":\"CREATE\"}],\"failure\":[{\"request_range\":{\"key\":\"L3BjL2xlYWRlcg==\"}}],"
                "\"success\":[{\"request_put\":{\"key\":\"L3BjL2xlYWRlcg==\",\"value\":\"d29ya2VyLTE=\"}}]}");
    expect_body(PREEMPT_RQ_TXN(&cmp, 1, ops, 2, NULL, 0), "kv/txn",
                "{\"compare\":[{\"key\":\"L3BjL2E=\",\"result\":\"EQUAL\",\"target\":\"VALUE\",\"value\":\"MQ==\"}"
                "],\"failure\":[],\"success\":[{\"request_range\":{\"count_only\":true,\"key\":\"L3BjL3cv\","
                "\"range_end\":\"L3BjL3cw\"}},{\"request_delete_range\":{\"key\":\"L3BjL3g=\"}}]}");
    /* replace exactly what was written at a revision (whatever it holds) */
    expect_body(PREEMPT_RQ_TXN((&(struct preempt_etcd_cmp){ .key = "/pc/a", .mod_rev = 42 }), 1, ops + 1, 1, NULL, 0),
                "kv/txn",
                "{\"compare\":[{\"key\":\"L3BjL2E=\",\"mod_revision\":\"42\",\"result\":\"EQUAL\","
                "\"target\":\"MOD\"}],\"failure\":[],\"success\":[{\"request_delete_range\":{\"key\":\"L3BjL3g=\"}}]}");
    expect_body(PREEMPT_RQ_GRANT(30), "lease/grant", "{\"TTL\":\"30\"}");
    expect_body(PREEMPT_RQ_LEASE(KEEPALIVE, 7594838405), "lease/keepalive", "{\"ID\":\"7594838405\"}");
    expect_body(PREEMPT_RQ_LEASE(REVOKE, 7), "lease/revoke", "{\"ID\":\"7\"}");
    expect_body(PREEMPT_RQ_LEASE(TIMETOLIVE, 7), "lease/timetolive", "{\"ID\":\"7\"}");
    /* what cannot be sent is refused, not sent half */
    ck_assert_ptr_null(preempt_etcd_req_body_(PREEMPT_RQ_PUT(NULL, TV("v"), 0), &path));
    ck_assert_ptr_null(preempt_etcd_req_body_(PREEMPT_RQ_(.kind = (enum preempt_etcd_rq)99), &path));
}
END_TEST

static json_t *parse(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);

    ck_assert_msg(j != NULL, "fixture does not parse: %s", e.text);
    return j;
}

/* Decodes s (a gateway answer) as kind's: the status. */
static int decode(enum preempt_etcd_rq kind, const char *s, struct preempt_etcd_reply *r)
{
    json_t *j = parse(s);
    int rc = preempt_etcd_reply_decode_(kind, j, r);

    json_decref(j);
    return rc;
}

START_TEST(test_range_replies)
{
    /* real replies: a match, and a miss (no kvs, no count) */
    static const char hit[] = "{\"header\":{\"cluster_id\":\"14841639068965178418\",\"revision\":\"7\"},\"kvs\":[{\"key\":"
                              "\"L3BjL3dvcmtlcnMvdzE=\",\"create_revision\":\"4\",\"mod_revision\":\"6\",\"version\":"
                              "\"2\",\"value\":\"ZHJhaW5pbmc=\"}],\"count\":\"1\"}";
    struct preempt_etcd_reply r;

    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_RANGE, hit, &r), 0);
    ck_assert_uint_eq(r.n_res, 1);
    ck_assert_uint_eq(r.res[0].n, 1);
    ck_assert_int_eq(r.res[0].count, 1);
    ck_assert_str_eq(r.res[0].kvs[0].key, "/pc/workers/w1");
    ck_assert_str_eq(preempt_etcd_reply_kv_(&r, 0)->value, "draining");
    ck_assert_int_eq(r.res[0].kvs[0].mod_rev, 6);
    ck_assert_int_eq(r.res[0].kvs[0].create_rev, 4);
    ck_assert_int_eq(r.rev, 7);
    ck_assert(r.cluster == 14841639068965178418ull);
    preempt_etcd_reply_clear_(&r);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_RANGE, "{\"header\":{\"revision\":\"7\"}}", &r), 0);
    ck_assert_uint_eq(r.res[0].n, 0);
    ck_assert_ptr_null(preempt_etcd_reply_kv_(&r, 0));
    preempt_etcd_reply_clear_(&r);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_RANGE, "{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"key\":\"%%%\"}]}", &r),
                     -EPROTO);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_RANGE, "{\"header\":{\"revision\":\"7\"},\"kvs\":{}}", &r), -EPROTO);
    /* a range's revision is where a watch goes on: without one it is no answer */
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_RANGE, "{\"kvs\":[]}", &r), -EPROTO);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_RANGE, "[1,2]", &r), -EPROTO);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_DELETE, "{\"header\":{\"revision\":\"9\"},\"deleted\":\"3\"}", &r), 0);
    ck_assert_int_eq(preempt_etcd_reply_count_(&r, 0), 3);
    ck_assert_int_eq(preempt_etcd_reply_count_(&r, 1), -1);
    preempt_etcd_reply_clear_(&r);
}
END_TEST

START_TEST(test_txn_replies)
{
    static const char won[] = "{\"header\":{\"revision\":\"10\"},\"succeeded\":true,\"responses\":[{\"response_put\":"
                              "{\"header\":{\"revision\":\"10\"}}}]}";
    static const char lost[] = "{\"header\":{\"revision\":\"10\"},\"responses\":[{\"response_range\":{\"header\":"
                               "{\"revision\":\"10\"},\"kvs\":[{\"key\":\"L3BjL2xlYWRlcg==\",\"create_revision\":\"10\","
                               "\"mod_revision\":\"10\",\"version\":\"1\",\"value\":\"d29ya2VyLTE=\"}],\"count\":\"1\"}}]}";
    struct preempt_etcd_reply r;

    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_CREATE, won, &r), 0);
    ck_assert(r.succeeded);
    ck_assert_int_eq(r.rev, 10);
    ck_assert_ptr_null(preempt_etcd_reply_kv_(&r, 0)); /* a put reads nothing */
    preempt_etcd_reply_clear_(&r);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_CREATE, lost, &r), 0);
    ck_assert(!r.succeeded); /* no "succeeded" key at all */
    ck_assert_str_eq(preempt_etcd_reply_kv_(&r, 0)->value, "worker-1");
    preempt_etcd_reply_clear_(&r);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_TXN, "[1,2]", &r), -EPROTO);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_TXN, "{\"succeeded\":true}", &r), -EPROTO); /* no header */
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_TXN, "{\"header\":{},\"responses\":[{\"response_what\":{}}]}", &r),
                     -EPROTO);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_TXN, "{\"header\":{},\"responses\":7}", &r), -EPROTO);
}
END_TEST

/* A failed txn with reads (the join's: the incarnation, then this
 * worker's alive key with its lease): each read by its number; a count
 * and a delete's count. */
START_TEST(test_txn_second_read)
{
    static const char two[] = "{\"header\":{\"revision\":\"12\"},\"responses\":["
                              "{\"response_range\":{\"kvs\":[{\"key\":\"aW5j\",\"value\":\"Mw==\"}]}},"
                              "{\"response_range\":{\"kvs\":[{\"key\":\"YWxpdmU=\",\"value\":\"cGlkPTc=\","
                              "\"lease\":\"7594838405\"}]}},{\"response_range\":{}},"
                              "{\"response_range\":{\"count\":\"4\"}},"
                              "{\"response_delete_range\":{\"deleted\":\"2\"}}]}";
    struct preempt_etcd_reply r;
    const struct preempt_etcd_kv *kv;

    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_TXN, two, &r), 0);
    ck_assert(!r.succeeded);
    ck_assert_uint_eq(r.n_res, 5);
    ck_assert_str_eq(preempt_etcd_reply_kv_(&r, 0)->value, "3");
    kv = preempt_etcd_reply_kv_(&r, 1);
    ck_assert_str_eq(kv->key, "alive");
    ck_assert_str_eq(kv->value, "pid=7");
    ck_assert_int_eq(kv->lease, 7594838405);
    ck_assert_ptr_null(preempt_etcd_reply_kv_(&r, 2)); /* a read that found nothing */
    ck_assert_int_eq(preempt_etcd_reply_count_(&r, 3), 4);
    ck_assert_int_eq(preempt_etcd_reply_count_(&r, 4), 2);
    ck_assert_ptr_null(preempt_etcd_reply_kv_(&r, 5)); /* past the last read */
    preempt_etcd_reply_clear_(&r);
}
END_TEST

/* The lease answers, as the gateway gives them: a grant without an ID is
 * no grant; the keep-alive stream's one message wraps its answer in
 * "result", and an expired lease's has no TTL; an expired lease's
 * time to live is -1. */
START_TEST(test_lease_replies)
{
    struct preempt_etcd_reply r;

    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_GRANT, "{\"header\":{\"revision\":\"3\"},\"ID\":\"7594838405\",\"TTL\":\"10\"}",
                            &r), 0);
    ck_assert_int_eq(r.id, 7594838405);
    ck_assert_int_eq(r.ttl, 10);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_GRANT, "{\"header\":{},\"TTL\":\"10\"}", &r), -EPROTO);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_KEEPALIVE, "{\"result\":{\"header\":{\"revision\":\"5\"},\"ID\":\"7\","
                                                       "\"TTL\":\"10\"}}", &r), 0);
    ck_assert_int_eq(r.ttl, 10);
    ck_assert_int_eq(r.rev, 5);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_KEEPALIVE, "{\"result\":{\"header\":{},\"ID\":\"7\"}}", &r), 0);
    ck_assert_int_eq(r.ttl, 0);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_TIMETOLIVE, "{\"header\":{},\"ID\":\"7\",\"TTL\":\"-1\"}", &r), 0);
    ck_assert_int_eq(r.ttl, -1);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_TIMETOLIVE, "{\"header\":{},\"ID\":\"7\",\"TTL\":\"4\",\"grantedTTL\":"
                                                        "\"10\"}", &r), 0);
    ck_assert_int_eq(r.ttl, 4);
    ck_assert_int_eq(r.granted_ttl, 10);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_REVOKE, "{\"header\":{}}", &r), 0);
}
END_TEST

/* The numbers of a reply (revisions, lease and cluster ids, counts, TTLs)
 * are read strictly: decimal digits in a JSON string (a '-' first for a
 * negative one), or a JSON integer, or absent (0: the gateway leaves out a
 * field whose value is 0). Anything else makes the reply malformed: read
 * as 0, a garbage revision would decide whether a whole read is applied. */
START_TEST(test_numbers_strict)
{
    static const char *const bad_rev[] = { "\"7x\"", "\"007\"", "\"\"", "\"+7\"", "\" 7\"", "\"7 \"", "\"-\"",
                                           "\"--1\"", "\"99999999999999999999\"", "true", "7.5", "{}", "\"0x10\"" };
    struct preempt_etcd_reply r;
    char body[256];

    for (size_t i = 0; i < sizeof(bad_rev) / sizeof(bad_rev[0]); i++) {
        (void)snprintf(body, sizeof(body), "{\"header\":{\"revision\":%s},\"kvs\":[]}", bad_rev[i]);
        ck_assert_msg(decode(PREEMPT_ETCD_RQ_RANGE, body, &r) == -EPROTO, "revision %s", bad_rev[i]);
        (void)snprintf(body, sizeof(body), "{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"key\":\"YQ==\","
                                           "\"mod_revision\":%s}]}", bad_rev[i]);
        ck_assert_msg(decode(PREEMPT_ETCD_RQ_RANGE, body, &r) == -EPROTO, "mod_revision %s", bad_rev[i]);
        (void)snprintf(body, sizeof(body), "{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"key\":\"YQ==\","
                                           "\"lease\":%s}]}", bad_rev[i]);
        ck_assert_msg(decode(PREEMPT_ETCD_RQ_RANGE, body, &r) == -EPROTO, "lease %s", bad_rev[i]);
        (void)snprintf(body, sizeof(body), "{\"header\":{\"revision\":\"7\",\"cluster_id\":%s}}", bad_rev[i]);
        ck_assert_msg(decode(PREEMPT_ETCD_RQ_PUT, body, &r) == -EPROTO, "cluster_id %s", bad_rev[i]);
        (void)snprintf(body, sizeof(body), "{\"header\":{},\"ID\":%s,\"TTL\":\"10\"}", bad_rev[i]);
        ck_assert_msg(decode(PREEMPT_ETCD_RQ_GRANT, body, &r) == -EPROTO, "ID %s", bad_rev[i]);
        (void)snprintf(body, sizeof(body), "{\"header\":{\"revision\":\"9\"},\"deleted\":%s}", bad_rev[i]);
        ck_assert_msg(decode(PREEMPT_ETCD_RQ_DELETE, body, &r) == -EPROTO, "deleted %s", bad_rev[i]);
    }
    /* good ones: a JSON integer, the extremes, a negative TTL */
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_RANGE, "{\"header\":{\"revision\":7,\"cluster_id\":"
                                                   "\"18446744073709551615\"},\"kvs\":[{\"key\":\"YQ==\","
                                                   "\"mod_revision\":\"9223372036854775807\",\"lease\":\"0\"}]}", &r), 0);
    ck_assert_int_eq(r.rev, 7);
    ck_assert(r.cluster == UINT64_MAX);
    ck_assert_int_eq(r.res[0].kvs[0].mod_rev, INT64_MAX);
    preempt_etcd_reply_clear_(&r);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_TIMETOLIVE, "{\"header\":{},\"ID\":\"7\",\"TTL\":\"-1\"}", &r), 0);
    ck_assert_int_eq(r.ttl, -1);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_TIMETOLIVE, "{\"header\":{},\"ID\":\"7\",\"TTL\":\"-x\"}", &r), -EPROTO);
    ck_assert_int_eq(decode(PREEMPT_ETCD_RQ_RANGE, "{\"header\":{\"revision\":\"7\",\"cluster_id\":\"-1\"}}", &r),
                     -EPROTO); /* an id is unsigned */
    /* a watch message with a malformed number is a bad message */
    {
        static const char *const msgs[] = {
            "{\"result\":{\"header\":{\"revision\":\"x\"},\"created\":true}}",
            "{\"result\":{\"header\":{\"revision\":\"5\",\"cluster_id\":\"1y\"},\"created\":true}}",
            "{\"result\":{\"header\":{\"revision\":\"5\"},\"canceled\":true,\"compact_revision\":\"3z\"}}",
        };
        const json_t *events;
        const char *reason;
        int64_t rev;

        for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
            json_t *j = parse(msgs[i]);

            ck_assert_msg(preempt_watch_classify_(j, &rev, &events, &reason) == PREEMPT_WATCH_BAD, "%s", msgs[i]);
            json_decref(j);
        }
    }
}
END_TEST

/* A request's copy holds its own strings and arrays: the caller's may go. */
START_TEST(test_req_copy)
{
    char key[16] = "/pc/a";
    struct preempt_value val = { .text_ = "1" };
    struct preempt_etcd_cmp cmp[] = { { .key = key }, { .key = key, .mod_rev = 77 } };
    struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_PUT, key, &val, 9 }, { PREEMPT_ETCD_OP_GET, key, NULL, 0 } };
    struct preempt_etcd_req *c = preempt_etcd_req_copy_(PREEMPT_RQ_TXN(cmp, 2, ops, 2, ops + 1, 1));
    char *s;

    ck_assert_ptr_nonnull(c);
    key[1] = 'X';
    val.text_[0] = '2';
    ops[0].lease = 0;
    ck_assert_str_eq(c->cmp[0].key, "/pc/a");
    ck_assert_ptr_null(c->cmp[0].value);
    ck_assert_int_eq(c->cmp[0].mod_rev, 0);
    ck_assert_int_eq(c->cmp[1].mod_rev, 77);
    ck_assert_str_eq(preempt_value_str_(c->ok[0].value), "1");
    ck_assert_int_eq(c->ok[0].lease, 9);
    ck_assert_str_eq(c->fail[0].key, "/pc/a");
    s = body(c, "kv/txn");
    ck_assert_ptr_nonnull(strstr(s, "\"lease\":\"9\""));
    free(s);
    preempt_etcd_req_free_(c);
    c = preempt_etcd_req_copy_(PREEMPT_RQ_PUT(key, &val, 0));
    ck_assert_str_eq(c->key, "/Xc/a");
    preempt_etcd_req_free_(c);
    preempt_etcd_req_free_(NULL);
}
END_TEST

/* ---- the watch stream -------------------------------------------------------- */

/* A real stream (stack-notes §2.6 and §3): created, a put, a delete, a
 * progress notification, a compaction, and the last line of a graceful stop
 * without its newline. */
static const char stream[] =
    "{\"result\":{\"header\":{\"cluster_id\":\"324952591200643719\",\"member_id\":\"3319814642761637952\","
    "\"revision\":\"18\",\"raft_term\":\"2\"},\"created\":true}}\n"
    "{\"result\":{\"header\":{\"revision\":\"19\"},\"events\":[{\"kv\":{\"key\":\"L3BjL2V2dC9h\","
    "\"create_revision\":\"19\",\"mod_revision\":\"19\",\"version\":\"1\",\"value\":\"djE=\"}}]}}\n"
    "{\"result\":{\"header\":{\"revision\":\"21\"},\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":\"L3BjL2V2dC9h\","
    "\"mod_revision\":\"21\"}}]}}\n"
    "{\"result\":{\"header\":{\"revision\":\"23\"}}}\n"
    "{\"result\":{\"header\":{\"cluster_id\":\"1\",\"member_id\":\"2\",\"raft_term\":\"2\"},\"canceled\":true,"
    "\"compact_revision\":\"21\"}}\n"
    "{\"error\":{\"grpc_code\":1,\"http_code\":408,\"message\":\"grpc: the client connection is closing\","
    "\"http_status\":\"Request Timeout\"}}";

struct seen {
    enum preempt_watch_msg kinds[16];
    int64_t revs[16];
    unsigned n;
};

static void on_line(const char *s, size_t len, void *arg)
{
    struct seen *seen = arg;
    const json_t *events;
    const char *reason;
    json_error_t e;
    json_t *j = json_loadb(s, len, 0, &e);

    ck_assert_uint_lt(seen->n, 16);
    seen->kinds[seen->n] = preempt_watch_classify_(j, &seen->revs[seen->n], &events, &reason);
    seen->n++;
    json_decref(j);
}

static void check_stream(const struct seen *seen)
{
    static const enum preempt_watch_msg want[] = {
        PREEMPT_WATCH_CREATED, PREEMPT_WATCH_EVENTS, PREEMPT_WATCH_EVENTS,
        PREEMPT_WATCH_PROGRESS, PREEMPT_WATCH_COMPACTED, PREEMPT_WATCH_ERROR,
    };

    ck_assert_uint_eq(seen->n, 6);
    for (unsigned i = 0; i < 6; i++)
        ck_assert_int_eq(seen->kinds[i], want[i]);
    ck_assert_int_eq(seen->revs[3], 23);
}

/* Fed in pieces of every size from 1 byte up: the same six messages. */
START_TEST(test_framing_any_chunking)
{
    size_t chunk = (size_t)_i + 1, len = strlen(stream);
    struct preempt_linebuf lb;
    struct seen seen = { .n = 0 };

    preempt_linebuf_init_(&lb, 1 << 20);
    for (size_t off = 0; off < len; off += chunk)
        ck_assert_int_eq(preempt_linebuf_feed_(&lb, stream + off, off + chunk > len ? len - off : chunk, on_line, &seen),
                         0);
    ck_assert_uint_eq(seen.n, 5); /* the last line waits for the end of the transfer */
    preempt_linebuf_flush_(&lb, on_line, &seen);
    check_stream(&seen);
    preempt_linebuf_free_(&lb);
}
END_TEST

static void count_line(const char *s, size_t len, void *arg)
{
    (void)s;
    ((size_t *)arg)[len == 0 ? 0 : 1]++;
}

START_TEST(test_framing_overlong_line)
{
    struct preempt_linebuf lb;
    size_t counts[2] = { 0, 0 }; /* [0]: reported too long, [1]: normal */
    char big[100];

    memset(big, 'x', sizeof(big));
    preempt_linebuf_init_(&lb, 64);
    ck_assert_int_eq(preempt_linebuf_feed_(&lb, big, sizeof(big), count_line, counts), 0);
    ck_assert_int_eq(preempt_linebuf_feed_(&lb, "\nok\n", 4, count_line, counts), 0);
    ck_assert_uint_eq(counts[0], 1);
    ck_assert_uint_eq(counts[1], 1);
    preempt_linebuf_free_(&lb);
}
END_TEST

START_TEST(test_classify_malformed)
{
    static const char *const bad[] = { "[]", "{\"result\":1}", "{\"result\":{}}", "{\"x\":{\"header\":{}}}",
                                       "{\"result\":{\"header\":{},\"events\":{}}}" };
    const json_t *events;
    const char *reason;
    int64_t rev;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *j = parse(bad[i]);

        ck_assert_msg(preempt_watch_classify_(j, &rev, &events, &reason) == PREEMPT_WATCH_BAD, "%s", bad[i]);
        json_decref(j);
    }
    ck_assert_int_eq(preempt_watch_classify_(NULL, &rev, &events, &reason), PREEMPT_WATCH_BAD);
}
END_TEST

START_TEST(test_classify_auth_cancel)
{
    json_t *j = parse("{\"result\":{\"header\":{\"revision\":\"5\"},\"watch_id\":\"-1\",\"created\":true,"
                      "\"canceled\":true,\"cancel_reason\":\"rpc error: code = InvalidArgument desc = etcdserver: "
                      "user name is empty\"}}");
    const json_t *events;
    const char *reason;
    int64_t rev;

    ck_assert_int_eq(preempt_watch_classify_(j, &rev, &events, &reason), PREEMPT_WATCH_CANCELED);
    ck_assert_ptr_nonnull(strstr(reason, "user name is empty"));
    json_decref(j);
}
END_TEST


/* The decoder of a whole stream: events once each, in order; progress moves
 * the start on; an undecodable event ends the stream for a re-read (an event
 * may be lost); an authentication cancel asks for a new token. */
struct dseen {
    char keys[8][32];
    int types[8];
    unsigned n, created;
};

static void dseen_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    struct dseen *s = arg;

    ck_assert_uint_lt(s->n, 8);
    (void)snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", kv->key);
    s->types[s->n++] = (int)type;
}

static void dseen_created(int64_t rev, void *arg)
{
    (void)rev;
    ((struct dseen *)arg)->created++;
}

static void dec_start(struct preempt_watch_dec *d, struct dseen *s, int64_t rev)
{
    *s = (struct dseen){ 0 };
    *d = (struct preempt_watch_dec){ .prefix = "/p/", .on_event = dseen_event, .on_created = dseen_created, .arg = s };
    preempt_watch_dec_init_(d, rev);
}

/* key "a" is YQ==, "b" is Yg== */
#define EV(type, key, rev) "{\"type\":\"" type "\",\"kv\":{\"key\":\"" key "\",\"mod_revision\":\"" rev "\"}}"
#define EVENTS(hrev, ...) "{\"result\":{\"header\":{\"revision\":\"" hrev "\"},\"events\":[" __VA_ARGS__ "]}}\n"

/* A txn that wrote two keys: one revision, both events. The decoder used
 * to drop the second as "already delivered": a claim's notice, written in
 * the claim's transaction, never reached the other workers. */
START_TEST(test_watch_decoder_txn)
{
    static const char txn[] = EVENTS("8", EV("PUT", "YQ==", "8") "," EV("PUT", "Yg==", "8"));
    struct preempt_watch_dec d;
    struct dseen s;

    dec_start(&d, &s, 5);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, txn, sizeof(txn) - 1), PREEMPT_WATCH_GOING);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_str_eq(s.keys[1], "b");
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, txn, sizeof(txn) - 1), PREEMPT_WATCH_GOING);
    ck_assert_uint_eq(s.n, 2); /* that revision again, in a later message: never twice */
    ck_assert_int_eq(d.next_rev, 9);
    preempt_watch_dec_free_(&d);
}
END_TEST

START_TEST(test_watch_decoder)
{
    static const char created[] = "{\"result\":{\"header\":{\"revision\":\"4\"},\"created\":true}}\n";
    static const char evs[] = EVENTS("6", EV("PUT", "YQ==", "5") "," EV("DELETE", "Yg==", "6"));
    static const char again[] = EVENTS("6", EV("PUT", "YQ==", "5"));
    static const char progress[] = "{\"result\":{\"header\":{\"revision\":\"9\"}}}\n";
    struct preempt_watch_dec d;
    struct dseen s;

    dec_start(&d, &s, 5);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, created, sizeof(created) - 1), PREEMPT_WATCH_GOING);
    ck_assert_uint_eq(s.created, 1);
    /* byte by byte: framing does not matter */
    for (size_t i = 0; i < sizeof(evs) - 1; i++)
        ck_assert_int_eq(preempt_watch_dec_feed_(&d, evs + i, 1), PREEMPT_WATCH_GOING);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_str_eq(s.keys[0], "a");
    ck_assert_int_eq(s.types[0], PREEMPT_ETCD_PUT);
    ck_assert_str_eq(s.keys[1], "b");
    ck_assert_int_eq(s.types[1], PREEMPT_ETCD_DELETE);
    ck_assert_int_eq(d.next_rev, 7);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, again, sizeof(again) - 1), PREEMPT_WATCH_GOING);
    ck_assert_uint_eq(s.n, 2); /* never twice */
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, progress, sizeof(progress) - 1), PREEMPT_WATCH_GOING);
    ck_assert_int_eq(d.next_rev, 10);
    /* a last line without a newline counts when the stream ends gracefully */
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, EVENTS("11", EV("PUT", "Yg==", "11")), sizeof(EVENTS("11", EV("PUT", "Yg==", "11"))) - 2),
                     PREEMPT_WATCH_GOING);
    ck_assert_uint_eq(s.n, 2);
    preempt_watch_dec_finish_(&d);
    ck_assert_uint_eq(s.n, 3);
    preempt_watch_dec_free_(&d);
}
END_TEST

START_TEST(test_watch_decoder_ends)
{
    static const char undecodable[] = EVENTS("6", EV("PUT", "!!", "5") "," EV("PUT", "Yg==", "6"));
    static const char garbage[] = "{\"result\":\n";
    static const char compacted[] = "{\"result\":{\"header\":{\"revision\":\"9\"},\"canceled\":true,\"compact_revision\":\"8\"}}\n";
    static const char huge_progress[] = "{\"result\":{\"header\":{\"revision\":\"9223372036854775807\"}}}\n";
    static const char huge_event[] = EVENTS("6", EV("PUT", "YQ==", "9223372036854775807"));
    static const char auth[] = "{\"result\":{\"header\":{\"revision\":\"5\"},\"canceled\":true,"
                               "\"cancel_reason\":\"etcdserver: invalid auth token\"}}\n";
    struct preempt_watch_dec d;
    struct dseen s;

    dec_start(&d, &s, 5);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, undecodable, sizeof(undecodable) - 1), PREEMPT_WATCH_REREAD);
    ck_assert_uint_eq(s.n, 0); /* nothing after the bad event either */
    ck_assert_int_eq(d.next_rev, 0);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, "\n", 1), PREEMPT_WATCH_REREAD); /* ended stays ended */
    preempt_watch_dec_free_(&d);

    dec_start(&d, &s, 5);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, garbage, sizeof(garbage) - 1), PREEMPT_WATCH_RECONNECT);
    ck_assert_int_eq(d.next_rev, 5);
    preempt_watch_dec_free_(&d);

    dec_start(&d, &s, 5);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, compacted, sizeof(compacted) - 1), PREEMPT_WATCH_REREAD);
    ck_assert_int_eq(d.next_rev, 0);
    preempt_watch_dec_free_(&d);

    /* revisions no store reaches (found by fuzz-watch: rev + 1 overflowed) */
    dec_start(&d, &s, 5);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, huge_progress, sizeof(huge_progress) - 1), PREEMPT_WATCH_RECONNECT);
    ck_assert_int_eq(d.next_rev, 5);
    preempt_watch_dec_free_(&d);
    dec_start(&d, &s, 5);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, huge_event, sizeof(huge_event) - 1), PREEMPT_WATCH_REREAD);
    ck_assert_uint_eq(s.n, 0);
    preempt_watch_dec_free_(&d);

    dec_start(&d, &s, 5);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, auth, sizeof(auth) - 1), PREEMPT_WATCH_RECONNECT);
    ck_assert(d.auth_failed);
    preempt_watch_dec_free_(&d);
}
END_TEST

/* A store that went back in time (restored from an older snapshot, or
 * wiped): a watch re-opened at the old revision + 1 is created, and then
 * waits for revisions that never come. The created message (and any
 * progress notice) says where the store is: behind, or another cluster,
 * the prefix is read again. */
START_TEST(test_watch_decoder_store_moved)
{
    static const char behind[] = "{\"result\":{\"header\":{\"revision\":\"7\"},\"created\":true}}\n";
    static const char at[] = "{\"result\":{\"header\":{\"cluster_id\":\"11\",\"revision\":\"49\"},\"created\":true}}\n";
    static const char progress_behind[] = "{\"result\":{\"header\":{\"revision\":\"30\"}}}\n";
    static const char other[] = "{\"result\":{\"header\":{\"cluster_id\":\"12\",\"revision\":\"60\"},\"created\":true}}\n";
    struct preempt_watch_dec d;
    struct dseen s;

    dec_start(&d, &s, 50);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, behind, sizeof(behind) - 1), PREEMPT_WATCH_REREAD);
    ck_assert_int_eq(d.next_rev, 0);
    ck_assert_uint_eq(s.created, 0);
    preempt_watch_dec_free_(&d);

    dec_start(&d, &s, 50);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, at, sizeof(at) - 1), PREEMPT_WATCH_GOING);
    ck_assert_uint_eq(d.cluster_id, 11);
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, progress_behind, sizeof(progress_behind) - 1), PREEMPT_WATCH_REREAD);
    preempt_watch_dec_free_(&d);

    dec_start(&d, &s, 50);
    d.cluster_id = 11;
    ck_assert_int_eq(preempt_watch_dec_feed_(&d, other, sizeof(other) - 1), PREEMPT_WATCH_REREAD);
    ck_assert_uint_eq(d.cluster_id, 12);
    ck_assert_int_eq(d.next_rev, 0);
    preempt_watch_dec_free_(&d);
}
END_TEST

START_TEST(test_job_names)
{
    static const char *const good[] = { "job", "a.b_c-1", "X" };
    static const char *const bad[] = { "", ".", "..", "a/b", "../x", "a b", "a\nb", "a\"b" };
    char buf[256];

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        ck_assert_msg(preempt_coord_job_ok_(good[i]), "rejected '%s'", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(!preempt_coord_job_ok_(bad[i]), "accepted '%s'", bad[i]);
    ck_assert(!preempt_coord_job_ok_(NULL));
    memset(buf, 'j', 129);
    buf[129] = '\0';
    ck_assert(!preempt_coord_job_ok_(buf));
    ck_assert_int_eq(preempt_coord_prefix_("job", buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "/preempt/job/");
}
END_TEST

/* ---- the key layout (keys-internal.h): one table, formatted and parsed --- */

#define JOBP "/preempt/job/"

START_TEST(test_keys_exact)
{
    struct preempt_key k = { .inc = 7, .ep = 3, .round = 1, .step = 120, .worker = 5 };
    char buf[PREEMPT_KEY_MAX];

    ck_assert_int_eq(preempt_key_(buf, sizeof(buf), JOBP, PREEMPT_KEY_INCARNATION, &k), 0);
    ck_assert_str_eq(buf, "/preempt/job/incarnation");
    ck_assert_int_eq(preempt_key_(buf, sizeof(buf), JOBP, PREEMPT_KEY_AGREED, &k), 0);
    ck_assert_str_eq(buf, "/preempt/job/7/e3/r1/agreed");
    ck_assert_int_eq(preempt_key_(buf, sizeof(buf), JOBP, PREEMPT_KEY_DECISION, &k), 0);
    ck_assert_str_eq(buf, "/preempt/job/7/decision/e3/r1");
    ck_assert_int_eq(preempt_key_(buf, sizeof(buf), JOBP, PREEMPT_KEY_SHARD, &k), 0);
    ck_assert_str_eq(buf, "/preempt/job/7/w/e3/r1/shard/120/5");
    ck_assert_int_eq(preempt_key_range_(buf, sizeof(buf), JOBP, PREEMPT_KEY_SHARD, 'w', &k), 0);
    ck_assert_str_eq(buf, "/preempt/job/7/w/e3/r1/shard/120/");
    ck_assert_int_eq(preempt_key_range_(buf, sizeof(buf), JOBP, PREEMPT_KEY_SHARD, 'S', &k), 0);
    ck_assert_str_eq(buf, "/preempt/job/7/w/e3/r1/shard/");
    ck_assert_int_eq(preempt_key_range_(buf, sizeof(buf), JOBP, PREEMPT_KEY_ALIVE, 'w', &k), 0);
    ck_assert_str_eq(buf, "/preempt/job/7/w/alive/");
    ck_assert_int_eq(preempt_key_range_(buf, sizeof(buf), JOBP, PREEMPT_KEY_INC, 0, &k), 0);
    ck_assert_str_eq(buf, "/preempt/job/7/");
    ck_assert_int_eq(preempt_key_range_(buf, sizeof(buf), JOBP, PREEMPT_KEY_W_EPISODE, 0, &k), 0);
    ck_assert_str_eq(buf, "/preempt/job/7/w/e3/");
    /* a record is not a range; a placeholder it lacks cannot bound one */
    ck_assert_int_eq(preempt_key_range_(buf, sizeof(buf), JOBP, PREEMPT_KEY_CLAIM, 0, &k), -EINVAL);
    ck_assert_int_eq(preempt_key_range_(buf, sizeof(buf), JOBP, PREEMPT_KEY_CLAIM, 'w', &k), -EINVAL);
    ck_assert_int_eq(preempt_key_(buf, 12, JOBP, PREEMPT_KEY_CLAIM, &k), -ENAMETOOLONG);
    ck_assert_str_eq(buf, ""); /* no key, never a cut one */
}
END_TEST

/* Every record formats and parses back to itself, with the largest values,
 * under the longest job name, within PREEMPT_KEY_MAX. */
START_TEST(test_keys_round_trip)
{
    static const struct preempt_key vals[] = {
        { 0 },
        { .inc = 1, .ep = 2, .step = 3, .round = 1, .worker = 4 },
        { .inc = UINT64_MAX, .ep = UINT64_MAX, .step = UINT64_MAX, .round = 1, .worker = PREEMPT_MAX_WORKERS - 1 },
    };
    char jobp[PREEMPT_MAX_JOB + 16], name[PREEMPT_MAX_JOB + 1], buf[PREEMPT_KEY_MAX];

    memset(name, 'j', PREEMPT_MAX_JOB);
    name[PREEMPT_MAX_JOB] = '\0';
    ck_assert_int_eq(preempt_coord_prefix_(name, jobp, sizeof(jobp)), 0);
    for (int id = 0; id < PREEMPT_KEY_COUNT; id++) {
        for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
            struct preempt_key got = { 0 }, want = { 0 };

            ck_assert_int_eq(preempt_key_(buf, sizeof(buf), jobp, id, &vals[i]), 0);
            ck_assert_msg(preempt_key_parse_(buf, jobp, &got) == id, "%s: not parsed as %s", buf,
                          preempt_key_pattern_(id));
            want.inc = preempt_key_has_(id, 'N') ? vals[i].inc : 0;
            want.ep = preempt_key_has_(id, 'p') ? vals[i].ep : 0;
            want.step = preempt_key_has_(id, 'S') ? vals[i].step : 0;
            want.round = preempt_key_has_(id, 'k') ? vals[i].round : 0;
            want.worker = preempt_key_has_(id, 'w') ? vals[i].worker : 0;
            ck_assert_msg(!memcmp(&got, &want, sizeof(got)), "%s: other values parsed", buf);
            /* its ranges ('w': every worker's, 'S': every step's) fit too */
            for (const char *c = "wS"; *c; c++)
                if (preempt_key_has_(id, *c))
                    ck_assert_int_eq(preempt_key_range_(buf, sizeof(buf), jobp, id, *c, &vals[i]), 0);
        }
    }
    /* and the named ranges: so the formats the coordinator and the start-up
     * use without looking at their result (CKEY, CRANGE, JKEY, JRANGE)
     * cannot truncate under a prefix preempt_coord_prefix_() made */
    for (int id = PREEMPT_KEY_COUNT; id < PREEMPT_KEY_ALL_COUNT_; id++)
        for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
            ck_assert_int_eq(preempt_key_range_(buf, sizeof(buf), jobp, id, 0, &vals[i]), 0);
    /* one character more is refused where the prefix is made */
    {
        char longer[PREEMPT_MAX_JOB + 2];

        memset(longer, 'j', PREEMPT_MAX_JOB + 1);
        longer[PREEMPT_MAX_JOB + 1] = '\0';
        ck_assert_int_lt(preempt_coord_prefix_(longer, jobp, sizeof(jobp)), 0);
    }
    /* A key that does not fit is no key, never a cut one (a cut range
     * would read or delete more than asked), and no port sends a request
     * that names it. */
    {
        struct preempt_etcd_cmp cmp = { .key = buf };
        struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_GET, "/preempt/j/1/ready", NULL, 0 },
                                         { PREEMPT_ETCD_OP_DELETE_PREFIX, buf, NULL, 0 } };

        ck_assert_int_eq(preempt_key_(buf, 40, jobp, PREEMPT_KEY_READY, &vals[2]), -ENAMETOOLONG);
        ck_assert_str_eq(buf, "");
        ck_assert_int_eq(preempt_key_range_(buf, 40, jobp, PREEMPT_KEY_ALIVE, 'w', &vals[2]), -ENAMETOOLONG);
        ck_assert_str_eq(buf, "");
        ck_assert_int_eq(preempt_key_(buf, sizeof(buf), jobp, PREEMPT_KEY_ALL_COUNT_ + 1, &vals[1]), -EINVAL);
        ck_assert_str_eq(buf, "");
        ck_assert_int_eq(preempt_etcd_req_keys_ok_(PREEMPT_RQ_DELETE_UNDER(buf)), -ENAMETOOLONG);
        ck_assert_int_eq(preempt_etcd_req_keys_ok_(PREEMPT_RQ_GET(buf)), -ENAMETOOLONG);
        ck_assert_int_eq(preempt_etcd_req_keys_ok_(PREEMPT_RQ_SPAN("/preempt/j/", buf)), -ENAMETOOLONG);
        ck_assert_int_eq(preempt_etcd_req_keys_ok_(PREEMPT_RQ_TXN(NULL, 0, ops, 2, NULL, 0)), -ENAMETOOLONG);
        ck_assert_int_eq(preempt_etcd_req_keys_ok_(PREEMPT_RQ_TXN(&cmp, 1, ops, 1, NULL, 0)), -ENAMETOOLONG);
        ck_assert_int_eq(preempt_etcd_req_keys_ok_(PREEMPT_RQ_TXN(NULL, 0, ops, 1, NULL, 0)), 0);
        ck_assert_int_eq(preempt_etcd_req_keys_ok_(PREEMPT_RQ_LEASE(REVOKE, 7)), 0);
    }
}
END_TEST

START_TEST(test_keys_rejected)
{
    static const char *const bad[] = {
        JOBP "7/e3/r2/agreed",       /* a round is 0 or 1 */
        JOBP "07/shape",             /* leading zero: not a key the library writes */
        JOBP "7/e/claim",            /* no episode */
        JOBP "7/e-1/claim",
        JOBP "7/e3/claim/x",         /* trailing */
        JOBP "7/e3/notice/16384",    /* worker beyond PREEMPT_MAX_WORKERS */
        JOBP "7/w/alive/",           /* a range, not a record */
        JOBP "7/w/alive/1x",
        JOBP "18446744073709551616/shape", /* 2^64 */
        JOBP "7/joined/1",           /* the layout before the member records moved under w/ */
        "/preempt/other/7/shape",    /* another job */
        "/preempt/jobs/7/shape",
        JOBP,
        "",
    };
    struct preempt_key k;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(preempt_key_parse_(bad[i], JOBP, &k) == -1, "parsed '%s'", bad[i]);
}
END_TEST

/* An acknowledgement's and an agreed record's value: a step and an
 * optional "last"; nothing else is taken for one. */
START_TEST(test_step_values)
{
    static const char *bad[] = { "", " last", "12 ", "12 lastly", "12 Last", "12  last", "-3", "+3", "12last",
                                 "12 last ", "99999999999999999999 last", "123456789012345678901234567890 last" };
    struct preempt_value v;
    const char *buf = preempt_value_str_(&v);
    uint64_t step;
    bool last;

    ck_assert_int_eq(preempt_step_value_(&v, UINT64_MAX, true), 25);
    ck_assert(preempt_step_value_parse_(buf, &step, &last) && step == UINT64_MAX && last);
    ck_assert_int_eq(preempt_step_value_(&v, 0, false), 1);
    ck_assert(preempt_step_value_parse_(buf, &step, &last) && step == 0 && !last);
    ck_assert(preempt_step_value_parse_("84 last", &step, &last) && step == 84 && last);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(!preempt_step_value_parse_(bad[i], &step, &last), "\"%s\" taken", bad[i]);
}
END_TEST

/* A shard report: "<save>[ last][ stop=<step>][ run=<step> pace=<ms>]";
 * nothing else is taken for one. */
START_TEST(test_shard_values)
{
    static const char *bad[] = { "", "12 stop=", "12 stop=x", "12 stop=5 last", "12 last stop=-1", "12 stop=5 ",
                                 "12 last  stop=5", "12 laststop=5", "12 run=5", "12 pace=10", "12 pace=10 run=5",
                                 "12 run=5 pace=10 stop=7", "12 run=5 pace=", "12 run=-5 pace=10", "12 run=5  pace=10",
                                 "12 at=5", "12 run=5 pace=10 at=", "12 run=5 pace=10 at=100000000000001",
                                 "12 run=5 at=5 pace=10" };
    static const struct preempt_pace max = { UINT64_MAX, UINT64_MAX, 100000000000000u }, none = { 0, 0, 0 };
    struct preempt_value v;
    const char *buf = preempt_value_str_(&v);
    uint64_t save, stop;
    struct preempt_pace pace;
    bool last;

    ck_assert_int_eq(preempt_shard_value_(&v, UINT64_MAX, true, UINT64_MAX, max), 121);
    ck_assert_str_eq(buf, "18446744073709551615 last stop=18446744073709551615 run=18446744073709551615 "
                          "pace=18446744073709551615 at=100000000000000");
    ck_assert(preempt_shard_value_parse_(buf, &save, &last, &stop, &pace) && save == UINT64_MAX && last &&
              stop == UINT64_MAX && pace.step == UINT64_MAX && pace.ms == UINT64_MAX &&
              pace.at == 100000000000000u);
    ck_assert_int_eq(preempt_shard_value_(&v, 700, false, 0, none), 3);
    ck_assert(preempt_shard_value_parse_(buf, &save, &last, &stop, &pace) && save == 700 && !last && stop == 0 &&
              pace.ms == 0);
    ck_assert_int_eq(preempt_shard_value_(&v, 700, false, 0, (struct preempt_pace){ 42, 12, 0 }), 18);
    ck_assert_str_eq(buf, "700 run=42 pace=12"); /* at 0: it waits at its step */
    ck_assert(preempt_shard_value_parse_(buf, &save, &last, &stop, &pace) && save == 700 && !last && stop == 0 &&
              pace.step == 42 && pace.ms == 12 && pace.at == 0);
    ck_assert(preempt_shard_value_parse_("700 run=42 pace=12 at=1790000000000", &save, &last, &stop, &pace) &&
              pace.step == 42 && pace.ms == 12 && pace.at == 1790000000000u);
    ck_assert(preempt_shard_value_parse_("700 last", &save, &last, &stop, &pace) && save == 700 && last &&
              stop == 0 && pace.ms == 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(!preempt_shard_value_parse_(bad[i], &save, &last, &stop, &pace), "\"%s\" taken", bad[i]);
}
END_TEST

/* A committed decision: "committed <step>[ last] save=<ms>", and the
 * older form without the save time; nothing else is taken for one. */
START_TEST(test_committed_values)
{
    static const char *bad[] = { "committed", "committed ", "committed save=5", "committed 12 save=",
                                 "committed 12 save=x", "committed 12 save=-1", "committed 12 save=5 last",
                                 "committed 12 lastsave=5", "committed 12  save=5", "committed 12 save=5 ",
                                 "aborted 12 3", "committed 12 last save=99999999999999999999",
                                 "committed 12 save=5 from=3", "committed 12 save=5 pace=3",
                                 "committed 12 save=5 from=3 pace=10 stop=20", "committed 12 save=5 run=3 pace=10" };
    struct preempt_value v;
    const char *buf = preempt_value_str_(&v);
    uint64_t step, save;
    bool last;

    ck_assert_int_eq(preempt_committed_value_(&v, UINT64_MAX, true, UINT64_MAX, UINT64_MAX,
                                              (struct preempt_pace){ UINT64_MAX, UINT64_MAX, 0 }),
                     139);
    ck_assert_str_eq(buf, "committed 18446744073709551615 last save=18446744073709551615 stop=18446744073709551615 "
                          "from=18446744073709551615 pace=18446744073709551615");
    ck_assert(preempt_committed_parse_(buf, &step, &last, &save) && step == UINT64_MAX && last && save == UINT64_MAX);
    ck_assert_int_eq(preempt_committed_value_(&v, 84, false, 1500, 0, (struct preempt_pace){ 0, 0, 0 }), 22);
    ck_assert_str_eq(buf, "committed 84 save=1500"); /* stop 0, pace 0: not named */
    ck_assert_int_eq(preempt_committed_value_(&v, 84, false, 1500, 0, (struct preempt_pace){ 84, 12, 0 }),
                     38);
    ck_assert_str_eq(buf, "committed 84 save=1500 from=84 pace=12");
    ck_assert(preempt_committed_parse_(buf, &step, &last, &save) && step == 84 && !last && save == 1500);
    ck_assert(!preempt_committed_parse_("committed 84 last stop=90 save=5", &step, &last, &save)); /* out of order */
    ck_assert(preempt_committed_parse_("committed 84 save=1500", &step, &last, &save) && step == 84 && !last &&
              save == 1500);
    ck_assert(preempt_committed_parse_("committed 84 last", &step, &last, &save) && step == 84 && last && save == 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(!preempt_committed_parse_(bad[i], &step, &last, &save), "\"%s\" taken", bad[i]);
}
END_TEST

/* Every record's value against its grammar (the key table's value
 * column): what the writers write reads, the garbage an operator's mistake
 * leaves does not, and fields come out typed. */
START_TEST(test_record_grammar)
{
    static const struct {
        enum preempt_key_id id;
        const char *value;
        bool ok;
    } cases[] = {
        { PREEMPT_KEY_NOTICE, "1790000032135 signal", true },
        { PREEMPT_KEY_NOTICE, "0 inject withdrawn", true },
        { PREEMPT_KEY_NOTICE, "zzz not-a-deadline", false },
        { PREEMPT_KEY_NOTICE, "18446744073709551615999 signal withdrawn", false },
        { PREEMPT_KEY_NOTICE, "100000000000001 signal", false }, /* past 10^14 ms */
        { PREEMPT_KEY_NOTICE, "12 signal withdrawnx", false },
        { PREEMPT_KEY_NOTICE, "12 ", false },
        { PREEMPT_KEY_NOTICE, "012 signal", false },
        { PREEMPT_KEY_NOTICE_OP, "0 inject", true },
        { PREEMPT_KEY_NOTICE_OP, "soon inject", false },
        { PREEMPT_KEY_ERROR, "-5 1 save failed: disk full", true },
        { PREEMPT_KEY_ERROR, "-5 1 ", true },
        { PREEMPT_KEY_ERROR, "boom 1 a message", false },
        { PREEMPT_KEY_ERROR, "-5 4 beyond the job", false },
        { PREEMPT_KEY_ERROR, "-5 1 two\nlines", false },
        { PREEMPT_KEY_CLAIM, "3", true },
        { PREEMPT_KEY_CLAIM, "2 5000 signal", true },
        { PREEMPT_KEY_CLAIM, "2 5000 signal withdrawn", true },
        { PREEMPT_KEY_CLAIM, "2 5000", false },
        { PREEMPT_KEY_CLAIM, "9", false },
        { PREEMPT_KEY_DECISION, "committed 84 last save=1500", true },
        { PREEMPT_KEY_DECISION, "aborted 84 2", true },
        { PREEMPT_KEY_DECISION, "aborted 84 restart", true },
        { PREEMPT_KEY_DECISION, "aborted 84", false },
        { PREEMPT_KEY_DECISION, "aborted 84 restarts", false },
        { PREEMPT_KEY_DECISION, "done 84", false },
        { PREEMPT_KEY_READY, "restore=none workers=3 launch=-", true },
        { PREEMPT_KEY_READY, "restore=40 workers=3 launch=l1 refused=60 lacking=0,2,...", true },
        { PREEMPT_KEY_READY, "restore=40 workers=3 launch=l1 over=60", true },
        { PREEMPT_KEY_READY, "restore=40 workers=3 launch=l1 refused=60 lacking=0,2", true },
        { PREEMPT_KEY_READY, "restore=40 workers=3 launch=l1 refused=60 lacking=0,,2", false },
        { PREEMPT_KEY_READY, "restore=40 workers=3 launch=l1 refused=60 lacking=0,02", false },
        { PREEMPT_KEY_READY, "restore=40 workers=3 launch=l1 refused=60 lacking=0.2", false },
        { PREEMPT_KEY_READY, "restore=40 workers=3 launch=l1 refused=60 lacking=0,", false },
        { PREEMPT_KEY_READY, "restore=40 workers=3 launch=l1 refused=60 lacking=...", false },
        { PREEMPT_KEY_READY, "restore=40 workers=3 launch=l1 refused=60 lacking=0,...,2", false },
        { PREEMPT_KEY_ALIVE, "pid=1 host=h launch=l workers=4 steps=", true },
        { PREEMPT_KEY_ALIVE, "pid=1 host=h launch=l workers=4 steps=10,20", true },
        { PREEMPT_KEY_ALIVE, "pid=1 host=h launch=l workers=4 steps=10,99999999999999999999", false },
        { PREEMPT_KEY_ALIVE, "pid=1 host=h launch=l workers=4 steps=,10", false },
        { PREEMPT_KEY_READY, "restore=some workers=3 launch=l1", false },
        { PREEMPT_KEY_RESTORED, "ok", true },
        { PREEMPT_KEY_RESTORED, "unusable 40 worker=1: the model's shape differs", true },
        { PREEMPT_KEY_RESTORED, "failed 40 worker=1: out of memory", true },
        { PREEMPT_KEY_RESTORED, "broken 40 worker=1: x", false },
        { PREEMPT_KEY_INCARNATION, "7", true },
        { PREEMPT_KEY_INCARNATION, "-7", false },
        { PREEMPT_KEY_LOST, "2", true },
        { PREEMPT_KEY_LOST, "", false },
        { PREEMPT_KEY_LOST, "2 left", true },
        { PREEMPT_KEY_LOST, "2 gone", false },
        { PREEMPT_KEY_LOST, "2left", false },
    };
    struct preempt_record r;
    const char *why, *s;
    struct preempt_value v;
    const char *buf = preempt_value_str_(&v);
    uint64_t u;
    size_t len;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ck_assert_msg((preempt_record_parse_(cases[i].id, cases[i].value, 4, &r, &why) == 0) == cases[i].ok,
                      "%s = \"%s\": %s", preempt_key_pattern_(cases[i].id), cases[i].value,
                      cases[i].ok ? why : "taken");
    /* the member record as the coordinator writes it */
    preempt_coord_member_(&v, 12, "node-1.example", "l1", 4, true, (uint64_t[]){ 10, 20 }, 2);
    ck_assert_msg(preempt_record_valid_(PREEMPT_KEY_ALIVE, buf, 4), "%s", buf);
    preempt_coord_member_(&v, 12, NULL, NULL, 4, false, NULL, 0);
    ck_assert_msg(preempt_record_valid_(PREEMPT_KEY_JOINED, buf, 4), "%s", buf);
    ck_assert_str_eq(buf, "pid=12 host=- launch=- workers=4 steps=");
    /* a host name with bytes a word lacks (a Linux host name may hold any) */
    ck_assert_int_eq(preempt_coord_member_(&v, 12, "gpu+1 a", "l1", 4, false, (uint64_t[]){ 7 }, 1), 0);
    ck_assert_str_eq(buf, "pid=12 host=gpu-1-a launch=l1 workers=4 steps=7");
    /* a list: numbers, ",..." for those left out, both ways */
    {
        uint64_t many[300], got[8];
        bool more;

        for (size_t i = 0; i < 300; i++)
            many[i] = 1000000000000ULL + i; /* 13 digits: 73 fit in 1024 bytes */
        ck_assert_int_eq(preempt_record_parse_(PREEMPT_KEY_ALIVE, "pid=1 host=h launch=l workers=4 steps=5,0,7", 4,
                                               &r, &why),
                         0);
        ck_assert(preempt_record_list_(&r, "steps", got, 8, &more) == 3 && !more && got[0] == 5 && got[1] == 0 &&
                  got[2] == 7);
        ck_assert(preempt_record_list_(&r, "steps", got, 2, &more) == 2 && more);
        ck_assert(preempt_record_list_(&r, "lacking", got, 8, &more) == 0 && !more);
        r = (struct preempt_record){ 0 };
        preempt_record_set_u64_(&r, "restore", 40);
        preempt_record_set_u64_(&r, "workers", 3);
        preempt_record_set_text_(&r, "launch", "l1");
        preempt_record_set_u64_(&r, "refused", 60);
        preempt_record_set_list_(&r, "lacking", many, 2, true);
        ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_READY, &r, 3, &why), 0);
        ck_assert_str_eq(buf, "restore=40 workers=3 launch=l1 refused=60 lacking=1000000000000,1000000000001,...");
        ck_assert_int_eq(preempt_record_parse_(PREEMPT_KEY_READY, buf, 3, &r, &why), 0);
        ck_assert(preempt_record_list_(&r, "lacking", got, 8, &more) == 2 && more && got[1] == 1000000000001ULL);
        r = (struct preempt_record){ 0 };
        preempt_record_set_u64_(&r, "pid", 1);
        preempt_record_set_text_(&r, "host", "h");
        preempt_record_set_text_(&r, "launch", "l");
        preempt_record_set_u64_(&r, "workers", 4);
        preempt_record_set_list_(&r, "steps", many, 300, false); /* more than 1024 bytes: the first ones */
        {
            struct preempt_value big;

            ck_assert_int_eq(preempt_record_format_(&big, PREEMPT_KEY_ALIVE, &r, 4, &why), 0);
            ck_assert_int_eq(preempt_record_parse_(PREEMPT_KEY_ALIVE, preempt_value_str_(&big), 4, &r, &why), 0);
            ck_assert(preempt_record_text_(&r, "steps", &len) && len <= 1024);
            ck_assert(preempt_record_list_(&r, "steps", got, 8, &more) == 8 && more && got[7] == 1000000000007ULL);
            ck_assert_msg(strlen(preempt_value_str_(&big)) > 1000 &&
                              !strcmp(preempt_value_str_(&big) + strlen(preempt_value_str_(&big)) - 4, ",..."),
                          "%s", preempt_value_str_(&big));
        }
    }
    /* typed fields, flags, alternatives */
    ck_assert_int_eq(preempt_record_parse_(PREEMPT_KEY_ERROR, "-5 1 disk full", 4, &r, &why), 0);
    ck_assert(preempt_record_u64_(&r, "code", &u) && (int64_t)u == -5);
    ck_assert((s = preempt_record_text_(&r, "message", &len)) && len == 9 && !strcmp(s, "disk full"));
    ck_assert_int_eq(preempt_record_parse_(PREEMPT_KEY_DECISION, "aborted 7 restart", 4, &r, &why), 0);
    ck_assert(preempt_record_has_(&r, "aborted") && preempt_record_has_(&r, "restart") &&
              !preempt_record_has_(&r, "committed") && !preempt_record_has_(&r, "w"));
    ck_assert_int_eq(preempt_record_parse_(PREEMPT_KEY_NOTICE, "zzz x", 4, &r, &why), -EBADMSG);
    ck_assert_str_eq(why, "a number");
    /* written back: every well-formed value, read, formats as it was */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (!cases[i].ok)
            continue;
        ck_assert_int_eq(preempt_record_parse_(cases[i].id, cases[i].value, 4, &r, &why), 0);
        ck_assert_msg(preempt_record_format_(&v, cases[i].id, &r, 4, &why) == 0 &&
                          !strcmp(buf, cases[i].value),
                      "%s: \"%s\" wrote back as \"%s\" (%s)", preempt_key_pattern_(cases[i].id), cases[i].value, buf,
                      why);
    }
}
END_TEST

/* A value is written from its fields by its grammar (records-internal.h,
 * preempt_record_format_), and refused when a reader would refuse it: a
 * field it lacks or has no place for, part of an optional group, a word
 * that is none, a worker past the job's count, a buffer too small. */
/* The typed records (records-kinds.h, written from the grammars at build
 * time): each writer formats what the grammar says, each reader fills its
 * struct from a value; a value read and written again is the same; a
 * writer refuses what the grammar refuses (a worker past the count, a
 * missing alternative) and a reader what it does not read. */
START_TEST(test_typed_records)
{
    struct preempt_value v;
    const char *why;
    static const uint64_t steps[] = { 10, 20 };
    struct preempt_rv_decision d;
    struct preempt_rv_alive m;
    struct preempt_rv_ready rd;
    struct preempt_rv_restored rs;
    struct preempt_rv_notice n;
    struct preempt_rv_history h;

    ck_assert_int_eq(preempt_rv_decision_write_(&v,
                                                &(struct preempt_rv_decision){ .committed = true, .has_step = true,
                                                                               .step = 40, .last = true,
                                                                               .has_save = true, .save = 250 },
                                                4, &why),
                     0);
    ck_assert_str_eq(preempt_value_str_(&v), "committed 40 last save=250");
    ck_assert_int_eq(preempt_rv_decision_read_(preempt_value_str_(&v), 4, &d, &why), 0);
    ck_assert(d.committed && !d.aborted && d.last && d.has_step && d.step == 40 && d.has_save && d.save == 250);
    ck_assert(!d.has_stop && !d.has_from && !d.has_w && !d.restart);
    ck_assert_int_eq(preempt_rv_decision_write_(&v,
                                                &(struct preempt_rv_decision){ .aborted = true, .has_step = true,
                                                                               .step = 7, .has_w = true, .w = 3 },
                                                4, &why),
                     0);
    ck_assert_str_eq(preempt_value_str_(&v), "aborted 7 3");
    /* a worker past the count, and a decision that is neither */
    ck_assert_int_eq(preempt_rv_decision_write_(&v,
                                                &(struct preempt_rv_decision){ .aborted = true, .has_step = true,
                                                                               .step = 7, .has_w = true, .w = 4 },
                                                4, &why),
                     -EBADMSG);
    ck_assert_str_eq(preempt_value_str_(&v), "");
    ck_assert_int_eq(preempt_rv_decision_write_(&v, &(struct preempt_rv_decision){ .has_step = true, .step = 7 }, 4,
                                                &why),
                     -EBADMSG);
    /* the member record: its flag "over=1" and its list */
    ck_assert_int_eq(preempt_rv_alive_write_(&v,
                                             &(struct preempt_rv_alive){ .pid = 12, .host = "h", .launch = "L",
                                                                         .workers = 2, .over = true, .steps_v = steps,
                                                                         .steps_n = 2 },
                                             2, &why),
                     0);
    ck_assert_str_eq(preempt_value_str_(&v), "pid=12 host=h launch=L workers=2 over=1 steps=10,20");
    ck_assert_int_eq(preempt_rv_alive_read_(preempt_value_str_(&v), 2, &m, &why), 0);
    ck_assert(m.over && m.pid == 12 && m.workers == 2);
    ck_assert_uint_eq(m.steps_len, 5);
    ck_assert(!strncmp(m.steps, "10,20", m.steps_len));
    ck_assert_uint_eq(m.host_len, 1);
    /* read and written again: the same value (texts by their length) */
    ck_assert_int_eq(preempt_rv_alive_write_(&v, &m, 2, &why), 0);
    ck_assert_str_eq(preempt_value_str_(&v), "pid=12 host=h launch=L workers=2 over=1 steps=10,20");
    ck_assert_int_eq(preempt_rv_ready_read_("restore=none workers=3 launch=l1 refused=60 lacking=1,2,...", 3, &rd,
                                            &why),
                     0);
    ck_assert(rd.none && !rd.has_restore && rd.has_refused && rd.refused == 60 && !rd.has_over);
    ck_assert_int_eq(preempt_rv_ready_write_(&v, &rd, 3, &why), 0);
    ck_assert_str_eq(preempt_value_str_(&v), "restore=none workers=3 launch=l1 refused=60 lacking=1,2,...");
    ck_assert_int_eq(preempt_rv_restored_read_("unusable 40 worker=1: bad data", 2, &rs, &why), 0);
    ck_assert(rs.unusable && !rs.ok && !rs.failed && rs.step == 40 && rs.w == 1);
    ck_assert_uint_eq(rs.why_len, 8);
    ck_assert_int_eq(preempt_rv_restored_read_("unusable 40 worker=2: bad data", 2, &rs, &why), -EBADMSG);
    /* a notice withdrawn as read */
    ck_assert_int_eq(preempt_rv_notice_read_("1700000000000 sigterm", 2, &n, &why), 0);
    n.withdrawn = true;
    ck_assert_int_eq(preempt_rv_notice_write_(&v, &n, 2, &why), 0);
    ck_assert_str_eq(preempt_value_str_(&v), "1700000000000 sigterm withdrawn");
    ck_assert_int_eq(preempt_rv_notice_read_("007 sigterm", 2, &n, &why), -EBADMSG);
    /* a negative exit code, and the optional notice group all or nothing */
    ck_assert_int_eq(preempt_rv_history_write_(&v,
                                               &(struct preempt_rv_history){ .code = -6, .reason = "abort", .at = 5,
                                                                             .started = 4, .restore = 1, .run = 9,
                                                                             .committed = 8, .saves = 2 },
                                               2, &why),
                     0);
    ck_assert_str_eq(preempt_value_str_(&v),
                     "exit=-6 reason=abort at=5 started=4 restore_ms=1 run=9 committed=8 saves=2");
    ck_assert_int_eq(preempt_rv_history_read_(preempt_value_str_(&v), 2, &h, &why), 0);
    ck_assert_int_eq(h.code, -6);
    ck_assert(!h.has_notice && !h.source);
}
END_TEST

START_TEST(test_record_format)
{
    struct preempt_record r = { 0 };
    const char *why = NULL;
    struct preempt_value v;
    const char *buf = preempt_value_str_(&v);
    char big[PREEMPT_VALUE_MAX + 8];

    preempt_record_set_u64_(&r, "deadline", 1790000032135);
    preempt_record_set_text_(&r, "source", "signal");
    preempt_record_set_flag_(&r, "withdrawn");
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_NOTICE, &r, 4, &why), 0);
    ck_assert_str_eq(buf, "1790000032135 signal withdrawn");
    /* a value longer than any record's: refused, nothing written */
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    r = (struct preempt_record){ 0 };
    preempt_record_set_u64_(&r, "code", 1);
    preempt_record_set_u64_(&r, "w", 0);
    preempt_record_set_text_(&r, "message", big);
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_ERROR, &r, 4, &why), -ENAMETOOLONG);
    ck_assert_str_eq(buf, "");
    r = (struct preempt_record){ 0 }; /* a word's bytes outside its alphabet are written as '-' */
    preempt_record_set_u64_(&r, "deadline", 5);
    preempt_record_set_text_(&r, "source", "spot+gce x");
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_NOTICE, &r, 4, &why), 0);
    ck_assert_str_eq(buf, "5 spot-gce-x");
    r = (struct preempt_record){ 0 }; /* an empty one is refused */
    preempt_record_set_u64_(&r, "deadline", 5);
    preempt_record_set_text_(&r, "source", "");
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_NOTICE, &r, 4, &why), -EBADMSG);
    ck_assert_str_eq(buf, "");
    r = (struct preempt_record){ 0 }; /* a text's bytes that are not printable are written as spaces */
    preempt_record_set_u64_(&r, "code", 1);
    preempt_record_set_u64_(&r, "w", 0);
    preempt_record_set_text_(&r, "message", "two\nlines");
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_ERROR, &r, 4, &why), 0);
    ck_assert_str_eq(buf, "1 0 two lines");
    r = (struct preempt_record){ 0 }; /* a field it needs */
    preempt_record_set_text_(&r, "source", "signal");
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_NOTICE, &r, 4, &why), -EBADMSG);
    preempt_record_set_u64_(&r, "deadline", 5); /* and one it has no place for */
    preempt_record_set_u64_(&r, "save", 5);
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_NOTICE, &r, 4, &why), -EBADMSG);
    r = (struct preempt_record){ 0 }; /* part of an optional group: run without its pace */
    preempt_record_set_u64_(&r, "save", 1500);
    preempt_record_set_u64_(&r, "run", 40);
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_SHARD, &r, 4, &why), -EBADMSG);
    preempt_record_set_u64_(&r, "pace", 30);
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_SHARD, &r, 4, &why), 0);
    ck_assert_str_eq(buf, "1500 run=40 pace=30");
    r = (struct preempt_record){ 0 }; /* alternatives, by their flag or their field */
    preempt_record_set_flag_(&r, "aborted");
    preempt_record_set_u64_(&r, "step", 84);
    preempt_record_set_flag_(&r, "restart");
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_DECISION, &r, 4, &why), 0);
    ck_assert_str_eq(buf, "aborted 84 restart");
    r = (struct preempt_record){ 0 };
    preempt_record_set_flag_(&r, "none");
    preempt_record_set_u64_(&r, "workers", 3);
    preempt_record_set_text_(&r, "launch", "-");
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_READY, &r, 4, &why), 0);
    ck_assert_str_eq(buf, "restore=none workers=3 launch=-");
    r = (struct preempt_record){ 0 }; /* the job's worker count bounds a worker */
    preempt_record_set_u64_(&r, "w", 9);
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_CLAIM, &r, 4, &why), -EBADMSG);
    ck_assert_str_eq(why, "a worker of the job");
    r = (struct preempt_record){ 0 }; /* an int */
    preempt_record_set_u64_(&r, "code", (uint64_t)-5);
    preempt_record_set_u64_(&r, "w", 1);
    preempt_record_set_text_(&r, "message", "disk full");
    ck_assert_int_eq(preempt_record_format_(&v, PREEMPT_KEY_ERROR, &r, 4, &why), 0);
    ck_assert_str_eq(buf, "-5 1 disk full");
}
END_TEST

/* The notice record's machine (lib/job/pub-internal.h): walked over every
 * (state, input) pair, a newer value is never dropped (from a stale state
 * every answer puts it or keeps it deferred), only a deferred value rides
 * a claim, and a put goes out only where no put is on its way. */
START_TEST(test_pub_machine)
{
    unsigned rows = 0;

    for (int s = 0; s < PREEMPT_PUB__COUNT; s++)
        for (int in = 0; in < PREEMPT_PUB_IN__COUNT; in++) {
            enum preempt_pub_state st = (enum preempt_pub_state)s;
            bool listed;
            enum preempt_pub_action a = preempt_pub_step_(&st, (enum preempt_pub_input)in, &listed);
            bool stale = s == PREEMPT_PUB_PUTTING_STALE || s == PREEMPT_PUB_CARRIED_STALE;
            bool busy = s == PREEMPT_PUB_PUTTING || s == PREEMPT_PUB_PUTTING_STALE || s == PREEMPT_PUB_CARRIED ||
                        s == PREEMPT_PUB_CARRIED_STALE;
            bool answer = in == PREEMPT_PUB_IN_PUT_OK || in == PREEMPT_PUB_IN_PUT_FAILED ||
                          in == PREEMPT_PUB_IN_CLAIM_WON || in == PREEMPT_PUB_IN_CLAIM_LOST ||
                          in == PREEMPT_PUB_IN_CLAIM_FAILED;

            rows += listed;
            if (!listed) {
                ck_assert_int_eq(st, s); /* ignored: nothing changes */
                ck_assert_int_eq(a, PREEMPT_PUB_DO_NONE);
                continue;
            }
            if (stale && listed)
                ck_assert_msg(st == PREEMPT_PUB_DEFERRED || (int)st == s || a == PREEMPT_PUB_DO_PUT,
                              "%s --%s--> %s drops the newer value", preempt_decl_state_(&preempt_pub_decl_, (unsigned)s),
                              preempt_decl_input_(&preempt_pub_decl_, (unsigned)in),
                              preempt_decl_state_(&preempt_pub_decl_, st));
            if (a == PREEMPT_PUB_DO_CARRY)
                ck_assert(s == PREEMPT_PUB_DEFERRED && in == PREEMPT_PUB_IN_CLAIM_SENT);
            if (a == PREEMPT_PUB_DO_PUT) /* one put at a time: only where none is on its way, or it was just answered */
                ck_assert(!busy || answer);
            if (a == PREEMPT_PUB_DO_PUT)
                ck_assert_int_eq(st, PREEMPT_PUB_PUTTING);
        }
    ck_assert_uint_eq(rows, 22); /* the table's rows, each a distinct pair */
    ck_assert_str_eq(preempt_decl_state_(&preempt_pub_decl_, PREEMPT_PUB_IN_CLAIM), "in-claim");
}
END_TEST

/* The claim's machine (claim-internal.h), every (state, input) pair: a
 * claim goes only as "send" into sent, a new lease is asked for only into
 * await-lease, only an answer that says so makes this worker the holder,
 * every answer is taken in any state (a claim may go twice), a notice
 * waits for a claim on its way, and the holder stops holding when its
 * claim goes or the episode ends. */
START_TEST(test_claim_machine)
{
    const struct preempt_decl *m = &preempt_claim_decl_;
    unsigned rows = 0;

    for (unsigned s = 0; s < PREEMPT_CLAIM__COUNT; s++)
        for (unsigned in = 0; in < PREEMPT_CLAIM_IN__COUNT; in++) {
            unsigned st = s;
            bool listed;
            unsigned a = preempt_decl_step_(m, &st, in, &listed);

            rows += listed;
            if (!listed) {
                ck_assert_uint_eq(st, s);
                ck_assert_uint_eq(a, PREEMPT_CLAIM_DO_NONE);
            }
            ck_assert_msg((a == PREEMPT_CLAIM_DO_SEND) == (listed && st == PREEMPT_CLAIM_SENT),
                          "%s --%s--> %s (%s)", preempt_decl_state_(m, s), preempt_decl_input_(m, in),
                          preempt_decl_state_(m, st), preempt_decl_action_(m, a));
            ck_assert((a == PREEMPT_CLAIM_DO_REGRANT) == (in == PREEMPT_CLAIM_IN_STALE_LEASE));
            if (st == PREEMPT_CLAIM_HELD && s != PREEMPT_CLAIM_HELD)
                ck_assert_uint_eq(in, PREEMPT_CLAIM_IN_WON);
            if (in == PREEMPT_CLAIM_IN_WON || in == PREEMPT_CLAIM_IN_STALE_LEASE || in == PREEMPT_CLAIM_IN_UNREADABLE)
                ck_assert(listed);
            if (in == PREEMPT_CLAIM_IN_LOST || in == PREEMPT_CLAIM_IN_GONE || in == PREEMPT_CLAIM_IN_NEXT_EPISODE)
                ck_assert_uint_ne(st, PREEMPT_CLAIM_HELD);
        }
    ck_assert_uint_eq(rows, m->n_rows); /* each row a distinct pair */
    {
        unsigned st = PREEMPT_CLAIM_SENT;
        bool listed;

        ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_CLAIM_IN_NOTICE, &listed), PREEMPT_CLAIM_DO_NONE);
        ck_assert(!listed); /* its own claim may not have landed yet */
        ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_CLAIM_IN_SEND, &listed), PREEMPT_CLAIM_DO_SEND);
    }
    ck_assert_str_eq(preempt_decl_state_(m, PREEMPT_CLAIM_AWAIT_LEASE), "await-lease");
    ck_assert_ptr_eq(preempt_decls_[1], m);
}
END_TEST

/* The membership's machine (membership-internal.h): alive/<me> is put
 * again only where it stands no more (a new lease, or a last save that was
 * not the last), the lease is revoked only by a member that leaves (one
 * that departed with its last report leaves it, and its claim, to end by
 * themselves), and nothing leaves "left". */
START_TEST(test_membership_machine)
{
    const struct preempt_decl *m = &preempt_mship_decl_;

    for (unsigned s = 0; s < PREEMPT_MSHIP__COUNT; s++)
        for (unsigned in = 0; in < PREEMPT_MSHIP_IN__COUNT; in++) {
            unsigned st = s;
            bool listed;
            unsigned a = preempt_decl_step_(m, &st, in, &listed);

            if (a == PREEMPT_MSHIP_DO_PUT_ALIVE)
                ck_assert(st == PREEMPT_MSHIP_MEMBER &&
                          (in == PREEMPT_MSHIP_IN_GRANTED || in == PREEMPT_MSHIP_IN_NEXT_EPISODE));
            ck_assert((a == PREEMPT_MSHIP_DO_REVOKE) == (s == PREEMPT_MSHIP_MEMBER && in == PREEMPT_MSHIP_IN_LEAVE));
            if (s == PREEMPT_MSHIP_LEFT)
                ck_assert(!listed && st == s);
            if (in == PREEMPT_MSHIP_IN_LEAVE && s != PREEMPT_MSHIP_LEFT)
                ck_assert_uint_eq(st, PREEMPT_MSHIP_LEFT);
        }
    {
        unsigned st = PREEMPT_MSHIP_DEPARTED;
        bool listed;

        ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_MSHIP_IN_GRANTED, &listed), PREEMPT_MSHIP_DO_NONE);
        ck_assert(!listed); /* a new lease does not bring back a membership that went with the last report */
    }
    ck_assert(m->terminal == 1u << PREEMPT_MSHIP_LEFT);
}
END_TEST

/* Every (state, input) pair of every declared machine is decided: a row,
 * a declared ignored pair with its reason, or a terminal state's
 * (preempt_decl_check_, which fsmdump --check runs). A machine with one
 * declared pair dropped, or with a row also declared ignored, fails the
 * check and names the pair. */
struct problems {
    unsigned n;
    char last[320];
};

static void take_problem(const char *problem, void *arg)
{
    struct problems *p = arg;

    p->n++;
    snprintf(p->last, sizeof(p->last), "%s", problem);
}

START_TEST(test_decl_every_pair_decided)
{
    unsigned machines = 0;

    for (const struct preempt_decl *const *m = preempt_decls_; *m; m++, machines++) {
        struct problems p = { 0 };
        size_t pairs = 0;

        ck_assert_msg(preempt_decl_check_(*m, take_problem, &p) == 0, "%s: %s", (*m)->name, p.last);
        for (unsigned st = 0; st < (*m)->n_states; st++)
            for (unsigned in = 0; in < (*m)->n_inputs; in++) {
                unsigned to = st;
                bool listed;
                const char *why = preempt_decl_why_ignored_(*m, st, in);

                (void)preempt_decl_step_(*m, &to, in, &listed);
                ck_assert_msg(listed == (why == NULL), "%s: (%s, %s)", (*m)->name, preempt_decl_state_(*m, st),
                              preempt_decl_input_(*m, in));
                pairs += why != NULL;
            }
        ck_assert_uint_eq(pairs + (*m)->n_rows, (size_t)(*m)->n_states * (*m)->n_inputs);
    }
    ck_assert_uint_eq(machines, 15);
    {
        struct preempt_decl m = preempt_shape_decl_; /* one declared pair: (unwritten, rejoined) */
        struct preempt_decl_ignore wrong[1];
        struct problems p = { 0 };

        ck_assert_uint_eq(m.n_ignored, 1);
        m.n_ignored = 0;
        ck_assert_uint_eq(preempt_decl_check_(&m, take_problem, &p), 1);
        ck_assert_str_eq(p.last, "shape: (unwritten, rejoined) is neither a row nor declared ignored");
        ck_assert_ptr_null(preempt_decl_why_ignored_(&m, PREEMPT_SHAPE_UNWRITTEN, PREEMPT_SHAPE_IN_REJOINED));
        wrong[0] = m.ignored[0];
        wrong[0].states |= 1u << PREEMPT_SHAPE_WRITTEN; /* (written, rejoined) is a row */
        m.ignored = wrong;
        m.n_ignored = 1;
        p.n = 0;
        ck_assert_uint_eq(preempt_decl_check_(&m, take_problem, &p), 1);
        ck_assert_str_eq(p.last, "shape: (written, rejoined) is a row, and declared ignored");
    }
    {
        struct preempt_decl m = preempt_mship_decl_; /* left is terminal: its pairs need no entry */
        struct preempt_decl_ignore extra[8];
        struct problems p = { 0 };

        ck_assert_str_eq(preempt_decl_why_ignored_(&m, PREEMPT_MSHIP_LEFT, PREEMPT_MSHIP_IN_LEAVE),
                         "a terminal state: the machine has ended");
        ck_assert_uint_lt(m.n_ignored, 8);
        memcpy(extra, m.ignored, m.n_ignored * sizeof(extra[0]));
        extra[m.n_ignored] = (struct preempt_decl_ignore){ PREEMPT_MSHIP_IN_LEAVE, 1u << PREEMPT_MSHIP_LEFT, "left" };
        m.ignored = extra;
        m.n_ignored++;
        ck_assert_uint_eq(preempt_decl_check_(&m, take_problem, &p), 1);
        ck_assert_str_eq(p.last, "membership: (left, leave) is declared ignored, but a terminal state ignores every "
                                 "input already");
    }
}
END_TEST

/* The links (links-internal.h): the table is whole (every running
 * machine's input has a link that posts it, every row names an input its
 * machine has), and a link declares exactly its rows: the coordinator's
 * post of an input its link does not declare is a bug it counts. */
START_TEST(test_links_declared)
{
    struct problems p = { 0 };

    ck_assert_msg(preempt_link_check_(take_problem, &p) == 0, "%s", p.last);
    ck_assert(preempt_link_posts_(PREEMPT_LINK_GRANTED, PREEMPT_LINK_M_CLAIM, PREEMPT_CLAIM_IN_GRANTED));
    ck_assert(!preempt_link_posts_(PREEMPT_LINK_GRANTED, PREEMPT_LINK_M_CLAIM, PREEMPT_CLAIM_IN_GONE));
    ck_assert(preempt_link_posts_(PREEMPT_LINK_DECISION, PREEMPT_LINK_M_HANDLER, PREEMPT_EV_CKPT_COMMITTED));
    ck_assert(!preempt_link_posts_(PREEMPT_LINK_TICK, PREEMPT_LINK_M_HANDLER, PREEMPT_EV_CKPT_COMMITTED));
    ck_assert_str_eq(preempt_link_machine_name_(PREEMPT_LINK_M_MSHIP), "membership");
    ck_assert_str_eq(preempt_link_input_name_(PREEMPT_LINK_M_HANDLER, PREEMPT_EV_PEER_NOTICE), "peer-notice");
    ck_assert_str_eq(preempt_links_[PREEMPT_LINK_REGRANT].name, "regrant");
    ck_assert_uint_eq(preempt_coord_link_bugs_(NULL), 0);
}
END_TEST

/* The coordinator's core runs to completion (coord-state.h): every output
 * of one input is made before the shell runs any of them, so an input
 * that running one causes (the machine's effect inside a post, a refused
 * request's failure) enters the core after its step, never inside it.
 * Here a re-read brings two peers' notices in one step (two posts), and
 * running the first post feeds the core a step's time, as the handler's
 * machine feeds it an effect: the second post must be made before it.
 * And the re-read is taken in the order the records were written. */
static struct {
    char log[64];
    unsigned n, posts;
    int worker[8]; /* the peer notices posted: whose */
    unsigned claims; /* requests that write the episode's claim */
    struct preempt_coord *c;
} rtc;

static void rtc_add(char what)
{
    if (rtc.n < sizeof(rtc.log) - 1)
        rtc.log[rtc.n++] = what;
}

static bool names_claim(const char *key)
{
    return key && strlen(key) > 6 && !strcmp(key + strlen(key) - 6, "/claim");
}

static void rtc_request(const struct preempt_etcd_req *req)
{
    bool claim = names_claim(req->key);

    for (size_t i = 0; i < req->n_ok; i++)
        claim = claim || names_claim(req->ok[i].key);
    rtc.claims += claim;
}

/* The port: requests never answered (counted), the records' watch, no timer. */
static struct silent_port rtc_port = { .wall_ms = 1000000, .on_request = rtc_request };

static uint64_t rtc_now(void *arg)
{
    (void)arg;
    return 50;
}

static void rtc_post(const struct preempt_event *ev, void *arg)
{
    (void)arg;
    rtc_add('P');
    if (ev->kind == PREEMPT_EV_PEER_NOTICE && rtc.posts < 8)
        rtc.worker[rtc.posts] = (int)ev->u.peer_notice.worker;
    if (rtc.posts++ == 0)
        preempt_coord_step_(rtc.c, 600000); /* a long step: the core's STEP input */
}

static void rtc_in(const struct preempt_coord_in *in, unsigned depth, void *arg)
{
    (void)in, (void)arg;
    rtc_add(depth ? 'i' : 'I');
}

static void rtc_out(const struct preempt_coord_out *out, unsigned depth, void *arg)
{
    (void)arg;
    if (out->kind == PREEMPT_COORD_OUT_POST)
        rtc_add(depth ? 'p' : 'O');
}

/* A coordinator of job "job" (worker 0 of 3, incarnation 7) on the silent port,
 * with rtc cleared; posts from the n_posts-th on feed nothing. */
static void rtc_start(const struct preempt_coord_ops *ops, unsigned n_posts)
{
    struct preempt_coord_cfg cfg = { .job = "job", .worker = 0, .workers = 3, .lease_ttl_s = 10, .give_up_ms = 1000 };
    struct preempt_coord_join join = { .incarnation = 7, .lease = 99 };

    memset(&rtc, 0, sizeof(rtc));
    rtc.posts = n_posts;
    ck_assert_int_eq(preempt_coord_new_io_(&silent_io, &rtc_port, &cfg, &join, ops, NULL, &rtc.c), 0);
}

START_TEST(test_coord_runs_to_completion)
{
    struct preempt_coord_ops ops = { .post = rtc_post, .now_ms = rtc_now, .on_input = rtc_in, .on_output = rtc_out };
    struct preempt_etcd_kv kvs[] = {
        { .key = JOBP "7/e0/notice/1", .value = "2000000 signal", .create_rev = 6, .mod_rev = 6 },
        { .key = JOBP "7/e0/notice/2", .value = "2000000 gce", .create_rev = 5, .mod_rev = 5 },
    };

    rtc_start(&ops, 0);
    ck_assert_ptr_nonnull(rtc_port.ops[0]);
    rtc.n = 0;
    rtc_port.ops[0]->on_reset(kvs, 2, 6, 0, rtc_port.arg[0]);
    rtc.log[rtc.n] = '\0';
    /* the re-read (I) makes both posts (O O), then they run (P P); the
     * step's time the first one feeds (i) comes after both were made */
    ck_assert_str_eq(rtc.log, "IOOPiP");
    /* a re-read comes in the keys' order; the core takes it in the order
     * the records were written, as the watch's stream would have brought
     * them (worker 2's notice, then worker 1's) */
    ck_assert_int_eq(rtc.worker[0], 2);
    ck_assert_int_eq(rtc.worker[1], 1);
    ck_assert_uint_eq(preempt_coord_link_bugs_(rtc.c), 0);
    preempt_coord_free_(rtc.c);
}
END_TEST

/* A full read applies what changed since the records were last read (a
 * re-read while the watch is down, once a tick, brings the same records
 * again): garbage is logged once, not at every read, and a record read
 * again is not judged beside a stale value of one written since. Another
 * store (another cluster id), or one that went back (its revision below
 * the last read's), is read whole. */
static unsigned rtc_ignored;

static void rtc_log(int level, const char *msg, void *arg)
{
    (void)level, (void)arg;
    rtc_ignored += strstr(msg, "ignoring ") != NULL;
}

START_TEST(test_coord_reread_applies_changes)
{
    struct preempt_coord_ops ops = { .post = rtc_post, .now_ms = rtc_now, .log = rtc_log };
    struct preempt_etcd_kv kvs[] = {
        { .key = JOBP "7/e0/notice/2", .value = "zzz not-a-deadline", .create_rev = 5, .mod_rev = 5 },
        { .key = JOBP "7/e0/notice/1", .value = "2000000 signal", .create_rev = 15, .mod_rev = 15 },
    };

    rtc_ignored = 0;
    rtc_start(&ops, 1); /* the posts feed nothing */
    rtc_port.ops[0]->on_reset(kvs, 1, 10, 5, rtc_port.arg[0]);
    ck_assert_uint_eq(rtc_ignored, 1);
    rtc_port.ops[0]->on_reset(kvs, 2, 20, 5, rtc_port.arg[0]); /* the garbage again, and a notice written since */
    ck_assert_uint_eq(rtc_ignored, 1);
    ck_assert_int_eq(rtc.worker[1], 1); /* the notice was posted */
    rtc_port.ops[0]->on_reset(kvs, 1, 30, 6, rtc_port.arg[0]); /* another store (cluster 6), further on: read whole */
    ck_assert_uint_eq(rtc_ignored, 2);
    kvs[0].create_rev = kvs[0].mod_rev = 2;
    rtc_port.ops[0]->on_reset(kvs, 1, 3, 6, rtc_port.arg[0]); /* a store that went back: read whole */
    ck_assert_uint_eq(rtc_ignored, 3);
    ck_assert_uint_eq(preempt_coord_link_bugs_(rtc.c), 0);
    preempt_coord_free_(rtc.c);
}
END_TEST

/* A worker that reads, in one read, a record that ends the episode (a
 * peer lost, an abort, the job's error) and then a notice does not claim
 * the episode: its workers stop, and the read comes before its machine
 * has taken the news. Without an ending record it claims. */
START_TEST(test_coord_no_claim_when_ending)
{
    struct preempt_coord_ops ops = { .post = rtc_post, .now_ms = rtc_now };
    struct preempt_etcd_kv notice = { .key = JOBP "7/e0/notice/1", .value = "2000000 signal", .create_rev = 6,
                                      .mod_rev = 6 };
    static const struct {
        const char *key, *value;
        bool claims;
    } cases[] = {
        { JOBP "7/e0/lost", "2", false },
        { JOBP "7/decision/e0/r0", "aborted 60 2", false },
        { JOBP "7/error", "-5 2 disk full", false },
        { JOBP "7/e0/r0/agreed", "60", true }, /* a round's step alone: the episode goes on */
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct preempt_etcd_kv kvs[2] = { { .key = (char *)cases[i].key, .value = (char *)cases[i].value,
                                            .create_rev = 5, .mod_rev = 5 },
                                          notice };

        rtc_start(&ops, 1); /* the posts feed nothing */
        rtc_port.ops[0]->on_reset(kvs, 2, 6, 0, rtc_port.arg[0]);
        ck_assert_msg((rtc.claims > 0) == cases[i].claims, "%s = %s: %u claims", cases[i].key, cases[i].value,
                      rtc.claims);
        ck_assert_uint_eq(preempt_coord_link_bugs_(rtc.c), 0);
        preempt_coord_free_(rtc.c);
    }
}
END_TEST

/* The garbage remembered in create-if-absent slots (coord-state.h): a
 * create compares with the garbage's revision, not its absence; a new
 * episode forgets its slots but the incarnation's error; a full table
 * gives up its spare; a key no slot can hold, or garbage of no known
 * revision, is not remembered (its create compares with absence). */
static int64_t slot_rev(const struct preempt_coord *c, const char *key)
{
    return coord_slot(c, key);
}

START_TEST(test_junk_slots)
{
    struct preempt_coord *c = calloc(1, sizeof(*c));
    char key[PREEMPT_KEY_MAX], ekey[PREEMPT_KEY_MAX], huge[PREEMPT_KEY_MAX + 8];

    ck_assert_ptr_nonnull(c);
    (void)snprintf(c->jobp, sizeof(c->jobp), "/preempt/j/");
    c->view.inc = 3;
    c->view.ep = 1;
    CKEY(c, ekey, ERROR);
    ck_assert_int_eq(slot_rev(c, ekey), 0);
    coord_junk_set(c, ekey, 5);
    ck_assert_int_eq(slot_rev(c, ekey), 5);
    for (unsigned k = 0; k < 2; k++) {
        CKEY(c, key, DECISION, .round = k);
        coord_junk_set(c, key, 6 + k);
        CKEY(c, key, AGREED, .round = k);
        coord_junk_set(c, key, 8 + k);
    }
    CKEY(c, key, CLAIM);
    coord_junk_set(c, key, 10);
    coord_junk_set(c, key, 11); /* written again: its latest revision */
    ck_assert_int_eq(slot_rev(c, key), 11);
    coord_junk_clear_episode(c);
    ck_assert_int_eq(slot_rev(c, ekey), 5);
    ck_assert_int_eq(slot_rev(c, key), 0);
    CKEY(c, key, DECISION, .round = 1);
    ck_assert_int_eq(slot_rev(c, key), 0);
    /* more slots than the table holds: the spare goes, the others stay */
    for (unsigned k = 0; k < JUNK_MAX + 2; k++) {
        c->view.ep = 10 + k;
        CKEY(c, key, CLAIM);
        coord_junk_set(c, key, 100 + k);
        ck_assert_int_eq(slot_rev(c, key), 100 + k);
    }
    ck_assert_int_eq(slot_rev(c, ekey), 5);
    c->view.ep = 10;
    CKEY(c, key, CLAIM);
    ck_assert_int_eq(slot_rev(c, key), 100);
    /* a cleared slot compares with absence again */
    coord_junk_clear(c, key);
    ck_assert_int_eq(slot_rev(c, key), 0);
    coord_junk_set(c, key, 0);
    ck_assert_int_eq(slot_rev(c, key), 0);
    memset(huge, 'k', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    coord_junk_set(c, huge, 7);
    ck_assert_int_eq(slot_rev(c, huge), 0);
    coord_junk_clear(c, NULL);
    ck_assert_int_eq(slot_rev(c, ekey), 0);
    free(c);
}
END_TEST

/* The membership lease's machine (lease-internal.h): a grant goes only
 * from kept, whatever asks for it (a step that outgrew the lease, a
 * keep-alive that found it ended, the claim's machine), so one is on its
 * way at a time; its answer, either way, brings the lease back to kept.
 * A keep-alive's answer is read by one pure function. */
START_TEST(test_lease_machine)
{
    const struct preempt_decl *m = &preempt_lease_decl_;

    for (unsigned s = 0; s < PREEMPT_LEASE__COUNT; s++)
        for (unsigned in = 0; in < PREEMPT_LEASE_IN__COUNT; in++) {
            unsigned st = s;
            bool listed;
            unsigned a = preempt_decl_step_(m, &st, in, &listed);
            bool asks = in == PREEMPT_LEASE_IN_GREW || in == PREEMPT_LEASE_IN_EXPIRED || in == PREEMPT_LEASE_IN_WANTED;

            ck_assert((a == PREEMPT_LEASE_DO_GRANT) == (s == PREEMPT_LEASE_KEPT && asks));
            if (a == PREEMPT_LEASE_DO_GRANT)
                ck_assert_uint_eq(st, PREEMPT_LEASE_GRANTING);
            if (s == PREEMPT_LEASE_GRANTING)
                ck_assert_uint_eq(st, asks ? PREEMPT_LEASE_GRANTING : PREEMPT_LEASE_KEPT);
            if (s == PREEMPT_LEASE_KEPT && !asks)
                ck_assert(!listed); /* an answer nobody asked for changes nothing */
        }
    ck_assert_uint_eq(m->terminal, 0);
    ck_assert_int_eq(preempt_keep_answer_(0, 10), PREEMPT_KEEP_KEPT);
    ck_assert_int_eq(preempt_keep_answer_(0, 1), PREEMPT_KEEP_KEPT);
    ck_assert_int_eq(preempt_keep_answer_(0, 0), PREEMPT_KEEP_EXPIRED);
    ck_assert_int_eq(preempt_keep_answer_(0, -1), PREEMPT_KEEP_EXPIRED);
    ck_assert_int_eq(preempt_keep_answer_(-ETIMEDOUT, 0), PREEMPT_KEEP_FAILED);
    ck_assert_int_eq(preempt_keep_answer_(-ECONNREFUSED, 10), PREEMPT_KEEP_FAILED);
    ck_assert_str_eq(preempt_keep_says_name_(PREEMPT_KEEP_EXPIRED), "expired");
}
END_TEST

/* The watch's machine (watch-internal.h): a tick reads the records only
 * while the watch is down and no read is on its way; a read is applied
 * only while the watch is still down (one that comes after it is back is
 * dropped: the watch re-read the records itself); a watch going down
 * never sends anything by itself. The roll call: one read at a time. */
START_TEST(test_watch_machine)
{
    const struct preempt_decl *m = &preempt_watch_decl_, *r = &preempt_roll_decl_;

    ck_assert_uint_eq(PREEMPT_WATCH_BLIND, 0); /* not up before the watch says so */
    for (unsigned s = 0; s < PREEMPT_WATCH__COUNT; s++)
        for (unsigned in = 0; in < PREEMPT_WATCH_IN__COUNT; in++) {
            unsigned st = s;
            bool listed;
            unsigned a = preempt_decl_step_(m, &st, in, &listed);

            ck_assert((a == PREEMPT_WATCH_DO_READ) == (s == PREEMPT_WATCH_BLIND && in == PREEMPT_WATCH_IN_TICK));
            ck_assert((a == PREEMPT_WATCH_DO_APPLY) == (s == PREEMPT_WATCH_READING && in == PREEMPT_WATCH_IN_READ));
            if (in == PREEMPT_WATCH_IN_UP)
                ck_assert_uint_eq(st, PREEMPT_WATCH_WATCHING);
            if (in == PREEMPT_WATCH_IN_DOWN)
                ck_assert_uint_eq(st, s == PREEMPT_WATCH_WATCHING ? PREEMPT_WATCH_BLIND : s);
            if (s == PREEMPT_WATCH_WATCHING && in != PREEMPT_WATCH_IN_DOWN)
                ck_assert(!listed); /* ticks and late answers change nothing */
            if (s == PREEMPT_WATCH_READING && in == PREEMPT_WATCH_IN_TICK)
                ck_assert(!listed && st == PREEMPT_WATCH_READING); /* one read at a time */
        }
    ck_assert_uint_eq(m->terminal, 0);
    for (unsigned s = 0; s < PREEMPT_ROLL__COUNT; s++)
        for (unsigned in = 0; in < PREEMPT_ROLL_IN__COUNT; in++) {
            unsigned st = s;
            bool listed;
            unsigned a = preempt_decl_step_(r, &st, in, &listed);

            bool on = preempt_roll_trained_on_(s), reading = s == PREEMPT_ROLL_READING || s == PREEMPT_ROLL_ON_READING;
            bool now_on = preempt_roll_trained_on_(st), now_reading = st == PREEMPT_ROLL_READING ||
                                                                      st == PREEMPT_ROLL_ON_READING;

            /* one read at a time, whatever the reports mean */
            ck_assert((a == PREEMPT_ROLL_DO_READ) == (!reading && in == PREEMPT_ROLL_IN_DUE));
            ck_assert(now_reading == (in == PREEMPT_ROLL_IN_DUE      ? true
                                      : in == PREEMPT_ROLL_IN_ANSWERED ? false
                                                                       : reading));
            /* the first round's reports stop counting at a commit after
             * which they train on, until the next episode; a read on its
             * way stays on its way */
            ck_assert(now_on == (in == PREEMPT_ROLL_IN_TRAINS_ON       ? true
                                 : in == PREEMPT_ROLL_IN_NEXT_EPISODE ? false
                                                                      : on));
        }
    ck_assert_uint_eq(PREEMPT_ROLL_IDLE, 0); /* an episode starts with its first round open */
    ck_assert(!preempt_roll_trained_on_(PREEMPT_ROLL_IDLE) && !preempt_roll_trained_on_(PREEMPT_ROLL_READING));
    /* start-up's awaited record: the watch's own table, under its own name */
    ck_assert_str_eq(preempt_await_decl_.name, "await");
    ck_assert_uint_eq(preempt_await_decl_.n_rows, m->n_rows);
    ck_assert(!memcmp(preempt_await_decl_.rows, m->rows, m->n_rows * sizeof(*m->rows)));
}
END_TEST

/* The episode's machine (episode-internal.h): the machine is told of a
 * withdrawal only from an episode under way, once until a notice stands
 * again (or once more when the round commits without this worker's own
 * notice), and an episode that ends leaves nothing behind. */
/* preempt-launch's outcome (outcome-internal.h): the exit code a sequence
 * of worker exits and regroups gives. An application's code is taken back
 * by the regroup its peer's crash causes, and what was restartable stays;
 * a failure stays whatever follows. */
static int launch_code(const enum preempt_out_input *in, size_t n)
{
    unsigned st = PREEMPT_OUT_CLEAN;
    bool listed;

    for (size_t i = 0; i < n; i++)
        (void)preempt_decl_step_(&preempt_out_decl_, &st, in[i], &listed);
    return preempt_out_code_((enum preempt_out_state)st, 42);
}

/* How a start-up phase ends (phase-internal.h): the done callback runs
 * once, only from the loop's end (never from finish itself, inside the
 * client's callback), and a lease is given back only when asked, before
 * the release. */
/* A join attempt's answer (joining-internal.h): judged in one order (an
 * applied join wins; a counter that moved on outranks the rest; a held
 * index outranks the incarnation's progress), and a worker takes an
 * earlier process's place only from an incarnation still starting, and
 * keeps it only while its attempts answer in that incarnation: one that
 * moved on, never started or started makes it an ordinary joiner again
 * (the flag this table replaced stayed set for the rest of the phase). */
START_TEST(test_join_attempt)
{
    const struct preempt_decl *m = &preempt_attempt_decl_;
    static const struct {
        struct preempt_attempt_answer a;
        enum preempt_attempt_input want;
    } judged[] = {
        { { .applied = true, .mine = true, .ready = true, .restoring = true }, PREEMPT_ATTEMPT_IN_APPLIED },
        { { .counter_is_inc = false, .mine = true, .mine_ours = true, .ready = true }, PREEMPT_ATTEMPT_IN_MOVED_ON },
        { { .counter_is_inc = true, .mine = true, .mine_ours = true, .ready = true, .restoring = true },
          PREEMPT_ATTEMPT_IN_OWN_EARLIER },
        { { .counter_is_inc = true, .mine = true, .ready = true, .restoring = true }, PREEMPT_ATTEMPT_IN_HELD },
        { { .counter_is_inc = true }, PREEMPT_ATTEMPT_IN_NOT_STARTED },
        { { .counter_is_inc = true, .ready = true, .restoring = true }, PREEMPT_ATTEMPT_IN_STILL_STARTING },
        { { .counter_is_inc = true, .ready = true }, PREEMPT_ATTEMPT_IN_STARTED },
    };
    static const struct {
        size_t n;
        enum preempt_attempt_input in[3];
        enum preempt_attempt_state end;
    } seq[] = {
        { 2, { PREEMPT_ATTEMPT_IN_STILL_STARTING, PREEMPT_ATTEMPT_IN_APPLIED }, PREEMPT_ATTEMPT_TOOK_OVER },
        { 3, { PREEMPT_ATTEMPT_IN_STILL_STARTING, PREEMPT_ATTEMPT_IN_HELD, PREEMPT_ATTEMPT_IN_APPLIED },
          PREEMPT_ATTEMPT_TOOK_OVER },
        { 2, { PREEMPT_ATTEMPT_IN_STILL_STARTING, PREEMPT_ATTEMPT_IN_OWN_EARLIER }, PREEMPT_ATTEMPT_TOOK_OVER },
        { 3, { PREEMPT_ATTEMPT_IN_STILL_STARTING, PREEMPT_ATTEMPT_IN_MOVED_ON, PREEMPT_ATTEMPT_IN_APPLIED },
          PREEMPT_ATTEMPT_JOINED },
        { 3, { PREEMPT_ATTEMPT_IN_STILL_STARTING, PREEMPT_ATTEMPT_IN_STARTED, PREEMPT_ATTEMPT_IN_APPLIED },
          PREEMPT_ATTEMPT_JOINED },
        { 3, { PREEMPT_ATTEMPT_IN_STILL_STARTING, PREEMPT_ATTEMPT_IN_NOT_STARTED, PREEMPT_ATTEMPT_IN_APPLIED },
          PREEMPT_ATTEMPT_JOINED },
        { 2, { PREEMPT_ATTEMPT_IN_NOT_STARTED, PREEMPT_ATTEMPT_IN_APPLIED }, PREEMPT_ATTEMPT_JOINED },
        { 1, { PREEMPT_ATTEMPT_IN_OWN_EARLIER }, PREEMPT_ATTEMPT_JOINED },
    };

    for (size_t i = 0; i < sizeof(judged) / sizeof(judged[0]); i++)
        ck_assert_msg(preempt_attempt_judge_(&judged[i].a) == judged[i].want, "answer %zu: %s", i,
                      preempt_decl_input_(m, preempt_attempt_judge_(&judged[i].a)));
    for (size_t k = 0; k < sizeof(seq) / sizeof(seq[0]); k++) {
        unsigned st = PREEMPT_ATTEMPT_TRYING;
        bool listed;

        for (size_t i = 0; i < seq[k].n; i++)
            (void)preempt_decl_step_(m, &st, seq[k].in[i], &listed);
        ck_assert_msg(st == seq[k].end, "sequence %zu ends %s", k, preempt_decl_state_(m, st));
    }
    /* a member's phase takes no more answers: nothing moves it */
    for (unsigned i = 0; i < PREEMPT_ATTEMPT_IN__COUNT; i++) {
        unsigned st = PREEMPT_ATTEMPT_TOOK_OVER;
        bool listed;

        ck_assert_uint_eq(preempt_decl_step_(m, &st, i, &listed), PREEMPT_ATTEMPT_DO_NONE);
        ck_assert_uint_eq(st, PREEMPT_ATTEMPT_TOOK_OVER);
    }
}
END_TEST

/* Start-up's driver (lib/job/start.c), over recorded effects: which
 * input each answer is, the error a failure ends with, and the effect run
 * for each action, as the handler and the simulator both run it. */
struct start_log {
    char calls[256];
    int end_r;
    bool end_restored, ended;
    int restore_r;
};

static void sl_add(struct start_log *l, const char *what)
{
    size_t n = strlen(l->calls);

    (void)snprintf(l->calls + n, sizeof(l->calls) - n, "%s%s", n ? " " : "", what);
}

static void sl_join(void *arg)
{
    sl_add(arg, "join");
}

static int sl_restore(void *arg, uint64_t step)
{
    struct start_log *l = arg;
    char what[32];

    (void)snprintf(what, sizeof(what), "restore:%" PRIu64, step);
    sl_add(l, what);
    return l->restore_r;
}

static void sl_report(void *arg, int mine, int err)
{
    char what[32];

    (void)snprintf(what, sizeof(what), "report:%d:%d", mine, err);
    sl_add(arg, what);
}

static void sl_set_aside(void *arg, uint64_t step)
{
    char what[32];

    (void)snprintf(what, sizeof(what), "aside:%" PRIu64, step);
    sl_add(arg, what);
}

static void sl_end(void *arg, int r, bool restored)
{
    struct start_log *l = arg;

    l->ended = true;
    l->end_r = r;
    l->end_restored = restored;
}

static void sl_log(void *arg, int level, const char *line)
{
    if (level >= 3)
        sl_add(arg, "bug");
    (void)line;
}

/* Start-up's step, driven with no port and no clock: the test makes every
 * input (the time included) and reads every output. A phase that begins,
 * is granted a lease, finds no counter and opens the first incarnation
 * asks exactly that of its port; a refused request ends it with the
 * port's reason; its end gives the lease back and then releases it; and
 * the bound, told by the time of a tick, times it out. Fails when the
 * step reaches the port itself (no output) or reads another clock. */
struct su_rec {
    struct preempt_startup_out o[16];
    enum preempt_su_ask_kind rq[16];
    int64_t lease[16];
    size_t n;
};

static void su_sink(void *arg, const struct preempt_startup_out *o)
{
    struct su_rec *r = arg;

    ck_assert_uint_lt(r->n, 16);
    r->o[r->n] = *o;
    r->rq[r->n] = o->ask ? o->ask->kind : (enum preempt_su_ask_kind)-1;
    r->lease[r->n] = o->ask ? o->ask->lease : 0;
    r->o[r->n].ask = NULL, r->o[r->n].key = NULL; /* the step's: live during it only */
    r->n++;
}

static void su_feed(struct join *j, struct su_rec *r, struct preempt_startup_in in)
{
    r->n = 0;
    preempt_startup_input_(j, &in);
}

/* Start-up's wire: each ask as the transaction the protocol needs, and
 * each reply read back as the records it holds, at their places. A join
 * is one transaction (the counter and the worker's slot compared; the two
 * puts and three reads, or the four reads that say what stood in the
 * way); a reply without the reads asked for is refused. */
START_TEST(test_startup_wire)
{
    struct preempt_value member = { .text_ = "pid=1 host=h launch=L workers=2 steps=" }, cur = { .text_ = "3" };
    struct preempt_su_wire w;
    struct preempt_su_answer a;
    const char *why;
    struct preempt_etcd_kv ready = { .key = JOBP "3/ready", .value = "restore=none workers=2 launch=L" },
                           shape = { .key = JOBP "3/shape", .value = "workers=2" },
                           mine = { .key = JOBP "3/w/alive/1", .value = "x", .lease = 9, .create_rev = 40 };
    struct preempt_etcd_res applied[] = { { 0 }, { 0 }, { &ready, 1, 1 }, { NULL, 0, 2 }, { &shape, 1, 1 } },
                            refused[] = { { 0 }, { &mine, 1, 1 }, { 0 }, { 0 } };
    struct preempt_etcd_reply r = { .rev = 41, .succeeded = true, .res = applied, .n_res = 5 };

    ck_assert_int_eq(preempt_su_request_(JOBP, &(struct preempt_su_ask){ .kind = PREEMPT_SU_JOIN, .inc = 3, .worker = 1,
                                                                          .lease = 9, .value = &member,
                                                                          .counter = &cur },
                                         &w),
                     0);
    ck_assert_int_eq(w.req.kind, PREEMPT_ETCD_RQ_TXN);
    ck_assert_uint_eq(w.req.n_cmp, 2);
    ck_assert_str_eq(w.req.cmp[0].key, JOBP "incarnation");
    ck_assert_ptr_eq(w.req.cmp[0].value, &cur);
    ck_assert_str_eq(w.req.cmp[1].key, JOBP "3/w/joined/1"); /* never joined: absent */
    ck_assert_ptr_null(w.req.cmp[1].value);
    ck_assert_uint_eq(w.req.n_ok, 5);
    ck_assert_int_eq(w.req.ok[1].kind, PREEMPT_ETCD_OP_PUT);
    ck_assert_str_eq(w.req.ok[1].key, JOBP "3/w/alive/1");
    ck_assert_int_eq(w.req.ok[1].lease, 9);
    ck_assert_int_eq(w.req.ok[3].kind, PREEMPT_ETCD_OP_COUNT_PREFIX);
    ck_assert_uint_eq(w.req.n_fail, 4);
    ck_assert_str_eq(w.req.fail[3].key, JOBP "3/restored");
    /* a rejoin compares the worker's slot instead */
    ck_assert_int_eq(preempt_su_request_(JOBP, &(struct preempt_su_ask){ .kind = PREEMPT_SU_JOIN, .inc = 3, .worker = 1,
                                                                          .rejoin = true, .value = &member,
                                                                          .counter = &cur },
                                         &w),
                     0);
    ck_assert_str_eq(w.req.cmp[1].key, JOBP "3/w/alive/1");
    /* applied: the barrier's record, the members' count and the shape */
    ck_assert_int_eq(preempt_su_answer_(PREEMPT_STARTUP_IN_JOINED, &r, &a, &why), 0);
    ck_assert(a.done);
    ck_assert_str_eq(a.ready->value, ready.value);
    ck_assert_int_eq(a.count, 2);
    ck_assert_str_eq(a.shape->value, shape.value);
    ck_assert_int_eq(a.rev, 41);
    /* not applied: what stood in its way, absent records with no value */
    r = (struct preempt_etcd_reply){ .rev = 41, .res = refused, .n_res = 4 };
    ck_assert_int_eq(preempt_su_answer_(PREEMPT_STARTUP_IN_JOINED, &r, &a, &why), 0);
    ck_assert(!a.done);
    ck_assert_ptr_null(a.counter->value);
    ck_assert_int_eq(a.mine->lease, 9);
    ck_assert_int_eq(a.mine->create_rev, 40);
    ck_assert_ptr_null(a.ready->value);
    ck_assert_ptr_null(a.restored->value);
    /* applied, but without its reads: refused, saying so */
    r = (struct preempt_etcd_reply){ .succeeded = true, .res = applied, .n_res = 2 };
    ck_assert_int_eq(preempt_su_answer_(PREEMPT_STARTUP_IN_JOINED, &r, &a, &why), -EPROTO);
    ck_assert_ptr_nonnull(strstr(why, "without the reads"));
    /* the barrier's record: write if absent, the start-over request with it when consumed */
    ck_assert_int_eq(preempt_su_request_(JOBP, &(struct preempt_su_ask){ .kind = PREEMPT_SU_READY, .inc = 3,
                                                                          .consume = true, .value = &cur },
                                         &w),
                     0);
    ck_assert_uint_eq(w.req.n_ok, 2);
    ck_assert_int_eq(w.req.ok[1].kind, PREEMPT_ETCD_OP_DELETE);
    ck_assert_str_eq(w.req.ok[1].key, JOBP "start-over");
    ck_assert_str_eq(w.req.fail[0].key, JOBP "3/ready");
}
END_TEST

/* The running coordinator's wire (coord-wire.c): each ask as its etcd
 * request (what the transaction holds, in which branch), and each reply
 * read into its typed answer; a reply without the read asked for is the
 * answer's failure, never a read out of bounds. */
START_TEST(test_coord_wire)
{
    struct preempt_value claim = { .text_ = "w=1" }, step = { .text_ = "20" }, notice = { .text_ = "deadline=5" },
                         shard = { .text_ = "save=3" }, seen = { .text_ = "10" };
    struct preempt_co_wire w;
    struct preempt_co_answer a;
    struct preempt_etcd_kv held = { .key = JOBP "3/e/1/claim", .value = "w=0", .mod_rev = 12 },
                           alive = { .key = JOBP "3/w/alive/0" }, rec = { .key = JOBP "3/e/1/lost", .value = "w=1" };
    struct preempt_etcd_res lost[] = { { &held, 1, 1 }, { 0 } }, counted[] = { { 0 }, { 0 }, { NULL, 0, 2 } },
                            roll[] = { { &alive, 1, 1 }, { 0 }, { 0 }, { 0 } }, read[] = { { &rec, 1, 1 } };
    struct preempt_etcd_reply r = { .rev = 50, .cluster = 7, .res = lost, .n_res = 2 };
    struct preempt_coord_in in;

    /* the claim, with the step it proposes and the notice it carries */
    ck_assert_int_eq(preempt_co_request_(&(struct preempt_co_ask){ .kind = PREEMPT_CO_CLAIM, .lease = 9,
                                                                    .rec = { JOBP "3/e/1/claim", &claim, 33 },
                                                                    .step = { JOBP "3/e/1/r0/agreed", &step, 0 },
                                                                    .notice = { JOBP "3/e/1/notice/1", &notice, 0 } },
                                         &w),
                     0);
    ck_assert_int_eq(w.req.kind, PREEMPT_ETCD_RQ_TXN);
    ck_assert_uint_eq(w.req.n_cmp, 2);
    ck_assert_int_eq(w.req.cmp[0].mod_rev, 33); /* over the garbage seen there */
    ck_assert_ptr_null(w.req.cmp[0].value);
    ck_assert_str_eq(w.req.cmp[1].key, JOBP "3/e/1/r0/agreed");
    ck_assert_uint_eq(w.req.n_ok, 2);
    ck_assert_int_eq(w.req.ok[0].lease, 9);
    ck_assert_ptr_eq(w.req.ok[1].value, &step);
    ck_assert_uint_eq(w.req.n_fail, 2);
    ck_assert_int_eq(w.req.fail[0].kind, PREEMPT_ETCD_OP_GET);
    ck_assert_str_eq(w.req.fail[1].key, JOBP "3/e/1/notice/1");
    /* a claim alone */
    ck_assert_int_eq(preempt_co_request_(&(struct preempt_co_ask){ .kind = PREEMPT_CO_CLAIM,
                                                                    .rec = { JOBP "3/e/1/claim", &claim, 0 } },
                                         &w),
                     0);
    ck_assert_uint_eq(w.req.n_cmp, 1);
    ck_assert_uint_eq(w.req.n_ok, 1);
    ck_assert_uint_eq(w.req.n_fail, 1);
    /* a raise compares with the value seen */
    ck_assert_int_eq(preempt_co_request_(&(struct preempt_co_ask){ .kind = PREEMPT_CO_RAISE, .seen = &seen,
                                                                    .rec = { JOBP "3/e/1/r0/agreed", &step, 0 } },
                                         &w),
                     0);
    ck_assert_ptr_eq(w.req.cmp[0].value, &seen);
    ck_assert_uint_eq(w.req.n_fail, 0);
    /* the final request: its step where free, else the request alone */
    ck_assert_int_eq(preempt_co_request_(&(struct preempt_co_ask){ .kind = PREEMPT_CO_FINAL,
                                                                    .rec = { JOBP "3/e/1/final", &claim, 0 },
                                                                    .step = { JOBP "3/e/1/r1/agreed", &step, 0 } },
                                         &w),
                     0);
    ck_assert_str_eq(w.req.cmp[0].key, JOBP "3/e/1/r1/agreed");
    ck_assert_uint_eq(w.req.n_ok, 2);
    ck_assert_uint_eq(w.req.n_fail, 1);
    ck_assert_str_eq(w.req.fail[0].key, JOBP "3/e/1/final");
    /* a last report ends the membership in the same txn; the count is last */
    ck_assert_int_eq(preempt_co_request_(&(struct preempt_co_ask){ .kind = PREEMPT_CO_REPORT,
                                                                    .rec = { JOBP "3/w/e/1/r0/s/20/0", &shard, 0 },
                                                                    .range = { JOBP "3/w/e/1/r0/s/20/" },
                                                                    .ends = JOBP "3/w/alive/0" },
                                         &w),
                     0);
    ck_assert_uint_eq(w.req.n_ok, 3);
    ck_assert_int_eq(w.req.ok[0].kind, PREEMPT_ETCD_OP_DELETE);
    ck_assert_int_eq(w.req.ok[2].kind, PREEMPT_ETCD_OP_COUNT_PREFIX);
    ck_assert_int_eq(preempt_co_request_(&(struct preempt_co_ask){ .kind = PREEMPT_CO_REPORT,
                                                                    .rec = { JOBP "3/w/e/1/r0/s/20/0", &shard, 0 },
                                                                    .range = { JOBP "3/w/e/1/r0/s/20/" } },
                                         &w),
                     0);
    ck_assert_uint_eq(w.req.n_ok, 2);
    ck_assert_int_eq(w.req.ok[0].kind, PREEMPT_ETCD_OP_PUT);
    /* a read of a span, and of everything under a key */
    ck_assert_int_eq(preempt_co_request_(&(struct preempt_co_ask){ .kind = PREEMPT_CO_READ,
                                                                    .range = { JOBP "3/", JOBP "3/w/" } },
                                         &w),
                     0);
    ck_assert(!w.req.prefix);
    ck_assert_str_eq(w.req.end, JOBP "3/w/");
    ck_assert_int_eq(preempt_co_request_(&(struct preempt_co_ask){ .kind = PREEMPT_CO_READ, .range = { JOBP "3/" } },
                                         &w),
                     0);
    ck_assert(w.req.prefix);
    ck_assert_int_eq(preempt_co_request_(&(struct preempt_co_ask){ .kind = (enum preempt_co_ask_kind)99 }, &w),
                     -EINVAL);

    /* the claim lost: the holder's record, read by the failure branch */
    in = (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_CLAIMED, .reply = &r };
    preempt_co_answer_(&in, &a);
    ck_assert_int_eq(in.status, 0);
    ck_assert_ptr_eq(in.answer, &a);
    ck_assert(!a.done);
    ck_assert_ptr_eq(a.found, &held);
    /* a report's count: its last operation's */
    r = (struct preempt_etcd_reply){ .succeeded = true, .res = counted, .n_res = 3 };
    in = (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_REPORTED, .reply = &r };
    preempt_co_answer_(&in, &a);
    ck_assert_int_eq(a.count, 2);
    /* the roll call: four ranges, or unreadable */
    r = (struct preempt_etcd_reply){ .succeeded = true, .res = roll, .n_res = 4 };
    in = (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_MEMBERS, .reply = &r };
    preempt_co_answer_(&in, &a);
    ck_assert(a.complete);
    ck_assert_uint_eq(a.roll[0].n, 1);
    r.n_res = 3;
    preempt_co_answer_(&in, &a);
    ck_assert(!a.complete);
    ck_assert_int_eq(in.status, 0);
    /* a read: its records, revision and store */
    r = (struct preempt_etcd_reply){ .rev = 50, .cluster = 7, .res = read, .n_res = 1 };
    in = (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_READ, .reply = &r };
    preempt_co_answer_(&in, &a);
    ck_assert_ptr_eq(a.read.kvs, &rec);
    ck_assert_int_eq(a.rev, 50);
    ck_assert_uint_eq(a.cluster, 7);
    /* without the read it asked for: the answer's failure */
    r.n_res = 0;
    in = (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_SHARDS, .reply = &r };
    preempt_co_answer_(&in, &a);
    ck_assert_int_eq(in.status, -EPROTO);
    ck_assert_ptr_nonnull(strstr(in.msg, "without the read"));
    /* a grant's lease; a failed answer is left as it came */
    r = (struct preempt_etcd_reply){ .id = 77, .ttl = 6 };
    in = (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_GRANTED, .reply = &r };
    preempt_co_answer_(&in, &a);
    ck_assert_int_eq(a.lease, 77);
    ck_assert_int_eq(a.ttl_s, 6);
    in = (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_KEPT, .status = -ETIMEDOUT, .msg = "gave up" };
    preempt_co_answer_(&in, &a);
    ck_assert_int_eq(in.status, -ETIMEDOUT);
    ck_assert_str_eq(in.msg, "gave up");
    ck_assert_int_eq(a.count, -1);
}
END_TEST

START_TEST(test_startup_step)
{
    struct preempt_coord_cfg cfg = { .job = "su", .launch = "L", .workers = 1, .lease_ttl_s = 6,
                                     .join_timeout_ms = 5000, .pid = 7, .host = "h" };
    struct preempt_coord_join joined;
    struct su_rec rec = { 0 };
    char msg[256] = "";
    struct join j = { .cfg = &cfg, .sink = su_sink, .sink_arg = &rec, .begin = PREEMPT_STARTUP_JOIN,
                      .bound_ms = 5000, .msg = msg, .msg_size = sizeof(msg), .out = &joined };
    static const struct preempt_etcd_kv none;
    const struct preempt_su_answer granted = { .lease = 77, .found = &none },
                                   empty = { .found = &none, .kvs = &none, .n = 0 };

    ck_assert_int_eq(preempt_startup_init_(&j), 0);
    /* begin at 1000: the timer at the keep-alive (2 s), then the grant */
    su_feed(&j, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_BEGIN, .now_ms = 1000 });
    ck_assert_uint_eq(rec.n, 2);
    ck_assert_int_eq(rec.o[0].kind, PREEMPT_STARTUP_OUT_TIMER);
    ck_assert_uint_eq(rec.o[0].ms, 2000);
    ck_assert_int_eq(rec.o[1].kind, PREEMPT_STARTUP_OUT_REQUEST);
    ck_assert_int_eq(rec.rq[1], PREEMPT_SU_GRANT);
    ck_assert_int_eq(rec.o[1].answer, PREEMPT_STARTUP_IN_GRANTED);
    ck_assert_uint_eq(rec.o[1].ms, 5000); /* bounded by the time left */
    /* granted at 1500: the counter is read, bounded by what is left */
    su_feed(&j, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_GRANTED, .now_ms = 1500,
                                                   .answer = &granted });
    ck_assert_uint_eq(rec.n, 1);
    ck_assert_int_eq(rec.rq[0], PREEMPT_SU_COUNTER);
    ck_assert_int_eq(rec.o[0].answer, PREEMPT_STARTUP_IN_INC);
    ck_assert_uint_eq(rec.o[0].ms, 4500);
    /* no counter: the first incarnation is opened (one transaction) */
    su_feed(&j, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_INC, .now_ms = 1600, .answer = &empty });
    ck_assert_uint_eq(rec.n, 1);
    ck_assert_int_eq(rec.rq[0], PREEMPT_SU_OPEN);
    ck_assert_int_eq(rec.o[0].answer, PREEMPT_STARTUP_IN_OPENED);
    /* the port refused it at once: start-up ends with the port's reason,
     * its end armed at once (from the loop) */
    su_feed(&j, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_OPENED, .now_ms = 1600,
                                                   .status = -EBADMSG, .unsent = true, .msg = "x" });
    ck_assert_uint_eq(rec.n, 1);
    ck_assert_int_eq(rec.o[0].kind, PREEMPT_STARTUP_OUT_TIMER);
    ck_assert_uint_eq(rec.o[0].ms, 1);
    ck_assert_str_eq(msg, preempt_coord_refused_(-EBADMSG));
    /* a late answer asks nothing more */
    su_feed(&j, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_GRANTED, .now_ms = 1601,
                                                   .answer = &granted });
    ck_assert_uint_eq(rec.n, 0);
    /* the end: it failed, so the lease goes back first (1 s bound) ... */
    su_feed(&j, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_TICK, .now_ms = 1601 });
    ck_assert_uint_eq(rec.n, 1);
    ck_assert_int_eq(rec.rq[0], PREEMPT_SU_REVOKE);
    ck_assert_int_eq(rec.lease[0], 77);
    ck_assert_uint_eq(rec.o[0].ms, 1000);
    ck_assert_int_eq(rec.o[0].answer, PREEMPT_STARTUP_IN_REVOKED);
    /* ... a tick meanwhile does nothing ... */
    su_feed(&j, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_TICK, .now_ms = 1700 });
    ck_assert_uint_eq(rec.n, 0);
    /* ... then, from the loop, the release with the phase's status */
    su_feed(&j, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_REVOKED, .now_ms = 1800,
                                                   .status = -ETIMEDOUT });
    ck_assert_uint_eq(rec.n, 1);
    ck_assert_int_eq(rec.o[0].kind, PREEMPT_STARTUP_OUT_TIMER);
    su_feed(&j, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_TICK, .now_ms = 1801 });
    ck_assert_uint_eq(rec.n, 1);
    ck_assert_int_eq(rec.o[0].kind, PREEMPT_STARTUP_OUT_RELEASE);
    ck_assert_int_eq(rec.o[0].status, -EBADMSG);

    /* The bound is the input's time: a tick at the deadline times the
     * phase out, one a millisecond before does not. */
    {
        struct join k = { .cfg = &cfg, .sink = su_sink, .sink_arg = &rec, .begin = PREEMPT_STARTUP_JOIN,
                          .bound_ms = 5000, .msg = msg, .msg_size = sizeof(msg), .out = &joined };

        ck_assert_int_eq(preempt_startup_init_(&k), 0);
        su_feed(&k, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_BEGIN, .now_ms = 0 });
        su_feed(&k, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_TICK, .now_ms = 4999 });
        ck_assert_int_eq(k.end, PREEMPT_PEND_RUNNING);
        su_feed(&k, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_TICK, .now_ms = 5000 });
        ck_assert_int_eq(k.end, PREEMPT_PEND_ENDING);
        ck_assert_int_eq(k.status, -ETIMEDOUT);
        ck_assert_ptr_nonnull(strstr(msg, "not every worker (1) joined incarnation"));
        /* no lease was granted: nothing to give back, the end releases */
        su_feed(&k, &rec, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_TICK, .now_ms = 5001 });
        ck_assert_uint_eq(rec.n, 1);
        ck_assert_int_eq(rec.o[0].kind, PREEMPT_STARTUP_OUT_RELEASE);
        ck_assert_int_eq(rec.o[0].status, -ETIMEDOUT);
    }
    /* an invalid job name is refused before anything runs */
    {
        struct preempt_coord_cfg bad = cfg;
        struct join b = { .cfg = &bad, .sink = su_sink, .sink_arg = &rec, .begin = PREEMPT_STARTUP_JOIN,
                          .msg = msg, .msg_size = sizeof(msg), .out = &joined };

        bad.job = "a b";
        ck_assert_int_eq(preempt_startup_init_(&b), -EINVAL);
    }
}
END_TEST

START_TEST(test_start_driver)
{
    static const struct preempt_start_ops ops = { .join = sl_join, .restore = sl_restore, .report = sl_report,
                                                  .set_aside = sl_set_aside, .end = sl_end, .log = sl_log };
    struct start_log l;
    struct preempt_start s;

#define START(no_store_)                                                                                             \
    do {                                                                                                             \
        memset(&l, 0, sizeof(l));                                                                                    \
        s = (struct preempt_start){ .ops = &ops, .arg = &l, .no_store = (no_store_) };                               \
    } while (0)
    /* restored, and every worker did: training at the step */
    START(false);
    preempt_start_joined_(&s, 0, true, 40);
    ck_assert_str_eq(l.calls, "restore:40 report:0:0");
    ck_assert(!l.ended);
    preempt_start_barrier_(&s, 0, PREEMPT_RESTORE_OK);
    ck_assert(l.ended && l.end_r == 0 && l.end_restored);
    /* nothing in common: fresh; no checkpoint directory: fresh even with a step */
    START(false);
    preempt_start_joined_(&s, 0, false, 0);
    ck_assert(l.ended && l.end_r == 0 && !l.end_restored && !l.calls[0]);
    START(true);
    preempt_start_joined_(&s, 0, true, 40);
    ck_assert(l.ended && l.end_r == 0 && !l.end_restored && !l.calls[0]);
    /* unusable here: reported so; the job's record sets it aside and joins
     * again; nothing left in common then: not recoverable (never step 0) */
    START(false);
    l.restore_r = -EBADMSG;
    preempt_start_joined_(&s, 0, true, 40);
    ck_assert_str_eq(l.calls, "restore:40 report:1:-74");
    preempt_start_barrier_(&s, 0, PREEMPT_RESTORE_UNUSABLE);
    ck_assert_str_eq(l.calls, "restore:40 report:1:-74 aside:40 join");
    ck_assert(!l.ended);
    l.restore_r = 0;
    preempt_start_joined_(&s, 0, true, 30); /* an older step every worker holds */
    preempt_start_barrier_(&s, 0, PREEMPT_RESTORE_OK);
    ck_assert(l.ended && l.end_r == 0 && l.end_restored);
    START(false);
    l.restore_r = -EBADMSG;
    preempt_start_joined_(&s, 0, true, 40);
    preempt_start_barrier_(&s, 0, PREEMPT_RESTORE_UNUSABLE);
    preempt_start_joined_(&s, 0, false, 0);
    ck_assert(l.ended && l.end_r == -ENOTRECOVERABLE);
    /* another worker's restore failed: this one's own error, or -EREMOTEIO */
    START(false);
    preempt_start_joined_(&s, 0, true, 40);
    preempt_start_barrier_(&s, 0, PREEMPT_RESTORE_FAILED);
    ck_assert(l.ended && l.end_r == -EREMOTEIO);
    START(false);
    l.restore_r = -EIO;
    preempt_start_joined_(&s, 0, true, 40);
    ck_assert_str_eq(l.calls, "restore:40 report:2:-5");
    preempt_start_barrier_(&s, 0, PREEMPT_RESTORE_FAILED);
    ck_assert(l.ended && l.end_r == -EIO);
    /* the join's or the barrier's own failure ends start-up with its error */
    START(false);
    preempt_start_joined_(&s, -EACCES, false, 0);
    ck_assert(l.ended && l.end_r == -EACCES && !l.calls[0]);
    START(false);
    preempt_start_joined_(&s, 0, true, 40);
    preempt_start_barrier_(&s, -ETIMEDOUT, 0);
    ck_assert(l.ended && l.end_r == -ETIMEDOUT);
    /* an answer the machine has no row for (a second join's answer while
     * restoring is impossible, but a barrier's while joining) is a bug */
    START(false);
    preempt_start_barrier_(&s, 0, PREEMPT_RESTORE_OK);
    ck_assert(l.ended && l.end_r == -EPROTO);
#undef START
}
END_TEST

/* Joining's machines (joining-internal.h). The offer is made exactly once
 * whatever the order of answers: after the pending checkpoints were
 * resolved when the incarnation counter exists, at once when it does not
 * (no pending record can be trusted then); a join that starts over joins
 * (or opens) again with it. The shape is written at most once until a
 * rejoin makes its write unknown; a shape this worker wrote and finds gone
 * is trusted (the store lost it); a present one is always checked. */
START_TEST(test_joining_machines)
{
    const struct preempt_decl *o = &preempt_offer_decl_, *sh = &preempt_shape_decl_;
    static const enum preempt_offer_input in[][4] = {
        { PREEMPT_OFFER_IN_COUNTER, PREEMPT_OFFER_IN_RESOLVED, PREEMPT_OFFER_IN_COUNTER, PREEMPT_OFFER_IN_NO_COUNTER },
        { PREEMPT_OFFER_IN_NO_COUNTER, PREEMPT_OFFER_IN_COUNTER, PREEMPT_OFFER_IN_RESOLVED, PREEMPT_OFFER_IN_COUNTER },
        { PREEMPT_OFFER_IN_RESOLVED, PREEMPT_OFFER_IN_COUNTER, PREEMPT_OFFER_IN_COUNTER, PREEMPT_OFFER_IN_RESOLVED },
    };
    static const enum preempt_offer_action want[][4] = {
        { PREEMPT_OFFER_DO_RESOLVE, PREEMPT_OFFER_DO_OFFER_JOIN, PREEMPT_OFFER_DO_JOIN, PREEMPT_OFFER_DO_OPEN },
        { PREEMPT_OFFER_DO_OFFER_OPEN, PREEMPT_OFFER_DO_JOIN, PREEMPT_OFFER_DO_NONE, PREEMPT_OFFER_DO_JOIN },
        { PREEMPT_OFFER_DO_NONE, PREEMPT_OFFER_DO_RESOLVE, PREEMPT_OFFER_DO_NONE, PREEMPT_OFFER_DO_OFFER_JOIN },
    };

    for (size_t k = 0; k < sizeof(in) / sizeof(in[0]); k++) {
        unsigned st = PREEMPT_OFFER_NONE, offers = 0;
        bool listed;

        for (size_t i = 0; i < 4; i++) {
            unsigned a = preempt_decl_step_(o, &st, in[k][i], &listed);

            ck_assert_msg(a == want[k][i], "sequence %zu, input %zu: %s", k, i, preempt_decl_action_(o, a));
            offers += a == PREEMPT_OFFER_DO_OFFER_OPEN || a == PREEMPT_OFFER_DO_OFFER_JOIN;
        }
        ck_assert_uint_eq(offers, 1);
        ck_assert_uint_eq(st, PREEMPT_OFFER_MADE);
    }
    for (unsigned s0 = 0; s0 < PREEMPT_OFFER__COUNT; s0++)
        for (unsigned i = 0; i < PREEMPT_OFFER_IN__COUNT; i++) {
            unsigned st = s0;
            bool listed;
            unsigned a = preempt_decl_step_(o, &st, i, &listed);

            if (a == PREEMPT_OFFER_DO_RESOLVE)
                ck_assert(s0 == PREEMPT_OFFER_NONE && i == PREEMPT_OFFER_IN_COUNTER);
            if (s0 == PREEMPT_OFFER_MADE)
                ck_assert_uint_eq(st, PREEMPT_OFFER_MADE); /* made once, for good */
        }
    for (unsigned s0 = 0; s0 < PREEMPT_SHAPE__COUNT; s0++)
        for (unsigned i = 0; i < PREEMPT_SHAPE_IN__COUNT; i++) {
            unsigned st = s0;
            bool listed;
            unsigned a = preempt_decl_step_(sh, &st, i, &listed);

            ck_assert((a == PREEMPT_SHAPE_DO_WRITE) == (s0 == PREEMPT_SHAPE_UNWRITTEN && i == PREEMPT_SHAPE_IN_ABSENT));
            ck_assert((a == PREEMPT_SHAPE_DO_TRUST) == (s0 == PREEMPT_SHAPE_WRITTEN && i == PREEMPT_SHAPE_IN_ABSENT));
            ck_assert((a == PREEMPT_SHAPE_DO_CHECK) == (i == PREEMPT_SHAPE_IN_PRESENT));
            if (i == PREEMPT_SHAPE_IN_REJOINED)
                ck_assert_uint_eq(st, PREEMPT_SHAPE_UNWRITTEN);
        }
    ck_assert(o->terminal == 1u << PREEMPT_OFFER_MADE && sh->terminal == 0);
}
END_TEST

START_TEST(test_phase_end)
{
    const struct preempt_decl *m = &preempt_pend_decl_;
    static const enum preempt_pend_input keep[] = { PREEMPT_PEND_IN_FINISH, PREEMPT_PEND_IN_END_KEEP },
                                         revoke[] = { PREEMPT_PEND_IN_FINISH, PREEMPT_PEND_IN_END_REVOKE,
                                                      PREEMPT_PEND_IN_REVOKED, PREEMPT_PEND_IN_END_REVOKE };
    static const enum preempt_pend_action keep_do[] = { PREEMPT_PEND_DO_RUN_END, PREEMPT_PEND_DO_RELEASE },
                                          revoke_do[] = { PREEMPT_PEND_DO_RUN_END, PREEMPT_PEND_DO_REVOKE,
                                                          PREEMPT_PEND_DO_RUN_END, PREEMPT_PEND_DO_RELEASE };
    unsigned st = PREEMPT_PEND_RUNNING, releases = 0;
    bool listed;

    for (size_t i = 0; i < 2; i++)
        ck_assert_uint_eq(preempt_decl_step_(m, &st, keep[i], &listed), keep_do[i]);
    st = PREEMPT_PEND_RUNNING;
    for (size_t i = 0; i < 4; i++)
        ck_assert_uint_eq(preempt_decl_step_(m, &st, revoke[i], &listed), revoke_do[i]);
    ck_assert_uint_eq(st, PREEMPT_PEND_DONE);
    for (size_t i = 0; i < m->n_rows; i++) {
        releases += m->rows[i].action == PREEMPT_PEND_DO_RELEASE;
        if (m->rows[i].action == PREEMPT_PEND_DO_RELEASE)
            ck_assert_uint_eq(m->rows[i].to, PREEMPT_PEND_DONE);
        ck_assert(!(m->rows[i].input == PREEMPT_PEND_IN_FINISH && m->rows[i].action == PREEMPT_PEND_DO_RELEASE));
    }
    ck_assert_uint_eq(releases, 4);
    st = PREEMPT_PEND_REVOKING; /* while the revoke is on its way, nothing but its answer moves the end */
    ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_PEND_IN_END_KEEP, &listed), PREEMPT_PEND_DO_NONE);
    ck_assert(!listed);
}
END_TEST

/* A worker's start-up in a job (restore-internal.h): the barrier's record,
 * not this worker's own restore, decides; only "unusable" sets aside (and
 * joins again); nothing trains after a failure; a start-up that set steps
 * aside and finds none left fails instead of starting fresh. The errors a
 * restore callback returns map as documented. */
START_TEST(test_restore_machine)
{
    const struct preempt_decl *m = &preempt_rst_decl_;
    static const enum preempt_rst_input fallback[] = { PREEMPT_RST_IN_JOINED, PREEMPT_RST_IN_UNUSABLE,
                                                       PREEMPT_RST_IN_JOB_UNUSABLE, PREEMPT_RST_IN_JOINED,
                                                       PREEMPT_RST_IN_RESTORED, PREEMPT_RST_IN_JOB_OK };
    static const enum preempt_rst_action fallback_do[] = { PREEMPT_RST_DO_RESTORE, PREEMPT_RST_DO_REPORT_UNUSABLE,
                                                           PREEMPT_RST_DO_SET_ASIDE, PREEMPT_RST_DO_RESTORE,
                                                           PREEMPT_RST_DO_REPORT_OK, PREEMPT_RST_DO_TRAIN };
    unsigned st = PREEMPT_RST_JOINING;
    bool listed;

    for (size_t i = 0; i < sizeof(fallback) / sizeof(fallback[0]); i++)
        ck_assert_msg(preempt_decl_step_(m, &st, fallback[i], &listed) == fallback_do[i], "input %zu", i);
    ck_assert_uint_eq(st, PREEMPT_RST_TRAINING);
    /* this worker restored, another found the step unusable: set aside all the same */
    st = PREEMPT_RST_BARRIER;
    ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_RST_IN_JOB_UNUSABLE, &listed), PREEMPT_RST_DO_SET_ASIDE);
    /* this worker found it unusable, another's restore failed first: nothing set aside */
    st = PREEMPT_RST_BARRIER;
    ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_RST_IN_JOB_FAILED, &listed), PREEMPT_RST_DO_FAIL);
    st = PREEMPT_RST_JOINING;
    ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_RST_IN_NONE_LEFT, &listed), PREEMPT_RST_DO_FAIL);
    for (unsigned s0 = 0; s0 < PREEMPT_RST__COUNT; s0++)
        for (unsigned i = 0; i < PREEMPT_RST_IN__COUNT; i++) {
            unsigned a;

            st = s0;
            a = preempt_decl_step_(m, &st, i, &listed);
            ck_assert((a == PREEMPT_RST_DO_SET_ASIDE) == (s0 == PREEMPT_RST_BARRIER && i == PREEMPT_RST_IN_JOB_UNUSABLE));
            ck_assert((a == PREEMPT_RST_DO_TRAIN) == (s0 == PREEMPT_RST_BARRIER && i == PREEMPT_RST_IN_JOB_OK));
            if (s0 == PREEMPT_RST_TRAINING || s0 == PREEMPT_RST_FAILED)
                ck_assert(!listed && st == s0); /* terminal */
        }
    ck_assert_uint_eq(preempt_rst_restored_(0), PREEMPT_RST_IN_RESTORED);
    ck_assert_uint_eq(preempt_rst_restored_(-EBADMSG), PREEMPT_RST_IN_UNUSABLE);
    ck_assert_uint_eq(preempt_rst_restored_(-ENOENT), PREEMPT_RST_IN_UNUSABLE);
    ck_assert_uint_eq(preempt_rst_restored_(-ENOMEM), PREEMPT_RST_IN_RESTORE_FAILED);
    ck_assert_uint_eq(preempt_rst_restored_(-EIO), PREEMPT_RST_IN_RESTORE_FAILED);
    /* the barrier's record and a report, as the handler and the simulator map them */
    ck_assert_uint_eq(preempt_rst_job_(PREEMPT_RESTORE_OK), PREEMPT_RST_IN_JOB_OK);
    ck_assert_uint_eq(preempt_rst_job_(PREEMPT_RESTORE_UNUSABLE), PREEMPT_RST_IN_JOB_UNUSABLE);
    ck_assert_uint_eq(preempt_rst_job_(PREEMPT_RESTORE_FAILED), PREEMPT_RST_IN_JOB_FAILED);
    ck_assert_int_eq(preempt_rst_report_(PREEMPT_RST_DO_REPORT_OK), PREEMPT_RESTORE_OK);
    ck_assert_int_eq(preempt_rst_report_(PREEMPT_RST_DO_REPORT_UNUSABLE), PREEMPT_RESTORE_UNUSABLE);
    ck_assert_int_eq(preempt_rst_report_(PREEMPT_RST_DO_REPORT_FAILED), PREEMPT_RESTORE_FAILED);
    ck_assert_int_eq(preempt_rst_report_(PREEMPT_RST_DO_TRAIN), -1);
}
END_TEST

START_TEST(test_launch_outcome)
{
    static const enum preempt_out_input app[] = { PREEMPT_OUT_IN_APP_CODE },
                                        crash[] = { PREEMPT_OUT_IN_APP_CODE, PREEMPT_OUT_IN_REGROUP },
                                        stopped[] = { PREEMPT_OUT_IN_RESUMABLE, PREEMPT_OUT_IN_APP_CODE },
                                        stopped_crash[] = { PREEMPT_OUT_IN_RESUMABLE, PREEMPT_OUT_IN_APP_CODE,
                                                            PREEMPT_OUT_IN_REGROUP },
                                        failed[] = { PREEMPT_OUT_IN_FAIL, PREEMPT_OUT_IN_REGROUP,
                                                     PREEMPT_OUT_IN_RESUMABLE };

    ck_assert_int_eq(launch_code(NULL, 0), 0);
    ck_assert_int_eq(launch_code(app, 1), 1);
    ck_assert_int_eq(launch_code(crash, 2), 0);
    ck_assert_int_eq(launch_code(stopped, 2), 1);
    ck_assert_int_eq(launch_code(stopped_crash, 3), 42);
    ck_assert_int_eq(launch_code(stopped, 1), 42);
    ck_assert_int_eq(launch_code(failed, 3), 1);
}
END_TEST

START_TEST(test_episode_machine)
{
    const struct preempt_decl *m = &preempt_ep_decl_;

    for (unsigned s = 0; s < PREEMPT_EP__COUNT; s++)
        for (unsigned in = 0; in < PREEMPT_EP_IN__COUNT; in++) {
            unsigned st = s;
            bool listed;
            unsigned a = preempt_decl_step_(m, &st, in, &listed);

            if (a == PREEMPT_EP_DO_TELL_WITHDRAWN)
                ck_assert(st == PREEMPT_EP_WITHDRAWN &&
                          (s == PREEMPT_EP_ACTIVE || in == PREEMPT_EP_IN_COMMITTED_OWN));
            if (s == PREEMPT_EP_WITHDRAWN && in == PREEMPT_EP_IN_ALL_WITHDRAWN)
                ck_assert(!listed); /* told once */
            if (s == PREEMPT_EP_IDLE)
                ck_assert_uint_ne(a, PREEMPT_EP_DO_TELL_WITHDRAWN); /* nothing under way to withdraw */
            if (in == PREEMPT_EP_IN_NEXT_EPISODE)
                ck_assert_uint_eq(st, PREEMPT_EP_IDLE);
            if (in == PREEMPT_EP_IN_NEWS || in == PREEMPT_EP_IN_LIVE)
                ck_assert_uint_ne(st, PREEMPT_EP_WITHDRAWN);
        }
}
END_TEST

/* A round's decision machine (decision-internal.h): the commit is proposed
 * once, never after it the abort; the abort may be proposed again (the
 * record's creation makes it one); the episode's end starts the round over. */
START_TEST(test_decision_machine)
{
    const struct preempt_decl *m = &preempt_dec_decl_;
    unsigned st = PREEMPT_DEC_OPEN;
    bool listed;

    for (unsigned s = 0; s < PREEMPT_DEC__COUNT; s++)
        for (unsigned in = 0; in < PREEMPT_DEC_IN__COUNT; in++) {
            unsigned to = s, a = preempt_decl_step_(m, &to, in, &listed);

            if (a == PREEMPT_DEC_DO_PROPOSE_COMMIT)
                ck_assert(s == PREEMPT_DEC_OPEN && to == PREEMPT_DEC_COMMIT_PROPOSED);
            if (s == PREEMPT_DEC_COMMIT_PROPOSED)
                ck_assert_uint_eq(a, PREEMPT_DEC_DO_NONE);
            if (in == PREEMPT_DEC_IN_NEXT_EPISODE)
                ck_assert_uint_eq(to, PREEMPT_DEC_OPEN);
        }
    ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_DEC_IN_GIVE_UP, &listed), PREEMPT_DEC_DO_PROPOSE_ABORT);
    ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_DEC_IN_GIVE_UP, &listed), PREEMPT_DEC_DO_PROPOSE_ABORT);
    ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_DEC_IN_ALL_REPORTED, &listed),
                      PREEMPT_DEC_DO_PROPOSE_COMMIT); /* the reports were complete after all */
    ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_DEC_IN_ALL_REPORTED, &listed), PREEMPT_DEC_DO_NONE);
    ck_assert(!listed);
    ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_DEC_IN_GIVE_UP, &listed), PREEMPT_DEC_DO_NONE);
    ck_assert_uint_eq(preempt_decl_step_(m, &st, PREEMPT_DEC_IN_NEXT_EPISODE, &listed), PREEMPT_DEC_DO_NONE);
    ck_assert_uint_eq(st, PREEMPT_DEC_OPEN);
}
END_TEST

/* The layout's promises: the records every worker watches lie in
 * [P/N/, P/N/w/), the per-worker ones outside it; an episode's records lie
 * in its two ranges (which its clear deletes) but for the decision, which
 * outlives them; every table row is documented. */
START_TEST(test_keys_layout)
{
    struct preempt_key k = { .inc = 9, .ep = 4, .step = 77, .round = 1, .worker = 3 };
    char key[PREEMPT_KEY_MAX], inc[PREEMPT_KEY_MAX], w[PREEMPT_KEY_MAX], ep[PREEMPT_KEY_MAX], wep[PREEMPT_KEY_MAX];
    static char table[2][16384];
    int rows = 0;

    (void)preempt_key_range_(inc, sizeof(inc), JOBP, PREEMPT_KEY_INC, 0, &k);
    (void)preempt_key_range_(w, sizeof(w), JOBP, PREEMPT_KEY_WORKERS, 0, &k);
    (void)preempt_key_range_(ep, sizeof(ep), JOBP, PREEMPT_KEY_EPISODE, 0, &k);
    (void)preempt_key_range_(wep, sizeof(wep), JOBP, PREEMPT_KEY_W_EPISODE, 0, &k);
    ck_assert_int_gt(preempt_key_table_(table[0], sizeof(table[0]), false), 0);
    ck_assert_int_gt(preempt_key_table_(table[1], sizeof(table[1]), true), 0);
    for (int id = 0; id < PREEMPT_KEY_COUNT; id++) {
        const char *pat = preempt_key_pattern_(id);
        bool watched = strncmp(pat, "{N}/", 4) == 0 && strncmp(pat, "{N}/w/", 6) != 0;
        bool per_worker = strncmp(pat, "{N}/w/", 6) == 0;
        bool in_ep;
        char row[128];

        (void)preempt_key_(key, sizeof(key), JOBP, id, &k);
        in_ep = !strncmp(key, ep, strlen(ep)) || !strncmp(key, wep, strlen(wep));
        ck_assert_msg(watched == (!strncmp(key, inc, strlen(inc)) && strcmp(key, w) < 0), "%s: watched?", key);
        ck_assert_msg(per_worker == !strncmp(key, w, strlen(w)), "%s: per-worker?", key);
        ck_assert_msg(in_ep == (preempt_key_has_(id, 'p') && id != PREEMPT_KEY_DECISION), "%s: in the episode?", key);
        (void)snprintf(row, sizeof(row), "\n| `%.*s", pat[0] == '{' ? 1 : (int)strcspn(pat, "{"),
                       pat[0] == '{' ? "N" : pat); /* a job-level pattern's text before its placeholders */
        ck_assert_msg(strstr(table[per_worker], row) != NULL, "%s: not in its table", pat);
        rows++;
    }
    ck_assert_int_eq(rows, PREEMPT_KEY_COUNT);
}
END_TEST

/* ---- the job's view (view-internal.h): records in, meanings out --------- */

static struct preempt_view_ev vput(struct preempt_view *v, const char *key, const char *value)
{
    return preempt_view_apply_(v, true, key, value);
}

#define WHAT(ev, w) ck_assert_str_eq(preempt_view_what_name_((ev).what), preempt_view_what_name_(w))

/* A reader that is no worker (the watcher, preemptctl) learns the job's
 * worker count from the shape record and then judges the records as the
 * workers do: a notice of worker 7 in a job of 3 is malformed for it too
 * (before, such readers kept PREEMPT_MAX_WORKERS and reported it). */
START_TEST(test_view_workers)
{
    static const char *const bad[] = { "workers=0", "workers=007", "workers=x", "", "workers=3 extra",
                                       "workers=100000" };
    struct preempt_view worker, reader;
    unsigned n = 99;

    ck_assert_int_eq(preempt_view_init_(&worker, JOBP, 7, 3, 0), 0);
    ck_assert_int_eq(preempt_view_init_(&reader, JOBP, 7, PREEMPT_MAX_WORKERS, PREEMPT_MAX_WORKERS), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(preempt_view_shape_(bad[i], &n) == -EPROTO && n == 99, "%s", bad[i]);
    ck_assert_int_eq(preempt_view_shape_("workers=3", &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(preempt_view_workers_(&reader, n), 0);
    ck_assert_uint_eq(reader.n, 3);
    ck_assert_uint_eq(reader.me, 3); /* still no worker's view */
    ck_assert_int_eq(preempt_view_workers_(&reader, 0), -EINVAL);
    ck_assert_int_eq(preempt_view_workers_(&reader, PREEMPT_MAX_WORKERS + 1), -EINVAL);
    /* the same records, judged alike by both */
    {
        static const char *const keys[] = { JOBP "7/e0/notice/7", JOBP "7/e0/notice/3", JOBP "7/e0/notice/2",
                                            JOBP "7/e0/lost", JOBP "7/e0/claim" };
        static const char *const values[] = { "900000 signal", "900000 signal", "800000 gce", "7", "5" };

        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
            struct preempt_view_ev a = vput(&worker, keys[i], values[i]), b = vput(&reader, keys[i], values[i]);

            ck_assert_msg(a.what == b.what && a.worker == b.worker && a.wall == b.wall, "%s = %s: %d, %d", keys[i],
                          values[i], (int)a.what, (int)b.what);
        }
        WHAT(vput(&reader, JOBP "7/e0/notice/7", "1 signal"), PREEMPT_VIEW_MALFORMED);
    }
    preempt_view_free_(&worker);
    preempt_view_free_(&reader);
}
END_TEST

START_TEST(test_view_notices)
{
    struct preempt_view v;
    struct preempt_view_ev ev;
    struct preempt_view_summary s;

    ck_assert_int_eq(preempt_view_init_(&v, JOBP, 7, 4, 0), 0);
    preempt_view_summary_(&v, &s);
    ck_assert(s.notices == 0 && !s.live);
    ev = vput(&v, JOBP "7/e0/notice/2", "5000 signal");
    WHAT(ev, PREEMPT_VIEW_NOTICE);
    ck_assert(ev.news && !ev.withdrawn);
    ck_assert_uint_eq(ev.worker, 2);
    ck_assert_uint_eq(ev.wall, 5000);
    {
        /* the peer-notice it tells a machine when told: the worker; the
         * deadline is the machine's clock, the coordinator's to convert */
        struct preempt_event me;

        ck_assert(preempt_view_notice_event_(&ev, &me));
        ck_assert(me.kind == PREEMPT_EV_PEER_NOTICE && me.u.peer_notice.worker == 2 && me.u.peer_notice.deadline == 0);
        ck_assert(!preempt_view_event_(&ev, 0, &me)); /* not a record's event whatever the state */
    }
    ev = vput(&v, JOBP "7/e0/notice/2", "9000 gce"); /* a later deadline: the earliest stays */
    ck_assert(!ev.news);
    {
        struct preempt_event me;

        ck_assert(!preempt_view_notice_event_(&ev, &me)); /* no news: nothing to tell */
    }
    ck_assert_uint_eq(v.notice_wall[2], 5000);
    ev = vput(&v, JOBP "7/e0/notice/2", "5000 signal withdrawn");
    ck_assert(!ev.news && ev.withdrawn);
    preempt_view_summary_(&v, &s);
    ck_assert(s.notices == 1 && !s.live);
    ck_assert(vput(&v, JOBP "7/e0/notice/2", "5000 signal").news); /* live again */
    ck_assert(vput(&v, JOBP "7/e0/notice/2", "4000 signal").news); /* earlier */
    ck_assert(vput(&v, JOBP "7/e0/notice/3", "0 inject").news);    /* no deadline: kept as 1 */
    ck_assert_uint_eq(v.notice_wall[3], 1);
    WHAT(vput(&v, JOBP "7/e0/notice/4", "1 signal"), PREEMPT_VIEW_MALFORMED); /* not a worker of 4 */
    WHAT(preempt_view_apply_(&v, false, JOBP "7/e0/notice/2", NULL), PREEMPT_VIEW_NOTHING); /* the clear */
    ck_assert_uint_eq(v.notice_wall[2], 4000);

    /* the operator's notice: the earliest deadline, until taken back */
    ev = vput(&v, JOBP "7/notice/op", "8000 operator");
    WHAT(ev, PREEMPT_VIEW_OP_NOTICE);
    ck_assert_uint_eq(ev.wall, 8000);
    {
        /* it tells every worker's machine a notice of source "operator"
         * (written by an older preemptctl as "inject": the same) */
        struct preempt_event me;

        ck_assert(preempt_view_notice_event_(&ev, &me));
        ck_assert(me.kind == PREEMPT_EV_NOTICE && me.u.notice.source == PREEMPT_SOURCE_OPERATOR &&
                  me.u.notice.deadline == 0);
    }
    WHAT(vput(&v, JOBP "7/notice/op", "9000 inject"), PREEMPT_VIEW_NOTHING);
    WHAT(vput(&v, JOBP "7/notice/op", "0 inject"), PREEMPT_VIEW_NOTHING);
    WHAT(vput(&v, JOBP "7/notice/op", "6000 inject"), PREEMPT_VIEW_OP_NOTICE);
    WHAT(preempt_view_apply_(&v, false, JOBP "7/notice/op", NULL), PREEMPT_VIEW_OP_GONE);
    ck_assert_uint_eq(v.op_wall, 0);
    WHAT(vput(&v, JOBP "7/notice/op", "0 inject"), PREEMPT_VIEW_OP_NOTICE);
    ck_assert_uint_eq(v.op_wall, UINT64_MAX);
    preempt_view_free_(&v);
}
END_TEST

/* The notices in sum: the one reading the coordinator's withdrawal check,
 * the watcher's earliest deadline and preemptctl status share. */
START_TEST(test_view_summary)
{
    struct preempt_view v;
    struct preempt_view_summary s;

    ck_assert_int_eq(preempt_view_init_(&v, JOBP, 7, 4, 1), 0);
    preempt_view_summary_(&v, &s);
    ck_assert(s.notices == 0 && s.standing == 0 && !s.op && !s.live && s.earliest == 0 && s.worker == -1);
    WHAT(vput(&v, JOBP "7/e0/notice/2", "5000 gce"), PREEMPT_VIEW_NOTICE);
    WHAT(vput(&v, JOBP "7/e0/notice/1", "5000 aws withdrawn"), PREEMPT_VIEW_NOTICE);
    WHAT(vput(&v, JOBP "7/e0/notice/3", "7000 signal"), PREEMPT_VIEW_NOTICE);
    preempt_view_summary_(&v, &s);
    ck_assert_uint_eq(s.notices, 3);
    ck_assert_uint_eq(s.standing, 2);
    ck_assert(s.live && !s.op);
    ck_assert_uint_eq(s.earliest, 5000);
    ck_assert_int_eq(s.worker, 1); /* a tie: the lowest index, withdrawn or not */
    WHAT(vput(&v, JOBP "7/e0/notice/2", "5000 gce withdrawn"), PREEMPT_VIEW_NOTICE);
    WHAT(vput(&v, JOBP "7/e0/notice/3", "7000 signal withdrawn"), PREEMPT_VIEW_NOTICE);
    preempt_view_summary_(&v, &s);
    ck_assert(s.standing == 0 && !s.live); /* every notice withdrawn */
    WHAT(vput(&v, JOBP "7/notice/op", "6000 inject"), PREEMPT_VIEW_OP_NOTICE);
    preempt_view_summary_(&v, &s);
    ck_assert(s.op && s.live && s.standing == 0);
    ck_assert_uint_eq(s.earliest, 5000); /* the workers' is earlier */
    ck_assert_int_eq(s.worker, 1);
    WHAT(preempt_view_apply_(&v, false, JOBP "7/notice/op", NULL), PREEMPT_VIEW_OP_GONE);
    WHAT(vput(&v, JOBP "7/notice/op", "0 inject"), PREEMPT_VIEW_OP_NOTICE); /* none given: due now */
    preempt_view_summary_(&v, &s);
    ck_assert_uint_eq(s.earliest, 1);
    ck_assert_int_eq(s.worker, -1);
    WHAT(vput(&v, JOBP "7/e0/notice/0", "0 signal"), PREEMPT_VIEW_NOTICE); /* a worker's due now: it wins the tie */
    preempt_view_summary_(&v, &s);
    ck_assert_uint_eq(s.earliest, 1);
    ck_assert_int_eq(s.worker, 0);
    preempt_view_free_(&v);
}
END_TEST

/* The driver's claim carries its notice ("<w> <notice record's value>"),
 * so that the episode's first watch message holds two events, not three:
 * the view reads it as that worker's notice, and the notice stays when the
 * claim goes with its lease. */
START_TEST(test_view_claim_carries_notice)
{
    struct preempt_view v;
    struct preempt_view_ev ev;
    struct preempt_rv_claim c;
    const char *why;

    ck_assert(preempt_rv_claim_read_("3", UINT32_MAX, &c, &why) == 0 && c.w == 3 && !c.has_deadline && !c.source);
    ck_assert(preempt_rv_claim_read_("2 5000 sigterm", UINT32_MAX, &c, &why) == 0 && c.w == 2);
    ck_assert(c.has_deadline && c.deadline == 5000 && c.source_len == 7 && !c.withdrawn);
    ck_assert_int_eq(preempt_rv_claim_read_("", UINT32_MAX, &c, &why), -EBADMSG);
    ck_assert_int_eq(preempt_rv_claim_read_("x 5000 sigterm", UINT32_MAX, &c, &why), -EBADMSG);
    ck_assert_int_eq(preempt_rv_claim_read_(" 5000 sigterm", UINT32_MAX, &c, &why), -EBADMSG);
    ck_assert_int_eq(preempt_rv_claim_read_("2 ", UINT32_MAX, &c, &why), -EBADMSG);
    ck_assert_int_eq(preempt_rv_claim_read_("4294967296 1 signal", UINT32_MAX, &c, &why), -EBADMSG);

    ck_assert_int_eq(preempt_view_init_(&v, JOBP, 7, 4, 1), 0);
    ev = vput(&v, JOBP "7/e0/claim", "2 5000 sigterm");
    WHAT(ev, PREEMPT_VIEW_NOTICE);
    ck_assert_uint_eq(ev.worker, 2);
    ck_assert_uint_eq(ev.wall, 5000);
    ck_assert(ev.news && !ev.withdrawn);
    ck_assert_str_eq(ev.text, "sigterm");
    ck_assert(v.claim);
    ck_assert_uint_eq(v.notice_wall[2], 5000);
    /* the same worker's own record later says the same: nothing new */
    ev = vput(&v, JOBP "7/e0/notice/2", "5000 sigterm");
    WHAT(ev, PREEMPT_VIEW_NOTICE);
    ck_assert(!ev.news);
    /* the claim's lease ended: the notice stands */
    WHAT(preempt_view_apply_(&v, false, JOBP "7/e0/claim", NULL), PREEMPT_VIEW_CLAIM_GONE);
    ck_assert(!v.claim);
    ck_assert_uint_eq(v.notice_wall[2], 5000);
    /* a claim that names no worker of the job, or none at all, holds the
     * episode (etcd has it), says nothing of a notice, and is reported */
    WHAT(vput(&v, JOBP "7/e0/claim", "9 4000 signal"), PREEMPT_VIEW_MALFORMED);
    ck_assert(v.claim);
    ck_assert_uint_eq(v.notice_wall[1], 0);
    WHAT(preempt_view_apply_(&v, false, JOBP "7/e0/claim", NULL), PREEMPT_VIEW_CLAIM_GONE);
    WHAT(vput(&v, JOBP "7/e0/claim", "junk"), PREEMPT_VIEW_MALFORMED);
    ck_assert(v.claim);
    preempt_view_free_(&v);
}
END_TEST

START_TEST(test_view_rounds)
{
    struct preempt_view v;
    struct preempt_view_ev ev;

    ck_assert_int_eq(preempt_view_init_(&v, JOBP, 7, 3, 1), 0);
    WHAT(vput(&v, JOBP "7/e0/r0/agreed", "12x"), PREEMPT_VIEW_MALFORMED);
    ev = vput(&v, JOBP "7/e0/r0/agreed", "12");
    WHAT(ev, PREEMPT_VIEW_AGREED);
    ck_assert_uint_eq(ev.step, 12);
    ck_assert_uint_eq(ev.round, 0);
    ck_assert(!ev.last && !v.r[0].last);
    WHAT(vput(&v, JOBP "7/e0/r0/agreed", "12"), PREEMPT_VIEW_NOTHING); /* a repeat */
    WHAT(vput(&v, JOBP "7/e0/r0/agreed", "11 last"), PREEMPT_VIEW_NOTHING); /* lower: the step only goes up */
    ck_assert(!v.r[0].last);
    ev = vput(&v, JOBP "7/e0/r0/agreed", "13 last"); /* a raise: the round's step now */
    WHAT(ev, PREEMPT_VIEW_AGREED);
    ck_assert_uint_eq(ev.step, 13);
    ck_assert(ev.last && v.r[0].last && v.r[0].agreed == 13);
    /* the last save: the record's word */
    WHAT(vput(&v, JOBP "7/e0/r1/agreed", "20 lastly"), PREEMPT_VIEW_MALFORMED);
    WHAT(vput(&v, JOBP "7/e0/r1/agreed", "20 "), PREEMPT_VIEW_MALFORMED);
    WHAT(vput(&v, JOBP "7/e0/r1/agreed", " last"), PREEMPT_VIEW_MALFORMED);
    ev = vput(&v, JOBP "7/e0/r1/agreed", "20 last");
    WHAT(ev, PREEMPT_VIEW_AGREED);
    ck_assert_uint_eq(ev.step, 20);
    ck_assert(ev.last && v.r[1].last);
    {
        char m[64];
        ck_assert_int_gt(preempt_view_format_(m, sizeof(m), &ev), 0);
        ck_assert_str_eq(m, "agreed round=1 step=20 last");
    }
    /* one decision per round: the first to land */
    WHAT(vput(&v, JOBP "7/decision/e0/r0", "done 12"), PREEMPT_VIEW_MALFORMED);
    WHAT(vput(&v, JOBP "7/decision/e0/r0", "committed 12x"), PREEMPT_VIEW_MALFORMED);
    ck_assert(!v.r[0].decided);
    ev = vput(&v, JOBP "7/decision/e0/r0", "aborted 12 2");
    WHAT(ev, PREEMPT_VIEW_ABORTED);
    ck_assert_uint_eq(ev.step, 12);
    WHAT(vput(&v, JOBP "7/decision/e0/r0", "committed 12"), PREEMPT_VIEW_NOTHING);
    WHAT(preempt_view_apply_(&v, false, JOBP "7/decision/e0/r0", NULL), PREEMPT_VIEW_NOTHING);
    ck_assert(v.r[0].decided);
    WHAT(vput(&v, JOBP "7/decision/e0/r1", "committed 20 lastly"), PREEMPT_VIEW_MALFORMED);
    WHAT(vput(&v, JOBP "7/decision/e0/r1", "committed "), PREEMPT_VIEW_MALFORMED);
    WHAT(vput(&v, JOBP "7/decision/e0/r1", "aborted x"), PREEMPT_VIEW_MALFORMED);
    WHAT(vput(&v, JOBP "7/decision/e0/r1", "committed 20 last save="), PREEMPT_VIEW_MALFORMED);
    /* the commit ends the preemption; the round's slowest save took 1500 ms */
    ev = vput(&v, JOBP "7/decision/e0/r1", "committed 20 last save=1500");
    WHAT(ev, PREEMPT_VIEW_COMMITTED);
    ck_assert_uint_eq(ev.round, 1);
    ck_assert_uint_eq(ev.step, 20);
    ck_assert_uint_eq(ev.save_ms, 1500);
    ck_assert(ev.last);
    {
        char m[64];
        ck_assert_int_gt(preempt_view_format_(m, sizeof(m), &ev), 0);
        ck_assert_str_eq(m, "committed round=1 step=20 last save=1500");
    }
    {
        /* what the decision tells the machine: the commit ends the
         * preemption at the step (the record names no stop step) */
        struct preempt_event me;
        struct preempt_view_ev d = ev;

        ck_assert(preempt_view_event_(&ev, 1, &me));
        ck_assert_int_eq(me.kind, PREEMPT_EV_CKPT_COMMITTED);
        ck_assert_uint_eq(me.u.ckpt_committed.step, 20);
        ck_assert_uint_eq(me.u.ckpt_committed.stop, 20);
        d.stop = 26; /* a two-phase round's: every worker training on stops there */
        ck_assert(preempt_view_event_(&d, 1, &me) && me.u.ckpt_committed.stop == 26);
        d.stop = 12; /* never before the step */
        ck_assert(preempt_view_event_(&d, 1, &me) && me.u.ckpt_committed.stop == 20);
        d.last = false; /* a commit that ends nothing */
        ck_assert(preempt_view_event_(&d, 1, &me) && me.u.ckpt_committed.stop == 0);
    }
    /* the driver's records */
    WHAT(vput(&v, JOBP "7/e0/claim", "2"), PREEMPT_VIEW_CLAIM);
    ck_assert(v.claim);
    preempt_view_reread_(&v);
    ck_assert(!v.claim);
    WHAT(vput(&v, JOBP "7/e0/claim", "2"), PREEMPT_VIEW_CLAIM);
    WHAT(preempt_view_apply_(&v, false, JOBP "7/e0/claim", NULL), PREEMPT_VIEW_CLAIM_GONE);
    WHAT(vput(&v, JOBP "7/e0/final", "1"), PREEMPT_VIEW_NOTHING); /* this worker's own */
    ev = vput(&v, JOBP "7/e0/final", "2");
    WHAT(ev, PREEMPT_VIEW_FINAL);
    ck_assert_uint_eq(ev.worker, 2);
    WHAT(vput(&v, JOBP "7/e0/final", "0"), PREEMPT_VIEW_NOTHING);
    WHAT(vput(&v, JOBP "7/e0/lost", "3"), PREEMPT_VIEW_MALFORMED); /* not a worker of 3 */
    ev = vput(&v, JOBP "7/e0/lost", "0");
    WHAT(ev, PREEMPT_VIEW_LOST);
    ck_assert_ptr_null(ev.text); /* the driver's: found missing */
    WHAT(vput(&v, JOBP "7/e0/lost", "2"), PREEMPT_VIEW_NOTHING);
    v.lost = false; /* as in the next episode: a worker that left says so */
    ev = vput(&v, JOBP "7/e0/lost", "2 left");
    WHAT(ev, PREEMPT_VIEW_LOST);
    ck_assert_uint_eq(ev.worker, 2);
    ck_assert_str_eq(ev.text, "left");
    /* the job's first error, with its message */
    ev = vput(&v, JOBP "7/error", "-5 2 disk full: /ckpt");
    WHAT(ev, PREEMPT_VIEW_ERROR);
    ck_assert_int_eq(ev.code, -5);
    ck_assert_uint_eq(ev.worker, 2);
    ck_assert_str_eq(ev.text, "disk full: /ckpt");
    {
        struct preempt_event me;

        ck_assert(preempt_view_event_(&ev, 1, &me));
        ck_assert(me.kind == PREEMPT_EV_PEER_ERROR && me.u.peer_error.code == -5 && me.u.peer_error.worker == 2);
        ck_assert(!preempt_view_event_(&ev, 2, &me)); /* its own error: its machine knows */
    }
    WHAT(vput(&v, JOBP "7/error", "-1 0 other"), PREEMPT_VIEW_NOTHING);
    preempt_view_free_(&v);
}
END_TEST

/* A read of a round's shard reports: each worker's well-formed report at
 * the step read counts once; what they say in sum (the slowest save, last,
 * the highest stop step) is what the round's commit proposes. */
START_TEST(test_view_reports)
{
    struct preempt_view v;
    struct preempt_view_ev ev;
    const struct preempt_view_reports *t = &v.r[1].reports;
    char m[PREEMPT_VIEW_MEANING_MAX];

    ck_assert_int_eq(preempt_view_init_(&v, JOBP, 7, 3, 1), 0);
    /* outside a read, a report counts nothing */
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/0", "100"), PREEMPT_VIEW_NOTHING);
    preempt_view_reports_(&v, 1, 20, 0);
    ck_assert(t->open && t->step == 20 && t->count == 0);
    ev = vput(&v, JOBP "7/w/e0/r1/shard/20/0", "100");
    WHAT(ev, PREEMPT_VIEW_SHARD);
    ck_assert(ev.round == 1 && ev.step == 20 && ev.worker == 0 && ev.save_ms == 100 && !ev.last && ev.count == 1);
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/0", "900"), PREEMPT_VIEW_NOTHING); /* a worker's, once */
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/19/1", "100"), PREEMPT_VIEW_NOTHING); /* another step's */
    WHAT(vput(&v, JOBP "7/w/e0/r0/shard/20/1", "100"), PREEMPT_VIEW_NOTHING); /* the other round's */
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/1", "zzz"), PREEMPT_VIEW_MALFORMED);
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/1", "300 last stop=x"), PREEMPT_VIEW_MALFORMED);
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/3", "300"), PREEMPT_VIEW_MALFORMED); /* not a worker of 3 */
    WHAT(vput(&v, JOBP "7/w/e1/r1/shard/20/1", "300"), PREEMPT_VIEW_LATER);
    ck_assert_uint_eq(t->count, 1);
    ev = vput(&v, JOBP "7/w/e0/r1/shard/20/1", "300 last stop=26");
    WHAT(ev, PREEMPT_VIEW_SHARD);
    ck_assert_int_gt(preempt_view_format_(m, sizeof(m), &ev), 0);
    ck_assert_str_eq(m, "shard round=1 step=20 last save=300 stop=26 worker=1 reports=2");
    ev = vput(&v, JOBP "7/w/e0/r1/shard/20/2", "250 last stop=24");
    ck_assert_uint_eq(ev.count, 3);
    ck_assert(t->count == 3 && t->slowest == 300 && t->last && t->stop == 26);
    /* the longest meaning fits */
    ck_assert_uint_eq(preempt_view_reports_pace_(t).ms, 0); /* none named a pace */
    ev = (struct preempt_view_ev){ .what = PREEMPT_VIEW_SHARD, .round = 1, .step = UINT64_MAX, .last = true,
                                   .save_ms = UINT64_MAX, .stop = UINT64_MAX, .worker = PREEMPT_MAX_WORKERS,
                                   .count = PREEMPT_MAX_WORKERS, .pace = { UINT64_MAX, UINT64_MAX, 0 } };
    ck_assert_int_lt(preempt_view_format_(m, sizeof(m), &ev), (int)sizeof(m));
    /* the lowest step a worker is at as the reports are read (wall 1600): a
     * report's step, plus, training on from it since at, its steps since;
     * and the slowest pace */
    preempt_view_reports_(&v, 1, 20, 1600);
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/0", "100 run=20 pace=10"), PREEMPT_VIEW_SHARD); /* waits at 20 */
    ck_assert(preempt_view_reports_pace_(t).step == 20 && preempt_view_reports_pace_(t).ms == 10);
    ev = vput(&v, JOBP "7/w/e0/r1/shard/20/1", "100 run=24 pace=12 at=1000"); /* 24 + 600 / 12 = 74 */
    ck_assert_int_gt(preempt_view_format_(m, sizeof(m), &ev), 0);
    ck_assert_str_eq(m, "shard round=1 step=20 save=100 run=24 pace=12 worker=1 reports=2");
    ck_assert(preempt_view_reports_pace_(t).step == 20 && preempt_view_reports_pace_(t).ms == 12);
    preempt_view_reports_(&v, 1, 20, 1600);
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/1", "100 run=24 pace=12 at=1000"), PREEMPT_VIEW_SHARD);
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/2", "100 run=30 pace=20 at=1900"), PREEMPT_VIEW_SHARD); /* clocks: 30 */
    ck_assert(preempt_view_reports_pace_(t).step == 30 && preempt_view_reports_pace_(t).ms == 20);
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/0", "100 run=21 pace=10 at=1500"), PREEMPT_VIEW_SHARD); /* 31 */
    ck_assert(preempt_view_reports_pace_(t).step == 30 && preempt_view_reports_pace_(t).ms == 20);
    /* one report without: the job's slowest is not known */
    preempt_view_reports_(&v, 1, 20, 1600);
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/2", "100 run=30 pace=20"), PREEMPT_VIEW_SHARD);
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/1", "100"), PREEMPT_VIEW_SHARD);
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/0", "100 run=21 pace=10"), PREEMPT_VIEW_SHARD);
    ck_assert(t->count == 3 && preempt_view_reports_pace_(t).ms == 0);
    /* a new read counts afresh; the episode's end closes it */
    preempt_view_reports_(&v, 1, 20, 0);
    ck_assert(t->count == 0 && t->slowest == 0 && !t->last);
    WHAT(vput(&v, JOBP "7/w/e0/r1/shard/20/0", "100"), PREEMPT_VIEW_SHARD);
    preempt_view_episode_(&v, 1);
    ck_assert(!t->open);
    WHAT(vput(&v, JOBP "7/w/e1/r1/shard/20/1", "300"), PREEMPT_VIEW_NOTHING);
    preempt_view_free_(&v);
}
END_TEST

/* What an answer to this worker's claim says: one pure reading, which the
 * coordinator steps the claim machine with and a replay computes again. */
/* Who is lost (lost-internal.h): a worker missing from a read is
 * remembered, lost once missing for the grace, forgotten when back; this
 * worker's own bit is not read; a lost record that stands already is not
 * written again; a failed or short read changes nothing; the lowest worker
 * lost is named; the absent workers' ranges read back as written. */
START_TEST(test_lost_decision)
{
    uint64_t gone[20] = { 0 };
    struct preempt_lost l = { .n = 20, .me = 1, .gone_at = gone };
    uint8_t absent[3] = { 0 }, back[3];
    struct preempt_lost_read rd = { .complete = true, .absent = absent, .now_ms = 1000, .grace_ms = 100 };
    struct preempt_lost_says s;
    char buf[64];

    PREEMPT_LOST_SET(absent, 1); /* its own: never missing */
    PREEMPT_LOST_SET(absent, 5);
    PREEMPT_LOST_SET(absent, 6);
    s = preempt_lost_read_(&l, &rd);
    ck_assert(s.kind == PREEMPT_LOST_NOTHING && s.missing == 2 && s.newly == 2 && s.back == 0);
    rd.now_ms = 1099; /* within the grace */
    s = preempt_lost_read_(&l, &rd);
    ck_assert(s.kind == PREEMPT_LOST_NOTHING && s.missing == 2 && s.newly == 0);
    rd.status = -ETIMEDOUT; /* a failed read: nothing learned, nobody back */
    rd.now_ms = 5000;
    s = preempt_lost_read_(&l, &rd);
    ck_assert(s.kind == PREEMPT_LOST_FAILED && gone[5] == 1000 && gone[6] == 1000);
    rd.status = 0;
    rd.complete = false;
    ck_assert(preempt_lost_read_(&l, &rd).kind == PREEMPT_LOST_UNREADABLE && gone[5] == 1000);
    rd.complete = true;
    rd.known = true; /* a lost record stands: none is written again */
    ck_assert(preempt_lost_read_(&l, &rd).kind == PREEMPT_LOST_NOTHING);
    rd.known = false;
    rd.now_ms = 1100;
    s = preempt_lost_read_(&l, &rd);
    ck_assert(s.kind == PREEMPT_LOST_WORKER && s.worker == 5);
    ck_assert_int_gt(preempt_lost_says_format_(buf, sizeof(buf), &s), 0);
    ck_assert_str_eq(buf, "lost worker=5 missing=2 newly=0 back=0");
    absent[0] = 1u << 6; /* 5 is back (a new lease) */
    s = preempt_lost_read_(&l, &rd);
    ck_assert(s.kind == PREEMPT_LOST_WORKER && s.worker == 6 && s.back == 1 && s.missing == 1 && gone[5] == 0);
    preempt_lost_forget_(&l);
    ck_assert(gone[6] == 0);
    /* at the clock's start a worker found missing is not lost at once */
    rd.now_ms = 0;
    rd.grace_ms = 0;
    s = preempt_lost_read_(&l, &rd);
    ck_assert(s.kind == PREEMPT_LOST_NOTHING && gone[6] == 1);
    /* the ranges */
    memset(absent, 0, sizeof(absent));
    ck_assert_int_eq(preempt_lost_absent_format_(buf, sizeof(buf), absent, 20), 1);
    ck_assert_str_eq(buf, "-");
    for (unsigned w = 2; w <= 5; w++)
        PREEMPT_LOST_SET(absent, w);
    PREEMPT_LOST_SET(absent, 9);
    PREEMPT_LOST_SET(absent, 19);
    ck_assert_int_gt(preempt_lost_absent_format_(buf, sizeof(buf), absent, 20), 0);
    ck_assert_str_eq(buf, "2-5,9,19");
    ck_assert(preempt_lost_absent_parse_(buf, strlen(buf), back, 20) && !memcmp(back, absent, sizeof(back)));
    ck_assert_int_eq(preempt_lost_absent_format_(buf, 8, absent, 20), -1); /* does not fit */
    ck_assert(!preempt_lost_absent_parse_("2-5,9,20", 8, back, 20));
    ck_assert(!preempt_lost_absent_parse_("5-2", 3, back, 20));
    ck_assert(!preempt_lost_absent_parse_("", 0, back, 20));
    ck_assert(!preempt_lost_absent_parse_("1,,2", 4, back, 20));
    ck_assert(!preempt_lost_absent_parse_("123456", 6, back, 20));
}
END_TEST

START_TEST(test_claim_answer)
{
    struct preempt_claim_answer a = { 0 };
    struct preempt_claim_says s;
    char m[PREEMPT_VIEW_MEANING_MAX];

#define SAYS(want)                                                                                                   \
    do {                                                                                                             \
        s = preempt_claim_answer_(&a, 1);                                                                            \
        ck_assert_int_gt(preempt_claim_says_format_(m, sizeof(m), &s), 0);                                           \
        ck_assert_str_eq(m, want);                                                                                   \
    } while (0)
    a.succeeded = true;
    SAYS("won");
    ck_assert_uint_eq(s.holder, 1);
    a = (struct preempt_claim_answer){ .read = true, .held = "2 1795467103998 signal" };
    SAYS("lost worker=2");
    ck_assert(s.input == PREEMPT_CLAIM_IN_LOST && s.holder == 2);
    a.held = "1"; /* its own claim stood already */
    SAYS("won");
    a.held = "zzz"; /* garbage: the next claim replaces it */
    SAYS("unreadable garbage");
    a.held = NULL; /* a record read without a value is no claim either */
    SAYS("unreadable garbage");
    a.read = false; /* released between the compare and the read */
    SAYS("unreadable");
    ck_assert(!s.garbage);
    a = (struct preempt_claim_answer){ .status = -ENOENT };
    SAYS("stale-lease");
    a.left = true; /* a worker that left claims nothing again */
    SAYS("failed");
    a = (struct preempt_claim_answer){ .status = -ETIMEDOUT, .succeeded = true };
    SAYS("failed");
#undef SAYS
}
END_TEST

/* Episodes and incarnations: a later episode's record is the caller's to
 * hold; an ended one's is history; a new episode starts from nothing but
 * the job's error and the operator's notice; records of other incarnations,
 * jobs and the per-worker records mean nothing to the view. */
START_TEST(test_view_episodes)
{
    struct preempt_view v;
    struct preempt_view_ev ev;

    ck_assert_int_eq(preempt_view_init_(&v, JOBP, 7, 2, 0), 0);
    WHAT(vput(&v, JOBP "7/e0/notice/1", "5000 signal"), PREEMPT_VIEW_NOTICE);
    WHAT(vput(&v, JOBP "7/e0/r0/agreed", "3"), PREEMPT_VIEW_AGREED);
    WHAT(vput(&v, JOBP "7/notice/op", "7000 inject"), PREEMPT_VIEW_OP_NOTICE);
    WHAT(vput(&v, JOBP "7/error", "1 1 x"), PREEMPT_VIEW_ERROR);
    ev = vput(&v, JOBP "7/e2/notice/0", "6000 gce");
    WHAT(ev, PREEMPT_VIEW_LATER);
    ck_assert_uint_eq(ev.ep, 2);
    ev = vput(&v, JOBP "7/decision/e1/r0", "committed 4");
    WHAT(ev, PREEMPT_VIEW_LATER);
    ck_assert_uint_eq(ev.ep, 1);
    preempt_view_episode_(&v, 1);
    ck_assert_uint_eq(v.notice_wall[1], 0);
    ck_assert(!v.r[0].have_agreed);
    ck_assert_uint_eq(v.op_wall, 7000);
    ck_assert(v.error);
    WHAT(vput(&v, JOBP "7/e0/notice/1", "1000 signal"), PREEMPT_VIEW_NOTHING); /* landing late */
    WHAT(vput(&v, JOBP "7/e1/r0/agreed", "9"), PREEMPT_VIEW_AGREED);
    WHAT(vput(&v, JOBP "8/e1/notice/0", "1 signal"), PREEMPT_VIEW_NOTHING);
    WHAT(vput(&v, "/preempt/other/7/e1/notice/0", "1 signal"), PREEMPT_VIEW_NOTHING);
    WHAT(vput(&v, JOBP "7/w/e1/r0/ack/0", "9"), PREEMPT_VIEW_NOTHING);
    WHAT(vput(&v, JOBP "7/ready", "restore=none workers=2 launch=-"), PREEMPT_VIEW_NOTHING);
    WHAT(vput(&v, JOBP "incarnation", "8"), PREEMPT_VIEW_NOTHING);
    preempt_view_incarnation_(&v, 8);
    ck_assert(!v.error && v.op_wall == 0 && v.ep == 0);
    WHAT(vput(&v, JOBP "8/e0/notice/0", "1 signal"), PREEMPT_VIEW_NOTICE);
    preempt_view_free_(&v);
}
END_TEST

/* ---- the client's clock: a step does not time a request out ---------- */

/* A fake gateway in a child process, serving any number of keep-alive
 * connections at once. It tells the pipe of every connection it accepts
 * ('c') and every request it gets: 'r' for a unary one, answered delay_ms
 * later with an empty JSON object; 'w' for a watch, answered with a stream
 * that says "created" and stays open. */
struct gateway {
    pid_t pid;
    int fd; /* the read end of the events pipe */
    char url[64];
    char seen[256];
    size_t n_seen;
};

static void fake_gateway(unsigned delay_ms, struct gateway *g)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), pfd[2];
    pid_t pid;

    ck_assert_int_ge(lfd, 0);
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(lfd, 8), 0);
    ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    ck_assert_int_eq(pipe(pfd), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        static const char created[] = "{\"result\":{\"header\":{\"cluster_id\":\"1\",\"member_id\":\"2\","
                                      "\"revision\":\"5\",\"raft_term\":\"2\"},\"created\":true}}\n";
        struct pollfd p[9] = { { .fd = lfd, .events = POLLIN } };
        nfds_t n = 1;
        char buf[4096];

        (void)close(pfd[0]);
        /* never outlive the test: gone with it, and in 20 s at most. The
         * alarm's action is the default one: Check's timeout handler,
         * inherited through fork(), kills the whole process group, which
         * without CK_FORK (valgrind) is make's and CI's (a gateway left
         * behind by a failed check did, once) */
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        (void)signal(SIGALRM, SIG_DFL);
        alarm(20);
        while (poll(p, n, -1) > 0) {
            if ((p[0].revents & POLLIN) && n < sizeof(p) / sizeof(p[0])) {
                p[n] = (struct pollfd){ .fd = accept(lfd, NULL, NULL), .events = POLLIN };
                if (p[n].fd >= 0 && write(pfd[1], "c", 1) == 1)
                    n++;
            }
            for (nfds_t i = 1; i < n; i++) {
                ssize_t r;

                if (!(p[i].revents & (POLLIN | POLLHUP)))
                    continue;
                if ((r = read(p[i].fd, buf, sizeof(buf))) <= 0) {
                    (void)close(p[i].fd);
                    p[i--] = p[--n];
                    continue;
                }
                if (!memmem(buf, (size_t)r, "\r\n\r\n", 4)) /* one request per read (small bodies) */
                    continue;
                if (memmem(buf, (size_t)r, "POST /v3/watch ", 15)) {
                    (void)!write(pfd[1], "w", 1);
                    (void)!dprintf(p[i].fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                            "Transfer-Encoding: chunked\r\n\r\n%zx\r\n%s\r\n",
                                   sizeof(created) - 1, created);
                } else {
                    if (memmem(buf, (size_t)r, "\"revision\"", 10)) /* a read of a past revision */
                        (void)!write(pfd[1], "v", 1);
                    (void)!write(pfd[1], "r", 1);
                    usleep(delay_ms * 1000); /* the reply's latency */
                    (void)!write(p[i].fd, reply, sizeof(reply) - 1);
                    (void)!write(pfd[1], "R", 1); /* the reply is on its way */
                }
            }
        }
        _exit(0);
    }
    (void)close(lfd);
    (void)close(pfd[1]);
    *g = (struct gateway){ .pid = pid, .fd = pfd[0] };
    (void)snprintf(g->url, sizeof(g->url), "http://127.0.0.1:%d", ntohs(a.sin_port));
}

/* A client of the fake gateway on base (timeout_ms: 0 for the default). */
static struct preempt_etcd *gateway_client(struct gateway *g, struct event_base *base, uint64_t timeout_ms)
{
    struct preempt_etcd_opts o = { .endpoints = g->url, .timeout_ms = timeout_ms };
    struct preempt_etcd *e;

    ck_assert_int_eq(preempt_etcd_new_(base, &o, &e), 0);
    return e;
}

/* The fake gateway's events so far: how many of kind ('c' connected, 'r' a
 * request, 'R' its reply written, 'w' a watch). */
static int gateway_count(struct gateway *g, char kind)
{
    struct pollfd p = { .fd = g->fd, .events = POLLIN };
    int count = 0;

    while (g->n_seen < sizeof(g->seen) && poll(&p, 1, 0) > 0 && read(g->fd, &g->seen[g->n_seen], 1) == 1)
        g->n_seen++;
    for (size_t i = 0; i < g->n_seen; i++)
        count += g->seen[i] == kind;
    return count;
}

static void gateway_stop(struct gateway *g)
{
    (void)kill(g->pid, SIGKILL);
    (void)waitpid(g->pid, NULL, 0);
    (void)close(g->fd);
}

struct answer {
    bool done;
    int status;
};

static void on_answer(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct answer *a = arg;

    (void)r;
    (void)msg;
    a->done = true;
    a->status = status;
}

static bool answered(void *arg)
{
    return ((struct answer *)arg)->done;
}

/* A synchronous trainer sends a request at a boundary and blocks in a step
 * four times longer than the request's timeout; the reply waits in the
 * socket buffer. At the next boundary it is taken: one attempt, no retry
 * (curl's own timeout counted the step and retried: two requests). */
/* The restore plan: the newest step every worker holds, and when some
 * hold newer ones, who lacks the newest (start-up never loses it). */
START_TEST(test_restore_plan)
{
    static const uint64_t a[] = { 300, 200, 100 }, b[] = { 200, 100 }, c[] = { 300 };
    struct preempt_value m[4];
    const char *offers[4] = { preempt_value_str_(&m[0]), preempt_value_str_(&m[1]), preempt_value_str_(&m[2]),
                              preempt_value_str_(&m[3]) };
    unsigned idx[4] = { 0, 1, 2, 3 };
    struct preempt_coord_plan p;

    preempt_coord_member_(&m[0], 1, "h", "L", 3, false, a, 3);
    preempt_coord_member_(&m[1], 2, "h", "L", 3, false, a, 3);
    preempt_coord_member_(&m[2], 3, "h", "L", 3, false, a, 3);
    preempt_coord_plan_(offers, idx, 3, &p); /* all alike */
    ck_assert(p.have && p.step == 300 && !p.at_risk && !p.over);
    preempt_coord_member_(&m[2], 3, "h", "L", 3, false, b, 2); /* worker 2 lost step 300 */
    preempt_coord_plan_(offers, idx, 3, &p);
    ck_assert(p.have && p.step == 200 && p.at_risk && p.newest == 300 && p.n_lacking == 1);
    ck_assert(p.lacking[0] == 2);
    preempt_coord_member_(&m[1], 2, "h", "L", 3, false, NULL, 0); /* worker 1's volume is empty */
    preempt_coord_plan_(offers, idx, 3, &p);
    ck_assert(!p.have && p.at_risk && p.newest == 300 && p.n_lacking == 2);
    ck_assert(p.lacking[0] == 1 && p.lacking[1] == 2);
    preempt_coord_member_(&m[0], 1, "h", "L", 3, true, c, 1); /* one worker asks to start over */
    preempt_coord_plan_(offers, idx, 3, &p);
    ck_assert(!p.have && p.at_risk && p.over);
    preempt_coord_member_(&m[0], 1, "h", "L", 3, false, NULL, 0);
    preempt_coord_member_(&m[2], 1, "h", "L", 3, false, NULL, 0);
    preempt_coord_plan_(offers, idx, 3, &p); /* a first start: nothing anywhere */
    ck_assert(!p.have && !p.held && !p.at_risk);
    for (unsigned i = 0; i < 4; i++) /* worker indexes name the lacking, not positions */
        preempt_coord_member_(&m[i], 1, "h", "L", 4, false, i == 1 ? b : a, i == 1 ? 2 : 3);
    idx[1] = 7;
    preempt_coord_plan_(offers, idx, 4, &p);
    ck_assert(p.n_lacking == 1 && p.lacking[0] == 7);
}
END_TEST

START_TEST(test_step_does_not_time_out_a_request)
{
    struct event_base *base = event_base_new();
    struct preempt_etcd *e;
    struct answer a = { 0 };
    struct gateway g;

    int sent, replied, r;
    bool early;

    /* the reply 1 s after the request: with 100 ms, one pass of the loop
     * under valgrind on a busy machine outlasted it and read the reply
     * before the step (CI, 2026-12-03: "early") */
    fake_gateway(1000, &g);
    e = gateway_client(&g, base, 1500);
    ck_assert_int_eq(preempt_etcd_do_(e, PREEMPT_RQ_PUT("x", TV("y"), 0), 5000, on_answer, &a), 0);
    /* the boundary: the loop runs until the gateway has the request (well
     * within the request's 1.5 s bound: 300 ms ran out first once, under
     * valgrind on a busy machine, and the request was sent again); its
     * reply comes 1 s later, into the socket buffer, while the step runs */
    for (int i = 0; i < 200 && !a.done && gateway_count(&g, 'r') == 0; i++) {
        (void)event_base_loop(base, EVLOOP_NONBLOCK);
        usleep(10000); /* the poll */
    }
    early = a.done;
    /* the step, longer than the request's bound: the loop is away until
     * the reply is in the socket's buffer (a fixed 1.2 s step was shorter
     * than the gateway's reply under valgrind on a busy machine once) */
    usleep(1600 * 1000); /* the step */
    for (int i = 0; i < 2000 && gateway_count(&g, 'R') == 0; i++)
        usleep(10000); /* the poll: the step lasts until the reply came */
    replied = gateway_count(&g, 'R');
    r = preempt_etcd_run_until_(e, 3000, answered, &a);
    preempt_etcd_free_(e);
    event_base_free(base);
    sent = gateway_count(&g, 'r');
    gateway_stop(&g); /* before any check: a failed one leaves the test at once */
    ck_assert(!early);
    ck_assert_int_eq(replied, 1);
    ck_assert_int_eq(r, 0);
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(sent, 1); /* answered from the buffer, never sent again */
}
END_TEST

/* The client never writes a job's record whose value is not its grammar
 * (the issue's garbage notice, as a drifted writer would make it), nor
 * names a key that did not fit: refused at once, nothing sent; a key
 * outside a job, and a valid value, go. */
static void ignore_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg);

START_TEST(test_no_write_outside_the_schema)
{
    struct event_base *base = event_base_new();
    struct preempt_etcd *e;
    struct answer a = { 0 };
    struct gateway g;
    struct preempt_etcd_op bad[] = { { PREEMPT_ETCD_OP_PUT, "/preempt/j/1/e0/r0/agreed", TV("12"), 0 },
                                     { PREEMPT_ETCD_OP_PUT, "/preempt/j/1/w/e0/r0/shard/12/0", TV("5 stop="), 0 } };

    fake_gateway(0, &g);
    e = gateway_client(&g, base, 300);
    ck_assert_int_eq(preempt_etcd_do_(e, PREEMPT_RQ_PUT("/preempt/j/1/e0/notice/1", TV("zzz not-a-deadline"), 0), 5000,
                                      on_answer, &a),
                     -EBADMSG);
    ck_assert_int_eq(preempt_etcd_do_(e, PREEMPT_RQ_CREATE("/preempt/j/1/decision/e0/r0", TV("committed 12 stop=9 last")),
                                      5000, on_answer, &a),
                     -EBADMSG);
    ck_assert_int_eq(preempt_etcd_do_(e, PREEMPT_RQ_TXN(NULL, 0, bad, 1, bad + 1, 1), 5000, on_answer, &a), -EBADMSG);
    /* nor a request naming a key that did not fit (no key): a delete of
     * everything under "" would delete everything */
    ck_assert_int_eq(preempt_etcd_do_(e, PREEMPT_RQ_DELETE_UNDER(""), 5000, on_answer, &a), -ENAMETOOLONG);
    ck_assert_uint_eq(preempt_etcd_pending_(e), 0);
    {
        static const struct preempt_etcd_watch_ops wops = { .on_event = ignore_event };
        struct preempt_etcd_watch *wn = NULL;

        ck_assert_int_eq(preempt_etcd_watch_(e, "", NULL, 0, &wops, NULL, &wn), -ENAMETOOLONG);
        ck_assert_int_eq(preempt_etcd_watch_(e, "/preempt/j/", "", 0, &wops, NULL, &wn), -ENAMETOOLONG);
        ck_assert_ptr_null(wn);
    }
    ck_assert_int_eq(preempt_etcd_do_(e, PREEMPT_RQ_PUT("elsewhere", TV("anything at all"), 0), 5000, on_answer, &a), 0);
    ck_assert_int_eq(preempt_etcd_run_until_(e, 3000, answered, &a), 0);
    ck_assert_int_eq(a.status, 0);
    a = (struct answer){ 0 };
    bad[1].value = TV("5 last stop=13");
    ck_assert_int_eq(preempt_etcd_do_(e, PREEMPT_RQ_TXN(NULL, 0, bad, 1, bad + 1, 1), 5000, on_answer, &a), 0);
    ck_assert_int_eq(preempt_etcd_run_until_(e, 3000, answered, &a), 0);
    ck_assert_int_eq(gateway_count(&g, 'r'), 2); /* the two that went */
    preempt_etcd_free_(e);
    event_base_free(base);
    gateway_stop(&g);
}
END_TEST

static void ignore_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    (void)type;
    (void)kv;
    (void)arg;
}

static void link_changed(bool up, const char *why, void *arg)
{
    (void)why;
    *(bool *)arg = up;
}

static bool link_up(void *arg)
{
    return *(bool *)arg;
}

/* A watch stream takes a connection of its own and keeps it: the
 * connection the client's requests used stays theirs. The claim that opens
 * a preemption is typically the first request after the watch opened; when
 * the watch had taken the only open connection, the claim waited for a new
 * one's handshake (seen in make bench: 0.2-1.3 ms of a 3-6 ms agreement,
 * more with TLS). */
START_TEST(test_watch_keeps_its_own_connection)
{
    struct event_base *base = event_base_new();
    struct preempt_etcd_watch_ops ops = { .on_event = ignore_event, .on_link = link_changed };
    struct preempt_etcd *e;
    struct preempt_etcd_watch *w;
    struct answer a = { 0 }, b = { 0 };
    struct gateway g;
    bool up = false;

    fake_gateway(0, &g);
    e = gateway_client(&g, base, 0);
    ck_assert_int_eq(preempt_etcd_do_(e, PREEMPT_RQ_PUT("x", TV("y"), 0), 5000, on_answer, &a), 0);
    ck_assert_int_eq(preempt_etcd_run_until_(e, 3000, answered, &a), 0);
    ck_assert_int_eq(gateway_count(&g, 'c'), 1);
    ck_assert_int_eq(preempt_etcd_watch_(e, "/job/", NULL, 6, &ops, &up, &w), 0);
    ck_assert_int_eq(preempt_etcd_run_until_(e, 3000, link_up, &up), 0);
    ck_assert(up);
    ck_assert_int_eq(gateway_count(&g, 'w'), 1);
    ck_assert_int_eq(gateway_count(&g, 'c'), 2); /* the watch's own */
    ck_assert_int_eq(preempt_etcd_do_(e, PREEMPT_RQ_PUT("x", TV("z"), 0), 5000, on_answer, &b), 0);
    ck_assert_int_eq(preempt_etcd_run_until_(e, 3000, answered, &b), 0);
    ck_assert_int_eq(b.status, 0);
    ck_assert_int_eq(gateway_count(&g, 'r'), 2);
    ck_assert_int_eq(gateway_count(&g, 'c'), 2); /* the put found its connection open */
    preempt_etcd_watch_free_(w);
    preempt_etcd_free_(e);
    event_base_free(base);
    gateway_stop(&g);
}
END_TEST

static bool gateway_read(void *arg)
{
    return gateway_count(arg, 'r') > 0;
}

/* A watch that has read nothing yet opens its stream from now, and then
 * reads the watched range as it was when the stream was created (the
 * created message's revision), in that order. The other order (a read,
 * then a stream from the read's revision + 1) makes etcd hold the stream
 * whenever anything was written in between: it serves a stream opened at
 * a revision it has passed only at its next catch-up of such streams, every
 * 100 ms (docs/benchmarks.md, section 11: start-up's barriers paid it). */
START_TEST(test_watch_opens_from_now)
{
    struct event_base *base = event_base_new();
    struct preempt_etcd_watch_ops ops = { .on_event = ignore_event, .on_link = link_changed };
    struct preempt_etcd *e;
    struct preempt_etcd_watch *w;
    struct gateway g;
    bool up = false;
    const char *opened, *read_at;
    int r;

    fake_gateway(0, &g);
    e = gateway_client(&g, base, 0);
    ck_assert_int_eq(preempt_etcd_watch_(e, "/job/", NULL, 0, &ops, &up, &w), 0);
    r = preempt_etcd_run_until_(e, 3000, gateway_read, &g);
    preempt_etcd_watch_free_(w);
    preempt_etcd_free_(e);
    event_base_free(base);
    gateway_stop(&g); /* before any check: a failed one leaves the test at once */
    ck_assert_int_eq(r, 0);
    opened = memchr(g.seen, 'w', g.n_seen);
    read_at = memchr(g.seen, 'r', g.n_seen);
    ck_assert_ptr_nonnull(opened);
    ck_assert_ptr_nonnull(read_at);
    ck_assert(opened < read_at);                       /* the stream first, */
    ck_assert_ptr_nonnull(memchr(g.seen, 'v', g.n_seen)); /* then the read at its revision */
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("etcd");
    TCase *t = tcase_create("pure");

    tcase_add_test(t, test_b64_round_trip);
    tcase_add_test(t, test_b64_rejects_garbage);
    tcase_add_test(t, test_prefix_end);
    tcase_add_test(t, test_bodies);
    tcase_add_test(t, test_range_replies);
    tcase_add_test(t, test_txn_replies);
    tcase_add_test(t, test_txn_second_read);
    tcase_add_test(t, test_lease_replies);
    tcase_add_test(t, test_numbers_strict);
    tcase_add_test(t, test_req_copy);
    tcase_add_loop_test(t, test_framing_any_chunking, 0, 64);
    tcase_add_test(t, test_framing_overlong_line);
    tcase_add_test(t, test_classify_malformed);
    tcase_add_test(t, test_classify_auth_cancel);
    tcase_add_test(t, test_watch_decoder);
    tcase_add_test(t, test_watch_decoder_txn);
    tcase_add_test(t, test_watch_decoder_ends);
    tcase_add_test(t, test_watch_decoder_store_moved);
    tcase_add_test(t, test_job_names);
    tcase_add_test(t, test_restore_plan);
    tcase_add_test(t, test_keys_exact);
    tcase_add_test(t, test_keys_round_trip);
    tcase_add_test(t, test_keys_rejected);
    tcase_add_test(t, test_keys_layout);
    tcase_add_test(t, test_step_values);
    tcase_add_test(t, test_shard_values);
    tcase_add_test(t, test_committed_values);
    tcase_add_test(t, test_record_grammar);
    tcase_add_test(t, test_record_format);
    tcase_add_test(t, test_typed_records);
    tcase_add_test(t, test_pub_machine);
    tcase_add_test(t, test_claim_machine);
    tcase_add_test(t, test_membership_machine);
    tcase_add_test(t, test_decl_every_pair_decided);
    tcase_add_test(t, test_links_declared);
    tcase_add_test(t, test_lease_machine);
    tcase_add_test(t, test_watch_machine);
    tcase_add_test(t, test_junk_slots);
    tcase_add_test(t, test_coord_runs_to_completion);
    tcase_add_test(t, test_coord_no_claim_when_ending);
    tcase_add_test(t, test_coord_reread_applies_changes);
    tcase_add_test(t, test_episode_machine);
    tcase_add_test(t, test_decision_machine);
    tcase_add_test(t, test_launch_outcome);
    tcase_add_test(t, test_phase_end);
    tcase_add_test(t, test_restore_machine);
    tcase_add_test(t, test_joining_machines);
    tcase_add_test(t, test_join_attempt);
    tcase_add_test(t, test_start_driver);
    tcase_add_test(t, test_startup_step);
    tcase_add_test(t, test_startup_wire);
    tcase_add_test(t, test_coord_wire);
    tcase_add_test(t, test_view_summary);
    tcase_add_test(t, test_view_notices);
    tcase_add_test(t, test_view_workers);
    tcase_add_test(t, test_view_claim_carries_notice);
    tcase_add_test(t, test_view_rounds);
    tcase_add_test(t, test_view_reports);
    tcase_add_test(t, test_claim_answer);
    tcase_add_test(t, test_lost_decision);
    tcase_add_test(t, test_view_episodes);
    suite_add_tcase(s, t);
    t = tcase_create("client");
    tcase_add_test(t, test_step_does_not_time_out_a_request);
    tcase_add_test(t, test_no_write_outside_the_schema);
    tcase_add_test(t, test_watch_keeps_its_own_connection);
    tcase_add_test(t, test_watch_opens_from_now);
    tcase_set_timeout(t, 20);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return preempt_run_suite(suite());
}
