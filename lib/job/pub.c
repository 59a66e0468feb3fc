/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/pub.c: the notice record's machine (pub-internal.h). Pure. */
#include "pub-internal.h"

PREEMPT_DECL_DEFINE(preempt_pub_decl_, "notice-record", "where this worker's notice record stands", PREEMPT_PUB_,
                    PREEMPT_PUB_STATES, PREEMPT_PUB_INPUTS, PREEMPT_PUB_ACTIONS, PREEMPT_PUB_TABLE, PREEMPT_PUB_IGNORED,
                    0);

enum preempt_pub_input preempt_pub_of_claim_(const struct preempt_claim_answer *a)
{
    if (a->status < 0)
        return PREEMPT_PUB_IN_CLAIM_FAILED;
    return a->succeeded ? PREEMPT_PUB_IN_CLAIM_WON : PREEMPT_PUB_IN_CLAIM_LOST;
}
