/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/claim.c: the driver claim's machine (claim-internal.h). Pure. */
#include <errno.h>
#include <stdio.h>

#include "claim-internal.h"
#include "records/records.h" /* struct preempt_rv_claim */

PREEMPT_DECL_DEFINE(preempt_claim_decl_, "claim", "where this worker's driver claim stands", PREEMPT_CLAIM_,
                    PREEMPT_CLAIM_STATES, PREEMPT_CLAIM_INPUTS, PREEMPT_CLAIM_ACTIONS, PREEMPT_CLAIM_TABLE,
                    PREEMPT_CLAIM_IGNORED, 0);

struct preempt_claim_says preempt_claim_answer_(const struct preempt_claim_answer *a, unsigned me)
{
    struct preempt_claim_says s = { .input = PREEMPT_CLAIM_IN_WON, .holder = me };
    struct preempt_rv_claim held;
    const char *why;

    if (a->status == -ENOENT && !a->left) /* its lease ended inside a long step */
        s.input = PREEMPT_CLAIM_IN_STALE_LEASE;
    else if (a->status < 0)
        s.input = PREEMPT_CLAIM_IN_FAILED;
    else if (a->succeeded)
        return s;
    else if (!a->read) /* released between the compare and the read, or the round has a step already */
        s.input = PREEMPT_CLAIM_IN_UNREADABLE;
    else if (!a->held || preempt_rv_claim_read_(a->held, UINT32_MAX, &held, &why) < 0) {
        s.input = PREEMPT_CLAIM_IN_UNREADABLE; /* a record that is no claim: the next claim replaces it */
        s.garbage = true;
        s.holder = me;
    } else if ((s.holder = (unsigned)held.w) != me)
        s.input = PREEMPT_CLAIM_IN_LOST;
    return s; /* its own claim stood already: won */
}

int preempt_claim_says_format_(char *buf, size_t size, const struct preempt_claim_says *s)
{
    const char *name = (unsigned)s->input < PREEMPT_CLAIM_IN__COUNT ? preempt_claim_decl_.input_names[s->input] : "?";

    if (s->input == PREEMPT_CLAIM_IN_LOST)
        return snprintf(buf, size, "%s worker=%u", name, s->holder);
    return snprintf(buf, size, "%s%s", name, s->garbage ? " garbage" : "");
}
