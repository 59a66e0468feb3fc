/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/handler/embed.c: a libevent base seen from any event loop (see
 * embed-internal.h). One epoll descriptor mirrors the base: every
 * descriptor an added event waits on (the signalfd, the HTTP sockets), in
 * the same direction, and a timerfd armed for the earliest timer. libevent
 * itself exposes neither its backend descriptor nor its next timeout; both
 * are read here from its public event list (event_base_foreach_event,
 * event_pending), again after each turn of the loop, since every turn may
 * add or remove events.
 *
 * The timerfd is armed at an absolute CLOCK_MONOTONIC time and only ever
 * moved earlier: a sync (every get_timeout()) neither pushes a pending
 * expiry forward nor clears a readiness that process() has not consumed.
 * A loop that processes only when the descriptor is readable, and asks for
 * the timeout after every step, so still runs every due timer. */
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
    int64_t armed_ns;   /* the timerfd's expiry (CLOCK_MONOTONIC); -1: disarmed or consumed */
    int64_t tick_ns;    /* the resolution of libevent's clock, rounded up to a millisecond */
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

static int64_t mono_ns(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Brings epfd and the timerfd in line with the base: the timerfd expires
 * at the base's earliest timer (absolute), or now when an event is active;
 * an expiry already pending at or before that time is kept, an expired one
 * is left readable. */
static int sync_base(struct preempt_embed *m)
{
    struct scan sc = { 0 };
    struct itimerspec its = { 0 };
    int64_t now = mono_ns(), want;
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
    want = -1;
    if (event_base_get_num_events(m->base, EVENT_BASE_COUNT_ACTIVE) > 0) {
        want = now;
    } else if (sc.have_first) {
        struct timeval wall, left;
        int64_t left_ns;

        (void)gettimeofday(&wall, NULL);
        timersub(&sc.first, &wall, &left);
        left_ns = left.tv_sec < 0 ? 0 : (int64_t)left.tv_sec * 1000000000 + (int64_t)left.tv_usec * 1000;
        /* libevent reads a coarse monotonic clock (one tick, a few ms,
         * behind): a timer is due for it only that much later, and a loop
         * woken earlier would find nothing to do and spin. The estimate is
         * stable: libevent's wall-to-monotonic offset changes every 5 s */
        want = now + left_ns + m->tick_ns;
    }
    if (m->armed_ns >= 0 && m->armed_ns <= now)
        return r; /* expired: readable until process() consumes it; never re-armed before */
    if (want >= 0 && m->armed_ns >= 0 && m->armed_ns <= want)
        return r; /* an expiry as early or earlier is pending: a spare wake-up at most */
    if (want >= 0) { /* absolute; a time already past expires at once */
        its.it_value.tv_sec = (time_t)(want / 1000000000);
        its.it_value.tv_nsec = (long)(want % 1000000000);
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1; /* a zero it_value would disarm it */
    }
    if (timerfd_settime(m->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        if (r == 0)
            r = -errno;
        m->armed_ns = -1;
    } else {
        m->armed_ns = want;
    }
    return r;
}

int preempt_embed_new_(struct event_base *base, struct preempt_embed **ret)
{
    struct preempt_embed *m = calloc(1, sizeof(*m));
    int r;

    if (!m)
        return -ENOMEM;
    m->base = base;
    m->armed_ns = -1;
    {
        struct timespec res = { 0, 1000000 };

        (void)clock_getres(CLOCK_MONOTONIC_COARSE, &res);
        m->tick_ns = ((int64_t)res.tv_sec * 1000 + (res.tv_nsec + 999999) / 1000000) * 1000000;
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
    int64_t left;

    if (sync_base(m) < 0)
        return 0; /* when unsure, run now */
    if (m->armed_ns < 0)
        return -1;
    left = m->armed_ns - mono_ns();
    return left <= 0 ? 0 : (left + 999999) / 1000000; /* never wake before the expiry */
}

int preempt_embed_process_(struct preempt_embed *m)
{
    uint64_t expirations;

    while (read(m->tfd, &expirations, sizeof(expirations)) > 0)
        ;
    if (m->armed_ns >= 0 && m->armed_ns <= mono_ns())
        m->armed_ns = -1; /* consumed: the sync below arms the next */
    if (event_base_loop(m->base, EVLOOP_NONBLOCK) < 0)
        return -EIO;
    return sync_base(m);
}
