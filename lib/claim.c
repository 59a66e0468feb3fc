/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/claim.c: the driver claim's machine (claim-internal.h). Pure. */
#include "claim-internal.h"

PREEMPT_DECL_DEFINE(preempt_claim_decl_, "claim", "where this worker's driver claim stands", PREEMPT_CLAIM_,
                    PREEMPT_CLAIM_STATES, PREEMPT_CLAIM_INPUTS, PREEMPT_CLAIM_ACTIONS, PREEMPT_CLAIM_TABLE, 0);
