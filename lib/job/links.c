/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/links.c: how the coordinator's machines drive each other
 * (links-internal.h). Pure. */
#include <stdio.h>

#include "links-internal.h"

const struct preempt_link preempt_links_[PREEMPT_LINK__COUNT] = {
#define PREEMPT_LINK_DEF_(id, name, from, when) [PREEMPT_LINK_##id] = { name, when, PREEMPT_LINK_FROM_##from },
    PREEMPT_LINKS(PREEMPT_LINK_DEF_)
#undef PREEMPT_LINK_DEF_
};

#define PREEMPT_LINK_ROW_(link, m, in) { PREEMPT_LINK_##link, PREEMPT_LINK_M_##m, in },
const struct preempt_link_row preempt_link_rows_[] = { PREEMPT_LINK_ROWS(PREEMPT_LINK_ROW_) };
const size_t preempt_n_link_rows_ = sizeof(preempt_link_rows_) / sizeof(preempt_link_rows_[0]);
const struct preempt_link_row preempt_link_actions_[] = { PREEMPT_LINK_ACTIONS(PREEMPT_LINK_ROW_) };
const size_t preempt_n_link_actions_ = sizeof(preempt_link_actions_) / sizeof(preempt_link_actions_[0]);
#undef PREEMPT_LINK_ROW_

bool preempt_link_posts_(enum preempt_link_id link, enum preempt_link_m m, unsigned input)
{
    for (size_t i = 0; i < preempt_n_link_rows_; i++)
        if (preempt_link_rows_[i].link == link && preempt_link_rows_[i].m == m && preempt_link_rows_[i].input == input)
            return true;
    return false;
}

const struct preempt_decl *preempt_link_machine_(enum preempt_link_m m)
{
    switch (m) {
    case PREEMPT_LINK_M_PUB:
        return &preempt_pub_decl_;
    case PREEMPT_LINK_M_CLAIM:
        return &preempt_claim_decl_;
    case PREEMPT_LINK_M_MSHIP:
        return &preempt_mship_decl_;
    case PREEMPT_LINK_M_LEASE:
        return &preempt_lease_decl_;
    case PREEMPT_LINK_M_WATCH:
        return &preempt_watch_decl_;
    case PREEMPT_LINK_M_ROLL:
        return &preempt_roll_decl_;
    case PREEMPT_LINK_M_EP:
        return &preempt_ep_decl_;
    case PREEMPT_LINK_M_DEC:
        return &preempt_dec_decl_;
    case PREEMPT_LINK_M_OFFER:
        return &preempt_offer_decl_;
    case PREEMPT_LINK_M_ATTEMPT:
        return &preempt_attempt_decl_;
    case PREEMPT_LINK_M_SHAPE:
        return &preempt_shape_decl_;
    case PREEMPT_LINK_M_AWAIT:
        return &preempt_await_decl_;
    case PREEMPT_LINK_M_PEND:
        return &preempt_pend_decl_;
    case PREEMPT_LINK_M_RST:
        return &preempt_rst_decl_;
    case PREEMPT_LINK_M_HANDLER:
    case PREEMPT_LINK_M__COUNT:
        break;
    }
    return NULL;
}

const char *preempt_link_machine_name_(enum preempt_link_m m)
{
    const struct preempt_decl *d = preempt_link_machine_(m);

    return d ? d->name : m == PREEMPT_LINK_M_HANDLER ? "handler" : "?";
}

const char *preempt_link_input_name_(enum preempt_link_m m, unsigned input)
{
    const struct preempt_decl *d = preempt_link_machine_(m);

    if (d)
        return preempt_decl_input_(d, input);
    return m == PREEMPT_LINK_M_HANDLER && input < PREEMPT_EV__COUNT
               ? preempt_event_to_string_((enum preempt_event_kind)input)
               : "?";
}

const char *preempt_link_from_name_(enum preempt_link_from from)
{
    static const char *const names[PREEMPT_LINK_FROM__COUNT] = {
        [PREEMPT_LINK_FROM_ETCD] = "etcd",       [PREEMPT_LINK_FROM_RECORDS] = "the records",
        [PREEMPT_LINK_FROM_HANDLER] = "handler", [PREEMPT_LINK_FROM_TRAINER] = "the trainer",
        [PREEMPT_LINK_FROM_CLOCK] = "the clock", [PREEMPT_LINK_FROM_MACHINE] = "a machine's action",
        [PREEMPT_LINK_FROM_OUTCOME] = "start-up's outcome",
    };

    return from < PREEMPT_LINK_FROM__COUNT ? names[from] : "?";
}

#define PROBLEM(...) PREEMPT_CHECK_PROBLEM(line, report, arg, __VA_ARGS__)

unsigned preempt_link_check_(void (*report)(const char *problem, void *arg), void *arg)
{
    unsigned problems = 0;
    char line[256];

    for (size_t i = 0; i < preempt_n_link_rows_; i++) {
        const struct preempt_link_row *r = &preempt_link_rows_[i];
        const struct preempt_decl *d = preempt_link_machine_((enum preempt_link_m)r->m);
        unsigned n = d ? d->n_inputs : (unsigned)PREEMPT_EV__COUNT;

        if (r->input >= n)
            problems += PROBLEM("link %s: input %u is none of %s's", preempt_links_[r->link].name, r->input,
                                preempt_link_machine_name_((enum preempt_link_m)r->m));
        for (size_t j = 0; j < i; j++)
            if (preempt_link_rows_[j].link == r->link && preempt_link_rows_[j].m == r->m &&
                preempt_link_rows_[j].input == r->input)
                problems += PROBLEM("link %s: %s %s is listed twice", preempt_links_[r->link].name,
                                    preempt_link_machine_name_((enum preempt_link_m)r->m),
                                    preempt_link_input_name_((enum preempt_link_m)r->m, r->input));
    }
    for (size_t i = 0; i < preempt_n_link_actions_; i++) {
        const struct preempt_link_row *r = &preempt_link_actions_[i];
        const struct preempt_decl *d = preempt_link_machine_((enum preempt_link_m)r->m);

        if (!d || r->input >= d->n_actions || preempt_links_[r->link].from != PREEMPT_LINK_FROM_MACHINE)
            problems += PROBLEM("link %s: started by no action of a declared machine", preempt_links_[r->link].name);
    }
    for (unsigned l = 0; l < PREEMPT_LINK__COUNT; l++) {
        bool rows = false, started = preempt_links_[l].from != PREEMPT_LINK_FROM_MACHINE;

        for (size_t i = 0; i < preempt_n_link_rows_; i++)
            rows = rows || preempt_link_rows_[i].link == l;
        for (size_t i = 0; i < preempt_n_link_actions_; i++)
            started = started || preempt_link_actions_[i].link == l;
        if (!rows || !started)
            problems += PROBLEM("link %s: %s", preempt_links_[l].name,
                                rows ? "no action starts it" : "it posts nothing");
    }
    for (unsigned m = 0; m < PREEMPT_LINK_M_HANDLER; m++) {
        const struct preempt_decl *d = preempt_link_machine_((enum preempt_link_m)m);

        for (unsigned in = 0; in < d->n_inputs; in++) {
            bool fed = false;

            for (size_t i = 0; i < preempt_n_link_rows_ && !fed; i++)
                fed = preempt_link_rows_[i].m == m && preempt_link_rows_[i].input == in;
            if (!fed)
                problems += PROBLEM("%s: no link posts its input %s", d->name, preempt_decl_input_(d, in));
        }
    }
    return problems;
}
