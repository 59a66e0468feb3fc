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

#define PREEMPT_PUB_NAME_(id, name, what) name,
#define PREEMPT_PUB_WHAT_(id, name, what) what,
static const char *const state_names[] = { PREEMPT_PUB_STATES(PREEMPT_PUB_NAME_) };
static const char *const state_whats[] = { PREEMPT_PUB_STATES(PREEMPT_PUB_WHAT_) };
static const char *const input_names[] = { PREEMPT_PUB_INPUTS(PREEMPT_PUB_NAME_) };
static const char *const action_names[] = { PREEMPT_PUB_ACTIONS(PREEMPT_PUB_NAME_) };
#undef PREEMPT_PUB_NAME_
#undef PREEMPT_PUB_WHAT_

static const char *text_of(const char *const *texts, unsigned n, unsigned i)
{
    return i < n ? texts[i] : "?";
}

const char *preempt_pub_state_name_(enum preempt_pub_state s)
{
    return text_of(state_names, PREEMPT_PUB__COUNT, (unsigned)s);
}

const char *preempt_pub_state_what_(enum preempt_pub_state s)
{
    return text_of(state_whats, PREEMPT_PUB__COUNT, (unsigned)s);
}

const char *preempt_pub_input_name_(enum preempt_pub_input in)
{
    return text_of(input_names, PREEMPT_PUB_IN__COUNT, (unsigned)in);
}

const char *preempt_pub_action_name_(enum preempt_pub_action a)
{
    return text_of(action_names, PREEMPT_PUB_DO__COUNT, (unsigned)a);
}

const struct preempt_pub_row *preempt_pub_rows_(size_t *n)
{
    static const struct preempt_pub_row rows[] = {
#define PREEMPT_PUB_LIST_(from, in, to, act)                                                                         \
    { PREEMPT_PUB_##from, PREEMPT_PUB_IN_##in, PREEMPT_PUB_##to, PREEMPT_PUB_DO_##act },
        PREEMPT_PUB_TABLE(PREEMPT_PUB_LIST_)
#undef PREEMPT_PUB_LIST_
    };

    *n = sizeof(rows) / sizeof(rows[0]);
    return rows;
}
