/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* fsm/preempt_fsm_check.c: the table's validator, shared by the unit tests
 * and `fsmdump --check`. It proves properties of the table itself; the
 * tests prove the step function follows it. Pure. */
#include <stdio.h>

#include "preempt_fsm.h"

struct checker {
    void (*report)(const char *msg, void *arg);
    void *arg;
    unsigned problems;
};

static void problem(struct checker *c, const char *msg)
{
    c->problems++;
    if (c->report)
        c->report(msg, c->arg);
}

#define PROBLEM(c, ...)                                    \
    do {                                                   \
        char buf_[256];                                    \
        (void)snprintf(buf_, sizeof(buf_), __VA_ARGS__);   \
        problem(c, buf_);                                  \
    } while (0)

static const char *S(enum preempt_state s)
{
    const char *n = preempt_state_to_string(s);
    return n ? n : "?";
}

static const char *E(enum preempt_event_kind e)
{
    const char *n = preempt_event_to_string_(e);
    return n ? n : "?";
}

static int count_fx(const struct preempt_row *r, enum preempt_fx_kind k)
{
    int n = 0;
    for (unsigned i = 0; i < r->n_fx; i++)
        n += r->fx[i].kind == k;
    return n;
}

static void check_pairs(struct checker *c, const struct preempt_machine_def *m)
{
    for (int s = 0; s < PREEMPT_STATE__COUNT; s++) {
        for (int e = 0; e < PREEMPT_EV__COUNT; e++) {
            int n_rows = 0, n_ign = 0;
            bool unguarded = false, guards[PREEMPT_GUARD__COUNT] = { false };

            for (size_t i = 0; i < m->n_rows; i++) {
                const struct preempt_row *r = &m->rows[i];
                if ((int)r->from != s || (int)r->on != e)
                    continue;
                if (unguarded)
                    PROBLEM(c, "row %zu (%s, %s) can never match: an unguarded row precedes it", i, S(s), E(e));
                else if (guards[r->guard])
                    PROBLEM(c, "row %zu (%s, %s) can never match: an earlier row has the same guard", i, S(s),
                            E(e));
                guards[r->guard] = true;
                unguarded = unguarded || r->guard == PREEMPT_GUARD_ALWAYS;
                n_rows++;
            }
            for (size_t i = 0; i < m->n_ignored; i++)
                n_ign += (int)m->ignored[i].state == s && (int)m->ignored[i].on == e;
            if (n_ign > 1)
                PROBLEM(c, "(%s, %s) is listed %d times as ignored", S(s), E(e), n_ign);
            if (n_rows > 0 && !unguarded && n_ign == 0)
                PROBLEM(c, "(%s, %s) is undecided when no guard holds: add an unguarded row or an ignored entry",
                        S(s), E(e));
            if (unguarded && n_ign > 0)
                PROBLEM(c, "(%s, %s) is ignored but an unguarded row always matches", S(s), E(e));
        }
    }
}

static void check_rows(struct checker *c, const struct preempt_machine_def *m)
{
    for (size_t i = 0; i < m->n_rows; i++) {
        const struct preempt_row *r = &m->rows[i];
        enum preempt_timer_kind tf = preempt_state_timer_(r->from), tt = preempt_state_timer_(r->to);
        int exits = count_fx(r, PREEMPT_FX_EXIT);

        if (r->from == m->final)
            PROBLEM(c, "row %zu leaves the final state %s", i, S(r->from));
        if (r->to == m->final && (exits != 1 || r->fx[r->n_fx - 1].kind != PREEMPT_FX_EXIT))
            PROBLEM(c, "row %zu (%s, %s) enters %s without exactly one exit effect, last", i, S(r->from),
                    E(r->on), S(m->final));
        if (r->to != m->final && exits != 0)
            PROBLEM(c, "row %zu (%s, %s) decides an exit but stays in %s", i, S(r->from), E(r->on), S(r->to));
        if (tt != PREEMPT_TIMER_NONE && tt != tf && count_fx(r, PREEMPT_FX_ARM_TIMER) != 1)
            PROBLEM(c, "row %zu (%s -> %s) changes what the timer bounds but does not arm it", i, S(r->from),
                    S(r->to));
        if (tt == PREEMPT_TIMER_NONE && count_fx(r, PREEMPT_FX_ARM_TIMER) != 0)
            PROBLEM(c, "row %zu (%s -> %s) arms a timer in a state without one", i, S(r->from), S(r->to));
        if (tt == PREEMPT_TIMER_NONE && tf != PREEMPT_TIMER_NONE && count_fx(r, PREEMPT_FX_DISARM_TIMER) != 1)
            PROBLEM(c, "row %zu (%s -> %s) leaves a timed state without disarming", i, S(r->from), S(r->to));
        if (tf == PREEMPT_TIMER_NONE && count_fx(r, PREEMPT_FX_DISARM_TIMER) != 0)
            PROBLEM(c, "row %zu (%s -> %s) disarms a timer that cannot be armed", i, S(r->from), S(r->to));
        for (unsigned k = 0; k < r->n_fx; k++) {
            enum preempt_fx_how h = r->fx[k].how;
            bool ok = h == PREEMPT_HOW_DEFAULT;

            if (r->fx[k].kind == PREEMPT_FX_EXIT) {
                ok = h == PREEMPT_HOW_DONE || h == PREEMPT_HOW_SAVED || h == PREEMPT_HOW_ABORT ||
                     h == PREEMPT_HOW_ERROR;
            } else if (r->fx[k].kind == PREEMPT_FX_PUBLISH_ERROR) {
                const struct preempt_param_desc *p = preempt_event_params_(r->on);
                ok = h == PREEMPT_HOW_PROTOCOL ||
                     (h == PREEMPT_HOW_EVENT && (p[0].type == PREEMPT_PT_i64 || p[1].type == PREEMPT_PT_i64));
            }
            if (!ok)
                PROBLEM(c, "row %zu (%s, %s): effect %s cannot take \"%s\"", i, S(r->from), E(r->on),
                        preempt_fx_to_string_(r->fx[k].kind), preempt_how_to_string_(h));
        }
    }
}

/* Marks the states reachable from `start` along rows, forwards or backwards. */
static void reach(const struct preempt_machine_def *m, enum preempt_state start, bool backwards,
                  bool seen[PREEMPT_STATE__COUNT])
{
    enum preempt_state stack[PREEMPT_STATE__COUNT];
    unsigned top = 0;

    seen[start] = true;
    stack[top++] = start;
    while (top > 0) {
        enum preempt_state s = stack[--top];
        for (size_t i = 0; i < m->n_rows; i++) {
            enum preempt_state a = backwards ? m->rows[i].to : m->rows[i].from;
            enum preempt_state b = backwards ? m->rows[i].from : m->rows[i].to;
            if (a == s && !seen[b]) {
                seen[b] = true;
                stack[top++] = b;
            }
        }
    }
}

static void check_reachability(struct checker *c, const struct preempt_machine_def *m)
{
    bool fwd[PREEMPT_STATE__COUNT] = { false }, back[PREEMPT_STATE__COUNT] = { false };

    reach(m, m->initial, false, fwd);
    reach(m, m->final, true, back);
    for (int s = 0; s < PREEMPT_STATE__COUNT; s++) {
        if (!fwd[s])
            PROBLEM(c, "state %s is unreachable from %s", S(s), S(m->initial));
        if (!back[s])
            PROBLEM(c, "state %s cannot reach %s", S(s), S(m->final));
    }
}

unsigned preempt_fsm_check_def_(const struct preempt_machine_def *m, void (*report)(const char *msg, void *arg),
                                void *arg)
{
    struct checker c = { report, arg, 0 };

    check_pairs(&c, m);
    check_rows(&c, m);
    check_reachability(&c, m);
    return c.problems;
}

unsigned preempt_fsm_check_(void (*report)(const char *msg, void *arg), void *arg)
{
    return preempt_fsm_check_def_(preempt_fsm_def_(), report, arg);
}
