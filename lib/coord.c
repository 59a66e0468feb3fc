/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/coord.c: the multi-worker protocol over etcd while the job runs (see
 * coord-internal.h and docs/protocol.md); start-up is lib/startup.c's, the
 * libevent adapter of the port lib/coord-io.c's. The key layout under P = /preempt/<job>/ is
 * lib/keys-internal.h's one table: P/incarnation, and under incarnation N
 * the records every worker watches, [P/N/, P/N/w/), and the per-worker
 * records under P/N/w/, counted in etcd by the transaction that writes
 * them, that only the driver reads (docs/protocol.md, "Traffic").
 *
 * p counts the job's preemption episodes in N: 0 first; every worker moves on
 * to p + 1 when its machine clears the round after the notices were withdrawn
 * (clear-round), so that the records of an ended episode, however late they
 * land or are deleted, never touch the next one. Round 0 is the first save;
 * round 1 the final save of a grace period. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord-internal.h"
#include "keys-internal.h"
#include "claim-internal.h"
#include "episode-internal.h"
#include "membership-internal.h"
#include "pub-internal.h"
#include "records-internal.h"
#include "view-internal.h"
#include "platform-internal.h"

bool preempt_coord_job_ok_(const char *job)
{
    size_t n = job ? strlen(job) : 0;

    if (n == 0 || n > PREEMPT_MAX_JOB || !strcmp(job, ".") || !strcmp(job, ".."))
        return false;
    return strspn(job, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

bool preempt_coord_launch_ok_(const char *launch)
{
    size_t n = launch ? strlen(launch) : 0;

    return n > 0 && n <= PREEMPT_MAX_LAUNCH &&
           strspn(launch, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

int preempt_coord_prefix_(const char *job, char *buf, size_t size)
{
    if (!preempt_coord_job_ok_(job))
        return -EINVAL;
    return snprintf(buf, size, "/preempt/%s/", job) < (int)size ? 0 : -ENAMETOOLONG;
}


/* ---- the running protocol ----------------------------------------------------------------- */

struct round {
    uint64_t agreed;
    uint64_t shard_ep; /* the episode of this worker's shard report (answers of older ones are late) */
    bool commit_posted;
};

#define JUNK_MAX 4 /* the claim and the two rounds' steps, and one spare */

struct preempt_coord {
    const struct preempt_coord_io *io;
    void *io_arg;
    struct preempt_coord_ops ops;
    void *arg;
    char jobp[PREEMPT_MAX_JOB + 16];
    char member[PREEMPT_MEMBER_MAX]; /* alive/<me>'s value */
    char pre[PREEMPT_KEY_MAX]; /* P/N/: the watched range's start (for the logs) */
    unsigned me, n;
    unsigned ttl_s, cfg_ttl_s; /* the lease's TTL now; the configured one */
    uint64_t longest_step_ms;  /* the longest step seen (the lease must outlive one) */
    bool granting;         /* a lease grant is on its way (one at a time; the claim's machine may wait for it) */
    uint64_t give_up_ms;
    int64_t lease;
    enum preempt_ep_state episode; /* where the current episode stands (episode-internal.h: declared) */
    bool watch_up;         /* the job's watch is up (else the keep-alive tick reads the records) */
    uint64_t my_notice_wall;
    uint64_t my_deadline;  /* the machine's clock: this worker's earliest deadline (0: none) */
    char my_source[32];
    bool my_withdrawn;     /* this worker's notices are all withdrawn (or advisory) */
    enum preempt_pub_state pub; /* where this worker's notice stands (pub-internal.h: a declared machine) */
    enum preempt_claim_state claim; /* where this worker's driver claim stands (claim-internal.h: declared) */
#define LEFT(c) ((c)->mship == PREEMPT_MSHIP_LEFT)
    bool polling;          /* the driver's read of the memberships is on its way */
    enum preempt_mship_state mship; /* where this worker's membership stands (membership-internal.h: declared) */
    uint64_t prop_step;    /* the claim carries this proposal of round 0's save step (0: none) */
    bool prop_last;        /* with its opinion */
    struct preempt_view view; /* the job's records, read (view-internal.h): its incarnation and episode */
    bool *present;         /* the driver's last read: w is a member, done, or reported a shard */
    uint64_t *gone_at;     /* the driver's clock: w's membership was first found gone (0: it was not) */
    unsigned n_gone;       /* how many gone_at are set */
    struct round r[2];
    /* What the episode's create-if-absent slots (the claim, a round's step)
     * hold when it is no record: garbage an operator or a tool wrote. The
     * writes that would create such a slot compare with that value instead
     * of its absence, and so replace it (a valid record is never replaced:
     * the compare is on the garbage itself). Data, not a decision. */
    struct junk {
        char *key, *value;
    } junk[JUNK_MAX];
    /* The member records as the members watch shows them (NULL: not
     * watched): who is alive, who finished training. Observations told to
     * the owner, not decisions of the protocol. */
    bool *m_alive, *m_done;
    void (*m_gone)(unsigned worker, const char *why, void *arg);
    void *m_arg;
    struct held *held;     /* records of later episodes, by key, until this worker gets there */
    size_t n_held, cap_held;
    bool replaying;        /* held records are being applied: peer notices are merged */
    struct preempt_event merged; /* the earliest peer notice of a replay (kind 0: none) */
};

/* The coordinator's declared machines (decl-internal.h): one input each. */
static unsigned decl_in(struct preempt_coord *c, const struct preempt_decl *m, unsigned *state, unsigned in);
static void claim_in(struct preempt_coord *c, enum preempt_claim_input in);
static void mship_in(struct preempt_coord *c, enum preempt_mship_input in);
static void ep_in(struct preempt_coord *c, enum preempt_ep_input in);

struct held {
    uint64_t ep;
    char *key, *value;
};

static void flush_merged(struct preempt_coord *c)
{
    struct preempt_event ev = c->merged;

    if (ev.kind != PREEMPT_EV_PEER_NOTICE)
        return;
    c->merged.kind = 0;
    c->ops.post(&ev, c->arg);
}

/* Posts ev to the machine. While held records are replayed (inside one of
 * the machine's effects, so the machine's queue fills), their peer notices
 * become one: the earliest deadline is all the machine needs of them. */
static void cpost(struct preempt_coord *c, struct preempt_event ev)
{
    if (c->replaying && ev.kind == PREEMPT_EV_PEER_NOTICE) {
        uint64_t d = ev.u.peer_notice.deadline, m = c->merged.u.peer_notice.deadline;

        if (c->merged.kind != PREEMPT_EV_PEER_NOTICE || (d && (!m || d < m)))
            c->merged = ev;
        return;
    }
    flush_merged(c);
    c->ops.post(&ev, c->arg);
}

#define CLOG(c, level, ...) preempt_logf_((c)->ops.log, (c)->arg, level, __VA_ARGS__)

/* The garbage slot key holds, as last seen; NULL when it holds none. */
static const char *junk_of(const struct preempt_coord *c, const char *key)
{
    for (size_t i = 0; i < JUNK_MAX; i++)
        if (c->junk[i].key && !strcmp(c->junk[i].key, key))
            return c->junk[i].value;
    return NULL;
}

static void junk_clear(struct preempt_coord *c, const char *key) /* NULL: every slot */
{
    for (size_t i = 0; i < JUNK_MAX; i++)
        if (c->junk[i].key && (!key || !strcmp(c->junk[i].key, key))) {
            free(c->junk[i].key);
            free(c->junk[i].value);
            c->junk[i].key = c->junk[i].value = NULL;
        }
}

/* Slot key of this episode holds value, which is no record. */
static void junk_set(struct preempt_coord *c, const char *key, const char *value)
{
    size_t i = 0;

    junk_clear(c, key);
    while (i < JUNK_MAX - 1 && c->junk[i].key)
        i++;
    if (c->junk[i].key) /* full: the spare goes */
        junk_clear(c, c->junk[i].key);
    c->junk[i].key = strdup(key);
    c->junk[i].value = strdup(value);
    if (!c->junk[i].key || !c->junk[i].value)
        junk_clear(c, NULL); /* out of memory: such slots block, as before */
}

/* A key of the schema (keys-internal.h) in this worker's incarnation and
 * episode; CRANGE: the range of a kind's records, or a range's. */
#define CKEY(c, buf, id, ...)                                                                                        \
    (void)preempt_key_(buf, sizeof(buf), (c)->jobp, PREEMPT_KEY_##id,                                                \
                       &(struct preempt_key){ .inc = (c)->view.inc, .ep = (c)->view.ep, __VA_ARGS__ })
#define CRANGE(c, buf, id, upto, ...)                                                                                \
    (void)preempt_key_range_(buf, sizeof(buf), (c)->jobp, PREEMPT_KEY_##id, upto,                                    \
                             &(struct preempt_key){ .inc = (c)->view.inc, .ep = (c)->view.ep, __VA_ARGS__ })

static void on_write(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;
    struct preempt_event ev = { .kind = PREEMPT_EV_COORD_FAILED };

    (void)r;
    if (status == 0)
        return;
    CLOG(c, 3, "coordination write failed: %s", msg);
    ev.u.coord_failed.err = status;
    cpost(c, ev);
}

/* How long a write retries. While this worker has a notice of its own, up
 * to its deadline: its machine's timer bounds the wait, and giving up
 * earlier (etcd down for longer than give_up_ms) would lose the notice for
 * every other worker. */
static uint64_t give_up(const struct preempt_coord *c)
{
    uint64_t now = c->ops.now_ms(c->arg);

    return c->my_deadline > now + c->give_up_ms ? c->my_deadline - now : c->give_up_ms;
}

static void write_call(struct preempt_coord *c, const struct preempt_etcd_req *req, preempt_etcd_reply_cb cb)
{
    if (c->io->request(c->io_arg, req, give_up(c), cb, c) < 0)
        on_write(-ENOMEM, NULL, "out of memory", c);
}

static void put(struct preempt_coord *c, const char *key, const char *value, int64_t lease)
{
    write_call(c, PREEMPT_RQ_PUT(key, value, lease), on_write);
}

static uint64_t mono_of_wall(const struct preempt_coord *c, uint64_t wall)
{
    uint64_t now = c->ops.now_ms(c->arg), w = c->io->wall_ms(c->io_arg);

    if (wall == 0)
        return 0;
    if (wall >= w)
        return now + (wall - w);
    return now > w - wall ? now - (w - wall) : 1; /* already passed */
}

static uint64_t wall_of_mono(const struct preempt_coord *c, uint64_t mono)
{
    uint64_t now = c->ops.now_ms(c->arg), w = c->io->wall_ms(c->io_arg);

    return mono >= now ? w + (mono - now) : w - (now - mono);
}


/* This worker has a notice that none of its sources withdrew. */
static bool own_live(const struct preempt_coord *c)
{
    return c->my_notice_wall != 0 && !c->my_withdrawn;
}

static void on_watch_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg);

/* A proposal's answer. When another record landed first, the reply carries
 * it: it is applied as the watch would apply it (the watch may be slow or
 * down; the record is the same). */
static void on_decide(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;
    const struct preempt_etcd_kv *kv = status == 0 && !r->succeeded ? preempt_etcd_reply_kv_(r, 0) : NULL;

    if (status != 0)
        on_write(status, r, msg, arg);
    else if (kv)
        on_watch_event(PREEMPT_ETCD_PUT, kv, c);
}

static void decide(struct preempt_coord *c, unsigned k, const char *value)
{
    char key[PREEMPT_KEY_MAX];

    CKEY(c, key, DECISION, .round = k);
    write_call(c, PREEMPT_RQ_CREATE(key, value), on_decide); /* the watch brings the winner */
}

/* ---- per-worker records: counted in etcd, never watched by every worker ---------------------- */

static const char *ep_stale(const struct preempt_coord *c, uint64_t ep)
{
    return ep != c->view.ep ? "an ended episode's" : NULL;
}

/* What a range of round k's shard reports says, each "<save ms>[ last]":
 * how many are well-formed, the slowest save, and whether any said last. */
struct tally {
    unsigned count;
    uint64_t max;
    bool last;
};

static struct tally tally(const struct preempt_coord *c, unsigned k, const struct preempt_etcd_reply *r)
{
    const struct preempt_etcd_kv *kvs = r->res[0].kvs;
    struct tally t = { 0 };

    for (size_t i = 0; i < r->res[0].n; i++) {
        struct preempt_key kk;
        uint64_t n;
        bool its_last;

        if (preempt_key_parse_(kvs[i].key, c->jobp, &kk) != (int)PREEMPT_KEY_SHARD || kk.inc != c->view.inc ||
            kk.ep != c->view.ep || kk.round != k || kk.worker >= c->n ||
            !preempt_step_value_parse_(kvs[i].value, &n, &its_last)) {
            CLOG(c, 2, "ignoring %s = \"%.40s\": not a shard report", kvs[i].key, kvs[i].value);
            continue;
        }
        t.count++;
        if (n > t.max)
            t.max = n;
        t.last = t.last || its_last;
    }
    return t;
}

/* Makes cap round k's save step (docs/protocol.md, "Agreement without
 * waits"): creates the record when the round has none (a driver that took
 * the episode over from one that left no step), and raises it when this
 * worker is past the step it knows (its machine asks only then): a
 * compare-and-put on the value seen, so that of two raises the second
 * fails and every worker follows the one record. A raise keeps a "last"
 * the record said. When the view already holds a step at least as high,
 * it is on its way to the machine: nothing to write. */
static void propose_step(struct preempt_coord *c, unsigned k, uint64_t cap, bool last)
{
    char key[PREEMPT_KEY_MAX], val[PREEMPT_STEP_VALUE_MAX], seen[PREEMPT_STEP_VALUE_MAX];
    struct preempt_etcd_cmp cmp = { .key = key };
    struct preempt_etcd_op ok[] = { { PREEMPT_ETCD_OP_PUT, key, val, 0 } };

    CKEY(c, key, AGREED, .round = k);
    cmp.value = junk_of(c, key);
    if (c->view.r[k].have_agreed) {
        if (c->view.r[k].agreed >= cap)
            return;
        (void)preempt_step_value_(seen, sizeof(seen), c->view.r[k].agreed, c->view.r[k].last);
        cmp.value = seen;
        last = last || c->view.r[k].last;
        CLOG(c, 1, "round %u: this worker is past the save step %" PRIu64 "; raising it to %" PRIu64, k,
             c->view.r[k].agreed, cap);
    }
    (void)preempt_step_value_(val, sizeof(val), cap, last);
    write_call(c, PREEMPT_RQ_TXN(&cmp, 1, ok, 1, NULL, 0), on_write); /* the watch brings the round's step */
}

/* Proposes that round k, at step, is aborted (by this worker). */
static void decide_abort(struct preempt_coord *c, unsigned k, uint64_t step)
{
    char val[PREEMPT_COMMITTED_VALUE_MAX];

    (void)snprintf(val, sizeof(val), "aborted %" PRIu64 " %u", step, c->me);
    decide(c, k, val);
}

/* What the shard reports of round k at its step (r: their range) decide:
 * the commit when every shard is there, with "last" when any report said
 * so and the slowest save they name (every worker plans the final round
 * with it); otherwise, when this worker asked to abort (or_abort), the
 * abort. An earlier decision still wins. As the caps, they come from the
 * records alone. */
static void propose(struct preempt_coord *c, unsigned k, const struct preempt_etcd_reply *r, bool or_abort)
{
    struct round *rd = &c->r[k];
    struct tally t = { 0 };
    char val[PREEMPT_COMMITTED_VALUE_MAX];

    if (rd->commit_posted || c->view.r[k].decided)
        return;
    if (!r || (t = tally(c, k, r)).count < c->n) {
        if (or_abort)
            decide_abort(c, k, rd->agreed);
        return;
    }
    rd->commit_posted = true;
    CLOG(c, 1, "round %u: every shard of step %" PRIu64 " is reported (the slowest save %" PRIu64
         " ms); proposing the commit%s", k, rd->agreed, t.max, t.last ? ", the last save" : "");
    (void)preempt_committed_value_(val, sizeof(val), rd->agreed, t.last, t.max);
    decide(c, k, val);
}

/* The shard reports of round k at its step, read by the worker whose
 * report completed them (or by the driver, complete_round). */
static void on_shards(struct preempt_coord *c, unsigned k, int status, const struct preempt_etcd_reply *r,
                      const char *msg)
{
    if (status != 0) {
        on_write(status, r, msg, c);
        return;
    }
    if (!ep_stale(c, c->r[k].shard_ep))
        propose(c, k, r, false);
}

static void on_shards0(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_shards(arg, 0, status, r, msg);
}

static void on_shards1(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_shards(arg, 1, status, r, msg);
}

/* The reports read before an abort this worker proposes (abort_round):
 * the commit when every shard is there after all, else the abort; when
 * the read failed, the abort. */
static void on_abort_shards(struct preempt_coord *c, unsigned k, int status, const struct preempt_etcd_reply *r,
                            const char *msg)
{
    if (ep_stale(c, c->r[k].shard_ep))
        return;
    if (status != 0)
        CLOG(c, 1, "round %u: the shard reports could not be read (%s); proposing the abort", k, msg ? msg : "");
    propose(c, k, status == 0 ? r : NULL, true);
}

static void on_abort_shards0(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_abort_shards(arg, 0, status, r, msg);
}

static void on_abort_shards1(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_abort_shards(arg, 1, status, r, msg);
}

/* This worker's machine gives round k up (its bound ran out, a peer was
 * lost, etcd failed, a peer failed, a second notice says exit, its save
 * failed). When it reported its shard at step, every other shard may be
 * there too, and the worker whose report completed them may have died or
 * been cut off before it proposed the commit: so it reads the reports
 * first and proposes the commit when they are all there, the abort when
 * not. An abort of a round whose every shard was written would discard a
 * whole checkpoint for want of one proposal. */
static void abort_round(struct preempt_coord *c, unsigned k, uint64_t step)
{
    struct round *rd = &c->r[k];
    char pre[PREEMPT_KEY_MAX];

    if (!ep_stale(c, rd->shard_ep) && rd->agreed == step) {
        CRANGE(c, pre, SHARD, 'w', .round = k, .step = step);
        write_call(c, PREEMPT_RQ_UNDER(pre), k ? on_abort_shards1 : on_abort_shards0);
        return;
    }
    decide_abort(c, k, step);
}

/* A shard report's answer: its transaction counted the round's shards at
 * this step (the last op). The worker whose count reached the job's size
 * reads the reports. */
static void on_reported(struct preempt_coord *c, unsigned k, int status, const struct preempt_etcd_reply *r,
                        const char *msg)
{
    struct round *rd = &c->r[k];
    char pre[PREEMPT_KEY_MAX];

    if (status != 0) {
        on_write(status, r, msg, c);
        return;
    }
    if (ep_stale(c, rd->shard_ep) || rd->commit_posted || c->view.r[k].decided || r->n_res < 1 ||
        preempt_etcd_reply_count_(r, r->n_res - 1) < (int64_t)c->n)
        return;
    CRANGE(c, pre, SHARD, 'w', .round = k, .step = rd->agreed);
    write_call(c, PREEMPT_RQ_UNDER(pre), k ? on_shards1 : on_shards0);
}

static void on_reported0(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_reported(arg, 0, status, r, msg);
}

static void on_reported1(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    on_reported(arg, 1, status, r, msg);
}

/* Reports this worker's shard of round k at step, with the slowest save
 * it knows of (save_ms), and counts the round's shards at that step, in
 * one transaction. A save that ends this worker's preemption (last: the
 * agreed record said so, or the worker judges no time left for another
 * round) says so, and the worker's membership ends in the same
 * transaction: it has nothing more to give the job, and its exit then
 * costs etcd nothing (no revoke; the lease ends by itself, holding
 * nothing). */
static void report(struct preempt_coord *c, unsigned k, uint64_t step, bool last, uint64_t save_ms)
{
    char alive[PREEMPT_KEY_MAX], key[PREEMPT_KEY_MAX], pre[PREEMPT_KEY_MAX], val[PREEMPT_STEP_VALUE_MAX];
    struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_DELETE, alive, NULL, 0 },
                                     { PREEMPT_ETCD_OP_PUT, key, val, 0 },
                                     { PREEMPT_ETCD_OP_COUNT_PREFIX, pre, NULL, 0 } };

    CKEY(c, alive, ALIVE, .worker = c->me);
    CKEY(c, key, SHARD, .round = k, .step = step, .worker = c->me);
    CRANGE(c, pre, SHARD, 'w', .round = k, .step = step);
    (void)preempt_step_value_(val, sizeof(val), save_ms, last);
    c->r[k].shard_ep = c->view.ep;
    c->r[k].agreed = step;
    write_call(c, last ? PREEMPT_RQ_TXN(NULL, 0, ops, 3, NULL, 0) : PREEMPT_RQ_TXN(NULL, 0, ops + 1, 2, NULL, 0),
               k ? on_reported1 : on_reported0);
    if (last)
        mship_in(c, PREEMPT_MSHIP_IN_LAST_REPORT);
}

/* The round's decision record: the one truth every worker follows. */
static void on_decision(struct preempt_coord *c, const struct preempt_view_ev *d, const char *value)
{
    struct preempt_event ev = { 0 };

    CLOG(c, 1, "round %u: the job's decision is \"%s\"", d->round, value);
    if (d->what == PREEMPT_VIEW_ABORTED) {
        ev.kind = PREEMPT_EV_ROUND_ABORTED;
        ev.u.round_aborted.step = d->step;
        cpost(c, ev);
        return;
    }
    ev.kind = PREEMPT_EV_CKPT_COMMITTED;
    ev.u.ckpt_committed.step = d->step;
    ev.u.ckpt_committed.last = d->last;
    if (d->save_ms && c->ops.job_save) /* before the commit: the countdown plans with it */
        c->ops.job_save(d->save_ms, c->arg);
    if (own_live(c)) {
        /* The job withdrew the notices, then this worker got one whose
         * record has not landed: the job returns to idle at this commit
         * without it, so this worker does too, and brings its notice into
         * the next episode (advance). Its machine took the notice as a
         * reason to stay; the withdrawal is told again. */
        ep_in(c, PREEMPT_EP_IN_COMMITTED_OWN);
    }
    cpost(c, ev);
}

static void reset_round(struct preempt_coord *c, unsigned k)
{
    c->r[k] = (struct round){ 0 };
}

/* Posts notice-withdrawn once when every notice record of the job is
 * withdrawn (or advisory) and no operator's notice stands. The records
 * arrive in revision order on every worker, so every worker decides the
 * same way relative to the round's commit. */
static void check_withdrawn(struct preempt_coord *c)
{
    struct preempt_view_summary sum;

    preempt_view_summary_(&c->view, &sum);
    if (sum.live || !sum.notices) {
        ep_in(c, PREEMPT_EP_IN_LIVE);
        return;
    }
    if (c->episode == PREEMPT_EP_ACTIVE)
        CLOG(c, 1, "every notice of the job is withdrawn or advisory");
    ep_in(c, PREEMPT_EP_IN_ALL_WITHDRAWN);
}

static void maybe_claim(struct preempt_coord *c, enum preempt_claim_input in);
static void notice_put(struct preempt_coord *c);
static enum preempt_pub_action pub(struct preempt_coord *c, enum preempt_pub_input in);


/* The current round's step may reach this worker before anything that
 * brings its machine into the round: a claim that did not carry its
 * driver's notice can land before the notice's own record, and the
 * machine, idle then, ignores the step (a late answer of a withdrawn round,
 * as far as it can tell). The view keeps it, and once a notice or the
 * claim's answer has brought the machine into the round it is told again; in any
 * other state the step is an echo (the table ignores it). The current
 * round is the first without a decision. */
static void retell_agreed(struct preempt_coord *c)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_STEP_AGREED };
    unsigned k = c->view.r[0].decided ? 1 : 0;

    if (!c->view.r[k].have_agreed)
        return;
    ev.u.step_agreed.step = c->view.r[k].agreed;
    ev.u.step_agreed.last = c->view.r[k].last;
    cpost(c, ev);
}

/* A worker's notice record (the view has merged it; foreign: a record in
 * this worker's slot that it did not write). */
static void on_notice(struct preempt_coord *c, const struct preempt_view_ev *n, const char *value, bool foreign)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_PEER_NOTICE };
    /* This worker's own record tells its machine only when it undoes the
     * job's withdrawal: its machine then follows the job's view exactly as
     * every other worker's does. */
    bool tell = n->worker != c->me || foreign || (c->episode == PREEMPT_EP_WITHDRAWN && !n->withdrawn);

    ep_in(c, PREEMPT_EP_IN_SEEN);
    if (n->news && tell) {
        ev.u.peer_notice.worker = n->worker;
        ev.u.peer_notice.deadline = mono_of_wall(c, n->wall);
        CLOG(c, 1, "worker %u has a notice (%s)", n->worker, value);
        cpost(c, ev);
        retell_agreed(c);
        /* a notice undoes the machine's withdrawal: when this one is
         * withdrawn too (an advisory or periodic one), say so again */
        ep_in(c, PREEMPT_EP_IN_NEWS);
    }
    check_withdrawn(c);
    maybe_claim(c, PREEMPT_CLAIM_IN_NOTICE); /* unless its own claim is on its way */
}

/* How long a peer's membership may be gone before the peer counts as
 * lost: twice this worker's longest step. A synchronous trainer keeps its
 * lease alive only at its boundaries, so a lease can end inside a step
 * longer than any before (the first one, typically) and come back at the
 * next boundary under a new lease. With steps of milliseconds that is at
 * the first read that misses it. */
static uint64_t lost_grace_ms(const struct preempt_coord *c)
{
    return 2 * c->longest_step_ms;
}

static void forget_gone(struct preempt_coord *c)
{
    memset(c->gone_at, 0, c->n * sizeof(*c->gone_at));
    c->n_gone = 0;
}

/* The driver's read found every shard of round k reported at the step
 * this worker reported (res: that round's shard keys) and no decision.
 * The worker whose report completed them reads them and proposes the
 * commit; when it died or was cut off between its report and its
 * proposal, the round waited for its bound and was aborted, although every
 * shard was written. So the driver proposes it too: the same range, the
 * same value from the same records, create-if-absent. (When the
 * completer's proposal was merely on its way, that costs two requests:
 * only when a keep-alive tick falls between the last report and the
 * decision.) */
static void complete_round(struct preempt_coord *c, unsigned k, const struct preempt_etcd_res *res)
{
    struct round *rd = &c->r[k];
    unsigned count = 0;
    char pre[PREEMPT_KEY_MAX];

    if (ep_stale(c, rd->shard_ep) || rd->commit_posted || c->view.r[k].decided)
        return;
    for (size_t j = 0; j < res->n; j++) {
        struct preempt_key kk;

        if (preempt_key_parse_(res->kvs[j].key, c->jobp, &kk) == (int)PREEMPT_KEY_SHARD && kk.inc == c->view.inc &&
            kk.ep == c->view.ep && kk.round == k && kk.step == rd->agreed && kk.worker < c->n)
            count++;
    }
    if (count < c->n)
        return;
    CLOG(c, 1, "round %u: every shard of step %" PRIu64 " is reported and no decision has come; proposing it in "
         "place of the worker whose report completed them", k, rd->agreed);
    CRANGE(c, pre, SHARD, 'w', .round = k, .step = rd->agreed);
    write_call(c, PREEMPT_RQ_UNDER(pre), k ? on_shards1 : on_shards0);
}

/* The driver's read of the memberships: a worker counts when it is a
 * member, finished training, or reported a shard of the episode (the
 * report of its last save ends its membership). One that stayed missing
 * for the grace is lost: the driver publishes it, and every worker
 * (itself included) follows that record. */
static void on_members_read(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;
    uint64_t now = c->ops.now_ms(c->arg);
    char key[PREEMPT_KEY_MAX], val[16];

    c->polling = false;
    if (status < 0 || LEFT(c) || c->claim != PREEMPT_CLAIM_HELD) {
        if (status < 0)
            CLOG(c, 1, "reading the memberships failed: %s", msg);
        return;
    }
    memset(c->present, 0, c->n * sizeof(*c->present));
    if (r->n_res < 4) {
        CLOG(c, 2, "reading the memberships: a txn reply without the reads it was asked for");
        return;
    }
    for (size_t i = 0; i < 4; i++) {
        for (size_t j = 0; j < r->res[i].n; j++) {
            struct preempt_key k;

            if (preempt_key_parse_(r->res[i].kvs[j].key, c->jobp, &k) >= 0 && k.worker < c->n)
                c->present[k.worker] = true;
        }
    }
    complete_round(c, 0, &r->res[2]);
    complete_round(c, 1, &r->res[3]);
    for (unsigned w = 0; w < c->n; w++) {
        if (w == c->me || c->present[w]) {
            if (c->gone_at[w]) {
                CLOG(c, 1, "worker %u is back (a new lease)", w);
                c->gone_at[w] = 0;
                c->n_gone--;
            }
            continue;
        }
        if (!c->gone_at[w]) {
            c->gone_at[w] = now ? now : 1;
            c->n_gone++;
            if (lost_grace_ms(c))
                CLOG(c, 1, "worker %u's membership is gone; it counts as lost unless it is back within %" PRIu64
                     " ms", w, lost_grace_ms(c));
        }
        if (now - c->gone_at[w] < lost_grace_ms(c) || c->view.lost)
            continue;
        CKEY(c, key, LOST);
        (void)snprintf(val, sizeof(val), "%u", w);
        write_call(c, PREEMPT_RQ_CREATE(key, val), on_write); /* the watch brings it */
        return;
    }
}

/* The driver reads who is still there: one transaction, once a keep-alive
 * period, only while it drives an episode (O(1) requests; every other
 * worker reads nothing). */
static void read_members(struct preempt_coord *c)
{
    char alive[PREEMPT_KEY_MAX], done[PREEMPT_KEY_MAX], s0[PREEMPT_KEY_MAX], s1[PREEMPT_KEY_MAX];
    struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_KEYS_PREFIX, alive, NULL, 0 },
                                     { PREEMPT_ETCD_OP_KEYS_PREFIX, done, NULL, 0 },
                                     { PREEMPT_ETCD_OP_KEYS_PREFIX, s0, NULL, 0 },
                                     { PREEMPT_ETCD_OP_KEYS_PREFIX, s1, NULL, 0 } };

    if (c->polling || c->claim != PREEMPT_CLAIM_HELD || c->episode == PREEMPT_EP_IDLE || LEFT(c))
        return;
    CRANGE(c, alive, ALIVE, 'w');
    CRANGE(c, done, DONE, 'w');
    CRANGE(c, s0, SHARD, 'S', .round = 0);
    CRANGE(c, s1, SHARD, 'S', .round = 1);
    c->polling = true;
    if (c->io->request(c->io_arg, PREEMPT_RQ_TXN(NULL, 0, ops, 4, NULL, 0), (c->ttl_s / 3 ? c->ttl_s / 3 : 1) * 1000u,
                       on_members_read, c) < 0)
        c->polling = false;
}


/* Claims the episode when it has a live notice and nobody drives it: its
 * driver's lease ended (the claim went), or the claim went while the job's
 * notices were all withdrawn and one of them came back (sim seed 12558: the
 * driver exited on a second notice, its claim went with its lease before its
 * notice's return landed, and nobody drove the round to its end). */
static void maybe_claim(struct preempt_coord *c, enum preempt_claim_input in)
{
    /* The claim that carried this worker's notice went with its lease (ended
     * inside a long step): the notice must stand again, in the next claim
     * or in its own record, for a worker that reads the records afresh. */
    if (!c->view.claim)
        (void)pub(c, PREEMPT_PUB_IN_CLAIM_GONE);
    if (c->episode == PREEMPT_EP_ACTIVE && !LEFT(c) && !c->view.claim)
        claim_in(c, in);
    if (c->pub == PREEMPT_PUB_DEFERRED && c->claim != PREEMPT_CLAIM_SENT)
        notice_put(c);
}



static struct held *held_find(struct preempt_coord *c, const char *key)
{
    for (size_t i = 0; i < c->n_held; i++)
        if (!strcmp(c->held[i].key, key))
            return &c->held[i];
    return NULL;
}

/* Keeps the others in the order they came: an episode's records are
 * applied as they landed (a notice before the step its claim proposed). */
static void held_drop(struct preempt_coord *c, struct held *h)
{
    free(h->key);
    free(h->value);
    memmove(h, h + 1, (size_t)(&c->held[--c->n_held] - h) * sizeof(*h));
}

/* A record of an episode this worker has not reached yet: kept (one per
 * key, the latest value) until it gets there. A delete just forgets. */
static void hold(struct preempt_coord *c, enum preempt_etcd_ev type, uint64_t ep, const struct preempt_etcd_kv *kv)
{
    struct held *h = held_find(c, kv->key);
    char *value;

    if (type != PREEMPT_ETCD_PUT) {
        if (h)
            held_drop(c, h);
        return;
    }
    value = strdup(kv->value ? kv->value : "");
    if (value && h) {
        free(h->value);
        h->value = value;
        return;
    }
    if (value && c->n_held == c->cap_held) {
        size_t cap = c->cap_held ? 2 * c->cap_held : 16;
        struct held *more = realloc(c->held, cap * sizeof(*more));

        if (more) {
            c->held = more;
            c->cap_held = cap;
        }
    }
    h = c->n_held < c->cap_held ? &c->held[c->n_held] : NULL;
    if (!value || !h || !(h->key = strdup(kv->key))) {
        free(value);
        CLOG(c, 3, "out of memory: %s of a later episode is lost to this worker", kv->key);
        return;
    }
    h->ep = ep;
    h->value = value;
    c->n_held++;
}

/* Which record of this worker's incarnation key is (-1: none); episode:
 * whether it belongs to an episode (k->ep), a round's decision included
 * (it outlives the episode's other records). */
static int record_of(const struct preempt_coord *c, const char *key, struct preempt_key *k, bool *episode)
{
    int id = preempt_key_parse_(key, c->jobp, k);

    if (id < 0 || k->inc != c->view.inc)
        return -1;
    *episode = preempt_key_has_(id, 'p');
    return id;
}


/* Whether a notice in this worker's own slot (key: the notice record, or
 * the claim that carries it) can be its own: a record there with an
 * earlier deadline than any it published, or while it published none, was
 * written by someone else (an operator's mistake, a foreign tool) and is
 * reported instead of obeyed. A stale echo of its own earlier value only
 * has a later deadline: the deadline it publishes only moves earlier. */
static bool mine(const struct preempt_coord *c, const char *key, uint64_t wall)
{
    struct preempt_key k;

    if (preempt_key_parse_(key, c->jobp, &k) != PREEMPT_KEY_NOTICE)
        return true; /* the claim's: it is this worker's only if it claimed */
    return c->my_notice_wall && wall >= c->my_notice_wall;
}

/* One input of the job's view, traced through ops.on_view. */
static struct preempt_view_ev view_step(struct preempt_coord *c, struct preempt_view_in in)
{
    struct preempt_view_ev ev = preempt_view_step_(&c->view, &in);

    if (c->ops.on_view)
        c->ops.on_view(&c->view, &in, &ev, c->arg);
    return ev;
}

/* A record, read or watched: what the view makes of it goes to the machine. */
static void on_watch_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    struct preempt_coord *c = arg;
    const char *value = kv->value ? kv->value : "";
    struct preempt_view_ev v = view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_RECORD,
                                                                       .put = type == PREEMPT_ETCD_PUT,
                                                                       .key = kv->key, .value = value });
    struct preempt_event ev = { 0 };

    if (v.what != PREEMPT_VIEW_MALFORMED)
        junk_clear(c, kv->key); /* a record, or nothing: no garbage there any more */
    switch (v.what) {
    case PREEMPT_VIEW_NOTHING:
    case PREEMPT_VIEW_CLAIM:
        return;
    case PREEMPT_VIEW_LATER:
        hold(c, type, v.ep, kv);
        return;
    case PREEMPT_VIEW_MALFORMED: {
        struct preempt_key k;
        int id = preempt_key_parse_(kv->key, c->jobp, &k);

        CLOG(c, 2, "ignoring %s = \"%.40s\": not %s", kv->key, value, v.text);
        if ((id == (int)PREEMPT_KEY_CLAIM || id == (int)PREEMPT_KEY_AGREED) && k.inc == c->view.inc &&
            k.ep == c->view.ep)
            junk_set(c, kv->key, value); /* a create-if-absent slot: the next write of it replaces it */
        return;
    }
    case PREEMPT_VIEW_NOTICE:
        if (v.worker == c->me && !mine(c, kv->key, v.wall)) {
            char val[PREEMPT_KEY_MAX + 64]; /* a notice value (at most ~280) and " withdrawn" */

            /* every other worker takes it for this worker's notice, and
             * only this worker can tell: it follows it as the others do
             * (a peer's notice to its machine), and withdraws it for the
             * whole job (one record that every worker follows): the round
             * it opened saves, and the job goes back to idle */
            if (!v.withdrawn) {
                CLOG(c, 2, "%s = \"%.40s\" is in this worker's slot, but not its notice (it has %s): "
                     "withdrawing it", kv->key, value, c->my_notice_wall ? "a later deadline" : "none");
                (void)snprintf(val, sizeof(val), "%s withdrawn", value);
                put(c, kv->key, val, 0);
            }
            on_notice(c, &v, value, true);
            return;
        }
        on_notice(c, &v, value, false);
        return;
    case PREEMPT_VIEW_OP_NOTICE:
        ev.kind = PREEMPT_EV_NOTICE;
        ev.u.notice.source = PREEMPT_SOURCE_INJECT;
        ev.u.notice.deadline = mono_of_wall(c, v.wall);
        CLOG(c, 1, "an operator's notice (%s)", value);
        break;
    case PREEMPT_VIEW_OP_GONE:
        return; /* the operator took it back */
    case PREEMPT_VIEW_CLAIM_GONE: /* the driver's lease ended: take the episode over */
        claim_in(c, PREEMPT_CLAIM_IN_GONE);
        forget_gone(c);
        maybe_claim(c, PREEMPT_CLAIM_IN_SEND);
        return;
    case PREEMPT_VIEW_FINAL:
        ev.kind = PREEMPT_EV_FINAL_REQUESTED;
        ev.u.final_requested.worker = v.worker;
        break;
    case PREEMPT_VIEW_LOST:
        CLOG(c, 2, "worker %u lost its membership (lease expired or revoked; found by the driver)", v.worker);
        ev.kind = PREEMPT_EV_PEER_LOST;
        ev.u.peer_lost.worker = v.worker;
        break;
    case PREEMPT_VIEW_AGREED:
        c->r[v.round].agreed = v.step;
        ev.kind = PREEMPT_EV_STEP_AGREED;
        ev.u.step_agreed.step = v.step;
        ev.u.step_agreed.last = v.last;
        break;
    case PREEMPT_VIEW_COMMITTED:
    case PREEMPT_VIEW_ABORTED:
        on_decision(c, &v, value);
        return;
    case PREEMPT_VIEW_ERROR:
        if (c->ops.on_error_msg)
            c->ops.on_error_msg(v.text, c->arg);
        if (v.worker == c->me)
            return;
        ev.kind = PREEMPT_EV_PEER_ERROR;
        ev.u.peer_error.code = v.code;
        ev.u.peer_error.worker = v.worker;
        break;
    }
    cpost(c, ev);
}

/* A full read of the watched records: every record is applied (the view
 * makes that idempotent). */
static void on_watch_reset(const struct preempt_etcd_kv *kvs, size_t n, int64_t rev, void *arg)
{
    struct preempt_coord *c = arg;

    bool current = false, later = false;

    CLOG(c, 0, "read %zu records of %s at revision %lld", n, c->pre, (long long)rev);
    /* a claim that went while the watch was down is not in the read */
    (void)view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_REREAD });
    for (size_t i = 0; i < n; i++) {
        struct preempt_key k;
        bool episode;
        int id = record_of(c, kvs[i].key, &k, &episode);

        if (id >= 0 && episode) {
            /* a decision stays after the clear */
            current = current || (k.ep == c->view.ep && id != PREEMPT_KEY_DECISION);
            later = later || k.ep > c->view.ep;
        }
        on_watch_event(PREEMPT_ETCD_PUT, &kvs[i], c);
    }
    /* A later episode and nothing left of this worker's: the job withdrew
     * its notices and cleared the episode while this worker could not see
     * it. Its machine is told so; back in idle it moves on (clear-round). */
    if (later && !current && c->episode == PREEMPT_EP_ACTIVE) {
        CLOG(c, 1, "episode %" PRIu64 " was cleared while the watch was down", c->view.ep);
        ep_in(c, PREEMPT_EP_IN_CLEARED);
    }
    if (!later)
        maybe_claim(c, PREEMPT_CLAIM_IN_SEND);
}

static void on_watch_link(bool up, const char *why, void *arg)
{
    struct preempt_coord *c = arg;

    CLOG(c, up ? 0 : 1, "watch of %s %s (%s)", c->pre, up ? "up" : "down", why);
    c->watch_up = up;
}

/* While the job's watch is down (etcd answering requests but not keeping a
 * stream, or between re-opens) the worker would see no peer's notice, round
 * or error. So each keep-alive tick reads the job's records instead and
 * applies them as the watch's own re-read does: a broken stream slows what
 * the worker learns to the tick's period, it never hides it. */
static void on_poll_read(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;

    (void)msg;
    if (status < 0 || c->watch_up)
        return; /* the next tick tries again, or the watch is back (it re-reads itself) */
    CLOG(c, 0, "the watch is down: read the records of %s instead", c->pre);
    on_watch_reset(r->res[0].kvs, r->res[0].n, r->rev, c);
}

/* ---- membership -------------------------------------------------------------------------------- */

static void on_keep_timer(void *arg);

static void arm_keepalive(struct preempt_coord *c)
{
    unsigned s = c->ttl_s / 3 ? c->ttl_s / 3 : 1;

    c->io->timer(c->io_arg, s * 1000u, on_keep_timer, c);
}

/* The TTL the membership lease needs: a synchronous trainer keeps it
 * alive only at its step boundaries. Steps up to a third of the configured
 * TTL (the keep-alive period) need nothing more; longer ones, twice the
 * longest step seen on top of it (at most MAX_TTL_S). */
#define MAX_TTL_S 3600u
static unsigned ttl_needed(const struct preempt_coord *c)
{
    uint64_t s = c->cfg_ttl_s + (2 * c->longest_step_ms + 999) / 1000;

    if (3 * c->longest_step_ms <= 1000u * c->cfg_ttl_s)
        return c->cfg_ttl_s;

    return s < MAX_TTL_S ? (unsigned)s : MAX_TTL_S;
}

static void on_regrant(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;

    c->granting = false;
    if (LEFT(c))
        return;
    if (status < 0) {
        CLOG(c, 2, "renewing the membership lease failed: %s", msg);
        claim_in(c, PREEMPT_CLAIM_IN_GRANT_FAILED);
        return;
    }
    /* The old lease, if it still lives, is no longer kept alive: it ends by
     * itself, and nothing is bound to it once alive/<me> moved over. */
    c->lease = r->id;
    if (r->ttl > 0)
        c->ttl_s = (unsigned)r->ttl;
    mship_in(c, PREEMPT_MSHIP_IN_GRANTED); /* alive/<me> moves over, unless it went with the last report */
    claim_in(c, PREEMPT_CLAIM_IN_GRANTED); /* a claim sent under the lease that had ended goes again */
}

/* Grants a new membership lease of the TTL needed now. */
static void regrant(struct preempt_coord *c)
{
    unsigned ttl = ttl_needed(c);

    if (c->granting || LEFT(c))
        return;
    c->granting = true;
    if (c->io->request(c->io_arg, PREEMPT_RQ_GRANT(ttl), c->give_up_ms, on_regrant, c) < 0)
        c->granting = false;
}

void preempt_coord_step_(struct preempt_coord *c, uint64_t step_ms)
{
    if (!c || step_ms <= c->longest_step_ms)
        return;
    c->longest_step_ms = step_ms;
    /* A longer lease while nothing is going on (during a preemption the
     * driver's claim is bound to the current lease). */
    if (ttl_needed(c) > c->ttl_s && c->episode == PREEMPT_EP_IDLE) {
        CLOG(c, 1, "a step took %" PRIu64 " ms: the membership lease grows to %u s", step_ms, ttl_needed(c));
        regrant(c);
    }
}

static void on_keepalive(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;

    if (LEFT(c))
        return;
    if (status < 0) {
        CLOG(c, 2, "lease keep-alive failed: %s", msg);
    } else if (r->ttl <= 0) {
        CLOG(c, 2, "the membership lease expired; joining again with a new one");
        regrant(c);
    }
    arm_keepalive(c);
}

static void on_keep_timer(void *arg)
{
    struct preempt_coord *c = arg;
    uint64_t bound = (c->ttl_s / 3 ? c->ttl_s / 3 : 1) * 1000u;
    char wpre[PREEMPT_KEY_MAX];

    CRANGE(c, wpre, WORKERS, 0);
    if (!c->watch_up) /* the watched range, [P/N/, P/N/w/) */
        (void)c->io->request(c->io_arg, PREEMPT_RQ_SPAN(c->pre, wpre), bound, on_poll_read, c);
    read_members(c);
    if (c->io->request(c->io_arg, PREEMPT_RQ_LEASE(KEEPALIVE, c->lease), bound, on_keepalive, c) < 0)
        arm_keepalive(c);
}

/* ---- effects ------------------------------------------------------------------------------------ */

static void on_notice_put(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;

    (void)pub(c, status < 0 ? PREEMPT_PUB_IN_PUT_FAILED : PREEMPT_PUB_IN_PUT_OK);
    if (status < 0)
        on_write(status, r, msg, c);
}

/* notice/<me>'s key and value as they should be now. */
static void notice_record(const struct preempt_coord *c, char key[PREEMPT_KEY_MAX], char *val, size_t val_size)
{
    (void)preempt_key_(key, PREEMPT_KEY_MAX, c->jobp, PREEMPT_KEY_NOTICE,
                       &(struct preempt_key){ .inc = c->view.inc, .ep = c->view.ep, .worker = c->me });
    (void)snprintf(val, val_size, "%" PRIu64 " %s%s", c->my_notice_wall, c->my_source,
                   c->my_withdrawn ? " withdrawn" : "");
}

/* Feeds the notice record's machine (pub-internal.h), logs the
 * transition and runs a put it asks for; returns its action. */
static enum preempt_pub_action pub(struct preempt_coord *c, enum preempt_pub_input in)
{
    unsigned st = c->pub;
    enum preempt_pub_action a = (enum preempt_pub_action)decl_in(c, &preempt_pub_decl_, &st, in);

    c->pub = (enum preempt_pub_state)st;
    if (a == PREEMPT_PUB_DO_PUT) { /* one put at a time: a later value never lands before an earlier one */
        char key[PREEMPT_KEY_MAX], val[96];

        notice_record(c, key, val, sizeof(val));
        write_call(c, PREEMPT_RQ_PUT(key, val, 0), on_notice_put);
    }
    return a;
}

/* Writes notice/<me> as it should be now (when a put is on its way, after
 * it). */
static void notice_put(struct preempt_coord *c)
{
    (void)pub(c, c->my_notice_wall ? PREEMPT_PUB_IN_WRITE : PREEMPT_PUB_IN_NOTHING);
}

void preempt_coord_withdraw_(struct preempt_coord *c, bool withdrawn)
{
    if (!c || c->my_withdrawn == withdrawn)
        return;
    c->my_withdrawn = withdrawn;
    notice_put(c);
}

static void on_claim(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    struct preempt_coord *c = arg;
    struct preempt_event ev = { .kind = PREEMPT_EV_CLAIM_WON };
    const struct preempt_etcd_kv *kv;
    uint64_t holder = c->me;

    /* a notice the claim carried: in the claim's value, or (the claim
     * lost) written by the transaction's failure branch, or (no answer)
     * to go with the next claim or the put below */
    (void)pub(c, status < 0 ? PREEMPT_PUB_IN_CLAIM_FAILED
                 : r->succeeded ? PREEMPT_PUB_IN_CLAIM_WON : PREEMPT_PUB_IN_CLAIM_LOST);
    if (status == -ENOENT && !LEFT(c)) { /* "requested lease not found": it ended inside a long step */
        CLOG(c, 2, "the claim was sent under an ended lease; claiming again under a new one");
        claim_in(c, PREEMPT_CLAIM_IN_STALE_LEASE);
        return;
    }
    if (c->pub == PREEMPT_PUB_DEFERRED)
        notice_put(c);
    if (status < 0) {
        claim_in(c, PREEMPT_CLAIM_IN_FAILED);
        on_write(status, NULL, msg, c);
        return;
    }
    kv = r->succeeded ? NULL : preempt_etcd_reply_kv_(r, 0);
    if (kv && kv->value) {
        const char *carried;
        unsigned w;

        if (!preempt_claim_parse_(kv->value, &w, &carried)) { /* garbage: replaced by this claim */
            CLOG(c, 2, "%s = \"%.40s\" is no claim: claiming over it", kv->key, kv->value);
            junk_set(c, kv->key, kv->value);
            claim_in(c, PREEMPT_CLAIM_IN_UNREADABLE);
            return;
        }
        holder = w;
    }
    if (!r->succeeded && !kv) {
        /* released between the compare and the read, or the round has a
         * step already (the claim's driver left): try again, proposing
         * nothing */
        char key[PREEMPT_KEY_MAX];

        CKEY(c, key, CLAIM);
        junk_clear(c, key); /* the read found it empty */
        c->prop_step = 0;
        claim_in(c, PREEMPT_CLAIM_IN_UNREADABLE);
        return;
    }
    if (holder != c->me) {
        /* Another worker drives the episode, also a final round this one
         * asked for (its lease, and the claim with it, ended inside a
         * step): its machine follows (claim-lost), so must its view, or it
         * would act as the driver of a round it follows (sim seed 3606). */
        claim_in(c, PREEMPT_CLAIM_IN_LOST);
        c->prop_step = 0;
        ev.kind = PREEMPT_EV_CLAIM_LOST;
        ev.u.claim_lost.worker = holder;
        cpost(c, ev);
        retell_agreed(c);
        return;
    }
    claim_in(c, PREEMPT_CLAIM_IN_WON);
    c->prop_step = 0; /* it landed with the claim */
    cpost(c, ev);
    retell_agreed(c);
}

/* Claims the episode (create-if-absent, bound to the lease). A notice of
 * this worker's that opens the episode goes in the claim's value ("<w>
 * <notice record's value>"; when the claim fails, as notice/<me> in the
 * same transaction), and its proposal of the save step goes in the same
 * transaction (create-if-absent too: the claim is taken only when the
 * round has no step), so that every worker learns of all three from one
 * watch message of two events, the notice before the step. Each event a
 * message holds is work for etcd at every watcher: in make bench, 32
 * watchers on one loop, a three-event message took 15-30% longer to reach
 * them all than a two-event one. A take-over proposes nothing (its machine
 * does, when the round has no step). */
static void claim_send(struct preempt_coord *c)
{
    char key[PREEMPT_KEY_MAX], me[128], nkey[PREEMPT_KEY_MAX], nval[96], akey[PREEMPT_KEY_MAX];
    char aval[PREEMPT_STEP_VALUE_MAX];
    struct preempt_etcd_cmp cmp[] = { { .key = key }, { .key = akey } };
    struct preempt_etcd_op ok[3] = { { PREEMPT_ETCD_OP_PUT, key, me, c->lease } };
    struct preempt_etcd_op fail[2] = { { PREEMPT_ETCD_OP_GET, key, NULL, 0 } };
    bool carry = c->my_notice_wall && pub(c, PREEMPT_PUB_IN_CLAIM_SENT) == PREEMPT_PUB_DO_CARRY;
    bool propose = c->prop_step && !c->view.r[0].have_agreed;
    size_t n_ok = 1, n_fail = 1;

    CKEY(c, key, CLAIM);
    CKEY(c, akey, AGREED, .round = 0);
    cmp[0].value = junk_of(c, key);
    cmp[1].value = junk_of(c, akey);
    (void)snprintf(me, sizeof(me), "%u", c->me);
    if (carry) {
        notice_record(c, nkey, nval, sizeof(nval));
        (void)snprintf(me, sizeof(me), "%u %s", c->me, nval);
        fail[n_fail++] = (struct preempt_etcd_op){ PREEMPT_ETCD_OP_PUT, nkey, nval, 0 };
    }
    if (propose) {
        (void)preempt_step_value_(aval, sizeof(aval), c->prop_step, c->prop_last);
        ok[n_ok++] = (struct preempt_etcd_op){ PREEMPT_ETCD_OP_PUT, akey, aval, 0 };
    }
    write_call(c, PREEMPT_RQ_TXN(cmp, propose ? 2 : 1, ok, n_ok, fail, n_fail), on_claim);
}

/* One step of a declared machine (decl-internal.h), logged; its action. */
static unsigned decl_in(struct preempt_coord *c, const struct preempt_decl *m, unsigned *state, unsigned in)
{
    unsigned from = *state, a;
    bool listed;

    a = preempt_decl_step_(m, state, in, &listed);
    if (listed)
        CLOG(c, 0, "%s: %s --%s--> %s (%s)", m->name, preempt_decl_state_(m, from), preempt_decl_input_(m, in),
             preempt_decl_state_(m, *state), preempt_decl_action_(m, a));
    return a;
}

/* One input to the claim's machine (claim-internal.h: the only place that
 * decides whether a claim goes and who holds it); runs its action. */
static void claim_in(struct preempt_coord *c, enum preempt_claim_input in)
{
    unsigned st = c->claim, a = decl_in(c, &preempt_claim_decl_, &st, in);

    c->claim = (enum preempt_claim_state)st;
    if (a == PREEMPT_CLAIM_DO_SEND)
        claim_send(c);
    else if (a == PREEMPT_CLAIM_DO_REGRANT)
        regrant(c);
}

/* One input to the episode's machine (episode-internal.h); runs its
 * action: the job's notices are withdrawn (the job's decision, read from
 * its records; the source says so). */
static void ep_in(struct preempt_coord *c, enum preempt_ep_input in)
{
    unsigned st = c->episode, a = decl_in(c, &preempt_ep_decl_, &st, in);
    struct preempt_event ev = { .kind = PREEMPT_EV_NOTICE_WITHDRAWN };

    c->episode = (enum preempt_ep_state)st;
    if (a == PREEMPT_EP_DO_TELL_WITHDRAWN) {
        ev.u.notice_withdrawn.source = PREEMPT_SOURCE_INJECT;
        cpost(c, ev);
    }
}

/* One input to the membership's machine (membership-internal.h); runs its
 * action. */
static void mship_in(struct preempt_coord *c, enum preempt_mship_input in)
{
    unsigned st = c->mship, a = decl_in(c, &preempt_mship_decl_, &st, in);
    char key[PREEMPT_KEY_MAX];

    c->mship = (enum preempt_mship_state)st;
    if (a == PREEMPT_MSHIP_DO_PUT_ALIVE) {
        CKEY(c, key, ALIVE, .worker = c->me);
        put(c, key, c->member, c->lease);
    } else if (a == PREEMPT_MSHIP_DO_REVOKE) {
        (void)c->io->request(c->io_arg, PREEMPT_RQ_LEASE(REVOKE, c->lease), c->give_up_ms, NULL, NULL);
    }
}

/* The machine is back in idle: this worker moves on to the next episode
 * with an empty view of it, applies what it already holds of it, and
 * brings along a notice of its own that no source withdrew (it came after
 * the job decided to withdraw). */
static void advance(struct preempt_coord *c)
{
    uint64_t live = own_live(c) ? c->my_notice_wall : 0;
    size_t keep = 0;

    (void)view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_EPISODE, .ep = c->view.ep + 1 });
    junk_clear(c, NULL);
    reset_round(c, 0);
    reset_round(c, 1);
    forget_gone(c);
    c->my_withdrawn = false;
    ep_in(c, PREEMPT_EP_IN_NEXT_EPISODE);
    claim_in(c, PREEMPT_CLAIM_IN_NEXT_EPISODE);
    c->prop_step = 0;
    mship_in(c, PREEMPT_MSHIP_IN_NEXT_EPISODE); /* a last save that was an opportunistic one after all */
    c->my_notice_wall = c->my_deadline = 0;
    if (live) {
        struct preempt_event ev = { .kind = PREEMPT_EV_NOTICE };
        int src = preempt_source_from_string_(c->my_source);

        CLOG(c, 1, "this worker's notice came after the job withdrew the others: it opens episode %" PRIu64,
             c->view.ep);
        ev.u.notice.source = src < 0 ? PREEMPT_SOURCE_INJECT : (enum preempt_source)src;
        ev.u.notice.deadline = mono_of_wall(c, live);
        cpost(c, ev);
    }
    /* In the order they came, in one pass: the ones of this episode are
     * applied (the machine is draining: what this posts waits in its
     * queue, and nothing here holds a record again), later ones kept. */
    c->replaying = true;
    for (size_t i = 0, n = c->n_held; i < n; i++) {
        struct held h = c->held[i];

        if (h.ep > c->view.ep) {
            c->held[keep++] = h;
            continue;
        }
        if (h.ep == c->view.ep)
            on_watch_event(PREEMPT_ETCD_PUT, &(struct preempt_etcd_kv){ .key = h.key, .value = h.value }, c);
        free(h.key);
        free(h.value);
    }
    c->n_held = keep;
    c->replaying = false;
    flush_merged(c);
}

bool preempt_coord_fx_(struct preempt_coord *c, const struct preempt_fx *fx, unsigned round, bool last,
                       uint64_t save_ms, const char *text)
{
    char key[PREEMPT_KEY_MAX], val[400];
    unsigned k = round ? 1 : 0;

    switch (fx->kind) {
    case PREEMPT_FX_PUBLISH_NOTICE: {
        uint64_t wall = wall_of_mono(c, (uint64_t)fx->arg);
        bool opens = c->episode == PREEMPT_EP_IDLE; /* the transition claims next, and the claim carries it */

        ep_in(c, PREEMPT_EP_IN_OWN);
        if (!c->my_deadline || (uint64_t)fx->arg < c->my_deadline)
            c->my_deadline = (uint64_t)fx->arg;
        if (c->my_notice_wall && c->my_notice_wall <= wall)
            return true; /* the earliest deadline is already published */
        c->my_notice_wall = wall;
        (void)snprintf(c->my_source, sizeof(c->my_source), "%s", text ? text : "");
        if (opens)
            (void)pub(c, PREEMPT_PUB_IN_DEFER);
        else
            notice_put(c);
        return true;
    }
    case PREEMPT_FX_CLAIM_DRIVER:
        c->prop_step = (uint64_t)fx->arg;
        c->prop_last = last;
        claim_in(c, PREEMPT_CLAIM_IN_SEND);
        return true;
    case PREEMPT_FX_PROPOSE_STEP:
        propose_step(c, k, (uint64_t)fx->arg, last);
        return true;
    case PREEMPT_FX_REQUEST_FINAL: { /* final, and round 1's step unless it has one (a take-over's request) */
        char akey[PREEMPT_KEY_MAX], aval[PREEMPT_STEP_VALUE_MAX];
        struct preempt_etcd_cmp cmp = { .key = akey };
        struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_PUT, key, val, 0 }, { PREEMPT_ETCD_OP_PUT, akey, aval, 0 } };

        CKEY(c, key, FINAL);
        (void)snprintf(val, sizeof(val), "%u", c->me);
        CKEY(c, akey, AGREED, .round = 1);
        cmp.value = junk_of(c, akey);
        (void)preempt_step_value_(aval, sizeof(aval), (uint64_t)fx->arg, last);
        write_call(c, PREEMPT_RQ_TXN(&cmp, 1, ops, 2, ops, 1), on_write);
        return true;
    }
    case PREEMPT_FX_REPORT_SHARD:
        report(c, k, (uint64_t)fx->arg, last, save_ms);
        return true;
    case PREEMPT_FX_PUBLISH_ERROR: {
        CKEY(c, key, ERROR);
        (void)snprintf(val, sizeof(val), "%" PRId64 " %u %s", fx->arg, c->me, text ? text : "");
        for (size_t i = 0; val[i]; i++) /* <message:text>: printable (a trainer's message may not be) */
            if ((unsigned char)val[i] < 0x20 || val[i] == 0x7f)
                val[i] = ' ';
        write_call(c, PREEMPT_RQ_CREATE(key, val), on_write); /* the first error wins */
        return true;
    }
    case PREEMPT_FX_ANNOUNCE_DONE:
        CKEY(c, key, DONE, .worker = c->me);
        (void)snprintf(val, sizeof(val), "%" PRId64, fx->arg);
        put(c, key, val, 0);
        return true;
    case PREEMPT_FX_CLEAR_ROUND: {
        char wkey[PREEMPT_KEY_MAX];
        struct preempt_etcd_op ops[] = { { PREEMPT_ETCD_OP_DELETE_PREFIX, key, NULL, 0 },
                                         { PREEMPT_ETCD_OP_DELETE_PREFIX, wkey, NULL, 0 } };

        CRANGE(c, key, EPISODE, 0);
        CRANGE(c, wkey, W_EPISODE, 0);
        write_call(c, PREEMPT_RQ_TXN(NULL, 0, ops, 2, NULL, 0), on_write);
        advance(c);
        return true;
    }
    case PREEMPT_FX_PROPOSE_ABORT:
        abort_round(c, k, (uint64_t)fx->arg);
        return true;
    case PREEMPT_FX_EXIT:
        /* A notice that made this worker exit (a second one, with second =
         * exit) had no claim to carry it, and a notice its claim carries
         * would go with the lease the exit revokes: it goes now (delivered
         * by the exit's flush), so that its peers plan with the job's
         * earliest deadline. A worker that departed with its last report
         * leaves its lease, and its claim, to end by themselves. */
        if (c->pub == PREEMPT_PUB_DEFERRED || (c->pub == PREEMPT_PUB_IN_CLAIM && c->mship != PREEMPT_MSHIP_DEPARTED))
            notice_put(c);
        break; /* the rest is the shell's */
    case PREEMPT_FX_KEEP_SHARD: /* the shell's (preempt_effects.def's WHO): never asked here */
    case PREEMPT_FX_DISCARD_SHARD:
    case PREEMPT_FX_BEGIN_SAVE:
    case PREEMPT_FX_ARM_TIMER:
    case PREEMPT_FX_DISARM_TIMER:
    case PREEMPT_FX__COUNT:
        break;
    }
    return false;
}

void preempt_coord_leave_(struct preempt_coord *c)
{
    if (!c || LEFT(c))
        return;
    c->io->timer(c->io_arg, 0, NULL, NULL);
    if (c->mship == PREEMPT_MSHIP_DEPARTED)
        CLOG(c, 0, "leaving: the membership ended with the last report; the lease ends by itself");
    mship_in(c, PREEMPT_MSHIP_IN_LEAVE);
}

/* ---- the members watch (preempt_coord_watch_members_) ----------------------------------------- */

/* A member record put or deleted: a peer's membership that ends without its
 * done record is told to the owner. */
static void member_record(struct preempt_coord *c, bool put, const char *key)
{
    struct preempt_key k;
    int id = preempt_key_parse_(key, c->jobp, &k);

    if ((id != (int)PREEMPT_KEY_ALIVE && id != (int)PREEMPT_KEY_DONE) || k.inc != c->view.inc || k.worker >= c->n)
        return;
    if (id == (int)PREEMPT_KEY_DONE) {
        c->m_done[k.worker] = c->m_done[k.worker] || put;
        return;
    }
    if (!put && c->m_alive[k.worker] && !c->m_done[k.worker] && k.worker != c->me && !LEFT(c)) {
        CLOG(c, 1, "worker %u's membership ended", k.worker);
        c->m_gone(k.worker, "its membership ended: its lease expired or was revoked, or it left after its last save",
                  c->m_arg);
    }
    c->m_alive[k.worker] = put;
}

static void on_member_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    member_record(arg, type == PREEMPT_ETCD_PUT, kv->key);
}

/* A full read (the watch's start, or its re-read): a member that was
 * alive and is not in it has ended too. */
static void on_member_reset(const struct preempt_etcd_kv *kvs, size_t n, int64_t rev, void *arg)
{
    struct preempt_coord *c = arg;
    char key[PREEMPT_KEY_MAX];

    (void)rev;
    for (size_t i = 0; i < n; i++)
        member_record(c, true, kvs[i].key);
    for (unsigned w = 0; w < c->n; w++) {
        bool there = false;

        CKEY(c, key, ALIVE, .worker = w);
        for (size_t i = 0; i < n && !there; i++)
            there = !strcmp(kvs[i].key, key);
        if (!there)
            member_record(c, false, key);
    }
}

static void on_member_link(bool up, const char *why, void *arg)
{
    struct preempt_coord *c = arg;

    CLOG(c, up ? 0 : 1, "watch of the member records %s (%s)", up ? "up" : "down", why);
}

int preempt_coord_watch_members_(struct preempt_coord *c, void (*gone)(unsigned worker, const char *why, void *arg),
                                 void *arg)
{
    static const struct preempt_etcd_watch_ops ops = {
        .on_event = on_member_event, .on_reset = on_member_reset, .on_link = on_member_link,
    };
    char from[PREEMPT_KEY_MAX], to[PREEMPT_KEY_MAX];

    if (!c || !c->io->watch_members)
        return -ENOTSUP;
    if (c->m_alive)
        return 0; /* watched already: the owner's callback is the one it gave first */
    c->m_alive = calloc(c->n, sizeof(*c->m_alive));
    c->m_done = calloc(c->n, sizeof(*c->m_done));
    if (!c->m_alive || !c->m_done) {
        free(c->m_alive);
        free(c->m_done);
        c->m_alive = c->m_done = NULL;
        return -ENOMEM;
    }
    c->m_gone = gone;
    c->m_arg = arg;
    /* [N/w/alive/, N/w/done0): the member records and the done records
     * (nothing sorts between them) */
    CRANGE(c, from, ALIVE, 'w');
    CRANGE(c, to, DONE, 'w');
    to[strlen(to) - 1] = '0';
    return c->io->watch_members(c->io_arg, from, to, &ops, c);
}

void preempt_coord_history_(struct preempt_coord *c, const char *value)
{
    char key[PREEMPT_KEY_MAX], old[PREEMPT_KEY_MAX];

    if (!c)
        return;
    CKEY(c, key, HISTORY, .worker = c->me);
    (void)c->io->request(c->io_arg, PREEMPT_RQ_PUT(key, value, 0), c->give_up_ms, NULL, NULL);
    if (c->view.inc > PREEMPT_HISTORY_KEPT) { /* bounded: the oldest kept incarnation's goes */
        (void)preempt_key_range_(old, sizeof(old), c->jobp, PREEMPT_KEY_HISTORY_INC, 0,
                                 &(struct preempt_key){ .inc = c->view.inc - PREEMPT_HISTORY_KEPT });
        (void)c->io->request(c->io_arg, PREEMPT_RQ_DELETE_UNDER(old), c->give_up_ms, NULL, NULL);
    }
}

int preempt_coord_decision_key_(const struct preempt_coord *c, unsigned round, char *buf, size_t size)
{
    return preempt_key_(buf, size, c->jobp, PREEMPT_KEY_DECISION,
                        &(struct preempt_key){ .inc = c->view.inc, .ep = c->view.ep, .round = round ? 1 : 0 });
}

unsigned preempt_coord_pending_(const struct preempt_coord *c)
{
    return c ? c->io->pending(c->io_arg) : 0;
}

unsigned preempt_coord_flush_(struct preempt_coord *c, uint64_t bound_ms)
{
    return c ? c->io->flush(c->io_arg, bound_ms) : 0;
}

/* ---- life cycle ---------------------------------------------------------------------------------- */
int preempt_coord_new_io_(const struct preempt_coord_io *io, void *io_arg, const struct preempt_coord_cfg *cfg,
                          const struct preempt_coord_join *join, const struct preempt_coord_ops *ops, void *arg,
                          struct preempt_coord **ret)
{
    static const struct preempt_etcd_watch_ops wops = {
        .on_event = on_watch_event, .on_reset = on_watch_reset, .on_link = on_watch_link,
    };
    struct preempt_coord *c;
    unsigned n = cfg->workers;
    char wpre[PREEMPT_KEY_MAX];
    int r;

    if (!ops || !ops->post || !ops->now_ms || n == 0 || n > PREEMPT_MAX_WORKERS || cfg->worker >= n) {
        io->free(io_arg);
        return -EINVAL;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        io->free(io_arg);
        return -ENOMEM;
    }
    c->io = io;
    c->io_arg = io_arg;
    c->ops = *ops;
    c->arg = arg;
    c->me = cfg->worker;
    c->n = n;
    c->ttl_s = c->cfg_ttl_s = cfg->lease_ttl_s;
    c->give_up_ms = cfg->give_up_ms;
    c->lease = join->lease;
    (void)snprintf(c->member, sizeof(c->member), "%s", join->member[0] ? join->member : "pid=0");
    r = preempt_coord_prefix_(cfg->job, c->jobp, sizeof(c->jobp));
    if (r == 0)
        r = preempt_view_init_(&c->view, c->jobp, join->incarnation, n, c->me);
    CRANGE(c, c->pre, INC, 0);
    CRANGE(c, wpre, WORKERS, 0);
    c->present = calloc(n, sizeof(*c->present));
    c->gone_at = calloc(n, sizeof(*c->gone_at));
    if (r == 0 && (!c->present || !c->gone_at))
        r = -ENOMEM;
    if (r == 0)
        r = io->watch(io_arg, c->pre, wpre, &wops, c); /* [P/N/, P/N/w/) */
    if (r < 0) {
        preempt_coord_free_(c);
        return r;
    }
    arm_keepalive(c);
    *ret = c;
    return 0;
}

void preempt_coord_free_(struct preempt_coord *c)
{
    if (!c)
        return;
    c->io->free(c->io_arg);
    for (size_t i = 0; i < c->n_held; i++) {
        free(c->held[i].key);
        free(c->held[i].value);
    }
    free(c->held);
    free(c->m_alive);
    free(c->m_done);
    junk_clear(c, NULL);
    preempt_view_free_(&c->view);
    free(c->present);
    free(c->gone_at);
    free(c);
}
