/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord-effects.c: the machine's coordination effects
 * (lib/job/coord-state.h), each turned into etcd requests: this worker's
 * notice record, the driver's claim, proposals, reports, the round's
 * decision, leaving the job. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord-state.h"

/* The coordinator's declared machines (decl-internal.h): one input each. */
static unsigned decl_step(struct preempt_coord *c, const struct preempt_decl *m, unsigned instance, unsigned *state,
                          unsigned in);
#define decl_in(c, m, state, in) decl_step(c, m, 0, state, in) /* a machine the coordinator has one of */

/* ---- effects ------------------------------------------------------------------------------------ */

void coord_in_notice_put(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    coord_answer(c, (struct preempt_job_answer){ .kind = PREEMPT_JOB_ANSWER_PUT, .status = in->status });
    (void)coord_pub(c, PREEMPT_LINK_NOTICE_PUT, preempt_pub_of_put_(in->status));
    if (in->status < 0)
        coord_failed(c, in->status, in->msg);
}

/* notice/<me>'s key and value as they should be now. */
static void notice_record(struct preempt_coord *c, char key[PREEMPT_KEY_MAX], struct preempt_value *val)
{
    (void)preempt_key_(key, PREEMPT_KEY_MAX, c->jobp, PREEMPT_KEY_NOTICE,
                       &(struct preempt_key){ .inc = c->view.inc, .ep = c->view.ep, .worker = c->me });
    COORD_VALUE(c, val, notice, .deadline = c->my_notice_wall, .source = c->my_source, .withdrawn = c->my_withdrawn);
}

/* Feeds the notice record's machine (pub-internal.h), logs the
 * transition and runs a put it asks for; returns its action. */
enum preempt_pub_action coord_pub(struct preempt_coord *c, enum preempt_link_id link, enum preempt_pub_input in)
{
    unsigned st = c->pub;
    enum preempt_pub_action a;

    coord_link(c, link, PREEMPT_LINK_M_PUB, in);
    a = (enum preempt_pub_action)decl_in(c, &preempt_pub_decl_, &st, in);

    c->pub = (enum preempt_pub_state)st;
    if (a == PREEMPT_PUB_DO_PUT) { /* one put at a time: a later value never lands before an earlier one */
        char key[PREEMPT_KEY_MAX];
        struct preempt_value val;

        notice_record(c, key, &val);
        coord_write_call(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_PUT, .rec = { key, &val, 0 } },
                         PREEMPT_COORD_IN_NOTICE_PUT);
    }
    return a;
}

/* Writes notice/<me> as it should be now (when a put is on its way, after
 * it). */
void coord_notice_put(struct preempt_coord *c, enum preempt_link_id link)
{
    (void)coord_pub(c, link, c->my_notice_wall ? PREEMPT_PUB_IN_WRITE : PREEMPT_PUB_IN_NOTHING);
}

void coord_in_withdraw(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    if (c->my_withdrawn == in->withdrawn)
        return;
    c->my_withdrawn = in->withdrawn;
    coord_notice_put(c, PREEMPT_LINK_NOTICE_WRITE);
}

void coord_in_live(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    if (c->my_withdrawn)
        (void)snprintf(c->my_source, sizeof(c->my_source), "%s", in->text);
    coord_in_withdraw(c, &(struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_WITHDRAW, .withdrawn = false });
}

void coord_in_claimed(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    int status = in->status;
    struct preempt_event ev = { .kind = PREEMPT_EV_CLAIM_WON };
    const struct preempt_etcd_kv *kv = status == 0 ? in->answer->found : NULL;
    struct preempt_claim_answer a = { .status = status, .succeeded = status == 0 && in->answer->done, .read = kv != NULL,
                                      .held = kv ? kv->value : NULL, .left = LEFT(c) };
    struct preempt_claim_says says = preempt_claim_answer_(&a, c->me); /* what it says: one pure reading */
    char key[PREEMPT_KEY_MAX];

    coord_answer(c, (struct preempt_job_answer){ .kind = PREEMPT_JOB_ANSWER_CLAIM, .status = status, .claim = &a,
                                                 .claim_says = &says });
    /* a notice the claim carried: in the claim's value, or (the claim
     * lost) written by the transaction's failure branch, or (no answer)
     * to go with the next claim or the put below */
    (void)coord_pub(c, PREEMPT_LINK_CLAIM_ANSWER, preempt_pub_of_claim_(&a));
    if (says.input == PREEMPT_CLAIM_IN_STALE_LEASE) {
        CLOG(c, 2, "the claim was sent under an ended lease; claiming again under a new one");
        coord_claim_in(c, PREEMPT_LINK_CLAIM_ANSWER, says.input);
        return;
    }
    if (c->pub == PREEMPT_PUB_DEFERRED)
        coord_notice_put(c, PREEMPT_LINK_CLAIM_ANSWER);
    if (says.input == PREEMPT_CLAIM_IN_FAILED) {
        coord_claim_in(c, PREEMPT_LINK_CLAIM_ANSWER, says.input);
        coord_failed(c, status, in->msg);
        return;
    }
    if (says.input == PREEMPT_CLAIM_IN_UNREADABLE) {
        CKEY(c, key, CLAIM);
        if (says.garbage) { /* replaced by this claim */
            CLOG(c, 2, "%s = \"%.40s\" is no claim: claiming over it", key, a.held ? a.held : "");
            coord_junk_set(c, key, kv ? kv->mod_rev : 0);
        } else {
            /* released between the compare and the read, or the round
             * has a step already (the claim's driver left): try again,
             * proposing nothing */
            coord_junk_clear(c, key); /* the read found it empty */
            c->prop_step = 0;
        }
        coord_claim_in(c, PREEMPT_LINK_CLAIM_ANSWER, says.input);
        return;
    }
    if (says.input == PREEMPT_CLAIM_IN_LOST) {
        /* Another worker drives the episode, also a final round this one
         * asked for (its lease, and the claim with it, ended inside a
         * step): its machine follows (claim-lost), so must its view, or it
         * would act as the driver of a round it follows (sim seed 3606). */
        ev.kind = PREEMPT_EV_CLAIM_LOST;
        ev.u.claim_lost.worker = says.holder;
    }
    coord_claim_in(c, PREEMPT_LINK_CLAIM_ANSWER, says.input); /* won or lost */
    c->prop_step = 0; /* it landed with the claim, or the round follows another's */
    coord_cpost(c, PREEMPT_LINK_CLAIM_ANSWER, ev);
    coord_retell_agreed(c, PREEMPT_LINK_CLAIM_ANSWER);
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
    char key[PREEMPT_KEY_MAX], nkey[PREEMPT_KEY_MAX], akey[PREEMPT_KEY_MAX];
    struct preempt_value me, nval, aval;
    struct preempt_co_ask ask = { .kind = PREEMPT_CO_CLAIM, .lease = c->lease };
    bool carry = c->my_notice_wall &&
                 coord_pub(c, PREEMPT_LINK_CLAIM_SEND, PREEMPT_PUB_IN_CLAIM_SENT) == PREEMPT_PUB_DO_CARRY;

    CKEY(c, key, CLAIM);
    ask.rec = (struct preempt_co_rec){ key, &me, coord_slot(c, key) };
    if (carry) { /* the claim carries this worker's notice */
        notice_record(c, nkey, &nval);
        ask.notice = (struct preempt_co_rec){ nkey, &nval, 0 };
        COORD_VALUE(c, &me, claim, .w = c->me, .has_deadline = true, .deadline = c->my_notice_wall,
                    .source = c->my_source, .withdrawn = c->my_withdrawn);
    } else {
        COORD_VALUE(c, &me, claim, .w = c->me);
    }
    if (c->prop_step && !c->view.r[0].have_agreed) { /* the proposal of round 0's step goes with it */
        CKEY(c, akey, AGREED, .round = 0);
        (void)preempt_step_value_(&aval, c->prop_step, c->prop_last);
        ask.step = (struct preempt_co_rec){ akey, &aval, coord_slot(c, akey) };
    }
    coord_write_call(c, &ask, PREEMPT_COORD_IN_CLAIMED);
}

/* One step of a declared machine (decl-internal.h), logged; its action. */
static unsigned decl_step(struct preempt_coord *c, const struct preempt_decl *m, unsigned instance, unsigned *state,
                          unsigned in)
{
    unsigned from = *state, a;
    bool listed;

    a = preempt_decl_step_traced_(m, instance, state, in, &listed, &c->decl_trace);
    if (listed)
        CLOG(c, 0, "%s: %s --%s--> %s (%s)", m->name, preempt_decl_state_(m, from), preempt_decl_input_(m, in),
             preempt_decl_state_(m, *state), preempt_decl_action_(m, a));
    return a;
}

/* One input to the claim's machine (claim-internal.h: the only place that
 * decides whether a claim goes and who holds it); runs its action. */
void coord_claim_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_claim_input in)
{
    unsigned st = c->claim, a;

    coord_link(c, link, PREEMPT_LINK_M_CLAIM, in);
    a = decl_in(c, &preempt_claim_decl_, &st, in);
    c->claim = (enum preempt_claim_state)st;
    if (a == PREEMPT_CLAIM_DO_SEND)
        claim_send(c);
    else if (a == PREEMPT_CLAIM_DO_REGRANT) /* the lease's machine grants one, unless one is on its way */
        coord_lease_in(c, PREEMPT_LINK_REGRANT, PREEMPT_LEASE_IN_WANTED);
}

/* One input to the lease's machine (lease-internal.h: the only place that
 * decides whether a new lease is granted); runs its action. Nothing once
 * this worker left the job. */
void coord_lease_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_lease_input in)
{
    unsigned st = c->lease_st, a;

    if (LEFT(c))
        return;
    coord_link(c, link, PREEMPT_LINK_M_LEASE, in);
    a = decl_in(c, &preempt_lease_decl_, &st, in);
    c->lease_st = (enum preempt_lease_state)st;
    if (a == PREEMPT_LEASE_DO_GRANT)
        coord_grant(c);
}

/* One input to the watch's machine (watch-internal.h: the only place that
 * decides whether the records are read instead of watched, and whether a
 * read is applied); runs its action. a: a read's answer (input read). */
void coord_watch_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_watch_input in,
                    const struct preempt_co_answer *a)
{
    unsigned st = c->watch, act;
    char wpre[PREEMPT_KEY_MAX];

    coord_link(c, link, PREEMPT_LINK_M_WATCH, in);
    act = decl_in(c, &preempt_watch_decl_, &st, in);

    c->watch = (enum preempt_watch_state)st;
    if (act == PREEMPT_WATCH_DO_READ) { /* the watched range, [P/N/, P/N/w/) */
        CRANGE(c, wpre, WORKERS, 0);
        coord_send(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_READ, .range = { c->pre, wpre } },
                   coord_tick_ms(c), PREEMPT_COORD_IN_READ);
    } else if (act == PREEMPT_WATCH_DO_APPLY) {
        CLOG(c, 0, "the watch is down: read the records of %s instead", c->pre);
        coord_apply_records(c, a->read.kvs, a->read.n, a->rev, a->cluster);
    }
}

/* One input to the roll call's machine (watch-internal.h); runs its read. */
void coord_roll_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_roll_input in)
{
    unsigned st = c->roll, a;

    coord_link(c, link, PREEMPT_LINK_M_ROLL, in);
    a = decl_in(c, &preempt_roll_decl_, &st, in);

    c->roll = (enum preempt_roll_state)st;
    if (a == PREEMPT_ROLL_DO_READ)
        coord_roll_read(c);
}

/* One input to the episode's machine (episode-internal.h); runs its
 * action: the job's notices are withdrawn (the job's decision, read from
 * its records; the source says so). */
void coord_ep_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_ep_input in)
{
    unsigned st = c->episode, a;
    struct preempt_event ev = { .kind = PREEMPT_EV_NOTICE_WITHDRAWN };

    coord_link(c, link, PREEMPT_LINK_M_EP, in);
    a = decl_in(c, &preempt_ep_decl_, &st, in);
    c->episode = (enum preempt_ep_state)st;
    if (a == PREEMPT_EP_DO_TELL_WITHDRAWN) {
        ev.u.notice_withdrawn.source = PREEMPT_SOURCE_INJECT;
        coord_cpost(c, PREEMPT_LINK_TELL_WITHDRAWN, ev);
    }
}

/* One input to the membership's machine (membership-internal.h); runs its
 * action. */
void coord_mship_in(struct preempt_coord *c, enum preempt_link_id link, enum preempt_mship_input in)
{
    unsigned st = c->mship, a;
    char key[PREEMPT_KEY_MAX];

    coord_link(c, link, PREEMPT_LINK_M_MSHIP, in);
    a = decl_in(c, &preempt_mship_decl_, &st, in);

    c->mship = (enum preempt_mship_state)st;
    if (a == PREEMPT_MSHIP_DO_PUT_ALIVE) {
        CKEY(c, key, ALIVE, .worker = c->me);
        coord_put(c, key, &c->member, c->lease);
    } else if (a == PREEMPT_MSHIP_DO_REVOKE) {
        coord_send(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_REVOKE, .lease = c->lease }, c->give_up_ms,
                   COORD_NO_ANSWER);
    }
}

enum preempt_dec_action coord_dec_in(struct preempt_coord *c, enum preempt_link_id link, unsigned k,
                                     enum preempt_dec_input in)
{
    unsigned st = c->r[k].dec, a;

    coord_link(c, link, PREEMPT_LINK_M_DEC, in);
    a = decl_step(c, &preempt_dec_decl_, k + 1, &st, in); /* instance: the round + 1 */

    c->r[k].dec = (enum preempt_dec_state)st;
    return (enum preempt_dec_action)a;
}

/* The machine is back in idle: this worker moves on to the next episode
 * with an empty view of it, applies what it already holds of it, and
 * brings along a notice of its own that no source withdrew (it came after
 * the job decided to withdraw). */
static void advance(struct preempt_coord *c)
{
    uint64_t live = coord_own_live(c) ? c->my_notice_wall : 0;

    (void)coord_view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_EPISODE, .ep = c->view.ep + 1 });
    coord_junk_clear_episode(c);
    for (unsigned k = 0; k < 2; k++) {
        (void)coord_dec_in(c, PREEMPT_LINK_NEXT_EPISODE, k, PREEMPT_DEC_IN_NEXT_EPISODE);
        coord_reset_round(c, k);
    }
    preempt_lost_forget_(&c->lost);
    coord_roll_in(c, PREEMPT_LINK_NEXT_EPISODE, PREEMPT_ROLL_IN_NEXT_EPISODE);
    c->my_withdrawn = false;
    coord_ep_in(c, PREEMPT_LINK_NEXT_EPISODE, PREEMPT_EP_IN_NEXT_EPISODE);
    coord_claim_in(c, PREEMPT_LINK_NEXT_EPISODE, PREEMPT_CLAIM_IN_NEXT_EPISODE);
    c->prop_step = 0;
    /* a last save that was an opportunistic one after all */
    coord_mship_in(c, PREEMPT_LINK_NEXT_EPISODE, PREEMPT_MSHIP_IN_NEXT_EPISODE);
    c->my_notice_wall = c->my_deadline = 0;
    if (live) {
        struct preempt_event ev = { .kind = PREEMPT_EV_NOTICE };
        int src = preempt_source_from_string_(c->my_source);

        CLOG(c, 1, "this worker's notice came after the job withdrew the others: it opens episode %" PRIu64,
             c->view.ep);
        ev.u.notice.source = src < 0 ? PREEMPT_SOURCE_INJECT : (enum preempt_source)src;
        ev.u.notice.deadline = coord_mono_of_wall(c, live);
        coord_cpost(c, PREEMPT_LINK_NEXT_EPISODE, ev);
    }
    coord_held_replay(c);
}

static bool effect(struct preempt_coord *c, const struct preempt_coord_in *in);


/* Runs a coordination effect; *in->ran says whether it was one. */
void coord_in_effect(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    *in->ran = effect(c, in);
}

static bool effect(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    const struct preempt_fx *fx = in->fx;
    unsigned round = in->round;
    bool last = in->last;
    const char *text = in->text;
    char key[PREEMPT_KEY_MAX];
    struct preempt_value val;
    unsigned k = round ? 1 : 0;

    switch (fx->kind) {
    case PREEMPT_FX_PUBLISH_NOTICE: {
        uint64_t wall = coord_wall_of_mono(c, (uint64_t)fx->arg);
        bool opens = c->episode == PREEMPT_EP_IDLE; /* the transition claims next, and the claim carries it */

        coord_ep_in(c, PREEMPT_LINK_OWN_NOTICE, PREEMPT_EP_IN_OWN);
        if (!c->my_deadline || (uint64_t)fx->arg < c->my_deadline)
            c->my_deadline = (uint64_t)fx->arg;
        if (c->my_notice_wall && c->my_notice_wall <= wall)
            return true; /* the earliest deadline is already published */
        c->my_notice_wall = wall;
        (void)snprintf(c->my_source, sizeof(c->my_source), "%s", text ? text : "");
        if (opens)
            (void)coord_pub(c, PREEMPT_LINK_OWN_NOTICE, PREEMPT_PUB_IN_DEFER);
        else
            coord_notice_put(c, PREEMPT_LINK_OWN_NOTICE);
        return true;
    }
    case PREEMPT_FX_CLAIM_DRIVER:
        c->prop_step = (uint64_t)fx->arg;
        c->prop_last = last;
        coord_claim_in(c, PREEMPT_LINK_CLAIM_DRIVER, PREEMPT_CLAIM_IN_SEND);
        return true;
    case PREEMPT_FX_PROPOSE_STEP:
        coord_propose_step(c, k, (uint64_t)fx->arg, last);
        return true;
    case PREEMPT_FX_REQUEST_FINAL: { /* final, and round 1's step unless it has one (a take-over's request) */
        char akey[PREEMPT_KEY_MAX];
        struct preempt_value aval;

        CKEY(c, key, FINAL);
        COORD_VALUE(c, &val, final, .w = c->me);
        CKEY(c, akey, AGREED, .round = 1);
        (void)preempt_step_value_(&aval, (uint64_t)fx->arg, last);
        coord_write_call(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_FINAL, .rec = { key, &val, 0 },
                                                      .step = { akey, &aval, coord_slot(c, akey) } },
                         PREEMPT_COORD_IN_WRITTEN);
        return true;
    }
    case PREEMPT_FX_REPORT_SHARD:
        coord_report(c, k, (uint64_t)fx->arg, last, in->stop, in->save_ms, in->pace, in->trains_on);
        return true;
    case PREEMPT_FX_PUBLISH_ERROR: {
        CKEY(c, key, ERROR);
        /* the codec writes the message printable */
        COORD_VALUE(c, &val, error, .code = fx->arg, .w = c->me, .message = text ? text : "");
        coord_create(c, key, &val, PREEMPT_COORD_IN_WRITTEN); /* the first error wins */
        return true;
    }
    case PREEMPT_FX_ANNOUNCE_DONE:
        CKEY(c, key, DONE, .worker = c->me);
        COORD_VALUE(c, &val, done, .step = (uint64_t)fx->arg);
        coord_put(c, key, &val, 0);
        return true;
    case PREEMPT_FX_ANNOUNCE_LEFT:
        /* The episode's one lost record, naming this worker: its peers stop
         * waiting for it (a roll call would not find it missing: its report
         * of the first round counts it there). One stands already: they
         * follow that. */
        if (c->view.lost)
            return true;
        CLOG(c, 1, "leaving the job at step %" PRId64 " before the preemption's end: the job's lost record names "
             "this worker", fx->arg);
        CKEY(c, key, LOST);
        COORD_VALUE(c, &val, lost, .w = c->me, .left = true);
        coord_create(c, key, &val, PREEMPT_COORD_IN_WRITTEN);
        return true;
    case PREEMPT_FX_CLEAR_ROUND: {
        char wkey[PREEMPT_KEY_MAX];

        CRANGE(c, key, EPISODE, 0);
        CRANGE(c, wkey, W_EPISODE, 0);
        coord_write_call(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_FORGET, .range = { key, wkey } },
                         PREEMPT_COORD_IN_WRITTEN);
        advance(c);
        return true;
    }
    case PREEMPT_FX_PROPOSE_ABORT:
        coord_abort_round(c, k, (uint64_t)fx->arg);
        return true;
    case PREEMPT_FX_EXIT:
        /* A notice that made this worker exit (a second one, with second =
         * exit) had no claim to carry it, and a notice its claim carries
         * would go with the lease the exit revokes: it goes now (delivered
         * by the exit's flush), so that its peers plan with the job's
         * earliest deadline. A worker that departed with its last report
         * leaves its lease, and its claim, to end by themselves. */
        if (c->pub == PREEMPT_PUB_DEFERRED || (c->pub == PREEMPT_PUB_IN_CLAIM && c->mship != PREEMPT_MSHIP_DEPARTED))
            coord_notice_put(c, PREEMPT_LINK_NOTICE_WRITE);
        break; /* the rest is the shell's */
    case PREEMPT_FX_REJOIN: /* no notice of its own (in-place): nothing to publish; the rest is the shell's */
        break;
    case PREEMPT_FX_KEEP_SHARD: /* the shell's (preempt_effects.def's WHO): never asked here */
    case PREEMPT_FX_RESUME:
    case PREEMPT_FX_DISCARD_SHARD:
    case PREEMPT_FX_BEGIN_SAVE:
    case PREEMPT_FX_ARM_TIMER:
    case PREEMPT_FX_DISARM_TIMER:
    case PREEMPT_FX__COUNT:
        break;
    }
    return false;
}

void coord_in_leave(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    (void)in;
    if (LEFT(c))
        return;
    coord_out(c, &(struct preempt_coord_out){ .kind = PREEMPT_COORD_OUT_TIMER, .ms = 0 });
    if (c->mship == PREEMPT_MSHIP_DEPARTED)
        CLOG(c, 0, "leaving: the membership ended with the last report; the lease ends by itself");
    coord_mship_in(c, PREEMPT_LINK_LEAVE, PREEMPT_MSHIP_IN_LEAVE);
}

/* ---- the members watch (preempt_coord_watch_members_) ----------------------------------------- */

/* What the view made of a member record: a peer's membership that ends
 * without its done record is told to the owner. */
static void member_said(struct preempt_coord *c, struct preempt_view_ev ev)
{
    if (ev.what != PREEMPT_VIEW_MEMBER_END || ev.last || ev.worker == c->me || LEFT(c))
        return;
    CLOG(c, 1, "worker %u's membership ended", ev.worker);
    coord_out(c, &(struct preempt_coord_out){
                     .kind = PREEMPT_COORD_OUT_GONE, .worker = ev.worker,
                     .text = "its membership ended: its lease expired or was revoked, or it left after its last save" });
}

static void member_record(struct preempt_coord *c, bool put, const struct preempt_etcd_kv *kv)
{
    struct preempt_view_ev ev = coord_view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_RECORD,
                                                                           .put = put, .key = kv->key,
                                                                           .value = kv->value ? kv->value : "" });

    if (ev.what == PREEMPT_VIEW_MALFORMED || (ev.what == PREEMPT_VIEW_MEMBER_END && ev.text))
        CLOG(c, 2, "ignoring %s = \"%.40s\": not %s", kv->key, kv->value ? kv->value : "", ev.text);
    member_said(c, ev);
}

void coord_in_member(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    member_record(c, in->ev == PREEMPT_ETCD_PUT, in->kv);
}

/* A full read (the watch's start, or its re-read): a member that was
 * alive and is not in it has ended too (the view says which). */
void coord_in_members_read(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    struct preempt_view_ev ev;

    (void)coord_view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_MEMBERS });
    for (size_t i = 0; i < in->n; i++)
        member_record(c, true, &in->kvs[i]);
    while ((ev = coord_view_step(c, (struct preempt_view_in){ .kind = PREEMPT_VIEW_IN_MEMBERS_END })).what !=
           PREEMPT_VIEW_NOTHING)
        member_said(c, ev);
}

void coord_in_members_link(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    CLOG(c, in->up ? 0 : 1, "watch of the member records %s (%s)", in->up ? "up" : "down", in->why);
}

void coord_in_history(struct preempt_coord *c, const struct preempt_coord_in *in)
{
    char key[PREEMPT_KEY_MAX], old[PREEMPT_KEY_MAX];
    struct preempt_value v;
    const char *why = "";

    /* the input carries the handler's value as its text (traced as such):
     * read with its grammar, it is the value written */
    if (preempt_record_value_of_(&v, PREEMPT_KEY_HISTORY, in->text, c->n, &why) < 0) {
        CLOG(c, 3, "bug: a history record's value is not %s", why);
        return;
    }
    CKEY(c, key, HISTORY, .worker = c->me);
    coord_send(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_PUT, .rec = { key, &v, 0 } }, c->give_up_ms,
               COORD_NO_ANSWER);
    if (c->view.inc > PREEMPT_HISTORY_KEPT) { /* bounded: the oldest kept incarnation's goes */
        (void)preempt_key_range_(old, sizeof(old), c->jobp, PREEMPT_KEY_HISTORY_INC, 0,
                                 &(struct preempt_key){ .inc = c->view.inc - PREEMPT_HISTORY_KEPT });
        coord_send(c, &(struct preempt_co_ask){ .kind = PREEMPT_CO_FORGET, .range = { old } }, c->give_up_ms,
                   COORD_NO_ANSWER);
    }
}

int preempt_coord_decision_key_(const struct preempt_coord *c, unsigned round, char *buf, size_t size)
{
    return preempt_key_(buf, size, c->jobp, PREEMPT_KEY_DECISION,
                        &(struct preempt_key){ .inc = c->view.inc, .ep = c->view.ep, .round = round ? 1 : 0 });
}

