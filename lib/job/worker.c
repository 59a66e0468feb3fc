/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/worker.c: the handler's rules around its machine and its
 * coordinator (worker-internal.h), shared with the simulation. */
#include "worker-internal.h"

#include "coord-internal.h"

void preempt_worker_post_(struct preempt_worker *w, struct preempt_event ev)
{
    ev.now_ms = w->ops->now_ms(w->arg);
    preempt_sm_facts_(w->sm)->persist_left_ms = w->ops->persist_left_ms(w->arg);
    if (preempt_sm_post_(w->sm, &ev) < 0)
        w->ops->dropped(w->arg, ev.kind);
}

void preempt_worker_run_fx_(struct preempt_sm *sm, const struct preempt_fx *fx, void *worker)
{
    struct preempt_worker *w = worker;
    const struct preempt_core *core = preempt_sm_core_(sm);
    uint64_t now = w->ops->now_ms(w->arg);
    const struct preempt_facts *f = preempt_sm_facts_(sm);
    bool last = preempt_fsm_fx_last_(core, f, fx, now);

    /* who runs it is the table's (preempt_effects.def, column WHO) */
    if (preempt_fx_who_(fx->kind) != PREEMPT_WHO_SHELL) {
        /* a report names this worker's step and pace, and whether it trains on from there (persisting) */
        bool on = preempt_action_of_(core, f->run, false, false) == PREEMPT_ACTION_CONTINUE;
        bool ran = w->coord ? preempt_coord_fx_(w->coord, fx, core->round, last, preempt_fsm_fx_stop_(core, f, fx, now),
                                                preempt_save_own_(&w->saves),
                                                (struct preempt_pace){ f->run, preempt_worker_pace_(w, now), 0 }, on,
                                                w->ops->fx_text(w->arg, fx))
                            : preempt_local_coord_fx_(sm, fx, now);

        if (preempt_fx_who_(fx->kind) == PREEMPT_WHO_JOB) {
            if (!ran)
                w->ops->bug(w->arg, fx); /* a coordinator answers every coordination effect */
            return;
        }
    }
    switch (fx->kind) {
    case PREEMPT_FX_BEGIN_SAVE:
        w->save_asked = true;
        w->save_step = (uint64_t)fx->arg;
        w->ops->begin_save(w->arg, w->save_step);
        return;
    case PREEMPT_FX_ARM_TIMER:
        w->ops->arm_timer(w->arg, (uint64_t)fx->arg);
        return;
    case PREEMPT_FX_DISARM_TIMER:
        w->ops->disarm_timer(w->arg);
        return;
    case PREEMPT_FX_KEEP_SHARD:
    case PREEMPT_FX_DISCARD_SHARD:
        w->ops->settle(w->arg, (uint64_t)fx->arg, fx->kind == PREEMPT_FX_KEEP_SHARD ? 1 : -1);
        return;
    case PREEMPT_FX_EXIT:
        w->exit_reason = (enum preempt_exit)fx->arg;
        preempt_coord_leave_(w->coord);
        w->ops->exit(w->arg, w->exit_reason);
        return;
    case PREEMPT_FX_REJOIN: /* this incarnation ends here too; the owner joins the next one */
        preempt_coord_leave_(w->coord);
        w->ops->rejoin(w->arg, (uint64_t)fx->arg);
        return;
    case PREEMPT_FX_RESUME:
        w->ops->resume(w->arg, (uint64_t)fx->arg);
        return;
    case PREEMPT_FX_PUBLISH_NOTICE: /* the coordinator's (preempt_effects.def's WHO) */
    case PREEMPT_FX_CLAIM_DRIVER:
    case PREEMPT_FX_PROPOSE_STEP:
    case PREEMPT_FX_REQUEST_FINAL:
    case PREEMPT_FX_REPORT_SHARD:
    case PREEMPT_FX_PUBLISH_ERROR:
    case PREEMPT_FX_ANNOUNCE_DONE:
    case PREEMPT_FX_ANNOUNCE_LEFT:
    case PREEMPT_FX_CLEAR_ROUND:
    case PREEMPT_FX_PROPOSE_ABORT:
    case PREEMPT_FX__COUNT:
        break;
    }
    w->ops->bug(w->arg, fx); /* the table says the shell runs it, and the shell does not know it */
}

bool preempt_worker_any_live_(const struct preempt_worker *w)
{
    for (unsigned i = 0; i < PREEMPT_SOURCE__COUNT; i++)
        if (w->live[i])
            return true;
    return false;
}

bool preempt_worker_may_checkpoint_(const struct preempt_worker *w)
{
    return !preempt_worker_any_live_(w) && preempt_sm_core_(w->sm)->state == PREEMPT_STATE_IDLE;
}

/* Every notice of this worker is withdrawn (or was advisory). */
static void withdraw(struct preempt_worker *w, enum preempt_source src)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_NOTICE_WITHDRAWN };

    if (w->coord) {
        preempt_coord_withdraw_(w->coord, true);
        return;
    }
    ev.u.notice_withdrawn.source = src;
    preempt_worker_post_(w, ev);
}

void preempt_worker_notice_(struct preempt_worker *w, enum preempt_source src, uint64_t deadline_in_ms,
                            bool advisory)
{
    struct preempt_event ev = { .kind = PREEMPT_EV_NOTICE };

    ev.u.notice.source = src;
    ev.u.notice.deadline = deadline_in_ms ? w->ops->now_ms(w->arg) + deadline_in_ms : 0;
    if (advisory && preempt_sm_core_(w->sm)->state == PREEMPT_STATE_REJOINING)
        return; /* in place: its state is a committed checkpoint already, and no job runs to take one */
    if (!advisory) {
        w->live[src] = true;
        preempt_coord_live_(w->coord, preempt_source_to_string_(src));
    } else if (w->coord) {
        preempt_coord_withdraw_(w->coord, true); /* the record is written withdrawn */
    }
    preempt_worker_post_(w, ev);
    if (advisory && !w->coord)
        withdraw(w, src);
}

bool preempt_worker_withdrawn_(struct preempt_worker *w, enum preempt_source src)
{
    w->live[src] = false;
    if (preempt_worker_any_live_(w))
        return true;
    withdraw(w, src);
    return false;
}

void preempt_worker_step_(struct preempt_worker *w, uint64_t step_us)
{
    struct preempt_facts *f = preempt_sm_facts_(w->sm);

    if (step_us) {
        preempt_facts_measure_step_(f, &w->step_ewma_us, &w->step_dev_us, step_us);
        preempt_coord_step_(w->coord, step_us / 1000);
    }
    if (!w->pace_began) {
        w->pace_began = true;
        w->pace_t0_ms = w->ops->now_ms(w->arg);
        w->pace_run0 = f->run + 1;
    }
    f->run++;
}

uint64_t preempt_worker_pace_(const struct preempt_worker *w, uint64_t now_ms)
{
    const struct preempt_facts *f = preempt_sm_facts_(w->sm);
    uint64_t mean = f->step_ms ? f->step_ms : 1, steps, rate;

    if (!w->pace_began || f->run < w->pace_run0 + PREEMPT_PACE_MIN_STEPS || now_ms < w->pace_t0_ms)
        return mean;
    steps = f->run - w->pace_run0;
    rate = (now_ms - w->pace_t0_ms + steps - 1) / steps;
    return rate && rate < mean ? rate : mean;
}

void preempt_worker_save_took_(struct preempt_worker *w, uint64_t ms, enum preempt_save_kind kind)
{
    preempt_facts_measure_save_(preempt_sm_facts_(w->sm), &w->saves, ms, kind);
}

void preempt_worker_job_pace_(struct preempt_worker *w, uint64_t step, uint64_t step_ms, uint64_t at_ms)
{
    struct preempt_facts *f = preempt_sm_facts_(w->sm);

    f->slow_step = step;
    f->slow_step_ms = step_ms;
    f->slow_at_ms = at_ms;
}

void preempt_worker_reached_(struct preempt_worker *w)
{
    enum preempt_state s = preempt_sm_core_(w->sm)->state;

    if (s != PREEMPT_STATE_IDLE && s != PREEMPT_STATE_EXIT) {
        struct preempt_event ev = { .kind = PREEMPT_EV_STEP_REACHED };

        ev.u.step_reached.step = preempt_sm_facts_(w->sm)->run;
        preempt_worker_post_(w, ev);
    }
}

enum preempt_action preempt_worker_action_(const struct preempt_worker *w)
{
    const struct preempt_facts *f = preempt_sm_facts_(w->sm);

    return preempt_action_of_(preempt_sm_core_(w->sm), f->run, w->save_asked, f->cfg.workers <= 1);
}
