/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/startup-shell.c: start-up's shell. The core (lib/job/startup.c)
 * takes typed inputs (startup-inputs.def) and makes typed outputs
 * (startup-outputs.def); it calls no port and reads no clock. This file is
 * everything around it, as coord-shell.c is the running coordinator's: it
 * makes each input of what the port delivers (an answer, the awaited
 * record's watch, the timer), stamps it with the port's clock, and runs
 * each output through the typed port (struct preempt_coord_io:
 * lib/handler/coord-io.c's libevent and libcurl adapter, or the
 * simulator's).
 *
 * The core runs to completion: the outputs of one input are kept (copied,
 * in the order made) until its step returns, and only then run. An input
 * that running one causes (a request the port refuses at once) is fed then,
 * and its own outputs run before the rest of the first input's. The
 * release output ends the phase: the shell stops running outputs, and
 * once no step is under way frees the phase and calls done(status), the
 * last use of it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "startup-state.h"

/* An output the core made, kept until its step returns. */
struct made {
    struct preempt_startup_out o;
    struct preempt_etcd_req *req; /* o.ask's request (the wire's), copied */
    char *key;                    /* o.key's copy */
};

/* An answer's input kind: its callback's argument. */
struct su_token {
    struct su_shell *sh;
    enum preempt_startup_in_kind kind;
};

struct su_shell {
    struct join j; /* the core's state */
    const struct preempt_coord_io *io;
    void *io_arg;
    struct su_token tok[PREEMPT_STARTUP_IN__COUNT];
    uint64_t *steps; /* owned: the phase's copy of the offered steps */
    struct made *made;
    size_t n_made, cap_made;
    unsigned depth;    /* steps or output runs under way */
    bool released;     /* the core released the phase: nothing more runs */
    bool lost;         /* an output could not be kept (out of memory): the phase fails */
    int status;        /* the release's */
    preempt_coord_done done;
    void *done_arg;
};

static void drain(struct su_shell *sh, size_t base);
static void release(struct su_shell *sh);

/* Stamps in with the port's clock, hands it to the core, then runs what
 * the core made of it. */
static void feed(struct su_shell *sh, struct preempt_startup_in in)
{
    size_t base = sh->n_made;

    if (sh->released)
        return;
    in.now_ms = sh->io->mono_ms(sh->io_arg);
    sh->depth++;
    preempt_startup_input_(&sh->j, &in);
    drain(sh, base);
    sh->depth--;
    if (sh->released && sh->depth == 0)
        release(sh);
}

/* ---- the port's callbacks: each makes its typed input, nothing more ---------------------------- */

/* An answer: its reply read as the typed records it holds (the wire's);
 * one without what was asked is a failure. */
static void answered(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    const struct su_token *t = arg;
    struct preempt_su_answer a;
    const char *why;

    if (status == 0 && (status = preempt_su_answer_(t->kind, r, &a, &why)) < 0)
        msg = why;
    feed(t->sh, (struct preempt_startup_in){ .kind = t->kind, .status = status, .answer = status == 0 ? &a : NULL,
                                             .msg = msg });
}

static void watched(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    feed(arg, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_AWAIT_EVENT, .ev = type, .kv = kv });
}

static void reread(struct preempt_etcd_kv *kvs, size_t n, int64_t rev, uint64_t cluster, void *arg)
{
    (void)rev, (void)cluster;
    feed(arg, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_AWAIT_RESET, .kvs = kvs, .n = n });
}

static void linked(bool up, const char *why, void *arg)
{
    (void)why;
    feed(arg, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_AWAIT_LINK, .up = up });
}

static void ticked(void *arg)
{
    feed(arg, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_TICK });
}

/* ---- the outputs ------------------------------------------------------------------------------ */

static void run(struct su_shell *sh, const struct made *m)
{
    static const struct preempt_etcd_watch_ops ops = { .on_event = watched, .on_reset = reread, .on_link = linked };
    const struct preempt_startup_out *o = &m->o;
    int r;

    switch (o->kind) {
    case PREEMPT_STARTUP_OUT_REQUEST: {
        struct su_token *t = o->answer < PREEMPT_STARTUP_IN__COUNT ? &sh->tok[o->answer] : NULL;

        r = sh->io->request(sh->io_arg, m->req, o->ms, t ? answered : NULL, t);
        if (r < 0 && t) /* refused at once: its answer is its failure */
            feed(sh, (struct preempt_startup_in){ .kind = t->kind, .status = r, .unsent = true,
                                                  .msg = preempt_coord_refused_(r) });
        return;
    }
    case PREEMPT_STARTUP_OUT_WATCH:
        r = sh->io->watch(sh->io_arg, o->key, NULL, &ops, sh);
        if (r < 0)
            feed(sh, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_UNWATCHED, .status = r });
        return;
    case PREEMPT_STARTUP_OUT_TIMER:
        sh->io->timer(sh->io_arg, o->ms ? o->ms : 1, ticked, sh);
        return;
    case PREEMPT_STARTUP_OUT_RELEASE:
        sh->released = true;
        sh->status = o->status;
        return;
    case PREEMPT_STARTUP_OUT__COUNT:
        break;
    }
}

/* The core's sink: each output is kept, copied, until the step returns.
 * One that cannot be kept (out of memory) fails the phase once the step
 * returns: a lost request would leave it waiting for its bound. */
static void collect(void *arg, const struct preempt_startup_out *o)
{
    struct su_shell *sh = arg;
    struct made *m;
    struct preempt_su_wire w;

    if (sh->n_made == sh->cap_made) {
        size_t cap = sh->cap_made ? 2 * sh->cap_made : 8;
        struct made *more = realloc(sh->made, cap * sizeof(*more));

        if (!more) {
            sh->lost = true;
            return;
        }
        sh->made = more;
        sh->cap_made = cap;
    }
    m = &sh->made[sh->n_made];
    *m = (struct made){ .o = *o };
    m->o.ask = NULL; /* the step's: its request is kept instead */
    if (o->ask && (preempt_su_request_(sh->j.jobp, o->ask, &w) < 0 || !(m->req = preempt_etcd_req_copy_(&w.req)))) {
        sh->lost = true;
        return;
    }
    if (o->key && !(m->o.key = m->key = strdup(o->key))) {
        preempt_etcd_req_free_(m->req);
        sh->lost = true;
        return;
    }
    sh->n_made++;
}

static void made_free(struct made *m)
{
    preempt_etcd_req_free_(m->req);
    free(m->key);
}

/* Runs the outputs made from base on, in order, until the phase is
 * released; then, when an output was lost, its input. */
static void drain(struct su_shell *sh, size_t base)
{
    for (size_t i = base; i < sh->n_made; i++) {
        struct made m = sh->made[i]; /* an input its run causes may move the array */

        sh->made[i] = (struct made){ 0 };
        if (!sh->released)
            run(sh, &m);
        made_free(&m);
    }
    sh->n_made = base;
    if (sh->lost && !sh->released) {
        sh->lost = false;
        feed(sh, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_LOST, .status = -ENOMEM });
    }
}

static void shell_free(struct su_shell *sh)
{
    sh->io->free(sh->io_arg);
    for (size_t i = 0; i < sh->n_made; i++)
        made_free(&sh->made[i]);
    free(sh->made);
    free(sh->steps);
    free(sh);
}

/* The phase is over: freed, then done(status), the last use of it. */
static void release(struct su_shell *sh)
{
    preempt_coord_done done = sh->done;
    void *done_arg = sh->done_arg;
    int status = sh->status;

    shell_free(sh);
    done(status, done_arg);
}

/* ---- life cycle ------------------------------------------------------------------------------- */

void preempt_coord_phase_cancel_(struct preempt_coord_phase *p)
{
    if (p)
        feed((struct su_shell *)p, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_CANCEL });
}

void preempt_coord_phase_free_(struct preempt_coord_phase *p)
{
    if (p)
        shell_free((struct su_shell *)p);
}

/* A phase of init's state over io (owned from here on, also on failure;
 * so are steps), begun: the begin's input runs its first step. NULL on
 * failure (*ret_r the error, init's msg why). */
static struct preempt_coord_phase *phase_begin(const struct join *init, uint64_t *steps,
                                               const struct preempt_coord_io *io, void *io_arg,
                                               preempt_coord_done done, void *done_arg, int *ret_r)
{
    struct su_shell *sh = calloc(1, sizeof(*sh));

    if (!sh) {
        *ret_r = -ENOMEM;
        (void)snprintf(init->msg, init->msg_size, "out of memory");
        free(steps);
        io->free(io_arg);
        return NULL;
    }
    sh->j = *init;
    sh->j.sink = collect;
    sh->j.sink_arg = sh;
    sh->j.steps = steps;
    sh->steps = steps;
    sh->io = io;
    sh->io_arg = io_arg;
    sh->done = done;
    sh->done_arg = done_arg;
    for (unsigned i = 0; i < PREEMPT_STARTUP_IN__COUNT; i++)
        sh->tok[i] = (struct su_token){ .sh = sh, .kind = (enum preempt_startup_in_kind)i };
    *ret_r = preempt_startup_init_(&sh->j);
    if (*ret_r < 0) {
        shell_free(sh);
        return NULL;
    }
    /* the begin never releases: the end runs from a later tick */
    feed(sh, (struct preempt_startup_in){ .kind = PREEMPT_STARTUP_IN_BEGIN });
    return (struct preempt_coord_phase *)sh;
}

int preempt_coord_join_begin_io_(const struct preempt_coord_io *io, void *io_arg, const struct preempt_coord_cfg *cfg,
                                 const uint64_t *steps, size_t n_steps, struct preempt_coord_pending *pend,
                                 size_t n_pend, struct preempt_coord_join *ret, char *msg, size_t msg_size,
                                 preempt_coord_done done, void *arg, struct preempt_coord_phase **ret_phase)
{
    struct join j = { .cfg = cfg, .begin = PREEMPT_STARTUP_JOIN, .bound_ms = cfg->join_timeout_ms, .msg = msg,
                      .msg_size = msg_size, .out = ret, .n_steps = n_steps, .pend = pend, .n_pend = n_pend };
    uint64_t *copy = NULL;
    int r;

    if (n_steps) { /* the phase outlives the caller's array */
        copy = malloc(n_steps * sizeof(*steps));
        if (!copy) {
            io->free(io_arg);
            return -ENOMEM;
        }
        memcpy(copy, steps, n_steps * sizeof(*steps));
    }
    *ret_phase = phase_begin(&j, copy, io, io_arg, done, arg, &r);
    return r;
}

int preempt_coord_restored_begin_io_(const struct preempt_coord_io *io, void *io_arg,
                                     const struct preempt_coord_cfg *cfg, struct preempt_coord_join *join, int mine,
                                     const char *why, uint64_t bound_ms, int *ret_outcome, char *verdict,
                                     size_t verdict_size, char *msg, size_t msg_size, preempt_coord_done done,
                                     void *arg, struct preempt_coord_phase **ret_phase)
{
    struct join j = { .cfg = cfg, .begin = PREEMPT_STARTUP_RESTORED, .bound_ms = bound_ms, .msg = msg,
                      .msg_size = msg_size, .out = join, .inc = join->incarnation, .lease = join->lease,
                      .restore_mine = mine, .restore_why = why, .ret_restored = ret_outcome, .verdict = verdict,
                      .verdict_size = verdict_size };
    int r;

    *ret_phase = phase_begin(&j, NULL, io, io_arg, done, arg, &r);
    return r;
}
