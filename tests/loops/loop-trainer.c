/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/loops/loop-trainer.c: a trainer that embeds the handler in a real
 * event loop of another library, through preempt_handler_get_fd(),
 * _get_timeout() and _process() alone, in the idioms those loops' users
 * write (tests/loops.sh runs it):
 *
 *   --loop glib   g_unix_fd_add() on the descriptor, a g_timeout re-armed
 *                 with get_timeout(), one step per idle callback
 *   --loop uv     uv_poll_t on the descriptor, a uv_timer_t re-armed with
 *                 get_timeout(), one step per uv_idle_t callback
 *   --loop poll   a plain poll() loop
 *
 *   --idiom ready process() only when the descriptor is readable or the
 *                 caller's timer (re-armed from get_timeout() after every
 *                 step and every process()) fires
 *   --idiom every process() on every turn of the loop as well
 *   --two-phase   saves hand the model over as a snapshot (persisted on the
 *                 loop), and a 96 MiB optimizer state beside it (so that the
 *                 persist spans steps); --checkpoint-at N asks for a
 *                 checkpoint at run N
 *
 *   --watch       a preemption watcher of the job instead of a worker,
 *                 through preempt_watcher_get_fd(), _get_timeout() and
 *                 _process() in the same loop and idiom: prints each notice
 *                 and, once every worker exited, stops
 *
 * Each step may sleep (--step-ms: a blocking collective's time). The model
 * is a deterministic function of the run counter, so a restart checks that
 * the restored state is exactly the state after the restored step. Start-up
 * runs inside preempt_handler_new() (--start sync, the default), or on the
 * loop like the rest (--start async: async_start).
 *
 * Output (stdout, one line each): "started run=R", "restored step=S
 * exact=1|0", "saved step=S", "exit code=C run=R", "trained n=N" (--mark N:
 * once, when this process has trained N steps; tests wait for it) (with --two-phase also
 * "persisting" and "released run=R": a snapshot given back); a watcher's "notice
 * worker=W source=S withdrawn=0|1" and "exited incarnation=N". */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <glib-unix.h>
#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <libpreempt/preempt.h>

#define WORDS 64

enum loop_kind { LOOP_POLL, LOOP_GLIB, LOOP_UV };

struct trainer {
    struct preempt_handler *h;
    struct preempt_watcher *watcher; /* --watch: a preemption watcher instead of a trainer */
    enum loop_kind kind;
    bool every;          /* --idiom every */
    unsigned step_ms;
    uint64_t stop_at;    /* training_done at this run counter; 0: after --more */
    uint64_t more;
    uint64_t model[WORDS];
    bool training;       /* steps are being run (not waiting, not before start-up) */
    bool resume;         /* a callback said to ask the handler again: the next turn does */
    bool done;           /* on_exit ran */
    bool two_phase;      /* --two-phase: the model is a snapshot, persisted on the loop */
    uint64_t checkpoint_at; /* --checkpoint-at N: preempt_request_checkpoint() at run N; 0: none */
    uint64_t mark, stepped; /* --mark N: "trained n=N" once this process has trained N steps */
    int code;
    /* glib */
    GMainLoop *gloop;
    guint g_idle, g_timeout;
    /* uv */
    uv_loop_t uloop;
    uv_poll_t u_poll;
    uv_timer_t u_timer;
    uv_idle_t u_idle;
    /* poll */
    int64_t poll_due_ms; /* the caller's own timer (monotonic ms), -1: none */
};

static void model_at(uint64_t m[WORDS], uint64_t run)
{
    for (int i = 0; i < WORDS; i++)
        m[i] = (uint64_t)i;
    for (uint64_t s = 0; s < run; s++)
        for (int i = 0; i < WORDS; i++)
            m[i] = m[i] * 6364136223846793005ULL + 1442695040888963407ULL + s;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what, int r)
{
    fprintf(stderr, "loop-trainer: %s: %s\n", what, preempt_strerror(r));
    exit(2);
}

/* ---- what every loop does the same way ------------------------------------ */

static void set_training(struct trainer *t, bool on);
static void rearm(struct trainer *t);
static void stop_loop(struct trainer *t);

/* --two-phase: the optimizer's state beside the model, handed over as a
 * second snapshot: big enough (96 MiB, three of io_uring's and aio's
 * 32 MiB budgets per step boundary) that its persist spans several steps
 * with every backend, as a real model's does (with 24 MiB, aio's writes
 * past the page cache were durable one step after the save, once);
 * restores ignore it. */
#define BALLAST_BYTES ((size_t)96 << 20)

static void release_ballast(void *data, void *ud)
{
    (void)ud;
    free(data);
}

static void release(void *data, void *ud)
{
    struct trainer *t = ud;
    struct preempt_status st;

    preempt_handler_get_status(t->h, &st);
    printf("released run=%" PRIu64 "\n", st.run);
    free(data);
}

static int save(struct trainer *t)
{
    uint64_t step;
    int r = preempt_save_begin(t->h, &step);

    if (r == 0 && t->two_phase) {
        void *copy = malloc(sizeof(t->model));

        r = copy ? 0 : -ENOMEM;
        if (copy) {
            memcpy(copy, t->model, sizeof(t->model));
            if ((r = preempt_save_snapshot(t->h, "model", copy, sizeof(t->model), release, t)) < 0)
                free(copy);
        }
        if (r == 0) {
            void *ballast = malloc(BALLAST_BYTES);

            r = ballast ? 0 : -ENOMEM;
            if (ballast) {
                memset(ballast, (int)(step & 0xff), BALLAST_BYTES);
                if ((r = preempt_save_snapshot(t->h, "optimizer", ballast, BALLAST_BYTES, release_ballast, NULL)) < 0)
                    free(ballast);
            }
        }
    } else if (r == 0) {
        r = preempt_save_blob(t->h, "model", t->model, sizeof(t->model));
    }
    if (r == 0)
        printf("saved step=%" PRIu64 "\n", step);
    if (r < 0)
        fprintf(stderr, "loop-trainer: save: %s\n", preempt_strerror(r));
    return preempt_save_done(t->h, r);
}

/* The handler's answer now. */
static int action_now(const struct trainer *t)
{
    enum preempt_action a;
    int r = preempt_handler_get_action(t->h, &a);

    if (r < 0)
        die("get_action", r);
    return (int)a;
}

/* Acts on the handler's answer until training goes on, waits or stops. */
static void act(struct trainer *t, int action)
{
    for (;;) {
        switch (action) {
        case PREEMPT_ACTION_CONTINUE: {
            struct preempt_status st;

            preempt_handler_get_status(t->h, &st);
            if (st.run >= t->stop_at) {
                set_training(t, false);
                (void)preempt_training_done(t->h); /* on_exit follows */
            } else {
                set_training(t, true);
            }
            return;
        }
        case PREEMPT_ACTION_SAVE:
        case PREEMPT_ACTION_SAVE_EXIT:
            if (save(t) < 0 && action_now(t) == action)
                die("a failed save left the action as it was", -EPROTO);
            action = action_now(t);
            break;
        case PREEMPT_ACTION_WAIT: /* on_state resumes */
            set_training(t, false);
            return;
        default: /* EXIT: on_exit has run or runs from the loop */
            set_training(t, false);
            return;
        }
    }
}

/* One turn of training: what a callback asked for, else one step. */
static void one_step(struct trainer *t)
{
    struct preempt_status st;

    if (t->resume) {
        t->resume = false;
        act(t, action_now(t));
        return;
    }
    preempt_handler_get_status(t->h, &st);
    for (int i = 0; i < WORDS; i++)
        t->model[i] = t->model[i] * 6364136223846793005ULL + 1442695040888963407ULL + st.run;
    if (t->step_ms)
        usleep(t->step_ms * 1000u); /* the step's collective, blocking */
    if (++t->stepped == t->mark)
        printf("trained n=%" PRIu64 "\n", t->stepped);
    {
        enum preempt_action a;
        int r = preempt_step_end(t->h, &a);

        if (r == 0 && t->checkpoint_at && st.run + 1 == t->checkpoint_at && preempt_request_checkpoint(t->h) == 0)
            printf("checkpoint requested\n");
        act(t, r < 0 ? r : (int)a);
    }
}

static void process(struct trainer *t)
{
    int r = t->watcher ? preempt_watcher_process(t->watcher) : preempt_handler_process(t->h);

    if (r < 0)
        die("process", r);
}

static int restore(struct preempt_handler *h, uint64_t step, void *ud)
{
    struct trainer *t = ud;
    uint64_t want[WORDS];
    void *data;
    size_t len;
    int r = preempt_restore_blob(h, "model", &data, &len);

    if (r < 0)
        return r;
    if (len != sizeof(t->model)) {
        preempt_free(data);
        return -EBADMSG;
    }
    memcpy(t->model, data, len);
    preempt_free(data);
    model_at(want, step);
    printf("restored step=%" PRIu64 " exact=%d\n", step, !memcmp(want, t->model, sizeof(want)));
    return 0;
}

static void on_start(struct preempt_handler *h, int status, void *ud)
{
    struct trainer *t = ud;
    struct preempt_status st;

    if (status < 0)
        die("start-up", status);
    preempt_handler_get_status(h, &st);
    if (!t->stop_at)
        t->stop_at = st.run + t->more;
    printf("started run=%" PRIu64 "\n", st.run);
    fflush(stdout);
    t->resume = true; /* callbacks only note: the loop's next turn acts */
    set_training(t, true);
}

static void on_state(struct preempt_handler *h, enum preempt_state from, enum preempt_state to, void *ud)
{
    struct trainer *t = ud;

    (void)h, (void)from;
    if (to == PREEMPT_STATE_PERSISTING)
        printf("persisting\n");
    if (!t->training && !t->done && action_now(t) != PREEMPT_ACTION_WAIT) {
        t->resume = true;
        set_training(t, true);
    }
}

static void on_exit_cb(struct preempt_handler *h, enum preempt_exit reason, int code, void *ud)
{
    struct trainer *t = ud;
    struct preempt_status st;

    (void)reason;
    preempt_handler_get_status(h, &st);
    t->done = true;
    t->code = code;
    printf("exit code=%d run=%" PRIu64 "\n", code, st.run);
    fflush(stdout);
    set_training(t, false);
    stop_loop(t);
}

static void stop_loop(struct trainer *t)
{
    t->done = true;
    if (t->kind == LOOP_GLIB)
        g_main_loop_quit(t->gloop);
    else if (t->kind == LOOP_UV)
        uv_stop(&t->uloop);
}

static void on_notice(struct preempt_watcher *w, const struct preempt_notice_info *n, void *ud)
{
    (void)w, (void)ud;
    printf("notice worker=%d source=%s withdrawn=%d\n", n->worker, n->source, n->withdrawn);
}

static void on_exited(struct preempt_watcher *w, uint64_t inc, void *ud)
{
    (void)w;
    printf("exited incarnation=%" PRIu64 "\n", inc);
    stop_loop(ud);
}

static void log_cb(struct preempt_handler *h, enum preempt_log_level level, const char *msg, void *ud)
{
    (void)h, (void)ud;
    fprintf(stderr, "libpreempt: %d: %s\n", (int)level, msg);
}

/* ---- GLib -------------------------------------------------------------------- */

static gboolean g_on_timeout(gpointer ud)
{
    struct trainer *t = ud;

    t->g_timeout = 0;
    process(t);
    rearm(t);
    return G_SOURCE_REMOVE;
}

static gboolean g_on_fd(gint fd, GIOCondition cond, gpointer ud)
{
    struct trainer *t = ud;

    (void)fd, (void)cond;
    process(t);
    rearm(t);
    return G_SOURCE_CONTINUE;
}

static gboolean g_on_idle(gpointer ud)
{
    struct trainer *t = ud;

    one_step(t);
    if (t->every && !t->done)
        process(t);
    rearm(t);
    if (t->training)
        return G_SOURCE_CONTINUE;
    t->g_idle = 0;
    return G_SOURCE_REMOVE;
}

/* ---- libuv ------------------------------------------------------------------- */

static void u_on_timer(uv_timer_t *tm)
{
    struct trainer *t = tm->data;

    process(t);
    rearm(t);
}

static void u_on_poll(uv_poll_t *p, int status, int events)
{
    struct trainer *t = p->data;

    (void)status, (void)events;
    process(t);
    rearm(t);
}

static void u_on_idle(uv_idle_t *i)
{
    struct trainer *t = i->data;

    one_step(t);
    if (t->every && !t->done)
        process(t);
    rearm(t);
}

/* ---- the loop-specific parts ------------------------------------------------- */

static void set_training(struct trainer *t, bool on)
{
    t->training = on;
    if (t->kind == LOOP_GLIB) {
        if (on && !t->g_idle)
            t->g_idle = g_idle_add(g_on_idle, t);
        /* off: g_on_idle returns G_SOURCE_REMOVE, or the source is removed here */
        if (!on && t->g_idle) {
            g_source_remove(t->g_idle);
            t->g_idle = 0;
        }
    } else if (t->kind == LOOP_UV) {
        if (on)
            uv_idle_start(&t->u_idle, u_on_idle);
        else
            uv_idle_stop(&t->u_idle);
    }
}

/* The caller's timer, set again from get_timeout() (after every step and
 * every process(), as the loops' users write it). */
static void rearm(struct trainer *t)
{
    int64_t ms;
    int r;

    if (t->done)
        return;
    r = t->watcher ? preempt_watcher_get_timeout(t->watcher, &ms) : preempt_handler_get_timeout(t->h, &ms);
    if (r < 0)
        die("get_timeout", r);
    if (ms > INT_MAX)
        ms = -1;
    if (t->kind == LOOP_GLIB) {
        if (t->g_timeout)
            g_source_remove(t->g_timeout);
        t->g_timeout = ms >= 0 ? g_timeout_add((guint)ms, g_on_timeout, t) : 0;
    } else if (t->kind == LOOP_UV) {
        if (ms >= 0)
            uv_timer_start(&t->u_timer, u_on_timer, (uint64_t)ms, 0);
        else
            uv_timer_stop(&t->u_timer);
    } else {
        t->poll_due_ms = ms >= 0 ? now_ms() + ms : -1;
    }
}

static void run_poll(struct trainer *t, int fd)
{
    rearm(t);
    while (!t->done) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int wait = -1, n;

        if (t->training)
            wait = 0;
        else if (t->poll_due_ms >= 0)
            wait = (int)(t->poll_due_ms > now_ms() ? t->poll_due_ms - now_ms() : 0);
        n = poll(&p, 1, wait);
        if (n < 0 && errno != EINTR)
            die("poll", -errno);
        if (t->every || n > 0 || (t->poll_due_ms >= 0 && now_ms() >= t->poll_due_ms)) {
            process(t);
            rearm(t);
        }
        if (t->training && !t->done) {
            one_step(t);
            rearm(t);
        }
    }
}

static void run_glib(struct trainer *t, int fd)
{
    t->gloop = g_main_loop_new(NULL, FALSE);
    g_unix_fd_add(fd, G_IO_IN, g_on_fd, t);
    rearm(t);
    if (t->training && !t->g_idle)
        t->g_idle = g_idle_add(g_on_idle, t);
    if (!t->done)
        g_main_loop_run(t->gloop);
    g_main_loop_unref(t->gloop);
}

static void close_noop(uv_handle_t *h)
{
    (void)h;
}

static void run_uv(struct trainer *t, int fd)
{
    if (uv_poll_init(&t->uloop, &t->u_poll, fd) < 0)
        die("uv_poll_init", -EINVAL);
    t->u_poll.data = t;
    uv_poll_start(&t->u_poll, UV_READABLE, u_on_poll);
    rearm(t);
    if (!t->done)
        uv_run(&t->uloop, UV_RUN_DEFAULT);
    uv_poll_stop(&t->u_poll);
    uv_close((uv_handle_t *)&t->u_poll, close_noop);
    uv_close((uv_handle_t *)&t->u_timer, close_noop);
    uv_close((uv_handle_t *)&t->u_idle, close_noop);
    uv_run(&t->uloop, UV_RUN_DEFAULT);
    uv_loop_close(&t->uloop);
}

static void usage(void)
{
    fputs("usage: loop-trainer --loop glib|uv|poll --idiom ready|every [--start sync|async] [--step-ms MS]\n"
          "       [--two-phase] [--checkpoint-at N] [--mark N]\n"
          "       (--steps N | --more N) --ckpt-dir DIR [--etcd URL --job NAME --worker I --workers N]\n"
          "       loop-trainer --watch --loop glib|uv|poll --idiom ready|every --etcd URL --job NAME\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    static struct trainer t;
    static const struct option opts[] = {
        { "loop", required_argument, NULL, 'l' },  { "idiom", required_argument, NULL, 'i' },
        { "step-ms", required_argument, NULL, 's' }, { "steps", required_argument, NULL, 'n' },
        { "more", required_argument, NULL, 'm' },  { "ckpt-dir", required_argument, NULL, 'c' },
        { "etcd", required_argument, NULL, 'e' },  { "job", required_argument, NULL, 'j' },
        { "worker", required_argument, NULL, 'w' }, { "workers", required_argument, NULL, 'W' },
        { "start", required_argument, NULL, 'S' },     { "watch", no_argument, NULL, 'a' },
        { "two-phase", no_argument, NULL, 'T' },   { "checkpoint-at", required_argument, NULL, 'C' },
        { "mark", required_argument, NULL, 'M' },
        { NULL, 0, NULL, 0 },
    };
    struct preempt_config cfg;
    struct preempt_callbacks cb = { .restore = restore, .on_state = on_state, .on_exit = on_exit_cb,
                                    .on_start = on_start, .log = log_cb };
    struct preempt_watcher_callbacks wcb = { .on_notice = on_notice, .on_exited = on_exited };
    bool watch = false;
    int o, r, fd;

    preempt_config_init(&cfg);
    if (preempt_block_signals(&cfg) < 0)
        die("block signals", -EINVAL);
    t.kind = LOOP_POLL;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'l':
            t.kind = !strcmp(optarg, "glib") ? LOOP_GLIB : !strcmp(optarg, "uv") ? LOOP_UV
                   : !strcmp(optarg, "poll") ? LOOP_POLL : (usage(), LOOP_POLL);
            break;
        case 'i':
            t.every = !strcmp(optarg, "every");
            if (!t.every && strcmp(optarg, "ready"))
                usage();
            break;
        case 's': t.step_ms = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'n': t.stop_at = strtoull(optarg, NULL, 10); break;
        case 'm': t.more = strtoull(optarg, NULL, 10); break;
        case 'c': cfg.ckpt_dir = optarg; break;
        case 'a': watch = true; break;
        case 'e': cfg.etcd_endpoints = optarg; break;
        case 'j': cfg.job = optarg; break;
        case 'w': cfg.worker = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'S':
            cfg.async_start = !strcmp(optarg, "async");
            if (!cfg.async_start && strcmp(optarg, "sync"))
                usage();
            break;
        case 'W': cfg.workers = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'T': t.two_phase = true; break;
        case 'C': t.checkpoint_at = strtoull(optarg, NULL, 10); break;
        case 'M': t.mark = strtoull(optarg, NULL, 10); break;
        default: usage();
        }
    }
    if (!watch && (!cfg.ckpt_dir || (!t.stop_at && !t.more)))
        usage();
    setvbuf(stdout, NULL, _IOLBF, 0);
    model_at(t.model, 0);
    t.poll_due_ms = -1;
    if (t.kind == LOOP_UV) {
        uv_loop_init(&t.uloop);
        uv_timer_init(&t.uloop, &t.u_timer);
        uv_idle_init(&t.uloop, &t.u_idle);
        t.u_timer.data = t.u_idle.data = &t;
    }
    if (watch) {
        if ((r = preempt_watcher_new(NULL, &cfg, &wcb, &t, &t.watcher)) < 0)
            die("watcher", r);
        if ((r = preempt_watcher_get_fd(t.watcher, &fd)) < 0)
            die("watcher get_fd", r);
    } else {
        if ((r = preempt_handler_new(NULL, &cfg, &cb, &t, &t.h)) < 0)
            die("handler", r);
        if ((r = preempt_handler_get_fd(t.h, &fd)) < 0)
            die("get_fd", r);
        if (!cfg.async_start)
            on_start(t.h, 0, &t); /* started inside preempt_handler_new() */
    }
    if (t.kind == LOOP_GLIB)
        run_glib(&t, fd);
    else if (t.kind == LOOP_UV)
        run_uv(&t, fd);
    else
        run_poll(&t, fd);
    t.h = preempt_handler_free(t.h);
    t.watcher = preempt_watcher_free(t.watcher);
    return t.code;
}
