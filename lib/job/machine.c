/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/machine.c: the event queue, the drain and machine_apply(), the one
 * writer of the state (see machine-internal.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "machine-internal.h"

struct preempt_sm {
    struct preempt_sm_head h; /* first: the inline accessors (machine-internal.h) */
    struct preempt_sm_ops ops;
    void *arg;
    struct preempt_event q[PREEMPT_EVQ_SIZE];
    unsigned head, len;
    bool draining;
    uint64_t seq;
    unsigned illegal, dropped;
};

int preempt_sm_new_(const struct preempt_config_facts *cfg, const struct preempt_sm_ops *ops, void *arg,
                    struct preempt_sm **ret)
{
    struct preempt_sm *sm;

    if (!cfg || !ops || !ops->run_fx || !ret)
        return -EINVAL;
    sm = calloc(1, sizeof(*sm));
    if (!sm)
        return -ENOMEM;
    sm->h.core = preempt_fsm_init_();
    sm->h.facts.cfg = *cfg;
    sm->ops = *ops;
    sm->arg = arg;
    *ret = sm;
    return 0;
}

void preempt_sm_free_(struct preempt_sm *sm)
{
    free(sm);
}

unsigned preempt_sm_illegal_(const struct preempt_sm *sm)
{
    return sm->illegal;
}

unsigned preempt_sm_dropped_(const struct preempt_sm *sm)
{
    return sm->dropped;
}

/* The one writer of the state: step, assign, record, then run the effects. */
static void machine_apply(struct preempt_sm *sm, const struct preempt_event *ev)
{
    struct preempt_step st = preempt_fsm_step_(&sm->h.core, ev, &sm->h.facts);
    enum preempt_state from = sm->h.core.state;
    struct preempt_trace_rec rec;

    sm->h.core = st.next; /* the only assignment */
    if (st.verdict == PREEMPT_VERDICT_ILLEGAL)
        sm->illegal++;
    preempt_trace_from_step_(&rec, ++sm->seq, ev, &sm->h.facts, from, &st);
    if (sm->ops.on_record)
        sm->ops.on_record(sm, &rec, sm->arg);
    for (unsigned k = 0; k < st.n_fx; k++)
        sm->ops.run_fx(sm, &st.fx[k], sm->arg);
    if (sm->ops.after_step)
        sm->ops.after_step(sm, from, st.next.state, sm->arg);
}

void preempt_sm_drain_(struct preempt_sm *sm)
{
    unsigned n = 0;

    if (sm->draining) /* called from an effect: the running drain will see it */
        return;
    sm->draining = true;
    while (sm->len > 0 && (n < PREEMPT_MAX_STEPS_PER_WAKEUP || !sm->ops.schedule_drain)) {
        struct preempt_event ev = sm->q[sm->head];

        sm->head = (sm->head + 1) % PREEMPT_EVQ_SIZE;
        sm->len--;
        n++;
        machine_apply(sm, &ev);
    }
    sm->draining = false;
    if (sm->len > 0)
        sm->ops.schedule_drain(sm, sm->arg); /* let the loop breathe, then go on */
}

int preempt_sm_post_(struct preempt_sm *sm, const struct preempt_event *ev)
{
    if (sm->len == PREEMPT_EVQ_SIZE) {
        sm->dropped++;
        return -ENOBUFS;
    }
    sm->q[(sm->head + sm->len) % PREEMPT_EVQ_SIZE] = *ev;
    sm->len++;
    preempt_sm_drain_(sm);
    return 0;
}

/* ---- local mode --------------------------------------------------------------- */

bool preempt_local_coord_fx_(struct preempt_sm *sm, const struct preempt_fx *fx, uint64_t now_ms)
{
    struct preempt_event ev = { .now_ms = now_ms };

    switch (fx->kind) {
    case PREEMPT_FX_CLAIM_DRIVER: /* the only worker always drives, and its proposal is the round's step */
        ev.kind = PREEMPT_EV_CLAIM_WON;
        (void)preempt_sm_post_(sm, &ev);
        /* fall through */
    case PREEMPT_FX_PROPOSE_STEP: /* the echo a watch would deliver */
    case PREEMPT_FX_REQUEST_FINAL:
        ev.kind = PREEMPT_EV_STEP_AGREED;
        ev.u.step_agreed.step = (uint64_t)fx->arg;
        ev.u.step_agreed.last = preempt_fsm_fx_last_(&sm->h.core, &sm->h.facts, fx, now_ms);
        break;
    case PREEMPT_FX_REPORT_SHARD: /* its shard is every shard, its opinion the decision's */
        ev.kind = PREEMPT_EV_CKPT_COMMITTED;
        ev.u.ckpt_committed.step = (uint64_t)fx->arg;
        /* alone: it stops where it is (a persisting save's worker waited at its boundary) */
        ev.u.ckpt_committed.stop = preempt_fsm_fx_last_(&sm->h.core, &sm->h.facts, fx, now_ms) ? (uint64_t)fx->arg : 0;
        break;
    case PREEMPT_FX_PUBLISH_NOTICE:
    case PREEMPT_FX_PUBLISH_ERROR:
    case PREEMPT_FX_ANNOUNCE_DONE:
    case PREEMPT_FX_ANNOUNCE_LEFT:
    case PREEMPT_FX_CLEAR_ROUND:
    case PREEMPT_FX_PROPOSE_ABORT: /* the local commit is the decision */
        return true; /* nobody else to tell */
    case PREEMPT_FX_EXIT: /* no last writes: all of it is the shell's */
    case PREEMPT_FX_REJOIN: /* a job's only (local mode never stays in place) */
    case PREEMPT_FX_RESUME:
    case PREEMPT_FX_KEEP_SHARD: /* the shell's (preempt_effects.def's WHO): never asked here */
    case PREEMPT_FX_DISCARD_SHARD:
    case PREEMPT_FX_BEGIN_SAVE:
    case PREEMPT_FX_ARM_TIMER:
    case PREEMPT_FX_DISARM_TIMER:
    case PREEMPT_FX__COUNT:
        return false;
    }
    (void)preempt_sm_post_(sm, &ev);
    return true;
}
