/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/embed.c: a libevent base seen from any event loop (see
 * embed-internal.h). One epoll descriptor mirrors the base: every
 * descriptor an added event waits on (the signalfd, the HTTP sockets), in
 * the same direction, and a timerfd armed for the earliest timer. libevent
 * itself exposes neither its backend descriptor nor its next timeout; both
 * are read here from its public event list (event_base_foreach_event,
 * event_pending), again after each turn of the loop, since every turn may
 * add or remove events. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "embed-internal.h"

struct watched {
    int fd;
    uint32_t mask;
};

struct preempt_embed {
    struct event_base *base;
    int epfd, tfd;
    struct watched *w; /* the descriptors in epfd (the timerfd aside) */
    size_t n, cap;
    int64_t timeout_ms; /* the base's next timer from now, at the last sync; -1: none */
    int64_t tick_ms;    /* the resolution of libevent's clock, rounded up */
};

/* What the base waits for, gathered by one pass over its events. */
struct scan {
    struct watched *w;
    size_t n, cap;
    struct timeval first; /* the earliest timer's expiry (gettimeofday's clock) */
    bool have_first;
    int err;
};

static int add_want(struct scan *sc, int fd, uint32_t mask)
{
    for (size_t i = 0; i < sc->n; i++)
        if (sc->w[i].fd == fd) {
            sc->w[i].mask |= mask;
            return 0;
        }
    if (sc->n == sc->cap) {
        struct watched *nw = realloc(sc->w, (sc->cap ? sc->cap * 2 : 8) * sizeof(*nw));

        if (!nw)
            return -ENOMEM;
        sc->w = nw;
        sc->cap = sc->cap ? sc->cap * 2 : 8;
    }
    sc->w[sc->n++] = (struct watched){ fd, mask };
    return 0;
}

static int on_event(const struct event_base *base, const struct event *ev, void *arg)
{
    struct scan *sc = arg;
    struct timeval tv;
    short what = event_pending(ev, EV_READ | EV_WRITE | EV_TIMEOUT, &tv);
    uint32_t mask = ((what & EV_READ) ? EPOLLIN : 0u) | ((what & EV_WRITE) ? EPOLLOUT : 0u);

    (void)base;
    if (mask && event_get_fd(ev) >= 0 && (sc->err = add_want(sc, event_get_fd(ev), mask)) < 0)
        return 1;
    if ((what & EV_TIMEOUT) && (!sc->have_first || timercmp(&tv, &sc->first, <))) {
        sc->first = tv;
        sc->have_first = true;
    }
    return 0;
}

static int ctl(int epfd, int op, int fd, uint32_t mask)
{
    struct epoll_event e = { .events = mask, .data.fd = fd };

    return epoll_ctl(epfd, op, fd, &e) < 0 ? -errno : 0;
}

/* Brings epfd and the timerfd in line with the base. */
static int sync_base(struct preempt_embed *m)
{
    struct scan sc = { 0 };
    struct itimerspec its = { 0 };
    int r = 0;

    if (event_base_foreach_event(m->base, on_event, &sc) < 0 && !sc.err)
        sc.err = -ENOMEM;
    if (sc.err) {
        free(sc.w);
        return sc.err;
    }
    for (size_t i = 0; i < m->n; i++) { /* gone, or wanted differently */
        size_t k = 0;

        while (k < sc.n && sc.w[k].fd != m->w[i].fd)
            k++;
        if (k == sc.n)
            (void)ctl(m->epfd, EPOLL_CTL_DEL, m->w[i].fd, 0); /* ENOENT/EBADF: closed meanwhile */
    }
    for (size_t k = 0; k < sc.n && r == 0; k++) {
        r = ctl(m->epfd, EPOLL_CTL_MOD, sc.w[k].fd, sc.w[k].mask);
        if (r == -ENOENT)
            r = ctl(m->epfd, EPOLL_CTL_ADD, sc.w[k].fd, sc.w[k].mask);
    }
    free(m->w);
    m->w = sc.w;
    m->n = sc.n;
    m->cap = sc.cap;
    if (event_base_get_num_events(m->base, EVENT_BASE_COUNT_ACTIVE) > 0) {
        m->timeout_ms = 0;
    } else if (sc.have_first) {
        struct timeval now, left;

        (void)gettimeofday(&now, NULL);
        timersub(&sc.first, &now, &left);
        /* libevent reads a coarse monotonic clock (one tick, a few ms,
         * behind): a timer is due for it only that much later, and a loop
         * woken earlier would find nothing to do and spin */
        m->timeout_ms = (left.tv_sec < 0 ? 0 : (int64_t)left.tv_sec * 1000 + (left.tv_usec + 999) / 1000) +
                        m->tick_ms;
    } else {
        m->timeout_ms = -1;
    }
    if (m->timeout_ms >= 0) { /* 0: due now (a 1 ns timer: a zero it_value would disarm it) */
        its.it_value.tv_sec = (time_t)(m->timeout_ms / 1000);
        its.it_value.tv_nsec = m->timeout_ms ? (long)(m->timeout_ms % 1000) * 1000000L : 1L;
    }
    if (timerfd_settime(m->tfd, 0, &its, NULL) < 0 && r == 0)
        r = -errno;
    return r;
}

int preempt_embed_new_(struct event_base *base, struct preempt_embed **ret)
{
    struct preempt_embed *m = calloc(1, sizeof(*m));
    int r;

    if (!m)
        return -ENOMEM;
    m->base = base;
    {
        struct timespec res = { 0, 1000000 };

        (void)clock_getres(CLOCK_MONOTONIC_COARSE, &res);
        m->tick_ms = (int64_t)res.tv_sec * 1000 + (res.tv_nsec + 999999) / 1000000;
    }
    m->epfd = epoll_create1(EPOLL_CLOEXEC);
    m->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (m->epfd < 0 || m->tfd < 0) {
        r = -errno;
        goto fail;
    }
    if ((r = ctl(m->epfd, EPOLL_CTL_ADD, m->tfd, EPOLLIN)) < 0 || (r = sync_base(m)) < 0)
        goto fail;
    *ret = m;
    return 0;
fail:
    preempt_embed_free_(m);
    return r;
}

void preempt_embed_free_(struct preempt_embed *m)
{
    if (!m)
        return;
    if (m->epfd >= 0)
        (void)close(m->epfd);
    if (m->tfd >= 0)
        (void)close(m->tfd);
    free(m->w);
    free(m);
}

int preempt_embed_fd_(const struct preempt_embed *m)
{
    return m->epfd;
}

int64_t preempt_embed_timeout_(struct preempt_embed *m)
{
    return sync_base(m) < 0 ? 0 : m->timeout_ms; /* when unsure, run now */
}

int preempt_embed_process_(struct preempt_embed *m)
{
    uint64_t expirations;

    while (read(m->tfd, &expirations, sizeof(expirations)) > 0)
        ;
    if (event_base_loop(m->base, EVLOOP_NONBLOCK) < 0)
        return -EIO;
    return sync_base(m);
}
