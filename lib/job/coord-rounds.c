/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord-rounds.c: per-worker records (lib/job/coord-state.h): counted in
 * etcd, never watched by every worker: the rounds' proposals and steps,
 * the shard reports, the driver's tally of them and the one decision that
 * commits or aborts a round. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord-state.h"

/* ---- per-worker records: counted in etcd, never watched by every worker ---------------------- */

static const char *ep_stale(const struct preempt_coord *c, uint64_t ep)
{
    return ep != c->view.ep ? "an ended episode's" : NULL;
}

/* Makes cap round k's save step (docs/protocol.md, "Agreement without
 * waits"): creates the record when the round has none (a driver that took
 * the episode over from one that left no step), and raises it when this
 * worker is past the step it knows (its machine asks only then): a
 * compare-and-put on the value seen, so that of two raises the second
 * fails and every worker follows the one record. A raise keeps a "last"
 * the record said. When the view already holds a step at least as high,
 * it is on its way to the machine: nothing to write. */
void coord_propose_step(struct preempt_coord *c, unsigned k, uint64_t cap, bool last)
{
    char key[PREEMPT_KEY_MAX];
    struct preempt_value val, seen;
    struct preempt_co_ask ask = { .kind = PREEMPT_CO_RAISE };

    CKEY(c, key, AGREED, .round = k);
    ask.rec = (struct preempt_co_rec){ key, &val, coord_slot(c, key) };
    if (c->view.r[k].have_agreed) {
        if (c->view.r[k].agreed >= cap)
            return;
        (void)preempt_step_value_(&seen, c->view.r[k].agreed, c->view.r[k].last);
        ask.seen = &seen;
        last = last || c->view.r[k].last;
        CLOG(c, 1, "round %u: this worker is past the save step %" PRIu64 "; raising it to %" PRIu64, k,
             c->view.r[k].agreed, cap);
    }
    (void)preempt_step_value_(&val, cap, last);
    /* the watch brings the round's step */
    coord_write_call(c, &ask, PREEMPT_COORD_IN_WRITTEN);
}

/* Proposes that round k, at step, is aborted (by this worker). */
static void decide_abort(struct preempt_coord *c, unsigned k, uint64_t step)
{
    struct preempt_value val;

    COORD_VALUE(c, &val, decision, .aborted = true, .has_step = true, .step = step, .has_w = true, .w = c->me);
    coord_decide(c, k, &val);
}

/* A range of round k's shard reports at its step, read through the job's
 * view (traced, so that a replay counts them again): it counts each
 * worker's well-formed report once (c->view.r[k].reports). */
static void read_reports(struct preempt_coord *c, unsigned k, const struct preempt_co_records *r)
{
    (void)coord_view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_REPORTS, .round = k,
                                                       .step = c->r[k].agreed, .wall = c->wall_ms });
    for (size_t i = 0; i < r->n; i++) {
        const struct preempt_etcd_kv *kv = &r->kvs[i];
        const char *value = kv->value ? kv->value : "";
        struct preempt_view_ev v = coord_view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_RECORD,
                                                                           .put = true, .key = kv->key,
                                                                           .value = value });

        if (v.what != PREEMPT_VIEW_SHARD)
            CLOG(c, 2, "ignoring %s = \"%.40s\": not a shard report of round %u at step %" PRIu64 "%s%s", kv->key,
                 value, k, c->r[k].agreed, v.what == PREEMPT_VIEW_MALFORMED ? ": not " : "",
                 v.what == PREEMPT_VIEW_MALFORMED ? v.text : "");
    }
}

/* What the shard reports of round k at its step (r: their range) decide:
 * the commit when every shard is there, with "last" when any report said
 * so, the slowest save they name (every worker plans the final round with
 * it), with "last" the highest stop step they name (every worker training
 * on stops there), and the lowest step a worker is at and the slowest pace
 * they name (the driver plans the final round for the job's slowest
 * worker); otherwise, when this worker asked to abort (or_abort), the
 * abort. An earlier decision still wins. As the caps, they come from the
 * records alone. */
void coord_propose(struct preempt_coord *c, unsigned k, const struct preempt_co_records *r, bool or_abort)
{
    struct round *rd = &c->r[k];
    const struct preempt_view_reports *t = &c->view.r[k].reports;
    struct preempt_value val;

    if (c->view.r[k].decided)
        return;
    if (r)
        read_reports(c, k, r);
    if (!r || t->count < c->n) {
        if (or_abort &&
            coord_dec_in(c, PREEMPT_LINK_GIVE_UP, k, PREEMPT_DEC_IN_GIVE_UP) == PREEMPT_DEC_DO_PROPOSE_ABORT)
            decide_abort(c, k, rd->agreed);
        return;
    }
    if (coord_dec_in(c, PREEMPT_LINK_ALL_REPORTED, k, PREEMPT_DEC_IN_ALL_REPORTED) != PREEMPT_DEC_DO_PROPOSE_COMMIT)
        return;
    CLOG(c, 1, "round %u: every shard of step %" PRIu64 " is reported (the slowest save %" PRIu64
         " ms); proposing the commit%s", k, rd->agreed, t->slowest, t->last ? ", the last save" : "");
    /* a stop step only past the save step (a synchronous save's workers all wait there) */
    (void)preempt_committed_value_(&val, rd->agreed, t->last, t->slowest, t->last && t->stop > rd->agreed ? t->stop : 0,
                                   preempt_view_reports_pace_(t));
    coord_decide(c, k, &val);
}

/* The shard reports of round k at its step, read by the worker whose
 * report completed them (or by the driver, complete_round). */
void coord_in_shards(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    unsigned k = in->round;

    if (in->status != 0) {
        coord_failed(c, in->status, in->msg);
        return;
    }
    if (!ep_stale(c, c->r[k].shard_ep))
        coord_propose(c, k, &in->answer->read, false);
}

/* The reports read before an abort this worker proposes (abort_round):
 * the commit when every shard is there after all, else the abort; when
 * the read failed, the abort. */
void coord_in_abort_shards(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    unsigned k = in->round;

    if (ep_stale(c, c->r[k].shard_ep))
        return;
    if (in->status != 0)
        CLOG(c, 1, "round %u: the shard reports could not be read (%s); proposing the abort", k,
             in->msg ? in->msg : "");
    coord_propose(c, k, in->status == 0 ? &in->answer->read : NULL, true);
}

/* This worker's machine gives round k up (its bound ran out, a peer was
 * lost, etcd failed, a peer failed, a second notice says exit, its save
 * failed). When it reported its shard at step, every other shard may be
 * there too, and the worker whose report completed them may have died or
 * been cut off before it proposed the commit: so it reads the reports
 * first and proposes the commit when they are all there, the abort when
 * not. An abort of a round whose every shard was written would discard a
 * whole checkpoint for want of one proposal. */
void coord_abort_round(struct preempt_coord *c, unsigned k, uint64_t step)
{
    struct round *rd = &c->r[k];
    char pre[PREEMPT_KEY_MAX];

    if (!ep_stale(c, rd->shard_ep) && rd->agreed == step) {
        CRANGE(c, pre, SHARD, 'w', .round = k, .step = step);
        coord_round_call(c, k, &(struct preempt_co_ask){ .kind = PREEMPT_CO_READ, .range = { pre } },
                         PREEMPT_COORD_IN_ABORT_SHARDS);
        return;
    }
    if (coord_dec_in(c, PREEMPT_LINK_GIVE_UP, k, PREEMPT_DEC_IN_GIVE_UP) == PREEMPT_DEC_DO_PROPOSE_ABORT)
        decide_abort(c, k, step);
}

/* Whether round k's reports are still this worker's to read: its episode
 * is current, it has not proposed the commit (the decision machine), and
 * no decision stands (the view). */
static bool reports_open(const struct preempt_coord *c, unsigned k)
{
    const struct round *rd = &c->r[k];

    return !ep_stale(c, rd->shard_ep) && rd->dec != PREEMPT_DEC_COMMIT_PROPOSED && !c->view.r[k].decided;
}

/* A shard report's answer: it counted the round's shards at this step.
 * The worker whose count reached the job's size reads the reports. */
void coord_in_reported(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    unsigned k = in->round;
    struct round *rd = &c->r[k];
    char pre[PREEMPT_KEY_MAX];

    if (in->status != 0) {
        coord_failed(c, in->status, in->msg);
        return;
    }
    if (!reports_open(c, k) || in->answer->count < (int64_t)c->n)
        return;
    CRANGE(c, pre, SHARD, 'w', .round = k, .step = rd->agreed);
    coord_round_call(c, k, &(struct preempt_co_ask){ .kind = PREEMPT_CO_READ, .range = { pre } },
                     PREEMPT_COORD_IN_SHARDS);
}

/* Reports this worker's shard of round k at step, with the slowest save
 * it knows of (save_ms) and its step and pace (pace; trains_on: it trains
 * on from there now, its checkpoint persisting, else it waits for the
 * decision), and counts the round's shards at that step, in
 * one transaction. A save that ends this worker's preemption (last: the
 * agreed record said so, or the worker judges no time left for another
 * round) says so, and the worker's membership ends in the same
 * transaction: it has nothing more to give the job, and its exit then
 * costs etcd nothing (no revoke; the lease ends by itself, holding
 * nothing). */
void coord_report(struct preempt_coord *c, unsigned k, uint64_t step, bool last, uint64_t stop, uint64_t save_ms,
                  struct preempt_pace pace, bool trains_on)
{
    char alive[PREEMPT_KEY_MAX], key[PREEMPT_KEY_MAX], pre[PREEMPT_KEY_MAX];
    struct preempt_value val;

    CKEY(c, alive, ALIVE, .worker = c->me);
    CKEY(c, key, SHARD, .round = k, .step = step, .worker = c->me);
    CRANGE(c, pre, SHARD, 'w', .round = k, .step = step);
    pace.at = trains_on ? c->wall_ms : 0;
    (void)preempt_shard_value_(&val, save_ms, last, last ? stop : 0, pace);
    c->r[k].shard_ep = c->view.ep;
    c->r[k].agreed = step;
    coord_round_call(c, k, &(struct preempt_co_ask){ .kind = PREEMPT_CO_REPORT, .rec = { key, &val, 0 },
                                                     .range = { pre }, .ends = last ? alive : NULL },
                     PREEMPT_COORD_IN_REPORTED);
    if (last)
        coord_mship_in(c, PREEMPT_LINK_LAST_REPORT, PREEMPT_MSHIP_IN_LAST_REPORT);
}

/* The round's decision record: the one truth every worker follows. */
static void on_decision(struct preempt_coord *c, const struct preempt_view_ev *d, const char *value)
{
    struct preempt_event ev;

    CLOG(c, 1, "round %u: the job's decision is \"%s\"", d->round, value);
    if (d->round == 0 && d->what == PREEMPT_VIEW_COMMITTED && !d->last && !c->view.r[0].last) { /* they train on */
        c->r[0].save_ms = d->save_ms;
        coord_roll_in(c, PREEMPT_LINK_DECISION, PREEMPT_ROLL_IN_TRAINS_ON);
    }
    (void)preempt_view_event_(d, c->me, &ev);
    if (d->what == PREEMPT_VIEW_ABORTED) {
        coord_cpost(c, PREEMPT_LINK_DECISION, ev);
        return;
    }
    if (d->save_ms) /* before the commit: the countdown plans with it */
        coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_JOB_SAVE, .ms = d->save_ms });
    if (d->pace.ms) /* and the driver, with the slowest worker's step and pace as of now */
        coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_JOB_PACE, .pace = d->pace,
                                                     .ms = c->now_ms });
    if (coord_own_live(c)) {
        /* The job withdrew the notices, then this worker got one whose
         * record has not landed: the job returns to idle at this commit
         * without it, so this worker does too, and brings its notice into
         * the next episode (advance). Its machine took the notice as a
         * reason to stay; the withdrawal is told again. */
        coord_ep_in(c, PREEMPT_LINK_DECISION, PREEMPT_EP_IN_COMMITTED_OWN);
    }
    coord_cpost(c, PREEMPT_LINK_DECISION, ev);
}

/* Round k starts over; its decision machine was told why (it stays). */
void coord_reset_round(struct preempt_coord *c, unsigned k)
{
    c->r[k] = (struct round){ .dec = c->r[k].dec };
}

/* Posts notice-withdrawn once when every notice record of the job is
 * withdrawn (or advisory) and no operator's notice stands. The records
 * arrive in revision order on every worker, so every worker decides the
 * same way relative to the round's commit. */
static void check_withdrawn(struct preempt_coord *c, enum preempt_link_id link)
{
    struct preempt_view_summary sum;

    preempt_view_summary_(&c->view, &sum);
    if (sum.live || !sum.notices) {
        coord_ep_in(c, link, PREEMPT_EP_IN_LIVE);
        return;
    }
    if (c->episode == PREEMPT_EP_ACTIVE)
        CLOG(c, 1, "every notice of the job is withdrawn or advisory");
    coord_ep_in(c, link, PREEMPT_EP_IN_ALL_WITHDRAWN);
}

static void maybe_claim(struct preempt_coord *c, enum preempt_link_id link, enum preempt_claim_input in);


/* The current round's step may reach this worker before anything that
 * brings its machine into the round: a claim that did not carry its
 * driver's notice can land before the notice's own record, and the
 * machine, idle then, ignores the step (a late answer of a withdrawn round,
 * as far as it can tell). The view keeps it, and once a notice or the
 * claim's answer has brought the machine into the round it is told again; in any
 * other state the step is an echo (the table ignores it). The current
 * round is the first without a decision. */
void coord_retell_agreed(struct preempt_coord *c, enum preempt_link_id link)
{
    unsigned k = c->view.r[0].decided ? 1 : 0;
    struct preempt_view_ev v = { .what = PREEMPT_VIEW_AGREED, .round = k, .step = c->view.r[k].agreed,
                                 .last = c->view.r[k].last };
    struct preempt_event ev;

    if (c->view.r[k].have_agreed && preempt_view_event_(&v, c->me, &ev)) /* the record's event, again */
        coord_cpost(c, link, ev);
}

/* A worker's notice record (the view has merged it; foreign: a record in
 * this worker's slot that it did not write). */
static void on_notice(struct preempt_coord *c, const struct preempt_view_ev *n, const char *value, bool foreign)
{
    struct preempt_event ev;
    /* This worker's own record tells its machine only when it undoes the
     * job's withdrawal: its machine then follows the job's view exactly as
     * every other worker's does. */
    bool tell = n->worker != c->me || foreign || (c->episode == PREEMPT_EP_WITHDRAWN && !n->withdrawn);

    coord_ep_in(c, PREEMPT_LINK_NOTICE_READ, PREEMPT_EP_IN_SEEN);
    if (tell && preempt_view_notice_event_(n, &ev)) {
        ev.u.peer_notice.deadline = coord_mono_of_wall(c, n->wall);
        CLOG(c, 1, "worker %u has a notice (%s)", n->worker, value);
        coord_cpost(c, PREEMPT_LINK_NOTICE_READ, ev);
        coord_retell_agreed(c, PREEMPT_LINK_NOTICE_READ);
        /* a notice undoes the machine's withdrawal: when this one is
         * withdrawn too (an advisory or periodic one), say so again */
        coord_ep_in(c, PREEMPT_LINK_NOTICE_READ, PREEMPT_EP_IN_NEWS);
    }
    check_withdrawn(c, PREEMPT_LINK_NOTICE_READ);
    maybe_claim(c, PREEMPT_LINK_NOTICE_READ, PREEMPT_CLAIM_IN_NOTICE); /* unless its own claim is on its way */
}

/* How long a peer's membership may be gone before the peer counts as
 * lost: twice this worker's longest step. A synchronous trainer keeps its
 * lease alive only at its boundaries, so a lease can end inside a step
 * longer than any before (the first one, typically) and come back at the
 * next boundary under a new lease. With steps of milliseconds that is at
 * the first read that misses it.
 *
 * The first round's shard reports count their workers present while the
 * round is undecided: a worker whose report is in waits at its step, and
 * a synchronous save's lease may have lapsed in it. Once a commit after
 * which they train on is read (not the preemption's last save, whose
 * reports end their workers' memberships; the roll call's machine says
 * which: watch-internal.h), they are members again and a report no
 * longer speaks for them; the grace then also covers a lease
 * that lapsed in a save, the first round's (found ended at the next
 * keep-alive, granted anew by the one after) or a final round's (the
 * slowest save the commit names).
 * Before, a worker that died in a grace period after its first save was
 * counted present by its report until the final round's bound (up to an
 * hour on gce-gpu). The final round's reports are last saves, which end
 * their workers' memberships: they always count. */
static uint64_t lost_grace_ms(const struct preempt_coord *c)
{
    uint64_t g = 2 * c->longest_step_ms;

    return preempt_roll_trained_on_(c->roll) ? g + 2 * (uint64_t)coord_tick_ms(c) + c->r[0].save_ms : g;
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
static void complete_round(struct preempt_coord *c, unsigned k, const struct preempt_co_records *res)
{
    struct round *rd = &c->r[k];
    unsigned count = 0;
    char pre[PREEMPT_KEY_MAX];

    if (!reports_open(c, k))
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
    coord_round_call(c, k, &(struct preempt_co_ask){ .kind = PREEMPT_CO_READ, .range = { pre } },
                     PREEMPT_COORD_IN_SHARDS);
}

/* The driver's read of the memberships: a worker counts when it is a
 * member, finished training, or reported a shard of the episode (the
 * report of its last save ends its membership). Who is lost is the pure
 * preempt_lost_read_()'s to say (lost-internal.h), traced with the read;
 * the driver writes the lost record it names, and every worker (itself
 * included) follows that record. */
void coord_in_members(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    int status = in->status;
    const struct preempt_co_answer *a = in->answer;
    struct preempt_lost_read rd = { .status = status, .complete = status == 0 && a->complete,
                                    .known = c->view.lost, .absent = c->absent,
                                    .now_ms = c->now_ms, .grace_ms = lost_grace_ms(c) };
    struct preempt_lost_says says;
    char key[PREEMPT_KEY_MAX];
    struct preempt_value val;

    coord_roll_in(c, PREEMPT_LINK_ROLL_ANSWER, PREEMPT_ROLL_IN_ANSWERED);
    if (LEFT(c) || c->claim != PREEMPT_CLAIM_HELD) /* no longer the driver's: nobody reads it */
        return;
    memset(c->absent, 0xff, (c->n + 7) / 8);
    for (size_t i = 0; rd.complete && i < 4; i++) {
        if (i == 2 && preempt_roll_trained_on_(c->roll)) /* the first round committed, its workers train on */
            continue;
        for (size_t j = 0; j < a->roll[i].n; j++) { /* a key of one of the job's workers (a read of keys only) */
            int w = preempt_view_worker_of_(&c->view, a->roll[i].kvs[j].key, NULL);

            if (w >= 0)
                c->absent[w / 8] &= (uint8_t)~(1u << (w % 8));
        }
    }
    c->absent[c->me / 8] &= (uint8_t)~(1u << (c->me % 8)); /* its own bit is not read */
    says = preempt_lost_read_(&c->lost, &rd);
    coord_answer(c, (struct preempt_job_answer){ .kind = PREEMPT_JOB_ANSWER_MEMBERS, .status = rd.status, .read = &rd,
                                                 .lost_says = &says });
    if (says.kind == PREEMPT_LOST_FAILED || says.kind == PREEMPT_LOST_UNREADABLE) {
        if (says.kind == PREEMPT_LOST_FAILED)
            CLOG(c, 1, "reading the memberships failed: %s", in->msg);
        else
            CLOG(c, 2, "reading the memberships: a txn reply without the reads it was asked for");
        return;
    }
    complete_round(c, 0, &a->roll[2]);
    complete_round(c, 1, &a->roll[3]);
    if (says.back)
        CLOG(c, 1, "%u worker%s back (a new lease)", says.back, says.back == 1 ? " is" : "s are");
    if (says.newly && rd.grace_ms) {
        char who[128];

        if (preempt_lost_absent_format_(who, sizeof(who), c->absent, c->n) < 0)
            (void)snprintf(who, sizeof(who), "%u of them", says.missing);
        CLOG(c, 1, "the memberships of workers %s are gone; one counts as lost unless it is back within %" PRIu64
             " ms", who, rd.grace_ms);
    }
    if (says.kind != PREEMPT_LOST_WORKER)
        return;
    CKEY(c, key, LOST);
    COORD_VALUE(c, &val, lost, .w = says.worker);
    coord_create(c, key, &val, PREEMPT_COORD_IN_WRITTEN); /* the watch brings it */
}

/* The driver reads who is still there: one transaction, once a keep-alive
 * period, only while it drives an episode (O(1) requests; every other
 * worker reads nothing); the roll call's machine keeps one on its way. */
void coord_read_members(struct preempt_coord *c)
{
    if (c->claim == PREEMPT_CLAIM_HELD && c->episode != PREEMPT_EP_IDLE && !LEFT(c))
        coord_roll_in(c, PREEMPT_LINK_TICK, PREEMPT_ROLL_IN_DUE);
}

/* The roll call's read (its machine's action). */
void coord_roll_read(struct preempt_coord *c)
{
    char alive[PREEMPT_KEY_MAX], done[PREEMPT_KEY_MAX], s0[PREEMPT_KEY_MAX], s1[PREEMPT_KEY_MAX];

    CRANGE(c, alive, ALIVE, 'w');
    CRANGE(c, done, DONE, 'w');
    CRANGE(c, s0, SHARD, 'S', .round = 0);
    CRANGE(c, s1, SHARD, 'S', .round = 1);
    coord_send(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_ROLL, .range = { alive, done, s0, s1 } },
               coord_tick_ms(c), PREEMPT_COORD_IN_MEMBERS);
}

/* Claims the episode when it has a live notice and nobody drives it: its
 * driver's lease ended (the claim went), or the claim went while the job's
 * notices were all withdrawn and one of them came back (sim seed 12558: the
 * driver exited on a second notice, its claim went with its lease before its
 * notice's return landed, and nobody drove the round to its end). */
static void maybe_claim(struct preempt_coord *c, enum preempt_link_id link, enum preempt_claim_input in)
{
    /* The claim that carried this worker's notice went with its lease (ended
     * inside a long step): the notice must stand again, in the next claim
     * or in its own record, for a worker that reads the records afresh. */
    if (!c->view.claim)
        (void)coord_pub(c, link, PREEMPT_PUB_IN_CLAIM_GONE);
    /* An episode whose records say its workers stop (a decision that ends
     * it, a worker lost, the job's error) needs no driver: they exit, or go
     * back to idle and bring any notice into the next one. The records are
     * this step's, read before the machine they are posted to has run: a
     * worker that reads such a record and a notice in one read does not
     * claim on its way out. */
    if (c->episode == PREEMPT_EP_ACTIVE && !LEFT(c) && !c->view.claim && !preempt_view_ending_(&c->view))
        coord_claim_in(c, link, in);
    if (c->pub == PREEMPT_PUB_DEFERRED && c->claim != PREEMPT_CLAIM_SENT)
        coord_notice_put(c, link);
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
struct preempt_view_ev coord_view_step(struct preempt_coord *c, struct preempt_view_in in)
{
    struct preempt_view_ev ev = preempt_view_step_(&c->view, &in);

    coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_VIEW, .view_in = &in, .view_ev = &ev });
    return ev;
}

/* A record, read or watched: what the view makes of it goes to the machine. */
void coord_apply_record(struct preempt_coord *c, enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv)
{
    const char *value = kv->value ? kv->value : "";
    struct preempt_view_ev v = coord_view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_RECORD,
                                                                       .put = type == PREEMPT_ETCD_PUT,
                                                                       .key = kv->key, .value = value });
    struct preempt_event ev = { 0 };

    if (v.what != PREEMPT_VIEW_MALFORMED)
        coord_junk_clear(c, kv->key); /* a record, or nothing: no garbage there any more */
    switch (v.what) {
    case PREEMPT_VIEW_NOTHING:
    case PREEMPT_VIEW_CLAIM:
    case PREEMPT_VIEW_SHARD: /* only a read of the reports counts them (coord_propose) */
    case PREEMPT_VIEW_JOINED: /* the member records come by the members watch (coord_in_member) */
    case PREEMPT_VIEW_MEMBER:
    case PREEMPT_VIEW_MEMBER_END:
    case PREEMPT_VIEW_DONE:
        return;
    case PREEMPT_VIEW_LATER:
        coord_hold(c, type, v.ep, kv);
        return;
    case PREEMPT_VIEW_MALFORMED: {
        struct preempt_key k;
        int id = preempt_key_parse_(kv->key, c->jobp, &k);

        CLOG(c, 2, "ignoring %s = \"%.40s\": not %s", kv->key, value, v.text);
        if (((id == (int)PREEMPT_KEY_CLAIM || id == (int)PREEMPT_KEY_AGREED || id == (int)PREEMPT_KEY_LOST ||
              id == (int)PREEMPT_KEY_DECISION) && k.inc == c->view.inc && k.ep == c->view.ep) ||
            (id == (int)PREEMPT_KEY_ERROR && k.inc == c->view.inc))
            coord_junk_set(c, kv->key, kv->mod_rev); /* a create-if-absent slot: the next write of it replaces it */
        return;
    }
    case PREEMPT_VIEW_NOTICE:
        if (v.worker == c->me && !mine(c, kv->key, v.wall)) {
            struct preempt_value val; /* the notice, withdrawn */

            /* every other worker takes it for this worker's notice, and
             * only this worker can tell: it follows it as the others do
             * (a peer's notice to its machine), and withdraws it for the
             * whole job (one record that every worker follows): the round
             * it opened saves, and the job goes back to idle */
            if (!v.withdrawn) {
                struct preempt_rv_notice r;
                const char *why;

                CLOG(c, 2, "%s = \"%.40s\" is in this worker's slot, but not its notice (it has %s): "
                     "withdrawing it", kv->key, value, c->my_notice_wall ? "a later deadline" : "none");
                /* the same notice, withdrawn (the view read it: it parses) */
                if (preempt_rv_notice_read_(value, c->n, &r, &why) == 0) {
                    COORD_VALUE(c, &val, notice, .deadline = r.deadline, .source = r.source,
                                .source_len = r.source_len, .withdrawn = true);
                    coord_put(c, kv->key, &val, 0);
                }
            }
            on_notice(c, &v, value, true);
            return;
        }
        on_notice(c, &v, value, false);
        return;
    case PREEMPT_VIEW_OP_NOTICE:
        (void)preempt_view_notice_event_(&v, &ev); /* source "operator" */
        ev.u.notice.deadline = coord_mono_of_wall(c, v.wall);
        CLOG(c, 1, "an operator's notice (%s)", value);
        break;
    case PREEMPT_VIEW_OP_GONE:
        return; /* the operator took it back */
    case PREEMPT_VIEW_CLAIM_GONE: /* the driver's lease ended: take the episode over */
        coord_claim_in(c, PREEMPT_LINK_CLAIM_WENT, PREEMPT_CLAIM_IN_GONE);
        preempt_lost_forget_(&c->lost);
        maybe_claim(c, PREEMPT_LINK_CLAIM_WENT, PREEMPT_CLAIM_IN_SEND);
        return;
    case PREEMPT_VIEW_FINAL:
        break;
    case PREEMPT_VIEW_LOST:
        if (v.text)
            CLOG(c, 1, "worker %u left the job before the preemption's end (a second notice)", v.worker);
        else
            CLOG(c, 2, "worker %u lost its membership (lease expired or revoked; found by the driver)", v.worker);
        break;
    case PREEMPT_VIEW_AGREED:
        c->r[v.round].agreed = v.step;
        break;
    case PREEMPT_VIEW_COMMITTED:
    case PREEMPT_VIEW_ABORTED:
        on_decision(c, &v, value);
        return;
    case PREEMPT_VIEW_ERROR:
        coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_ERROR_MSG, .text = v.text });
        break;
    }
    /* the event this record tells every worker's machine (the one mapping,
     * which preempt-replay checks the machine's events against) */
    if (v.what != PREEMPT_VIEW_OP_NOTICE && !preempt_view_event_(&v, c->me, &ev))
        return;
    coord_cpost(c, PREEMPT_LINK_RECORD_EVENT, ev);
}

/* A full read of the watched records, in revision order (the shell sorts
 * them): the records written since the last read are applied, as the
 * watch's events would have brought them. */
void coord_apply_records(struct preempt_coord *c, const struct preempt_etcd_kv *kvs, size_t n, int64_t rev,
                         uint64_t cluster)
{
    bool current = false, later = false;
    /* What was read before (the watch's events, an earlier read) is in the
     * view already: applied again, a record changed since would be judged
     * beside its old value (every notice but the one written again seen
     * withdrawn, then that one live). Another store (a new etcd, one
     * restored from a snapshot: another cluster id) or one that went back
     * (its revision below what was read) is read whole. */
    bool same = (!cluster || !c->cluster || cluster == c->cluster) && rev >= c->seen_rev, kept = false;
    int64_t seen = same ? c->seen_rev : 0;
    char claim[PREEMPT_KEY_MAX];

    CLOG(c, 0, "read %zu records of %s at revision %lld", n, c->pre, (long long)rev);
    CKEY(c, claim, CLAIM);
    for (size_t i = 0; i < n && !kept; i++)
        kept = !strcmp(kvs[i].key, claim) && kvs[i].mod_rev <= seen;
    /* a claim that went while the watch was down is not in the read; one
     * read before stands as it was (its notice is older than what its
     * holder's own record said since) */
    if (!kept)
        (void)coord_view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_REREAD });
    for (size_t i = 0; i < n; i++) {
        struct preempt_key k;
        bool episode;
        int id = record_of(c, kvs[i].key, &k, &episode);

        if (id >= 0 && episode) {
            /* a decision stays after the clear */
            current = current || (k.ep == c->view.ep && id != PREEMPT_KEY_DECISION);
            later = later || k.ep > c->view.ep;
        }
        if (kvs[i].mod_rev > seen)
            coord_apply_record(c, PREEMPT_ETCD_PUT, &kvs[i]);
    }
    c->seen_rev = rev;
    if (cluster)
        c->cluster = cluster;
    /* A later episode and nothing left of this worker's: the job withdrew
     * its notices and cleared the episode while this worker could not see
     * it. Its machine is told so; back in idle it moves on (clear-round). */
    if (later && !current && c->episode == PREEMPT_EP_ACTIVE) {
        CLOG(c, 1, "episode %" PRIu64 " was cleared while the watch was down", c->view.ep);
        coord_ep_in(c, PREEMPT_LINK_REREAD, PREEMPT_EP_IN_CLEARED);
    }
    if (!later)
        maybe_claim(c, PREEMPT_LINK_REREAD, PREEMPT_CLAIM_IN_SEND);
}

void coord_in_record(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    coord_apply_record(c, in->ev, in->kv);
    if (in->kv->mod_rev > c->seen_rev) /* the watch's events come in revision order */
        c->seen_rev = in->kv->mod_rev;
}

void coord_in_records(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    coord_apply_records(c, in->kvs, in->n, in->rev, in->cluster);
}

void coord_in_link(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    CLOG(c, in->up ? 0 : 1, "watch of %s %s (%s)", c->pre, in->up ? "up" : "down", in->why);
    coord_watch_in(c, PREEMPT_LINK_WATCH_LINK, in->up ? PREEMPT_WATCH_IN_UP : PREEMPT_WATCH_IN_DOWN, NULL);
}

/* The answer of the read that stands in for the watch while it is down
 * (watch-internal.h; r NULL when it could not be sent): traced, and the
 * machine says whether it is applied. */
void coord_in_read(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    if (in->status < 0)
        CLOG(c, 0, "reading the records of %s while the watch is down failed: %s", c->pre, in->msg);
    coord_answer(c, (struct preempt_job_answer){ .kind = PREEMPT_JOB_ANSWER_RECORDS, .status = in->status });
    coord_watch_in(c, PREEMPT_LINK_RECORDS_READ, preempt_watch_of_read_(in->status), in->answer);
}
