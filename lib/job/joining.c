/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/joining.c: joining's three machines (joining-internal.h). Pure. */
#include "joining-internal.h"

PREEMPT_DECL_DEFINE(preempt_offer_decl_, "offer", "how a joining worker's offer is made", PREEMPT_OFFER_,
                    PREEMPT_OFFER_STATES, PREEMPT_OFFER_INPUTS, PREEMPT_OFFER_ACTIONS, PREEMPT_OFFER_TABLE,
                    PREEMPT_OFFER_IGNORED, 1u << PREEMPT_OFFER_MADE);

PREEMPT_DECL_DEFINE(preempt_shape_decl_, "shape", "who writes the incarnation's worker count", PREEMPT_SHAPE_,
                    PREEMPT_SHAPE_STATES, PREEMPT_SHAPE_INPUTS, PREEMPT_SHAPE_ACTIONS, PREEMPT_SHAPE_TABLE,
                    PREEMPT_SHAPE_IGNORED, 0u);

PREEMPT_DECL_DEFINE(preempt_attempt_decl_, "attempt", "what a join attempt's answer says", PREEMPT_ATTEMPT_,
                    PREEMPT_ATTEMPT_STATES, PREEMPT_ATTEMPT_INPUTS, PREEMPT_ATTEMPT_ACTIONS, PREEMPT_ATTEMPT_TABLE,
                    PREEMPT_ATTEMPT_IGNORED, (1u << PREEMPT_ATTEMPT_JOINED) | (1u << PREEMPT_ATTEMPT_TOOK_OVER));

enum preempt_attempt_input preempt_attempt_judge_(const struct preempt_attempt_answer *a)
{
    return a->applied          ? PREEMPT_ATTEMPT_IN_APPLIED
           : !a->counter_is_inc ? PREEMPT_ATTEMPT_IN_MOVED_ON
           : a->mine            ? (a->mine_ours ? PREEMPT_ATTEMPT_IN_OWN_EARLIER : PREEMPT_ATTEMPT_IN_HELD)
           : !a->ready          ? PREEMPT_ATTEMPT_IN_NOT_STARTED
           : a->restoring       ? PREEMPT_ATTEMPT_IN_STILL_STARTING
                                : PREEMPT_ATTEMPT_IN_STARTED;
}
