/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/silent-port.h: a coordinator's or watcher's port (struct
 * preempt_coord_io) that answers nothing: each request is seen (on_request,
 * when set) and never answered, each watch's callbacks are kept for the
 * test to drive ([0] the records' watch, [1] the members'), no timer fires,
 * and both clocks read wall_ms. The io argument is a struct silent_port. */
#ifndef PREEMPT_SILENT_PORT_H
#define PREEMPT_SILENT_PORT_H

#include "job/coord-internal.h"
#include "etcd/etcd-internal.h"

struct silent_port {
    const struct preempt_etcd_watch_ops *ops[2];
    void *arg[2];
    uint64_t wall_ms;
    void (*on_request)(const struct preempt_etcd_req *req);
};

static int silent_request(void *io, const struct preempt_etcd_req *req, uint64_t give_up_ms, preempt_etcd_reply_cb cb,
                          void *arg)
{
    struct silent_port *p = io;

    (void)give_up_ms, (void)cb, (void)arg;
    if (p->on_request)
        p->on_request(req);
    return 0; /* never answered */
}

static int silent_watch(void *io, const char *key, const char *end, const struct preempt_etcd_watch_ops *ops,
                        void *arg)
{
    struct silent_port *p = io;

    (void)key, (void)end;
    p->ops[0] = ops;
    p->arg[0] = arg;
    return 0;
}

static int silent_watch_members(void *io, const char *key, const char *end, const struct preempt_etcd_watch_ops *ops,
                                void *arg)
{
    struct silent_port *p = io;

    (void)key, (void)end;
    p->ops[1] = ops;
    p->arg[1] = arg;
    return 0;
}

static void silent_timer(void *io, uint64_t ms, void (*tick)(void *arg), void *arg)
{
    (void)io, (void)ms, (void)tick, (void)arg;
}

static uint64_t silent_clock(void *io)
{
    return ((struct silent_port *)io)->wall_ms;
}

static unsigned silent_pending(void *io)
{
    (void)io;
    return 0;
}

static unsigned silent_flush(void *io, uint64_t bound_ms)
{
    (void)io, (void)bound_ms;
    return 0;
}

static void silent_free(void *io)
{
    (void)io;
}

static const struct preempt_coord_io silent_io = { .request = silent_request,
                                                   .watch = silent_watch,
                                                   .watch_members = silent_watch_members,
                                                   .timer = silent_timer,
                                                   .wall_ms = silent_clock,
                                                   .mono_ms = silent_clock,
                                                   .pending = silent_pending,
                                                   .flush = silent_flush,
                                                   .free = silent_free };

#endif
