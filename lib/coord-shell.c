/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/coord-shell.c: the running coordinator's shell. The core (lib/coord.c,
 * coord-rounds.c, coord-effects.c) takes typed inputs (coord-inputs.def)
 * and makes typed outputs (coord-outputs.def); it calls no port, no owner
 * callback and no clock. This file is everything around it: it makes each
 * input of what the port and the shell deliver (an answer, a watch's
 * event, the tick; the machine's effects and what the handler learns),
 * stamps it with the clocks, and runs each output the core makes through
 * the typed port (struct preempt_coord_io: lib/coord-io.c's libevent and
 * libcurl adapter, or the simulator's) and the owner's callbacks (struct
 * preempt_coord_ops). */
#include "coord-state.h"

/* What a request's answer is: its input's kind and round (the port's
 * callback argument). */
struct coord_token {
    struct coord_shell *sh;
    enum preempt_coord_in_kind kind;
    unsigned round;
};

struct coord_shell {
    struct preempt_coord c; /* the core's state (first: the handle the owner holds is its address) */
    const struct preempt_coord_io *io;
    void *io_arg;
    struct coord_token tok[PREEMPT_COORD_IN__COUNT][2]; /* each answer's kind (and round): its callback's argument */
    struct preempt_coord_ops ops;
    void *arg;
    void (*gone)(unsigned worker, const char *why, void *arg); /* the members watch's owner */
    void *gone_arg;
    unsigned depth; /* inputs being handled (an output's input causes one inside another) */
};

static struct coord_shell *shell_of(const struct preempt_coord *c)
{
    return c->sink_arg;
}

/* Stamps in with the clocks and hands it to the core. */
static void feed(struct coord_shell *sh, struct preempt_coord_in in)
{
    in.now_ms = sh->ops.now_ms(sh->arg);
    in.wall_ms = sh->io->wall_ms(sh->io_arg);
    if (sh->ops.on_input)
        sh->ops.on_input(&in, sh->depth, sh->arg);
    sh->depth++;
    preempt_coord_input_(&sh->c, &in);
    sh->depth--;
}

/* ---- the port's callbacks: each makes its typed input, nothing more ---------------------------- */

static void answered(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    const struct coord_token *t = arg;

    feed(t->sh, (struct preempt_coord_in){ .kind = t->kind, .round = t->round, .status = status, .reply = r,
                                           .msg = msg });
}

/* A watch's callbacks, for both watches: the argument is the token of its
 * event input, and its read and link inputs follow it in coord-inputs.def. */
_Static_assert(PREEMPT_COORD_IN_RECORDS == PREEMPT_COORD_IN_RECORD + 1 &&
                   PREEMPT_COORD_IN_LINK == PREEMPT_COORD_IN_RECORD + 2 &&
                   PREEMPT_COORD_IN_MEMBERS_READ == PREEMPT_COORD_IN_MEMBER + 1 &&
                   PREEMPT_COORD_IN_MEMBERS_LINK == PREEMPT_COORD_IN_MEMBER + 2,
               "a watch's inputs are event, read, link, in that order");

static void watched(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    const struct coord_token *t = arg;

    feed(t->sh, (struct preempt_coord_in){ .kind = t->kind, .ev = type, .kv = kv });
}

static void reread(const struct preempt_etcd_kv *kvs, size_t n, int64_t rev, void *arg)
{
    const struct coord_token *t = arg;

    feed(t->sh, (struct preempt_coord_in){ .kind = t->kind + 1, .kvs = kvs, .n = n, .rev = rev });
}

static void linked(bool up, const char *why, void *arg)
{
    const struct coord_token *t = arg;

    feed(t->sh, (struct preempt_coord_in){ .kind = t->kind + 2, .up = up, .why = why });
}

static const struct preempt_etcd_watch_ops watch_ops = { .on_event = watched, .on_reset = reread,
                                                         .on_link = linked };

static void ticked(void *arg)
{
    feed(arg, (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_TICK });
}

/* ---- the outputs ------------------------------------------------------------------------------ */

static void run(void *arg, const struct preempt_coord_out *o)
{
    struct coord_shell *sh = arg;

    if (sh->ops.on_output && o->kind < PREEMPT_COORD_OUT_LOG) /* not the owner's log and trace lines */
        sh->ops.on_output(o, sh->depth ? sh->depth - 1 : 0, sh->arg);
    switch (o->kind) {
    case PREEMPT_COORD_OUT_REQUEST: {
        struct coord_token *t = o->answer == COORD_NO_ANSWER ? NULL : &sh->tok[o->answer][o->round ? 1 : 0];
        int r = sh->io->request(sh->io_arg, o->req, o->give_up_ms, t ? answered : NULL, t);

        if (r < 0 && t) /* refused at once: its answer is its failure */
            answered(r, NULL, preempt_coord_refused_(r), t);
        return;
    }
    case PREEMPT_COORD_OUT_TIMER:
        sh->io->timer(sh->io_arg, o->ms, o->ms ? ticked : NULL, o->ms ? sh : NULL);
        return;
    case PREEMPT_COORD_OUT_POST:
        sh->ops.post(&o->ev, sh->arg);
        return;
    case PREEMPT_COORD_OUT_JOB_SAVE:
        if (sh->ops.job_save)
            sh->ops.job_save(o->ms, sh->arg);
        return;
    case PREEMPT_COORD_OUT_JOB_PACE:
        if (sh->ops.job_pace)
            sh->ops.job_pace(o->pace, o->ms, sh->arg);
        return;
    case PREEMPT_COORD_OUT_ERROR_MSG:
        if (sh->ops.on_error_msg)
            sh->ops.on_error_msg(o->text, sh->arg);
        return;
    case PREEMPT_COORD_OUT_GONE:
        if (sh->gone)
            sh->gone(o->worker, o->text, sh->gone_arg);
        return;
    case PREEMPT_COORD_OUT_LOG:
        if (sh->ops.log)
            sh->ops.log(o->level, o->text, sh->arg);
        return;
    case PREEMPT_COORD_OUT_VIEW:
        if (sh->ops.on_view)
            sh->ops.on_view(&sh->c.view, o->view_in, o->view_ev, sh->arg);
        return;
    case PREEMPT_COORD_OUT_ANSWER:
        if (sh->ops.on_answer)
            sh->ops.on_answer(&sh->c.view, o->said, sh->arg);
        return;
    case PREEMPT_COORD_OUT__COUNT:
        break;
    }
}

/* ---- the shell's calls: each makes its typed input -------------------------------------------- */

bool preempt_coord_fx_(struct preempt_coord *c, const struct preempt_fx *fx, unsigned round, bool last,
                       uint64_t stop, uint64_t save_ms, struct preempt_pace pace, bool trains_on,
                       const char *text)
{
    bool ran = false;

    feed(shell_of(c), (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_EFFECT, .round = round, .fx = fx,
                                                 .last = last, .stop = stop, .save_ms = save_ms, .pace = pace,
                                                 .trains_on = trains_on, .text = text, .ran = &ran });
    return ran;
}

void preempt_coord_step_(struct preempt_coord *c, uint64_t step_ms)
{
    if (c && step_ms > c->longest_step_ms) /* the common case: nothing to tell */
        feed(shell_of(c), (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_STEP, .step_ms = step_ms });
}

void preempt_coord_withdraw_(struct preempt_coord *c, bool withdrawn)
{
    if (c)
        feed(shell_of(c), (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_WITHDRAW, .withdrawn = withdrawn });
}

void preempt_coord_live_(struct preempt_coord *c, const char *source)
{
    if (c)
        feed(shell_of(c), (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_LIVE, .text = source });
}

void preempt_coord_leave_(struct preempt_coord *c)
{
    if (c)
        feed(shell_of(c), (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_LEAVE });
}

void preempt_coord_history_(struct preempt_coord *c, const char *value)
{
    if (c)
        feed(shell_of(c), (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_HISTORY, .text = value });
}

int preempt_coord_watch_members_(struct preempt_coord *c, void (*gone)(unsigned worker, const char *why, void *arg),
                                 void *arg)
{
    struct coord_shell *sh = c ? shell_of(c) : NULL;
    char from[PREEMPT_KEY_MAX], to[PREEMPT_KEY_MAX];

    if (!c || !sh->io->watch_members)
        return -ENOTSUP;
    if (sh->gone)
        return 0; /* watched already: the owner's callback is the one it gave first */
    sh->gone = gone;
    sh->gone_arg = arg;
    /* [N/w/alive/, N/w/done0): the member records and the done records
     * (nothing sorts between them) */
    CRANGE(c, from, ALIVE, 'w');
    CRANGE(c, to, DONE, 'w');
    to[strlen(to) - 1] = '0';
    return sh->io->watch_members(sh->io_arg, from, to, &watch_ops, &sh->tok[PREEMPT_COORD_IN_MEMBER][0]);
}

unsigned preempt_coord_pending_(const struct preempt_coord *c)
{
    return c ? shell_of(c)->io->pending(shell_of(c)->io_arg) : 0;
}

unsigned preempt_coord_flush_(struct preempt_coord *c, uint64_t bound_ms)
{
    return c ? shell_of(c)->io->flush(shell_of(c)->io_arg, bound_ms) : 0;
}

/* ---- life cycle ------------------------------------------------------------------------------- */

int preempt_coord_new_io_(const struct preempt_coord_io *io, void *io_arg, const struct preempt_coord_cfg *cfg,
                          const struct preempt_coord_join *join, const struct preempt_coord_ops *ops, void *arg,
                          struct preempt_coord **ret)
{
    struct coord_shell *sh;
    struct preempt_coord *c;
    unsigned n = cfg->workers;
    char wpre[PREEMPT_KEY_MAX];
    int r;

    if (!ops || !ops->post || !ops->now_ms || n == 0 || n > PREEMPT_MAX_WORKERS || cfg->worker >= n) {
        io->free(io_arg);
        return -EINVAL;
    }
    sh = calloc(1, sizeof(*sh));
    if (!sh) {
        io->free(io_arg);
        return -ENOMEM;
    }
    c = &sh->c;
    sh->io = io;
    sh->io_arg = io_arg;
    sh->ops = *ops;
    sh->arg = arg;
    for (unsigned i = 0; i < PREEMPT_COORD_IN__COUNT; i++)
        for (unsigned k = 0; k < 2; k++)
            sh->tok[i][k] = (struct coord_token){ .sh = sh, .kind = (enum preempt_coord_in_kind)i, .round = k };
    c->sink_arg = sh;
    c->sink = run;
    c->logs = ops->log != NULL;
    c->now_ms = ops->now_ms(arg);
    c->wall_ms = io->wall_ms(io_arg);
    r = coord_init(c, cfg, join);
    CRANGE(c, wpre, WORKERS, 0);
    if (r == 0) /* [P/N/, P/N/w/) */
        r = io->watch(io_arg, c->pre, wpre, &watch_ops, &sh->tok[PREEMPT_COORD_IN_RECORD][0]);
    if (r < 0) {
        preempt_coord_free_(c);
        return r;
    }
    coord_arm_keepalive(c);
    *ret = c;
    return 0;
}

void preempt_coord_free_(struct preempt_coord *c)
{
    struct coord_shell *sh = c ? shell_of(c) : NULL;

    if (!sh)
        return;
    sh->io->free(sh->io_arg);
    coord_fini(c);
    free(sh);
}
