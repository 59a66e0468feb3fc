/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/decision.c: a round's decision machine (decision-internal.h). Pure. */
#include "decision-internal.h"

PREEMPT_DECL_DEFINE(preempt_dec_decl_, "decision", "what this worker proposed of a round's one decision", PREEMPT_DEC_,
                    PREEMPT_DEC_STATES, PREEMPT_DEC_INPUTS, PREEMPT_DEC_ACTIONS, PREEMPT_DEC_TABLE, PREEMPT_DEC_IGNORED,
                    0);
