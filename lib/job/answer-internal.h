/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/answer-internal.h: the answers from etcd that the job coordinator
 * acts on, typed: one input of the protocol each, told to the owner with
 * what it says (coord-internal.h: ops.on_answer), which traces it
 * (trace-internal.h: "answer" lines) so that preempt-replay reads it again
 * and finds in it the cause of what the declared machines and the
 * handler's machine were told. The watch's records are the other input
 * (the job's view, view-internal.h). */
#ifndef PREEMPT_ANSWER_INTERNAL_H
#define PREEMPT_ANSWER_INTERNAL_H

#include <stdint.h>

#include "claim-internal.h" /* struct preempt_claim_answer */
#include "lost-internal.h"  /* struct preempt_lost_read */

/* An answer the coordinator acts on, and what it says: one typed input of
 * the protocol (trace-internal.h: "answer" lines). */
enum preempt_job_answer_kind {
    PREEMPT_JOB_ANSWER_CLAIM,   /* the claim's transaction: claim and claim_says */
    PREEMPT_JOB_ANSWER_MEMBERS, /* the driver's read of the memberships: read (its time read->now_ms) and lost_says */
    PREEMPT_JOB_ANSWER_WRITE,   /* a write that failed past its retry bound: status (the machine's coord-failed) */
    PREEMPT_JOB_ANSWER_GRANT,   /* a new membership lease's grant: status, ttl_s */
    PREEMPT_JOB_ANSWER_PUT,     /* the put of this worker's notice record: status */
    PREEMPT_JOB_ANSWER_KEEP,    /* a keep-alive of the membership lease: status, ttl_s (0 or less: it ended) */
    PREEMPT_JOB_ANSWER_RECORDS, /* the read of the job's records that stands in for a watch that is down: status */
};

struct preempt_job_answer {
    enum preempt_job_answer_kind kind;
    int status;    /* 0 or a negative errno */
    int64_t ttl_s; /* grant, keep: the TTL etcd answered */
    const struct preempt_claim_answer *claim;
    const struct preempt_claim_says *claim_says;
    const struct preempt_lost_read *read;
    const struct preempt_lost_says *lost_says;
};

#endif
