/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/joining.c: joining's two machines (joining-internal.h). Pure. */
#include "joining-internal.h"

PREEMPT_DECL_DEFINE(preempt_offer_decl_, "offer", "how a joining worker's offer is made", PREEMPT_OFFER_,
                    PREEMPT_OFFER_STATES, PREEMPT_OFFER_INPUTS, PREEMPT_OFFER_ACTIONS, PREEMPT_OFFER_TABLE,
                    PREEMPT_OFFER_IGNORED, 1u << PREEMPT_OFFER_MADE);

PREEMPT_DECL_DEFINE(preempt_shape_decl_, "shape", "who writes the incarnation's worker count", PREEMPT_SHAPE_,
                    PREEMPT_SHAPE_STATES, PREEMPT_SHAPE_INPUTS, PREEMPT_SHAPE_ACTIONS, PREEMPT_SHAPE_TABLE,
                    PREEMPT_SHAPE_IGNORED, 0u);
