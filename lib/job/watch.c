/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/watch.c: the job's watch and the driver's roll call, two declared
 * machines (watch-internal.h). Pure. */
#include "watch-internal.h"

PREEMPT_DECL_DEFINE(preempt_watch_decl_, "watch",
                    "the job's watch: up, or down with a read of the records on each tick standing in for it",
                    PREEMPT_WATCH_, PREEMPT_WATCH_STATES, PREEMPT_WATCH_INPUTS, PREEMPT_WATCH_ACTIONS,
                    PREEMPT_WATCH_TABLE, PREEMPT_WATCH_IGNORED, 0);

PREEMPT_DECL_DEFINE(preempt_await_decl_, "await",
                    "start-up's watch of the record its barrier awaits: up, or down with a read of it on each tick "
                    "standing in for it",
                    PREEMPT_WATCH_, PREEMPT_WATCH_STATES, PREEMPT_WATCH_INPUTS, PREEMPT_WATCH_ACTIONS,
                    PREEMPT_WATCH_TABLE, PREEMPT_WATCH_IGNORED, 0);

enum preempt_watch_input preempt_watch_of_read_(int status)
{
    return status < 0 ? PREEMPT_WATCH_IN_READ_FAILED : PREEMPT_WATCH_IN_READ;
}

PREEMPT_DECL_DEFINE(preempt_roll_decl_, "roll-call",
                    "the driver's read of the memberships: once a keep-alive period, one at a time", PREEMPT_ROLL_,
                    PREEMPT_ROLL_STATES, PREEMPT_ROLL_INPUTS, PREEMPT_ROLL_ACTIONS, PREEMPT_ROLL_TABLE,
                    PREEMPT_ROLL_IGNORED, 0);

bool preempt_roll_trained_on_(enum preempt_roll_state s)
{
    return s == PREEMPT_ROLL_ON_IDLE || s == PREEMPT_ROLL_ON_READING;
}
