/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/worker-internal.h: the handler's rules around its machine and its
 * coordinator, one copy for the handler (lib/handler/handler.c) and the
 * simulation (tests/sim/): how a notice, an advisory notice and a
 * withdrawal reach the machine or the job, how a step is counted, which
 * effects are the coordinator's and what the others mean. The owner
 * supplies what touches the world (its clock, the machine's timer, the
 * save, the checkpoint directory, the exit) through struct
 * preempt_worker_ops. No I/O of its own. */
#ifndef PREEMPT_WORKER_INTERNAL_H
#define PREEMPT_WORKER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "machine-internal.h"

struct preempt_coord;

struct preempt_worker_ops {
    uint64_t (*now_ms)(void *arg);                            /* the machine's clock */
    void (*arm_timer)(void *arg, uint64_t at_ms);             /* the machine's one timer, at at_ms */
    void (*disarm_timer)(void *arg);
    void (*begin_save)(void *arg, uint64_t step);             /* the trainer is asked to save step */
    /* The job decided this worker's pending copy at step: > 0 committed,
     * < 0 not (PREEMPT_FX_KEEP_SHARD, DISCARD_SHARD; start-up's too). */
    void (*settle)(void *arg, uint64_t step, int decision);
    void (*exit)(void *arg, enum preempt_exit reason);        /* the machine exited (after the membership's end) */
    /* Survivors in place (PREEMPT_FX_REJOIN, after the membership's end):
     * join the job's next incarnation, this worker's state at step; the
     * answer is the event rejoined or rejoin-failed. PREEMPT_FX_RESUME:
     * the new incarnation runs, training goes on after step. */
    void (*rejoin)(void *arg, uint64_t step);
    void (*resume)(void *arg, uint64_t step);
    const char *(*fx_text)(void *arg, const struct preempt_fx *fx); /* the text a publishing effect carries */
    void (*dropped)(void *arg, enum preempt_event_kind kind); /* the machine's queue was full */
    void (*bug)(void *arg, const struct preempt_fx *fx);      /* an effect nobody carries out */
    /* The checkpoint persisting: its rest's estimated time to be durable, in
     * ms (0: none persists, or not known yet); refreshed into the facts
     * before each event the worker posts. */
    uint64_t (*persist_left_ms)(void *arg);
};

/* A worker: its machine, its coordinator (NULL: local mode), and what the
 * handler keeps beside them. The owner creates the machine and the
 * coordinator and sets them here; zero-initialise the rest. */
struct preempt_worker {
    struct preempt_sm *sm;
    struct preempt_coord *coord;
    bool live[PREEMPT_SOURCE__COUNT]; /* a source's notice stands (not withdrawn, not advisory) */
    bool save_asked;                  /* begin-save came; the trainer's save not yet done */
    uint64_t save_step;
    enum preempt_exit exit_reason;    /* valid in state exit */
    uint64_t step_ewma_us, step_dev_us; /* the step time's moving mean and mean deviation */
    bool pace_began;                  /* the first step boundary came, at pace_t0_ms with run pace_run0: */
    uint64_t pace_t0_ms, pace_run0;   /*   the progress since then gives the pace a report names */
    struct preempt_save_times saves;  /* the saves measured (the facts' save_ms comes from them) */
    const struct preempt_worker_ops *ops;
    void *arg;
};

/* At its exit a worker still delivers its coordination writes in flight
 * and reads their replies (and sends what they cause) for at most this
 * long: the handler's loop (hd_flush_last), the simulation's clock. */
#define PREEMPT_LAST_WRITES_MS 2000

/* Posts ev to the machine, stamped with the owner's clock. */
void preempt_worker_post_(struct preempt_worker *w, struct preempt_event ev);

/* The machine's run_fx (struct preempt_sm_ops), with the worker as arg:
 * coordination effects go to the coordinator (or the local one), the
 * others to the owner's ops. */
void preempt_worker_run_fx_(struct preempt_sm *sm, const struct preempt_fx *fx, void *worker);

/* A notice from src, deadline_in_ms from now (0: unknown). An advisory
 * one runs the same round (an opportunistic checkpoint) already
 * withdrawn, so that the job returns to idle after the save. */
void preempt_worker_notice_(struct preempt_worker *w, enum preempt_source src, uint64_t deadline_in_ms,
                            bool advisory);

/* src withdrew its notice: when no other source's stands, the worker's
 * notice is withdrawn (locally the machine is told at once; in a job, its
 * record says so and the job's view tells every worker when all records
 * do). Returns true when another source's notice still stands. */
bool preempt_worker_withdrawn_(struct preempt_worker *w, enum preempt_source src);

/* True when some source's notice stands. */
bool preempt_worker_any_live_(const struct preempt_worker *w);

/* True when an opportunistic checkpoint may start: no notice stands and
 * the machine is idle. */
bool preempt_worker_may_checkpoint_(const struct preempt_worker *w);

/* A step of step_us ended (0: not measured): measures it, grows the
 * membership lease for it and counts it. */
void preempt_worker_step_(struct preempt_worker *w, uint64_t step_us);

/* The pace a shard report names (ms a step): the lower of the step time's
 * moving mean and the progress since the first step boundary (time over
 * steps, everything counted). The mean alone follows a passing stall (a
 * snapshot, a persist's passes, a lockstep peer's): a report made then
 * named a pace the worker does not keep; the progress alone counts the
 * waits at earlier commits, which a countdown does not have. Fewer than
 * PREEMPT_PACE_MIN_STEPS since the first boundary: the mean. */
#define PREEMPT_PACE_MIN_STEPS 8
uint64_t preempt_worker_pace_(const struct preempt_worker *w, uint64_t now_ms);

/* A save of kind took ms: this worker's own (awaited or paced), the
 * restored checkpoint's, or the job's (the slowest save a committed
 * round's decision names: the coordinator's job_save). The planner plans
 * with the longer of this worker's own figure and the job's last, so that
 * the final round is opened in time for the slowest worker of the job, not
 * only for this one; a paced save (a two-phase save that persisted while
 * training went on) counts only until an awaited one is known; this
 * worker's shard reports carry its own figure
 * (preempt_facts_measure_save_(), preempt_save_own_()). */
void preempt_worker_save_took_(struct preempt_worker *w, uint64_t ms, enum preempt_save_kind kind);

/* A committed round's decision named its reports' lowest step and slowest
 * pace (step_ms a step), and came at at_ms (the machine's clock): the
 * planner's facts of the job's slowest worker (the coordinator's
 * job_pace), with which a driver ahead of it opens the final round in time
 * for it (preempt_plan_behind_()). */
void preempt_worker_job_pace_(struct preempt_worker *w, uint64_t step, uint64_t step_ms, uint64_t at_ms);

/* Tells the machine the step its run counter reached, while a notice is
 * known (in idle the machine has nothing to do with steps). */
void preempt_worker_reached_(struct preempt_worker *w);

/* What the trainer does next (preempt_handler_get_action()). */
enum preempt_action preempt_worker_action_(const struct preempt_worker *w);

#endif
