/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check_readers.c: every reader of a job's records judges the
 * same records alike. The coordinator (a worker's reader, on a port that
 * keeps its two watches), the watcher (preempt_watcher_new_io_ on such a
 * port) and preemptctl status (lib/job/status.c) each read the same record
 * sequences, table-driven: every kind, well formed and malformed, a notice
 * of a worker the job does not have, an incarnation counter of "007",
 * member records good and bad, as a whole read in the keys' order, as a
 * whole read in the reverse order, and record by record as a watch
 * streams them. They must say the same of the job's notices (whose is the
 * earliest, its deadline, whether one stands), of the records the workers
 * ignore, and of the members (who ended, whether every one that joined has
 * gone), and what the table says they must. Given its own parser back
 * (strtoull for the incarnation, PREEMPT_MAX_WORKERS as the bound, the key
 * alone for a member), a reader judges one of these differently. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-main.h"
#include "job/coord-internal.h"
#include "etcd/etcd-internal.h"
#include "records/keys-internal.h"
#include "job/status-internal.h"
#include "job/view-internal.h"
#include "handler/watcher-internal.h"
#include "silent-port.h"
#include "preempt.h"

#define JOBP "/preempt/job/"
#define WALL 1000000 /* the port's clock (unix ms): every deadline below is after it */

/* ---- the cases ---- */

struct rec {
    const char *key; /* under JOBP */
    const char *value; /* NULL: deleted */
    int64_t rev;
};

#define RECS 16

/* What a reader says of a read. */
struct judged {
    int worker;        /* whose notice holds the earliest deadline (-1: the operator's; -2: no notice) */
    uint64_t deadline; /* it (1: none given) */
    bool live;         /* a notice stands */
    char ignored[256]; /* the keys (under JOBP) the workers ignore, in the keys' order, ' ' after each */
    unsigned ended;    /* bit w: worker w's membership ended (it was a member; not worker 0, the coordinator's own) */
    bool exited;       /* every worker that joined has gone */
    bool streamed_exit; /* the watcher says so from the stream alone (a whole read can tell more) */
};

struct reader_case {
    const char *name;
    struct rec recs[RECS];
    struct judged want;
};

/* Every case is of incarnation 7 of a job of 3 workers; the coordinator is worker 0 and
 * took part in it, the counter and the shape lead each read. */
#define HEAD { "incarnation", "7", 2 }, { "7/shape", "workers=3", 3 }
#define MEMBER "pid=10 host=h launch=L workers=3 steps="

static const struct reader_case cases[] = {
    { "one notice",
      { HEAD, { "7/e0/notice/1", "2000000 signal", 10 } },
      { 1, 2000000, true, "", 0, false, false } },
    { "the earliest of two, one withdrawn",
      { HEAD, { "7/e0/notice/1", "3000000 gce", 11 }, { "7/e0/notice/2", "2500000 signal withdrawn", 10 } },
      { 2, 2500000, true, "", 0, false, false } },
    { "every notice withdrawn",
      { HEAD, { "7/e0/notice/2", "2500000 signal withdrawn", 10 } },
      { 2, 2500000, false, "", 0, false, false } },
    /* the job has 3 workers: worker 7's notice is no worker's (seen: the
     * watcher reported it as the job's) */
    { "a notice of worker 7",
      { HEAD, { "7/e0/notice/7", "1500000 signal", 10 }, { "7/e0/notice/1", "2000000 signal", 11 } },
      { 1, 2000000, true, "7/e0/notice/7 ", 0, false, false } },
    { "garbage notices",
      { HEAD, { "7/e0/notice/1", "zzz not-a-deadline", 10 },
        { "7/e0/notice/2", "18446744073709551615999 signal withdrawn", 11 }, { "7/e0/notice/3", "1200000 x", 12 } },
      { -2, 0, false, "7/e0/notice/1 7/e0/notice/2 7/e0/notice/3 ", 0, false, false } },
    { "the operator's, earlier than a worker's",
      { HEAD, { "7/e0/notice/1", "2000000 signal", 10 }, { "7/notice/op", "1800000 operator", 12 } },
      { -1, 1800000, true, "", 0, false, false } },
    /* the members: 0 and 2 alive, 1's record garbage: no member (its
     * membership ends), nor is worker 5 one */
    { "members, one of them garbage",
      { HEAD, { "7/w/joined/0", MEMBER, 4 }, { "7/w/joined/1", MEMBER, 5 }, { "7/w/joined/2", MEMBER, 6 },
        { "7/w/alive/0", MEMBER, 4 }, { "7/w/alive/1", "garbage", 8 }, { "7/w/alive/2", MEMBER, 6 },
        { "7/w/alive/5", MEMBER, 9 } },
      { -2, 0, false, "7/w/alive/1 7/w/alive/5 ", 1u << 1, false, false } },
    /* the workers join (each its joined and member records in one
     * transaction) before the first of them writes the shape
     * (create-if-absent, after its join), and the watch streams them in
     * that order: the members stand (seen: the watcher, narrowed to the
     * job's workers by the shape, forgot them and never saw the job
     * exit); then every member record goes */
    { "members before the shape",
      { { "incarnation", "7", 2 }, { "7/w/joined/0", MEMBER, 3 }, { "7/w/alive/0", MEMBER, 3 },
        { "7/w/joined/1", MEMBER, 4 }, { "7/w/alive/1", MEMBER, 4 }, { "7/w/joined/2", MEMBER, 5 },
        { "7/w/alive/2", MEMBER, 5 }, { "7/shape", "workers=3", 6 }, { "7/w/alive/1", NULL, 10 },
        { "7/w/alive/2", NULL, 11 }, { "7/w/alive/0", NULL, 12 } },
      { -2, 0, false, "", 3u << 1, true, true } },
    /* every member record gone: worker 1's membership ended without its
     * done record (the coordinator tells its owner), worker 2's after it */
    { "every member gone, one done",
      { HEAD, { "7/w/joined/0", MEMBER, 4 }, { "7/w/joined/1", MEMBER, 5 }, { "7/w/joined/2", MEMBER, 6 },
        { "7/w/done/2", "150", 20 } },
      { -2, 0, false, "", 1u << 1, true, false } },
};

/* The records of a case, as etcd holds them at its end (kv), in the keys' order. */
static size_t kvs_of(const struct reader_case *c, struct preempt_etcd_kv *kvs, char keys[][PREEMPT_KEY_MAX])
{
    size_t n = 0;

    for (size_t i = 0; i < RECS && c->recs[i].key; i++) {
        bool later = false; /* a later write of the key (a delete) */

        for (size_t k = i + 1; k < RECS && c->recs[k].key; k++)
            later = later || !strcmp(c->recs[k].key, c->recs[i].key);
        if (!c->recs[i].value || later)
            continue;
        (void)snprintf(keys[n], PREEMPT_KEY_MAX, JOBP "%s", c->recs[i].key);
        kvs[n] = (struct preempt_etcd_kv){ .key = keys[n], .value = (char *)c->recs[i].value,
                                           .create_rev = c->recs[i].rev, .mod_rev = c->recs[i].rev };
        n++;
    }
    for (size_t i = 1; i < n; i++) /* the keys' order, as a read comes */
        for (size_t j = i; j > 0 && strcmp(kvs[j - 1].key, kvs[j].key) > 0; j--) {
            struct preempt_etcd_kv t = kvs[j];

            kvs[j] = kvs[j - 1];
            kvs[j - 1] = t;
        }
    return n;
}

static bool member_key(const char *key)
{
    return strstr(key, "/w/alive/") || strstr(key, "/w/done/") || strstr(key, "/w/joined/");
}

static bool member_key(const char *key);

/* Which keys a watch streams. */
static bool any_key(const char *key)
{
    (void)key;
    return true;
}

static bool record_key(const char *key) /* the coordinator's records watch: up to N/w/ */
{
    return !member_key(key);
}

static bool alive_key(const char *key) /* its members watch: the alive and done records */
{
    return strstr(key, "/w/alive/") || strstr(key, "/w/done/");
}

/* The case c's writes as a watch streams them: in revision order, one
 * transaction's in the order it made them (the table's), each that in()
 * takes. */
static void stream(const struct preempt_etcd_watch_ops *ops, void *arg, const struct reader_case *c,
                   bool (*in)(const char *key))
{
    size_t order[RECS], n = 0;

    for (size_t i = 0; i < RECS && c->recs[i].key; i++)
        order[n++] = i;
    for (size_t i = 1; i < n; i++) /* stable */
        for (size_t j = i; j > 0 && c->recs[order[j - 1]].rev > c->recs[order[j]].rev; j--) {
            size_t t = order[j];

            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        const struct rec *r = &c->recs[order[i]];
        char key[PREEMPT_KEY_MAX];
        struct preempt_etcd_kv kv = { .key = key, .value = (char *)r->value, .create_rev = r->rev,
                                      .mod_rev = r->rev };

        (void)snprintf(key, sizeof(key), JOBP "%s", r->key);
        if (in(key))
            ops->on_event(r->value ? PREEMPT_ETCD_PUT : PREEMPT_ETCD_DELETE, &kv, arg);
    }
}

/* How a read reaches a reader. */
enum feed { FEED_READ, FEED_REVERSED, FEED_STREAM };
static const char *const feed_names[] = { "a whole read", "a whole read in reverse", "a stream" };

/* kvs delivered to a watch as a whole read (FEED_STREAM: stream()). */
static void deliver(const struct preempt_etcd_watch_ops *ops, void *arg, const struct preempt_etcd_kv *kvs, size_t n,
                    enum feed f)
{
    struct preempt_etcd_kv copy[RECS];

    memcpy(copy, kvs, n * sizeof(*copy));
    if (f == FEED_REVERSED)
        for (size_t i = 0; i < n / 2; i++) {
            struct preempt_etcd_kv t = copy[i];

            copy[i] = copy[n - 1 - i];
            copy[n - 1 - i] = t;
        }
    ops->on_reset(copy, n, 100, 1, arg);
}

/* The keys judged, as judged.ignored lists them: those of kvs (keys' order) marked in bad. */
static void list_ignored(char *buf, size_t size, const struct preempt_etcd_kv *kvs, size_t n, const bool *bad)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (bad[i] && len < size)
            len += (size_t)snprintf(buf + len, size - len, "%s ", kvs[i].key + strlen(JOBP));
}

/* ---- the coordinator ---- */

static struct {
    const struct preempt_view *view;
    const struct preempt_etcd_kv *kvs;
    size_t n;
    bool bad[RECS];
    unsigned ended;
} co;

static void co_log(int level, const char *msg, void *arg)
{
    (void)level, (void)arg;
    for (size_t i = 0; i < co.n; i++) { /* "ignoring <key> = ...": a record it does not act on */
        size_t kl = strlen(co.kvs[i].key);

        if (!strncmp(msg, "ignoring ", 9) && !strncmp(msg + 9, co.kvs[i].key, kl) && msg[9 + kl] == ' ')
            co.bad[i] = true;
    }
}

static void co_post(const struct preempt_event *ev, void *arg)
{
    (void)ev, (void)arg;
}

static uint64_t co_now(void *arg)
{
    (void)arg;
    return 50;
}

static void co_view(const struct preempt_view *v, const struct preempt_view_in *in, const struct preempt_view_ev *ev,
                    void *arg)
{
    (void)in, (void)ev, (void)arg;
    co.view = v;
}

static void co_gone(unsigned worker, const char *why, void *arg)
{
    (void)why, (void)arg;
    co.ended |= 1u << worker;
}

static struct judged by_coordinator(const struct reader_case *rc, const struct preempt_etcd_kv *kvs, size_t n,
                                    enum feed f)
{
    struct preempt_coord_ops ops = { .post = co_post, .now_ms = co_now, .log = co_log, .on_view = co_view };
    struct preempt_coord_cfg cfg = { .job = "job", .worker = 0, .workers = 3, .lease_ttl_s = 10, .give_up_ms = 1000 };
    struct preempt_coord_join join = { .incarnation = 7, .lease = 99 };
    struct preempt_etcd_kv records[RECS], members[RECS], alive0 = { .key = JOBP "7/w/alive/0", .value = MEMBER,
                                                                      .create_rev = 4, .mod_rev = 4 };
    size_t nr = 0, nm = 0;
    bool has_members = false;
    struct silent_port p = { .wall_ms = WALL };
    struct preempt_coord *c;
    struct preempt_view_summary sum;
    struct judged j = { 0 };

    memset(&co, 0, sizeof(co));
    co.kvs = kvs;
    co.n = n;
    ck_assert_int_eq(preempt_coord_new_io_(&silent_io, &p, &cfg, &join, &ops, NULL, &c), 0);
    ck_assert_int_eq(preempt_coord_watch_members_(c, co_gone, NULL), 0);
    ck_assert_ptr_nonnull(p.ops[0]);
    ck_assert_ptr_nonnull(p.ops[1]);
    /* its two watches: the records up to the members', and the alive and done records */
    for (size_t i = 0; i < n; i++) {
        if (!member_key(kvs[i].key))
            records[nr++] = kvs[i];
        else if (!strstr(kvs[i].key, "/w/joined/"))
            members[nm++] = kvs[i];
    }
    for (size_t i = 0; i < RECS && rc->recs[i].key; i++)
        has_members = has_members || strstr(rc->recs[i].key, "/w/");
    /* every member alive first, as when the worker started: a read that lacks one ends it */
    {
        struct preempt_etcd_kv start[3] = { alive0, alive0, alive0 };
        char k1[] = JOBP "7/w/alive/1", k2[] = JOBP "7/w/alive/2";

        start[1].key = k1;
        start[2].key = k2;
        p.ops[1]->on_reset(start, 3, 4, 1, p.arg[1]);
        ck_assert_uint_eq(co.ended, 0);
    }
    if (f == FEED_STREAM) {
        p.ops[0]->on_reset(NULL, 0, 1, 1, p.arg[0]);
        stream(p.ops[0], p.arg[0], rc, record_key);
    } else {
        deliver(p.ops[0], p.arg[0], records, nr, f);
    }
    if (!has_members) {
        /* no member records in the case: the members watch is not read */
    } else if (f == FEED_STREAM) { /* a stream of the members: the ones not there at the end went */
        static const char *const alive[] = { JOBP "7/w/alive/1", JOBP "7/w/alive/2" };

        stream(p.ops[1], p.arg[1], rc, alive_key);
        for (unsigned w = 1; w <= 2; w++) {
            bool there = false;

            for (size_t i = 0; i < nm; i++)
                there = there || !strcmp(members[i].key, alive[w - 1]);
            if (!there)
                p.ops[1]->on_event(PREEMPT_ETCD_DELETE, &(struct preempt_etcd_kv){ .key = (char *)alive[w - 1] },
                                   p.arg[1]);
        }
    } else {
        deliver(p.ops[1], p.arg[1], members, nm, f);
    }
    ck_assert_ptr_nonnull(co.view);
    preempt_view_summary_(co.view, &sum);
    j.worker = sum.earliest ? sum.worker : -2;
    j.deadline = sum.earliest;
    j.live = sum.live;
    list_ignored(j.ignored, sizeof(j.ignored), kvs, n, co.bad);
    j.ended = co.ended;
    preempt_coord_free_(c);
    return j;
}

/* ---- the watcher ---- */

static struct {
    bool told;
    struct preempt_notice_info last;
} wa;

static void wa_notice(struct preempt_watcher *w, const struct preempt_notice_info *info, void *ud)
{
    (void)w, (void)ud;
    wa.told = true;
    wa.last = *info;
}

static struct judged by_watcher(const struct reader_case *rc, const struct preempt_etcd_kv *kvs, size_t n, enum feed f,
                                const bool *ignored)
{
    struct preempt_watcher_callbacks cb = { .on_notice = wa_notice };
    struct silent_port p = { .wall_ms = WALL };
    struct preempt_watcher *w;
    struct preempt_notice_info info;
    struct judged j = { .worker = -2 };
    bool exited = false;

    memset(&wa, 0, sizeof(wa));
    ck_assert_int_eq(preempt_watcher_new_io_(&silent_io, &p, "job", &cb, NULL, &w), 0);
    ck_assert_ptr_nonnull(p.ops[0]);
    if (f == FEED_STREAM) {
        p.ops[0]->on_reset(NULL, 0, 1, 1, p.arg[0]);
        stream(p.ops[0], p.arg[0], rc, any_key);
        ck_assert_int_eq(preempt_watcher_get_exited(w, &exited), 0);
        j.streamed_exit = exited;
        deliver(p.ops[0], p.arg[0], kvs, n, FEED_READ); /* the watch reopened: a whole read can tell more */
    } else {
        deliver(p.ops[0], p.arg[0], kvs, n, f);
    }
    if (preempt_watcher_get_notice(w, &info) == 0) {
        ck_assert(wa.told);
        ck_assert_uint_eq(info.incarnation, 7);
        j.worker = info.worker;
        j.deadline = info.deadline_unix_ms;
        j.live = !info.withdrawn;
    }
    ck_assert_int_eq(preempt_watcher_get_exited(w, &exited), 0);
    j.exited = exited;
    /* the watcher reports no record it ignores, nor members one by one: the others' lists stand for it */
    list_ignored(j.ignored, sizeof(j.ignored), kvs, n, ignored);
    preempt_watcher_free(w);
    return j;
}

/* ---- preemptctl status ---- */

static struct judged by_status(const struct preempt_etcd_kv *kvs, size_t n, bool *bad)
{
    struct preempt_status_rec recs[RECS];
    struct preempt_etcd_kv inc[RECS];
    struct preempt_job_status st;
    struct judged j = { 0 };
    size_t m = 0;

    for (size_t i = 0; i < n; i++) /* status reads the incarnation's range; the counter is read first, alone */
        if (strcmp(kvs[i].key, JOBP "incarnation"))
            inc[m++] = kvs[i];
    ck_assert_int_eq(preempt_job_status_read_(JOBP, 7, inc, m, recs, &st), 0);
    for (size_t i = 0, k = 0; i < n; i++)
        bad[i] = strcmp(kvs[i].key, JOBP "incarnation") && recs[k++].why;
    j.worker = st.notices.earliest ? st.notices.worker : -2;
    j.deadline = st.notices.earliest;
    j.live = st.notices.live;
    list_ignored(j.ignored, sizeof(j.ignored), kvs, n, bad);
    j.exited = st.members.joined > 0 && st.members.alive == 0 && st.members.ended >= st.members.joined;
    return j;
}

static void same(const char *reader, const char *name, enum feed f, const struct judged *got,
                 const struct judged *want, bool members)
{
    ck_assert_msg(got->worker == want->worker && got->deadline == want->deadline && got->live == want->live,
                  "%s, %s (%s): the earliest notice is worker %d's at %" PRIu64 " (stands: %d), not worker %d's at "
                  "%" PRIu64 " (%d)",
                  reader, name, feed_names[f], got->worker, got->deadline, got->live, want->worker, want->deadline,
                  want->live);
    ck_assert_msg(!strcmp(got->ignored, want->ignored), "%s, %s (%s): ignores \"%s\", not \"%s\"", reader, name,
                  feed_names[f], got->ignored, want->ignored);
    if (members)
        ck_assert_msg(got->exited == want->exited, "%s, %s (%s): every worker gone: %d, not %d", reader, name,
                      feed_names[f], got->exited, want->exited);
}

START_TEST(test_readers_agree)
{
    const struct reader_case *c = &cases[_i];
    struct preempt_etcd_kv kvs[RECS];
    char keys[RECS][PREEMPT_KEY_MAX];
    size_t n = kvs_of(c, kvs, keys);
    bool bad[RECS];
    struct judged st = by_status(kvs, n, bad);

    same("preemptctl status", c->name, FEED_READ, &st, &c->want, true);
    for (enum feed f = FEED_READ; f <= FEED_STREAM; f++) {
        struct judged co_j = by_coordinator(c, kvs, n, f), wa_j = by_watcher(c, kvs, n, f, bad);

        /* the coordinator's members: ended ones (1 and 2 are the peers that were alive) */
        same("the coordinator", c->name, f, &co_j, &c->want, false);
        ck_assert_msg(co_j.ended == c->want.ended, "the coordinator, %s (%s): told the membership of %#x ended, not %#x",
                      c->name, feed_names[f], co_j.ended, c->want.ended);
        same("the watcher", c->name, f, &wa_j, &c->want, true);
        if (f == FEED_STREAM)
            ck_assert_msg(wa_j.streamed_exit == c->want.streamed_exit,
                          "the watcher, %s (a stream): every worker gone: %d, not %d", c->name, wa_j.streamed_exit,
                          c->want.streamed_exit);
    }
}
END_TEST

/* An incarnation counter that is not a number from 1 without leading
 * zeros ("007") names no incarnation for any reader: the watcher moves
 * only by the records' own incarnations, and the one reading every
 * reader uses (start-up's and preemptctl's) refuses it. */
START_TEST(test_readers_incarnation_007)
{
    struct preempt_watcher_callbacks cb = { .on_notice = wa_notice };
    struct preempt_etcd_kv kvs[] = { { .key = JOBP "incarnation", .value = "007", .create_rev = 2, .mod_rev = 2 },
                                     { .key = JOBP "7/e0/notice/1", .value = "2000000 signal", .create_rev = 3,
                                       .mod_rev = 3 } };
    struct silent_port p = { .wall_ms = WALL };
    struct preempt_watcher *w;
    struct preempt_notice_info info;
    uint64_t inc = 99;

    ck_assert_int_eq(preempt_view_inc_("007", &inc), -EPROTO);
    ck_assert_int_eq(preempt_view_inc_("7", &inc), 0);
    ck_assert_uint_eq(inc, 7);
    memset(&wa, 0, sizeof(wa));
    ck_assert_int_eq(preempt_watcher_new_io_(&silent_io, &p, "job", &cb, NULL, &w), 0);
    p.ops[0]->on_reset(kvs, 1, 2, 1, p.arg[0]); /* the counter alone: no incarnation */
    ck_assert_int_eq(preempt_watcher_get_notice(w, &info), -EAGAIN);
    p.ops[0]->on_event(PREEMPT_ETCD_PUT, &kvs[1], p.arg[0]); /* a record of incarnation 7 */
    ck_assert_int_eq(preempt_watcher_get_notice(w, &info), 0);
    ck_assert_uint_eq(info.incarnation, 7);
    p.ops[0]->on_event(PREEMPT_ETCD_PUT,
                       &(struct preempt_etcd_kv){ .key = JOBP "incarnation", .value = "0008", .mod_rev = 5 },
                       p.arg[0]); /* read as 8 by strtoull: a new incarnation, its notice forgotten */
    ck_assert_int_eq(preempt_watcher_get_notice(w, &info), 0);
    ck_assert_uint_eq(info.incarnation, 7);
    preempt_watcher_free(w);
}
END_TEST

/* preemptctl status lists each record as status read it, once: a
 * notice's deadline, source and withdrawal, a malformed one's reason, a
 * foreign worker's notice as malformed (the listing reads no value again:
 * tools/preemptctl.c calls no reader of record values for it). */
START_TEST(test_status_lists_what_it_read)
{
    struct preempt_etcd_kv kvs[] = {
        { .key = JOBP "7/shape", .value = "workers=3", .create_rev = 3, .mod_rev = 3 },
        { .key = JOBP "7/e0/notice/1", .value = "2000000 signal", .create_rev = 4, .mod_rev = 4 },
        { .key = JOBP "7/e0/notice/2", .value = "2500000 gce withdrawn", .create_rev = 5, .mod_rev = 5 },
        { .key = JOBP "7/notice/op", .value = "1800000 operator", .create_rev = 6, .mod_rev = 6 },
        { .key = JOBP "7/e0/notice/7", .value = "1500000 signal", .create_rev = 7, .mod_rev = 7 },
        { .key = JOBP "7/e0/notice/0", .value = "zzz signal", .create_rev = 8, .mod_rev = 8 },
    };
    struct preempt_status_rec recs[6];
    struct preempt_job_status st;

    ck_assert_int_eq(preempt_job_status_read_(JOBP, 7, kvs, 6, recs, &st), 0);
    ck_assert(!recs[0].why && !recs[0].notice);
    ck_assert(!recs[1].why && recs[1].notice && recs[1].deadline == 2000000 && !recs[1].withdrawn);
    ck_assert(recs[1].source_len == 6 && !memcmp(recs[1].source, "signal", 6));
    ck_assert(!recs[2].why && recs[2].notice && recs[2].deadline == 2500000 && recs[2].withdrawn);
    ck_assert(recs[2].source_len == 3 && !memcmp(recs[2].source, "gce", 3));
    ck_assert(!recs[3].why && recs[3].notice && recs[3].deadline == 1800000 && !recs[3].withdrawn);
    ck_assert(recs[3].source_len == 8 && !memcmp(recs[3].source, "operator", 8));
    ck_assert(recs[4].why && !recs[4].notice); /* worker 7 of a job of 3 */
    ck_assert(recs[5].why && !recs[5].notice);
    ck_assert_uint_eq(st.malformed, 2);
}
END_TEST

static Suite *readers_suite(void)
{
    Suite *s = suite_create("readers");
    TCase *tc = tcase_create("readers");

    tcase_add_loop_test(tc, test_readers_agree, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, test_readers_incarnation_007);
    tcase_add_test(tc, test_status_lists_what_it_read);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return preempt_run_suite(readers_suite());
}
