/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/lease.c: the membership lease's machine and the reading of a
 * keep-alive's answer (lease-internal.h). Pure. */
#include "lease-internal.h"

PREEMPT_DECL_DEFINE(preempt_lease_decl_, "lease", "this worker's membership lease: kept alive, or a new one granted",
                    PREEMPT_LEASE_, PREEMPT_LEASE_STATES, PREEMPT_LEASE_INPUTS, PREEMPT_LEASE_ACTIONS,
                    PREEMPT_LEASE_TABLE, PREEMPT_LEASE_IGNORED, 0);

enum preempt_keep_says preempt_keep_answer_(int status, int64_t ttl_s)
{
    if (status < 0)
        return PREEMPT_KEEP_FAILED;
    return ttl_s > 0 ? PREEMPT_KEEP_KEPT : PREEMPT_KEEP_EXPIRED;
}

const char *preempt_keep_says_name_(enum preempt_keep_says s)
{
    switch (s) {
    case PREEMPT_KEEP_KEPT:
        return "kept";
    case PREEMPT_KEEP_FAILED:
        return "failed";
    case PREEMPT_KEEP_EXPIRED:
        return "expired";
    }
    return "?";
}
