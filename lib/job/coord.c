/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord.c: the multi-worker protocol over etcd while the job runs (see
 * coord-internal.h and docs/protocol.md); start-up is lib/job/startup.c's, the
 * libevent adapter of the port lib/handler/coord-io.c's. The key layout under P = /preempt/<job>/ is
 * lib/records/keys-internal.h's one table: P/incarnation, and under incarnation N
 * the records every worker watches, [P/N/, P/N/w/), and the per-worker
 * records under P/N/w/, counted in etcd by the transaction that writes
 * them, that only the driver reads (docs/protocol.md, "Traffic").
 *
 * p counts the job's preemption episodes in N: 0 first; every worker moves on
 * to p + 1 when its machine clears the round after the notices were withdrawn
 * (clear-round), so that the records of an ended episode, however late they
 * land or are deleted, never touch the next one. Round 0 is the first save;
 * round 1 the final save of a grace period. */
#include <stdarg.h>

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
    coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_POST, .ev = ev });
}

void coord_link(struct preempt_coord *c, enum preempt_link_id link, enum preempt_link_m m, unsigned input)
{
    if (preempt_link_posts_(link, m, input))
        return;
    c->link_bugs++;
    CLOG(c, 3, "bug: link %s posts %s to %s, which lib/job/links-internal.h does not declare",
         link < PREEMPT_LINK__COUNT ? preempt_links_[link].name : "?", preempt_link_input_name_(m, input),
         preempt_link_machine_name_(m));
}

unsigned preempt_coord_link_bugs_(const struct preempt_coord *c)
{
    return c ? c->link_bugs : 0;
}

/* Posts ev to the machine. While held records are replayed (inside one of
 * the machine's effects, so the machine's queue fills), their peer notices
 * become one: the earliest deadline is all the machine needs of them. */
void coord_cpost(struct preempt_coord *c, enum preempt_link_id link, struct preempt_event ev)
{
    coord_link(c, link, PREEMPT_LINK_M_HANDLER, (unsigned)ev.kind);
    if (c->replaying && ev.kind == PREEMPT_EV_PEER_NOTICE) {
        uint64_t d = ev.u.peer_notice.deadline, m = c->merged.u.peer_notice.deadline;

        if (c->merged.kind != PREEMPT_EV_PEER_NOTICE || (d && (!m || d < m)))
            c->merged = ev;
        return;
    }
    coord_flush_merged(c);
    coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_POST, .ev = ev });
}

void coord_out(struct preempt_coord *c, const struct preempt_coord_out *out)
{
    c->sink(c->sink_arg, out);
}

void coord_log(struct preempt_coord *c, int level, const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    if (!c->logs)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_LOG, .level = level, .text = buf });
}


/* The compare a write that creates key makes: nothing stands there, or
 * the garbage this worker saw there stands (its revision: replacing
 * exactly it). */
int64_t coord_slot(const struct preempt_coord *c, const char *key)
{
    for (size_t i = 0; i < JUNK_MAX; i++)
        if (!strcmp(c->junk[i].key, key))
            return c->junk[i].rev;
    return 0;
}

void coord_junk_clear(struct preempt_coord *c, const char *key) /* NULL: every slot */
{
    for (size_t i = 0; i < JUNK_MAX; i++)
        if (!key || !strcmp(c->junk[i].key, key))
            c->junk[i] = (struct junk){ 0 };
}

/* The next episode: its slots are new; the incarnation's error slot stays. */
void coord_junk_clear_episode(struct preempt_coord *c)
{
    char ekey[PREEMPT_KEY_MAX];

    CKEY(c, ekey, ERROR);
    for (size_t i = 0; i < JUNK_MAX; i++)
        if (strcmp(c->junk[i].key, ekey))
            c->junk[i] = (struct junk){ 0 };
}

/* Slot key (of this episode, or the error's) holds garbage, written at
 * revision rev. */
void coord_junk_set(struct preempt_coord *c, const char *key, int64_t rev)
{
    size_t i = 0, n = strlen(key);

    coord_junk_clear(c, key);
    if (n == 0 || n >= sizeof(c->junk[0].key) || rev <= 0) /* no slot of this worker's: nothing to replace */
        return;
    while (i < JUNK_MAX - 1 && c->junk[i].key[0])
        i++;
    memcpy(c->junk[i].key, key, n + 1); /* full: the spare goes */
    c->junk[i].rev = rev;
}

const char *preempt_coord_refused_(int r)
{
    return r == -EBADMSG       ? "a value it would write is not its record's grammar (a bug: the log names it)"
           : r == -ENAMETOOLONG ? "a key it would name did not fit (a bug: the request was not sent)"
                                : "out of memory";
}

void coord_failed(struct preempt_coord *c, int status, const char *msg)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_COORD_FAILED };

    CLOG(c, 3, "coordination write failed: %s", msg);
    coord_answer(c, (struct preempt_job_answer){ .kind = PREEMPT_JOB_ANSWER_WRITE, .status = status });
    ev.u.coord_failed.err = status;
    coord_cpost(c, PREEMPT_LINK_WRITE_FAILED, ev);
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
    uint64_t now = c->now_ms, wall = c->wall_ms; /* an input inside another's step (an effect of a post) */

    if ((unsigned)in->kind >= PREEMPT_COORD_IN__COUNT)
        return;
    c->now_ms = in->now_ms;
    c->wall_ms = in->wall_ms;
    input_fn[in->kind](c, in);
    c->now_ms = now;
    c->wall_ms = wall;
}

/* How long a write retries. While this worker has a notice of its own, up
 * to its deadline: its machine's timer bounds the wait, and giving up
 * earlier (etcd down for longer than give_up_ms) would lose the notice for
 * every other worker. */
static uint64_t give_up(const struct preempt_coord *c)
{
    uint64_t now = c->now_ms;

    return c->my_deadline > now + c->give_up_ms ? c->my_deadline - now : c->give_up_ms;
}

void coord_create(struct preempt_coord *c, const char *key, const struct preempt_value *value,
                  enum preempt_coord_in_kind answer)
{
    coord_write_call(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_CREATE,
                                                  .rec = { key, value, coord_slot(c, key) } },
                     answer);
}

void coord_send(struct preempt_coord *c, const struct preempt_co_ask *ask, uint64_t give_up_ms,
                enum preempt_coord_in_kind answer)
{
    coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_REQUEST, .ask = ask, .give_up_ms = give_up_ms,
                                              .answer = answer });
}

void coord_round_call(struct preempt_coord *c, unsigned k, const struct preempt_co_ask *ask,
                      enum preempt_coord_in_kind answer)
{
    coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_REQUEST, .ask = ask, .give_up_ms = give_up(c),
                                              .answer = answer, .round = k });
}

void coord_write_call(struct preempt_coord *c, const struct preempt_co_ask *ask, enum preempt_coord_in_kind answer)
{
    coord_round_call(c, 0, ask, answer);
}

void coord_put(struct preempt_coord *c, const char *key, const struct preempt_value *value, int64_t lease)
{
    coord_write_call(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_PUT, .rec = { key, value, 0 }, .lease = lease },
                     PREEMPT_COORD_IN_WRITTEN);
}

uint64_t coord_mono_of_wall(const struct preempt_coord *c, uint64_t wall)
{
    uint64_t now = c->now_ms, w = c->wall_ms;

    if (wall == 0)
        return 0;
    if (wall >= w)
        return now + (wall - w);
    return now > w - wall ? now - (w - wall) : 1; /* already passed */
}

uint64_t coord_wall_of_mono(const struct preempt_coord *c, uint64_t mono)
{
    uint64_t now = c->now_ms, w = c->wall_ms;

    return mono >= now ? w + (mono - now) : w - (now - mono);
}


/* This worker has a notice that none of its sources withdrew. */
bool coord_own_live(const struct preempt_coord *c)
{
    return c->my_notice_wall != 0 && !c->my_withdrawn;
}


/* A proposal's answer. When another record landed first, the answer
 * carries it: it is applied as the watch would apply it (the watch may be
 * slow or down; the record is the same). */
void coord_in_decided(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    if (in->status != 0)
        coord_failed(c, in->status, in->msg);
    else if (in->answer->found)
        coord_apply_record(c, PREEMPT_ETCD_PUT, in->answer->found);
}

void coord_decide(struct preempt_coord *c, unsigned k, const struct preempt_value *value)
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

void coord_arm_keepalive(struct preempt_coord *c)
{
    coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_TIMER, .ms = coord_tick_ms(c) });
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

/* A grant's answer (status 0: a holds the new lease): the lease's machine,
 * then the membership and claim machines, take it. */
static void granted(struct preempt_coord *c, int status, const struct preempt_co_answer *a, const char *msg)
{
    coord_answer(c, (struct preempt_job_answer){ .kind = PREEMPT_JOB_ANSWER_GRANT, .status = status,
                                                 .ttl_s = status < 0 ? 0 : a->ttl_s });
    if (status < 0) {
        CLOG(c, 2, "renewing the membership lease failed: %s", msg);
        coord_lease_in(c, PREEMPT_LINK_GRANT_FAILED, PREEMPT_LEASE_IN_GRANT_FAILED);
        coord_claim_in(c, PREEMPT_LINK_GRANT_FAILED, PREEMPT_CLAIM_IN_GRANT_FAILED);
        return;
    }
    /* The old lease, if it still lives, is no longer kept alive: it ends by
     * itself, and nothing is bound to it once alive/<me> moved over. */
    c->lease = a->lease;
    if (a->ttl_s > 0)
        c->ttl_s = (unsigned)a->ttl_s;
    coord_lease_in(c, PREEMPT_LINK_GRANTED, PREEMPT_LEASE_IN_GRANTED);
    /* alive/<me> moves over, unless it went with the last report; a claim
     * sent under the lease that had ended goes again */
    coord_mship_in(c, PREEMPT_LINK_GRANTED, PREEMPT_MSHIP_IN_GRANTED);
    coord_claim_in(c, PREEMPT_LINK_GRANTED, PREEMPT_CLAIM_IN_GRANTED);
}

void coord_in_granted(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    if (!LEFT(c))
        granted(c, in->status, in->answer, in->msg);
}

/* The lease machine's grant: a new lease of the TTL needed now. */
void coord_grant(struct preempt_coord *c)
{
    coord_send(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_GRANT, .ttl_s = ttl_needed(c) }, c->give_up_ms,
               PREEMPT_COORD_IN_GRANTED);
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
        coord_lease_in(c, PREEMPT_LINK_STEP_GREW, PREEMPT_LEASE_IN_GREW);
    }
}

/* A keep-alive's answer: what it says is one pure reading, traced; a
 * lease etcd knows no more is the lease machine's expired. */
void coord_in_kept(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    int64_t ttl = in->status < 0 ? 0 : in->answer->ttl_s;

    if (LEFT(c))
        return;
    coord_answer(c, (struct preempt_job_answer){ .kind = PREEMPT_JOB_ANSWER_KEEP, .status = in->status, .ttl_s = ttl });
    switch (preempt_keep_answer_(in->status, ttl)) {
    case PREEMPT_KEEP_FAILED:
        CLOG(c, 2, "lease keep-alive failed: %s", in->msg);
        break;
    case PREEMPT_KEEP_EXPIRED:
        CLOG(c, 2, "the membership lease expired; joining again with a new one");
        coord_lease_in(c, PREEMPT_LINK_LEASE_EXPIRED, PREEMPT_LEASE_IN_EXPIRED);
        break;
    case PREEMPT_KEEP_KEPT:
        break;
    }
    coord_arm_keepalive(c);
}

void coord_answer(struct preempt_coord *c, struct preempt_job_answer a)
{
    coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_ANSWER, .said = &a });
}

void coord_in_tick(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    (void)in;
    coord_watch_in(c, PREEMPT_LINK_TICK, PREEMPT_WATCH_IN_TICK, NULL); /* the watch down: a read of the records */
    coord_read_members(c);
    coord_send(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_KEEP, .lease = c->lease }, coord_tick_ms(c),
               PREEMPT_COORD_IN_KEPT);
}
