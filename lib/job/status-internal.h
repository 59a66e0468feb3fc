/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/status-internal.h: a whole read of one incarnation's records, as
 * preemptctl status shows it: each record judged as every worker judges
 * it, and what the records mean together, read through the job's view
 * (view-internal.h) as every reader reads them. Pure. */
#ifndef PREEMPT_STATUS_INTERNAL_H
#define PREEMPT_STATUS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "port/port.h"
#include "view-internal.h"

struct preempt_job_status {
    unsigned workers;                   /* the job's, from the shape record (PREEMPT_MAX_WORKERS: none read) */
    uint64_t ep;                        /* the newest episode the records name */
    struct preempt_view_summary notices; /* its notices */
    bool op;                            /* the operator's notice stands */
    uint64_t op_wall;                   /* its deadline (UINT64_MAX: none given) */
    bool claim;                         /* a driver holds the episode */
    struct {
        bool agreed, last, decided, committed;
        uint64_t agreed_step, step; /* the save step agreed; the decision's step */
    } round[2];
    bool lost, left;       /* a worker lost (left: it left before the preemption's end) */
    unsigned lost_worker;
    bool error;            /* the job's error: its code, worker and message */
    int64_t code;
    unsigned error_worker;
    char message[128];
    struct preempt_view_members members; /* the members read */
    unsigned malformed;    /* records of the incarnation and its newest episode that the workers ignore (a value its
                              kind cannot hold, a worker the job lacks) */
};

/* One record as a listing shows it: what the workers make of it, from the
 * one reading of its value. */
struct preempt_status_rec {
    const char *why;    /* what its value should be when the workers ignore it (static text); NULL: they read it */
    bool notice;        /* a notice they read (a worker's or the operator's): */
    uint64_t deadline;  /*   its deadline (unix ms; 0: none given) */
    const char *source; /*   its source, into the record's value (not terminated; NULL: none) */
    size_t source_len;
    bool withdrawn;     /*   taken back */
};

/* Reads the records kvs (n, in any order: they are taken in the order
 * they were written, preempt_etcd_kvs_by_write_) of incarnation inc of
 * the job with prefix jobp into *st; recs (n entries, or NULL) gets each
 * record kvs[i] as the workers judge it (valid while kvs is). 0 or
 * -ENOMEM. */
int preempt_job_status_read_(const char *jobp, uint64_t inc, const struct preempt_etcd_kv *kvs, size_t n,
                             struct preempt_status_rec *recs, struct preempt_job_status *st);

#endif
