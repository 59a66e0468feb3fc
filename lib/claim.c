/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/claim.c: the driver claim's machine (claim-internal.h). Pure. */
#include "claim-internal.h"

#define CLAIM_ROW_(from, in, to, act)                                                                               \
    { PREEMPT_CLAIM_##from, PREEMPT_CLAIM_IN_##in, PREEMPT_CLAIM_##to, PREEMPT_CLAIM_DO_##act },
PREEMPT_DECL_DEFINE(preempt_claim_decl_, "claim", "where this worker's driver claim stands", PREEMPT_CLAIM_STATES,
                    PREEMPT_CLAIM_INPUTS, PREEMPT_CLAIM_ACTIONS, PREEMPT_CLAIM_TABLE, CLAIM_ROW_, 0);
