/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/machine-internal.h: the shell's side of the machine (style R4-R6).
 *
 * Everything that produces an event posts it here; events go through a
 * bounded FIFO and are drained one at a time (run to completion: an effect
 * that posts an event never recurses into the step). machine_apply() is the
 * only writer of the state: it steps the pure core, assigns the result,
 * emits exactly one trace record, and only then runs the effects.
 *
 * Times are milliseconds since the machine was created; the owner stamps
 * them, so that traces replay bit for bit. */
#ifndef PREEMPT_MACHINE_INTERNAL_H
#define PREEMPT_MACHINE_INTERNAL_H

#include "preempt_trace.h"

#define PREEMPT_EVQ_SIZE 64             /* events waiting at once; more is a bug */
#define PREEMPT_MAX_STEPS_PER_WAKEUP 64 /* steps per drain before yielding to the loop */

struct preempt_sm;

struct preempt_sm_ops {
    /* Runs one effect. It may post events; they are queued. Required. */
    void (*run_fx)(struct preempt_sm *sm, const struct preempt_fx *fx, void *arg);
    /* Receives the record of every event, after the state is written. */
    void (*on_record)(struct preempt_sm *sm, const struct preempt_trace_rec *rec, void *arg);
    /* Called after the effects of every step (NULL: none); from != to
     * when the step was a transition. The place for callbacks that want
     * to see the effects' outcome, such as the exit code. */
    void (*after_step)(struct preempt_sm *sm, enum preempt_state from, enum preempt_state to, void *arg);
    /* Asks the owner to call preempt_sm_drain_() again from its loop (a
     * drain stopped after PREEMPT_MAX_STEPS_PER_WAKEUP steps). NULL: the
     * drain goes on until the queue is empty. */
    void (*schedule_drain)(struct preempt_sm *sm, void *arg);
};

/* Ownership: the machine copies cfg and ops; free with preempt_sm_free_(). */
int preempt_sm_new_(const struct preempt_config_facts *cfg, const struct preempt_sm_ops *ops, void *arg,
                    struct preempt_sm **ret);
void preempt_sm_free_(struct preempt_sm *sm);

/* Queues an event and drains the queue unless a drain is running. Returns
 * 0, or -ENOBUFS when the queue is full (the event is dropped and counted). */
int preempt_sm_post_(struct preempt_sm *sm, const struct preempt_event *ev);

/* Drains the queue (bounded; see schedule_drain). */
void preempt_sm_drain_(struct preempt_sm *sm);

/* What a machine begins with (struct preempt_sm's first member, so that a
 * pointer to the machine is one to it): the accessors below are inline,
 * since every step boundary reads both. Write the core only through
 * preempt_sm_post_(). */
struct preempt_sm_head {
    struct preempt_core core;
    struct preempt_facts facts;
};

/* The facts the owner keeps up to date (run counter, measured times). */
static inline struct preempt_facts *preempt_sm_facts_(struct preempt_sm *sm)
{
    return &((struct preempt_sm_head *)(void *)sm)->facts;
}

static inline const struct preempt_core *preempt_sm_core_(const struct preempt_sm *sm)
{
    return &((const struct preempt_sm_head *)(const void *)sm)->core;
}

/* Events the machine judged illegal, and events dropped on a full queue. */
unsigned preempt_sm_illegal_(const struct preempt_sm *sm);
unsigned preempt_sm_dropped_(const struct preempt_sm *sm);

/* Local mode (no etcd): the coordination effects are answered at once by
 * posting the answers a one-worker job would get. Returns true when fx was a
 * coordination effect and has been handled. */
bool preempt_local_coord_fx_(struct preempt_sm *sm, const struct preempt_fx *fx, uint64_t now_ms);

#endif
