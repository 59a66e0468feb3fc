/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* bench/agree.c: agreement latency, etcd traffic and signal-to-exit time.
 *
 * For each N, N worker processes (this program's child-worker mode) join a
 * fresh job against the local etcd and train with 10 ms steps on their own
 * libevent loops, through the asynchronous step hooks. The driver sends
 * SIGTERM to worker 0 and takes CLOCK_MONOTONIC, the same clock in every
 * process:
 *   - agreement: until the last worker learns the agreed save step (its
 *     status shows save_step, read in the on_state callback);
 *   - traffic: etcd's own /metrics counters read before the signal and
 *     after every worker exited: gRPC messages received (requests, one per
 *     unary call or keep-alive), messages sent (replies and watch events)
 *     and the bytes of both; the leases are long (30 s), so no keep-alive
 *     falls inside;
 *   - signal-to-exit (grace 0): until the last worker's process is gone; and
 *     the same less the application's part, the longest time a worker took
 *     from learning the agreed step to the end of its save (the step it
 *     trained to reach it, then the save).
 * The workers start stepping together (the driver says "go" when all have
 * joined), so that their run counters agree within a step, as they do in
 * lockstep data-parallel training.
 * Beside each N, the floor: one put and the watch event it causes, through
 * the library's own etcd client in one process. N = 1 is local mode. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "bench.h"
#include "etcd/etcd-internal.h"
#include "preempt.h"

#define STEP_MS 10
#define MAX_WORKERS 64

/* ---- the worker (child-worker mode) ------------------------------------------------ */

struct worker {
    struct preempt_handler *h;
    struct event_base *base;
    struct event *ev_step, *ev_resume;
    uint64_t t_agreed, t_save_begin, t_save_end, t_exit;
    bool waiting, exited, finished, watch_up;
    int code;
    unsigned *left;    /* workers on this loop not finished: the last one stops it */
    struct inproc *in; /* the in-process section's shared state, or NULL */
    int (*save)(struct preempt_handler *h, uint64_t step, void *ud); /* the callbacks' save */
};

/* This worker is done (exited, or its handler said EXIT): the loop stops
 * when every worker on it is. */
static void w_finished(struct worker *w)
{
    if (w->finished)
        return;
    w->finished = true;
    if (--*w->left == 0)
        (void)event_base_loopbreak(w->base);
}

static int w_save(struct preempt_handler *h, uint64_t step, void *ud)
{
    static uint64_t state[8192]; /* 64 KiB of model state */

    (void)ud;
    state[step % 8192] = step;
    return preempt_save_blob(h, "model", state, sizeof(state));
}

static int w_restore(struct preempt_handler *h, uint64_t step, void *ud)
{
    (void)h;
    (void)step;
    (void)ud;
    return 0;
}

static void w_state(struct preempt_handler *h, enum preempt_state from, enum preempt_state to, void *ud)
{
    struct worker *w = ud;
    struct preempt_status st;

    (void)from;
    (void)to;
    preempt_handler_get_status(h, &st);
    if (st.save_step && !w->t_agreed)
        w->t_agreed = bench_now_ns();
    if (w->waiting)
        event_active(w->ev_resume, EV_TIMEOUT, 1);
}

static void w_exit(struct preempt_handler *h, enum preempt_exit reason, int code, void *ud)
{
    struct worker *w = ud;

    (void)h;
    (void)reason;
    w->t_exit = bench_now_ns();
    w->exited = true;
    w->code = code;
    w_finished(w);
}

static void w_log(struct preempt_handler *h, enum preempt_log_level level, const char *msg, void *ud)
{
    (void)h;
    (void)ud;
    if (level >= PREEMPT_LOG_INFO) /* to the worker's log file, shown when a trial fails */
        fprintf(stderr, "%.3f %s\n", (double)bench_now_ns() / 1e9, msg);
}

static int w_action(const struct worker *w)
{
    enum preempt_action a;
    int r = preempt_handler_get_action(w->h, &a);

    return r < 0 ? r : (int)a;
}

static void w_act(struct worker *w, int a)
{
    static const struct timeval step = { 0, STEP_MS * 1000 };

    for (;;) {
        uint64_t s;
        int r;

        w->waiting = false;
        switch (a) {
        case PREEMPT_ACTION_CONTINUE:
            (void)evtimer_add(w->ev_step, &step);
            return;
        case PREEMPT_ACTION_SAVE:
        case PREEMPT_ACTION_SAVE_EXIT:
            w->t_save_begin = bench_now_ns();
            r = preempt_save_begin(w->h, &s);
            if (r == 0)
                r = w->save(w->h, s, w);
            (void)preempt_save_done(w->h, r);
            w->t_save_end = bench_now_ns();
            break;
        case PREEMPT_ACTION_WAIT:
            w->waiting = true;
            return;
        default:
            w_finished(w);
            return;
        }
        a = w_action(w);
    }
}

static void w_on_step(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;

    (void)fd;
    (void)what;
    {
        enum preempt_action a;
        int r = preempt_step_end(w->h, &a);

        w_act(w, r < 0 ? r : (int)a);
    }
}

static void w_on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;

    (void)fd;
    (void)what;
    if (w->waiting)
        w_act(w, w_action(w));
}

/* preempt_handler_close()'s end: the last coordination writes are out
 * (or their bound passed) and the handler is freed. */
static void w_closed(struct preempt_handler *h, int status, void *arg)
{
    struct worker *w = arg;

    (void)h;
    (void)status;
    w->h = NULL;
}

static void w_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

/* child-worker ETCD|- JOB WORKER WORKERS CKPT_DIR REPORT_FD: one worker. It
 * writes "ready" when it has joined, and at the end one line of times. */
int bench_child_worker(int argc, char **argv)
{
    unsigned one = 1;
    struct worker w = { .left = &one, .save = w_save };
    struct preempt_config cfg;
    struct preempt_callbacks cb = { .save = w_save, .restore = w_restore, .on_state = w_state, .on_exit = w_exit,
                                    .log = w_log };
    struct event *tick;
    char line[256], trace[4200];
    int fd, r;

    if (argc != 6)
        return 2;
    fd = atoi(argv[5]);
    preempt_config_init(&cfg);
    cfg.platform = PREEMPT_PLATFORM_NONE;
    cfg.grace_ms = 0;
    cfg.ckpt_dir = argv[4];
    cfg.lease_ttl_s = 30;
    (void)snprintf(trace, sizeof(trace), "%s.trace", argv[4]); /* shown when a trial fails */
    cfg.trace_path = trace;
    if (strcmp(argv[0], "-") != 0) {
        cfg.etcd_endpoints = argv[0];
        cfg.job = argv[1];
        cfg.worker = (unsigned)atoi(argv[2]);
        cfg.workers = (unsigned)atoi(argv[3]);
    }
    if (preempt_block_signals(&cfg) < 0 || !(w.base = event_base_new()))
        return 2;
    w.ev_step = evtimer_new(w.base, w_on_step, &w);
    w.ev_resume = event_new(w.base, -1, 0, w_on_resume, &w);
    tick = event_new(w.base, -1, EV_PERSIST, w_tick, NULL);
    if (!w.ev_step || !w.ev_resume || !tick || (r = preempt_handler_new(w.base, &cfg, &cb, &w, &w.h)) < 0)
        return 2;
    if (write(fd, "ready\n", 6) != 6 || read(0, line, 1) != 1) /* then "go" on stdin */
        return 2;
    w_act(&w, w_action(&w));
    (void)event_base_dispatch(w.base);
    { /* the last coordination writes (shard report, departure): close's 2 s bound */
        static const struct timeval ten = { 0, 10000 };

        (void)event_add(tick, &ten);
        if (preempt_handler_close(w.h, w_closed, &w) == 0)
            while (w.h)
                (void)event_base_loop(w.base, EVLOOP_ONCE);
    }
    (void)snprintf(line, sizeof(line), "done %llu %llu %llu %llu %d\n", (unsigned long long)w.t_agreed,
                   (unsigned long long)w.t_save_begin, (unsigned long long)w.t_save_end,
                   (unsigned long long)w.t_exit, w.exited ? w.code : -1);
    r = write(fd, line, strlen(line)) == (ssize_t)strlen(line) ? 0 : 2;
    preempt_handler_free(w.h);
    event_free(tick);
    event_free(w.ev_step);
    event_free(w.ev_resume);
    event_base_free(w.base);
    return r;
}

/* ---- the floor: one put and its watch event --------------------------------------- */

/* One watcher of the floor: its own etcd client and watch on the loop, as
 * each handler of the in-process section has. */
struct fl_watcher {
    struct floor *f;
    struct preempt_etcd *e;
    struct preempt_etcd_watch *watch;
    bool up, seen;
};

struct floor {
    struct fl_watcher *ws; /* ws[0]'s client also writes */
    unsigned n;
    bool put_done;
    char key[128];
    uint64_t t_last; /* the last watcher's event */
};

static void fl_event(enum preempt_etcd_ev type, const struct preempt_etcd_kv *kv, void *arg)
{
    struct fl_watcher *w = arg;

    if (type == PREEMPT_ETCD_PUT && strcmp(kv->key, w->f->key) == 0 && !w->seen) {
        w->seen = true;
        w->f->t_last = bench_now_ns();
    }
}

static void fl_reset(struct preempt_etcd_kv *kvs, size_t n, int64_t rev, uint64_t cluster, void *arg)
{
    (void)kvs;
    (void)n;
    (void)rev;
    (void)cluster;
    (void)arg;
}

static void fl_link(bool up, const char *why, void *arg)
{
    (void)why;
    ((struct fl_watcher *)arg)->up = up;
}

static void fl_put(int status, const struct preempt_etcd_reply *r, const char *msg, void *arg)
{
    (void)status;
    (void)r;
    (void)msg;
    ((struct floor *)arg)->put_done = true;
}

static bool fl_up(void *arg)
{
    struct floor *f = arg;

    for (unsigned i = 0; i < f->n; i++)
        if (!f->ws[i].up)
            return false;
    return true;
}

static bool fl_seen(void *arg)
{
    struct floor *f = arg;

    for (unsigned i = 0; i < f->n; i++)
        if (!f->ws[i].seen)
            return false;
    return f->put_done;
}

/* Fills v[0..n) with the times in ms from a put to its watch event at the
 * last of `watchers` watchers, each with its own client on one loop
 * (watchers = 1: the put and its event through one client); returns the
 * count measured. With many watchers this is the fan-out floor: the least
 * any protocol needs to tell every worker on the loop one thing. claim:
 * instead of the put, a transaction shaped as the claim that opens a
 * preemption (the claim carrying the driver's notice, and the proposed
 * step: two puts, one watch message of two events), what the agreement's
 * one message costs. */
static size_t measure_floor(const char *etcd, unsigned n, unsigned watchers, bool claim, double *v)
{
    struct preempt_etcd_opts eo = { .endpoints = etcd };
    struct preempt_etcd_watch_ops ops = { .on_event = fl_event, .on_reset = fl_reset, .on_link = fl_link };
    struct event_base *base = event_base_new();
    struct floor f = { .ws = calloc(watchers, sizeof(struct fl_watcher)) };
    size_t got = 0;
    char prefix[96];

    (void)snprintf(prefix, sizeof(prefix), "/bench-floor/%d/", (int)getpid());
    if (!base || !f.ws)
        goto out;
    for (; f.n < watchers; f.n++) {
        struct fl_watcher *w = &f.ws[f.n];

        w->f = &f;
        if (preempt_etcd_new_(base, &eo, &w->e) < 0 || preempt_etcd_watch_(w->e, prefix, NULL, 0, &ops, w, &w->watch) < 0) {
            f.n++;
            goto out;
        }
    }
    if (preempt_etcd_run_until_(f.ws[0].e, 5000, fl_up, &f) < 0)
        goto out;
    for (unsigned i = 0; i < n; i++) {
        struct timespec gap = { 0, 20000000 }; /* 20 ms apart, as a protocol's steps are */
        char agreed[160];
        /* raw values under a key outside any job (etcd's floor, not a record) */
        struct preempt_etcd_op claim_ops[] = {
            { PREEMPT_ETCD_OP_PUT, f.key, &(struct preempt_value){ .text_ = "0 1795571391313 sigterm" }, 0 },
            { PREEMPT_ETCD_OP_PUT, agreed, &(struct preempt_value){ .text_ = "123" }, 0 }
        };
        uint64_t t0;

        (void)nanosleep(&gap, NULL);
        (void)snprintf(f.key, sizeof(f.key), "%s%u", prefix, i);
        f.put_done = false;
        for (unsigned j = 0; j < f.n; j++)
            f.ws[j].seen = false;
        (void)snprintf(agreed, sizeof(agreed), "%s%u/r0/agreed", prefix, i);
        t0 = bench_now_ns();
        if (preempt_etcd_do_(f.ws[0].e,
                             claim ? PREEMPT_RQ_TXN(NULL, 0, claim_ops, 2, NULL, 0) : PREEMPT_RQ_PUT(f.key, &(struct preempt_value){ .text_ = "x" }, 0), 2000,
                             fl_put, &f) < 0 ||
            preempt_etcd_run_until_(f.ws[0].e, 5000, fl_seen, &f) < 0)
            break;
        v[got++] = (double)(f.t_last - t0) / 1e6;
    }
    (void)preempt_etcd_do_(f.ws[0].e, PREEMPT_RQ_DELETE_UNDER(prefix), 2000, NULL, NULL);
    (void)preempt_etcd_flush_(f.ws[0].e, 2000);
out:
    for (unsigned i = 0; i < f.n; i++) {
        if (f.ws[i].watch)
            preempt_etcd_watch_free_(f.ws[i].watch);
        preempt_etcd_free_(f.ws[i].e);
    }
    free(f.ws);
    if (base)
        event_base_free(base);
    return got;
}

/* ---- the driver ------------------------------------------------------------------------ */

struct child {
    pid_t pid;
    int fd;
    int go;            /* the write end of the worker's stdin */
    char buf[256];
    size_t len;
    bool ready, done, gone;
    uint64_t t_gone;
    unsigned long long t_agreed, t_save_begin, t_save_end, t_exit;
    int code;
};

/* etcd's gRPC methods, for the breakdown of the messages it sent */
static const char *const methods[] = { "Range", "Put", "Txn", "DeleteRange", "Watch", "LeaseGrant",
                                       "LeaseKeepAlive", "LeaseRevoke" };
#define N_METHODS (sizeof(methods) / sizeof(methods[0]))

struct counters {
    double requests, sent_msgs, bytes;
    double events; /* watch events sent (a message holds one or more) */
    double sent_by[N_METHODS];
};

static bool read_counters(const char *etcd, struct counters *c)
{
    char url[512];
    char *m;

    (void)snprintf(url, sizeof(url), "%s/metrics", etcd);
    if (!(m = bench_http_get(url)))
        return false;
    c->requests = bench_metric(m, "grpc_server_msg_received_total", NULL);
    c->sent_msgs = bench_metric(m, "grpc_server_msg_sent_total", NULL);
    c->events = bench_metric(m, "etcd_debugging_mvcc_events_total", NULL);
    c->bytes = bench_metric(m, "etcd_network_client_grpc_received_bytes_total", NULL) +
               bench_metric(m, "etcd_network_client_grpc_sent_bytes_total", NULL);
    for (size_t k = 0; k < N_METHODS; k++) {
        char label[64];

        (void)snprintf(label, sizeof(label), "grpc_method=\"%s\"", methods[k]);
        c->sent_by[k] = bench_metric(m, "grpc_server_msg_sent_total", label);
    }
    free(m);
    return true;
}

/* Reads what the children wrote until every one satisfies @p want or the
 * bound passes; a child whose pipe ends is gone (reaped, time noted). */
static bool pump(struct child *ch, unsigned n, bool want_done, uint64_t bound_ns)
{
    uint64_t until = bench_now_ns() + bound_ns;

    for (;;) {
        struct pollfd pfd[MAX_WORKERS];
        bool all = true;
        int left;

        for (unsigned i = 0; i < n; i++) {
            pfd[i].fd = ch[i].gone ? -1 : ch[i].fd;
            pfd[i].events = POLLIN;
            if (want_done ? !ch[i].gone : !ch[i].ready)
                all = false;
            if (!want_done && ch[i].gone)
                return false; /* died before it joined */
        }
        if (all)
            return true;
        left = (int)((until - bench_now_ns()) / 1000000);
        if (bench_now_ns() >= until || left <= 0)
            return false;
        if (poll(pfd, n, left) < 0 && errno != EINTR)
            return false;
        for (unsigned i = 0; i < n; i++) {
            ssize_t r;
            char *nl;

            if (ch[i].gone || !(pfd[i].revents & (POLLIN | POLLHUP)))
                continue;
            r = read(ch[i].fd, ch[i].buf + ch[i].len, sizeof(ch[i].buf) - 1 - ch[i].len);
            if (r <= 0) {
                int status;

                ch[i].t_gone = bench_now_ns();
                ch[i].gone = true;
                (void)waitpid(ch[i].pid, &status, 0);
                continue;
            }
            ch[i].len += (size_t)r;
            ch[i].buf[ch[i].len] = '\0';
            while ((nl = strchr(ch[i].buf, '\n'))) {
                *nl = '\0';
                if (strcmp(ch[i].buf, "ready") == 0)
                    ch[i].ready = true;
                else if (sscanf(ch[i].buf, "done %llu %llu %llu %llu %d", &ch[i].t_agreed, &ch[i].t_save_begin,
                                &ch[i].t_save_end, &ch[i].t_exit, &ch[i].code) == 5)
                    ch[i].done = true;
                ch[i].len -= (size_t)(nl + 1 - ch[i].buf);
                memmove(ch[i].buf, nl + 1, ch[i].len + 1);
            }
        }
    }
}

struct trial {
    double agree_ms, exit_ms, overhead_ms;
    struct counters traffic;
};

/* A failed trial: the workers' logs, on stderr. */
static void show_logs(const char *dir, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        char path[4200], *text;

        for (int k = 0; k < 2; k++) {
            (void)snprintf(path, sizeof(path), "%s/worker-%u.%s", dir, i, k ? "trace" : "log");
            if ((text = bench_slurp(path))) {
                fprintf(stderr, "---- worker %u of %u, %s:\n%s", i, n, k ? "trace" : "log", text);
                free(text);
            }
        }
    }
}

static void kill_all(struct child *ch, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (!ch[i].gone && ch[i].pid > 0) {
            (void)kill(ch[i].pid, SIGKILL);
            (void)waitpid(ch[i].pid, NULL, 0);
        }
        if (ch[i].fd >= 0)
            (void)close(ch[i].fd);
        if (ch[i].go >= 0)
            (void)close(ch[i].go);
    }
}

static int one_trial(const struct bench_opts *o, unsigned n, unsigned t, struct trial *ret)
{
    struct child ch[MAX_WORKERS];
    struct counters before = { 0 }, after = { 0 };
    char job[64], dir[4096], idx[16], count[16], fdarg[16], log[4200];
    uint64_t t_kill;
    double app;
    int r = -1;

    (void)snprintf(job, sizeof(job), "bench-%d-%u-%u", (int)getpid(), n, t);
    (void)snprintf(dir, sizeof(dir), "%s/%s", o->dir, job);
    if (mkdir(dir, 0700) < 0)
        return -1;
    memset(ch, 0, sizeof(ch));
    for (unsigned i = 0; i < n; i++)
        ch[i].fd = ch[i].go = -1;
    for (unsigned i = 0; i < n; i++) {
        int p[2], g[2];

        if (pipe(p) < 0)
            goto out;
        if (pipe(g) < 0) {
            (void)close(p[0]);
            (void)close(p[1]);
            goto out;
        }
        (void)snprintf(idx, sizeof(idx), "%u", i);
        (void)snprintf(count, sizeof(count), "%u", n);
        (void)snprintf(fdarg, sizeof(fdarg), "%d", p[1]);
        (void)snprintf(log, sizeof(log), "%s/worker-%u.log", dir, i);
        ch[i].pid = fork();
        if (ch[i].pid == 0) {
            char wdir[4200];
            char *argv[] = { (char *)o->self, "child-worker", n > 1 ? (char *)o->etcd : "-", job, idx, count, wdir,
                             fdarg, NULL };
            int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

            (void)snprintf(wdir, sizeof(wdir), "%s/worker-%u", dir, i);
            (void)close(p[0]);
            (void)close(g[1]);
            (void)dup2(g[0], 0);
            (void)close(g[0]);
            for (unsigned k = 0; k < i; k++) {
                (void)close(ch[k].fd);
                (void)close(ch[k].go);
            }
            if (lfd >= 0) {
                (void)dup2(lfd, 1);
                (void)dup2(lfd, 2);
                (void)close(lfd);
            }
            execv(argv[0], argv);
            _exit(127);
        }
        (void)close(p[1]);
        (void)close(g[0]);
        ch[i].fd = p[0];
        ch[i].go = g[1];
        if (ch[i].pid < 0)
            goto out;
    }
    if (!pump(ch, n, false, 60000000000ull)) {
        fprintf(stderr, "preempt-bench: %u workers did not all join (logs in %s)\n", n, dir);
        goto out;
    }
    for (unsigned i = 0; i < n; i++)
        if (write(ch[i].go, "g", 1) != 1)
            goto out;
    {
        struct timespec settle = { 0, 50000000 }; /* a few steps in idle */

        (void)nanosleep(&settle, NULL);
    }
    if (n > 1 && !read_counters(o->etcd, &before))
        goto out;
    t_kill = bench_now_ns();
    (void)kill(ch[0].pid, SIGTERM);
    if (!pump(ch, n, true, 30000000000ull)) {
        fprintf(stderr, "preempt-bench: %u workers did not all exit (logs in %s)\n", n, dir);
        goto out;
    }
    if (n > 1 && !read_counters(o->etcd, &after))
        goto out;
    ret->agree_ms = ret->exit_ms = 0;
    app = 0;
    for (unsigned i = 0; i < n; i++) {
        double agree, exit_ms, step_and_save;

        if (!ch[i].done || ch[i].code != 42 || !ch[i].t_agreed || !ch[i].t_save_end) {
            fprintf(stderr, "preempt-bench: worker %u of %u did not save and exit 42 (code %d; logs in %s)\n", i, n,
                    ch[i].code, dir);
            goto out;
        }
        agree = (double)(ch[i].t_agreed - t_kill) / 1e6;
        exit_ms = (double)(ch[i].t_gone - t_kill) / 1e6;
        step_and_save = (double)(ch[i].t_save_end - ch[i].t_agreed) / 1e6;
        if (agree > ret->agree_ms)
            ret->agree_ms = agree;
        if (exit_ms > ret->exit_ms)
            ret->exit_ms = exit_ms;
        if (step_and_save > app)
            app = step_and_save;
    }
    ret->overhead_ms = ret->exit_ms - app;
    ret->traffic.requests = after.requests - before.requests;
    ret->traffic.sent_msgs = after.sent_msgs - before.sent_msgs;
    ret->traffic.bytes = after.bytes - before.bytes;
    r = 0;
out:
    kill_all(ch, n);
    if (r < 0)
        show_logs(dir, n);
    if (r == 0)
        (void)bench_rm_rf(dir);
    return r;
}

int bench_agree(const struct bench_opts *o, json_t *out)
{
    static const unsigned all_n[] = { 1, 2, 4, 8, 16, 32 };
    unsigned rows = o->quick ? 2 : sizeof(all_n) / sizeof(all_n[0]);
    unsigned trials = o->quick ? 3 : o->trials;
    json_t *arr = json_array();
    double *a = calloc(trials, sizeof(double)), *e = calloc(trials, sizeof(double)),
           *ov = calloc(trials, sizeof(double)), *rq = calloc(trials, sizeof(double)),
           *ms = calloc(trials, sizeof(double)), *by = calloc(trials, sizeof(double)),
           *fl = calloc(trials, sizeof(double));
    int r = 0;

    if (!a || !e || !ov || !rq || !ms || !by || !fl) {
        r = -1;
        goto out;
    }
    printf("\n2-4. Agreement, etcd traffic and signal-to-exit (SIGTERM to worker 0; %u trials per N;\n"
           "     %d ms steps, grace 0; N = 1 is local mode, without etcd)\n", trials, STEP_MS);
    printf("   %3s | %-17s | %-17s | %-25s | %-17s | %-17s\n", "", "agreement ms", "floor ms (put+watch)",
           "etcd per preemption", "signal-to-exit ms", "less step & save");
    printf("   %3s | %8s %8s | %8s %8s | %8s %8s %7s | %8s %8s | %8s %8s\n", "N", "p50", "p99", "p50", "p99", "msgs in",
           "msgs out", "KiB", "p50", "p99", "p50", "p99");
    for (unsigned k = 0; k < rows; k++) {
        unsigned n = all_n[k], got = 0;
        size_t nf = 0;
        json_t *row;

        if (n > 1 && !o->etcd)
            break;
        if (n > 1)
            nf = measure_floor(o->etcd, trials, 1, false, fl);
        for (unsigned t = 0; t < trials; t++) {
            struct trial tr;

            if (one_trial(o, n, t, &tr) < 0) {
                r = -1;
                goto out;
            }
            a[got] = tr.agree_ms;
            e[got] = tr.exit_ms;
            ov[got] = tr.overhead_ms;
            rq[got] = tr.traffic.requests;
            ms[got] = tr.traffic.sent_msgs;
            by[got] = tr.traffic.bytes / 1024;
            got++;
        }
        row = json_pack("{sI sI}", "workers", (json_int_t)n, "trials", (json_int_t)got);
        (void)json_object_set_new(row, "agree_ms", json_pack("{sf sf}", "p50", bench_pct(a, got, 50), "p99",
                                                             bench_pct(a, got, 99)));
        if (nf)
            (void)json_object_set_new(row, "floor_ms", json_pack("{sf sf sI}", "p50", bench_pct(fl, nf, 50), "p99",
                                                                 bench_pct(fl, nf, 99), "samples", (json_int_t)nf));
        (void)json_object_set_new(row, "etcd", json_pack("{sf sf sf}", "requests", bench_pct(rq, got, 50),
                                                         "messages_sent", bench_pct(ms, got, 50), "kib",
                                                         bench_pct(by, got, 50)));
        (void)json_object_set_new(row, "exit_ms", json_pack("{sf sf}", "p50", bench_pct(e, got, 50), "p99",
                                                            bench_pct(e, got, 99)));
        (void)json_object_set_new(row, "exit_overhead_ms", json_pack("{sf sf}", "p50", bench_pct(ov, got, 50),
                                                                     "p99", bench_pct(ov, got, 99)));
        (void)json_array_append_new(arr, row);
        printf("   %3u | %8.2f %8.2f | ", n, bench_pct(a, got, 50), bench_pct(a, got, 99));
        if (nf)
            printf("%8.2f %8.2f | %8.0f %8.0f %7.1f | ", bench_pct(fl, nf, 50), bench_pct(fl, nf, 99),
                   bench_pct(rq, got, 50), bench_pct(ms, got, 50), bench_pct(by, got, 50));
        else
            printf("%8s %8s | %8s %8s %7s | ", "-", "-", "-", "-", "-");
        printf("%8.2f %8.2f | %8.2f %8.2f\n", bench_pct(e, got, 50), bench_pct(e, got, 99), bench_pct(ov, got, 50),
               bench_pct(ov, got, 99));
        (void)fflush(stdout);
    }
out:
    (void)json_object_set_new(out, "rows", arr);
    (void)json_object_set_new(out, "step_ms", json_integer(STEP_MS));
    free(a);
    free(e);
    free(ov);
    free(rq);
    free(ms);
    free(by);
    free(fl);
    return r;
}

/* ---- in process: many handlers on one loop ------------------------------------------- */

/* N workers of one job in this process, one handler each on one libevent
 * loop (start-up asynchronous, on the loop), against the same etcd: the
 * figures measure the protocol and etcd, not 2 cores scheduling N
 * processes. Worker 0 gets the notice through preempt_notify(); agreement
 * is until the last worker knows the save step; etcd's counters as above.
 * The saves write no files (no checkpoint directory; the save callback
 * only reports the step, as TensorFlow's save_fn may): a save with files
 * takes about 5 ms here, and N of them one after another on the shared
 * loop would hold back the watch events of the workers still to learn the
 * step (at N = 256, 220 saves kept 35 workers from it for 1.1 s, who then
 * found themselves past it and raised it), which a process per worker
 * never does. */

static int i_save(struct preempt_handler *h, uint64_t step, void *ud)
{
    (void)h;
    (void)step;
    (void)ud;
    return 0;
}

struct inproc {
    unsigned n, started, left;
    int start_failed;
    struct worker *w;
    struct event *go;
    FILE *log;
};

static void i_log(struct preempt_handler *h, enum preempt_log_level level, const char *msg, void *ud)
{
    struct worker *w = ud;

    (void)h;
    if (strstr(msg, "coordination: watch of ") && strstr(msg, " up (")) /* the library's debug line */
        w->watch_up = true;
    if (level >= PREEMPT_LOG_WARNING && w->in->log)
        fprintf(w->in->log, "%.3f worker %u: %s\n", (double)bench_now_ns() / 1e9, (unsigned)(w - w->in->w), msg);
}

/* Every worker's watch of the job is up. Until then etcd is still creating
 * watch streams, and their replies would be counted as the preemption's
 * traffic (first seen at N = 256: 121 "created" replies in the window). */
static bool all_watching(const struct inproc *in)
{
    for (unsigned i = 0; i < in->n; i++)
        if (!in->w[i].watch_up)
            return false;
    return true;
}

static void i_started(struct preempt_handler *h, int status, void *ud)
{
    struct worker *w = ud;

    (void)h;
    if (status < 0 && !w->in->start_failed)
        w->in->start_failed = status;
    if (++w->in->started == w->in->n)
        event_active(w->in->go, EV_TIMEOUT, 1); /* outside this handler's callback */
}

static void i_go(evutil_socket_t fd, short what, void *arg)
{
    struct inproc *in = arg;

    (void)fd;
    (void)what;
    if (!in->start_failed)
        for (unsigned i = 0; i < in->n; i++)
            w_act(&in->w[i], w_action(&in->w[i]));
    (void)event_base_loopbreak(in->w[0].base);
}

/* Runs the loop until it is stopped or ms pass; false when the time ran out. */
static bool run_for(struct event_base *base, unsigned ms)
{
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

    (void)event_base_loopexit(base, &tv);
    (void)event_base_dispatch(base);
    return !event_base_got_exit(base);
}

static int inproc_trial(const struct bench_opts *o, unsigned n, unsigned t, struct trial *ret)
{
    struct inproc in = { .n = n, .left = n };
    struct event_base *base = event_base_new();
    struct counters before = { 0 }, after = { 0 };
    char job[64], dir[4096], logpath[4200];
    uint64_t t_notify, until;
    int r = -1;

    (void)snprintf(job, sizeof(job), "inproc-%d-%u-%u", (int)getpid(), n, t);
    (void)snprintf(dir, sizeof(dir), "%s/%s", o->dir, job);
    (void)snprintf(logpath, sizeof(logpath), "%s.log", dir);
    in.w = calloc(n, sizeof(*in.w));
    if (!base || !in.w || mkdir(dir, 0700) < 0 || !(in.log = fopen(logpath, "w")) ||
        !(in.go = event_new(base, -1, 0, i_go, &in)))
        goto out;
    for (unsigned i = 0; i < n; i++) {
        struct worker *w = &in.w[i];
        struct preempt_config cfg;
        struct preempt_callbacks cb = { .save = i_save, .on_state = w_state, .on_exit = w_exit, .log = i_log,
                                        .on_start = i_started };
        int e;

        w->base = base;
        w->save = i_save;
        w->left = &in.left;
        w->in = &in;
        if (!(w->ev_step = evtimer_new(base, w_on_step, w)) || !(w->ev_resume = event_new(base, -1, 0, w_on_resume, w)))
            goto out;
        preempt_config_init(&cfg);
        cfg.platform = PREEMPT_PLATFORM_NONE;
        cfg.grace_ms = 0;
        cfg.lease_ttl_s = 30;
        cfg.async_start = true;
        cfg.etcd_endpoints = o->etcd;
        cfg.job = job;
        cfg.worker = i;
        cfg.workers = n;
        if ((e = preempt_handler_new(base, &cfg, &cb, w, &w->h)) < 0) {
            fprintf(stderr, "preempt-bench: in process, handler %u of %u: %s\n", i, n, strerror(-e));
            goto out;
        }
    }
    if (!run_for(base, 60000) || in.start_failed) {
        fprintf(stderr, "preempt-bench: in process, %u workers did not all start (%s; log %s)\n", n,
                in.start_failed ? strerror(-in.start_failed) : "60 s", logpath);
        goto out;
    }
    until = bench_now_ns() + 10000000000u;
    while (!all_watching(&in) && bench_now_ns() < until)
        (void)run_for(base, 10);
    if (!all_watching(&in)) {
        fprintf(stderr, "preempt-bench: in process, the %u workers' watches are not all up after 10 s\n", n);
        goto out;
    }
    (void)run_for(base, 50); /* a few steps in idle */
    if (!read_counters(o->etcd, &before))
        goto out;
    t_notify = bench_now_ns();
    if (preempt_notify(in.w[0].h, 0) < 0 || !run_for(base, 60000)) {
        fprintf(stderr, "preempt-bench: in process, %u workers did not all exit (log %s)\n", n, logpath);
        goto out;
    }
    /* the last coordination writes (shard reports, departures): each
     * handler closes within close's 2 s bound */
    for (unsigned i = 0; i < n; i++)
        (void)preempt_handler_close(in.w[i].h, w_closed, &in.w[i]); /* one that cannot is freed below */
    until = bench_now_ns() + 5000000000u;
    for (;;) {
        unsigned open = 0;

        for (unsigned i = 0; i < n; i++)
            open += in.w[i].h != NULL;
        if (!open || bench_now_ns() > until)
            break;
        (void)run_for(base, 10);
    }
    if (!read_counters(o->etcd, &after))
        goto out;
    ret->agree_ms = ret->exit_ms = ret->overhead_ms = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct worker *w = &in.w[i];
        double agree = (double)(w->t_agreed - t_notify) / 1e6, exit_ms = (double)(w->t_exit - t_notify) / 1e6;

        if (!w->exited || w->code != 42 || !w->t_agreed) {
            fprintf(stderr, "preempt-bench: in process, worker %u of %u did not save and exit 42 (code %d; log %s)\n",
                    i, n, w->exited ? w->code : -1, logpath);
            goto out;
        }
        if (agree > ret->agree_ms)
            ret->agree_ms = agree;
        if (exit_ms > ret->exit_ms)
            ret->exit_ms = exit_ms;
    }
    ret->traffic.requests = after.requests - before.requests;
    ret->traffic.sent_msgs = after.sent_msgs - before.sent_msgs;
    ret->traffic.bytes = after.bytes - before.bytes;
    ret->traffic.events = after.events - before.events;
    for (size_t k = 0; k < N_METHODS; k++)
        ret->traffic.sent_by[k] = after.sent_by[k] - before.sent_by[k];
    r = 0;
out:
    for (unsigned i = 0; in.w && i < n; i++) {
        preempt_handler_free(in.w[i].h);
        if (in.w[i].ev_step)
            event_free(in.w[i].ev_step);
        if (in.w[i].ev_resume)
            event_free(in.w[i].ev_resume);
    }
    if (in.go)
        event_free(in.go);
    if (in.log)
        (void)fclose(in.log);
    free(in.w);
    if (base)
        event_base_free(base);
    if (r == 0) {
        (void)bench_rm_rf(dir);
        (void)unlink(logpath);
    } else if ((in.log = fopen(logpath, "r"))) {
        char line[600];

        for (unsigned k = 0; k < 40 && fgets(line, sizeof(line), in.log); k++)
            fputs(line, stderr);
        (void)fclose(in.log);
    }
    return r;
}

int bench_scale(const struct bench_opts *o, json_t *out)
{
    static const unsigned all_n[] = { 2, 8, 32, 64, 128, 256 };
    unsigned rows = o->quick ? 2 : sizeof(all_n) / sizeof(all_n[0]);
    json_t *arr = json_array();
    double a[64], x[64], rq[64], ms[64], evs[64], fl[64], fo[64], fc[64], by[N_METHODS][64];
    json_t *by_method;
    int r = 0;

    if (!o->etcd || preempt_block_signals(NULL) < 0) { /* the handlers read SIGTERM by signalfd */
        (void)json_object_set_new(out, "rows", arr);
        return o->etcd ? -1 : 0;
    }
    printf("\n8. In process: N handlers on one loop, one job on the same etcd (notice to worker 0;\n"
           "   %d ms steps, grace 0, saves without files; budget: messages out <= 5N + 10; fan-out\n"
           "   floor: one put, or a transaction shaped as the claim, until its watch event reached\n"
           "   N watchers on one loop, each with its own client; events: the watch events in etcd's\n"
           "   messages out, several to a message)\n", STEP_MS);
    printf("   %3s | %-17s | %-17s | %-17s | %-35s | %-17s\n", "", "agreement ms", "floor ms (put+watch)",
           "fan-out floor p50", "etcd per preemption", "notice-to-exit ms");
    printf("   %3s | %8s %8s | %8s %8s | %8s %8s | %8s %8s %8s %8s | %8s %8s\n", "N", "p50", "p99", "p50", "p99",
           "put", "claim", "msgs in", "msgs out", "budget", "events", "p50", "p99");
    for (unsigned k = 0; k < rows; k++) {
        unsigned n = all_n[k], trials = o->quick ? 3 : n >= 64 ? 5 : o->trials, got = 0;
        size_t nf, nfo, nfc;
        json_t *row;

        if (trials > 64)
            trials = 64;
        nf = measure_floor(o->etcd, trials, 1, false, fl);
        nfo = measure_floor(o->etcd, trials, n, false, fo);
        nfc = measure_floor(o->etcd, trials, n, true, fc);
        for (unsigned t = 0; t < trials; t++) {
            struct trial tr = { 0 };

            if (inproc_trial(o, n, t, &tr) < 0) {
                r = -1;
                goto out;
            }
            a[got] = tr.agree_ms;
            x[got] = tr.exit_ms;
            rq[got] = tr.traffic.requests;
            ms[got] = tr.traffic.sent_msgs;
            evs[got] = tr.traffic.events;
            for (size_t m = 0; m < N_METHODS; m++)
                by[m][got] = tr.traffic.sent_by[m];
            got++;
        }
        by_method = json_object();
        for (size_t m = 0; m < N_METHODS; m++)
            (void)json_object_set_new(by_method, methods[m], json_real(bench_pct(by[m], got, 50)));
        row = json_pack("{sI sI sI}", "workers", (json_int_t)n, "trials", (json_int_t)got, "budget",
                        (json_int_t)(5 * n + 10));
        (void)json_object_set_new(row, "agree_ms", json_pack("{sf sf}", "p50", bench_pct(a, got, 50), "p99",
                                                             bench_pct(a, got, 99)));
        (void)json_object_set_new(row, "floor_ms", json_pack("{sf sf sI}", "p50", bench_pct(fl, nf, 50), "p99",
                                                             bench_pct(fl, nf, 99), "samples", (json_int_t)nf));
        (void)json_object_set_new(row, "fanout_floor_ms", json_pack("{sf sf sI}", "p50", bench_pct(fo, nfo, 50),
                                                                    "p99", bench_pct(fo, nfo, 99), "samples",
                                                                    (json_int_t)nfo));
        (void)json_object_set_new(row, "fanout_claim_ms", json_pack("{sf sf sI}", "p50", bench_pct(fc, nfc, 50),
                                                                    "p99", bench_pct(fc, nfc, 99), "samples",
                                                                    (json_int_t)nfc));
        (void)json_object_set_new(row, "etcd", json_pack("{sf sf sf}", "requests", bench_pct(rq, got, 50),
                                                         "messages_sent", bench_pct(ms, got, 50),
                                                         "messages_sent_max", bench_pct(ms, got, 100)));
        (void)json_object_set_new(json_object_get(row, "etcd"), "watch_events", json_real(bench_pct(evs, got, 50)));
        (void)json_object_set_new(json_object_get(row, "etcd"), "messages_sent_by_method", by_method);
        (void)json_object_set_new(row, "exit_ms", json_pack("{sf sf}", "p50", bench_pct(x, got, 50), "p99",
                                                            bench_pct(x, got, 99)));
        (void)json_array_append_new(arr, row);
        printf("   %3u | %8.2f %8.2f | %8.2f %8.2f | %8.2f %8.2f | %8.0f %8.0f %8u %8.0f | %8.2f %8.2f\n", n,
               bench_pct(a, got, 50), bench_pct(a, got, 99), bench_pct(fl, nf, 50), bench_pct(fl, nf, 99),
               bench_pct(fo, nfo, 50), bench_pct(fc, nfc, 50), bench_pct(rq, got, 50), bench_pct(ms, got, 50),
               5 * n + 10, bench_pct(evs, got, 50), bench_pct(x, got, 50), bench_pct(x, got, 99));
        (void)fflush(stdout);
    }
out:
    (void)json_object_set_new(out, "rows", arr);
    return r;
}
