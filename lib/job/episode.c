/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/episode.c: the episode's machine (episode-internal.h). Pure. */
#include "episode-internal.h"

PREEMPT_DECL_DEFINE(preempt_ep_decl_, "episode", "where the current episode stands for this worker", PREEMPT_EP_,
                    PREEMPT_EP_STATES, PREEMPT_EP_INPUTS, PREEMPT_EP_ACTIONS, PREEMPT_EP_TABLE, PREEMPT_EP_IGNORED, 0);
