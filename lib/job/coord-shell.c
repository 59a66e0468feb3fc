/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord-shell.c: the running coordinator's shell. The core (lib/job/coord.c,
 * coord-rounds.c, coord-effects.c) takes typed inputs (coord-inputs.def)
 * and makes typed outputs (coord-outputs.def); it calls no port, no owner
 * callback and no clock. This file is everything around it: it makes each
 * input of what the port and the shell deliver (an answer, a watch's
 * event, the tick; the machine's effects and what the handler learns),
 * stamps it with the clocks, and runs each output the core makes through
 * the typed port (struct preempt_coord_io: lib/handler/coord-io.c's libevent and
 * libcurl adapter, or the simulator's) and the owner's callbacks (struct
 * preempt_coord_ops).
 *
 * The core runs to completion: the outputs of one input are kept (copied,
 * in the order it made them) until its step returns, and only then run.
 * An input that running one causes (the machine's effect inside a post, a
 * refused request's failure) is fed then, and its own outputs run before
 * the rest of the first input's: the order things happen in is the order
 * the core made them, and the core is never entered in the middle of a
 * step. The owner's log and trace outputs are told as they are made (they
 * show the core's state at that point of the step, and act on nothing). */
#include "coord-state.h"

/* What a request's answer is: its input's kind and round (the port's
 * callback argument). */
struct coord_token {
    struct coord_shell *sh;
    enum preempt_coord_in_kind kind;
    unsigned round;
};

/* An output the core made, kept until its step returns: its request and
 * text are the shell's copies (the core's live during the step only). */
struct made {
    struct preempt_coord_out o;
    struct preempt_etcd_req *req; /* o.ask's request (coord-wire.c), copied */
    char *text;                   /* o.text's copy */
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
    struct made *made;      /* the outputs made and not yet run: each input's after those of the input it runs */
    size_t n_made, cap_made; /*   inside (a stack of runs) */
    uint64_t lost;          /* requests whose answer is their failure (out of memory keeping them): a bit per
                               token, [kind][round] */
    unsigned depth;         /* outputs being run (an input fed while one runs was caused by it) */
};
_Static_assert(2 * PREEMPT_COORD_IN__COUNT <= 64, "a bit per answer's token");

static struct coord_shell *shell_of(const struct preempt_coord *c)
{
    return c->sink_arg;
}

static void drain(struct coord_shell *sh, size_t base);

/* Stamps in with the clocks, reads an answer's reply (the wire), hands
 * it to the core, then runs what the core made of it. */
static void feed(struct coord_shell *sh, struct preempt_coord_in in)
{
    size_t base = sh->n_made;
    struct preempt_co_answer answer;

    in.now_ms = sh->ops.now_ms(sh->arg);
    in.wall_ms = sh->io->wall_ms(sh->io_arg);
    if (sh->ops.on_input)
        sh->ops.on_input(&in, sh->depth, sh->arg);
    preempt_co_answer_(&in, &answer);
    preempt_coord_input_(&sh->c, &in);
    drain(sh, base);
}

/* ---- the port's callbacks: each makes its typed input, nothing more ---------------------------- */

static void answered(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    const struct coord_token *t = arg;

    /* the records, read while the watch is down: the core takes them in
     * the order they were written, as it takes the stream they stand in
     * for (a round's commit after the notices withdrawn before it) */
    if (t->kind == PREEMPT_COORD_IN_READ && status == 0 && r->n_res == 1)
        preempt_etcd_kvs_by_write_(r->res[0].kvs, r->res[0].n);
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

static void reread(struct preempt_etcd_kv *kvs, size_t n, int64_t rev, uint64_t cluster, void *arg)
{
    const struct coord_token *t = arg;

    preempt_etcd_kvs_by_write_(kvs, n); /* as the read's answer above */
    feed(t->sh, (struct preempt_coord_in){ .kind = t->kind + 1, .kvs = kvs, .n = n, .rev = rev, .cluster = cluster });
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

static struct coord_token *token(struct coord_shell *sh, const struct preempt_coord_out *o)
{
    return o->answer == COORD_NO_ANSWER ? NULL : &sh->tok[o->answer][o->round ? 1 : 0];
}

static void run(struct coord_shell *sh, const struct preempt_coord_out *o, const struct preempt_etcd_req *req)
{
    switch (o->kind) {
    case PREEMPT_COORD_OUT_REQUEST: {
        struct coord_token *t = token(sh, o);
        int r = sh->io->request(sh->io_arg, req, o->give_up_ms, t ? answered : NULL, t);

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

/* The core's sink: an output that acts is kept, copied, until the step
 * returns (out of memory: a request's answer is its failure, anything
 * else is lost with a log line). */
static void collect(void *arg, const struct preempt_coord_out *o)
{
    struct coord_shell *sh = arg;
    struct made *m;

    if (o->kind >= PREEMPT_COORD_OUT_LOG) { /* the owner's log and trace: told as they are made */
        run(sh, o, NULL);
        return;
    }
    if (sh->ops.on_output)
        sh->ops.on_output(o, sh->depth, sh->arg);
    if (sh->n_made == sh->cap_made) {
        size_t cap = sh->cap_made ? 2 * sh->cap_made : 16;
        struct made *more = realloc(sh->made, cap * sizeof(*more));

        if (more) {
            sh->made = more;
            sh->cap_made = cap;
        }
    }
    m = sh->n_made < sh->cap_made ? &sh->made[sh->n_made] : NULL;
    if (m) {
        *m = (struct made){ .o = *o };
        if (o->kind == PREEMPT_COORD_OUT_REQUEST) { /* the ask lives during the step only: its request is kept */
            struct preempt_co_wire w;

            m->o.ask = NULL;
            if (preempt_co_request_(o->ask, &w) == 0)
                m->req = preempt_etcd_req_copy_(&w.req);
        }
        if (o->text)
            m->o.text = m->text = strdup(o->text);
    }
    if (m && (o->kind != PREEMPT_COORD_OUT_REQUEST || m->req) && (!o->text || m->text)) {
        sh->n_made++;
        return;
    }
    if (m) {
        preempt_etcd_req_free_(m->req);
        free(m->text);
    }
    if (o->kind == PREEMPT_COORD_OUT_REQUEST && token(sh, o)) {
        sh->lost |= 1ULL << (2 * o->answer + (o->round ? 1 : 0));
        return;
    }
    if (sh->ops.log)
        sh->ops.log(3, "out of memory: an output of the job's coordinator is lost", sh->arg);
}

/* Runs the outputs made from base on, in order (an input one of them
 * causes runs its own at its turn, above the top), then answers the
 * requests that could not be kept with their failure. */
static void drain(struct coord_shell *sh, size_t base)
{
    sh->depth++;
    for (size_t i = base; i < sh->n_made; i++) {
        struct made m = sh->made[i]; /* an input its run causes may move the array */

        sh->made[i] = (struct made){ 0 };
        run(sh, &m.o, m.req);
        preempt_etcd_req_free_(m.req);
        free(m.text);
    }
    sh->n_made = base;
    while (sh->lost) {
        unsigned bit = (unsigned)__builtin_ctzll(sh->lost);

        sh->lost &= sh->lost - 1;
        answered(-ENOMEM, NULL, preempt_coord_refused_(-ENOMEM), &sh->tok[bit / 2][bit % 2]);
    }
    sh->depth--;
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

void preempt_coord_history_(struct preempt_coord *c, const struct preempt_value *value)
{
    if (c)
        feed(shell_of(c), (struct preempt_coord_in){ .kind = PREEMPT_COORD_IN_HISTORY,
                                                     .text = preempt_value_str_(value) });
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
    c->sink = collect;
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
    drain(sh, 0);
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
    for (size_t i = 0; i < sh->n_made; i++) {
        preempt_etcd_req_free_(sh->made[i].req);
        free(sh->made[i].text);
    }
    free(sh->made);
    free(sh);
}
