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
#include "coord-state.h"

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

/* The coordinator's declared machines (decl-internal.h): one input each. */


void coord_flush_merged(struct preempt_coord *c)
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
void coord_cpost(struct preempt_coord *c, struct preempt_event ev)
{
    if (c->replaying && ev.kind == PREEMPT_EV_PEER_NOTICE) {
        uint64_t d = ev.u.peer_notice.deadline, m = c->merged.u.peer_notice.deadline;

        if (c->merged.kind != PREEMPT_EV_PEER_NOTICE || (d && (!m || d < m)))
            c->merged = ev;
        return;
    }
    coord_flush_merged(c);
    c->ops.post(&ev, c->arg);
}


/* The garbage slot key holds, as last seen; NULL when it holds none. */
const char *coord_junk_of(const struct preempt_coord *c, const char *key)
{
    for (size_t i = 0; i < JUNK_MAX; i++)
        if (c->junk[i].key && !strcmp(c->junk[i].key, key))
            return c->junk[i].value;
    return NULL;
}

/* Forgets slot i (by index: a key naming it may be the slot's own). */
static void junk_drop(struct preempt_coord *c, size_t i)
{
    free(c->junk[i].key);
    free(c->junk[i].value);
    c->junk[i].key = c->junk[i].value = NULL;
}

void coord_junk_clear(struct preempt_coord *c, const char *key) /* NULL: every slot */
{
    for (size_t i = 0; i < JUNK_MAX; i++)
        if (c->junk[i].key && (!key || !strcmp(c->junk[i].key, key)))
            junk_drop(c, i);
}

/* The next episode: its slots are new; the incarnation's error slot stays. */
void coord_junk_clear_episode(struct preempt_coord *c)
{
    char ekey[PREEMPT_KEY_MAX];

    CKEY(c, ekey, ERROR);
    for (size_t i = 0; i < JUNK_MAX; i++)
        if (c->junk[i].key && strcmp(c->junk[i].key, ekey))
            junk_drop(c, i);
}

/* Slot key (of this episode, or the error's) holds value, which is no record. */
void coord_junk_set(struct preempt_coord *c, const char *key, const char *value)
{
    size_t i = 0;

    coord_junk_clear(c, key);
    while (i < JUNK_MAX - 1 && c->junk[i].key)
        i++;
    if (c->junk[i].key) /* full: the spare goes */
        junk_drop(c, i);
    c->junk[i].key = strdup(key);
    c->junk[i].value = strdup(value);
    if (!c->junk[i].key || !c->junk[i].value)
        coord_junk_clear(c, NULL); /* out of memory: such slots block, as before */
}

const char *preempt_coord_refused_(int r)
{
    return r == -EBADMSG ? "a value it would write is not its record's grammar (a bug: the log names it)"
                         : "out of memory";
}

void coord_failed(struct preempt_coord *c, int status, const char *msg)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_COORD_FAILED };

    CLOG(c, 3, "coordination write failed: %s", msg);
    coord_answer(c, (struct preempt_job_answer){ .kind = PREEMPT_JOB_ANSWER_WRITE, .status = status });
    ev.u.coord_failed.err = status;
    coord_cpost(c, ev);
}

void coord_in_written(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    if (in->status != 0)
        coord_failed(c, in->status, in->msg);
}

/* ---- the inputs ------------------------------------------------------------------------------- */

static void (*const input_fn[PREEMPT_COORD_IN__COUNT])(struct preempt_coord *, const struct preempt_coord_in *) = {
#define PREEMPT_COORD_INPUT(id, name, fn, what) [PREEMPT_COORD_IN_##id] = fn,
#include "coord-inputs.def"
#undef PREEMPT_COORD_INPUT
};

void preempt_coord_input_(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    if ((unsigned)in->kind < PREEMPT_COORD_IN__COUNT)
        input_fn[in->kind](c, in);
}

/* The port's callbacks: each makes its typed input, nothing more. */
static void answered(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    const struct coord_token *t = arg;

    preempt_coord_input_(t->c, &(struct preempt_coord_in){ .kind = t->kind, .round = t->round, .status = status,
                                                           .reply = r, .msg = msg });
}

/* A watch's callbacks, for both watches: the argument is the token of its
 * event input, and its read and link inputs follow it in coord-inputs.def. */
_Static_assert(PREEMPT_COORD_IN_RECORDS == PREEMPT_COORD_IN_RECORD + 1 &&
                   PREEMPT_COORD_IN_LINK == PREEMPT_COORD_IN_RECORD + 2 &&
                   PREEMPT_COORD_IN_MEMBERS_READ == PREEMPT_COORD_IN_MEMBER + 1 &&
                   PREEMPT_COORD_IN_MEMBERS_LINK == PREEMPT_COORD_IN_MEMBER + 2,
               "a watch's inputs are event, read, link, in that order");

static void watched(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    const struct coord_token *t = arg;

    preempt_coord_input_(t->c, &(struct preempt_coord_in){ .kind = t->kind, .ev = type, .kv = kv });
}

static void reread(const struct preempt_etcd_kv *kvs, size_t n, int64_t rev, void *arg)
{
    const struct coord_token *t = arg;

    preempt_coord_input_(t->c, &(struct preempt_coord_in){ .kind = t->kind + 1, .kvs = kvs, .n = n, .rev = rev });
}

static void linked(bool up, const char *why, void *arg)
{
    const struct coord_token *t = arg;

    preempt_coord_input_(t->c, &(struct preempt_coord_in){ .kind = t->kind + 2, .up = up, .why = why });
}

const struct preempt_etcd_watch_ops coord_watch_ops = { .on_event = watched, .on_reset = reread, .on_link = linked };

static void ticked(void *arg)
{
    preempt_coord_input_(arg, &(struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_TICK });
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

void coord_create(struct preempt_coord *c, const char *key, const char *value, enum preempt_coord_in_kind answer)
{
    struct preempt_etcd_cmp cmp = { .key = key, .value = coord_junk_of(c, key) }; /* NULL: absent */
    struct preempt_etcd_op put = { PREEMPT_ETCD_OP_PUT, key, value, 0 }, get = { PREEMPT_ETCD_OP_GET, key, NULL, 0 };

    coord_write_call(c, PREEMPT_RQ_TXN(&cmp, 1, &put, 1, &get, 1), answer);
}

int coord_send(struct preempt_coord *c, const struct preempt_etcd_req *req, uint64_t give_up_ms,
               enum preempt_coord_in_kind answer)
{
    return c->io->request(c->io_arg, req, give_up_ms, answered, &c->tok[answer][0]);
}

void coord_round_call(struct preempt_coord *c, unsigned k, const struct preempt_etcd_req *req,
                      enum preempt_coord_in_kind answer)
{
    int r = c->io->request(c->io_arg, req, give_up(c), answered, &c->tok[answer][k]);

    if (r < 0)
        coord_failed(c, r, preempt_coord_refused_(r));
}

void coord_write_call(struct preempt_coord *c, const struct preempt_etcd_req *req, enum preempt_coord_in_kind answer)
{
    coord_round_call(c, 0, req, answer);
}

void coord_put(struct preempt_coord *c, const char *key, const char *value, int64_t lease)
{
    coord_write_call(c, PREEMPT_RQ_PUT(key, value, lease), PREEMPT_COORD_IN_WRITTEN);
}

uint64_t coord_mono_of_wall(const struct preempt_coord *c, uint64_t wall)
{
    uint64_t now = c->ops.now_ms(c->arg), w = c->io->wall_ms(c->io_arg);

    if (wall == 0)
        return 0;
    if (wall >= w)
        return now + (wall - w);
    return now > w - wall ? now - (w - wall) : 1; /* already passed */
}

uint64_t coord_wall_of_mono(const struct preempt_coord *c, uint64_t mono)
{
    uint64_t now = c->ops.now_ms(c->arg), w = c->io->wall_ms(c->io_arg);

    return mono >= now ? w + (mono - now) : w - (now - mono);
}


/* This worker has a notice that none of its sources withdrew. */
bool coord_own_live(const struct preempt_coord *c)
{
    return c->my_notice_wall != 0 && !c->my_withdrawn;
}


/* A proposal's answer. When another record landed first, the reply carries
 * it: it is applied as the watch would apply it (the watch may be slow or
 * down; the record is the same). */
void coord_in_decided(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    const struct preempt_etcd_kv *kv = in->status == 0 && !in->reply->succeeded ? preempt_etcd_reply_kv_(in->reply, 0)
                                                                                 : NULL;

    if (in->status != 0)
        coord_failed(c, in->status, in->msg);
    else if (kv)
        coord_apply_record(c, PREEMPT_ETCD_PUT, kv);
}

void coord_decide(struct preempt_coord *c, unsigned k, const char *value)
{
    char key[PREEMPT_KEY_MAX];

    CKEY(c, key, DECISION, .round = k);
    coord_create(c, key, value, PREEMPT_COORD_IN_DECIDED); /* the watch brings the winner */
}

/* ---- membership -------------------------------------------------------------------------------- */

/* The keep-alive tick's period: a third of the lease's TTL (at least
 * 1 s); it also bounds the requests a tick sends. */
unsigned coord_tick_ms(const struct preempt_coord *c)
{
    return (c->ttl_s / 3 ? c->ttl_s / 3 : 1) * 1000u;
}

static void arm_keepalive(struct preempt_coord *c)
{
    c->io->timer(c->io_arg, coord_tick_ms(c), ticked, c);
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

/* A grant's answer (status 0: r holds the new lease): the lease's machine,
 * then the membership and claim machines, take it. */
static void granted(struct preempt_coord *c, int status, const struct preempt_etcd_reply *r, const char *msg)
{
    coord_answer(c, (struct preempt_job_answer){ .kind = PREEMPT_JOB_ANSWER_GRANT, .status = status,
                                                 .ttl_s = status < 0 ? 0 : r->ttl });
    if (status < 0) {
        CLOG(c, 2, "renewing the membership lease failed: %s", msg);
        coord_lease_in(c, PREEMPT_LEASE_IN_GRANT_FAILED);
        coord_claim_in(c, PREEMPT_CLAIM_IN_GRANT_FAILED);
        return;
    }
    /* The old lease, if it still lives, is no longer kept alive: it ends by
     * itself, and nothing is bound to it once alive/<me> moved over. */
    c->lease = r->id;
    if (r->ttl > 0)
        c->ttl_s = (unsigned)r->ttl;
    coord_lease_in(c, PREEMPT_LEASE_IN_GRANTED);
    coord_mship_in(c, PREEMPT_MSHIP_IN_GRANTED); /* alive/<me> moves over, unless it went with the last report */
    coord_claim_in(c, PREEMPT_CLAIM_IN_GRANTED); /* a claim sent under the lease that had ended goes again */
}

void coord_in_granted(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    if (!LEFT(c))
        granted(c, in->status, in->reply, in->msg);
}

/* The lease machine's grant: a new lease of the TTL needed now. */
void coord_grant(struct preempt_coord *c)
{
    int r = coord_send(c, PREEMPT_RQ_GRANT(ttl_needed(c)), c->give_up_ms, PREEMPT_COORD_IN_GRANTED);

    if (r < 0)
        granted(c, r, NULL, "the request could not be sent");
}

void preempt_coord_step_(struct preempt_coord *c, uint64_t step_ms)
{
    if (c && step_ms > c->longest_step_ms) /* the common case: nothing to tell */
        preempt_coord_input_(c, &(struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_STEP, .step_ms = step_ms });
}

void coord_in_step(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    uint64_t step_ms = in->step_ms;

    if (step_ms <= c->longest_step_ms)
        return;
    c->longest_step_ms = step_ms;
    /* A longer lease while nothing is going on (during a preemption the
     * driver's claim is bound to the current lease). */
    if (ttl_needed(c) > c->ttl_s && c->episode == PREEMPT_EP_IDLE) {
        CLOG(c, 1, "a step took %" PRIu64 " ms: the membership lease grows to %u s", step_ms, ttl_needed(c));
        coord_lease_in(c, PREEMPT_LEASE_IN_GREW);
    }
}

/* A keep-alive's answer: what it says is one pure reading, traced; a
 * lease etcd knows no more is the lease machine's expired. */
void coord_in_kept(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    int64_t ttl = in->status < 0 ? 0 : in->reply->ttl;

    if (LEFT(c))
        return;
    coord_answer(c, (struct preempt_job_answer){ .kind = PREEMPT_JOB_ANSWER_KEEP, .status = in->status, .ttl_s = ttl });
    switch (preempt_keep_answer_(in->status, ttl)) {
    case PREEMPT_KEEP_FAILED:
        CLOG(c, 2, "lease keep-alive failed: %s", in->msg);
        break;
    case PREEMPT_KEEP_EXPIRED:
        CLOG(c, 2, "the membership lease expired; joining again with a new one");
        coord_lease_in(c, PREEMPT_LEASE_IN_EXPIRED);
        break;
    case PREEMPT_KEEP_KEPT:
        break;
    }
    arm_keepalive(c);
}

void coord_answer(struct preempt_coord *c, struct preempt_job_answer a)
{
    if (c->ops.on_answer)
        c->ops.on_answer(&c->view, &a, c->arg);
}

void coord_in_tick(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    (void)in;
    coord_watch_in(c, PREEMPT_WATCH_IN_TICK, NULL); /* while the watch is down, a read of the records */
    coord_read_members(c);
    if (coord_send(c, PREEMPT_RQ_LEASE(KEEPALIVE, c->lease), coord_tick_ms(c), PREEMPT_COORD_IN_KEPT) < 0)
        arm_keepalive(c);
}

/* ---- life cycle ---------------------------------------------------------------------------------- */
int preempt_coord_new_io_(const struct preempt_coord_io *io, void *io_arg, const struct preempt_coord_cfg *cfg,
                          const struct preempt_coord_join *join, const struct preempt_coord_ops *ops, void *arg,
                          struct preempt_coord **ret)
{
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
    for (unsigned i = 0; i < PREEMPT_COORD_IN__COUNT; i++)
        for (unsigned k = 0; k < 2; k++)
            c->tok[i][k] = (struct coord_token){ .c = c, .kind = (enum preempt_coord_in_kind)i, .round = k };
    c->ops = *ops;
    c->arg = arg;
    c->me = cfg->worker;
    c->n = n;
    c->ttl_s = c->cfg_ttl_s = cfg->lease_ttl_s;
    c->give_up_ms = cfg->give_up_ms;
    c->decl_trace = cfg->decl_trace;
    c->lease = join->lease;
    (void)snprintf(c->member, sizeof(c->member), "%s", join->member[0] ? join->member : "pid=0");
    r = preempt_coord_prefix_(cfg->job, c->jobp, sizeof(c->jobp));
    if (r == 0)
        r = preempt_view_init_(&c->view, c->jobp, join->incarnation, n, c->me);
    CRANGE(c, c->pre, INC, 0);
    CRANGE(c, wpre, WORKERS, 0);
    c->absent = calloc((n + 7) / 8, 1);
    c->lost = (struct preempt_lost){ .n = n, .me = c->me, .gone_at = calloc(n, sizeof(uint64_t)) };
    if (r == 0 && (!c->absent || !c->lost.gone_at))
        r = -ENOMEM;
    if (r == 0) /* [P/N/, P/N/w/) */
        r = io->watch(io_arg, c->pre, wpre, &coord_watch_ops, &c->tok[PREEMPT_COORD_IN_RECORD][0]);
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
    coord_junk_clear(c, NULL);
    preempt_view_free_(&c->view);
    free(c->absent);
    free(c->lost.gone_at);
    free(c);
}
