/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/outcome.c: the launch outcome's machine (outcome-internal.h). Pure. */
#include "outcome-internal.h"

PREEMPT_DECL_DEFINE(preempt_out_decl_, "launch-outcome", "what a launch's end says (preempt-launch)", PREEMPT_OUT_,
                    PREEMPT_OUT_STATES, PREEMPT_OUT_INPUTS, PREEMPT_OUT_ACTIONS, PREEMPT_OUT_TABLE, PREEMPT_OUT_IGNORED,
                    1u << PREEMPT_OUT_FAILED);
