/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/decl.c: the coordinator's small declared machines (decl-internal.h).
 * Pure. */
#include <stdbool.h>
#include <stddef.h>
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
                                                      &preempt_pend_decl_, &preempt_offer_decl_,
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
    return 0; /* ignored on purpose */
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
