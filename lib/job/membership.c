/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/membership.c: the membership's machine (membership-internal.h). Pure. */
#include "membership-internal.h"

PREEMPT_DECL_DEFINE(preempt_mship_decl_, "membership", "where this worker's membership of the job stands",
                    PREEMPT_MSHIP_, PREEMPT_MSHIP_STATES, PREEMPT_MSHIP_INPUTS, PREEMPT_MSHIP_ACTIONS,
                    PREEMPT_MSHIP_TABLE, PREEMPT_MSHIP_IGNORED, 1u << PREEMPT_MSHIP_LEFT);
