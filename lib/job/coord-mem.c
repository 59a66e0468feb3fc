/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord-mem.c: the running coordinator's memory: its state's setup
 * and teardown, and the records of later episodes, which it holds (one per
 * key, the latest value) until this worker gets to their episode, then
 * applies in the order they came. Holding them is the only allocation in
 * the coordinator's step: how many such records come, and how long their
 * values are, is the job's (a worker an episode behind its peers holds up
 * to one record per worker of each later episode), and fixed room for the
 * worst case would cost every worker of a large job more than its whole
 * view. tests/fsm-purity.sh checks that no other file of the step
 * allocates. */
#include "coord-state.h"

static struct held *held_find(struct preempt_coord *c, const char *key)
{
    for (size_t i = 0; i < c->n_held; i++)
        if (!strcmp(c->held[i].key, key))
            return &c->held[i];
    return NULL;
}

/* Keeps the others in the order they came: an episode's records are
 * applied as they landed (a notice before the step its claim proposed). */
static void held_drop(struct preempt_coord *c, struct held *h)
{
    free(h->key);
    free(h->value);
    memmove(h, h + 1, (size_t)(&c->held[--c->n_held] - h) * sizeof(*h));
}

/* A record of an episode this worker has not reached yet: kept (one per
 * key, the latest value) until it gets there. A delete just forgets. */
void coord_hold(struct preempt_coord *c, enum preempt_etcd_ev type, uint64_t ep, const struct preempt_etcd_kv *kv)
{
    struct held *h = held_find(c, kv->key);
    char *value;

    if (type != PREEMPT_ETCD_PUT) {
        if (h)
            held_drop(c, h);
        return;
    }
    value = strdup(kv->value ? kv->value : "");
    if (value && h) {
        free(h->value);
        h->value = value;
        return;
    }
    if (value && c->n_held == c->cap_held) {
        size_t cap = c->cap_held ? 2 * c->cap_held : 16;
        struct held *more = realloc(c->held, cap * sizeof(*more));

        if (more) {
            c->held = more;
            c->cap_held = cap;
        }
    }
    h = c->n_held < c->cap_held ? &c->held[c->n_held] : NULL;
    if (!value || !h || !(h->key = strdup(kv->key))) {
        free(value);
        CLOG(c, 3, "out of memory: %s of a later episode is lost to this worker", kv->key);
        return;
    }
    h->ep = ep;
    h->value = value;
    c->n_held++;
}

void coord_held_replay(struct preempt_coord *c)
{
    size_t keep = 0;

    /* In the order they came, in one pass: the ones of this episode are
     * applied (the machine is draining: what this posts waits in its
     * queue, and nothing here holds a record again), later ones kept. */
    c->replaying = true;
    for (size_t i = 0, n = c->n_held; i < n; i++) {
        struct held h = c->held[i];

        if (h.ep > c->view.ep) {
            c->held[keep++] = h;
            continue;
        }
        if (h.ep == c->view.ep)
            coord_apply_record(c, PREEMPT_ETCD_PUT, &(struct preempt_etcd_kv){ .key = h.key, .value = h.value });
        free(h.key);
        free(h.value);
    }
    c->n_held = keep;
    c->replaying = false;
    coord_flush_merged(c);
}

void coord_held_free(struct preempt_coord *c)
{
    for (size_t i = 0; i < c->n_held; i++) {
        free(c->held[i].key);
        free(c->held[i].value);
    }
    free(c->held);
    c->held = NULL;
    c->n_held = c->cap_held = 0;
}

/* ---- setup and teardown --------------------------------------------------------------------------- */

int coord_init(struct preempt_coord *c, const struct preempt_coord_cfg *cfg, const struct preempt_coord_join *join)
{
    unsigned n = cfg->workers;
    int r;

    c->me = cfg->worker;
    c->n = n;
    c->ttl_s = c->cfg_ttl_s = cfg->lease_ttl_s;
    c->give_up_ms = cfg->give_up_ms;
    c->decl_trace = cfg->decl_trace;
    c->lease = join->lease;
    c->member = join->member; /* none (a replay's, a test's): its puts are refused, as the port refuses "" */
    r = preempt_coord_prefix_(cfg->job, c->jobp, sizeof(c->jobp));
    if (r == 0)
        r = preempt_view_init_(&c->view, c->jobp, join->incarnation, n, c->me);
    CRANGE(c, c->pre, INC, 0);
    c->absent = calloc((n + 7) / 8, 1);
    c->lost = (struct preempt_lost){ .n = n, .me = c->me, .gone_at = calloc(n, sizeof(uint64_t)) };
    if (r == 0 && (!c->absent || !c->lost.gone_at))
        r = -ENOMEM;
    return r;
}

void coord_fini(struct preempt_coord *c)
{
    coord_held_free(c);
    preempt_view_free_(&c->view);
    free(c->absent);
    free(c->lost.gone_at);
}
