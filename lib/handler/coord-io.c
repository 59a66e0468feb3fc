/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/coord-io.c: the coordinator's libevent adapter, the real side of its
 * typed port (coord-internal.h's preempt_coord_io): etcd's client
 * (lib/etcd/etcd.c) for requests and watches, the clocks, and one timer on the
 * caller's event base. The start-up phases (lib/job/startup.c) and the running
 * protocol (lib/job/coord.c) see only the port; the simulation (tests/sim/)
 * answers the same port in memory. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job/job.h"
#include "etcd/etcd.h"
#include "base/base.h"


/* The real io: the etcd client and one timer on the caller's base. */
struct real_io {
    struct preempt_etcd *e;
    struct preempt_etcd_watch *watch, *members;
    struct event *ev;
    void (*tick)(void *arg);
    void *tick_arg;
    void (*log)(int level, const char *msg, void *arg);
    void *log_arg;
};

static int real_request(void *io, const struct preempt_etcd_req *req, uint64_t give_up_ms, preempt_etcd_reply_cb cb,
                        void *arg)
{
    return preempt_etcd_do_(((struct real_io *)io)->e, req, give_up_ms, cb, arg);
}

static int real_watch(void *io, const char *key, const char *end, const struct preempt_etcd_watch_ops *ops, void *arg)
{
    struct real_io *r = io;

    return preempt_etcd_watch_(r->e, key, end, 0, ops, arg, &r->watch);
}

static int real_watch_members(void *io, const char *key, const char *end, const struct preempt_etcd_watch_ops *ops,
                              void *arg)
{
    struct real_io *r = io;

    return preempt_etcd_watch_(r->e, key, end, 0, ops, arg, &r->members);
}

static void on_real_timer(evutil_socket_t fd, short what, void *arg)
{
    struct real_io *r = arg;

    (void)fd;
    (void)what;
    r->tick(r->tick_arg);
}

static void real_timer(void *io, uint64_t ms, void (*tick)(void *arg), void *arg)
{
    struct real_io *r = io;
    struct timeval tv = preempt_tv_ms_(ms);

    (void)evtimer_del(r->ev);
    r->tick = tick;
    r->tick_arg = arg;
    if (ms)
        (void)evtimer_add(r->ev, &tv);
}

static uint64_t real_wall_ms(void *io)
{
    (void)io;
    return preempt_clock_ms_(CLOCK_REALTIME);
}

static uint64_t real_mono_ms(void *io)
{
    (void)io;
    return preempt_clock_ms_(CLOCK_MONOTONIC);
}

static unsigned real_pending(void *io)
{
    return preempt_etcd_pending_(((struct real_io *)io)->e);
}

static unsigned real_flush(void *io, uint64_t bound_ms)
{
    return preempt_etcd_flush_(((struct real_io *)io)->e, bound_ms);
}

static void real_free(void *io)
{
    struct real_io *r = io;

    preempt_etcd_watch_free_(r->watch);
    preempt_etcd_watch_free_(r->members);
    preempt_etcd_free_(r->e);
    if (r->ev)
        event_free(r->ev);
    free(r);
}

static const struct preempt_coord_io real_io_ops = {
    .request = real_request, .watch = real_watch, .watch_members = real_watch_members, .timer = real_timer,
    .wall_ms = real_wall_ms,
    .mono_ms = real_mono_ms, .pending = real_pending, .flush = real_flush, .free = real_free,
};

static void real_log(int level, const char *msg, void *arg)
{
    struct real_io *r = arg;

    if (r->log)
        r->log(level, msg, r->log_arg);
}

/* A real io on base (the etcd client of opts, its log to log, and one
 * timer); 0 or a negative errno. */
static int real_io_new(struct event_base *base, const struct preempt_etcd_opts *opts,
                       void (*log)(int level, const char *msg, void *arg), void *log_arg, void **ret)
{
    struct preempt_etcd_opts eo = *opts;
    struct real_io *r = calloc(1, sizeof(*r));
    int rc;

    if (!r)
        return -ENOMEM;
    r->log = log;
    r->log_arg = log_arg;
    if (log) {
        eo.log = real_log;
        eo.log_arg = r;
    }
    rc = preempt_etcd_new_(base, &eo, &r->e);
    if (rc == 0) {
        r->ev = evtimer_new(base, on_real_timer, r);
        rc = r->ev ? 0 : -ENOMEM;
    }
    if (rc < 0) {
        real_free(r);
        return rc;
    }
    *ret = r;
    return 0;
}

int preempt_coord_real_io_(struct event_base *base, const struct preempt_etcd_opts *opts,
                           const struct preempt_coord_io **ret_ops, void **ret_io)
{
    int rc = real_io_new(base, opts, NULL, NULL, ret_io);

    if (rc == 0)
        *ret_ops = &real_io_ops;
    return rc;
}

struct preempt_etcd *preempt_coord_real_etcd_(void *io)
{
    return ((struct real_io *)io)->e;
}

int preempt_coord_new_(struct event_base *base, const struct preempt_coord_cfg *cfg,
                       const struct preempt_coord_join *join, const struct preempt_coord_ops *ops, void *arg,
                       struct preempt_coord **ret)
{
    void *io;
    int rc;

    if (!ops)
        return -EINVAL;
    rc = real_io_new(base, &cfg->etcd, ops->log, arg, &io);
    return rc < 0 ? rc : preempt_coord_new_io_(&real_io_ops, io, cfg, join, ops, arg, ret);
}

/* The real io for a start-up phase; its errors said in msg. */
static int phase_io(struct event_base *base, const struct preempt_coord_cfg *cfg, char *msg, size_t msg_size,
                    void **ret)
{
    int r = real_io_new(base, &cfg->etcd, NULL, NULL, ret);

    if (r < 0)
        (void)snprintf(msg, msg_size, "cannot use the etcd endpoints or options: %s%s", strerror(-r),
                       r == -EINVAL ? " (each endpoint an http:// or https:// URL, at most 8)" : "");
    return r;
}

int preempt_coord_join_begin_(struct event_base *base, const struct preempt_coord_cfg *cfg, const uint64_t *steps,
                              size_t n_steps, struct preempt_coord_pending *pend, size_t n_pend,
                              struct preempt_coord_join *ret, char *msg, size_t msg_size, preempt_coord_done done,
                              void *arg, struct preempt_coord_phase **ret_phase)
{
    void *io;
    int r = phase_io(base, cfg, msg, msg_size, &io);

    *ret_phase = NULL;
    return r < 0 ? r
                 : preempt_coord_join_begin_io_(&real_io_ops, io, cfg, steps, n_steps, pend, n_pend, ret, msg,
                                                msg_size, done, arg, ret_phase);
}

int preempt_coord_restored_begin_(struct event_base *base, const struct preempt_coord_cfg *cfg,
                                  struct preempt_coord_join *join, int mine, const char *why, uint64_t bound_ms,
                                  int *ret_outcome, char *verdict, size_t verdict_size, char *msg, size_t msg_size,
                                  preempt_coord_done done, void *arg, struct preempt_coord_phase **ret_phase)
{
    void *io;
    int r = phase_io(base, cfg, msg, msg_size, &io);

    *ret_phase = NULL;
    *ret_outcome = PREEMPT_RESTORE_FAILED;
    verdict[0] = '\0';
    return r < 0 ? r
                 : preempt_coord_restored_begin_io_(&real_io_ops, io, cfg, join, mine, why, bound_ms, ret_outcome,
                                                    verdict, verdict_size, msg, msg_size, done, arg, ret_phase);
}

