/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/pub.c: the notice record's machine (pub-internal.h). Pure. */
#include "pub-internal.h"

#define PUB_ROW_(from, in, to, act) { PREEMPT_PUB_##from, PREEMPT_PUB_IN_##in, PREEMPT_PUB_##to, PREEMPT_PUB_DO_##act },
PREEMPT_DECL_DEFINE(preempt_pub_decl_, "notice-record", "where this worker's notice record stands", PREEMPT_PUB_STATES,
                    PREEMPT_PUB_INPUTS, PREEMPT_PUB_ACTIONS, PREEMPT_PUB_TABLE, PUB_ROW_, 0);
