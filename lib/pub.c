/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/pub.c: the notice record's machine (pub-internal.h). Pure. */
#include "pub-internal.h"

PREEMPT_DECL_DEFINE(preempt_pub_decl_, "notice-record", "where this worker's notice record stands", PREEMPT_PUB_,
                    PREEMPT_PUB_STATES, PREEMPT_PUB_INPUTS, PREEMPT_PUB_ACTIONS, PREEMPT_PUB_TABLE, 0);
