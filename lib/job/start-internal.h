/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/start-internal.h: a worker's start-up in a job, driven: the
 * restore machine (restore-internal.h) over a shell's effects. */
#ifndef PREEMPT_START_INTERNAL_H
#define PREEMPT_START_INTERNAL_H

#include <stdint.h>

#include "restore-internal.h"

/* A worker's start-up in a job, as the handler runs it and the simulator
 * runs it (the same code: neither steps the machine nor chooses its
 * inputs or errors itself). The shell joins, restores and reports; its
 * answers come back through preempt_start_joined_() and
 * preempt_start_barrier_(); the machine decides what follows and the
 * driver calls the shell's effect for it. Pure: the effects are the
 * shell's. An effect may end start-up (end, or a join that fails at once
 * and answers inside the call): the driver touches nothing after one. */
struct preempt_start_ops {
    /* Joins the job (again, after a step was set aside); the answer comes
     * through preempt_start_joined_(), inside the call or later. */
    void (*join)(void *arg);
    /* Restores the job's step (the restore callback): 0 or its negative
     * errno (preempt_rst_restored_() says what it means). */
    int (*restore)(void *arg, uint64_t step);
    /* Reports this worker's restore at the restore barrier: mine is a
     * PREEMPT_RESTORE_*, err the restore's error (0 when ok). The
     * barrier's answer comes through preempt_start_barrier_(). */
    void (*report)(void *arg, int mine, int err);
    /* Sets the job's step aside (every worker alike: the barrier's record
     * said so); a join follows. */
    void (*set_aside)(void *arg, uint64_t step);
    /* Start-up ended: r 0, training begins (at the restored step when
     * restored, else at step 0); or a negative errno, and start-up fails:
     * -ENOTRECOVERABLE when every step the workers held in common was set
     * aside by this start-up. */
    void (*end)(void *arg, int r, bool restored);
    /* A line for the log, level 0 debug .. 3 error: each transition (0),
     * a pair the table has no row for (3: a bug, and start-up fails). */
    void (*log)(void *arg, int level, const char *line);
};

struct preempt_start {
    const struct preempt_start_ops *ops;
    void *arg;
    const struct preempt_decl_tracer *trace; /* the machine's transitions (NULL: none) */
    unsigned instance;  /* the machine's instance in the trace: 0 for a process's start-up, k for its k-th
                           rejoin in place (each replayed from its first state) */
    bool no_store;      /* no checkpoint directory: a join never restores */
    unsigned rst;       /* the machine's state (PREEMPT_RST_JOINING at first: zero) */
    unsigned fallbacks; /* steps this start-up set aside */
    uint64_t step;      /* the job's step, as the last join found it */
    int err;            /* this worker's restore's error (0: restored) */
};

/* The join's answer: r 0 and the step every worker holds (have_step), or
 * the join's negative errno. */
void preempt_start_joined_(struct preempt_start *s, int r, bool have_step, uint64_t step);
/* The restore barrier's answer: r 0 and the job's outcome (a
 * PREEMPT_RESTORE_*: the barrier record's), or the barrier's negative
 * errno. */
void preempt_start_barrier_(struct preempt_start *s, int r, int outcome);

#endif
