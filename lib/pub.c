/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/pub.c: the notice record's machine (pub-internal.h). Pure. */
#include <stdbool.h>
#include <stddef.h>

#include "pub-internal.h"

struct pub_cell {
    bool listed;
    enum preempt_pub_state to;
    enum preempt_pub_action action;
};

static const struct pub_cell table[PREEMPT_PUB__COUNT][PREEMPT_PUB_IN__COUNT] = {
#define PREEMPT_PUB_ROW_(from, in, to, act)                                                                          \
    [PREEMPT_PUB_##from][PREEMPT_PUB_IN_##in] = { true, PREEMPT_PUB_##to, PREEMPT_PUB_DO_##act },
    PREEMPT_PUB_TABLE(PREEMPT_PUB_ROW_)
#undef PREEMPT_PUB_ROW_
};

enum preempt_pub_action preempt_pub_step_(enum preempt_pub_state *state, enum preempt_pub_input input,
                                          bool *listed)
{
    const struct pub_cell *cell;

    *listed = false;
    if ((unsigned)*state >= PREEMPT_PUB__COUNT || (unsigned)input >= PREEMPT_PUB_IN__COUNT)
        return PREEMPT_PUB_DO_NONE;
    cell = &table[*state][input];
    if (!cell->listed)
        return PREEMPT_PUB_DO_NONE; /* ignored on purpose */
    *listed = true;
    *state = cell->to;
    return cell->action;
}

const char *preempt_pub_state_name_(enum preempt_pub_state s)
{
    static const char *const names[] = {
#define PREEMPT_PUB_NAME_(id, name, what) name,
        PREEMPT_PUB_STATES(PREEMPT_PUB_NAME_)
#undef PREEMPT_PUB_NAME_
    };

    return (unsigned)s < PREEMPT_PUB__COUNT ? names[s] : "?";
}

const char *preempt_pub_input_name_(enum preempt_pub_input in)
{
    static const char *const names[] = {
#define PREEMPT_PUB_NAME_(id, name, what) name,
        PREEMPT_PUB_INPUTS(PREEMPT_PUB_NAME_)
#undef PREEMPT_PUB_NAME_
    };

    return (unsigned)in < PREEMPT_PUB_IN__COUNT ? names[in] : "?";
}

const char *preempt_pub_action_name_(enum preempt_pub_action a)
{
    static const char *const names[] = {
#define PREEMPT_PUB_NAME_(id, name, what) name,
        PREEMPT_PUB_ACTIONS(PREEMPT_PUB_NAME_)
#undef PREEMPT_PUB_NAME_
    };

    return (unsigned)a < PREEMPT_PUB_DO__COUNT ? names[a] : "?";
}
