/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/report/progress-internal.h: a worker's progress, published in a small
 * shared page that a supervising process maps (preempt-launch
 * --hang-timeout). The file is named by $PREEMPT_PROGRESS_FILE ("{worker}"
 * becomes the worker index); the library maps it at creation and writes it
 * with plain stores at each step boundary: no system call per step (the
 * boundary already reads the clock, through the vDSO). The layout is a
 * contract between the library and its launcher, versioned by magic and
 * version; readers check both and the pid. */
#ifndef PREEMPT_PROGRESS_INTERNAL_H
#define PREEMPT_PROGRESS_INTERNAL_H

#include <stdint.h>

#define PREEMPT_PROGRESS_MAGIC 0x50524750u /* "PRGP" */
#define PREEMPT_PROGRESS_VERSION 1u
#define PREEMPT_PROGRESS_SIZE 4096u

/* What the worker is doing: a supervisor judges progress only in TRAINING
 * (start-up, a save and a restore have their own bounds). */
enum preempt_progress_phase {
    PREEMPT_PROGRESS_STARTING = 0, /* start-up: joining, restoring */
    PREEMPT_PROGRESS_TRAINING = 1, /* between step boundaries */
    PREEMPT_PROGRESS_SAVING = 2,   /* a save is running */
    PREEMPT_PROGRESS_EXITED = 3,   /* the handler is in exit */
};

struct preempt_progress {
    uint32_t magic, version;
    int32_t pid;
    uint32_t phase;       /* enum preempt_progress_phase */
    uint64_t t0_ns;       /* CLOCK_MONOTONIC of the handler's clock origin */
    uint64_t run;         /* the run counter at the last boundary */
    uint64_t boundary_us; /* the handler's clock at the last boundary (or when training began) */
};

/* Maps path (created, sized to a page) and fills its header; NULL when it
 * cannot (*ret_err: -errno). Ownership: preempt_progress_close_(). */
struct preempt_progress *preempt_progress_open_(const char *path, uint64_t t0_ns, int *ret_err);
void preempt_progress_close_(struct preempt_progress *p);

/* Plain stores (relaxed atomics: a reader never sees a torn value). */
static inline void preempt_progress_boundary_(struct preempt_progress *p, uint64_t run, uint64_t now_us)
{
    if (p) {
        __atomic_store_n(&p->run, run, __ATOMIC_RELAXED);
        __atomic_store_n(&p->boundary_us, now_us, __ATOMIC_RELEASE);
    }
}

static inline void preempt_progress_phase_(struct preempt_progress *p, enum preempt_progress_phase phase)
{
    if (p)
        __atomic_store_n(&p->phase, (uint32_t)phase, __ATOMIC_RELEASE);
}

#endif
