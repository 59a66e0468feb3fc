/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/decl.c: the coordinator's small declared machines (decl-internal.h).
 * Pure. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "claim-internal.h"
#include "decision-internal.h"
#include "decl-internal.h"
#include "episode-internal.h"
#include "joining-internal.h"
#include "lease-internal.h"
#include "membership-internal.h"
#include "outcome-internal.h"
#include "phase-internal.h"
#include "pub-internal.h"
#include "restore-internal.h"
#include "watch-internal.h"

const struct preempt_decl *const preempt_decls_[] = { &preempt_pub_decl_, &preempt_claim_decl_, &preempt_mship_decl_,
                                                      &preempt_lease_decl_, &preempt_watch_decl_, &preempt_roll_decl_,
                                                      &preempt_await_decl_,
                                                      &preempt_ep_decl_, &preempt_out_decl_,
                                                      &preempt_pend_decl_, &preempt_offer_decl_, &preempt_attempt_decl_,
                                                      &preempt_shape_decl_, &preempt_rst_decl_, &preempt_dec_decl_, NULL };

unsigned preempt_decl_step_(const struct preempt_decl *m, unsigned *state, unsigned input, bool *listed)
{
    *listed = false;
    for (size_t i = 0; i < m->n_rows; i++)
        if (m->rows[i].from == *state && m->rows[i].input == input) {
            *listed = true;
            *state = m->rows[i].to;
            return m->rows[i].action;
        }
    return 0; /* declared ignored, or a terminal state's (preempt_decl_check_ finds no other) */
}

static bool has_row(const struct preempt_decl *m, unsigned state, unsigned input)
{
    for (size_t i = 0; i < m->n_rows; i++)
        if (m->rows[i].from == state && m->rows[i].input == input)
            return true;
    return false;
}

const char *preempt_decl_why_ignored_(const struct preempt_decl *m, unsigned state, unsigned input)
{
    if (state >= m->n_states || input >= m->n_inputs || has_row(m, state, input))
        return NULL;
    for (size_t i = 0; i < m->n_ignored; i++)
        if (m->ignored[i].input == input && (m->ignored[i].states >> state & 1u))
            return m->ignored[i].why;
    return m->terminal >> state & 1u ? "a terminal state: the machine has ended" : NULL;
}

#define PROBLEM(...) PREEMPT_CHECK_PROBLEM(line, report, arg, __VA_ARGS__)

unsigned preempt_decl_check_(const struct preempt_decl *m, void (*report)(const char *problem, void *arg), void *arg)
{
    bool from0[32] = { [0] = true }, to0[32] = { [0] = true };
    unsigned problems = 0;
    char line[320];

    if (m->n_states > 32)
        return PROBLEM("%s: more states than a state mask holds", m->name);
    for (unsigned st = 0; st < m->n_states; st++)
        to0[st] = to0[st] || (m->terminal >> st & 1u); /* an end is a way out too */
    for (bool more = true; more;) {
        more = false;
        for (size_t i = 0; i < m->n_rows; i++) {
            if (from0[m->rows[i].from] && !from0[m->rows[i].to])
                from0[m->rows[i].to] = more = true;
            if (to0[m->rows[i].to] && !to0[m->rows[i].from])
                to0[m->rows[i].from] = more = true;
        }
    }
    for (size_t i = 0; i < m->n_rows; i++)
        if (m->terminal >> m->rows[i].from & 1u && m->rows[i].to != m->rows[i].from)
            problems += PROBLEM("%s: a row leaves %s, a terminal state", m->name,
                                preempt_decl_state_(m, m->rows[i].from));
    for (unsigned st = 0; st < m->n_states; st++) {
        if (!from0[st])
            problems += PROBLEM("%s: %s is not reachable from %s", m->name, preempt_decl_state_(m, st),
                                preempt_decl_state_(m, 0));
        if (!to0[st])
            problems += PROBLEM("%s: neither %s nor a terminal state is reachable from %s", m->name,
                                preempt_decl_state_(m, 0), preempt_decl_state_(m, st));
    }
    for (size_t i = 0; i < m->n_rows; i++)
        for (size_t j = 0; j < i; j++)
            if (m->rows[j].from == m->rows[i].from && m->rows[j].input == m->rows[i].input)
                problems += PROBLEM("%s: (%s, %s) is listed twice", m->name, preempt_decl_state_(m, m->rows[i].from),
                                    preempt_decl_input_(m, m->rows[i].input));
    for (unsigned st = 0; st < m->n_states; st++)
        for (unsigned in = 0; in < m->n_inputs; in++) {
            const char *sn = preempt_decl_state_(m, st), *iname = preempt_decl_input_(m, in);
            bool row = has_row(m, st, in), terminal = m->terminal >> st & 1u;
            unsigned declared = 0;

            for (size_t i = 0; i < m->n_ignored; i++)
                declared += m->ignored[i].input == in && (m->ignored[i].states >> st & 1u);
            if (declared && row)
                problems += PROBLEM("%s: (%s, %s) is a row, and declared ignored", m->name, sn, iname);
            else if (declared && terminal)
                problems += PROBLEM("%s: (%s, %s) is declared ignored, but a terminal state ignores every input "
                                    "already", m->name, sn, iname);
            else if (declared > 1)
                problems += PROBLEM("%s: (%s, %s) is declared ignored twice", m->name, sn, iname);
            else if (!declared && !row && !terminal)
                problems += PROBLEM("%s: (%s, %s) is neither a row nor declared ignored", m->name, sn, iname);
        }
    for (size_t i = 0; i < m->n_ignored; i++)
        if (!m->ignored[i].why || !m->ignored[i].why[0] || m->ignored[i].input >= m->n_inputs ||
            !m->ignored[i].states || m->ignored[i].states >> m->n_states)
            problems += PROBLEM("%s: ignored entry %zu (input %s) has no reason, or names no state of it", m->name,
                                i, preempt_decl_input_(m, m->ignored[i].input));
    return problems;
}

static const char *text_of(const char *const *texts, unsigned n, unsigned i)
{
    return i < n ? texts[i] : "?";
}

const char *preempt_decl_state_(const struct preempt_decl *m, unsigned s)
{
    return text_of(m->state_names, m->n_states, s);
}

const char *preempt_decl_input_(const struct preempt_decl *m, unsigned in)
{
    return text_of(m->input_names, m->n_inputs, in);
}

const char *preempt_decl_action_(const struct preempt_decl *m, unsigned a)
{
    return text_of(m->action_names, m->n_actions, a);
}

unsigned preempt_decl_step_traced_(const struct preempt_decl *m, unsigned instance, unsigned *state, unsigned input,
                                   bool *listed, const struct preempt_decl_tracer *tr)
{
    unsigned from = *state, a = preempt_decl_step_(m, state, input, listed);

    if (*listed && tr && tr->fn)
        tr->fn(m, instance, from, input, *state, a, tr->arg);
    return a;
}

static bool same(const char *a, const char *b)
{
    size_t n = strlen(a);

    return n == strlen(b) && memcmp(a, b, n) == 0;
}

static int index_of(const char *const *names, unsigned n, const char *name)
{
    for (unsigned i = 0; i < n; i++)
        if (same(names[i], name))
            return (int)i;
    return -1;
}

const struct preempt_decl *preempt_decl_find_(const char *name)
{
    for (const struct preempt_decl *const *m = preempt_decls_; *m; m++)
        if (same((*m)->name, name))
            return *m;
    return NULL;
}

int preempt_decl_state_index_(const struct preempt_decl *m, const char *name)
{
    return index_of(m->state_names, m->n_states, name);
}

int preempt_decl_input_index_(const struct preempt_decl *m, const char *name)
{
    return index_of(m->input_names, m->n_inputs, name);
}

int preempt_decl_action_index_(const struct preempt_decl *m, const char *name)
{
    return index_of(m->action_names, m->n_actions, name);
}
