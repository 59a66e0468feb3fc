/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/offers.c: what the members' records say at start-up (coord-internal.h):
 * a member's value and its offer (the steps of the checkpoints it holds),
 * the barrier's plan from every member's offer, and who a record names.
 * Pure: strings in, values out. lib/job/startup.c reads and writes them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord-internal.h"
#include "records/records.h"

/* A member record's launch, copied into buf: "" when v is no member
 * record. */
const char *preempt_member_launch_(const char *v, char *buf, size_t size)
{
    struct preempt_rv_alive m;
    const char *why;

    buf[0] = '\0';
    if (v && preempt_rv_alive_read_(v, PREEMPT_MAX_WORKERS, &m, &why) == 0)
        (void)snprintf(buf, size, "%.*s", (int)(m.launch_len < size ? m.launch_len : size - 1), m.launch);
    return buf;
}

/* The steps a member record offers ("... steps=a,b,c"), by its grammar:
 * none when it does not read. */
static size_t parse_offer(const char *v, uint64_t *steps, size_t max)
{
    struct preempt_rv_alive m;
    const char *why;
    bool more;

    if (!v || preempt_rv_alive_read_(v, PREEMPT_MAX_WORKERS, &m, &why) < 0)
        return 0;
    return preempt_rv_list_(m.steps, m.steps_len, steps, max, &more);
}

static bool offered(const uint64_t *steps, size_t n, uint64_t s)
{
    for (size_t i = 0; i < n; i++)
        if (steps[i] == s)
            return true;
    return false;
}

/* Whether member record v asks to start over ("over=1"). */
static bool asks_over(const char *v)
{
    struct preempt_rv_alive m;
    const char *why;

    return v && preempt_rv_alive_read_(v, PREEMPT_MAX_WORKERS, &m, &why) == 0 && m.over;
}

void preempt_coord_plan_(const char *const *offers, const unsigned *idx, size_t n, struct preempt_coord_plan *ret)
{
    uint64_t m[MAX_STEPS_OFFERED], theirs[MAX_STEPS_OFFERED];

    *ret = (struct preempt_coord_plan){ 0 };
    for (size_t k = 0; k < n; k++) {
        size_t nt = parse_offer(offers[k], theirs, MAX_STEPS_OFFERED);

        ret->over |= asks_over(offers[k]);
        for (size_t i = 0; i < nt; i++)
            if (theirs[i] > ret->newest || !ret->held) {
                ret->newest = theirs[i];
                ret->held = true;
            }
    }
    /* the restore step: the newest step every offer holds */
    for (size_t i = 0, n0 = n ? parse_offer(offers[0], m, MAX_STEPS_OFFERED) : 0; i < n0; i++) {
        bool all = true;

        for (size_t k = 1; k < n && all; k++) {
            size_t nt = parse_offer(offers[k], theirs, MAX_STEPS_OFFERED);

            all = offered(theirs, nt, m[i]);
        }
        if (all && (!ret->have || m[i] > ret->step)) {
            ret->have = true;
            ret->step = m[i];
        }
    }
    ret->at_risk = ret->held && (!ret->have || ret->newest > ret->step);
    for (size_t k = 0; ret->at_risk && k < n; k++) {
        size_t nt = parse_offer(offers[k], theirs, MAX_STEPS_OFFERED);

        if (!offered(theirs, nt, ret->newest)) {
            if (ret->n_lacking < PREEMPT_PLAN_LACKING_MAX)
                ret->lacking[ret->n_lacking] = idx[k];
            ret->n_lacking++;
        }
    }
}

struct indexed_offer {
    unsigned idx;
    const char *offer;
};

static int by_index(const void *a, const void *b)
{
    unsigned x = ((const struct indexed_offer *)a)->idx, y = ((const struct indexed_offer *)b)->idx;

    return x < y ? -1 : x > y;
}

/* Orders offers[0..n) (and idx with them) by worker index: the range
 * comes in text order (1, 10, 11, 2), and the workers a refusal names
 * should read in order. Left as they are when out of memory. */
void preempt_offers_sort_(const char **offers, unsigned *idx, size_t n)
{
    struct indexed_offer *v = calloc(n ? n : 1, sizeof(*v));

    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        v[i] = (struct indexed_offer){ idx[i], offers[i] };
    qsort(v, n, sizeof(*v), by_index);
    for (size_t i = 0; i < n; i++) {
        idx[i] = v[i].idx;
        offers[i] = v[i].offer;
    }
    free(v);
}

int preempt_coord_member_(struct preempt_value *v, long pid, const char *host, const char *launch, unsigned workers,
                          bool over, const uint64_t *steps, size_t n_steps)
{
    const char *why;

    return preempt_rv_alive_write_(v,
                                   &(struct preempt_rv_alive){
                                       .pid = pid > 0 ? (uint64_t)pid : 0, .host = host && *host ? host : "-",
                                       .launch = launch && *launch ? launch : "-", .workers = workers, .over = over,
                                       .steps_v = steps,
                                       .steps_n = n_steps < MAX_STEPS_OFFERED ? n_steps : MAX_STEPS_OFFERED },
                                   PREEMPT_MAX_WORKERS, &why);
}

/* "pid 12 on host h" of a member record, for messages. */
const char *preempt_member_who_(const char *v, char *buf, size_t size)
{
    struct preempt_rv_alive m;
    const char *why;

    if (!v || preempt_rv_alive_read_(v, PREEMPT_MAX_WORKERS, &m, &why) < 0)
        (void)snprintf(buf, size, "pid ? on host ?, launch -");
    else
        (void)snprintf(buf, size, "pid %" PRIu64 " on host %.*s, launch %.*s", m.pid, (int)m.host_len, m.host,
                       (int)m.launch_len, m.launch);
    return buf;
}
