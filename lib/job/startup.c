/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/startup.c: a job's start-up, the core: joining an incarnation
 * (the membership, the barrier that agrees on the restore step from every
 * member's offer, the incarnation's shape) and the restore barrier (every
 * worker's restore outcome, one verdict), as one step (startup-state.h):
 * a typed input in (startup-inputs.def), typed outputs out
 * (startup-outputs.def). It calls no port and reads no clock; its shell
 * (lib/job/startup-shell.c) runs the outputs over the coordinator's typed
 * port (the real etcd client, or the simulation's). The running protocol
 * is lib/job/coord.c's; docs/protocol.md has the records and their order. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "startup-state.h"
#include "records/records.h"
#include "base/base.h"
#include "view-internal.h"
#include "links-internal.h" /* the links that feed start-up's machines */

static const char *const in_names[] = {
#define PREEMPT_STARTUP_INPUT(ID, name, handler, text) name,
#include "startup-inputs.def"
#undef PREEMPT_STARTUP_INPUT
};
static const char *const out_names[] = {
#define PREEMPT_STARTUP_OUTPUT(ID, name, text) name,
#include "startup-outputs.def"
#undef PREEMPT_STARTUP_OUTPUT
};

const char *preempt_startup_in_name_(enum preempt_startup_in_kind k)
{
    return k < PREEMPT_STARTUP_IN__COUNT ? in_names[k] : "none";
}

const char *preempt_startup_out_name_(enum preempt_startup_out_kind k)
{
    return k < PREEMPT_STARTUP_OUT__COUNT ? out_names[k] : "?";
}

/* ---- start-up: join an incarnation and agree on the restore step ------------------------ */

/* The phase's outcome is known: nothing more is asked. */
#define FINISHED(j) ((j)->end != PREEMPT_PEND_RUNNING)
/* Its end runs next, from the loop. */
#define END_DUE(j) ((j)->end == PREEMPT_PEND_ENDING || (j)->end == PREEMPT_PEND_REVOKED)

static bool join_end(struct join *j, enum preempt_link_id link, enum preempt_pend_input in);

static void out(struct join *j, struct preempt_startup_out o)
{
    j->sink(j->sink_arg, &o);
}

/* Sets the one timer to the earliest due time (the end: at once, from
 * the loop). */
static void join_arm(struct join *j)
{
    uint64_t due[] = { j->t_keep, j->t_wait, FINISHED(j) ? 0 : j->deadline }, at = 0, now = j->now;

    for (size_t i = 0; i < sizeof(due) / sizeof(due[0]); i++)
        if (due[i] && (!at || due[i] < at))
            at = due[i];
    if (END_DUE(j))
        at = now;
    out(j, (struct preempt_startup_out){ .kind = PREEMPT_STARTUP_OUT_TIMER,
                                         .ms = at > now ? at - now : 1 }); /* always some time: 0 cancels */
}

static void join_finish(struct join *j, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void join_finish(struct join *j, int status, const char *fmt, ...)
{
    va_list ap;

    if (FINISHED(j))
        return;
    j->status = status;
    va_start(ap, fmt);
    (void)vsnprintf(j->msg, j->msg_size, fmt, ap);
    va_end(ap);
    (void)join_end(j, PREEMPT_LINK_PHASE_FINISH, PREEMPT_PEND_IN_FINISH);
}

/* Whether link declares input of start-up's machine m (links-internal.h:
 * the wiring fsmdump --machine job draws). An input no link declares is a
 * bug: the phase fails with it (once its end runs, the end goes on). */
static bool su_link(struct join *j, enum preempt_link_id link, enum preempt_link_m m, unsigned in)
{
    if (preempt_link_posts_(link, m, in))
        return true;
    if (!FINISHED(j))
        join_finish(j, -EPROTO, "job %s: bug: link %s posts %s's input %s, which the links table does not declare",
                    j->cfg->job, preempt_links_[link].name, preempt_link_machine_name_(m),
                    preempt_link_input_name_(m, in));
    else if (j->status == 0)
        j->status = -EPROTO;
    return false;
}

/* The time left before start-up gives up (at least 1 ms). */
static uint64_t join_left(const struct join *j)
{
    return j->deadline > j->now ? j->deadline - j->now : 1;
}

/* Asks a of the store, bounded by the time left; its answer is the input
 * answer. */
static void join_call(struct join *j, struct preempt_su_ask a, enum preempt_startup_in_kind answer)
{
    if (FINISHED(j)) /* an answer that came after the end: nothing more is asked */
        return;
    out(j, (struct preempt_startup_out){ .kind = PREEMPT_STARTUP_OUT_REQUEST, .ask = &a, .ms = join_left(j),
                                         .answer = answer });
}

/* An ask about the incarnation being joined. */
#define ASK(j, k, ...) ((struct preempt_su_ask){ .kind = PREEMPT_SU_##k, .inc = (j)->inc, __VA_ARGS__ })

static void join_read_inc(struct join *j);

static bool join_failed(struct join *j, int status, const char *msg, const char *what)
{
    if (status == 0)
        return false;
    join_finish(j, status, "joining job %s: %s: %s", j->cfg->job, what, msg);
    return true;
}

/* The answer to a create-if-absent (what: for the message): NULL when
 * start-up ended on it; else the record that was there, or an empty one
 * (value NULL) when this worker's was created (*created) or the one there
 * went before it could be read. */
static const struct preempt_etcd_kv *join_created(struct join *j, const struct preempt_startup_in *in,
                                                  const char *what, bool *created)
{
    if (join_failed(j, in->status, in->msg, what))
        return NULL;
    *created = in->answer->done;
    return in->answer->found;
}

static void su_in_opened(struct join *j, const struct preempt_startup_in *in)
{
    if (!join_failed(j, in->status, in->msg, "opening an incarnation"))
        join_read_inc(j); /* whoever opened it first, read what it is now */
}

static void join_try(struct join *j, bool rejoin);
static void join_open(struct join *j, uint64_t inc);

static void write_ready(struct join *j, bool consume);
static void su_in_start_over(struct join *j, const struct preempt_startup_in *in);

/* A record (the barrier's, the shape's) whose worker count is not this
 * worker's: start-up ends with that error. Returns true then. */
static bool workers_differ(struct join *j, enum preempt_key_id id, const char *value, const char *record,
                           union preempt_rv *ret)
{
    union preempt_rv own, *rec = ret ? ret : &own;
    const char *why;
    uint64_t w;

    if (preempt_rv_read_(id, NULL, value ? value : "", PREEMPT_MAX_WORKERS, rec, &why) < 0) {
        join_finish(j, -EPROTO, "job %s: incarnation %" PRIu64 "'s record (it %s) holds \"%.40s\", not %s: not "
                    "one a worker wrote", j->cfg->job, j->inc, record, value ? value : "", why);
        return true;
    }
    w = id == PREEMPT_KEY_READY ? rec->ready.workers : rec->shape.workers; /* both say it */
    if (w == j->cfg->workers)
        return false;
    join_finish(j, -EINVAL,
                "job %s: incarnation %" PRIu64 " %s workers=%" PRIu64 ", but this worker has workers=%u: every worker "
                "of a job needs the same worker count (nothing was changed)",
                j->cfg->job, j->inc, record, w, j->cfg->workers);
    return true;
}

/* Whether a typed record's writer made a value (rc 0); its refusal (a
 * bug: why) ends start-up with that error. */
static bool join_written(struct join *j, const char *kind, int rc, const char *why)
{
    if (rc == 0)
        return true;
    join_finish(j, -EBADMSG, "job %s: bug: a %s record's value is not %s", j->cfg->job, kind, why);
    return false;
}
/* The value *v of a record of kind (lower case: ready, shape, ...) from its
 * typed fields (records-internal.h's typed records, written from the
 * grammar): join_written's answer. */
#define JOIN_VALUE(j, v, kind, ...)                                                                                \
    ({                                                                                                             \
        const char *why_ = "";                                                                                     \
        int rc_ = preempt_rv_##kind##_write_((v), &(struct preempt_rv_##kind){ __VA_ARGS__ }, (j)->cfg->workers,  \
                                             &why_);                                                               \
        join_written((j), #kind, rc_, why_);                                                                       \
    })

/* The incarnation counter's value for inc (the record's grammar writes it,
 * as every reader reads it: a transaction compares it with the stored
 * one). */
static bool counter_value(struct join *j, struct preempt_value *v, uint64_t inc)
{
    return JOIN_VALUE(j, v, incarnation, .N = inc);
}

/* The barrier's record (N/ready): "restore=<step>|none workers=W
 * launch=L", written once, create-if-absent, by whichever worker found
 * the W-th live member. Every worker follows it. */
static void apply_ready(struct join *j, const struct preempt_etcd_kv *kv)
{
    char mine[PREEMPT_MAX_LAUNCH + 1];
    union preempt_rv read;
    const struct preempt_rv_ready *rd = &read.ready;
    const char *launch;
    size_t launch_len;
    uint64_t step;
    bool have_step;

    if (workers_differ(j, PREEMPT_KEY_READY, kv->value, "started with", &read))
        return;
    (void)preempt_member_launch_(preempt_value_str_(&j->member), mine, sizeof(mine));
    launch = rd->launch;
    launch_len = rd->launch_len;
    have_step = rd->has_restore;
    step = rd->restore;
    if (!launch || launch_len != strlen(mine) || memcmp(launch, mine, launch_len)) {
        join_finish(j, -EBUSY,
                    "job %s is in use by launch %.*s; this worker is of launch %s: two jobs use one job name "
                    "(give one of them another name; nothing was changed)",
                    j->cfg->job, (int)launch_len, launch ? launch : "", mine);
    } else if (kv->create_rev <= j->alive_rev && j->attempt != PREEMPT_ATTEMPT_TOOK_OVER) {
        join_finish(j, -EBUSY,
                    "job %s: incarnation %" PRIu64 " started without worker %u (its workers were all there before "
                    "this one joined): a second process with worker index %u, or a second job using this name "
                    "(nothing was changed)",
                    j->cfg->job, j->inc, j->cfg->worker, j->cfg->worker);
    } else if (rd->has_refused) {
        char target[48];
        const char *lacking = rd->lacking;
        size_t lacking_len = rd->lacking_len;
        uint64_t refused = rd->refused;

        if (have_step)
            (void)snprintf(target, sizeof(target), "restore step %" PRIu64, step);
        else
            (void)snprintf(target, sizeof(target), "start at step 0");
        join_finish(j, -ENODATA,
                    "job %s: worker(s) %.*s lack the checkpoint at step %" PRIu64 " that other workers hold (a "
                    "volume not mounted? a wiped, replaced or corrupt directory?); the job could only %s and lose "
                    "it. Nothing was changed: give those workers their checkpoints back and restart; or run "
                    "'preemptctl start-over %s' (or restart once with PREEMPT_START_OVER=1) and restart to %s, "
                    "setting the newer checkpoints aside (kept in <ckpt_dir>/aside)",
                    j->cfg->job, (int)lacking_len, lacking ? lacking : "?", refused, target, j->cfg->job, target);
    } else {
        j->out->have_step = have_step;
        j->out->step = have_step ? step : 0;
        j->out->over = rd->has_over;
        j->out->incarnation = j->inc;
        j->out->lease = j->lease;
        j->out->member = j->member;
        join_finish(j, 0, "joined");
    }
}

static void apply_restored(struct join *j, const struct preempt_etcd_kv *kv);

/* The awaited record came: what it says (the barrier's, or the restore's). */
static void apply(struct join *j, const struct preempt_etcd_kv *kv)
{
    if (j->awaited == PREEMPT_KEY_RESTORED)
        apply_restored(j, kv);
    else
        apply_ready(j, kv);
}

static void su_in_await_event(struct join *j, const struct preempt_startup_in *in)
{
    if (in->ev == PREEMPT_ETCD_PUT && in->kv && in->kv->value)
        apply(j, in->kv);
}

/* The awaited record read again (the watch's start, or a read standing in
 * for it): when there, it is put. */
static void await_reset(struct join *j, const struct preempt_etcd_kv *kvs, size_t n)
{
    if (n > 0 && kvs[0].value)
        apply(j, &kvs[0]);
}

static void su_in_await_reset(struct join *j, const struct preempt_startup_in *in)
{
    await_reset(j, in->kvs, in->n);
}

/* One input to the awaited record's watch machine (watch-internal.h:
 * await, the coordinator's watch table): while the watch is not up (etcd
 * answering requests but not keeping a stream) each keep-alive tick reads
 * the record instead, one read at a time: a broken stream slows the
 * barrier, it never hides it. A failed read is only retried. r: a read's
 * reply (input read). */
static void await_in(struct join *j, enum preempt_link_id link, enum preempt_watch_input in,
                     const struct preempt_su_answer *r)
{
    unsigned st = j->await, a;
    bool listed;

    if (!su_link(j, link, PREEMPT_LINK_M_AWAIT, in))
        return;

    a = preempt_decl_step_traced_(&preempt_await_decl_, j->instance, &st, in, &listed, &j->cfg->decl_trace);
    j->await = (enum preempt_watch_state)st;
    if (a == PREEMPT_WATCH_DO_READ)
        /* (asked also after the finish, as the watch's own reads are) refused: its answer is read-failed */
        out(j, (struct preempt_startup_out){ .kind = PREEMPT_STARTUP_OUT_REQUEST,
                                             .ask = &ASK(j, AWAITED, .awaited = j->awaited), .ms = join_left(j),
                                             .answer = PREEMPT_STARTUP_IN_AWAIT_READ });
    else if (a == PREEMPT_WATCH_DO_APPLY && r)
        await_reset(j, r->kvs, r->n);
}

static void su_in_await_link(struct join *j, const struct preempt_startup_in *in)
{
    await_in(j, PREEMPT_LINK_AWAIT_LINK, in->up ? PREEMPT_WATCH_IN_UP : PREEMPT_WATCH_IN_DOWN, NULL);
}

static void su_in_await_read(struct join *j, const struct preempt_startup_in *in)
{
    await_in(j, PREEMPT_LINK_AWAIT_READ, preempt_watch_of_read_(in->status), in->status == 0 ? in->answer : NULL);
}

/* The keep-alive tick: while the awaited record's watch is not up, a read
 * of it (its machine's to say). */
static void read_ready(struct join *j)
{
    if (j->watching && !FINISHED(j))
        await_in(j, PREEMPT_LINK_AWAIT_TICK, PREEMPT_WATCH_IN_TICK, NULL);
}

/* Waits for the awaited record without polling: a watch of that one key. */
static void wait_ready(struct join *j)
{
    char key[PREEMPT_KEY_MAX];

    if (j->watching)
        return;
    (void)preempt_key_(key, sizeof(key), j->jobp, j->awaited, &(struct preempt_key){ .inc = j->inc });
    j->watching = true;
    out(j, (struct preempt_startup_out){ .kind = PREEMPT_STARTUP_OUT_WATCH, .key = key });
}

/* The port could not start the watch. */
static void su_in_unwatched(struct join *j, const struct preempt_startup_in *in)
{
    join_finish(j, in->status, "job %s: watching the job's record: %s", j->cfg->job, preempt_coord_refused_(in->status));
}

static void su_in_written(struct join *j, const struct preempt_startup_in *in)
{
    const struct preempt_etcd_kv *kv;
    bool created;

    if (!(kv = join_created(j, in, "writing the barrier's record", &created)))
        return;
    if (kv->value)
        apply(j, kv); /* another worker's record landed first: it decides */
    wait_ready(j);       /* our own record comes back through the watch */
}

/* Every live member record of the incarnation: when exactly W of them are
 * of this job (this worker count and launch), the barrier is complete and
 * this worker writes its record: the newest step every member offers. */
static void su_in_members(struct join *j, const struct preempt_startup_in *in)
{
    const struct preempt_etcd_kv *kvs;
    const char **offers;
    unsigned *idx;
    size_t n, k = 0;
    char mine[PREEMPT_MAX_LAUNCH + 1], f[PREEMPT_MAX_LAUNCH + 1];

    if (join_failed(j, in->status, in->msg, "reading the members"))
        return;
    kvs = in->answer->kvs;
    n = in->answer->n;
    offers = calloc(n ? n : 1, sizeof(*offers));
    idx = calloc(n ? n : 1, sizeof(*idx));
    if (!offers || !idx) {
        free(offers);
        free(idx);
        join_finish(j, -ENOMEM, "out of memory");
        return;
    }
    (void)preempt_member_launch_(preempt_value_str_(&j->member), mine, sizeof(mine));
    for (size_t i = 0; i < n; i++) { /* a well-formed member record of one of the job's workers, of this launch */
        struct preempt_key kk;
        union preempt_rv rec;
        const char *why;

        if (preempt_key_parse_(kvs[i].key, j->jobp, &kk) == PREEMPT_KEY_ALIVE && kk.inc == j->inc &&
            preempt_rv_read_(PREEMPT_KEY_ALIVE, &kk, kvs[i].value ? kvs[i].value : "", j->cfg->workers, &rec, &why) ==
                0 &&
            rec.alive.workers == j->cfg->workers && !strcmp(preempt_member_launch_(kvs[i].value, f, sizeof(f)), mine)) {
            idx[k] = kk.worker;
            offers[k++] = kvs[i].value;
        }
    }
    if (k < j->cfg->workers) { /* another launch's or worker count's records inflated the count */
        free(offers);
        free(idx);
        wait_ready(j);
        return;
    }
    preempt_offers_sort_(offers, idx, k);
    preempt_coord_plan_(offers, idx, k, &j->plan);
    free(offers);
    free(idx);
    if (j->plan.at_risk && !j->plan.over) /* the operator may have asked for it in etcd */
        join_call(j, ASK(j, START_OVER), PREEMPT_STARTUP_IN_START_OVER);
    else
        write_ready(j, false);
}

/* P/start-over (preemptctl start-over JOB): the next incarnation whose
 * plan is at risk starts over, and consumes the request. */
static void su_in_start_over(struct join *j, const struct preempt_startup_in *in)
{

    if (join_failed(j, in->status, in->msg, "reading a start-over request"))
        return;
    j->plan.over = in->answer->n > 0;
    write_ready(j, j->plan.over);
}

/* Writes the barrier's record from j->plan (create-if-absent), deleting
 * the start-over request it consumed in the same transaction. */
static void write_ready(struct join *j, bool consume)
{
    const struct preempt_coord_plan *plan = &j->plan;
    char mine[PREEMPT_MAX_LAUNCH + 1];
    struct preempt_value val;
    bool over = plan->at_risk && plan->over, refused = plan->at_risk && !plan->over;

    (void)preempt_member_launch_(preempt_value_str_(&j->member), mine, sizeof(mine));
    if (!JOIN_VALUE(j, &val, ready, .has_restore = plan->have, .restore = plan->step, .none = !plan->have,
                    .workers = j->cfg->workers, .launch = mine, .has_over = over, .over = plan->newest,
                    .has_refused = refused, .refused = plan->newest, .lacking_v = refused ? plan->lacking : NULL,
                    .lacking_n = !refused                                      ? 0
                                 : plan->n_lacking < PREEMPT_PLAN_LACKING_MAX ? plan->n_lacking
                                                                               : PREEMPT_PLAN_LACKING_MAX,
                    .lacking_more = refused && plan->n_lacking > PREEMPT_PLAN_LACKING_MAX))
        return;
    join_call(j, ASK(j, READY, .value = &val, .consume = consume), PREEMPT_STARTUP_IN_WRITTEN);
}

/* This worker is a member of incarnation inc: the barrier's record, when
 * it exists already, decides; else the worker that counts the W-th member
 * completes the barrier, and every other one waits for its record. */
static void joined_in(struct join *j, const struct preempt_etcd_kv *ready)
{
    if (ready->value) {
        apply_ready(j, ready);
        return;
    }
    if (j->present < (int64_t)j->cfg->workers) {
        wait_ready(j);
        return;
    }
    join_call(j, ASK(j, MEMBERS), PREEMPT_STARTUP_IN_MEMBERS);
}

static void recount(struct join *j);

/* One input to the shape's machine (joining-internal.h): its action. */
static enum preempt_shape_action shape_in(struct join *j, enum preempt_link_id link, enum preempt_shape_input in)
{
    unsigned st = j->shape, a;
    bool listed;

    if (!su_link(j, link, PREEMPT_LINK_M_SHAPE, in))
        return PREEMPT_SHAPE_DO_NONE;
    a = preempt_decl_step_traced_(&preempt_shape_decl_, j->instance, &st, in, &listed, &j->cfg->decl_trace);

    j->shape = (enum preempt_shape_state)st;
    return (enum preempt_shape_action)a;
}

static void su_in_shaped(struct join *j, const struct preempt_startup_in *in);

/* The incarnation's shape (N/shape, "workers=W"): written once by its first
 * member, create-if-absent. A worker with another worker count is refused
 * at once, before it counts for the barrier. Returns true to go on. */
static bool check_shape(struct join *j, const struct preempt_etcd_kv *shape)
{
    struct preempt_value val;

    switch (shape_in(j, PREEMPT_LINK_SHAPE_READ, shape->value ? PREEMPT_SHAPE_IN_PRESENT : PREEMPT_SHAPE_IN_ABSENT)) {
    case PREEMPT_SHAPE_DO_WRITE:
        if (!JOIN_VALUE(j, &val, shape, .workers = j->cfg->workers))
            return false;
        join_call(j, ASK(j, SHAPE, .value = &val), PREEMPT_STARTUP_IN_SHAPED);
        return false;
    case PREEMPT_SHAPE_DO_CHECK:
        return !workers_differ(j, PREEMPT_KEY_SHAPE, shape->value, "has", NULL);
    case PREEMPT_SHAPE_DO_TRUST: /* written and gone: the store lost it (wiped); the barrier's record decides */
    case PREEMPT_SHAPE_DO_NONE:
    case PREEMPT_SHAPE_DO__COUNT:
        break;
    }
    return true;
}

/* What a member learns when it joined (or counted again): the barrier's
 * record, the live members' count and the shape. */
static void joined_reply(struct join *j, const struct preempt_su_answer *a)
{
    j->present = a->count;
    if (check_shape(j, a->shape))
        joined_in(j, a->ready);
}

static void su_in_shaped(struct join *j, const struct preempt_startup_in *in)
{
    const struct preempt_etcd_kv *kv;
    bool created;

    if (!(kv = join_created(j, in, "writing the incarnation's worker count", &created)))
        return;
    if (created || check_shape(j, kv))
        recount(j); /* the count may have grown meanwhile */
}

static void su_in_recounted(struct join *j, const struct preempt_startup_in *in)
{

    if (!join_failed(j, in->status, in->msg, "counting the members"))
        joined_reply(j, in->answer);
}

/* Reads the barrier's record and counts the members (one txn, no compare). */
static void recount(struct join *j)
{
    join_call(j, ASK(j, RECOUNT), PREEMPT_STARTUP_IN_RECOUNTED);
}

/* The holder's lease, as etcd tells it: a live lease (TTL > 0) that has
 * outlived its whole granted TTL since this worker first found it is kept
 * alive by a live process. An expired lease (TTL 0, which the gateway
 * omits, or -1) is on its way out: etcd revokes expired leases at a bounded
 * rate, seconds late on a busy server, so its key is waited out, not taken
 * for a duplicate. */
static void su_in_holder_ttl(struct join *j, const struct preempt_startup_in *in)
{
    int64_t ttl = in->status == 0 ? in->answer->ttl : 0;
    int64_t granted = in->status == 0 ? in->answer->granted_ttl : 0;
    uint64_t now = j->now, ms;
    char w[200];

    (void)in->msg;
    if (j->holder_until == 0)
        j->holder_until = now + (uint64_t)(granted > 0 ? granted : ttl > 0 ? ttl : 1) * 1000u + 1000u;
    else if (ttl > 0 && now >= j->holder_until) {
        join_finish(j, -EBUSY,
                    "job %s: worker index %u is taken by a live process (%s): two processes were started with worker "
                    "index %u, or a second job uses this job name (nothing was changed)",
                    j->cfg->job, j->cfg->worker, preempt_member_who_(j->holder_value, w, sizeof(w)), j->cfg->worker);
        return;
    }
    ms = ttl > 0 ? (uint64_t)ttl * 1000u + 500u : 300u;
    if (ms > join_left(j))
        ms = join_left(j);
    j->t_wait = now + ms; /* then join_try() again */
    join_arm(j);
}

/* alive/<w> of this incarnation is held under another lease. Of another
 * launch: a second job with this name, an error at once. Else it is this
 * worker's previous life (its lease ends within its TTL) or a live process
 * with the same index (it keeps its lease alive): the holder's lease
 * decides (on_holder_ttl). */
static void held_by(struct join *j, const struct preempt_etcd_kv *kv)
{
    char theirs[PREEMPT_MAX_LAUNCH + 1], mine[PREEMPT_MAX_LAUNCH + 1], w[200];

    (void)preempt_member_launch_(kv->value, theirs, sizeof(theirs));
    (void)preempt_member_launch_(preempt_value_str_(&j->member), mine, sizeof(mine));
    if (strcmp(theirs, "-") && strcmp(mine, "-") && strcmp(theirs, mine)) {
        join_finish(j, -EBUSY,
                    "job %s is in use by another launch: its worker %u is %s; this worker is of launch %s. Two jobs "
                    "use one job name (give one of them another name; nothing was changed)",
                    j->cfg->job, j->cfg->worker, preempt_member_who_(kv->value, w, sizeof(w)), mine);
        return;
    }
    if (j->holder != kv->lease) {
        j->holder = kv->lease;
        j->holder_until = 0;
    }
    (void)snprintf(j->holder_value, sizeof(j->holder_value), "%s", kv->value);
    join_call(j, ASK(j, HOLDER, .lease = kv->lease), PREEMPT_STARTUP_IN_HOLDER_TTL);
}

/* Whether incarnation N, whose barrier's record is ready, is in its
 * restore barrier (restored: N/restored as read: absent) and of this
 * worker's launch (a known one): nobody trains in it yet. */
static bool restoring(struct join *j, const char *ready, const struct preempt_etcd_kv *restored)
{
    char mine[PREEMPT_MAX_LAUNCH + 1];
    struct preempt_rv_ready rd;
    const char *why;

    if (restored->value || preempt_rv_ready_read_(ready, PREEMPT_MAX_WORKERS, &rd, &why) < 0)
        return false;
    (void)preempt_member_launch_(preempt_value_str_(&j->member), mine, sizeof(mine));
    return rd.has_restore && mine[0] && strcmp(mine, "-") && rd.launch && rd.launch_len == strlen(mine) &&
           !memcmp(rd.launch, mine, rd.launch_len);
}

/* What the join's answer says (preempt_attempt_judge_()): read from its
 * reply (the ops of join_try(): when applied, the ready record, the
 * members' count and the shape after the two puts; when not, the
 * counter, this worker's alive/<w>, the ready record and the restore's
 * record). */
static enum preempt_attempt_input attempt_in(struct join *j, const struct preempt_su_answer *r)
{
    struct preempt_attempt_answer a = { .applied = r->done };

    if (!a.applied) {
        uint64_t now_inc;

        a.counter_is_inc = preempt_view_inc_(r->counter->value, &now_inc) == 0 && now_inc == j->inc;
        a.mine = r->mine->value != NULL;
        a.mine_ours = a.mine && r->mine->lease == j->lease;
        a.ready = r->ready->value != NULL;
        a.restoring = a.ready && restoring(j, r->ready->value, r->restored);
    }
    return preempt_attempt_judge_(&a);
}

static void su_in_joined(struct join *j, const struct preempt_startup_in *in)
{
    const struct preempt_su_answer *r = in->answer;
    enum preempt_attempt_input said;
    bool listed;
    unsigned st, a;

    if (join_failed(j, in->status, in->msg, "joining the incarnation"))
        return;
    said = attempt_in(j, r);
    if (!su_link(j, PREEMPT_LINK_JOIN_ANSWER, PREEMPT_LINK_M_ATTEMPT, said))
        return;
    st = j->attempt;
    a = preempt_decl_step_traced_(&preempt_attempt_decl_, j->instance, &st, said, &listed, &j->cfg->decl_trace);
    j->attempt = (enum preempt_attempt_state)st;
    switch ((enum preempt_attempt_action)a) {
    case PREEMPT_ATTEMPT_DO_COUNT:
        j->alive_rev = r->rev;
        joined_reply(j, r);
        break;
    case PREEMPT_ATTEMPT_DO_RECOUNT:
        j->alive_rev = r->mine->create_rev; /* our own earlier attempt, applied though its reply was lost */
        (void)shape_in(j, PREEMPT_LINK_REJOINED, PREEMPT_SHAPE_IN_REJOINED); /* whether its shape write was applied is unknown */
        recount(j);
        break;
    case PREEMPT_ATTEMPT_DO_READ_INC:
        join_read_inc(j);
        break;
    case PREEMPT_ATTEMPT_DO_WAIT_HOLDER:
        held_by(j, r->mine);
        break;
    case PREEMPT_ATTEMPT_DO_REJOIN: /* where its index is free: N never started, or (taking over) still starts */
        join_try(j, true);
        break;
    case PREEMPT_ATTEMPT_DO_OPEN_NEXT: /* this worker lived in N, which started: the job is restarting */
        join_open(j, j->inc + 1);
        break;
    case PREEMPT_ATTEMPT_DO_NONE:
    case PREEMPT_ATTEMPT_DO__COUNT:
        join_finish(j, -EPROTO, "job %s: bug: a join's answer (%s) came in state %s", j->cfg->job,
                    preempt_decl_input_(&preempt_attempt_decl_, said),
                    preempt_decl_state_(&preempt_attempt_decl_, j->attempt));
        break;
    }
}

/* Opens incarnation inc: moves the counter from inc - 1 (or creates it for
 * inc 1) and, in the same transaction, removes anything already under
 * P/inc/ (left there while the counter was lost), so that a new
 * incarnation starts from nothing. */
static void join_open(struct join *j, uint64_t inc)
{
    struct preempt_value cur, next;

    if ((inc > 1 && !counter_value(j, &cur, inc - 1)) || !counter_value(j, &next, inc))
        return; /* (the first incarnation's counter is created: nothing to compare) */
    join_call(j, ((struct preempt_su_ask){ .kind = PREEMPT_SU_OPEN, .inc = inc, .value = &next,
                                           .counter = inc > 1 ? &cur : NULL }),
              PREEMPT_STARTUP_IN_OPENED);
}

/* Joins incarnation inc: writes joined/<w> (this worker lived in inc) and
 * alive/<w> (its membership and offer, bound to its lease), reads the
 * barrier's record and counts the live members, in one txn. It applies
 * only while inc is current and w has not joined inc (rejoin: w joined,
 * but inc never started and nobody holds w). */
static void join_try(struct join *j, bool rejoin)
{
    struct preempt_value cur;

    if (!counter_value(j, &cur, j->inc))
        return;
    join_call(j, ASK(j, JOIN, .worker = j->cfg->worker, .rejoin = rejoin, .lease = j->lease, .value = &j->member,
                     .counter = &cur),
              PREEMPT_STARTUP_IN_JOINED);
}

/* This worker's member record: who it is and its offer (the decided steps
 * and the pending ones the job committed). */
static void join_make_offer(struct join *j)
{
    uint64_t all[MAX_STEPS_OFFERED];
    char host[PREEMPT_MAX_HOST + 1] = "-";
    size_t n = 0;

    /* the host as it is (a Linux host name may hold any byte: the codec
     * writes those outside a word as '-'), cut to PREEMPT_MAX_HOST */
    (void)snprintf(host, sizeof(host), "%s", j->cfg->host ? j->cfg->host : "");
    for (size_t i = 0; i < j->n_pend && n < MAX_STEPS_OFFERED; i++)
        if (j->pend[i].decision > 0)
            all[n++] = j->pend[i].step;
    for (size_t i = 0; i < j->n_steps && n < MAX_STEPS_OFFERED; i++)
        all[n++] = j->steps[i];
    if (preempt_coord_member_(&j->member, j->cfg->pid, host, j->cfg->launch, j->cfg->workers,
                              j->cfg->start_over, all, n) < 0)
        j->member = (struct preempt_value){ 0 }; /* a bug: the port refuses it, and the join fails saying so */
}

static void join_resolve(struct join *j);

/* One input to the offer's machine (joining-internal.h), and its action. */
static void offer_in(struct join *j, enum preempt_link_id link, enum preempt_offer_input in)
{
    unsigned st = j->offer, a;
    bool listed;

    if (!su_link(j, link, PREEMPT_LINK_M_OFFER, in))
        return;
    a = preempt_decl_step_traced_(&preempt_offer_decl_, j->instance, &st, in, &listed, &j->cfg->decl_trace);

    j->offer = (enum preempt_offer_state)st;
    switch ((enum preempt_offer_action)a) {
    case PREEMPT_OFFER_DO_OFFER_OPEN:
        join_make_offer(j);
        join_open(j, 1);
        break;
    case PREEMPT_OFFER_DO_OPEN:
        join_open(j, 1);
        break;
    case PREEMPT_OFFER_DO_RESOLVE:
        join_resolve(j);
        break;
    case PREEMPT_OFFER_DO_OFFER_JOIN:
        join_make_offer(j);
        join_try(j, false);
        break;
    case PREEMPT_OFFER_DO_JOIN:
        join_try(j, false);
        break;
    case PREEMPT_OFFER_DO_NONE:
    case PREEMPT_OFFER_DO__COUNT:
        break;
    }
}

static void su_in_resolved(struct join *j, const struct preempt_startup_in *in)
{
    struct preempt_coord_pending *p = &j->pend[j->i_pend];
    const struct preempt_etcd_kv *kv;
    uint64_t step, save_ms;
    bool created, last;

    if (!(kv = join_created(j, in, "reading a pending checkpoint's decision", &created)))
        return;
    p->decision = preempt_committed_parse_(kv->value, &step, &last, &save_ms) && step == p->step ? 1 : -1;
    j->i_pend++;
    join_resolve(j);
}

/* Resolves the pending checkpoints one by one, then joins. A record under
 * an incarnation the store has not reached (it went back in time) or of
 * another job's prefix is not touched: unknown. */
static void join_resolve(struct join *j)
{
    while (j->i_pend < j->n_pend) {
        struct preempt_coord_pending *p = &j->pend[j->i_pend];
        struct preempt_key k;
        struct preempt_value val;

        if (preempt_key_parse_(p->key, j->jobp, &k) != PREEMPT_KEY_DECISION || k.inc == 0 || k.inc > j->inc) {
            p->decision = 0;
            j->i_pend++;
            continue;
        }
        if (!JOIN_VALUE(j, &val, decision, .aborted = true, .has_step = true, .step = p->step, .restart = true))
            return;
        join_call(j, ASK(j, RESOLVE, .key = p->key, .value = &val), PREEMPT_STARTUP_IN_RESOLVED);
        return;
    }
    offer_in(j, PREEMPT_LINK_RESOLVED, PREEMPT_OFFER_IN_RESOLVED);
}

static void su_in_inc(struct join *j, const struct preempt_startup_in *in)
{
    const struct preempt_etcd_kv *counter;

    if (join_failed(j, in->status, in->msg, "reading the incarnation"))
        return;
    counter = in->answer->found;
    if (!counter->value) /* no counter: no record of any pending checkpoint can be trusted */
        offer_in(j, PREEMPT_LINK_COUNTER_READ, PREEMPT_OFFER_IN_NO_COUNTER);
    else if (preempt_view_inc_(counter->value, &j->inc) < 0)
        join_finish(j, -EPROTO, "job %s: the incarnation key holds \"%.40s\", not a number", j->cfg->job,
                    counter->value);
    else
        offer_in(j, PREEMPT_LINK_COUNTER_READ, PREEMPT_OFFER_IN_COUNTER);
}

static void join_read_inc(struct join *j)
{
    join_call(j, ASK(j, COUNTER), PREEMPT_STARTUP_IN_INC);
}

static void su_in_granted(struct join *j, const struct preempt_startup_in *in)
{
    if (join_failed(j, in->status, in->msg, "granting the membership lease"))
        return;
    j->lease = in->answer->lease; /* never 0: a grant without one does not decode */
    join_read_inc(j);
}

static void join_timeout(struct join *j)
{
    if (j->ret_restored)
        join_finish(j, -ETIMEDOUT, "job %s: not every worker (%u) reported its restore of incarnation %" PRIu64
                    " in time", j->cfg->job, j->cfg->workers, j->inc);
    else
        join_finish(j, -ETIMEDOUT,
                    "job %s: not every worker (%u) joined incarnation %" PRIu64 " within %llu ms (%lld live when this "
                    "worker joined)",
                    j->cfg->job, j->cfg->workers, j->inc, (unsigned long long)j->cfg->join_timeout_ms,
                    (long long)j->present);
}

/* The membership lease lives through start-up as it does after it
 * (every TTL/3). */
static uint64_t keep_period_ms(const struct join *j)
{
    return j->cfg->lease_ttl_s < 3 ? 500u : j->cfg->lease_ttl_s / 3u * 1000u;
}

static void join_keep(struct join *j)
{
    if (j->lease) /* nobody reads its answer: the next one, or the lease's end, tells */
        out(j, (struct preempt_startup_out){ .kind = PREEMPT_STARTUP_OUT_REQUEST,
                                             .ask = &ASK(j, KEEP, .lease = j->lease), .ms = keep_period_ms(j),
                                             .answer = PREEMPT_STARTUP_NO_ANSWER });
    read_ready(j);
}

static void join_done(struct join *j);

/* The revoke's answer, whatever it says (or that it could not be sent). */
static void su_in_revoked(struct join *j, const struct preempt_startup_in *in)
{
    (void)join_end(j, PREEMPT_LINK_REVOKE_ANSWER, in->unsent ? PREEMPT_PEND_IN_UNSENT : PREEMPT_PEND_IN_REVOKED);
}

/* The phase ended (join_finish). The lease is given back when the phase
 * failed or ends the membership (j->revoke): best effort, bounded by 1 s.
 * Then everything is released and done(status) called: the last use of j. */
static void join_done(struct join *j)
{
    (void)join_end(j, PREEMPT_LINK_PHASE_END,
                   (j->status < 0 || j->revoke) && j->lease ? PREEMPT_PEND_IN_END_REVOKE : PREEMPT_PEND_IN_END_KEEP);
}

/* One input to the phase's end (phase-internal.h); runs its action. Returns
 * false once the phase is released (j is not used again). */
static bool join_end(struct join *j, enum preempt_link_id link, enum preempt_pend_input in)
{
    unsigned st = j->end, a;
    bool listed;

    (void)su_link(j, link, PREEMPT_LINK_M_PEND, in); /* the end runs all the same: a bug only fails the phase */

    a = preempt_decl_step_traced_(&preempt_pend_decl_, j->instance, &st, in, &listed, &j->cfg->decl_trace);
    j->end = (enum preempt_pend_state)st;
    switch ((enum preempt_pend_action)a) {
    case PREEMPT_PEND_DO_RUN_END:
        join_arm(j);
        break;
    case PREEMPT_PEND_DO_REVOKE: /* refused at once: its answer says unsent */
        out(j, (struct preempt_startup_out){ .kind = PREEMPT_STARTUP_OUT_REQUEST,
                                             .ask = &ASK(j, REVOKE, .lease = j->lease), .ms = 1000,
                                             .answer = PREEMPT_STARTUP_IN_REVOKED });
        break;
    case PREEMPT_PEND_DO_RELEASE:
        out(j, (struct preempt_startup_out){ .kind = PREEMPT_STARTUP_OUT_RELEASE, .status = j->status });
        return false;
    case PREEMPT_PEND_DO_NONE:
    case PREEMPT_PEND_DO__COUNT:
        break;
    }
    return true;
}

/* The timer: whatever is due. */
static void su_in_tick(struct join *j, const struct preempt_startup_in *in)
{
    uint64_t now = in->now_ms;

    if (END_DUE(j)) {
        join_done(j); /* may release j */
        return;
    }
    if (j->end == PREEMPT_PEND_REVOKING) /* only the revoke's answer (or its bound) is awaited */
        return;
    if (now >= j->deadline && !FINISHED(j))
        join_timeout(j);
    if (j->t_wait && now >= j->t_wait && !FINISHED(j)) {
        j->t_wait = 0;
        join_try(j, false);
    }
    if (j->t_keep && now >= j->t_keep && !FINISHED(j)) {
        j->t_keep = now + keep_period_ms(j);
        join_keep(j);
    }
    join_arm(j);
}

/* An output could not be kept (out of memory): a running phase fails; an
 * ending one ends without waiting for what was lost (the revoke's answer,
 * the end's timer). */
static void su_in_lost(struct join *j, const struct preempt_startup_in *in)
{
    if (!FINISHED(j))
        join_finish(j, in->status, "job %s: start-up: %s", j->cfg->job, preempt_coord_refused_(in->status));
    else if (j->end == PREEMPT_PEND_REVOKING)
        (void)join_end(j, PREEMPT_LINK_REVOKE_ANSWER, PREEMPT_PEND_IN_UNSENT);
    else if (END_DUE(j))
        join_done(j);
}

/* The owner gives the phase up: it fails, and its end gives the lease
 * back (its member record goes at once), so that no barrier counts a
 * worker that is leaving. */
static void su_in_cancel(struct join *j, const struct preempt_startup_in *in)
{
    (void)in;
    join_finish(j, -ECANCELED, "job %s: start-up given up: this worker leaves", j->cfg->job);
}

static void report_restored(struct join *j);

/* The phase begins: its bound and keep-alive from now, then its first
 * request (events follow until it finishes or the bound passes). */
static void su_in_begin(struct join *j, const struct preempt_startup_in *in)
{
    j->deadline = in->now_ms + j->bound_ms;
    j->t_keep = in->now_ms + keep_period_ms(j);
    join_arm(j);
    if (j->begin == PREEMPT_STARTUP_RESTORED)
        report_restored(j);
    else
        join_call(j, ASK(j, GRANT, .ttl_s = j->cfg->lease_ttl_s), PREEMPT_STARTUP_IN_GRANTED);
}

int preempt_startup_init_(struct join *j)
{
    j->instance = j->cfg->phase_no ? j->cfg->phase_no : 1;
    j->status = -ETIMEDOUT;
    j->awaited = j->begin == PREEMPT_STARTUP_RESTORED ? PREEMPT_KEY_RESTORED : PREEMPT_KEY_READY;
    if (j->out && j->begin == PREEMPT_STARTUP_JOIN)
        *j->out = (struct preempt_coord_join){ 0 };
    for (size_t i = 0; i < j->n_pend; i++)
        j->pend[i].decision = 0;
    if (j->ret_restored)
        *j->ret_restored = PREEMPT_RESTORE_FAILED;
    if (j->verdict && j->verdict_size)
        j->verdict[0] = '\0';
    if (preempt_coord_prefix_(j->cfg->job, j->jobp, sizeof(j->jobp)) < 0) {
        (void)snprintf(j->msg, j->msg_size, "invalid job name (1-%d of A-Z a-z 0-9 . _ -)", PREEMPT_MAX_JOB);
        return -EINVAL;
    }
    return 0;
}

/* ---- start-up: the restore barrier ---------------------------------------------------------- */

/* N/restored: "ok", or "unusable|failed <step> worker=<w>: <why>". */
static void apply_restored(struct join *j, const struct preempt_etcd_kv *kv)
{
    const char *v = kv->value ? kv->value : "", *why;
    struct preempt_rv_restored rec;
    int outcome = preempt_rv_restored_read_(v, j->cfg->workers, &rec, &why) < 0 ? -1
                  : rec.ok                                                      ? PREEMPT_RESTORE_OK
                  : rec.unusable                                                ? PREEMPT_RESTORE_UNUSABLE
                                                                                : PREEMPT_RESTORE_FAILED;

    if (outcome < 0) {
        join_finish(j, -EPROTO, "job %s: the restore barrier's record holds \"%.40s\"", j->cfg->job, v);
        return;
    }
    *j->ret_restored = outcome;
    if (outcome != PREEMPT_RESTORE_OK) {
        j->revoke = true; /* the incarnation ends here: its membership too */
        (void)snprintf(j->verdict, j->verdict_size, "%" PRIu64 ", worker %" PRIu64 ": %.*s", rec.step, rec.w,
                       (int)rec.why_len, rec.why ? rec.why : ""); /* for messages: "(step S, worker W: why)" */
    }
    join_finish(j, 0, "restore barrier passed");
}

static void su_in_counted(struct join *j, const struct preempt_startup_in *in)
{
    struct preempt_value ok;

    if (join_failed(j, in->status, in->msg, "reporting the restore"))
        return;
    if (in->answer->count < (int64_t)j->cfg->workers) {
        wait_ready(j);
        return;
    }
    if (JOIN_VALUE(j, &ok, restored, .ok = true))
        join_call(j, ASK(j, RESTORED, .value = &ok), PREEMPT_STARTUP_IN_WRITTEN);
}

/* Reports this worker's restore: "ok" under w/restored/ and counted (the
 * W-th writes N/restored "ok"), or N/restored "failed .." at once. */
static void report_restored(struct join *j)
{
    struct preempt_value val;

    if (j->restore_mine != PREEMPT_RESTORE_OK) {
        bool unusable = j->restore_mine == PREEMPT_RESTORE_UNUSABLE;

        /* the codec writes the reason printable */
        if (!JOIN_VALUE(j, &val, restored, .unusable = unusable, .failed = !unusable, .has_step = true,
                        .step = j->out->step, .has_w = true, .w = j->cfg->worker,
                        .why = j->restore_why ? j->restore_why : ""))
            return;
        join_call(j, ASK(j, RESTORED, .value = &val), PREEMPT_STARTUP_IN_WRITTEN);
        return;
    }
    if (JOIN_VALUE(j, &val, w_restored, .none_ = false)) /* "ok" */
        join_call(j, ASK(j, REPORT, .worker = j->cfg->worker, .value = &val), PREEMPT_STARTUP_IN_COUNTED);
}

/* ---- the step ------------------------------------------------------------------------------ */

static void (*const input_fn[PREEMPT_STARTUP_IN__COUNT])(struct join *, const struct preempt_startup_in *) = {
#define PREEMPT_STARTUP_INPUT(ID, name, handler, text) [PREEMPT_STARTUP_IN_##ID] = handler,
#include "startup-inputs.def"
#undef PREEMPT_STARTUP_INPUT
};

void preempt_startup_input_(struct join *j, const struct preempt_startup_in *in)
{
    if (in->kind >= PREEMPT_STARTUP_IN__COUNT)
        return;
    j->now = in->now_ms;
    /* a request the port refused at once: start-up ends with that, but for
     * the revoke (the end goes on) and a read standing in for the watch
     * (its machine retries it) */
    if (in->unsent && in->kind != PREEMPT_STARTUP_IN_REVOKED && in->kind != PREEMPT_STARTUP_IN_AWAIT_READ) {
        join_finish(j, in->status < 0 ? in->status : -EIO, "%s", preempt_coord_refused_(in->status));
        return;
    }
    input_fn[in->kind](j, in);
}
