/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/phase.c: how a start-up phase ends (phase-internal.h). Pure. */
#include "phase-internal.h"

PREEMPT_DECL_DEFINE(preempt_pend_decl_, "phase-end", "how a start-up phase ends (lib/job/startup.c)", PREEMPT_PEND_,
                    PREEMPT_PEND_STATES, PREEMPT_PEND_INPUTS, PREEMPT_PEND_ACTIONS, PREEMPT_PEND_TABLE,
                    PREEMPT_PEND_IGNORED, 1u << PREEMPT_PEND_DONE);
