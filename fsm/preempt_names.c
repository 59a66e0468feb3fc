/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* fsm/preempt_names.c: name tables and lookups, all generated from the .def
 * files, so that no name can drift from the machine's definition. Pure. */
#include <errno.h>
#include <string.h>

#include "preempt_fsm.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const state_names[] = {
#define PREEMPT_STATE(id, name, timer, truth) [PREEMPT_STATE_##id] = name,
#include "preempt_states.def"
#undef PREEMPT_STATE
};
static const char *const state_truths[] = {
#define PREEMPT_STATE(id, name, timer, truth) [PREEMPT_STATE_##id] = truth,
#include "preempt_states.def"
#undef PREEMPT_STATE
};
static const enum preempt_timer_kind state_timers[] = {
#define PREEMPT_STATE(id, name, timer, truth) [PREEMPT_STATE_##id] = PREEMPT_TIMER_##timer,
#include "preempt_states.def"
#undef PREEMPT_STATE
};
static const char *const event_names[] = {
#define PREEMPT_EVENT(id, member, name, p1, p2, what) [PREEMPT_EV_##id] = name,
#include "preempt_events.def"
#undef PREEMPT_EVENT
};
static const char *const event_whats[] = {
#define PREEMPT_EVENT(id, member, name, p1, p2, what) [PREEMPT_EV_##id] = what,
#include "preempt_events.def"
#undef PREEMPT_EVENT
};

/* PARAM(type, field) expands to "type, field" so that PD_ sees three
 * arguments: the payload member, the type and the field. */
#define PARAM(type, field) type, field
#define PD(member, ...) PD_(member, __VA_ARGS__)
#define PD_(member, type, field)                                                                  \
    { PREEMPT_PT_##type == PREEMPT_PT_none ? NULL : #field, PREEMPT_PT_##type,                   \
      offsetof(struct preempt_event, u.member.field) }
static const struct preempt_param_desc event_params[][PREEMPT_EVENT_PARAMS] = {
#define PREEMPT_EVENT(id, member, name, p1, p2, what) [PREEMPT_EV_##id] = { PD(member, p1), PD(member, p2) },
#include "preempt_events.def"
#undef PREEMPT_EVENT
};
#undef PARAM

static const char *const fx_names[] = {
#define PREEMPT_EFFECT(id, name, arg, who, what) [PREEMPT_FX_##id] = name,
#include "preempt_effects.def"
#undef PREEMPT_EFFECT
};
static const enum preempt_arg_kind fx_args[] = {
#define PREEMPT_EFFECT(id, name, arg, who, what) [PREEMPT_FX_##id] = PREEMPT_ARG_##arg,
#include "preempt_effects.def"
#undef PREEMPT_EFFECT
};
static const enum preempt_fx_who fx_who[] = {
#define PREEMPT_EFFECT(id, name, arg, who, what) [PREEMPT_FX_##id] = PREEMPT_WHO_##who,
#include "preempt_effects.def"
#undef PREEMPT_EFFECT
};
static const char *const source_names[] = {
#define PREEMPT_SOURCE(id, name, what) [PREEMPT_SOURCE_##id] = name,
#include "preempt_sources.def"
#undef PREEMPT_SOURCE
};
static const char *const exit_names[] = {
#define PREEMPT_EXIT(id, name, what) [PREEMPT_EXIT_##id] = name,
#include "preempt_exits.def"
#undef PREEMPT_EXIT
};
static const char *const guard_names[] = {
#define PREEMPT_GUARD(id, name, what) [PREEMPT_GUARD_##id] = name,
#include "preempt_guards.def"
#undef PREEMPT_GUARD
};
static const char *const verdict_names[] = {
    [PREEMPT_VERDICT_TRANSITION] = "transition",
    [PREEMPT_VERDICT_IGNORED] = "ignored",
    [PREEMPT_VERDICT_ILLEGAL] = "illegal",
};
static const char *const how_names[] = {
    [PREEMPT_HOW_DEFAULT] = "",       [PREEMPT_HOW_DONE] = "done",   [PREEMPT_HOW_SAVED] = "saved",
    [PREEMPT_HOW_ABORT] = "abort",    [PREEMPT_HOW_ERROR] = "error", [PREEMPT_HOW_EVENT] = "event",
    [PREEMPT_HOW_PROTOCOL] = "protocol",
};
static const char *const plan_names[] = {
    [PREEMPT_PLAN_MEASURED] = "measured",
    [PREEMPT_PLAN_TF] = "tf",
};
static const char *const second_names[] = {
    [PREEMPT_SECOND_IGNORE] = "ignore",
    [PREEMPT_SECOND_EXIT] = "exit",
};

_Static_assert(ARRAY_SIZE(state_names) == PREEMPT_STATE__COUNT, "state names");
_Static_assert(ARRAY_SIZE(event_names) == PREEMPT_EV__COUNT, "event names");
_Static_assert(ARRAY_SIZE(fx_names) == PREEMPT_FX__COUNT, "effect names");
_Static_assert(ARRAY_SIZE(guard_names) == PREEMPT_GUARD__COUNT, "guard names");
_Static_assert(ARRAY_SIZE(how_names) == PREEMPT_HOW__COUNT, "how names");

static const char *name_of(const char *const *names, size_t n, long i)
{
    return i >= 0 && (size_t)i < n ? names[i] : NULL;
}

static int index_of(const char *const *names, size_t n, const char *name)
{
    if (!name)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (names[i] && strcmp(names[i], name) == 0)
            return (int)i;
    return -EINVAL;
}

#define NAME_LOOKUPS(prefix, type, table)                                   \
    const char *prefix##_to_string_(type v)                                 \
    {                                                                       \
        return name_of(table, ARRAY_SIZE(table), (long)v);                  \
    }                                                                       \
    int prefix##_from_string_(const char *name)                             \
    {                                                                       \
        return index_of(table, ARRAY_SIZE(table), name);                    \
    }

NAME_LOOKUPS(preempt_event, enum preempt_event_kind, event_names)
NAME_LOOKUPS(preempt_fx, enum preempt_fx_kind, fx_names)
NAME_LOOKUPS(preempt_source, enum preempt_source, source_names)
NAME_LOOKUPS(preempt_exit, enum preempt_exit, exit_names)
NAME_LOOKUPS(preempt_verdict, enum preempt_verdict, verdict_names)
NAME_LOOKUPS(preempt_plan, enum preempt_plan, plan_names)
NAME_LOOKUPS(preempt_second, enum preempt_second, second_names)

/* The public header's explicit values (made by scripts/public-enums.sh)
 * are the tables' order: checked here, at every build. */
enum {
#define PREEMPT_STATE(id, name, timer, truth) STATE_ORDER_##id,
#include "preempt_states.def"
#undef PREEMPT_STATE
};
enum {
#define PREEMPT_EXIT(id, name, what) EXIT_ORDER_##id,
#include "preempt_exits.def"
#undef PREEMPT_EXIT
};
#define PREEMPT_STATE(id, name, timer, truth)                                                                         \
    _Static_assert((int)PREEMPT_STATE_##id == (int)STATE_ORDER_##id, "preempt.h: state " #id " is not its place in " \
                                                                     "preempt_states.def (make public-enums)");
#include "preempt_states.def"
#undef PREEMPT_STATE
#define PREEMPT_EXIT(id, name, what)                                                                                  \
    _Static_assert((int)PREEMPT_EXIT_##id == (int)EXIT_ORDER_##id, "preempt.h: exit " #id " is not its place in "    \
                                                                   "preempt_exits.def (make public-enums)");
#include "preempt_exits.def"
#undef PREEMPT_EXIT

int preempt_state_from_string_(const char *name)
{
    return index_of(state_names, ARRAY_SIZE(state_names), name);
}

PREEMPT_EXPORT const char *preempt_state_to_string(enum preempt_state s)
{
    return name_of(state_names, ARRAY_SIZE(state_names), (long)s);
}

PREEMPT_EXPORT int preempt_state_from_string(const char *name, enum preempt_state *ret_state)
{
    int i = ret_state ? preempt_state_from_string_(name) : -EINVAL;

    if (i < 0)
        return i;
    *ret_state = (enum preempt_state)i;
    return 0;
}

PREEMPT_EXPORT const char *preempt_exit_to_string(enum preempt_exit x)
{
    return preempt_exit_to_string_(x);
}

PREEMPT_EXPORT const char *preempt_state_truth(enum preempt_state s)
{
    return name_of(state_truths, ARRAY_SIZE(state_truths), (long)s);
}

enum preempt_timer_kind preempt_state_timer_(enum preempt_state s)
{
    return (unsigned)s < PREEMPT_STATE__COUNT ? state_timers[s] : PREEMPT_TIMER_NONE;
}

const char *preempt_event_what_(enum preempt_event_kind e)
{
    return name_of(event_whats, ARRAY_SIZE(event_whats), (long)e);
}

const struct preempt_param_desc *preempt_event_params_(enum preempt_event_kind e)
{
    return (unsigned)e < PREEMPT_EV__COUNT ? event_params[e] : NULL;
}

enum preempt_fx_who preempt_fx_who_(enum preempt_fx_kind f)
{
    return (unsigned)f < PREEMPT_FX__COUNT ? fx_who[f] : PREEMPT_WHO_SHELL;
}

enum preempt_arg_kind preempt_fx_arg_kind_(enum preempt_fx_kind f)
{
    return (unsigned)f < PREEMPT_FX__COUNT ? fx_args[f] : PREEMPT_ARG_NONE;
}

const char *preempt_guard_to_string_(enum preempt_guard g)
{
    return name_of(guard_names, ARRAY_SIZE(guard_names), (long)g);
}

const char *preempt_how_to_string_(enum preempt_fx_how h)
{
    return name_of(how_names, ARRAY_SIZE(how_names), (long)h);
}
